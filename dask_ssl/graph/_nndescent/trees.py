"""Random-projection trees over a block's rows, and the descent of a query row to its leaf.

A split sends each row to whichever of two random pivot rows is nearer, so the same code serves
euclidean and cosine, dense and sparse rows. NN-descent starts from the pairs of rows that share
a leaf; the graph search starts each query from the rows of the leaf it falls into.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from .distances import dist
from .rng import randint, random, rng_state_nb


def make_plane(A):  # pragma: no cover - replaced by the overload in compiled code
    """A work vector for :func:`set_plane` over rows of ``A`` (compiled code only)."""
    raise NotImplementedError


def set_plane(A, a, b, plane, metric):  # pragma: no cover - replaced by the overload
    """Fill ``plane`` with ``w = row b - row a`` and return the offset ``c`` such that row x is
    nearer to a than to b exactly when ``x . w < c`` (compiled code only)."""
    raise NotImplementedError


def plane_dot(plane, A, x):  # pragma: no cover - replaced by the overload
    """``x . w`` for row ``x`` of ``A`` and the plane :func:`set_plane` filled."""
    raise NotImplementedError


def clear_plane(A, a, b, plane):  # pragma: no cover - replaced by the overload
    """Undo :func:`set_plane` (sparse rows leave the work vector zero)."""
    raise NotImplementedError


# A tree split asks which of two pivot rows each row is nearer to. Both metrics answer it with
# one dot product against the pivots' difference (euclidean: |x-a|^2 < |x-b|^2 iff
# x.(b-a) < (|b|^2-|a|^2)/2; cosine on unit rows: 1-x.a < 1-x.b iff x.(b-a) < 0), half the
# reads of the two distances.

@overload(make_plane)
def _make_plane_overload(A):
    if isinstance(A, types.Array):
        return lambda A: np.zeros(A.shape[1], np.float32)
    return lambda A: np.zeros((int(A[1].max()) + 1) if A[1].size else 1)


@overload(set_plane)
def _set_plane_overload(A, a, b, plane, metric):
    if isinstance(A, types.Array):
        def dense(A, a, b, plane, metric):
            na = nb = 0.0
            for t in range(A.shape[1]):
                plane[t] = A[b, t] - A[a, t]
                na += np.float64(A[a, t]) * np.float64(A[a, t])
                nb += np.float64(A[b, t]) * np.float64(A[b, t])
            return 0.5 * (nb - na) if metric == 0 else 0.0
        return dense

    def sparse(A, a, b, plane, metric):
        ap, ai, ax = A
        na = nb = 0.0
        for p in range(ap[a], ap[a + 1]):
            plane[ai[p]] -= np.float64(ax[p])
            na += np.float64(ax[p]) * np.float64(ax[p])
        for p in range(ap[b], ap[b + 1]):
            plane[ai[p]] += np.float64(ax[p])
            nb += np.float64(ax[p]) * np.float64(ax[p])
        return 0.5 * (nb - na) if metric == 0 else 0.0
    return sparse


@overload(plane_dot, jit_options={"fastmath": True})
def _plane_dot_overload(plane, A, x):
    if isinstance(A, types.Array):
        def dense(plane, A, x):
            s = np.float32(0.0)
            for t in range(A.shape[1]):
                s += A[x, t] * plane[t]
            return np.float64(s)
        return dense

    def sparse(plane, A, x):
        ap, ai, ax = A
        s = 0.0
        for p in range(ap[x], ap[x + 1]):
            s += plane[ai[p]] * np.float64(ax[p])
        return s
    return sparse


@overload(clear_plane)
def _clear_plane_overload(A, a, b, plane):
    if isinstance(A, types.Array):
        return lambda A, a, b, plane: None

    def sparse(A, a, b, plane):
        ap, ai, _ = A
        for p in range(ap[a], ap[a + 1]):
            plane[ai[p]] = 0.0
        for p in range(ap[b], ap[b + 1]):
            plane[ai[p]] = 0.0
    return sparse


@njit(cache=True, nogil=True)
def rp_tree(A, n, metric, leaf_size, seed):
    """One tree over rows ``0..n-1`` of ``A``.

    Returns ``(left, right, pa, pb, start, stop, perm)``: children (-1 at leaves), pivot rows
    (-1 where the split was random because all rows were alike), and each node's slice of
    ``perm``, the rows in leaf order.
    """
    state = rng_state_nb(seed)
    cap = 2 * (n // max(1, leaf_size // 2)) + 3
    left = np.full(cap, -1, np.int64)
    right = np.full(cap, -1, np.int64)
    pa = np.full(cap, -1, np.int64)
    pb = np.full(cap, -1, np.int64)
    start = np.zeros(cap, np.int64)
    stop = np.zeros(cap, np.int64)
    perm = np.arange(n).astype(np.int64)
    side = np.zeros(n, np.bool_)
    buf = np.empty(n, np.int64)
    stack = np.empty(cap, np.int64)
    plane = make_plane(A)
    top = 0
    stack[top] = 0
    top += 1
    stop[0] = n
    n_nodes = 1
    while top > 0:
        top -= 1
        node = stack[top]
        s, e = start[node], stop[node]
        m = e - s
        if m <= leaf_size or n_nodes + 2 > cap:
            continue
        a = b = -1
        for _ in range(8):
            u = perm[s + randint(state, m)]
            v = perm[s + randint(state, m)]
            if u != v and dist(A, u, A, v, metric) > 0:
                a, b = u, v
                break
        nl = 0
        if a >= 0:
            c = set_plane(A, a, b, plane, metric)
            for t in range(s, e):
                m_x = plane_dot(plane, A, perm[t])
                side[t - s] = m_x < c or (m_x == c and random(state) < 0.5)
                if side[t - s]:
                    nl += 1
            clear_plane(A, a, b, plane)
        if nl == 0 or nl == m:
            # Pivots did not separate the rows (all alike): split at random, half and half.
            a = b = -1
            nl = m // 2
            for t in range(m):
                side[t] = t < nl
            for t in range(m - 1, 0, -1):
                r = randint(state, t + 1)
                side[t], side[r] = side[r], side[t]
        p, q = s, s + nl
        for t in range(s, e):
            if side[t - s]:
                buf[p] = perm[t]
                p += 1
            else:
                buf[q] = perm[t]
                q += 1
        for t in range(s, e):  # (a loop: slice assignment costs seconds of compilation)
            perm[t] = buf[t]
        lc, rc = n_nodes, n_nodes + 1
        n_nodes += 2
        left[node], right[node], pa[node], pb[node] = lc, rc, a, b
        start[lc], stop[lc], start[rc], stop[rc] = s, s + nl, s + nl, e
        stack[top] = lc
        stack[top + 1] = rc
        top += 2
    return (left[:n_nodes], right[:n_nodes], pa[:n_nodes], pb[:n_nodes], start[:n_nodes],
            stop[:n_nodes], perm)


@njit(cache=True, nogil=True)
def descend(A, left, right, pa, pb, Q, q, metric, coin):
    """The leaf of a tree over ``A`` that row ``q`` of ``Q`` falls into."""
    node = 0
    while left[node] >= 0:
        if pa[node] < 0:
            node = left[node] if coin else right[node]
        elif dist(Q, q, A, pa[node], metric) < dist(Q, q, A, pb[node], metric):
            node = left[node]
        else:
            node = right[node]
    return node
