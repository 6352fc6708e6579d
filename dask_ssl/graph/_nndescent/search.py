"""Best-first graph search: the approximate nearest rows of a block's index to each query row.

The candidates a query may expand wait in a min-heap of their own, nearest first; its
neighbour list is a bounded heap of :mod:`.heaps`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .distances import make_work, pdist, pin, unpin
from .heaps import heap_push, sort_heaps
from .prefetch import prefetch_row, prefetch_start
from .rng import random, rng_state_nb
from .search_graph import max_degree
from .trees import descend


@njit(cache=True, nogil=True)
def _cand_push(hd, hi, size, d, x):
    # min-heap on distance
    i = size
    while i > 0:
        parent = (i - 1) // 2
        if hd[parent] <= d:
            break
        hd[i], hi[i] = hd[parent], hi[parent]
        i = parent
    hd[i], hi[i] = d, x
    return size + 1


@njit(cache=True, nogil=True)
def _cand_pop(hd, hi, size):
    d0, x0 = hd[0], hi[0]
    size -= 1
    d, x = hd[size], hi[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        c = left
        if left + 1 < size and hd[left + 1] < hd[left]:
            c = left + 1
        if hd[c] >= d:
            break
        hd[i], hi[i] = hd[c], hi[c]
        i = c
    if size > 0:
        hd[i], hi[i] = d, x
    return d0, x0, size


@njit(cache=True, nogil=True)
def _evaluate(work, Q, q, A, rows, m, out_i, out_d, out_f, hd, hi, size, slack, metric, seed):
    # Distances from query q to rows[:m] (their lines requested together first), each offered
    # to q's list and, when within slack of its k-th distance or a seed, to the candidate heap.
    for t in range(m):
        prefetch_start(A, rows[t])
    for t in range(m):
        prefetch_row(A, rows[t])
    inside = 0
    for t in range(m):
        y = rows[t]
        dy = pdist(work, Q, q, A, y, metric)
        if seed or dy < out_d[q, 0] * slack:
            heap_push(out_i, out_d, out_f, q, dy, y, 0)
            size = _cand_push(hd, hi, size, dy, y)
            inside += 1
    return size, inside


@njit(cache=True, nogil=True)
def _best_first(work, Q, q, A, adj_ptr, adj_ind, out_i, out_d, out_f, seen, stamp, hd, hi,
                size, fresh, evals, budget, cap, plateau, slack, metric):
    # Expand the nearest candidate while it lies within slack of q's k-th distance and fewer
    # than budget distances were computed (0: no limit). Past budget, up to cap distances,
    # only while less than a share plateau of the rows this pass evaluated fell within slack
    # of the k-th distance: a search still descending, not wandering on a plateau.
    inside = 0
    evaluated = 0
    while size > 0:
        d, x, size = _cand_pop(hd, hi, size)
        if d > out_d[q, 0] * slack:
            break
        if budget > 0 and evals >= budget and (evals >= cap or inside >= plateau * evaluated):
            break
        m = 0
        for p in range(adj_ptr[x], adj_ptr[x + 1]):
            y = adj_ind[p]
            if seen[y] != stamp:
                seen[y] = stamp
                fresh[m] = y
                m += 1
        evals += m
        evaluated += m
        size, within = _evaluate(work, Q, q, A, fresh, m, out_i, out_d, out_f, hd, hi, size,
                                 slack, metric, False)
        inside += within
    return evals


@njit(cache=True, nogil=True)
def search(A, n, adj_ptr, adj_ind, left, right, pa, pb, start, stop, perm, Q, nq, qnbr, k,
           slack, metric, seed, budget, cap, plateau, counts):
    """Approximate ``k`` nearest rows of ``A`` to each query row, by best-first graph search.

    A best-first search expands the nearest unexpanded row while that row is within ``slack``
    times the current k-th distance, for at most ``budget`` distances per query (0: no limit):
    on data with wide plateaus of nearly equal distances it would otherwise wander far.

    Without ``qnbr`` (zero columns) each query starts from the rows of the tree leaf it falls
    into. With ``qnbr[q]``, queries near query ``q`` (-1 for none; say its kNN list among the
    queries), a first search from the leaves gets a sixth of the budget and a second one the
    rest, starting from what the first found for ``q`` and for its near queries: near points'
    neighbours are likely neighbours (NN-descent's premise), and far better starts than a
    leaf. On RCV1-like text (25 k queries against 25 k rows, k = 10) the distances crowd so
    that every query spent its whole budget; two passes of 100 + 200 reached a higher class
    agreement than one of 1000 (0.9664 -> 0.9708; recall 0.63 -> 0.55) in 5.6 s instead of
    14.6 s. Splitting 50 + 250 did a little better (0.9721, 0.554); 50 + 125 + 125 (a third
    pass seeded by what the second found) cost a fifth more for no gain in agreement.

    A pass that has spent its share of ``budget`` goes on, up to its share of ``cap``, while
    fewer than a share ``plateau`` of the rows it evaluated fell within ``slack`` of the k-th
    distance: on a plateau (text) nearly all do and the search stops at ``budget`` as before;
    on dense data of high intrinsic dimension few do and the list is still improving (g50c,
    5 k queries against 5 k rows: recall 0.62 at 300 -> 0.98 with ``cap`` 2000, about 1600
    distances a query). ``counts``, when not empty, gets each query's distance evaluations
    added. (Every argument is given: numba cached no compilation with one omitted.)
    """
    state = rng_state_nb(seed)
    out_i = np.full((nq, k), -1, np.int64)
    out_d = np.full((nq, k), np.inf)
    out_f = np.zeros((nq, k), np.uint8)
    seen = np.zeros(n, np.int64)
    fresh = np.empty(max(max_degree(adj_ptr), (qnbr.shape[1] + 1) * k,
                         np.max(stop - start) if stop.size else 0), np.int64)
    hd = np.empty(n + 1)
    hi = np.empty(n + 1, np.int64)
    work = make_work(Q, A)
    leaves = np.empty(nq, np.int64)
    for q in range(nq):
        leaves[q] = descend(A, left, right, pa, pb, Q, q, metric, random(state) < 0.5)
    # Queries taken in the order of their leaves' rows in A: consecutive queries then start
    # from, and mostly expand, the same rows, which stay in cache.
    queue = np.argsort(start[leaves], kind="mergesort")
    first, second = budget, 0
    first_cap, second_cap = cap, 0
    if qnbr.shape[1] > 0 and budget > 0:
        first = max(1, budget // 6)
        second = max(1, budget - first)
        first_cap = max(first, cap // 6)
        second_cap = max(second, cap - first_cap)
    for a in range(nq):
        q = queue[a]
        leaf = leaves[q]
        pin(Q, q, work)
        m = 0
        for t in range(start[leaf], stop[leaf]):
            seen[perm[t]] = a + 1
            fresh[m] = perm[t]
            m += 1
        size, _ = _evaluate(work, Q, q, A, fresh, m, out_i, out_d, out_f, hd, hi, 0, slack,
                            metric, True)
        ev = _best_first(work, Q, q, A, adj_ptr, adj_ind, out_i, out_d, out_f, seen, a + 1, hd,
                         hi, size, fresh, m, first, first_cap, plateau, slack, metric)
        if counts.shape[0] > 0:
            counts[q] += ev
        unpin(Q, q, work)
    if qnbr.shape[1] > 0:
        for a in range(nq):
            q = queue[a]
            stamp = nq + a + 1
            pin(Q, q, work)
            # q's own list is known: its rows go to the candidate heap without a distance
            size = 0
            for t in range(k):
                x = out_i[q, t]
                if x >= 0:
                    seen[x] = stamp
                    size = _cand_push(hd, hi, size, out_d[q, t], x)
            m = 0
            for u in range(qnbr.shape[1]):
                p = qnbr[q, u]
                if p < 0:
                    continue
                for t in range(k):
                    x = out_i[p, t]
                    if x >= 0 and seen[x] != stamp:
                        seen[x] = stamp
                        fresh[m] = x
                        m += 1
            size, _ = _evaluate(work, Q, q, A, fresh, m, out_i, out_d, out_f, hd, hi, size,
                                slack, metric, True)
            ev = _best_first(work, Q, q, A, adj_ptr, adj_ind, out_i, out_d, out_f, seen, stamp,
                             hd, hi, size, fresh, m, second, second_cap, plateau, slack, metric)
            if counts.shape[0] > 0:
                counts[q] += ev
            unpin(Q, q, work)
    sort_heaps(out_i, out_d)
    return out_i, out_d
