"""The one seam between a graph estimator and its kNN graph (scikit-learn's label propagation
has ``_build_graph``): the graph settings that do not fit together (what the per-parameter
constraints cannot say), the neighbour count a graph on given rows can have, and the graph
itself, built from the estimator's ``metric``, ``weights``, ``t``, ``symmetrize``,
``search_epsilon`` and ``random_state``, and the weight of the graph term on it under the
estimator's ``graph_normalization``."""

from __future__ import annotations

import warnings

import numpy as np

from ..graph.knn import build_knn
from ..graph.weights import Graph, build_graphs, check_graph_params
from ..kernels.deformed import graph_term_weight


def check_graph_combination(est) -> None:
    """Raise ``ValueError`` for graph settings of ``est`` that contradict each other."""
    check_graph_params(est.weights, est.symmetrize, est.t, est.metric)


#: ``(n_neighbors, p)`` tried, in this order, when either is "auto"; the first is kept on ties.
AUTO_GRAPHS = ((10, 1), (50, 5))


def graph_settings(est, n_rows: int, graph=None) -> list:
    """``(n_neighbors, p)`` settings of ``est`` to fit: several only when one of its
    ``n_neighbors`` and ``p`` is "auto" (:data:`AUTO_GRAPHS`, or the one given crossed with
    the other's candidates). A given graph fixes the neighbours (its name, for a dict of
    named graphs, else None), so only ``p`` can vary. A given ``n_neighbors`` above
    ``n_rows - 1`` is clipped with a warning, the "auto" candidates quietly (they are the
    estimator's own)."""
    if est.n_neighbors == "auto" and est.p == "auto":
        pairs = list(AUTO_GRAPHS)
    else:
        ks = ([k for k, _ in AUTO_GRAPHS] if est.n_neighbors == "auto" else
              [est.n_neighbors if graph is not None
               else clip_n_neighbors(est.n_neighbors, n_rows)])
        ps = [q for _, q in AUTO_GRAPHS] if est.p == "auto" else [est.p]
        pairs = [(k, q) for k in ks for q in ps]
    if graph is not None:
        names = list(graph) if isinstance(graph, dict) else [None]
        pairs = [(name, q) for name in names for q in dict.fromkeys(q for _, q in pairs)]
    else:
        pairs = [(int(min(k, n_rows - 1)), q) for k, q in pairs]
    return list(dict.fromkeys(pairs))


def clip_n_neighbors(n_neighbors: int, n_rows):
    """The neighbours per row of graphs on ``n_rows`` rows (an int, or a sequence of them, one
    per graph): ``n_neighbors``, at most the other rows of the graph.

    A row has ``n - 1`` other rows to be near. Fewer rows than ``n_neighbors + 1`` (a small
    fit, a small class) get the graph they can have, every other row a neighbour, with one
    UserWarning naming the clipping for all the graphs, instead of an error: the estimator
    still fits what the rows allow. A graph on one row has no edges (0 neighbours).
    """
    sizes = np.atleast_1d(np.asarray(n_rows, dtype=np.int64))
    ks = np.minimum(int(n_neighbors), sizes - 1)
    if (ks < n_neighbors).any():
        if sizes.size == 1:
            what = f"the graph on {sizes[0]} rows uses n_neighbors={ks[0]}"
        else:
            what = f"the graphs on {sizes.tolist()} rows use n_neighbors={ks.tolist()}"
        warnings.warn(f"n_neighbors={n_neighbors} needs more than {n_neighbors} rows; {what} "
                      "(every other row a neighbour)", UserWarning, stacklevel=3)
    return int(ks[0]) if np.ndim(n_rows) == 0 else [int(k) for k in ks]


def estimator_graph(est, blocks, n_neighbors: int, *, metric=None, weights=None) -> Graph:
    """``est``'s kNN graph on the row blocks ``blocks`` with ``n_neighbors`` per row (see
    :func:`clip_n_neighbors`), built on the workers (:func:`dask_ssl.graph.knn_graph`);
    ``metric`` and ``weights`` replace ``est``'s where it resolved them (``"auto"``)."""
    return estimator_graphs(est, blocks, [n_neighbors], metric=metric,
                            weights=weights)[n_neighbors]


def estimator_graphs(est, blocks, ks, *, metric=None, weights=None) -> dict:
    """``est``'s graphs on ``blocks`` with each neighbour count of ``ks`` (as
    :func:`estimator_graph`), by one search for the most neighbours: a smaller graph's lists
    are the nearest of those (:meth:`~dask_ssl.graph.knn.Neighbors.nearest`)."""
    metric, weights = metric or est.metric, weights or est.weights
    check_graph_params(weights, est.symmetrize, est.t, metric)
    neigh = build_knn(blocks, max(ks), metric=metric, search_epsilon=est.search_epsilon,
                      random_state=est.random_state)
    return build_graphs(neigh, ks, weights=weights, t=est.t, symmetrize=est.symmetrize)


def graph_term_weight_on(est, graph: Graph, gamma_I: float) -> float:
    """``gamma_I_eff`` of ``est`` on ``graph``: ``gamma_I`` under ``est.graph_normalization``
    (:func:`~dask_ssl.kernels.deformed.graph_term_weight`). The edge weights are summed on the
    workers only where ``"edges"`` needs them (one round trip)."""
    total = 0.0
    if est.graph_normalization == "edges":
        total = float(sum(graph.W.call(_weight_sum)))
    return graph_term_weight(gamma_I, est.graph_normalization, graph.n_rows, total)


def _weight_sum(i, W):
    return float(W.sum())
