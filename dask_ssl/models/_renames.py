"""Names that changed when the estimators took one vocabulary, and how to read the old ones.

Model directories written before the change still load (their parameters are mapped to the
new names and values); a workflow key, CLI flag or value under an old name is an error that
names the new one, so nothing is silently read with a default instead.
"""

from __future__ import annotations

import inspect

#: Old hyperparameter name -> its name now (wherever the estimator has the new one).
RENAMED_PARAMS = {
    "gamma": "gamma_A",                    # the ambient-norm weight (svmlin -W)
    "T0": "initial_temperature",           # DA's starting temperature
    "epsilon": "anneal_tol",               # DA's KL / entropy stopping tolerance
}

#: Old values of a hyperparameter -> the value now.
RENAMED_VALUES = {"loss": {"l2": "squared_hinge", "sqr": "squared"}}

#: Old workflow keys outside the estimator's parameters: (section, key) -> the key now.
RENAMED_KEYS = {("graph", "seed"): "random_state"}


def renamed_param(cls, name: str) -> str | None:
    """The new name of the old hyperparameter ``name`` of ``cls``, or None."""
    new = RENAMED_PARAMS.get(name)
    return new if new is not None and new in _params(cls) else None


def renamed_value(param: str, value) -> str | None:
    """The new spelling of an old value of ``param`` (e.g. ``loss="l2"``), or None."""
    table = RENAMED_VALUES.get(param, {})
    return table.get(value) if isinstance(value, str) else None


def upgrade_params(cls, params: dict) -> dict:
    """Stored parameters of ``cls`` under the names and values it takes now.

    A semi-supervised estimator stored with ``unlabeled=None`` (its old default, which meant
    -1 for a y passed in) gets today's default.
    """
    out = {}
    defaults = _params(cls)
    for name, value in params.items():
        name = renamed_param(cls, name) or name
        out[name] = renamed_value(name, value) or value
    if out.get("unlabeled", 0) is None and defaults.get("unlabeled") is not None:
        out["unlabeled"] = defaults["unlabeled"]
    return out


def _params(cls) -> dict:
    return {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()
            if p.kind is p.KEYWORD_ONLY}
