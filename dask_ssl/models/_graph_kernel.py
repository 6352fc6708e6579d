"""The graph and kernel pieces of the small dense manifold-regularization variants (thesis 2.8):
graph hyperparameters as :class:`GraphTransduction` has them, the kNN graph built by the
distributed engine and gathered as a dense Laplacian on the driver (n up to a few thousand)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..cluster import get_client
from ..graph.knn import check_knn_params
from ..graph.weights import knn_graph
from ..linalg import RowBlocks
from ._graph_params import check_graph_hyperparameters

#: Constructor defaults of the graph hyperparameters, the same as GraphTransduction's.
GRAPH_DEFAULTS = dict(n_neighbors=10, metric="euclidean", weights="heat", t=None,
                      symmetrize="max", normalized=True, p=1, search_epsilon=0.1)


def check_graph_settings(est, n_rows=None) -> None:
    check_graph_hyperparameters(est)
    if n_rows is not None:
        check_knn_params(n_rows, est.n_neighbors, est.metric)


def dense_laplacian(W, normalized: bool, p: int) -> np.ndarray:
    """``M = L^p`` as a dense array, ``L = D - W`` or ``D^-1/2 (D - W) D^-1/2``."""
    W = W.toarray() if sp.issparse(W) else np.asarray(W, dtype=np.float64)
    d = W.sum(axis=1)
    L = np.diag(d) - W
    if normalized:
        # an isolated row (degree 0) keeps a zero row: it has no neighbours to be smooth with
        s = np.divide(1.0, np.sqrt(d), out=np.zeros_like(d), where=d > 0)
        L = s[:, None] * L * s[None, :]
    return np.linalg.matrix_power(L, p)


def graph_laplacian(est, X: np.ndarray, graph=None) -> np.ndarray:
    """The estimator's Laplacian on the rows of X: its kNN graph built on the workers (or the
    given :class:`~dask_ssl.graph.weights.Graph`), gathered dense."""
    if graph is None:
        client = get_client(est.client)
        blocks = RowBlocks.from_array(X, client=client, n_blocks=est.n_blocks)
        graph = knn_graph(blocks, est.n_neighbors, metric=est.metric, weights=est.weights,
                          t=est.t, symmetrize=est.symmetrize, search_epsilon=est.search_epsilon,
                          random_state=est.random_state)
    elif graph.n_rows != X.shape[0]:
        raise ValueError(f"graph has {graph.n_rows} rows but X has {X.shape[0]}")
    return dense_laplacian(graph.to_scipy(), est.normalized, est.p)
