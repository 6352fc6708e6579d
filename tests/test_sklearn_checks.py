"""scikit-learn's own estimator checks on every estimator in the package."""

from __future__ import annotations

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from dask_ssl.models import DAS3VM, L2SVM, RLS, TSVM, GraphTransduction

ESTIMATORS = [
    (L2SVM(), {}),
    (RLS(), {}),
    (TSVM(), {}),
    (DAS3VM(), {}),
    (GraphTransduction(n_neighbors=3), {}),
]

_EXPECTED = {type(est).__name__: dict(fails) for est, fails in ESTIMATORS}


@parametrize_with_checks([est for est, _ in ESTIMATORS],
                         expected_failed_checks=lambda est: _EXPECTED[type(est).__name__])
def test_sklearn_checks(estimator, check, client):
    check(estimator)
