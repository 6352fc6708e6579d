"""A row block stored as its distinct rows, for the products a solver repeats.

Event and log data repeat whole records: the KDD Cup 99 sample has 150 k distinct rows among
494 k. Outputs ``X w``, right-hand sides ``X^T v`` and Gram sums ``sum a_i x_i x_i^T`` need each
distinct row once: outputs are copied to its duplicates, and the duplicates' weights are added
before the product. Per-row quantities (costs, labels, outputs) stay per row, so results differ
from the plain block only in the order of floating-point sums.

A block with few duplicates is left as it is (:func:`distinct_rows` returns it unchanged).
"""

from __future__ import annotations

import threading
import weakref

import numba
import numpy as np
import scipy.sparse as sp

#: Compress a block only when this share of its rows or less is distinct.
MAX_DISTINCT_SHARE = 0.8


class DistinctRows:
    """``X`` as ``U[group]``: ``U`` holds the distinct rows, ``group[i]`` is row i's row of U.

    Parameters
    ----------
    U : scipy.sparse.csr_matrix or ndarray
    group : ndarray of int64
    """

    def __init__(self, U, group: np.ndarray):
        self.U = U
        self.group = group
        self.shape = (group.shape[0], U.shape[1])

    def gather(self, values: np.ndarray) -> np.ndarray:
        """Per-row values from per-distinct-row ones."""
        return values[self.group]

    def combine(self, weights: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Per-distinct-row sums of per-row ``weights`` (of ``rows`` when given)."""
        group = self.group if rows is None else self.group[rows]
        return np.bincount(group, weights=weights, minlength=self.U.shape[0])


_CACHE: dict = {}
_LOCK = threading.Lock()


def distinct_rows(X):
    """``X`` as :class:`DistinctRows` when it repeats rows enough to pay, else ``X``.

    Cached per block object for the life of the block, so every run over the same block in
    this process reuses one scan.
    """
    if isinstance(X, DistinctRows):
        return X
    with _LOCK:
        hit = _CACHE.get(id(X))
        if hit is not None and hit[0]() is X:
            return X if hit[1] is None else hit[1]
    view = _compress(X)
    with _LOCK:
        key = id(X)
        # no strong reference to X itself: the entry must not keep the block alive
        _CACHE[key] = (weakref.ref(X), None if view is X else view)
        weakref.finalize(X, _CACHE.pop, key, None)
    return view


def _compress(X):
    n = X.shape[0]
    if n < 2:
        return X
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        # the block's own index arrays, not an int64 copy: a fresh 25 MB array costs its page
        # faults (up to 60 ms in a VM, two blocks at once) in a pass of 40 ms
        indptr, cols, vals = X.indptr, X.indices, X.data
    else:
        dense = np.ascontiguousarray(X, dtype=np.float64)
        indptr = np.arange(0, dense.size + 1, dense.shape[1], dtype=np.int64)
        cols = np.tile(np.arange(dense.shape[1], dtype=np.int64), n)
        vals = dense.ravel()
    hashes = _row_hashes(indptr, cols, vals.view(np.uint64))
    order = np.argsort(hashes, kind="stable")
    group, reps = _assign_groups(order, hashes[order], indptr, cols, vals)
    if reps.shape[0] > MAX_DISTINCT_SHARE * n:
        return X
    return DistinctRows(X[reps], group)


@numba.njit(cache=True, nogil=True)
def _row_hashes(indptr, cols, bits):
    n = indptr.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    prime = np.uint64(1099511628211)
    for i in range(n):
        h = np.uint64(14695981039346656037)
        for p in range(indptr[i], indptr[i + 1]):
            h = (h ^ np.uint64(cols[p])) * prime
            h = (h ^ bits[p]) * prime
        out[i] = h
    return out


@numba.njit(cache=True, nogil=True)
def _same_row(indptr, cols, vals, i, j):
    a, b = indptr[i], indptr[j]
    m = indptr[i + 1] - a
    if indptr[j + 1] - b != m:
        return False
    for p in range(m):
        if cols[a + p] != cols[b + p] or vals[a + p] != vals[b + p]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _assign_groups(order, sorted_hashes, indptr, cols, vals):
    """Group ids (first-seen order along ``order``) and one representative row per group;
    rows are compared, not only hashed, so a hash collision never merges different rows."""
    n = order.shape[0]
    group = np.empty(n, dtype=np.int64)
    reps = np.empty(n, dtype=np.int64)
    m = 0
    start = 0
    while start < n:
        stop = start + 1
        while stop < n and sorted_hashes[stop] == sorted_hashes[start]:
            stop += 1
        first = m
        for t in range(start, stop):
            i = order[t]
            found = -1
            for g in range(first, m):
                if _same_row(indptr, cols, vals, reps[g], i):
                    found = g
                    break
            if found < 0:
                reps[m] = i
                found = m
                m += 1
            group[i] = found
        start = stop
    return group, reps[:m]
