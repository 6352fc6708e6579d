"""Approximate k nearest neighbours of every row of a :class:`RowBlocks`, built on the workers.

1. **Exact duplicates** are found first: each block hashes its rows (two 64-bit hashes a row),
   the driver groups equal hashes, and only one row of each group (the lowest row number) takes
   part in the search. Real data often repeats rows (KDD99's 10% sample has 494 k rows but only
   146 k distinct ones); duplicates cost a search nothing, and identical rows would otherwise
   fill NN-descent's lists with ties.
2. **An index per block**, built on the worker holding the block, over the block's distinct
   rows (or, when blocks repeat rows unevenly, over an equal share of all distinct rows, the
   missing ones fetched from the neighbouring block): random-projection trees
   (splitting by which of two random rows is nearer, so the same code serves euclidean and
   cosine, dense and sparse), NN-descent from the trees' leaves, and a search graph (the kNN
   lists without the neighbours a nearer neighbour leads to, plus their reverse edges).
   Neighbours inside a block come from its NN-descent lists.
3. **Across blocks**, the distinct rows of index ``b`` (a small array) travel once to each
   other index's worker, without waiting for any index, and are searched there, best first
   through that index's search graph: first from the tree leaf each falls into, then again
   from what the first pass found for the row and for its neighbours in ``b`` (index ``b``'s
   lists, a small array that follows once ``b`` is built); the candidates from all indexes
   are merged by distance on ``b``'s worker. Indexes are disjoint, so the merge is exact over
   the candidates.
4. Rows in a group of duplicates get the other members of their group (distance 0) and the
   members of the groups their group's distinct row found, merged by (distance, row number) as
   an exact search would order ties.

The kernels are in :mod:`dask_ssl.graph._nndescent`, a module per job (numba, cached on disk,
compiled once).
``index_neighbors`` (the NN-descent list length) and ``search_epsilon`` (how far beyond the
current k-th distance the cross-block search keeps expanding) trade recall for time.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp


from ..linalg.rowblocks import RowBlocks
from . import _nndescent as nnd
from .exact import exact_block

METRICS = ("euclidean", "cosine")
logger = logging.getLogger(__name__)
_METRIC_CODE = {"euclidean": nnd.EUCLIDEAN, "cosine": nnd.COSINE}
# Past its budget a cross-block query goes on (up to search_budget_max) while less than this
# share of the rows it evaluated fell within search_epsilon of its k-th distance: on sparse
# text under cosine nearly all do (a plateau; RCV1-like 50 k: >99% of a query's nearest 1000
# rows), on dense 50-d Gaussians (g50c) about 12%, on KDD99 2%.
PLATEAU = 0.5

@dataclass
class Neighbors:
    """The kNN lists of all rows of ``data``, held per block on the workers.

    Attributes
    ----------
    data : RowBlocks
        The points (their blocks stay where they are).
    parts : list of Future
        Per block ``(indices, distances)``: ``n_b x k`` int64 global row numbers and float32
        distances, nearest first. A row never lists itself.
    indexes : list of Future or None
        One :class:`BlockIndex` per block's worker (None after loading from disk, or for an
        index left without rows).
    n_neighbors : int
    metric : str
    groups : tuple or None
        ``(group, g_start, g_size, members)`` when some rows repeat others: each row's group
        of identical rows, and each group's members in row order (driver-side, n-sized).
    distinct_offsets : ndarray or None
        Index ``b`` holds the distinct rows ``distinct_offsets[b]..distinct_offsets[b + 1]``,
        numbered as the groups (with no repeated rows: the blocks' row ranges).
    """

    data: RowBlocks
    parts: list
    indexes: list | None
    n_neighbors: int
    metric: str
    groups: tuple | None = None
    distinct_offsets: np.ndarray | None = None

    def nearest(self, k: int) -> "Neighbors":
        """The lists cut to their ``k`` nearest (``k <= n_neighbors``), on the same workers:
        one search for the most neighbours answers every smaller k, as the lists are
        nearest first."""
        if not 1 <= k <= self.n_neighbors:
            raise ValueError(f"k must be in 1..{self.n_neighbors}, got {k!r}")
        if k == self.n_neighbors:
            return self
        owners, client = self.data.owners(), self.data.client
        parts = [None if part is None else client.submit(
                     _nearest, part, k, workers=[owners[b]], allow_other_workers=True,
                     pure=False) for b, part in enumerate(self.parts)]
        return replace(self, parts=parts, n_neighbors=k)

    def gather(self) -> tuple[np.ndarray, np.ndarray]:
        """All neighbour lists on the driver, ``(indices, distances)``, each ``n x k``."""
        got = self.data.client.gather(self.parts)
        return np.vstack([g[0] for g in got]), np.vstack([g[1] for g in got])


def _nearest(part, k):
    ind, dst = part
    return np.ascontiguousarray(ind[:, :k]), np.ascontiguousarray(dst[:, :k])


def check_knn_params(n_rows: int, n_neighbors, metric: str) -> None:
    """Raise ``ValueError`` for a neighbour count or metric the search cannot serve."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    if not isinstance(n_neighbors, (int, np.integer)) or n_neighbors < 1:
        raise ValueError(f"n_neighbors must be a positive integer, got {n_neighbors!r}")
    if n_neighbors >= n_rows:
        raise ValueError(f"n_neighbors={n_neighbors} must be smaller than the number of rows "
                         f"(n_samples={n_rows})")


def prepare_rows(X, metric: str):
    """Rows as the kernels take them: float32 dense, or a CSR triple; unit rows for cosine."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float32, copy=True)
        X.sum_duplicates()
        X.sort_indices()
        if metric == "cosine":
            norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel())
            scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
            X.data *= np.repeat(scale, np.diff(X.indptr)).astype(np.float32)
        return (X.indptr.astype(np.int64), X.indices.astype(np.int32),
                np.ascontiguousarray(X.data, dtype=np.float32))
    if metric != "cosine":
        # read in place when the rows already are float32 C-order: an index holds its rows as
        # long as it lives, and a copy doubled a worker's data
        return np.ascontiguousarray(X, dtype=np.float32)
    X = np.array(X, dtype=np.float32, order="C", copy=True)
    norms = np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))
    X *= np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)[:, None].astype(
        np.float32)
    return X


def _n_prepared(A) -> int:
    return A.shape[0] if isinstance(A, np.ndarray) else A[0].size - 1


def _take_prepared(A, rows):
    if isinstance(A, np.ndarray):
        return np.ascontiguousarray(A[rows])
    indptr, indices, data = A
    sub = sp.csr_matrix((data, indices, indptr), shape=(indptr.size - 1, int(indices.max(
        initial=-1)) + 1))[rows]
    return (sub.indptr.astype(np.int64), sub.indices.astype(np.int32), sub.data)


def _row_hashes(i, X, metric):
    A = prepare_rows(X, metric)
    if isinstance(A, np.ndarray):
        return nnd.hash_dense_rows(A.view(np.uint32))
    return nnd.hash_sparse_rows(A[0], A[1], A[2].view(np.uint32))


def _true_distance(d, metric):
    # Rank distances to the metric's own: squared euclidean -> euclidean; 1 - cos as is.
    return np.sqrt(d) if metric == "euclidean" else d


@dataclass
class SearchIndex:
    """What a search of one block's index reads (plain arrays, no compiled objects).

    Attributes
    ----------
    rows : ndarray or tuple
        The block's distinct rows, prepared (:func:`prepare_rows`), in the leaf order of a
        random-projection tree: index row ``i`` is the block's distinct row ``order[i]``.
    order : ndarray
        The block's distinct row (its number among them) at each index row.
    adj_ptr, adj_ind : ndarray
        The search graph in CSR form: the NN-descent lists, thinned by
        :func:`dask_ssl.graph._nndescent.search_graph.diversify`, plus their reverse edges.
    tree : tuple
        A random-projection tree over the rows
        (:func:`dask_ssl.graph._nndescent.trees.rp_tree`).
    metric : str
    """

    rows: object
    order: np.ndarray
    adj_ptr: np.ndarray
    adj_ind: np.ndarray
    tree: tuple
    metric: str

    @property
    def n(self) -> int:
        return self.order.size


@dataclass
class BlockIndex(SearchIndex):
    """One block's index as built, held on its worker: the search's arrays and the NN-descent
    lists they came from.

    Attributes
    ----------
    ind, dst : ndarray
        NN-descent lists (index row numbers, rank distances), nearest first.
    n_iter : int
        NN-descent rounds run.
    """

    ind: np.ndarray
    dst: np.ndarray
    n_iter: int


def _search_graph(ind, n):
    """CSR ``(ptr, adj)`` of the lists ``ind`` plus their reverse edges, rows ascending.

    Built in place in one array of two entries per edge: the former ``np.unique`` over
    ``row * n + col`` keys took 137 s and 2.2 GB for 2.3 M rows with 15 neighbours."""
    ptr = nnd.edge_counts(ind, n)
    adj = np.empty(ptr[-1], dtype=_index_dtype(n))
    ptr = nnd.fill_edges(ind, ptr, adj)
    return ptr, adj[:ptr[-1]].copy()


def _index_dtype(n):
    """Row numbers within a block: int32 halves an index's neighbour arrays."""
    return np.int32 if n < 2**31 else np.int64


def _leaf_order(A, n, code, leaf_size, seed):
    """A random-projection tree's leaf order of the rows, and that tree renumbered for the rows
    taken in that order: ``(order, tree)``."""
    left, right, pa, pb, start, stop, order = nnd.rp_tree(A, n, code, leaf_size, seed)
    new = np.empty(n, dtype=np.int64)
    new[order] = np.arange(n)
    pa = np.where(pa >= 0, new[pa], -1)
    pb = np.where(pb >= 0, new[pb], -1)
    return order, (left, right, pa, pb, start, stop, np.arange(n, dtype=np.int64))


def _distinct_rows(i, X, keep, metric):
    """The block's distinct rows (``keep``; all when None), prepared."""
    A = prepare_rows(X, metric)
    return A if keep is None else _take_prepared(A, keep)


def _build_index(A, metric, K, n_trees, leaf_size, max_candidates, n_iters, seed):
    """The :class:`BlockIndex` of prepared rows ``A`` (:func:`_distinct_rows`)."""
    n = _n_prepared(A)
    code = _METRIC_CODE[metric]
    K = max(0, min(K, n - 1))
    rng = np.random.RandomState(seed)
    # Rows in a tree's leaf order: rows near each other in space sit near each other in
    # memory, so NN-descent's and the searches' reads of candidate rows (their cost, more than
    # the arithmetic) mostly hit the cache. KDD99's distinct rows in two blocks: build and
    # cross-block search 13.9 -> 8.3 s CPU at the same recall.
    order, tree = _leaf_order(A, n, code, leaf_size, int(rng.randint(2**31 - 1)))
    A = _take_prepared(A, order)
    if n <= max(4 * K, 256):
        # A small block: exact lists, and one leaf holding every row (its search is exact).
        ind, dst = nnd.brute_force(A, n, K, code)
        tree = nnd.rp_tree(A, n, code, n, int(rng.randint(2**31 - 1)))
        n_iter = 0
    else:
        ind = np.full((n, K), -1, dtype=np.int64)
        dst = np.full((n, K), np.inf)
        flg = np.zeros((n, K), dtype=np.uint8)
        for t in range(n_trees):
            tr = tree if t == 0 else nnd.rp_tree(A, n, code, leaf_size,
                                                 int(rng.randint(2**31 - 1)))
            nnd.init_from_leaves(A, ind, dst, flg, tr[4], tr[5], tr[6], tr[0], code)
        nnd.init_random(A, ind, dst, flg, code, int(rng.randint(2**31 - 1)))
        n_iter = nnd.nn_descent(A, ind, dst, flg, code, max_candidates, n_iters, 0.001,
                                int(rng.randint(2**31 - 1)))
        nnd.sort_heaps(ind, dst)
    ptr, adj = _search_graph(nnd.diversify(A, ind, dst, code), n)
    return BlockIndex(rows=A, order=order, adj_ptr=ptr, adj_ind=adj, tree=tree, metric=metric,
                      ind=ind.astype(_index_dtype(n)), dst=dst, n_iter=int(n_iter))


def _global_rows(index, ind, dst, offset):
    """Index rows ``ind`` as global row numbers (-1 where missing), distances as the metric's."""
    missing = ind < 0
    return (np.where(missing, -1, index.order[np.where(missing, 0, ind)] + offset),
            np.where(missing, np.inf, _true_distance(dst, index.metric)).astype(np.float32))


def _own_neighbors(index, k, offset):
    """The NN-descent lists of the index rows (in index row order)."""
    return _global_rows(index, index.ind[:, :k], index.dst[:, :k], offset)


def _query_neighbors(index, k):
    """The first ``k`` of each row's NN-descent list, as the block's distinct rows in their own
    order (the numbering of the rows the other indexes search)."""
    ind = index.ind[:, :k]
    out = np.full(ind.shape, -1, dtype=np.int64)
    out[index.order] = np.where(ind >= 0, index.order[np.maximum(ind, 0)], -1)
    return out


def _search_index(index, Q, k, epsilon, offset, seed, budget=0, qnbr=None, cap=0):
    """The ``k`` nearest rows of ``index`` (global numbers from ``offset``) to prepared ``Q``;
    ``qnbr`` (:func:`_query_neighbors` of the queries' own index) seeds a second pass; a
    query still descending (off a plateau) may go on past ``budget`` up to ``cap``."""
    slack = (1.0 + epsilon) ** 2 if index.metric == "euclidean" else 1.0 + epsilon
    left, right, pa, pb, start, stop, perm = index.tree
    k = min(k, index.n)
    nq = _n_prepared(Q)
    if qnbr is None:
        qnbr = np.empty((nq, 0), dtype=np.int64)
    ind, dst = nnd.search(index.rows, index.n, index.adj_ptr, index.adj_ind, left, right, pa,
                          pb, start, stop, perm, Q, nq, qnbr, k, slack,
                          _METRIC_CODE[index.metric], seed, int(budget), int(cap), PLATEAU,
                          np.zeros(0, np.int64))
    return _global_rows(index, ind, dst, offset)


def merge_candidates(k, *cands):
    """Keep the ``k`` nearest of several ``(indices, distances)`` candidate lists per row.

    Ties in distance go to the lower row number, so the result does not depend on block order.
    Rows with fewer than ``k`` candidates are padded with index -1 at distance inf.
    """
    ind = np.hstack([np.asarray(c[0], dtype=np.int64) for c in cands])
    dist = np.hstack([np.asarray(c[1], dtype=np.float64) for c in cands])
    if ind.shape[1] < k:
        pad = k - ind.shape[1]
        ind = np.hstack([ind, np.full((ind.shape[0], pad), -1, np.int64)])
        dist = np.hstack([dist, np.full((dist.shape[0], pad), np.inf)])
    # Padding (-1) sorts after every real row at equal (infinite) distance.
    key_i = np.where(ind < 0, np.iinfo(np.int64).max, ind)
    order = np.lexsort((key_i, dist), axis=-1)[:, :k]
    return (np.take_along_axis(ind, order, axis=1),
            np.take_along_axis(dist, order, axis=1).astype(np.float32))


def _merge_block(index, k, own, *cands):
    # own lists the index rows (its leaf order), cands the block's distinct rows in order
    own_i, own_d = np.empty_like(own[0]), np.empty_like(own[1])
    own_i[index.order], own_d[index.order] = own
    return merge_candidates(k, (own_i, own_d), *cands)


def _find_duplicates(hashes, sizes):
    """Group rows with equal hashes. Returns ``(first, group, g_start, g_size, members)``:
    ``first[r]`` whether row r is its group's lowest row, ``group[r]`` its group number (groups
    numbered in order of their lowest row), and the members of each group in row order."""
    n = hashes.shape[0]
    rows = np.arange(n, dtype=np.int64)
    order = np.lexsort((rows, hashes[:, 1], hashes[:, 0]))
    h = hashes[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (h[1:] != h[:-1]).any(axis=1)
    run = np.cumsum(new) - 1                      # group number in hash order
    lowest = order[new]                           # each group's lowest row (members row-sorted)
    rank = np.empty(lowest.size, dtype=np.int64)  # renumber groups by their lowest row
    rank[np.argsort(lowest, kind="stable")] = np.arange(lowest.size)
    group = np.empty(n, dtype=np.int64)
    group[order] = rank[run]
    first = np.zeros(n, dtype=bool)
    first[lowest] = True
    g_size = np.bincount(group, minlength=lowest.size)
    members = np.argsort(group, kind="stable")
    g_start = np.concatenate([[0], np.cumsum(g_size)[:-1]])
    return first, group, g_start, g_size, members


def _concat_prepared(*parts):
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    shifts = np.cumsum([0] + [p[0][-1] for p in parts[:-1]])
    return (np.concatenate([parts[0][0][:1]] + [p[0][1:] + o for p, o in zip(parts, shifts)]),
            np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts]))


def _index_inputs(data, keep, u_off, i_off, metric):
    """Per index, a future of its prepared distinct rows, ``i_off[c]..i_off[c + 1]`` in group
    order, cut from the blocks holding them and joined on the index's worker."""
    client, owners = data.client, data.owners()
    out = []
    for c in range(data.n_blocks):
        pieces = []
        for b in range(data.n_blocks):
            lo, hi = max(u_off[b], i_off[c]), min(u_off[b + 1], i_off[c + 1])
            if lo >= hi:
                continue
            # scattered rather than embedded: at kdd99-scale a list of rows is ~18 MB, which
            # would travel inside the task graph (and warn about it)
            [rows] = _scatter_parts(client, [owners[b]], [keep[b][lo - u_off[b]:hi - u_off[b]]])
            pieces.append(client.submit(_distinct_rows, b, data.blocks[b], rows, metric,
                                        workers=[owners[b]], allow_other_workers=True,
                                        pure=False))
        out.append(None if not pieces else pieces[0] if len(pieces) == 1 else client.submit(
            _concat_prepared, *pieces, workers=[owners[c]], allow_other_workers=True,
            pure=False))
    return out


def _scatter_parts(client, owners, parts):
    return [client.scatter(p, workers=[owners[b]] if owners[b] else None, hash=False)
            for b, p in enumerate(parts)]


def build_knn(data: RowBlocks, n_neighbors: int = 10, *, metric: str = "euclidean",
              index_neighbors: int | None = None, search_epsilon: float = 0.1,
              n_trees: int | None = None, max_candidates: int | None = None,
              n_iters: int = 10, search_budget: int | None = None,
              search_budget_max: int | None = None, exact_below: int = 5000,
              random_state=None) -> Neighbors:
    """Approximate ``n_neighbors`` nearest neighbours of every row, excluding the row itself.

    Parameters
    ----------
    data : RowBlocks
        Dense or CSR row blocks on the workers.
    n_neighbors : int
        k, the neighbours per row.
    metric : {"euclidean", "cosine"}
        Cosine distance is ``1 - cos``.
    index_neighbors : int, optional
        Length of each block's NN-descent lists; default ``max(15, k + 5)``. The recall knob
        for neighbours inside a block (and the degree of the search graph).
    search_epsilon : float
        How far past the current k-th distance (a fraction of it) the search of other blocks
        keeps expanding rows. The recall knob for neighbours across blocks.
    n_trees : int, optional
        Random-projection trees whose leaves start NN-descent; default grows slowly with the
        block size (5 to 9).
    max_candidates : int, optional
        NN-descent candidates per row and round; default ``index_neighbors``.
    n_iters : int
        At most this many NN-descent rounds (it stops earlier when lists stop changing).
    search_budget : int, optional
        At most this many distance evaluations per row and other block in the cross-block
        search (a sixth for its first pass, the rest for the second); default ``30 k``; 0 for
        no limit. Bounds the search's time on data whose distances crowd into plateaus
        (recall then rests more on ``search_epsilon``).
    search_budget_max : int, optional
        A query that has spent ``search_budget`` goes on, up to this many distance
        evaluations, while it is not on such a plateau: while fewer than half the rows it
        evaluated fell within ``search_epsilon`` of its k-th distance (dense data of high
        intrinsic dimension, where the fixed budget cut recall: g50c 10 k, 2 blocks, 0.76
        recall@10 with ``30 k`` alone). Default ``200 k``; at most ``search_budget`` to turn the
        extension off.
    exact_below : int
        With fewer rows than this in all, search exactly (brute force, block by block) and build
        no index. 0 forces the indexes.
    random_state : int, RandomState or None
        Seeds the trees, NN-descent and the searches (block ``b`` gets its own seed).

    Returns
    -------
    Neighbors
    """
    check_knn_params(data.n_rows, n_neighbors, metric)
    if search_epsilon < 0:
        raise ValueError(f"search_epsilon must be >= 0, got {search_epsilon}")
    k = int(n_neighbors)
    if data.n_rows < exact_below:
        return _build_exact(data, k, metric)
    budget = 30 * k if search_budget is None else int(search_budget)
    cap = 200 * k if search_budget_max is None else int(search_budget_max)
    rng = random_state if isinstance(random_state, np.random.RandomState) \
        else np.random.RandomState(random_state)
    seeds = rng.randint(0, 2**31 - 1, size=(data.n_blocks, 2))
    client, owners = data.client, data.owners()
    B = data.n_blocks

    t0 = time.perf_counter()
    # 1. exact duplicates
    hashes = np.vstack(data.map(_row_hashes, metric))
    first, group, g_start, g_size, members = _find_duplicates(hashes, data.sizes)
    dups = not first.all()
    keep = [np.flatnonzero(first[s]) for s in data.block_slices()] if dups else [None] * B
    u_sizes = np.array([len(kp) for kp in keep]) if dups else data.sizes.copy()
    u_off = np.concatenate([[0], np.cumsum(u_sizes)])
    n_u = int(u_off[-1])
    k_u = min(k, n_u - 1)

    logger.info("kNN: %d distinct rows of %d (%.1f s)", n_u, data.n_rows,
                time.perf_counter() - t0)
    # 2. an index per worker of distinct rows
    K = int(index_neighbors or max(15, k + 5))
    m_cand = int(max_candidates or K)
    # Index b holds the distinct rows (groups) i_off[b]..i_off[b + 1]: a block's own when no
    # row repeats, else an equal share of all, so blocks that repeat rows unevenly still give
    # their workers equal work (KDD99's two blocks: 89 k and 56 k distinct rows -> 73 k each).
    i_off = u_off if not dups else np.round(np.linspace(0, n_u, B + 1)).astype(np.int64)
    i_sizes = np.diff(i_off)
    # The prepared distinct rows are the index's input and the other indexes' queries: they
    # leave for the other workers before the index is built, so a worker done with its own
    # index searches the others' rows at once instead of waiting for their indexes.
    queries = _index_inputs(data, keep, u_off, i_off, metric) if dups else [
        client.submit(_distinct_rows, b, data.blocks[b], None, metric, workers=[owners[b]],
                      allow_other_workers=True, pure=False) for b in range(B)]
    indexes = []
    for b in range(B):
        if i_sizes[b] == 0:
            indexes.append(None)
            continue
        trees = int(n_trees or min(9, 4 + int(round(np.log10(max(i_sizes[b], 10))))))
        leaf = max(K, 20)
        indexes.append(client.submit(
            _build_index, queries[b], metric, K, trees, leaf, m_cand, int(n_iters),
            int(seeds[b, 0]), workers=[owners[b]], allow_other_workers=True, pure=False))

    # 3. neighbours across indexes: rows of index b searched in every other index
    u_parts = []
    if k_u > 0:
        for b in range(B):
            if indexes[b] is None:
                u_parts.append(None)
                continue
            own = client.submit(_own_neighbors, indexes[b], k_u, int(i_off[b]),
                                workers=[owners[b]], allow_other_workers=True, pure=False)
            qnbr = client.submit(_query_neighbors, indexes[b], k_u, workers=[owners[b]],
                                 allow_other_workers=True, pure=False)
            cands = [client.submit(_search_index, indexes[c], queries[b], k_u, search_epsilon,
                                   int(i_off[c]), int(seeds[c, 1]) + b, budget, qnbr, cap,
                                   workers=[owners[c]], allow_other_workers=True, pure=False)
                     for c in range(B) if c != b and indexes[c] is not None]
            u_parts.append(client.submit(_merge_block, indexes[b], k_u, own, *cands,
                                         workers=[owners[b]],
                                         allow_other_workers=True, pure=False))
    else:
        u_parts = [None] * B
    live = [f for f in u_parts + indexes if f is not None]
    data.wait(indexes)
    logger.info("kNN: block indexes built (%.1f s)", time.perf_counter() - t0)
    data.wait(live)
    logger.info("kNN: searched across blocks (%.1f s)", time.perf_counter() - t0)
    if not dups:
        return Neighbors(data, u_parts, indexes, k, metric, None, u_off)

    # 4. duplicates get their group's members and their group's neighbours' members
    got = client.gather([f for f in u_parts if f is not None])
    u_ind = np.vstack([g[0] for g in got]) if got else np.empty((n_u, 0), np.int64)
    u_dst = np.vstack([g[1] for g in got]).astype(np.float64) if got else np.empty((n_u, 0))
    parts = []
    for b, s in enumerate(data.block_slices()):
        rows = np.arange(s.start, s.stop, dtype=np.int64)
        g = group[rows]
        ind, dst = nnd.expand_duplicates(rows, g, g, g_start, g_size, members, u_ind, u_dst, k)
        parts.append((ind, dst.astype(np.float32)))
    logger.info("kNN: duplicates expanded (%.1f s)", time.perf_counter() - t0)
    return Neighbors(data, _scatter_parts(client, owners, parts), indexes, k, metric,
                     (group, g_start, g_size, members), i_off)


def _exact_own(i, X, offset, k, metric, blocks):
    rows = np.arange(X.shape[0], dtype=np.int64) + offset
    return merge_candidates(k, *[exact_block(Xc, X, k, metric, off, exclude=rows)
                                 for Xc, off in blocks])


def _build_exact(data: RowBlocks, k: int, metric: str) -> Neighbors:
    # Small data only: every block compares its rows with all blocks, gathered to its worker.
    blocks = [(b, int(o)) for b, o in zip(data.blocks, data.offsets[:-1])]
    parts = data.submit(_exact_own, k, metric, blocks,
                        per_block=[(int(o),) for o in data.offsets[:-1]])
    data.wait(parts)
    return Neighbors(data, parts, None, k, metric)


def _query_block(i, X, offset, Q, k, metric):
    return exact_block(X, Q, k, metric, offset)


@dataclass
class DriverRows:
    """The rows a :class:`Neighbors` was built on, gathered to the driver block by block: what
    :func:`query_knn` searches, exactly, for a model that outlives its workers when no index
    was built (below ``build_knn``'s ``exact_below``) or kept (a model directory written
    before directories kept one): futures do not pickle, and the indexes stay with the
    workers that built them (:class:`DriverIndex` gathers them).

    Attributes
    ----------
    blocks : list of ndarray or CSR matrix
        The row blocks as the workers held them.
    offsets : ndarray
        Global number of each block's first row, and the row count last.
    n_neighbors : int
    metric : str
    """

    blocks: list
    offsets: np.ndarray
    n_neighbors: int
    metric: str

    @classmethod
    def gather(cls, neigh: Neighbors) -> "DriverRows":
        data = neigh.data
        return cls(data.client.gather(data.blocks), np.asarray(data.offsets).copy(),
                   neigh.n_neighbors, neigh.metric)


def _search_arrays(index: BlockIndex) -> tuple:
    # all a search reads of an index but its rows, which the driver holds already
    return index.order, index.adj_ptr, index.adj_ind, index.tree


def _take_rows(rows: DriverRows, wanted: np.ndarray):
    """The rows numbered ``wanted`` (global row numbers) of ``rows``' blocks, in that order."""
    block = np.searchsorted(rows.offsets, wanted, side="right") - 1
    by_block = np.argsort(block, kind="stable")
    wanted, block = wanted[by_block], block[by_block]
    parts = [rows.blocks[b][wanted[block == b] - rows.offsets[b]] for b in np.unique(block)]
    stacked = (sp.vstack(parts, format="csr") if sp.issparse(rows.blocks[0])
               else np.vstack(parts))
    back = np.empty_like(by_block)
    back[by_block] = np.arange(by_block.size)
    return stacked[back]


@dataclass
class DriverIndex:
    """The per-block indexes of a :class:`Neighbors` on the driver, with the rows they were
    built on: what :func:`query_knn` searches for a model that outlives its workers (a stored
    or pickled one), by the workers' own search (the same arrays, seeds and merge, so the same
    answer) at a fraction of an exact search's cost.

    Attributes
    ----------
    rows : DriverRows
        The training rows as the workers held them; each index's prepared rows are made from
        them (:meth:`from_arrays`), so a model directory keeps the rows once.
    indexes : list of SearchIndex or None
        As :attr:`Neighbors.indexes`.
    distinct_offsets : ndarray
        As :attr:`Neighbors.distinct_offsets`.
    groups : tuple or None
        ``(g_start, g_size, members)`` of :attr:`Neighbors.groups`: each group of identical
        rows' members, in row order.
    """

    rows: DriverRows
    indexes: list
    distinct_offsets: np.ndarray
    groups: tuple | None

    @property
    def n_neighbors(self) -> int:
        return self.rows.n_neighbors

    @property
    def metric(self) -> str:
        return self.rows.metric

    @classmethod
    def from_arrays(cls, rows: DriverRows, distinct_offsets, groups, parts) -> "DriverIndex":
        """The index whose ``parts`` are, per block index, ``(order, adj_ptr, adj_ind, tree)``
        (None for an index without rows); the prepared rows are taken from ``rows``."""
        # distinct row g is its group's lowest row (the one the index holds)
        lowest = None if groups is None else groups[2][groups[0]]
        indexes = []
        for c, part in enumerate(parts):
            if part is None:
                indexes.append(None)
                continue
            order, adj_ptr, adj_ind, tree = part
            distinct = distinct_offsets[c] + order
            A = prepare_rows(_take_rows(rows, distinct if lowest is None else lowest[distinct]),
                             rows.metric)
            indexes.append(SearchIndex(A, order, adj_ptr, adj_ind, tree, rows.metric))
        return cls(rows, indexes, np.asarray(distinct_offsets), groups)

    @classmethod
    def gather(cls, neigh: Neighbors) -> "DriverIndex":
        client = neigh.data.client
        futs = {c: client.submit(_search_arrays, index, pure=False)
                for c, index in enumerate(neigh.indexes) if index is not None}
        got = dict(zip(futs, client.gather(list(futs.values()))))
        groups = None if neigh.groups is None else neigh.groups[1:]
        return cls.from_arrays(DriverRows.gather(neigh), neigh.distinct_offsets, groups,
                               [got.get(c) for c in range(len(neigh.indexes))])


def _searches_exactly(neigh: Neighbors) -> bool:
    """Whether new rows are searched exactly rather than through the indexes: where there are
    none, and on sparse rows, where text's many nearly equal cosine distances keep a query on
    no plateau, so an index search visits most rows at several times an exact scan's cost."""
    return neigh.indexes is None or neigh.data.sparse


def driver_search(neigh: Neighbors) -> DriverRows | DriverIndex:
    """What a process without ``neigh``'s workers searches: its indexes with their rows,
    gathered to the driver, or the rows alone where it searches exactly
    (:func:`_searches_exactly`)."""
    return DriverRows.gather(neigh) if _searches_exactly(neigh) else DriverIndex.gather(neigh)


def _with_duplicates(groups, ind, dst, k):
    """Query lists of distinct rows ``(ind, dst)`` with every member of the groups found
    (``groups`` as :attr:`DriverIndex.groups`; all as near, ties by row number)."""
    if groups is None:
        return ind, dst
    g_start, g_size, members = groups
    m, G = ind.shape[0], g_start.size
    ind, dst = nnd.expand_duplicates(
        np.full(m, -1, np.int64), np.full(m, G, np.int64), np.arange(m, dtype=np.int64),
        np.append(g_start, 0), np.append(g_size, 0), members, ind, dst.astype(np.float64), k)
    return ind, dst.astype(np.float32)


def query_knn(neigh: Neighbors | DriverRows | DriverIndex, Q, n_neighbors: int | None = None,
              search_epsilon: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Nearest training rows of new points ``Q`` (NumPy or CSR, in this process).

    Uses the per-block indexes of dense rows when they are there: on their workers, or in this
    process for :class:`DriverIndex`. Otherwise (sparse rows, or no indexes) an exact search
    block by block: on the workers (after :func:`dask_ssl.graph.io.load_graph`), or in this
    process for :class:`DriverRows`. Either
    way the search and merge are the workers', so the answer is the same.
    Returns ``(indices, distances)``, ``m x k``.
    """
    k = int(n_neighbors or neigh.n_neighbors)
    Q = sp.csr_matrix(Q, dtype=np.float32) if sp.issparse(Q) else np.ascontiguousarray(Q, np.float32)
    n_features = (neigh.blocks[0].shape[1] if isinstance(neigh, DriverRows)
                  else neigh.rows.blocks[0].shape[1] if isinstance(neigh, DriverIndex)
                  else neigh.data.n_features)
    if Q.shape[1] != n_features:
        raise ValueError(f"X has {Q.shape[1]} features but the graph was built on "
                         f"{n_features}")
    if isinstance(neigh, DriverRows):
        return merge_candidates(k, *[_query_block(0, X, int(o), Q, k, neigh.metric)
                                     for X, o in zip(neigh.blocks, neigh.offsets[:-1])])
    if isinstance(neigh, DriverIndex):
        # the search of the workers' indexes below, each index with its seed there
        q, u_off = prepare_rows(Q, neigh.metric), neigh.distinct_offsets
        cands = [_search_index(index, q, k, search_epsilon, int(u_off[c]), c)
                 for c, index in enumerate(neigh.indexes) if index is not None]
        return _with_duplicates(neigh.groups, *merge_candidates(k, *cands), k)
    data = neigh.data
    client, owners = data.client, data.owners()
    if _searches_exactly(neigh):
        [q] = client.scatter([Q], broadcast=True, hash=False)
        futs = data.submit(_query_block, q, k, neigh.metric,
                           per_block=[(int(o),) for o in data.offsets[:-1]])
        return merge_candidates(k, *client.gather(futs))
    [q] = client.scatter([prepare_rows(Q, neigh.metric)], broadcast=True, hash=False)
    u_off = neigh.distinct_offsets
    futs = [client.submit(_search_index, index, q, k, search_epsilon, int(u_off[c]), c,
                          workers=[owners[c]], allow_other_workers=True, pure=False)
            for c, index in enumerate(neigh.indexes) if index is not None]
    groups = None if neigh.groups is None else neigh.groups[1:]
    return _with_duplicates(groups, *merge_candidates(k, *client.gather(futs)), k)
