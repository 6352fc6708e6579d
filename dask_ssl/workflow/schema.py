"""The workflow file's JSON Schema, built at run time from the estimators that exist.

Each estimator's ``params`` mapping accepts exactly its keyword arguments (less ``client`` and
``unlabeled``, which the runner sets), so a misspelt hyperparameter is an error that names it
instead of a default silently used. Their values are checked by the estimator's own declared
constraints (``_parameter_constraints``), not declared a second time here.
"""

from __future__ import annotations

import inspect

#: Keyword arguments the runner owns: the cluster, and the marker of unlabeled rows it writes.
RUNNER_PARAMS = ("client", "unlabeled")

#: Evaluation metrics, and whether a larger value is better (for promotion).
METRICS = {"error": False, "error_unlabeled": False, "prbep": True, "objective": False,
           "train_error_labeled": False}

_POSITIVE_INT = {"type": "integer", "minimum": 1}
_STORAGE = {"type": "object"}
_PATH = {"type": "string", "minLength": 1}

DATA_SOURCES = {
    "svmlight": {
        "required": ["path"],
        "properties": {"path": _PATH, "n_features": _POSITIVE_INT, "n_blocks": _POSITIVE_INT,
                       "storage_options": _STORAGE},
    },
    "kdd99": {
        "required": ["path"],
        "properties": {"path": _PATH, "n_rows": _POSITIVE_INT, "replicate": _POSITIVE_INT,
                       "jitter": {"type": "number", "minimum": 0}, "seed": {"type": "integer"},
                       "storage_options": _STORAGE},
    },
    "mat": {
        "required": ["path"],
        "properties": {"path": _PATH, "view": {"type": "integer", "minimum": 0},
                       "positive_class": {"type": "integer"}},
    },
    "generator": {
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "params": {"type": "object"}},
    },
    # multi-view sources (dask_ssl.workflow.views): named views of the same rows
    "multiview_mat": {
        "required": ["path"],
        "properties": {"path": _PATH,
                       "views": {"type": "array", "items": {"type": "integer", "minimum": 0},
                                 "minItems": 1, "uniqueItems": True},
                       "classes": {"type": "array", "items": {"type": "integer"},
                                   "minItems": 2, "uniqueItems": True},
                       "positive_class": {"type": "integer"}},
    },
    "svmlight_views": {
        "required": ["paths"],
        "properties": {"paths": {"type": "array", "items": _PATH, "minItems": 1},
                       "names": {"type": "array", "items": {"type": "string", "minLength": 1},
                                 "minItems": 1, "uniqueItems": True},
                       "n_features": {"type": "array", "items": _POSITIVE_INT, "minItems": 1}},
    },
    "multiview_generator": {
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "params": {"type": "object"}},
    },
}


def keyword_params(fn) -> list[str]:
    """The keyword-only arguments of ``fn`` a workflow may set (not the client or marker)."""
    sig = inspect.signature(fn)
    return [name for name, p in sig.parameters.items()
            if p.kind is p.KEYWORD_ONLY and name not in RUNNER_PARAMS]


def _data_schema(generators: dict) -> dict:
    branches = []
    from .views import generator_params, view_generators

    for kind, spec in DATA_SOURCES.items():
        props = {"source": {"const": kind}, **spec["properties"]}
        if kind == "generator":
            props["name"] = {"enum": sorted(generators)}
        if kind == "multiview_generator":
            props["name"] = {"enum": sorted(view_generators())}
        branches.append({"if": {"properties": {"source": {"const": kind}}},
                         "then": {"required": spec["required"], "properties": props,
                                  "additionalProperties": False}})
    for name, fn in generators.items():
        branches.append({"if": {"properties": {"source": {"const": "generator"},
                                               "name": {"const": name}}},
                         "then": {"properties": {"params": {
                             "type": "object", "additionalProperties": False,
                             "properties": {p: {} for p in keyword_params(fn)}}}}})
    for name in view_generators():
        branches.append({"if": {"properties": {"source": {"const": "multiview_generator"},
                                               "name": {"const": name}}},
                         "then": {"properties": {"params": {
                             "type": "object", "additionalProperties": False,
                             "properties": {p: {} for p in generator_params(name)}}}}})
    return {"type": "object", "required": ["source"],
            "properties": {"source": {"enum": list(DATA_SOURCES)}}, "allOf": branches}


def _estimator_schema(estimators: dict) -> dict:
    branches = []
    for name, cls in estimators.items():
        # each value is checked by the estimator's own declared constraints
        params = {p: {} for p in keyword_params(cls.__init__)}
        branches.append({"if": {"properties": {"name": {"const": name}}},
                         "then": {"properties": {"params": {
                             "type": "object", "properties": params,
                             "additionalProperties": False}}}})
    return {"type": "object", "required": ["name"], "additionalProperties": False,
            "properties": {"name": {"enum": sorted(estimators)}, "params": {"type": "object"}},
            "allOf": branches}


def workflow_schema(estimators: dict, generators: dict) -> dict:
    """JSON Schema of a workflow file for the given estimators and generators (name -> class
    or function)."""
    metric = {"enum": sorted(METRICS)}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["name", "data", "estimator"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"},
            "description": {"type": "string"},
            "data": _data_schema(generators),
            "split": {
                "type": "object", "additionalProperties": False,
                "properties": {
                    "labeled": {"oneOf": [_POSITIVE_INT, {"const": "all"},
                                          {"type": "array", "items": _POSITIVE_INT,
                                           "minItems": 1}]},
                    "labeled_per_class": {"oneOf": [_POSITIVE_INT, {
                        "type": "array", "items": _POSITIVE_INT, "minItems": 1}]},
                    "test_fraction": {"type": "number", "minimum": 0,
                                      "exclusiveMaximum": 1},
                    "seed": {"type": "integer", "minimum": 0},
                },
                "not": {"required": ["labeled", "labeled_per_class"]},
            },
            "graph": {
                "type": "object", "additionalProperties": False,
                "properties": {"n_neighbors": _POSITIVE_INT,
                               "metric": {"enum": ["euclidean", "cosine"]},
                               "weights": {"enum": ["heat", "binary", "cosine"]},
                               "symmetrize": {"enum": ["max", "mean", "mutual"]},
                               "random_state": {"type": "integer", "minimum": 0}},
            },
            "estimator": _estimator_schema(estimators),
            "evaluation": {
                "type": "object", "additionalProperties": False,
                "properties": {
                    "metrics": {"type": "array", "items": {"enum": sorted(METRICS) + ["per_class"]},
                                "uniqueItems": True},
                    "promote": {"type": "object", "additionalProperties": False,
                                "properties": {"metric": metric,
                                               "tolerance": {"type": "number", "minimum": 0}}},
                },
            },
            "outputs": {
                "type": "object", "additionalProperties": False,
                "properties": {
                    "runs": _PATH,
                    "model_store": _PATH,
                    "model_name": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"},
                    "plots": {"type": "boolean"},
                    "performance_report": {"type": "boolean"},
                    "predictions": {"enum": ["none", "test", "all"]},
                },
            },
            "retrain": {
                "type": "object", "additionalProperties": False,
                "properties": {"warm_start": {"type": "boolean"},
                               "date_format": {"type": "string"}},
            },
        },
    }
