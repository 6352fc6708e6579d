"""Checks of the graph hyperparameters shared by the graph-based estimators (one name, one
meaning: ``n_neighbors``, ``metric``, ``weights``, ``t``, ``symmetrize``, ``p``,
``search_epsilon``), run before any work."""

from __future__ import annotations

import numpy as np

from ..graph.knn import check_knn_params
from ..graph.weights import check_graph_params


def check_number(name, value, *, low=0.0, strict=True, integer=False):
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    ok = isinstance(value, kinds) and not isinstance(value, bool) and np.isfinite(value) and (
        value > low if strict else value >= low)
    if not ok:
        what = "an integer" if integer else "a finite number"
        raise ValueError(f"{name} must be {what} {'>' if strict else '>='} {low}, got {value!r}")


def check_graph_hyperparameters(est, *, auto=()) -> None:
    """Check ``est``'s graph hyperparameters; names in ``auto`` may also be ``"auto"``."""
    for name in ("n_neighbors", "p"):
        value = getattr(est, name)
        if not (name in auto and isinstance(value, str) and value == "auto"):
            check_number(name, value, integer=True)
    check_number("search_epsilon", est.search_epsilon, strict=False)
    k = est.n_neighbors if isinstance(est.n_neighbors, (int, np.integer)) else 1
    check_knn_params(k + 1, k, est.metric)
    check_graph_params(est.weights, est.symmetrize, est.t, est.metric)
