"""Checks of the graph hyperparameters shared by the graph-based estimators (one name, one
meaning: ``n_neighbors``, ``metric``, ``weights``, ``t``, ``symmetrize``, ``p``,
``search_epsilon``), run before any work, and the neighbour count a graph on given rows can
have."""

from __future__ import annotations

import warnings

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
