"""Scikit-learn style estimators."""

from .l2svm import L2SVM
from .rls import RLS

#: Estimators that can be saved to and loaded from a model directory, by class name.
ESTIMATORS = {cls.__name__: cls for cls in (L2SVM, RLS)}

__all__ = ["ESTIMATORS", "L2SVM", "RLS"]
