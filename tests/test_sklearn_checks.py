"""scikit-learn's own estimator checks (``sklearn.utils.estimator_checks``) on every estimator.

Every estimator exported by :mod:`dask_ssl.models` is found here by walking the package (a new
one is covered without a line here), built with its defaults, and checked with the failures the
package declares (:func:`dask_ssl.models.expected_failed_checks`) as strict expected failures.
Every fit runs on the session LocalCluster (the ``client`` fixture is the default client, which
the estimators pick up); most of the time goes to the fits of the estimators with a kNN graph
(a few round trips each).

The read-only memory-map and float32 repeats of ``check_classifiers_train`` are left out (the
suite's time): they refit its problems on inputs that ``check_readonly_memmap_input`` and
``check_estimators_dtypes`` already give every estimator, and every fit converts its input to
float64 rows first.
"""

from __future__ import annotations

import inspect
import re

import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import estimator_checks_generator

from dask_ssl import models
from dask_ssl.models import expected_failed_checks

#: At most this many checks an estimator may declare as expected failures.
MAX_EXPECTED_FAILURES = 2


def _exported_estimators() -> list[type]:
    return [obj for obj in (getattr(models, name) for name in models.__all__)
            if inspect.isclass(obj) and issubclass(obj, BaseEstimator)]


def _with_defaults(cls) -> BaseEstimator:
    """``cls()``, with only settings that change how a fit runs, not the model it gives."""
    est = cls()
    params = est.get_params(deep=False)
    if "n_neighbors" in params:
        # The checks' data (up to 300 rows) is below build_knn's exact_below, so the graph is
        # exact with any number of blocks; in one block the fit skips the cross-block round
        # trips, which made it 2-3 times slower (measured on a loaded host). The estimators'
        # own tests cover several blocks.
        est.set_params(n_blocks=1)
    if "partition" in params:
        # METIS re-blocking only moves the rows of a one-block graph; the system solved is the
        # same (its own tests cover it)
        est.set_params(partition=None)
    return est


ESTIMATORS = [_with_defaults(cls) for cls in _exported_estimators()]


def _check_name(check) -> str:
    while hasattr(check, "func"):
        check = check.func
    return check.__name__


def _check_keywords(check) -> dict:
    keywords = {}
    while hasattr(check, "func"):
        keywords.update(check.keywords)
        check = check.func
    return keywords


#: Repeats of a check on other inputs that other checks cover (module docstring).
REPEATS = {"check_classifiers_train": ("readonly_memmap", "X_dtype")}


def _suite_checks() -> list:
    """Every (estimator, check) pair of scikit-learn's generator, the declared failures as
    strict expected failures, without the :data:`REPEATS`."""
    cases = []
    for est in ESTIMATORS:
        for case in estimator_checks_generator(est, legacy=True, mark="xfail", xfail_strict=True,
                                               expected_failed_checks=expected_failed_checks(est)):
            check = case.values[1] if hasattr(case, "values") else case[1]
            if set(REPEATS.get(_check_name(check), ())) & set(_check_keywords(check)):
                continue
            cases.append(case)
    return cases


def _case_id(obj) -> str:
    if isinstance(obj, BaseEstimator):
        return re.sub(r"\s", "", str(obj))
    keywords = ",".join(f"{k}={v}" for k, v in _check_keywords(obj).items())
    return _check_name(obj) + (f"({keywords})" if keywords else "")


def test_every_exported_estimator_is_walked():
    names = {type(est).__name__ for est in ESTIMATORS}
    # the model store's registry is a subset of what the package exports
    assert set(models.ESTIMATORS) <= names, set(models.ESTIMATORS) - names


def test_expected_failures_name_real_checks():
    # a misspelt name would silently expect nothing
    for est in ESTIMATORS:
        names = {_check_name(check) for _, check in estimator_checks_generator(est)}
        assert set(expected_failed_checks(est)) <= names, type(est).__name__


def test_no_estimator_expects_more_than_two_failures():
    declared = {type(est).__name__: sorted(expected_failed_checks(est)) for est in ESTIMATORS}
    over = {name: checks for name, checks in declared.items()
            if len(checks) > MAX_EXPECTED_FAILURES}
    assert not over, over


def test_repeats_name_real_checks_and_keywords():
    # a misspelt name or keyword would leave a check out that was meant to run, or none out
    pairs = [(_check_name(check), _check_keywords(check))
             for est in ESTIMATORS for _, check in estimator_checks_generator(est)]
    for name, keywords in REPEATS.items():
        found = [kw for n, kw in pairs if n == name]
        assert found and any(set(keywords) <= set(kw) for kw in found), name
        assert any(not set(keywords) & set(kw) for kw in found), name  # the check itself runs


@pytest.mark.parametrize("estimator, check", _suite_checks(), ids=_case_id)
def test_sklearn_checks(estimator, check, client):
    # A check raises (AssertionError, or the error it provoked) when the estimator fails it;
    # the declared expected failures must raise (strict xfail). Whatever a check fits, the
    # hyperparameters it was handed stay as given (scikit-learn's convention: fit never
    # writes them).
    given = repr(estimator.get_params(deep=False))
    check(estimator)
    assert repr(estimator.get_params(deep=False)) == given, "a check changed the hyperparameters"
