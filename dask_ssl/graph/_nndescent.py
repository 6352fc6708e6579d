"""numba kernels of the partitioned kNN search: row hashing, random-projection trees, NN-descent
and graph search.

Every kernel is compiled with ``cache=True`` and is small: the whole set compiles in seconds
and, once on disk, loads in well under a second in every later worker process. (pynndescent's
own build recompiles its closures in every process, about a minute and a half each, which
dominated the test suite and every fresh worker.)

Rows are either a dense C-contiguous float32 array or a CSR triple ``(indptr, indices, data)``
(int64, int32, float32); :func:`dist` serves both. Distances here are *rank distances*: the
squared euclidean distance, or ``1 - cos`` on rows normalized beforehand. Callers convert.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

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


@intrinsic
def _prefetch(typingctx, arr, i):
    """Ask the CPU to bring the cache line holding ``arr[i]`` closer (a hint: no fault, no
    effect on results)."""
    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        # read access, high temporal locality, data cache
        builder.call(fn, [builder.bitcast(builder.gep(ary.data, [args[1]]), i8p),
                          ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return types.void(arr, i), codegen


def prefetch_start(A, j):  # pragma: no cover - replaced by the overload in compiled code
    """Prefetch what locating row ``j`` of ``A`` reads (compiled code only)."""
    raise NotImplementedError


def prefetch_row(A, j):  # pragma: no cover - replaced by the overload in compiled code
    """Prefetch row ``j`` of ``A`` (compiled code only)."""
    raise NotImplementedError


# The graph search reads rows scattered over the block: on RCV1-like rows (77
# entries, ~10 cache lines in two arrays) a distance from memory cost 0.6 us against 0.12 us
# from cache, nearly all of it waiting. The rows a step will compare are known beforehand (a
# node's neighbours, a query's seeds), so their lines are requested together first and the
# waits overlap: 25 M distances to known rows took 15 -> 5 s; the cross-block search of
# 25 k RCV1-like rows against 25 k, 6.5 -> 5.3 s (same lists).

@overload(prefetch_start)
def _prefetch_start_overload(A, j):
    if isinstance(A, types.Array):
        return lambda A, j: None

    def sparse(A, j):
        _prefetch(A[0], j)
    return sparse


@overload(prefetch_row)
def _prefetch_row_overload(A, j):
    if isinstance(A, types.Array):
        def dense(A, j):
            for t in range(0, A.shape[1], 16):
                _prefetch(A[j], t)
        return dense

    def sparse(A, j):
        ap, ai, ax = A
        p0 = ap[j]
        for o in range(0, ap[j + 1] - p0, 16):
            _prefetch(ai, p0 + o)
            _prefetch(ax, p0 + o)
    return sparse


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


# ------------------------------------------------------------------------------------------
# row hashes (exact duplicates)

@njit(cache=True, nogil=True)
def _mix(h, w):
    # splitmix64-style finalizer over the running state: cheap and well spread.
    h ^= w + np.uint64(0x9E3779B97F4A7C15) + (h << np.uint64(6)) + (h >> np.uint64(2))
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(29)
    return h


@njit(cache=True, nogil=True)
def hash_dense_rows(U):
    """Two independent 64-bit hashes of each row of a uint32 view of float32 rows."""
    n, d = U.shape
    out = np.empty((n, 2), dtype=np.uint64)
    for i in range(n):
        h1 = np.uint64(0x243F6A8885A308D3)
        h2 = np.uint64(0x13198A2E03707344)
        for t in range(d):
            w = np.uint64(U[i, t])
            h1 = _mix(h1, w)
            h2 = _mix(h2, w ^ np.uint64(0xA5A5A5A5))
        out[i, 0], out[i, 1] = h1, h2
    return out


@njit(cache=True, nogil=True)
def hash_sparse_rows(indptr, indices, U):
    """Like :func:`hash_dense_rows` for CSR rows (column numbers and uint32 views of values)."""
    n = indptr.size - 1
    out = np.empty((n, 2), dtype=np.uint64)
    for i in range(n):
        h1 = np.uint64(0x243F6A8885A308D3)
        h2 = np.uint64(0x13198A2E03707344)
        for p in range(indptr[i], indptr[i + 1]):
            c, w = np.uint64(indices[p]), np.uint64(U[p])
            h1 = _mix(_mix(h1, c), w)
            h2 = _mix(_mix(h2, w), c ^ np.uint64(0x5A5A5A5A))
        out[i, 0], out[i, 1] = h1, h2
    return out


# ------------------------------------------------------------------------------------------
# a tiny random generator: numba's np.random costs far more compilation than the kernels

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
def _randint(state, n):
    return np.int64(_rand(state) % np.uint64(n))


@njit(cache=True, nogil=True)
def _random(state):
    return np.float64(_rand(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, nogil=True)
def rng_state_nb(seed):
    """The state :func:`_rand` advances, from an integer seed (never zero)."""
    st = np.empty(1, np.uint64)
    st[0] = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x632BE59BD9B4E019)
    if st[0] == 0:
        st[0] = 1
    return st


# ------------------------------------------------------------------------------------------
# bounded max-heaps, one per row of (ind, dst, flg)

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


# ------------------------------------------------------------------------------------------
# search graph: the kNN lists plus their reverse edges

@njit(cache=True, nogil=True)
def edge_counts(ind, n):
    """``ptr`` of the search graph before repeats are removed: row ``i`` gets its list's valid
    entries and one entry per list that holds ``i``."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(ind.shape[0]):
        for t in range(ind.shape[1]):
            j = ind[i, t]
            if j >= 0:
                ptr[i + 1] += 1
                ptr[j + 1] += 1
    for i in range(n):
        ptr[i + 1] += ptr[i]
    return ptr


@njit(cache=True, nogil=True)
def fill_edges(ind, ptr, adj):
    """Fill ``adj`` (sized by :func:`edge_counts`) with each row's neighbours ascending and
    without repeats, packed to the front; returns the packed ``ptr``."""
    n = ptr.size - 1
    pos = ptr[:-1].copy()
    for i in range(ind.shape[0]):
        for t in range(ind.shape[1]):
            j = ind[i, t]
            if j >= 0:
                adj[pos[i]] = j
                pos[i] += 1
                adj[pos[j]] = i
                pos[j] += 1
    packed = np.zeros(n + 1, dtype=np.int64)
    out = 0
    for i in range(n):
        row = np.sort(adj[ptr[i]:ptr[i + 1]])
        for a in range(row.size):
            if a == 0 or row[a] != row[a - 1]:
                adj[out] = row[a]
                out += 1
        packed[i + 1] = out
    return packed


# ------------------------------------------------------------------------------------------
# random-projection tree (split by which of two random pivot rows is nearer)

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
            u = perm[s + _randint(state, m)]
            v = perm[s + _randint(state, m)]
            if u != v and dist(A, u, A, v, metric) > 0:
                a, b = u, v
                break
        nl = 0
        if a >= 0:
            c = set_plane(A, a, b, plane, metric)
            for t in range(s, e):
                m_x = plane_dot(plane, A, perm[t])
                side[t - s] = m_x < c or (m_x == c and _random(state) < 0.5)
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
                r = _randint(state, t + 1)
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


# ------------------------------------------------------------------------------------------
# NN-descent

@njit(cache=True, nogil=True)
def init_from_leaves(A, ind, dst, flg, start, stop, perm, left, metric):
    """Offer every pair of rows sharing a leaf of a tree to each other's heaps."""
    work = make_work(A, A)
    for node in range(left.size):
        if left[node] >= 0:
            continue
        for s in range(start[node], stop[node]):
            x = perm[s]
            pin(A, x, work)
            for t in range(s + 1, stop[node]):
                y = perm[t]
                d = pdist(work, A, x, A, y, metric)
                heap_push(ind, dst, flg, x, d, y, 1)
                heap_push(ind, dst, flg, y, d, x, 1)
            unpin(A, x, work)


@njit(cache=True, nogil=True)
def init_random(A, ind, dst, flg, metric, seed):
    """Fill empty heap slots with random rows (a tree leaf may hold fewer than K others)."""
    state = rng_state_nb(seed)
    n, K = ind.shape
    for i in range(n):
        if ind[i, 0] >= 0:
            continue
        for _ in range(2 * K):
            j = _randint(state, n)
            if j != i:
                heap_push(ind, dst, flg, i, dist(A, i, A, j, metric), j, 1)
            if ind[i, 0] >= 0:
                break


@njit(cache=True, nogil=True)
def _candidates(ind, flg, max_cand, seed):
    # New and old candidates per row, forward and reverse edges, at most max_cand each, kept by
    # random priority (a reservoir through a small max-heap on the priority).
    state = rng_state_nb(seed)
    n, K = ind.shape
    new_i = np.full((n, max_cand), -1, np.int64)
    new_p = np.full((n, max_cand), np.inf)
    old_i = np.full((n, max_cand), -1, np.int64)
    old_p = np.full((n, max_cand), np.inf)
    dummy = np.zeros((n, max_cand), np.uint8)
    for i in range(n):
        for t in range(K):
            j = ind[i, t]
            if j < 0:
                continue
            pr = _random(state)
            if flg[i, t]:
                heap_push(new_i, new_p, dummy, i, pr, j, 0)
                heap_push(new_i, new_p, dummy, j, pr, i, 0)
            else:
                heap_push(old_i, old_p, dummy, i, pr, j, 0)
                heap_push(old_i, old_p, dummy, j, pr, i, 0)
    # The sampled new candidates count as old from now on.
    for i in range(n):
        for t in range(K):
            j = ind[i, t]
            if j < 0 or not flg[i, t]:
                continue
            for c in range(max_cand):
                if new_i[i, c] == j:
                    flg[i, t] = 0
                    break
    return new_i, old_i


def make_join_scratch(A, max_cand):  # pragma: no cover - replaced by the overload
    """Working memory of :func:`join_distances` (compiled code only)."""
    raise NotImplementedError


def join_distances(A, new, old, D, scratch, metric):  # pragma: no cover - replaced by overload
    """The distances of NN-descent's local join of one row's candidates: ``D[a, b]`` between
    ``new[a]`` and ``new[b]`` (``b > a``), ``D[a, m + b]`` between ``new[a]`` and ``old[b]``
    (``m = new.size``); entries of missing rows (-1) are left as they were (compiled code
    only)."""
    raise NotImplementedError


# Sparse rows: the candidates' pairwise dot products through an inverted list of their
# entries (each column's entries chained through a head array), so a product costs the entries
# the two rows share rather than a gather per entry of one of them; old candidates enter
# first, unchained among themselves, as old-old pairs are never compared. RCV1-like rows
# (100 k, K = 15, 4 rounds, one core, loaded host): 15.6-17.7 -> 12.1 s, the same lists.

@overload(make_join_scratch)
def _make_join_scratch_overload(A, max_cand):
    if isinstance(A, types.Array):
        return lambda A, max_cand: make_work(A, A)

    def sparse(A, max_cand):
        ap, ai, _ = A
        width = (int(ai.max()) + 1) if ai.size else 1
        longest = 0
        for i in range(ap.size - 1):
            longest = max(longest, ap[i + 1] - ap[i])
        cap = 2 * max_cand * longest
        return (np.full(width, -1, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64),
                np.empty(cap), np.zeros((max_cand, 2 * max_cand)), np.zeros(2 * max_cand))
    return sparse


@overload(join_distances)
def _join_distances_overload(A, new, old, D, scratch, metric):
    if isinstance(A, types.Array):
        def dense(A, new, old, D, scratch, metric):
            m = new.size
            for a in range(m):
                p = new[a]
                if p < 0:
                    continue
                pin(A, p, scratch)
                for b in range(a + 1, m):
                    if new[b] >= 0:
                        D[a, b] = pdist(scratch, A, p, A, new[b], metric)
                for b in range(old.size):
                    if old[b] >= 0:
                        D[a, m + b] = pdist(scratch, A, p, A, old[b], metric)
                unpin(A, p, scratch)
        return dense

    def sparse(A, new, old, D, scratch, metric):
        ap, ai, ax = A
        head, nxt, slot, val, G, sq = scratch
        m = new.size
        e = 0
        for b in range(old.size):
            r = old[b]
            if r < 0:
                continue
            sq[m + b] = 0.0
            for p in range(ap[r], ap[r + 1]):
                v = np.float64(ax[p])
                sq[m + b] += v * v
                nxt[e], slot[e], val[e] = head[ai[p]], m + b, v
                head[ai[p]] = e
                e += 1
        for a in range(m):
            r = new[a]
            if r < 0:
                continue
            G[a, :] = 0.0
            sq[a] = 0.0
            for p in range(ap[r], ap[r + 1]):
                c = ai[p]
                v = np.float64(ax[p])
                sq[a] += v * v
                f = head[c]
                while f >= 0:
                    G[a, slot[f]] += v * val[f]
                    f = nxt[f]
                nxt[e], slot[e], val[e] = head[c], a, v
                head[c] = e
                e += 1
        for rows in (new, old):
            for t in range(rows.size):
                if rows[t] >= 0:
                    for p in range(ap[rows[t]], ap[rows[t] + 1]):
                        head[ai[p]] = -1
        for a in range(m):
            if new[a] < 0:
                continue
            # new[b] (b > a) entered after new[a]: their product sits in row b
            for b in range(a + 1, m):
                if new[b] >= 0:
                    D[a, b] = (max(sq[a] + sq[b] - 2.0 * G[b, a], 0.0) if metric == 0
                               else max(1.0 - G[b, a], 0.0))
            for b in range(old.size):
                if old[b] >= 0:
                    D[a, m + b] = (max(sq[a] + sq[m + b] - 2.0 * G[a, m + b], 0.0)
                                   if metric == 0 else max(1.0 - G[a, m + b], 0.0))
    return sparse


@njit(cache=True, nogil=True)
def nn_descent(A, ind, dst, flg, metric, max_cand, n_iters, delta, seed):
    """Refine the heaps by local joins until fewer than ``delta * n * K`` updates a round."""
    n, K = ind.shape
    scratch = make_join_scratch(A, max_cand)
    D = np.empty((max_cand, 2 * max_cand))
    for it in range(n_iters):
        new_i, old_i = _candidates(ind, flg, max_cand, seed + it)
        updates = 0
        for i in range(n):
            join_distances(A, new_i[i], old_i[i], D, scratch, metric)
            for a in range(max_cand):
                p = new_i[i, a]
                if p < 0:
                    continue
                for b in range(a + 1, max_cand):
                    q = new_i[i, b]
                    if q < 0:
                        continue
                    d = D[a, b]
                    if d < dst[p, 0] or d < dst[q, 0]:
                        updates += heap_push(ind, dst, flg, p, d, q, 1)
                        updates += heap_push(ind, dst, flg, q, d, p, 1)
                for b in range(max_cand):
                    q = old_i[i, b]
                    if q < 0 or q == p:
                        continue
                    d = D[a, max_cand + b]
                    if d < dst[p, 0] or d < dst[q, 0]:
                        updates += heap_push(ind, dst, flg, p, d, q, 1)
                        updates += heap_push(ind, dst, flg, q, d, p, 1)
        if updates <= delta * n * K:
            return it + 1
    return n_iters


@njit(cache=True, nogil=True)
def diversify(A, ind, dst, metric):
    """The sorted lists ``ind`` (distances ``dst``) with each neighbour dropped that lies nearer
    to a nearer kept neighbour than to the row (-1 pads the rest).

    The edges dropped lead where the kept ones already lead: a search graph of the kept lists
    plus their reverse edges had degree 11 instead of 27 on RCV1-like rows (25 k, K = 15), and
    the cross-block search in it took 5.3 -> 3.9 s at the same class agreement and recall.
    """
    n, K = ind.shape
    out = np.full((n, K), -1, ind.dtype)
    work = make_work(A, A)
    for i in range(n):
        m = 0
        for t in range(K):
            y = ind[i, t]
            if y < 0:
                continue
            pin(A, y, work)
            keep = True
            for u in range(m):
                if pdist(work, A, y, A, out[i, u], metric) < dst[i, t]:
                    keep = False
                    break
            unpin(A, y, work)
            if keep:
                out[i, m] = y
                m += 1
    return out


@njit(cache=True, nogil=True)
def brute_force(A, n, K, metric):
    """Exact K nearest among the ``n`` rows of ``A`` (small blocks)."""
    ind = np.full((n, K), -1, np.int64)
    dst = np.full((n, K), np.inf)
    flg = np.zeros((n, K), np.uint8)
    work = make_work(A, A)
    for i in range(n):
        pin(A, i, work)
        for j in range(i + 1, n):
            d = pdist(work, A, i, A, j, metric)
            heap_push(ind, dst, flg, i, d, j, 0)
            heap_push(ind, dst, flg, j, d, i, 0)
        unpin(A, i, work)
    sort_heaps(ind, dst)
    return ind, dst


# ------------------------------------------------------------------------------------------
# graph search (queries against a block's index)

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
def max_degree(adj_ptr):
    """The largest number of neighbours of a row of the search graph."""
    m = 0
    for i in range(adj_ptr.size - 1):
        m = max(m, adj_ptr[i + 1] - adj_ptr[i])
    return m


@njit(cache=True, nogil=True)
def _evaluate(work, Q, q, A, rows, m, out_i, out_d, out_f, hd, hi, size, slack, metric, seed):
    # Distances from query q to rows[:m] (their lines requested together first), each offered
    # to q's list and, when within slack of its k-th distance or a seed, to the candidate heap.
    for t in range(m):
        prefetch_start(A, rows[t])
    for t in range(m):
        prefetch_row(A, rows[t])
    for t in range(m):
        y = rows[t]
        dy = pdist(work, Q, q, A, y, metric)
        if seed or dy < out_d[q, 0] * slack:
            heap_push(out_i, out_d, out_f, q, dy, y, 0)
            size = _cand_push(hd, hi, size, dy, y)
    return size


@njit(cache=True, nogil=True)
def _best_first(work, Q, q, A, adj_ptr, adj_ind, out_i, out_d, out_f, seen, stamp, hd, hi,
                size, fresh, evals, budget, slack, metric):
    # Expand the nearest candidate while it lies within slack of q's k-th distance and fewer
    # than budget distances were computed (0: no limit).
    while size > 0:
        d, x, size = _cand_pop(hd, hi, size)
        if d > out_d[q, 0] * slack or (budget > 0 and evals >= budget):
            break
        m = 0
        for p in range(adj_ptr[x], adj_ptr[x + 1]):
            y = adj_ind[p]
            if seen[y] != stamp:
                seen[y] = stamp
                fresh[m] = y
                m += 1
        evals += m
        size = _evaluate(work, Q, q, A, fresh, m, out_i, out_d, out_f, hd, hi, size, slack,
                         metric, False)


@njit(cache=True, nogil=True)
def search(A, n, adj_ptr, adj_ind, left, right, pa, pb, start, stop, perm, Q, nq, qnbr, k,
           slack, metric, seed, budget):
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
        leaves[q] = descend(A, left, right, pa, pb, Q, q, metric, _random(state) < 0.5)
    # Queries taken in the order of their leaves' rows in A: consecutive queries then start
    # from, and mostly expand, the same rows, which stay in cache.
    queue = np.argsort(start[leaves], kind="mergesort")
    first, second = budget, 0
    if qnbr.shape[1] > 0 and budget > 0:
        first = max(1, budget // 6)
        second = max(1, budget - first)
    for a in range(nq):
        q = queue[a]
        leaf = leaves[q]
        pin(Q, q, work)
        m = 0
        for t in range(start[leaf], stop[leaf]):
            seen[perm[t]] = a + 1
            fresh[m] = perm[t]
            m += 1
        size = _evaluate(work, Q, q, A, fresh, m, out_i, out_d, out_f, hd, hi, 0, slack,
                         metric, True)
        _best_first(work, Q, q, A, adj_ptr, adj_ind, out_i, out_d, out_f, seen, a + 1, hd, hi,
                    size, fresh, m, first, slack, metric)
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
            size = _evaluate(work, Q, q, A, fresh, m, out_i, out_d, out_f, hd, hi, size,
                             slack, metric, True)
            _best_first(work, Q, q, A, adj_ptr, adj_ind, out_i, out_d, out_f, seen, stamp, hd,
                        hi, size, fresh, m, second, slack, metric)
            unpin(Q, q, work)
    sort_heaps(out_i, out_d)
    return out_i, out_d


# ------------------------------------------------------------------------------------------
# duplicates: neighbour lists of every row from those of the distinct rows

@njit(cache=True, nogil=True)
def expand_duplicates(rows, row_group, u_row, g_start, g_size, members, u_ind, u_dst, k):
    """Neighbour lists of rows ``rows`` from their groups of identical rows.

    ``row_group[a]`` is the group (a distinct row) of row ``rows[a]``, whose members are
    ``members[g_start[g]:g_start[g] + g_size[g]]`` in ascending row order;
    ``u_ind[u_row[a]]``, ``u_dst[u_row[a]]`` are the nearest groups found for it (a new point
    passes an empty group of its own). A row's candidates are the other members
    of its group (distance 0) and the members of the neighbouring groups, each at its group's
    distance; the ``k`` nearest by (distance, row number) are kept, as an exact search would.
    """
    m = rows.size
    ku = u_ind.shape[1]
    out_i = np.full((m, k), -1, np.int64)
    out_d = np.full((m, k), np.inf)
    cap = (k + 1) + ku * k
    ci = np.empty(cap, np.int64)
    cd = np.empty(cap)
    for a in range(m):
        r = rows[a]
        g = row_group[a]
        u = u_row[a]
        c = 0
        s = g_start[g]
        for t in range(s, s + min(g_size[g], k + 1)):
            if members[t] != r:
                ci[c], cd[c] = members[t], 0.0
                c += 1
        for v in range(ku):
            h = u_ind[u, v]
            if h < 0:
                continue
            # Groups come nearest first: once k candidates are nearer, the rest cannot enter.
            if c >= k:
                sort_pairs(ci, cd, c)
                c = k
                if u_dst[u, v] > cd[k - 1]:
                    break
            s = g_start[h]
            for t in range(s, s + min(g_size[h], k)):
                ci[c], cd[c] = members[t], u_dst[u, v]
                c += 1
        sort_pairs(ci, cd, c)
        for t in range(min(k, c)):
            out_i[a, t], out_d[a, t] = ci[t], cd[t]
    return out_i, out_d
