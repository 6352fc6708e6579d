"""Every estimator that runs on the workers fits the same model on worker processes as on threads.

The suite's session LocalCluster runs its workers as threads of the test process (conftest), as
the cluster dask-ssl starts by default does. What only worker processes exercise (tasks, blocks
and results pickled between processes, worker-held state found by its token in another
process) is checked here, on the real scheduler and worker processes, for every estimator
:mod:`dask_ssl.models` exports but the two whose fit is a dense problem on the driver: the same
rows in the same blocks, the same arithmetic, so the same decision values.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from distributed import Client
from sklearn.base import BaseEstimator

from dask_ssl import models
from dask_ssl.data.generators import two_moons

from ._labels import labels_per_class

pytestmark = pytest.mark.cluster

#: Fitted on the driver alone (a dense kernel problem of a few hundred rows): no worker runs them.
ON_THE_DRIVER = {"KernelDAS3VM", "BranchAndBoundS3VM"}
NAMES = [name for name in models.__all__
         if inspect.isclass(getattr(models, name)) and issubclass(getattr(models, name),
                                                                 BaseEstimator)
         and name not in ON_THE_DRIVER]


def _fit(name, client, X, y):
    est = getattr(models, name)()
    params = est.get_params(deep=False)
    est.set_params(**{key: value for key, value in (("client", client), ("random_state", 0),
                                                    ("n_blocks", 2)) if key in params})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


@pytest.mark.parametrize("name", NAMES)
def test_worker_processes_fit_the_model_thread_workers_fit(name, client, real_cluster):
    X, y = two_moons(n=80, noise=0.1, seed=4)
    y = (y > 0).astype(int)
    train = labels_per_class(y, 6, seed=4)
    threads = _fit(name, client, X, train)
    with Client(real_cluster(n_workers=2).address, set_as_default=False) as remote:
        procs = _fit(name, remote, X, train)
        if hasattr(threads, "decision_function"):
            np.testing.assert_allclose(procs.decision_function(X), threads.decision_function(X),
                                       rtol=1e-8, atol=1e-10)
        np.testing.assert_array_equal(procs.predict(X), threads.predict(X))
