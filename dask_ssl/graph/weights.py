"""Edge weights on kNN lists, and the symmetric weight matrix ``W`` as row blocks on the workers.

A kNN relation is directed; ``W`` must be symmetric. Block ``b`` holds rows ``b`` of ``W``, so the
reversed edges ``(j, i)`` of its lists belong to the blocks holding ``j``: each block splits its
reversed edges by destination, each piece travels once to its destination's worker, and each
block combines its own rows with what it received (``max``, ``mean`` or ``mutual``).

Heat weights ``exp(-d^2 / 4t)`` take one width ``t`` for the whole graph, by default
``4t = mean(d^2)`` over the kNN edges. The earlier default ``4t = (mean d)^2`` is smaller when
edge lengths spread (always, by Jensen): on a 50 k-row KDD99 sample its weights reached 5e-324,
55 rows had degree 0 and the graph fell into 267 components, against a smallest weight 2e-146,
no zero degree and 76 components with ``mean(d^2)``; SciPy CG on graph transduction's system
(mu = 0) then needed 2205 iterations instead of more than 3000. ``t="local"`` gives each row its
own width instead (local scaling, Zelnik-Manor & Perona 2004): ``w_ij = exp(-d_ij^2 / (s_i
s_j))`` with ``s_i`` the distance to row ``i``'s k-th listed neighbour (1633 iterations there).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from distributed import Future

from ..linalg.rowblocks import RowBlocks
from .knn import Neighbors, build_knn

WEIGHTS = ("binary", "heat", "cosine")
#: ``t`` for per-row heat widths (local scaling).
LOCAL = "local"
SYMMETRIZE = ("max", "mean", "mutual")


@dataclass
class Graph:
    """A symmetric weighted kNN graph with zero diagonal, its rows held per block on the workers.

    Attributes
    ----------
    neighbors : Neighbors or None
        The kNN lists the graph came from (and the indexes for new points); None for a graph
        given as a matrix (:meth:`from_scipy`).
    W : RowBlocks
        ``n_b x n`` CSR row blocks of ``W`` (global column numbers), partitioned like the data.
    weights : str
    t : float, "local" or None
        Heat-kernel width used (``exp(-d^2 / 4t)``), or ``"local"`` for per-row widths
        (:func:`local_widths`).
    symmetrize : str
    widths : ndarray or None
        Per-row widths of ``t="local"`` once known (:meth:`local_widths`).
    """

    neighbors: Neighbors | None
    W: RowBlocks
    weights: str
    t: float | None
    symmetrize: str
    widths: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_rows(self) -> int:
        return self.W.n_rows

    @classmethod
    def from_scipy(cls, W, *, client, n_blocks: int | None = None) -> "Graph":
        """A graph from a symmetric sparse weight matrix with zero diagonal, split into blocks."""
        W = sp.csr_matrix(W, dtype=np.float64)
        if W.shape[0] != W.shape[1]:
            raise ValueError(f"W must be square, got shape {W.shape}")
        if abs(W - W.T).max() > 1e-12 * max(abs(W).max(), 1.0) or W.diagonal().any():
            raise ValueError("W must be symmetric with a zero diagonal")
        return cls(None, RowBlocks.from_array(W, client=client, n_blocks=n_blocks),
                   "given", None, "given")

    def to_scipy(self) -> sp.csr_matrix:
        """All of ``W`` on the driver (small graphs, tests)."""
        return sp.vstack(self.W.client.gather(self.W.blocks), format="csr")

    def local_widths(self) -> np.ndarray:
        """Per-row widths ``s`` of ``t="local"`` (from the kNN lists; computed once)."""
        if self.widths is None:
            if self.neighbors is None:
                raise ValueError("local widths need the kNN lists; this graph was given as a "
                                 "matrix")
            self.widths = local_widths(self.neighbors)
        return self.widths


def check_graph_params(weights: str, symmetrize: str, t, metric: str) -> None:
    """Raise ``ValueError`` for weight options that do not fit together."""
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS}, got {weights!r}")
    if symmetrize not in SYMMETRIZE:
        raise ValueError(f"symmetrize must be one of {SYMMETRIZE}, got {symmetrize!r}")
    if weights == "cosine" and metric != "cosine":
        raise ValueError("weights='cosine' needs metric='cosine' (the weight is 1 - distance)")
    if isinstance(t, str):
        if t != LOCAL:
            raise ValueError(f"t must be a positive number, None or {LOCAL!r}, got {t!r}")
    elif t is not None and not (isinstance(t, (int, float, np.integer, np.floating)) and t > 0):
        raise ValueError(f"the heat-kernel width t must be positive, got {t!r}")


def edge_weights(dist: np.ndarray, weights: str, t, widths=None) -> np.ndarray:
    """Weights of edges of length ``dist``: 1, ``exp(-d^2/4t)``, or cosine similarity ``1 - d``;
    with ``t="local"``, ``exp(-d^2 / widths)``, ``widths`` the products ``s_i s_j`` of the two
    ends' widths (same shape as ``dist``)."""
    dist = np.asarray(dist, dtype=np.float64)
    if weights == "binary":
        return np.ones_like(dist)
    if weights == "heat":
        return np.exp(-dist * dist / (widths if t == LOCAL else 4.0 * t))
    return np.clip(1.0 - dist, 0.0, None)


def _square_sums(i, X, part):
    d = part[1][np.isfinite(part[1])].astype(np.float64)
    return float(np.dot(d, d)), d.size


def _heat_width(*sums) -> float:
    """``t`` with ``4t = mean(d^2)`` over the kNN edges, from each block's ``(sum d^2, count)``
    in block order: an edge of root-mean-square length weighs ``1/e`` (module docstring: why
    not ``(mean d)^2``)."""
    total, count = map(sum, zip(*sums))
    mean_square = total / max(count, 1)
    # All-duplicate data has no length scale; any positive t gives every edge weight 1.
    return mean_square / 4.0 if mean_square > 0 else 1.0


def _kth_distance(i, X, part):
    dist = np.where(np.isfinite(part[1]), part[1], -np.inf)
    return dist.max(axis=1, initial=-np.inf).astype(np.float64)


def local_widths(neigh: Neighbors) -> np.ndarray:
    """Per-row widths of local scaling: the distance to each row's k-th (farthest listed)
    neighbour, on the driver.

    A row with at least k exact duplicates (KDD99 has many) or no neighbour would get width 0;
    it gets the mean of the positive widths instead, so its edges of length 0 still weigh 1 and
    its longer ones a finite amount. All-duplicate data gets widths 1.
    """
    s = np.concatenate(neigh.data.map(_kth_distance, per_block=[(p,) for p in neigh.parts]))
    positive = s > 0
    return np.where(positive, s, s[positive].mean() if positive.any() else 1.0)


def query_widths(widths: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """Widths of new rows from their query distances ``dist`` (m x k), by the rule of
    :func:`local_widths` with the training rows' positive mean as the fallback."""
    dist = np.where(np.isfinite(dist), dist, -np.inf)
    s = dist.max(axis=1, initial=-np.inf).astype(np.float64)
    return np.where(s > 0, s, widths.mean())


def _directed(i, X, part, offset, offsets, n, weights, t, widths):
    ind, dist = part
    valid = ind >= 0
    rows = np.repeat(np.arange(ind.shape[0], dtype=np.int64), ind.shape[1])[valid.ravel()]
    cols = ind[valid]
    products = widths[rows + offset] * widths[cols] if t == LOCAL else None
    w = edge_weights(dist[valid], weights, t, products)
    own = sp.csr_matrix((w, (rows, cols)), shape=(ind.shape[0], n))
    dest = np.searchsorted(offsets, cols, side="right") - 1
    pieces = [(cols[dest == c] - offsets[c], rows[dest == c] + offset, w[dest == c])
              for c in range(len(offsets) - 1)]
    return own, pieces


def _piece(directed, c):
    return directed[1][c]


def _symmetric(i, X, directed, n, mode, *pieces):
    own = directed[0]
    r, c, w = (np.concatenate(a) for a in zip(*pieces))
    rev = sp.csr_matrix((w, (r, c)), shape=own.shape)
    if mode == "max":
        W = own.maximum(rev)
    elif mode == "mean":
        W = (own + rev) * 0.5
    else:
        W = own.minimum(rev)
    W = sp.csr_matrix(W)
    W.eliminate_zeros()
    W.sort_indices()
    return W


def build_graph(neigh: Neighbors, *, weights: str = "heat", t: float | None = None,
                symmetrize: str = "max") -> Graph:
    """The symmetric weighted graph of kNN lists.

    Parameters
    ----------
    neigh : Neighbors
    weights : {"heat", "binary", "cosine"}
        Edge weight: ``exp(-d^2 / 4t)`` (the seeds' heat kernel), 1, or ``1 - d`` for cosine
        distance ``d``.
    t : float or "local", optional
        Heat-kernel width; default ``mean(d^2) / 4`` over the edges (:func:`_heat_width`,
        reduced on the workers); ``"local"``: per-row widths, ``exp(-d_ij^2 / (s_i s_j))``
        (:func:`local_widths`).
    symmetrize : {"max", "mean", "mutual"}
        ``max(W, W^T)`` (an edge if either end lists the other), ``(W + W^T)/2``, or only
        edges both ends list.
    """
    k = neigh.n_neighbors
    return build_graphs(neigh, [k], weights=weights, t=t, symmetrize=symmetrize)[k]


def build_graphs(neigh: Neighbors, ks, *, weights: str = "heat", t: float | None = None,
                 symmetrize: str = "max") -> dict:
    """:func:`build_graph` on the ``k`` nearest of ``neigh``'s lists for each ``k`` of ``ks``
    (``{k: Graph}``), all in one wait: the default heat width is reduced by a task that the
    weights' tasks wait on, so no graph costs a round trip of its own (a scheduler round trip
    is several batched-stream intervals, most of a small graph's time)."""
    check_graph_params(weights, symmetrize, t, neigh.metric)
    data = neigh.data
    client = data.client
    made = {}
    for k in ks:
        lists = neigh.nearest(k)
        width, widths = t, None
        if weights == "heat" and t is None:
            sums = data.submit(_square_sums, per_block=[(p,) for p in lists.parts])
            width = client.submit(_heat_width, *sums, pure=False)
        elif weights == "heat" and t == LOCAL:
            widths = local_widths(lists)
        made[k] = (lists, width, widths, _weight_blocks(lists, weights, width, widths,
                                                        symmetrize))
    futures = [width for _, width, _, _ in made.values() if isinstance(width, Future)]
    data.wait(futures + [b for *_, blocks in made.values() for b in blocks])
    got = iter(data.gather(futures))
    return {k: Graph(lists, RowBlocks(client, blocks, data.sizes.copy(), data.n_rows, True),
                     weights, next(got) if isinstance(width, Future) else width, symmetrize,
                     widths)
            for k, (lists, width, widths, blocks) in made.items()}


def _weight_blocks(neigh: Neighbors, weights: str, t, widths, symmetrize: str) -> list:
    """The tasks of ``W``'s row blocks from the lists ``neigh`` (``t`` a width or the future of
    one), on the blocks' workers; not waited on."""
    data = neigh.data
    client, owners, offsets, n = data.client, data.owners(), data.offsets, data.n_rows
    # every block needs the widths of its edges' far ends: one copy per worker
    shared = client.scatter(widths, broadcast=True) if widths is not None else None
    B = data.n_blocks
    directed = data.submit(_directed, offsets, n, weights, t, shared,
                           per_block=[(neigh.parts[b], int(offsets[b])) for b in range(B)])
    # One small task per (source, destination) on the source's worker, so that each
    # destination fetches only the edges meant for it.
    pieces = [[client.submit(_piece, directed[src], dst, workers=[owners[src]],
                             allow_other_workers=True, pure=False) for src in range(B)]
              for dst in range(B)]
    return [client.submit(_symmetric, b, data.blocks[b], directed[b], n, symmetrize,
                          *pieces[b], workers=[owners[b]], allow_other_workers=True,
                          pure=False) for b in range(B)]


def knn_graph(data: RowBlocks, n_neighbors: int = 10, *, metric: str = "euclidean",
              weights: str = "heat", t: float | None = None, symmetrize: str = "max",
              random_state=None, **knn_options) -> Graph:
    """:func:`build_knn` then :func:`build_graph`; ``knn_options`` go to :func:`build_knn`."""
    check_graph_params(weights, symmetrize, t, metric)
    neigh = build_knn(data, n_neighbors, metric=metric, random_state=random_state, **knn_options)
    return build_graph(neigh, weights=weights, t=t, symmetrize=symmetrize)
