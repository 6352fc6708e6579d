"""The scikit-learn estimator checks each estimator is expected to fail, and why.

scikit-learn keeps such a list for its own estimators (``PER_ESTIMATOR_XFAIL_CHECKS``); this one
is in the form its ``check_estimator(..., expected_failed_checks=...)`` and
``parametrize_with_checks(..., expected_failed_checks=...)`` take. Only what the method itself
rules out belongs here; anything else is a bug to fix in the estimator.
"""

from __future__ import annotations

from .branch_bound import BranchAndBoundS3VM
from .da import DAS3VM
from .eigenfunction import SparseEigenfunctionClassifier
from .graph_transduction import GraphTransduction
from .kernel_da import KernelDAS3VM
from .linear_manifold import LinearLapRLS, LinearLapSVM
from .manifold import LapRLS, LapSVM
from .sparse import SparseLapRLS
from .tsvm import TSVM

_MINUS_ONE_IS_UNLABELED = (
    "-1 marks unlabeled rows (scikit-learn's semi-supervised convention): the check's last "
    "problem labels two classes -1 and +1, which reads as one class among unlabeled rows. "
    "scikit-learn exempts its own semi-supervised classifiers (LabelPropagation, "
    "LabelSpreading, SelfTrainingClassifier) from those labels by name")

_SEMI_SUPERVISED = (TSVM, DAS3VM, KernelDAS3VM, BranchAndBoundS3VM, GraphTransduction, LapRLS,
                    LapSVM, LinearLapRLS, LinearLapSVM, SparseLapRLS,
                    SparseEigenfunctionClassifier)

#: Expected failures by estimator class (check name -> reason); classes not here fail none.
EXPECTED_FAILED_CHECKS: dict[type, dict[str, str]] = {
    cls: {"check_classifiers_classes": _MINUS_ONE_IS_UNLABELED} for cls in _SEMI_SUPERVISED}


def expected_failed_checks(estimator) -> dict[str, str]:
    """The scikit-learn checks ``estimator`` is expected to fail, with the reason for each.

    Parameters
    ----------
    estimator : BaseEstimator
        A dask-ssl estimator, or a subclass of one (it inherits the nearest class's entry).

    Returns
    -------
    dict of str to str
        Check name (as in ``sklearn.utils.estimator_checks``) -> why it fails; empty for an
        estimator expected to pass every check. Pass it, or this function itself, as
        ``expected_failed_checks`` of ``check_estimator`` or ``parametrize_with_checks``.

    Examples
    --------
    >>> from dask_ssl.models import TSVM, expected_failed_checks
    >>> list(expected_failed_checks(TSVM()))
    ['check_classifiers_classes']
    """
    for cls in type(estimator).__mro__:
        if cls in EXPECTED_FAILED_CHECKS:
            return dict(EXPECTED_FAILED_CHECKS[cls])
    return {}
