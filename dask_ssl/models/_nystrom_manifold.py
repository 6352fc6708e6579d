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
"""

from __future__ import annotations

import numpy as np

from ..linalg import RowBlocks
from .linear_manifold import LinearLapRLS, LinearLapSVM


def fit_nystrom(est, blocks: RowBlocks, labels, graph, setting, kparams, client) -> dict:
    """Fit ``est`` (LapRLS or LapSVM with ``n_components``) in Nystrom feature space; returns
    the fitted attributes of the kernel model (expansion over the landmarks) and the inner
    fit's ``gamma_I_``, ``gamma_I_effective_`` and ``selection_`` (with ``gamma_I="auto"`` the
    linear estimators' choice on the labeled rows, in ``est``'s units). ``labels`` are the fit's
    :class:`~dask_ssl.models._input.Labels`: the inner fit reads them as codes."""
    linear = LinearLapRLS if est._loss() == "squared" else LinearLapSVM
    inner = linear(gamma_A=est.gamma_A, gamma_I=est.gamma_I,
                   graph_normalization=est.graph_normalization, n_neighbors=setting[0] or 1,
                   metric=est.metric, weights=est.weights, t=est.t, symmetrize=est.symmetrize,
                   normalized=est.normalized, p=setting[1], search_epsilon=est.search_epsilon,
                   kernel=est.kernel, kernel_params=kparams, n_components=est.n_components,
                   landmarks=est.landmarks, tol=est.tol, max_iter=est.max_iter,
                   # LapRLS has no bias (Eq 2.9); the squared-hinge LapSVM has one (graph term too)
                   fit_intercept=linear is LinearLapSVM, solver="auto", unlabeled=-1,
                   client=client, random_state=est.random_state)
    inner.fit(blocks, labels.codes, graph=graph)
    fm = inner.feature_map_
    objective = 2.0 * np.asarray(inner.objective_, dtype=float)
    return {"expansion_points_": fm.components_, "landmark_indices_": fm.component_indices_,
            "n_components_": int(fm.n_features_out_),
            "dual_coef_": fm.normalization_ @ inner.coef_.T,
            "intercept_": np.asarray(inner.intercept_, dtype=float),
            "objective_": float(objective) if objective.ndim == 0 else objective,
            "n_iter_": inner.n_iter_, "history_": inner.history_,
            "classes_": labels.classes, "gamma_I_": inner.gamma_I_,
            "gamma_I_effective_": inner.gamma_I_effective_, "selection_": inner.selection_}
