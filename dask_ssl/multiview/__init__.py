"""Multi-view learning (thesis ch. 4; Rosenberg): one learner per view of the same rows,
pushed to agree on the unlabeled rows."""

from .views import Views, check_views, views_at_predict
from .kernels import CoRegularizationKernel, MultiViewKernel, coregularization_factor
from .complexity import CoRegularizationComplexity, coregularization_complexity
from .comr import CoMR

__all__ = ["Views", "check_views", "views_at_predict"]
__all__ += ["CoMR", "CoRegularizationComplexity", "CoRegularizationKernel", "MultiViewKernel",
            "coregularization_complexity", "coregularization_factor"]
