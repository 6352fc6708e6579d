"""The graph and kernel pieces of the small dense manifold-regularization variants (thesis 2.8):
graph hyperparameters as :class:`GraphTransduction` has them, the kNN graph built by the
distributed engine and gathered as a dense Laplacian on the driver (n up to a few thousand)."""

from __future__ import annotations

import numpy as np

from ..cluster import get_client
from ..graph.dense import regularizer_matrix
from ..linalg import RowBlocks
from ._graph_seam import estimator_graph


def graph_regularizer(est, X: np.ndarray, graph=None, *, n_neighbors=None,
                      p=None) -> tuple[np.ndarray, float]:
    """The estimator's ``M = L^p`` on the rows of X, dense, and the sum of the graph's edge
    weights ``sum_ij W_ij`` where ``graph_normalization="edges"`` needs it (else 0): of its kNN
    graph built on the workers with ``n_neighbors`` (default the estimator's; ``p`` too, for
    an estimator that tries several settings), or of the given
    :class:`~dask_ssl.graph.weights.Graph`. With 0 neighbours (one row) the graph has no edges:
    ``M = 0`` and the sum is 0."""
    if graph is None:
        graph = graph_on_rows(est, X, est.n_neighbors if n_neighbors is None else n_neighbors)
        if graph is None:
            return np.zeros((X.shape[0], X.shape[0])), 0.0
    elif graph.n_rows != X.shape[0]:
        raise ValueError(f"graph has {graph.n_rows} rows but X has {X.shape[0]}")
    total = float(graph.to_scipy().sum()) if est.graph_normalization == "edges" else 0.0
    return regularizer_matrix(graph, normalized=est.normalized,
                              p=est.p if p is None else p), total


def graph_on_rows(est, X: np.ndarray, k: int):
    """The estimator's kNN graph with ``k`` neighbours on the rows of X, built on the workers;
    None for ``k = 0`` (one row: no edges)."""
    if k == 0:
        return None
    blocks = RowBlocks.from_array(X, client=get_client(est.client), n_blocks=est.n_blocks)
    return estimator_graph(est, blocks, k)
