"""Scikit-learn style estimators."""

from .da import DAS3VM
from .l2svm import L2SVM
from .rls import RLS
from .tsvm import TSVM

#: Estimators that can be saved to and loaded from a model directory, by class name.
ESTIMATORS = {cls.__name__: cls for cls in (L2SVM, RLS, TSVM, DAS3VM)}

__all__ = ["DAS3VM", "ESTIMATORS", "L2SVM", "RLS", "TSVM"]
