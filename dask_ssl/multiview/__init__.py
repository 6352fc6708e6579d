"""Multi-view learning (thesis ch. 4; Rosenberg): one learner per view of the same rows,
pushed to agree on the unlabeled rows."""

from .blocks import MultiViewBlocks
from .colap import CoLapRLS, CoLapSVM
from .complexity import CoRegularizationComplexity, coregularization_complexity
from .comr import CoMR
from .corls import CoRLS
from .kernels import CoRegularizationKernel, MultiViewKernel, coregularization_factor
from .views import Views, check_views, views_at_predict

#: Multi-view estimators that can be saved to and loaded from a model directory, by class name.
#: Kept apart from :data:`dask_ssl.models.ESTIMATORS` (single-X estimators, which the
#: scikit-learn checks walk); :func:`dask_ssl.models.artifact.registry` holds both.
ESTIMATORS = {cls.__name__: cls for cls in (CoRLS, CoLapRLS, CoLapSVM, CoMR)}

__all__ = ["CoLapRLS", "CoLapSVM", "CoMR", "CoRLS", "CoRegularizationComplexity",
           "CoRegularizationKernel", "ESTIMATORS", "MultiViewBlocks", "MultiViewKernel", "Views",
           "check_views",
           "coregularization_complexity", "coregularization_factor", "views_at_predict"]
