"""What the per-parameter constraints of the graph estimators cannot say: the combinations of
graph hyperparameters (``weights``, ``metric``, ``t``) that do not fit together, and a
neighbour count against the rows there are."""

from __future__ import annotations

from ..graph.knn import check_knn_params
from ..graph.weights import check_graph_params


def check_graph_combination(est, n_rows=None) -> None:
    """Raise ``ValueError`` for graph settings of ``est`` that contradict each other, or (given
    ``n_rows``) a fixed ``n_neighbors`` the rows cannot serve."""
    check_graph_params(est.weights, est.symmetrize, est.t, est.metric)
    if n_rows is not None and est.n_neighbors != "auto":
        check_knn_params(n_rows, est.n_neighbors, est.metric)
