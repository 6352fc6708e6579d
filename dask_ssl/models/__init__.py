"""Scikit-learn style estimators."""

from ._sklearn_checks import expected_failed_checks
from .branch_bound import BranchAndBoundS3VM, NodeLimitError
from .da import DAS3VM
from .eigenfunction import SparseEigenfunctionClassifier
from .graph_transduction import GraphTransduction
from .kernel_da import KernelDAS3VM
from .l2svm import L2SVM
from .linear_manifold import LinearLapRLS, LinearLapSVM
from .manifold import LapRLS, LapSVM
from .rls import RLS
from .sparse import SparseLapRLS
from .spectral import ClassDependentLapRLS, RegularizedSpectralClustering
from .tsvm import TSVM

#: Estimators that can be saved to and loaded from a model directory, by class name.
#: (GraphTransduction keeps its graph on the workers and has no artifact form yet.)
ESTIMATORS = {cls.__name__: cls for cls in (L2SVM, RLS, TSVM, DAS3VM, LinearLapRLS,
                                            LinearLapSVM, LapRLS, LapSVM)}
# kernel S3VMs: expansion points + coefficients, the kernel by name in their parameters
ESTIMATORS.update({cls.__name__: cls for cls in (KernelDAS3VM, BranchAndBoundS3VM)})
# graph transduction: the training rows, their scores and the prior (_transduction_serving)
ESTIMATORS[GraphTransduction.__name__] = GraphTransduction
# sparse models: the basis rows and their coefficients
ESTIMATORS[SparseLapRLS.__name__] = SparseLapRLS
# sparse eigenfunction bases: the expansion points (all rows or the landmarks) and W
ESTIMATORS[SparseEigenfunctionClassifier.__name__] = SparseEigenfunctionClassifier

__all__ = ["BranchAndBoundS3VM", "ClassDependentLapRLS", "DAS3VM", "ESTIMATORS",
           "GraphTransduction", "KernelDAS3VM", "L2SVM", "LapRLS", "LapSVM", "LinearLapRLS",
           "LinearLapSVM", "NodeLimitError", "RLS", "RegularizedSpectralClustering",
           "SparseEigenfunctionClassifier", "SparseLapRLS", "TSVM",
           "expected_failed_checks"]
