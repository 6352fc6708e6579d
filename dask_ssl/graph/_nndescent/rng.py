"""A tiny random generator (xorshift64*) for the kernels: numba's ``np.random`` costs far more
compilation than the kernels themselves.

The state is a one-element array made from a seed (:func:`rng_state_nb`) and passed along, so a
kernel's draws follow from its seed alone.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _rand(state):
    """Next xorshift64* draw from ``state`` (a one-element uint64 array): a uint64."""
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    return x * np.uint64(0x2545F4914F6CDD1D)


@njit(cache=True, nogil=True)
def randint(state, n):
    """A draw from ``0..n-1`` (int64)."""
    return np.int64(_rand(state) % np.uint64(n))


@njit(cache=True, nogil=True)
def random(state):
    """A draw from [0, 1) (float64, 53 random bits)."""
    return np.float64(_rand(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, nogil=True)
def rng_state_nb(seed):
    """The state :func:`_rand` advances, from an integer seed (never zero)."""
    st = np.empty(1, np.uint64)
    st[0] = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x632BE59BD9B4E019)
    if st[0] == 0:
        st[0] = 1
    return st
