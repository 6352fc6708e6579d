"""LapRLS / LapSVM with ``n_components``: the kernel expansion replaced by Nystrom features.

With ``Z = K(X, landmarks) K_mm^-1/2`` (:class:`~dask_ssl.kernels.nystrom.NystromFeatures`) a
function ``f = Z w`` has ``||f||_K = ||w||`` on the landmarks' span, so the LapRLS objective

    (1/l) sum_{labeled} V(y_i, f_i) + gamma_A ||f||_K^2 + gamma_I_eff f^T M f

is twice :class:`~dask_ssl.models.LinearLapRLS`'s objective on the features ``Z``,

    gamma_A/2 ||w||^2 + 1/(2l) sum_{labeled} V(y_i, o_i) + gamma_I_eff/2 o^T M o,

with the same ``gamma_A`` and ``gamma_I_eff``: the linear estimators take ``gamma_I`` and
``graph_normalization`` with the same meaning, and the graph is the same. The linear solution maps
back to an expansion over the landmarks, ``alpha = K_mm^-1/2 w``, so prediction and the model
store are those of the exact estimators with the landmarks as expansion points.

Where the RBF width is chosen, each candidate width is a feature space of its own on the same
landmarks; :mod:`._nystrom_width` chooses the width with ``gamma_I`` and the linear fit at the
chosen setting runs on what that width formed for the choice (its features lined up with the
graph and, on the Gram path, its Gram matrices), computed once.
"""

from __future__ import annotations

import numpy as np

from ..linalg import RowBlocks
from ._graph_weight import SEED_GAMMA_I, truth_of
from ._nystrom_width import choose_width
from ._selection import enough_labels, warn_unchecked
from .linear_manifold import LinearLapRLS, LinearLapSVM


def fit_nystrom(est, blocks: RowBlocks, labels, graph, setting, candidates, client) -> dict:
    """Fit ``est`` (LapRLS or LapSVM with ``n_components``) in Nystrom feature space; returns
    the fitted attributes of the kernel model (expansion over the landmarks, its
    ``kernel_params_``) and ``gamma_I_``, ``gamma_I_effective_`` and ``selection_``.
    ``candidates`` are the kernel parameters to try, the default first: with one, the inner
    linear fit maps the rows and (``gamma_I="auto"``) chooses ``gamma_I`` in ``est``'s units;
    with several (the RBF width to choose), :func:`._nystrom_width.choose_width` chooses the
    width with ``gamma_I`` and the inner fit runs on the chosen width's features. ``labels``
    are the fit's :class:`~dask_ssl.models._input.Labels`: the inner fit reads them as codes."""
    linear = LinearLapRLS if est._loss() == "squared" else LinearLapSVM
    gamma_I = est.gamma_I
    if len(candidates) > 1:
        if enough_labels(truth_of(labels.columns()[labels.labeled])):
            chosen = choose_width(est, blocks, labels, graph, setting[1], candidates,
                                  bias=linear is LinearLapSVM)
            inner = _inner(est, linear, setting, None, chosen["gamma_I"], client)
            inner.fit_prepared(chosen["prepared"], chosen["features"], labels.codes, graph)
            return {**_attributes(inner, chosen["feature_map"], labels),
                    "kernel_params_": candidates[chosen["width"]],
                    "gamma_I_": chosen["gamma_I"], "selection_": chosen["selection"]}
        warn_unchecked(est, est._unchecked(1, len(candidates)))
        gamma_I = SEED_GAMMA_I if gamma_I == "auto" else gamma_I
    inner = _inner(est, linear, setting, candidates[0], gamma_I, client)
    inner.fit(blocks, labels.codes, graph=graph)
    return {**_attributes(inner, inner.feature_map_, labels), "kernel_params_": candidates[0],
            "gamma_I_": inner.gamma_I_, "selection_": inner.selection_}


def _inner(est, linear, setting, kparams, gamma_I, client):
    """The linear estimator of ``est``'s objective: on Nystrom features of ``kparams`` it
    maps itself, on features already mapped (``kparams`` None) it takes them as they are."""
    return linear(gamma_A=est.gamma_A, gamma_I=gamma_I,
                  graph_normalization=est.graph_normalization, n_neighbors=setting[0] or 1,
                  metric=est.metric, weights=est.weights, t=est.t, symmetrize=est.symmetrize,
                  normalized=est.normalized, p=setting[1], search_epsilon=est.search_epsilon,
                  kernel=None if kparams is None else est.kernel, kernel_params=kparams,
                  n_components=est.n_components, landmarks=est.landmarks, tol=est.tol,
                  max_iter=est.max_iter,
                  # LapRLS has no bias (Eq 2.9); the squared-hinge LapSVM has one (graph term too)
                  fit_intercept=linear is LinearLapSVM, solver="auto", unlabeled=-1,
                  client=client, random_state=est.random_state)


def _attributes(inner, fm, labels) -> dict:
    """The kernel model of the inner linear fit on the features of ``fm``."""
    objective = 2.0 * np.asarray(inner.objective_, dtype=float)
    return {"expansion_points_": fm.components_, "landmark_indices_": fm.component_indices_,
            "n_components_": int(fm.n_features_out_),
            "dual_coef_": fm.normalization_ @ inner.coef_.T,
            "intercept_": np.asarray(inner.intercept_, dtype=float),
            "objective_": float(objective) if objective.ndim == 0 else objective,
            "n_iter_": inner.n_iter_, "history_": inner.history_,
            "classes_": labels.classes, "gamma_I_effective_": inner.gamma_I_effective_,
            "restarts_": inner.restarts_}
