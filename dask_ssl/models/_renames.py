"""Names and meanings that changed when the estimators took one vocabulary, and how to read
the old ones.

Model directories written before a change still load (their parameters are mapped to the new
names, values and meanings); a workflow key, CLI flag or value under an old name is an error
that names the new one, so nothing is silently read with a default instead.
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

#: Hyperparameters added after models were stored, per estimator: name -> the value that
#: reproduces what a model stored without it was fitted with (its behaviour then).
ADDED_PARAMS = {"DAS3VM": {"initial_gamma_u": None,  # gamma' fixed from the first stage
                          "cold_start": False}}     # one annealing

#: Kernel estimators whose RBF width, where not given, was scikit-learn's ``1 / n_features``
#: before they filled in the rows' own scale (and recorded it in ``kernel_params_``).
RBF_WIDTH_FILLED = ("KernelDAS3VM", "BranchAndBoundS3VM")

#: Estimators that took ``gamma_I`` as the graph term's coefficient itself (the linear paper's
#: convention) before they took ``graph_normalization``.
GRAPH_WEIGHT_AS_GIVEN = ("LinearLapRLS", "LinearLapSVM")


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
    -1 for a y passed in) gets today's default; one stored before a hyperparameter of
    :data:`ADDED_PARAMS` existed gets the value it was fitted with.
    """
    out = {}
    defaults = _params(cls)
    for name, value in params.items():
        name = renamed_param(cls, name) or name
        out[name] = renamed_value(name, value) or value
    if out.get("unlabeled", 0) is None and defaults.get("unlabeled") is not None:
        out["unlabeled"] = defaults["unlabeled"]
    for name, value in ADDED_PARAMS.get(cls.__name__, {}).items():
        out.setdefault(name, value)
    return out


def upgrade_document(cls, doc: dict) -> dict:
    """A stored ``model.json`` of ``cls`` with its parameters under the names, values and
    meanings ``cls`` takes now (:func:`upgrade_params`), its fitted values to match.

    A linear graph estimator (:data:`GRAPH_WEIGHT_AS_GIVEN`) stored without
    ``graph_normalization`` took ``gamma_I`` as the coefficient of its graph term. A given
    ``gamma_I`` reads the same with ``graph_normalization="none"``. ``"auto"`` chose the
    coefficient by shares of the objective that no normalization changes, and with too few
    labels fell back to the seeds' ``1e4 / (u + l)^2``: that is ``"auto"`` under the default
    ``"n2"`` now, so it gets ``"n2"``, and its stored choice (``gamma_I_``, the ``selection_``
    rows' ``gamma_I``: coefficients) is restated in the units of ``gamma_I``, times
    ``(u + l)^2``. Either way ``gamma_I_effective_`` is the stored coefficient. A kernel
    estimator of :data:`RBF_WIDTH_FILLED` stored without ``kernel_params_`` gets the RBF width
    it was fitted with, scikit-learn's ``1 / n_features``, as a given ``gamma``. Refitting with
    the mapped parameters fits the stored model again.
    """
    doc = dict(doc)
    params = upgrade_params(cls, doc["params"])
    doc["params"] = params
    if cls.__name__ in RBF_WIDTH_FILLED and "kernel_params_" not in doc:
        # the width it was fitted with, given: a refit fits it again
        given = params.get("kernel_params")
        if params.get("kernel", "rbf") == "rbf" and "gamma" not in (given or {}):
            given = {**(given or {}), "gamma": 1.0 / doc["n_features"]}
            params["kernel_params"] = given
        doc["kernel_params_"] = given
    if cls.__name__ not in GRAPH_WEIGHT_AS_GIVEN or "graph_normalization" in params:
        return doc
    chosen = params.get("gamma_I") == "auto"
    params["graph_normalization"] = "n2" if chosen else "none"
    if "gamma_I_" in doc:
        doc["gamma_I_effective_"] = doc["gamma_I_"]
        if chosen:
            n2 = float(doc["data_shape"][0]) ** 2
            doc["gamma_I_"] = doc["gamma_I_"] * n2
            doc["selection_"] = [{**row, "gamma_I": row["gamma_I"] * n2}
                                 for row in doc.get("selection_", [])]
    return doc


def _params(cls) -> dict:
    return {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()
            if p.kind is p.KEYWORD_ONLY}
