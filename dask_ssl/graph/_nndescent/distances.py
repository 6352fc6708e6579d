"""Rank distances between rows: the one way every kernel of the kNN search compares two rows.

Rows are either a dense C-contiguous float32 array or a CSR triple ``(indptr, indices, data)``
(int64, int32, float32); :func:`dist` serves both. Distances are *rank distances*: the squared
euclidean distance, or ``1 - cos`` on rows normalized beforehand. Callers convert.

A row compared with many others is pinned first (:func:`pin`, :func:`pdist`, :func:`unpin`).

The functions are stubs in Python; numba overloads give them their compiled code, chosen by the
rows' type when a kernel is compiled. The overloads register when this module is imported, so
every module whose kernels call these functions imports them from here.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload


EUCLIDEAN, COSINE = 0, 1


def dist(A, i, B, j, metric):  # pragma: no cover - replaced by the overload in compiled code
    """Rank distance between row ``i`` of ``A`` and row ``j`` of ``B`` (compiled code only)."""
    raise NotImplementedError


@overload(dist, jit_options={"fastmath": True})
def _dist_overload(A, i, B, j, metric):
    if isinstance(A, types.Array):
        # float32 arithmetic: twice the SIMD lanes of float64 (KDD99 rows, 116 columns:
        # 21 -> 15 ns a distance from cache); its rounding (~1e-6 relative) is far below the
        # gaps between neighbours that ranking needs.
        def dense(A, i, B, j, metric):
            s = np.float32(0.0)
            if metric == 0:
                for t in range(A.shape[1]):
                    x = A[i, t] - B[j, t]
                    s += x * x
                return np.float64(s)
            for t in range(A.shape[1]):
                s += A[i, t] * B[j, t]
            return max(1.0 - np.float64(s), 0.0)
        return dense

    def sparse(A, i, B, j, metric):
        ap, ai, ax = A
        bp, bi, bx = B
        p, pe, q, qe = ap[i], ap[i + 1], bp[j], bp[j + 1]
        s = 0.0
        if metric == 0:
            while p < pe and q < qe:
                if ai[p] == bi[q]:
                    x = np.float64(ax[p]) - np.float64(bx[q])
                    p += 1
                    q += 1
                elif ai[p] < bi[q]:
                    x = np.float64(ax[p])
                    p += 1
                else:
                    x = np.float64(bx[q])
                    q += 1
                s += x * x
            while p < pe:
                s += np.float64(ax[p]) * np.float64(ax[p])
                p += 1
            while q < qe:
                s += np.float64(bx[q]) * np.float64(bx[q])
                q += 1
            return s
        while p < pe and q < qe:
            if ai[p] == bi[q]:
                s += np.float64(ax[p]) * np.float64(bx[q])
                p += 1
                q += 1
            elif ai[p] < bi[q]:
                p += 1
            else:
                q += 1
        return max(1.0 - s, 0.0)
    return sparse


def pin(A, i, work):  # pragma: no cover - replaced by the overload in compiled code
    """Make row ``i`` of ``A`` the left side of :func:`pdist` (compiled code only)."""
    raise NotImplementedError


def unpin(A, i, work):  # pragma: no cover - replaced by the overload in compiled code
    """Undo :func:`pin` (compiled code only)."""
    raise NotImplementedError


def pdist(work, A, i, B, j, metric):  # pragma: no cover - replaced by the overload
    """:func:`dist` from the pinned row ``i`` of ``A`` (compiled code only)."""
    raise NotImplementedError


def make_work(A, B):  # pragma: no cover - replaced by the overload in compiled code
    """The work vector :func:`pin` fills for rows of ``A`` met by rows of ``B``."""
    raise NotImplementedError


# A sparse row compared with many others is scattered once into a dense work vector; each
# distance then reads the other row's entries against it, instead of merging two sorted index
# lists (a branch per entry, mispredicted about half the time): 1.6x faster on RCV1-like rows.

@overload(make_work)
def _make_work_overload(A, B):
    if isinstance(A, types.Array):
        return lambda A, B: np.zeros(1)

    def sparse(A, B):
        width = 0
        if A[1].size:
            width = max(width, int(A[1].max()) + 1)
        if B[1].size:
            width = max(width, int(B[1].max()) + 1)
        # float32 (the rows' own precision: values are copied exactly) halves the vector the
        # distances gather from; the last two slots hold the pinned row's squared norm as a
        # float32 pair (high part, remainder), precise enough for euclidean cancellation
        return np.zeros(width + 2, np.float32)
    return sparse


@overload(pin)
def _pin_overload(A, i, work):
    if isinstance(A, types.Array):
        return lambda A, i, work: None

    def sparse(A, i, work):
        ap, ai, ax = A
        s = 0.0
        for p in range(ap[i], ap[i + 1]):
            work[ai[p]] = ax[p]
            s += np.float64(ax[p]) * np.float64(ax[p])
        hi = np.float32(s)
        work[work.size - 2] = hi
        work[work.size - 1] = np.float32(s - np.float64(hi))
    return sparse


@overload(unpin)
def _unpin_overload(A, i, work):
    if isinstance(A, types.Array):
        return lambda A, i, work: None

    def sparse(A, i, work):
        ap, ai, _ = A
        for p in range(ap[i], ap[i + 1]):
            work[ai[p]] = 0.0
    return sparse


@overload(pdist, jit_options={"fastmath": True})
def _pdist_overload(work, A, i, B, j, metric):
    if isinstance(A, types.Array):
        return lambda work, A, i, B, j, metric: dist(A, i, B, j, metric)

    def sparse(work, A, i, B, j, metric):
        bp, bi, bx = B
        dot = 0.0
        if metric == 0:
            nb = 0.0
            for q in range(bp[j], bp[j + 1]):
                v = np.float64(bx[q])
                dot += np.float64(work[bi[q]]) * v
                nb += v * v
            na = np.float64(work[work.size - 2]) + np.float64(work[work.size - 1])
            return max(na + nb - 2.0 * dot, 0.0)
        for q in range(bp[j], bp[j + 1]):
            dot += np.float64(work[bi[q]]) * np.float64(bx[q])
        return max(1.0 - dot, 0.0)
    return sparse
