"""Bounded max-heaps, one per row of ``(ind, dst, flg)``: each row's nearest neighbours found so
far, the farthest at the root so that a farther candidate is refused at one comparison, and a
flag per entry that NN-descent sets on entries not yet joined.

:func:`sort_heaps` turns them into lists ordered by (distance, index): ties are broken by row
number, as an exact search orders them.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def heap_push(ind, dst, flg, row, d, j, f):
    """Offer neighbour ``j`` at distance ``d`` to row ``row``'s heap; 1 if it entered."""
    if d >= dst[row, 0]:
        return 0
    K = ind.shape[1]
    for t in range(K):
        if ind[row, t] == j:
            return 0
    i = 0
    while True:
        left = 2 * i + 1
        right = left + 1
        if left >= K:
            break
        c = left
        if right < K and dst[row, right] > dst[row, left]:
            c = right
        if dst[row, c] <= d:
            break
        ind[row, i], dst[row, i], flg[row, i] = ind[row, c], dst[row, c], flg[row, c]
        i = c
    ind[row, i], dst[row, i], flg[row, i] = j, d, f
    return 1


@njit(cache=True, nogil=True)
def _before(d1, i1, d2, i2):
    # (distance, index) order with empty slots (-1) after every real row at equal distance
    if d1 != d2:
        return d1 < d2
    if i1 < 0 or i2 < 0:
        return i2 < 0 and i1 >= 0
    return i1 < i2


@njit(cache=True, nogil=True)
def sort_pairs(ind, dst, m):
    """Insertion sort of ``ind[:m], dst[:m]`` by (distance, index), in place (short lists)."""
    for a in range(1, m):
        i, d = ind[a], dst[a]
        b = a - 1
        while b >= 0 and _before(d, i, dst[b], ind[b]):
            ind[b + 1], dst[b + 1] = ind[b], dst[b]
            b -= 1
        ind[b + 1], dst[b + 1] = i, d


@njit(cache=True, nogil=True)
def sort_heaps(ind, dst):
    """Sort every row by (distance, index) in place; empty slots (-1, inf) go last."""
    for r in range(ind.shape[0]):
        sort_pairs(ind[r], dst[r], ind.shape[1])
