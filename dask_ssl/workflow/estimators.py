"""From a workflow's ``estimator`` section to an estimator, for every command that fits one.

``dask-ssl run`` builds from its workflow's section, ``dask-ssl fit`` from the section its
flags make: both through :func:`build_estimator`, so the same settings give the same estimator.
"""

from __future__ import annotations

import inspect

from .schema import RUNNER_PARAMS
from .split import UNLABELED


def build_estimator(name: str, params: dict, *, client=None):
    """The estimator ``name`` with ``params``, marking unlabeled rows as the split does (0).

    Parameters
    ----------
    name : str
        A key of :func:`dask_ssl.models.artifact.registry` (single-view or multi-view).
    params : dict
        Hyperparameters, without the keyword arguments the runner owns (``client``,
        ``unlabeled``).
    client : distributed.Client, optional
        Given to estimators that take one; the kernel S3VMs gather their rows on the driver.
    """
    from ..models.artifact import registry

    cls = registry()[name]
    if client is not None and "client" in inspect.signature(cls).parameters:
        params = {**params, "client": client}
    return cls(**params, unlabeled=UNLABELED)


def section_of(estimator) -> dict:
    """The ``estimator`` section that builds ``estimator`` again: its name and parameters."""
    params = estimator.get_params(deep=False)
    return {"name": type(estimator).__name__,
            "params": {k: v for k, v in params.items() if k not in RUNNER_PARAMS}}
