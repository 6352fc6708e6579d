"""Scikit-learn style estimators."""

from .da import DAS3VM
from .graph_transduction import GraphTransduction
from .l2svm import L2SVM
from .manifold import LapRLS, LapSVM
from .rls import RLS
from .tsvm import TSVM

#: Estimators that can be saved to and loaded from a model directory, by class name.
#: (GraphTransduction keeps its graph on the workers and has no artifact form yet.)
ESTIMATORS = {cls.__name__: cls for cls in (L2SVM, RLS, TSVM, DAS3VM, LapRLS, LapSVM)}

__all__ = ["DAS3VM", "ESTIMATORS", "GraphTransduction", "L2SVM", "LapRLS", "LapSVM", "RLS",
           "TSVM"]
