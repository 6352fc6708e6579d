"""Every hyperparameter name of the estimators, declared once with the values it takes.

One name, one meaning: an estimator's ``_parameter_constraints`` (scikit-learn's constraint
objects, checked by ``BaseEstimator._validate_params`` before any work) is built here from its
``__init__`` signature, so a parameter of the same name takes the same values everywhere. An
estimator passes an override only where its method widens or narrows the shared meaning (a
``"auto"`` that selects the value, a ``None`` that switches a feature off, its own solvers or
losses); the vocabulary test lists those overrides.
"""

from __future__ import annotations

import inspect
from numbers import Integral, Real

from sklearn import get_config
from sklearn.metrics.pairwise import KERNEL_PARAMS
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions

from ..graph.knn import METRICS
from ..graph.weights import LOCAL, SYMMETRIZE, WEIGHTS
from ..kernels.deformed import GRAPH_NORMALIZATIONS
from ..kernels.nystrom import LANDMARKS
from ._renames import renamed_value

POSITIVE = Interval(Real, 0, None, closed="neither")
NON_NEGATIVE = Interval(Real, 0, None, closed="left")
COUNT = Interval(Integral, 1, None, closed="left")
AUTO = StrOptions({"auto"})
KERNELS = StrOptions({k for k in KERNEL_PARAMS if k != "precomputed"})

#: The shared constraint of each hyperparameter name.
SHARED = {
    # regularization (seed symbols in each docstring)
    "gamma_A": [POSITIVE],
    "gamma_I": [NON_NEGATIVE, AUTO],
    "gamma_I_pos": [NON_NEGATIVE],
    "gamma_I_neg": [NON_NEGATIVE],
    "gamma_u": [NON_NEGATIVE],
    "pos_fraction": [Interval(Real, 0, 1, closed="neither"), None],
    "max_switches": [COUNT, None],
    "unlabeled_weight": [NON_NEGATIVE],
    "prior": [StrOptions({"auto", "rls"}), None],
    "class_balance": [None, StrOptions({"labeled"}), "array-like"],
    "graph_normalization": [StrOptions(set(GRAPH_NORMALIZATIONS))],
    "loss": [StrOptions({"squared", "squared_hinge", "hinge"})],
    # multi-view learning (thesis ch. 4; Rosenberg)
    "gamma_C": [NON_NEGATIVE, AUTO],
    "mu": [POSITIVE, "array-like"],
    "formulation": [StrOptions({"coupled", "averaged"})],
    "view_weights": ["array-like", None],
    "combine": [Interval(Integral, 0, None, closed="left"), str],
    # deterministic annealing
    "initial_temperature": [POSITIVE],
    "initial_gamma_u": [POSITIVE, None],
    "cold_start": ["boolean"],
    "anneal_factor": [Interval(Real, 1, None, closed="neither")],
    "anneal_tol": [POSITIVE],
    "max_stages": [COUNT],
    "max_inner": [COUNT],
    # the kNN graph and its Laplacian
    "n_neighbors": [COUNT],
    "metric": [StrOptions(set(METRICS))],
    "weights": [StrOptions(set(WEIGHTS))],
    "t": [POSITIVE, StrOptions({LOCAL}), None],
    "symmetrize": [StrOptions(set(SYMMETRIZE))],
    "normalized": ["boolean"],
    "p": [COUNT],
    "search_epsilon": [NON_NEGATIVE],
    "partition": [StrOptions({"metis"}), None],
    "preconditioner": [StrOptions({"block"}), None],
    # kernels and Nystrom features
    "kernel": [KERNELS, callable],
    "kernel_params": [dict, None],
    "n_components": [COUNT],
    "landmarks": [StrOptions(set(LANDMARKS))],
    "eig_tol": [POSITIVE],
    # sparse models (thesis ch. 5)
    "n_basis": [COUNT, Interval(RealNotInt, 0, 1, closed="right")],  # d: a count or a share of n
    "basis": [StrOptions({"auto", "greedy", "random", "lasso", "lars"}), "array-like"],  # J
    "method": [StrOptions({"laprls", "slack", "decoupled", "sigmoid"})],  # objective on the basis
    "kappa": [COUNT],  # greedy candidates a step
    "nu": [POSITIVE],  # slack coupling
    "gamma_S": [NON_NEGATIVE],  # l1 weight of a sparse fit
    "sign_tol": [Interval(Real, 0, 1, closed="both")],  # the no-sign-change filter (eps)
    "rho": [POSITIVE],  # slope of the sigmoid method's output squashing
    # solvers
    "tol": [POSITIVE],
    "max_iter": [COUNT],
    "max_nodes": [COUNT],
    "fit_intercept": ["boolean"],
    "early_stopping": ["boolean"],
    # "solver" has no shared form: each estimator names its own (an override)
    # data, execution, outputs
    "unlabeled": "no_validation",  # any value y can hold marks its unlabeled rows
    "client": "no_validation",     # a distributed.Client, or None for the default one
    "n_blocks": [COUNT, None],
    "random_state": ["random_state"],
    "checkpoint": [str, None],
    "verbose": ["boolean"],
}


def constraints(init, **overrides) -> dict:
    """``_parameter_constraints`` for the keyword-only parameters of ``init``: the shared
    constraint of each name, or the override given for it (an estimator-specific value set,
    such as its ``solver`` or ``loss`` options). A name outside the vocabulary is an error."""
    names = [n for n, p in inspect.signature(init).parameters.items()
             if p.kind is p.KEYWORD_ONLY]
    unknown = [n for n in names if n not in SHARED and n not in overrides]
    if unknown:
        raise TypeError(f"{init.__qualname__}: parameter(s) {unknown} are not in the "
                        "vocabulary (dask_ssl.models._constraints.SHARED)")
    return {n: overrides.get(n, SHARED.get(n)) for n in names}


def validate(est) -> None:
    """Check every hyperparameter of ``est`` against its ``_parameter_constraints``; a value
    under an old spelling (``loss="l2"``) gets an error naming the new one.

    Inside scikit-learn's ``config_context(skip_parameter_validation=True)`` nothing is
    checked: the commands check an estimator's parameters before reading any data and fit it
    in that context, so that one fit checks them once.
    """
    if get_config()["skip_parameter_validation"]:
        return
    for name, value in est.get_params(deep=False).items():
        new = renamed_value(name, value)
        if new is not None:
            raise ValueError(f"{name}={value!r} is now called {name}={new!r}")
    est._validate_params()
