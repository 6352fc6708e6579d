"""Loading a workflow file: parse, apply ``--set`` overrides, validate, fill defaults.

Every problem is reported before any work starts, as ``FILE:LINE: key.path: message`` (or
``FILE (--set key=value): ...`` for a value that came from the command line), all problems at
once, sorted by line.
"""

from __future__ import annotations

import copy
import datetime as dt
import difflib
import inspect
import string
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import yaml

from .schema import workflow_schema
from .sources import generators
from .yamlfile import DocumentError, format_path, load_with_lines, parse_scalar

DEFAULTS = {
    "split": {"labeled": "all", "test_fraction": 0.2, "seed": 0},
    "evaluation": {"metrics": ["error", "error_unlabeled", "prbep", "objective", "per_class"],
                   "promote": {"metric": "error", "tolerance": 0.0}},
    "outputs": {"runs": "runs", "model_store": "models", "plots": True,
                "performance_report": True, "predictions": "test"},
    "retrain": {"warm_start": True, "date_format": "%Y-%m-%d"},
}


#: Read no more of a workflow file than this (memory stays bounded whatever the path names).
MAX_WORKFLOW_BYTES = 1 << 20


class WorkflowError(ValueError):
    """A workflow that cannot run; the message lists every problem with its file and line."""


@dataclass
class Workflow:
    """A validated workflow: ``doc`` holds every section with defaults filled in.

    Local paths in ``data.path``, ``outputs.runs`` and ``outputs.model_store`` are absolute
    (resolved against the directory the command ran in), so the document means the same on a
    worker that runs a detached job.
    """

    doc: dict
    source: str

    @property
    def name(self) -> str:
        return self.doc["name"]

    def data_path(self, date: dt.date | None = None) -> str | None:
        """``data.path`` with ``{date}`` / ``{date:FORMAT}`` filled in (today by default)."""
        path = self.doc["data"].get("path")
        if path is None:
            return None
        return path.format(date=date or dt.date.today())


def load_workflow(path, overrides: list[str] = ()) -> Workflow:
    """Read, override and validate a workflow file.

    Parameters
    ----------
    path : path-like
        The YAML workflow file.
    overrides : list of str
        ``key.path=value`` strings (``--set``); values are read as YAML scalars or lists.

    Raises
    ------
    WorkflowError
        Listing each problem as ``FILE:LINE: key.path: message``.
    """
    source = str(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_WORKFLOW_BYTES + 1)
    except OSError as exc:
        raise WorkflowError(f"{source}: cannot read the workflow file ({exc.strerror})") from None
    if len(raw) > MAX_WORKFLOW_BYTES:
        raise WorkflowError(f"{source}: larger than {MAX_WORKFLOW_BYTES} bytes; a workflow file "
                            "is a page of YAML")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkflowError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    try:
        data, lines = load_with_lines(text, source)
    except DocumentError as exc:
        raise WorkflowError(str(exc)) from None
    if not isinstance(data, dict):
        raise WorkflowError(f"{source}:1: the workflow must be a mapping of sections "
                            f"(name, data, estimator, ...)")
    return validate(data, lines, source, list(overrides))


def validate(data: dict, lines: dict, source: str, overrides: list[str]) -> Workflow:
    from ..models.artifact import registry

    ESTIMATORS = registry()

    origin = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise WorkflowError(f"--set {item!r}: expected KEY=VALUE, e.g. "
                                f"estimator.params.gamma_A=0.01")
        path = tuple(int(p) if p.isdigit() else p for p in key.strip().split("."))
        try:
            parsed = parse_scalar(value)
        except yaml.YAMLError as exc:
            raise WorkflowError(f"--set {item}: the value is not valid YAML ({getattr(exc, 'problem', None) or exc}); "
                                f"quote it, e.g. {key}='\"{value}\"'") from None
        try:
            _assign(data, path, parsed)
        except (TypeError, IndexError, KeyError):
            raise WorkflowError(f"--set {item}: {key} does not name a value in {source}") from None
        origin[path] = f"{source} (--set {item})"

    def where(path) -> str:
        for k in range(len(path), 0, -1):
            if path[:k] in origin:
                return origin[path[:k]]
        for k in range(len(path), -1, -1):
            if path[:k] in lines:
                return f"{source}:{lines[path[:k]]}"
        return source

    schema = workflow_schema(ESTIMATORS, generators())
    validator = jsonschema.Draft202012Validator(schema)
    problems = []
    for err in validator.iter_errors(data):
        for path, message in _describe(err):
            problems.append((where(path), path, message))
    if not problems:
        problems = _semantic_problems(data, ESTIMATORS)
        problems = [(where(path), path, message) for path, message in problems]
    if problems:
        problems.sort(key=lambda p: _line_key(p[0]))
        raise WorkflowError("\n".join(f"{loc}: {format_path(path)}: {msg}"
                                      for loc, path, msg in problems))
    return Workflow(_with_defaults(data), source)


def _line_key(location: str):
    head, _, line = location.rpartition(":")
    return (0, int(line)) if line.isdigit() else (1, location)


def _assign(data: dict, path: tuple, value) -> None:
    node = data
    for part in path[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(part, {})
        else:
            node = node[part]
    node[path[-1]] = value


def _suggest(word, choices) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _renamed_key(path: tuple, key) -> str | None:
    """The name an old key has now (``estimator.params.gamma`` -> ``gamma_A``), or None."""
    from ..models._renames import RENAMED_KEYS, RENAMED_PARAMS

    if path == ("estimator", "params"):
        return RENAMED_PARAMS.get(key)
    return RENAMED_KEYS.get((path[-1] if path else None, key))


def _describe(err: jsonschema.ValidationError):
    """``(path, message)`` pairs for one schema error, worded for a person editing YAML."""
    path = tuple(err.absolute_path)
    inst, v, kind = err.instance, err.validator_value, err.validator
    if kind == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        for key in sorted(set(inst) - set(allowed), key=str):
            new = _renamed_key(path, key)
            if new in allowed:
                yield path + (key,), f"renamed: the key is now {new!r}"
                continue
            yield path + (key,), (f"unknown key{_suggest(key, allowed)}; expected one of: "
                                  f"{', '.join(allowed)}")
        return
    if kind == "required":
        for key in v:
            if key not in inst:
                yield path + (key,), "required key is missing"
        return
    bounds = {"exclusiveMinimum": ">", "minimum": ">=", "exclusiveMaximum": "<",
              "maximum": "<="}
    if kind in bounds:
        msg = f"{inst!r} is not {bounds[kind]} {v}"
    elif kind == "type":
        msg = f"{inst!r} is not of type {v if isinstance(v, str) else ' or '.join(v)}"
    elif kind == "enum":
        msg = f"{inst!r} is not one of {', '.join(map(repr, v))}{_suggest(inst, v)}"
    elif kind == "pattern":
        msg = f"{inst!r} may contain only letters, digits, '_', '.' and '-'"
    elif kind == "minLength":
        msg = "must not be empty"
    elif kind == "uniqueItems":
        msg = f"{inst!r} lists an item twice"
    elif kind == "oneOf":
        msg = f"{inst!r} is not a positive integer or a list of them" + (
            " or 'all'" if path[-1:] == ("labeled",) else "")
    elif kind == "not" and path == ("split",):
        msg = "give labeled or labeled_per_class, not both"
    else:
        msg = err.message
    yield path, msg


def _semantic_problems(data: dict, estimators: dict) -> list:
    """Checks the schema cannot express: the estimator's own parameter checks, path templates,
    and a graph section only for estimators that use one."""
    problems = []
    est = data["estimator"]
    cls = estimators[est["name"]]
    params = est.get("params") or {}
    try:
        cls(**params)._check_params()
    except ValueError as exc:
        text = str(exc)
        # the estimator's checks start with the parameter's name, or (its declared
        # constraints) say "The 'name' parameter of ..."
        named = [p for p in params if text.startswith(p) or f"'{p}' parameter" in text]
        problems.append((("estimator", "params", named[0]) if named else ("estimator", "params"),
                         text))
    from ..models.artifact import is_multiview
    from .views import VIEW_SOURCES, is_views_source

    views = is_views_source(data["data"])
    if views != is_multiview(cls):
        problems.append((("data", "source"), (
            f"{data['data']['source']} gives views; estimator {est['name']} takes one matrix "
            f"(the multi-view ones: CoRLS, CoLapRLS, CoLapSVM, CoMR)") if views else (
            f"estimator {est['name']} takes views: use one of {', '.join(VIEW_SOURCES)}")))
    if "graph" in data and views:
        problems.append((("graph",), "a graph section builds one graph of one matrix; the "
                                     "multi-view estimators build each view's graph in their "
                                     "fit (remove the section)"))
    elif "graph" in data and "graph" not in inspect.signature(cls.fit).parameters:
        problems.append((("graph",), f"estimator {est['name']} does not use a graph; remove "
                                     f"this section or choose a graph-based estimator"))
    checkpoint = params.get("checkpoint")
    if checkpoint and "{" in checkpoint and not (checkpoint.startswith("{run_dir}")
                                                 and "{" not in checkpoint[9:]):
        problems.append((("estimator", "params", "checkpoint"),
                         "only a leading {run_dir} is filled in (the run's directory)"))
    path = data["data"].get("path")
    if path is not None:
        try:
            fields = {f for _, f, _, _ in string.Formatter().parse(path) if f is not None}
            if fields - {"date"}:
                problems.append((("data", "path"), f"unknown template field(s) "
                                 f"{sorted(fields - {'date'})}; only {{date}} is filled in"))
            else:
                path.format(date=dt.date(2000, 1, 1))
        except ValueError as exc:
            problems.append((("data", "path"), f"bad {{date}} template: {exc}"))
    return problems


def _absolute(path: str) -> str:
    return path if "://" in path else str(Path(path).expanduser().resolve())


def _with_defaults(data: dict) -> dict:
    doc = copy.deepcopy(data)
    for section, defaults in DEFAULTS.items():
        merged = copy.deepcopy(defaults)
        for key, value in (doc.get(section) or {}).items():
            if isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key].update(value)
            else:
                merged[key] = value
        doc[section] = merged
    if "labeled_per_class" in doc["split"]:
        doc["split"].pop("labeled")
    doc["estimator"].setdefault("params", {})
    doc["outputs"].setdefault("model_name", doc["name"])
    for key in ("runs", "model_store"):
        doc["outputs"][key] = _absolute(doc["outputs"][key])
    if "path" in doc["data"]:
        doc["data"]["path"] = _absolute(doc["data"]["path"])
    if "paths" in doc["data"]:
        doc["data"]["paths"] = [_absolute(p) for p in doc["data"]["paths"]]
    checkpoint = doc["estimator"]["params"].get("checkpoint")
    if checkpoint and not checkpoint.startswith("{run_dir}"):
        doc["estimator"]["params"]["checkpoint"] = _absolute(checkpoint)
    return doc
