"""scikit-learn's ``clone`` for estimators that take a Dask ``client``.

``clone`` (every search, ``cross_val_score``, the estimator checks) deep-copies each
parameter; a ``distributed.Client`` is a live connection that does not copy, so a search over
an estimator given ``client=`` failed. The clone shares the client instead: the same
cluster, every other parameter cloned as scikit-learn clones it.
"""

from __future__ import annotations

import copy


class SharesClient:
    """Mixin (before ``BaseEstimator``): ``clone`` keeps the ``client`` parameter by
    reference."""

    def __sklearn_clone__(self):
        if getattr(self, "client", None) is None:
            return super().__sklearn_clone__()
        bare = copy.copy(self)
        bare.client = None
        new = super(SharesClient, bare).__sklearn_clone__()
        new.client = self.client
        return new
