"""Multi-view learning (thesis ch. 4; Rosenberg): one learner per view of the same rows,
pushed to agree on the unlabeled rows."""

from .views import Views, check_views, views_at_predict
from .corls import CoRLS
from .colap import CoLapRLS, CoLapSVM

__all__ = ["Views", "check_views", "views_at_predict"]
__all__ += ["CoLapRLS", "CoLapSVM", "CoRLS"]
