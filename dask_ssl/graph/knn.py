"""Approximate k nearest neighbours of every row of a :class:`RowBlocks`, built on the workers.

Each block gets its own pynndescent index, built on the worker that holds the block; the index
stays there as a future. Neighbours inside a block come from that index's NN-descent graph.
Neighbours in other blocks come from querying the other blocks' indexes: block ``b``'s rows
travel once to each worker holding another block's index (the index, much larger, never
moves), and the candidates from all blocks are merged by distance on ``b``'s worker. Blocks are
disjoint, so the merge is exact over the candidates; recall is that of pynndescent's own graph
and queries, which ``index_neighbors`` and ``search_epsilon`` trade against time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from distributed import wait

from ..linalg.rowblocks import RowBlocks
from .exact import exact_block

METRICS = ("euclidean", "cosine")


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
        The per-block pynndescent indexes (None after loading from disk).
    n_neighbors : int
    metric : str
    """

    data: RowBlocks
    parts: list
    indexes: list | None
    n_neighbors: int
    metric: str

    def gather(self) -> tuple[np.ndarray, np.ndarray]:
        """All neighbour lists on the driver, ``(indices, distances)``, each ``n x k``."""
        got = self.data.client.gather(self.parts)
        return np.vstack([g[0] for g in got]), np.vstack([g[1] for g in got])


def check_knn_params(n_rows: int, n_neighbors, metric: str) -> None:
    """Raise ``ValueError`` for a neighbour count or metric the search cannot serve."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    if not isinstance(n_neighbors, (int, np.integer)) or n_neighbors < 1:
        raise ValueError(f"n_neighbors must be a positive integer, got {n_neighbors!r}")
    if n_neighbors >= n_rows:
        raise ValueError(f"n_neighbors={n_neighbors} must be smaller than the number of rows "
                         f"({n_rows})")


def _build_index(i, X, index_neighbors, metric, seed, prepare):
    from pynndescent import NNDescent

    index = NNDescent(X, metric=metric, n_neighbors=index_neighbors, random_state=seed,
                      n_jobs=1, low_memory=True, verbose=False)
    if prepare:
        # Other blocks will query this index; build its search graph once, here, rather than
        # inside whichever query task happens to arrive first.
        index.prepare()
    return index


def _own_neighbors(i, X, index, offset, k):
    ind, dist = index.neighbor_graph
    # pynndescent lists each point first as its own neighbour; padding entries are -1.
    ind, dist = ind[:, 1:k + 1].astype(np.int64), dist[:, 1:k + 1].astype(np.float32)
    missing = ind < 0
    ind = np.where(missing, -1, ind + offset)
    return ind, np.where(missing, np.inf, dist).astype(np.float32)


def _query_index(index, Q, k, epsilon, offset):
    ind, dist = index.query(Q, k=k, epsilon=epsilon)
    ind = ind.astype(np.int64)
    missing = ind < 0
    return (np.where(missing, -1, ind + offset),
            np.where(missing, np.inf, dist).astype(np.float32))


def merge_candidates(k, *cands):
    """Keep the ``k`` nearest of several ``(indices, distances)`` candidate lists per row.

    Ties in distance go to the lower row number, so the result does not depend on block order.
    """
    ind = np.hstack([c[0] for c in cands])
    dist = np.hstack([c[1] for c in cands])
    order = np.lexsort((ind, dist), axis=-1)[:, :k]
    return (np.take_along_axis(ind, order, axis=1),
            np.take_along_axis(dist, order, axis=1).astype(np.float32))


def _merge_block(i, X, own, k, *cands):
    return merge_candidates(k, own, *cands)


def build_knn(data: RowBlocks, n_neighbors: int = 10, *, metric: str = "euclidean",
              index_neighbors: int | None = None, search_epsilon: float = 0.1,
              exact_below: int = 5000, random_state=None) -> Neighbors:
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
        Degree of each block's NN-descent graph (pynndescent ``n_neighbors``); default
        ``max(30, 2 k)``, capped by the block size. The recall knob for neighbours inside a block.
    search_epsilon : float
        pynndescent query ``epsilon`` for the search of other blocks' indexes. The recall knob for
        neighbours across blocks: 0.1 is pynndescent's default, 0.2-0.3 buys recall for time.
    exact_below : int
        With fewer rows than this in all, search exactly (brute force, block by block) and build
        no index: that is faster than an index (and its one-off JIT compilation, about a minute
        per worker process) on small data. 0 forces the indexes.
    random_state : int, RandomState or None
        Seeds each block's index (block ``b`` gets its own seed drawn from it).

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
    rng = np.random.RandomState(random_state) if not isinstance(random_state, np.random.RandomState) \
        else random_state
    seeds = rng.randint(0, 2**31 - 1, size=data.n_blocks)
    client, owners, offsets = data.client, data.owners(), data.offsets
    many = data.n_blocks > 1
    indexes = []
    for i, block in enumerate(data.blocks):
        degree = max(1, min(index_neighbors or max(30, 2 * k), int(data.sizes[i]) - 1))
        indexes.append(client.submit(_build_index, i, block, degree, metric, int(seeds[i]), many,
                                     workers=[owners[i]], allow_other_workers=True, pure=False))
    own = data.submit(_own_neighbors, k, per_block=[(indexes[i], int(offsets[i]))
                                                    for i in range(data.n_blocks)])
    cands = [[] for _ in range(data.n_blocks)]
    for c, index in enumerate(indexes):
        kc = min(k, int(data.sizes[c]))
        for b, block in enumerate(data.blocks):
            if b != c:
                cands[b].append(client.submit(
                    _query_index, index, block, kc, search_epsilon, int(offsets[c]),
                    workers=[owners[c]], allow_other_workers=True, pure=False))
    parts = data.submit(_merge_block, per_block=[(own[b], k, *cands[b])
                                                 for b in range(data.n_blocks)])
    with client.as_current():  # wait() alone needs a default client
        wait(parts)
    for f in parts:
        if f.status == "error":
            f.result()
    return Neighbors(data, parts, indexes, k, metric)


def _exact_own(i, X, offset, k, metric, blocks):
    rows = np.arange(X.shape[0], dtype=np.int64) + offset
    return merge_candidates(k, *[exact_block(Xc, X, k, metric, off, exclude=rows)
                                 for Xc, off in blocks])


def _build_exact(data: RowBlocks, k: int, metric: str) -> Neighbors:
    # Small data only: every block compares its rows with all blocks, gathered to its worker.
    blocks = [(b, int(o)) for b, o in zip(data.blocks, data.offsets[:-1])]
    parts = data.submit(_exact_own, k, metric, blocks,
                        per_block=[(int(o),) for o in data.offsets[:-1]])
    with data.client.as_current():  # wait() alone needs a default client
        wait(parts)
    return Neighbors(data, parts, None, k, metric)


def _query_block(i, X, offset, Q, k, metric):
    return exact_block(X, Q, k, metric, offset)


def query_knn(neigh: Neighbors, Q, n_neighbors: int | None = None,
              search_epsilon: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Nearest training rows of new points ``Q`` (NumPy or CSR, on the driver).

    Uses the per-block indexes when they are there, otherwise an exact search block by block
    (after :func:`dask_ssl.graph.io.load_graph`). Returns ``(indices, distances)``, ``m x k``.
    """
    data = neigh.data
    k = int(n_neighbors or neigh.n_neighbors)
    Q = sp.csr_matrix(Q, dtype=np.float32) if sp.issparse(Q) else np.ascontiguousarray(Q, np.float32)
    if Q.shape[1] != data.n_features:
        raise ValueError(f"X has {Q.shape[1]} features but the graph was built on "
                         f"{data.n_features}")
    client, owners = data.client, data.owners()
    [q] = client.scatter([Q], broadcast=True, hash=False)
    if neigh.indexes is None:
        futs = data.submit(_query_block, q, k, neigh.metric,
                           per_block=[(int(o),) for o in data.offsets[:-1]])
    else:
        futs = [client.submit(_query_index, index, q, min(k, int(data.sizes[c])), search_epsilon,
                              int(data.offsets[c]), workers=[owners[c]],
                              allow_other_workers=True, pure=False)
                for c, index in enumerate(neigh.indexes)]
    return merge_candidates(k, *client.gather(futs))
