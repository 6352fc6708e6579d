"""What a model directory keeps of a fitted multi-view estimator (:mod:`dask_ssl.models.artifact`).

Every multi-view model stores its views' names and widths (``view_names``, ``view_features``
in ``model.json``), so a loaded model checks the views it is given
(:func:`~dask_ssl.multiview.views_at_predict`) as the fitted one does. The rest is what its
prediction reads:

- CoRLS: each view's training rows (``view{s}_points``), the coefficients (``dual_coef``, one
  ``(n, n_columns)`` slab per view), each view's kernel by name and its parameters.
- CoLapRLS / CoLapSVM: each view's fitted LapRLS / LapSVM as it stores itself, its arrays under
  ``view{s}_`` and its fitted scalars in ``views[s]`` (its parameters are the estimator's for
  view ``s``, rebuilt from the stored ones), and the class offsets on the combined scores
  (``intercept``; a model stored without them has none).
- CoMR: the training rows side by side and the coefficients, as LapRLS keeps them.

Nothing is pickled; a callable kernel cannot be stored and is refused before anything is
written.
"""

from __future__ import annotations

import numpy as np

from ..models.artifact import pack_matrix, unpack_matrix


def _refuse_callables(kernels) -> None:
    if any(callable(k) for k in kernels):
        raise ValueError("a model with a callable kernel cannot be saved (models are stored "
                         "without pickle); use a kernel by name")


def _prefix(s: int) -> str:
    return f"view{s}_"


def view_info(est) -> dict:
    """The fields every multi-view model stores: the views' names and widths, the labels and
    the fit's size and time."""
    names = est.view_names_
    widths = [int(w) for w in est.view_features_]
    return {"view_names": None if names is None else list(names), "view_features": widths,
            "n_features": int(sum(widths)), "n_labeled": int(est.n_labeled_),
            "classes": est.classes_.tolist(), "fit_seconds": float(est.fit_seconds_),
            "selection_cost_": est.selection_cost_}


def restore_view_info(est, doc: dict) -> None:
    names = doc["view_names"]
    est.view_names_ = None if names is None else tuple(names)
    est.view_features_ = tuple(int(w) for w in doc["view_features"])
    est.n_labeled_ = doc["n_labeled"]
    est.fit_seconds_ = doc["fit_seconds"]
    # models saved before the cost was recorded
    est.selection_cost_ = doc.get("selection_cost_")


def _combine_json(combine):
    return combine if isinstance(combine, str) else int(combine)


# CoRLS ----------------------------------------------------------------------------------------
def corls_info(est) -> dict:
    _refuse_callables(est.kernels_)
    n = int(len(est.transduction_))
    return {**view_info(est), "data_shape": [n, int(sum(est.view_features_))],
            "kernels_": list(est.kernels_), "kernel_params_": est.kernel_params_,
            "combine_": _combine_json(est.combine_), "gamma_C_": float(est.gamma_C_),
            "selection_": est.selection_, "solver_": getattr(est, "solver_", "direct")}


def _dense(est) -> bool:
    """The dense system's model (one (n_views, n, k) array) rather than a primal one's (a
    weight vector or landmark coefficients per view)."""
    return isinstance(est.dual_coef_, np.ndarray)


def corls_arrays(est) -> dict:
    corls_info(est)  # refuses a callable kernel before anything is written
    arrays = {"classes": est.classes_}
    if _dense(est):
        arrays["dual_coef"] = est.dual_coef_
    else:  # per view: the linear weights, or the coefficients of the landmarks
        coefs = est.coef_ if est.dual_coef_ is None else est.dual_coef_
        arrays.update({_prefix(s) + "coef": c for s, c in enumerate(coefs)})
    for s, P in enumerate(est.expansion_points_):
        if P is not None:
            arrays.update(pack_matrix(_prefix(s) + "points", P))
    return arrays


def corls_restore(est, arrays: dict, doc: dict) -> None:
    restore_view_info(est, doc)
    est.classes_ = arrays["classes"]
    m = len(est.view_features_)
    est.expansion_points_ = [unpack_matrix(_prefix(s) + "points", arrays)
                             if any(k.startswith(_prefix(s) + "points") for k in arrays) else None
                             for s in range(m)]
    est.solver_ = doc.get("solver_", "direct")
    if "dual_coef" in arrays:
        est.dual_coef_, est.coef_ = arrays["dual_coef"], None
    else:
        coefs = [arrays[_prefix(s) + "coef"] for s in range(m)]
        linear = est.expansion_points_[0] is None
        est.coef_, est.dual_coef_ = (coefs, None) if linear else (None, coefs)
    est.kernels_ = list(doc["kernels_"])
    est.kernel_params_ = [dict(kp) for kp in doc["kernel_params_"]]
    est.combine_ = doc["combine_"]
    est.gamma_C_ = doc["gamma_C_"]
    est.selection_ = doc.get("selection_", [])


# CoLapRLS, CoLapSVM ---------------------------------------------------------------------------
def colap_info(est) -> dict:
    views = [learner._fitted_info() for learner in est.estimators_]
    n = int(views[0]["data_shape"][0])
    return {**view_info(est), "data_shape": [n, int(sum(est.view_features_))],
            "combine_": _combine_json(est.combine_), "graph_names_": list(est.graph_names_),
            "view_weights_": np.asarray(est.view_weights_).tolist(),
            "gamma_I_": np.asarray(est.gamma_I_).tolist(), "p_": [int(p) for p in est.p_],
            "class_balance_": _jsonable_balance(est.class_balance_), "views": views}


def colap_arrays(est) -> dict:
    arrays = {"classes": est.classes_, "intercept": est.intercept_}
    for s, learner in enumerate(est.estimators_):
        arrays.update({_prefix(s) + k: v for k, v in learner._fitted_arrays().items()})
    return arrays


def colap_restore(est, arrays: dict, doc: dict) -> None:
    restore_view_info(est, doc)
    est.classes_ = arrays["classes"]
    # each view's learner with the parameters the fit gave it (the estimator's for view s)
    learners = est._learners(len(est.view_features_))
    for s, (learner, info) in enumerate(zip(learners, doc["views"])):
        prefix = _prefix(s)
        learner._restore({k[len(prefix):]: v for k, v in arrays.items()
                          if k.startswith(prefix)},
                         {**info, "params": learner.get_params(deep=False)})
    est.estimators_ = learners
    est.combine_ = doc["combine_"]
    est.graph_names_ = list(doc["graph_names_"])
    est.view_weights_ = np.asarray(doc["view_weights_"])
    est.gamma_I_ = np.asarray(doc["gamma_I_"])
    est.p_ = list(doc["p_"])
    est.selection_ = [learner.selection_ for learner in learners]
    # models stored before the class offsets: none (a zero intercept, no cut)
    n_columns = 1 if est.classes_.size == 2 else est.classes_.size
    est.intercept_ = arrays.get("intercept", np.zeros(n_columns))
    est.class_balance_ = doc.get("class_balance_")


# CoMR -----------------------------------------------------------------------------------------
def comr_info(est) -> dict:
    _refuse_callables([est.kernel])
    return {**view_info(est), "data_shape": [int(est.dual_coef_.shape[0]),
                                             int(est.n_features_in_)],
            "kernel_params_": est.kernel_params_, "gamma_I_": float(est.gamma_I_),
            "gamma_I_effective": float(est.gamma_I_effective_),
            "gamma_C_effective": float(est.gamma_C_effective_), "selection_": est.selection_,
            "n_neighbors_": est.n_neighbors_, "p_": est.p_,
            "class_balance_": _jsonable_balance(est.class_balance_)}


def comr_arrays(est) -> dict:
    comr_info(est)  # refuses a callable kernel before anything is written
    return {"dual_coef": est.dual_coef_, "intercept": est.intercept_, "classes": est.classes_,
            **pack_matrix("points", est.expansion_points_)}


def comr_restore(est, arrays: dict, doc: dict) -> None:
    restore_view_info(est, doc)
    est.classes_ = arrays["classes"]
    est.dual_coef_ = arrays["dual_coef"]
    est.intercept_ = arrays["intercept"]
    est.expansion_points_ = unpack_matrix("points", arrays)
    est.n_features_in_ = doc["n_features"]
    est.kernel_params_ = doc["kernel_params_"]
    est.gamma_I_ = doc["gamma_I_"]
    est.gamma_I_effective_ = doc["gamma_I_effective"]
    est.gamma_C_effective_ = doc["gamma_C_effective"]
    est.selection_ = doc.get("selection_", [])
    # models stored before CoMR chose its graph setting
    est.n_neighbors_, est.p_ = doc.get("n_neighbors_"), doc.get("p_")
    # models stored before CoMR's class offsets: none (their intercept_ is zero)
    est.class_balance_ = doc.get("class_balance_")


def _jsonable_balance(value):
    return value if value is None or isinstance(value, str) else [float(v) for v in value]
