"""Model directories: ``model.json`` + ``arrays.npz``, written atomically, loaded without pickle.

A model directory holds everything needed to predict: the estimator name, its hyperparameters,
the fitted arrays (``arrays.npz``, loaded with ``allow_pickle=False``) and fitted scalars, plus
training metadata (objective, timings, data shape, metrics) and a SHA-256 checksum of the
arrays file that :func:`load_model` verifies.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path

import numpy as np

from .. import __version__

FORMAT = "dask-ssl-model/1"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def _registry() -> dict:
    from . import ESTIMATORS

    return ESTIMATORS


def model_document(estimator, *, metrics: dict | None = None, extra: dict | None = None) -> dict:
    """The ``model.json`` content for a fitted estimator (without checksums)."""
    name = type(estimator).__name__
    if name not in _registry():
        raise ValueError(f"{name} is not a dask-ssl estimator that can be saved")
    params = {k: v for k, v in estimator.get_params(deep=False).items() if k != "client"}
    info = estimator._fitted_info()
    doc = {
        "format": FORMAT,
        "estimator": name,
        "library_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "params": params,
        **info,
        "metrics": dict(metrics or {}),
    }
    doc.update(extra or {})
    return doc


def save_model(estimator, path, *, metrics: dict | None = None, extra: dict | None = None) -> Path:
    """Write ``estimator`` to the directory ``path`` atomically and return the path.

    The directory is assembled under a temporary name beside ``path`` and renamed into place,
    so a crash or an error leaves either the previous directory or nothing, never half a model.
    """
    path = Path(path)
    doc = model_document(estimator, metrics=metrics, extra=extra)
    arrays = estimator._fitted_arrays()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        with open(tmp / "arrays.npz", "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        doc["checksums"] = {"arrays.npz": _sha256(tmp / "arrays.npz")}
        with open(tmp / "model.json", "w") as f:
            json.dump(doc, f, indent=2, default=_json_default)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        old = None
        if path.exists():
            old = path.parent / f".{path.name}.old-{uuid.uuid4().hex[:8]}"
            os.rename(path, old)
        os.rename(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def read_document(path) -> dict:
    path = Path(path)
    try:
        doc = json.loads((path / "model.json").read_text())
    except FileNotFoundError:
        raise ValueError(f"{path} is not a model directory (no model.json)") from None
    if doc.get("format") != FORMAT:
        raise ValueError(f"{path}/model.json has format {doc.get('format')!r}, expected {FORMAT!r}")
    return doc


def load_model(path):
    """Load a model directory written by :func:`save_model`; checksums are verified."""
    path = Path(path)
    doc = read_document(path)
    expected = doc.get("checksums", {}).get("arrays.npz")
    actual = _sha256(path / "arrays.npz")
    if expected != actual:
        raise ValueError(f"{path}/arrays.npz does not match its checksum in model.json "
                         f"(expected {expected}, found {actual})")
    cls = _registry().get(doc["estimator"])
    if cls is None:
        raise ValueError(f"{path}: unknown estimator {doc['estimator']!r}")
    est = cls(**doc["params"])
    with np.load(path / "arrays.npz", allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    est._restore(arrays, doc)
    est.model_document_ = doc
    return est
