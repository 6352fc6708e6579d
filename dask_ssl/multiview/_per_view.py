"""What the multi-view estimators share around their solvers: hyperparameters given once for
every view or as a list with one value per view, the constraints that allow the list, the
choice of the views' combination at predict time, and the labels a fit reads."""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.utils._param_validation import InvalidParameterError

from ..kernels.base import check_kernel
from ..models._constraints import KERNELS, POSITIVE
from ..models._input import encode_labels

#: Constraints of the hyperparameters a multi-view estimator takes per view: one value for
#: every view, or a list with one per view (checked against the views in :func:`per_view`).
PER_VIEW = dict(gamma_A=[POSITIVE, "array-like"], kernel=[KERNELS, callable, list],
                kernel_params=[dict, None, list])


def per_view(value, n_views: int, name: str) -> list:
    """``value`` for each of ``n_views`` views: a list or tuple (or 1-D array) gives one per
    view and must have ``n_views`` entries; anything else is every view's."""
    if isinstance(value, (list, tuple, np.ndarray)):
        values = list(np.asarray(value).ravel()) if isinstance(value, np.ndarray) else list(value)
        if len(values) != n_views:
            raise InvalidParameterError(f"{name} has {len(values)} value(s), one per view is "
                                        f"needed: the fit has {n_views} view(s)")
        return values
    return [value] * n_views


def positive_per_view(value, n_views: int, name: str) -> np.ndarray:
    """``value`` per view as floats, each finite and > 0."""
    values = per_view(value, n_views, name)
    for k, v in enumerate(values):
        if (not isinstance(v, Real) or isinstance(v, bool) or not np.isfinite(v)
                or not v > 0):
            raise InvalidParameterError(f"{name}[{k}] must be a finite number > 0, got {v!r}")
    return np.asarray(values, dtype=float)


def kernels_per_view(est, n_views: int) -> tuple[list, list]:
    """``(kernels, kernel_params)`` of ``est`` per view, each pair checked
    (:func:`~dask_ssl.kernels.base.check_kernel`)."""
    kernels = per_view(est.kernel, n_views, "kernel")
    params = per_view(est.kernel_params, n_views, "kernel_params")
    for k, (kernel, kp) in enumerate(zip(kernels, params)):
        try:
            check_kernel(kernel, kp)
        except ValueError as exc:
            raise ValueError(f"view {k}: {exc}") from None
    return kernels, params


def check_combine(combine, names: tuple | None, n_views: int):
    """The views' combination at predict time: ``"mean"``, or the index of one view (its name
    for named views). Returns ``"mean"`` or the view's index."""
    if isinstance(combine, str) and combine == "mean":
        return "mean"
    if isinstance(combine, str):
        if names is None or combine not in names:
            known = ["mean"] + (list(names) if names is not None else [])
            raise InvalidParameterError(f"combine={combine!r} is not 'mean' or a view name "
                                        f"(views: {known[1:] or 'unnamed'}); use one of "
                                        f"{known} or a view index")
        return names.index(combine)
    if not 0 <= int(combine) < n_views:
        raise InvalidParameterError(f"combine={combine} is not a view index: the fit has "
                                    f"{n_views} view(s)")
    return int(combine)


def combined(scores: list, combine):
    """The decision of the views' scores (one array per view): their mean, or one view's."""
    return np.mean(scores, axis=0) if combine == "mean" else scores[combine]


def fit_labels(est, y, n_rows: int):
    """``(classes, codes)`` of ``y`` against the views' rows (``est.unlabeled`` marks the
    unlabeled rows): no labeled row, one class, a regression target are errors naming it."""
    if y is None:
        raise ValueError(f"{type(est).__name__} requires y (with {est.unlabeled!r} on "
                         "unlabeled rows)")
    return encode_labels(y, n_rows, est.unlabeled)


def labels_of(classes, scores):
    """Classes from decision scores: the sign for one column (positive ``classes[1]``), else
    the largest column."""
    scores = np.asarray(scores)
    if scores.ndim == 1:
        return classes[(scores > 0).astype(int)]
    return classes[np.argmax(scores, axis=1)]


def squeeze_columns(S):
    """One score column as a 1-D array (two classes), several as they are."""
    return S[:, 0] if S.shape[1] == 1 else S


class CombinedViews:
    """Mixin of the estimators with a learner per view: their prediction combines the views'
    scores (``combine_``) from ``view_decision_functions``."""

    def decision_function(self, Xs):
        """The prediction's scores (``combine``): shape (m,) for two classes (positive
        ``classes_[1]``), (m, n_classes) otherwise."""
        return combined(self.view_decision_functions(Xs), self.combine_)

    def predict(self, Xs):
        return labels_of(self.classes_, self.decision_function(Xs))

    def _labels_from_scores(self, scores):
        """Classes from :meth:`decision_function`'s scores (what the workflow metrics read)."""
        return labels_of(self.classes_, scores)
