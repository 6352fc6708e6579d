"""scikit-learn's own estimator checks (``sklearn.utils.estimator_checks``) on every estimator.

Adding an estimator is one line in ESTIMATORS: an instance and the checks it is expected to fail,
each with its reason. Every fit runs on the session LocalCluster (the ``client`` fixture is the
default client, which the estimators pick up). The checks that fit a dozen times (every sparse
format, every dtype, ...) cost seconds each with a cluster round trip per solver step; they are
marked ``slow`` (``pytest -m slow tests/test_sklearn_checks.py`` runs them).
"""

from __future__ import annotations

import pytest
from sklearn.utils.estimator_checks import _get_check_estimator_ids, estimator_checks_generator

from dask_ssl.models import DAS3VM, L2SVM, RLS, TSVM, GraphTransduction

_MINUS_ONE_IS_UNLABELED = (
    "-1 marks unlabeled rows (scikit-learn's semi-supervised convention); the check labels a "
    "binary problem -1/+1 for every classifier except scikit-learn's own semi-supervised ones, "
    "which it exempts by name")

ESTIMATORS = [
    (L2SVM(), {}),
    (RLS(), {}),
    (TSVM(), {"check_classifiers_classes": _MINUS_ONE_IS_UNLABELED}),
    (DAS3VM(), {"check_classifiers_classes": _MINUS_ONE_IS_UNLABELED}),
    # partition=None: METIS re-blocking of a 30-row graph only adds time here (it has its own
    # tests); the solution is the same up to the CG tolerance.
    (GraphTransduction(n_neighbors=3, partition=None), {
        "check_classifiers_classes": _MINUS_ONE_IS_UNLABELED,
        "check_estimators_pickle": (
            "the fitted graph and its kNN indexes are held on the workers of the fit's client "
            "(futures), which do not pickle; the model has no artifact form yet"),
        "check_decision_proba_consistency": (
            "decision_function is the thesis' f = F_1 - F_0 and predict_proba is F clipped at 0 "
            "and normalized per row (LabelSpreading's label distributions): the two need not "
            "rank rows alike"),
    }),
]

#: Checks that fit many times (a fit per sparse format or dtype, per method, ...).
SLOW_CHECKS = {
    "check_estimator_sparse_array", "check_estimator_sparse_matrix", "check_estimators_dtypes",
    "check_dtype_object", "check_fit_score_takes_y", "check_methods_subset_invariance",
    "check_methods_sample_order_invariance", "check_classifiers_train",
    "check_sample_weight_equivalence_on_dense_data", "check_classifiers_classes",
}


def _check_name(check) -> str:
    while hasattr(check, "func"):
        check = check.func
    return check.__name__


def _params():
    for estimator, expected in ESTIMATORS:
        for item in estimator_checks_generator(estimator, expected_failed_checks=expected,
                                               mark="xfail", xfail_strict=True):
            values, marks = (item.values, list(item.marks)) if hasattr(item, "values") else (item, [])
            if _check_name(values[1]) in SLOW_CHECKS:
                marks.append(pytest.mark.slow)
            yield pytest.param(*values, marks=marks, id="-".join(
                _get_check_estimator_ids(v) for v in values))


def test_expected_failures_name_real_checks():
    # a misspelt name would silently expect nothing
    names = {_check_name(check) for est, _ in ESTIMATORS
             for _, check in estimator_checks_generator(est)}
    for est, expected in ESTIMATORS:
        assert set(expected) <= names, type(est).__name__


@pytest.mark.parametrize("estimator, check", list(_params()))
def test_sklearn_checks(estimator, check, client):
    check(estimator)
