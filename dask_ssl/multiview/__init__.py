"""Multi-view learning (thesis ch. 4; Rosenberg): one learner per view of the same rows,
pushed to agree on the unlabeled rows."""

from .blocks import MultiViewBlocks
from .colap import CoLapRLS, CoLapSVM
from .complexity import CoRegularizationComplexity, coregularization_complexity
from .comr import CoMR
from .corls import CoRLS
from .kernels import CoRegularizationKernel, MultiViewKernel, coregularization_factor
from .views import Views, check_views, views_at_predict

__all__ = ["CoLapRLS", "CoLapSVM", "CoMR", "CoRLS", "CoRegularizationComplexity",
           "CoRegularizationKernel", "MultiViewBlocks", "MultiViewKernel", "Views", "check_views",
           "coregularization_complexity", "coregularization_factor", "views_at_predict"]
