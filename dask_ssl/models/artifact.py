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
import re
import shutil
import stat
import uuid
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .. import __version__
from .._json import json_default
from ._renames import upgrade_document

FORMAT = "dask-ssl-model/1"
#: model.json holds parameters, metrics and per-stage history: megabytes at most. A larger
#: file is not one we wrote, and is refused before it is read into memory.
MAX_DOCUMENT_BYTES = 64 << 20

_URL_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]*@")
_SECRET_KEYS = re.compile(r"storage_options|secret|passw|token|credential|(^|_)key$", re.I)


def redact(value):
    """``value`` with credentials removed: ``user:secret@`` of URLs becomes ``***@`` and the
    values under secret-looking keys (``storage_options``, ``*secret*``, ``*token*``, ...)
    become ``"***"``. For anything written where others read it: model.json, reports, logs."""
    if isinstance(value, str):
        return _URL_CREDENTIALS.sub(r"\g<scheme>***@", value)
    if isinstance(value, dict):
        return {k: "***" if isinstance(k, str) and _SECRET_KEYS.search(k) and v
                else redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value


def _regular_file(path: Path, what: str) -> os.stat_result:
    """lstat of a file a model directory must hold as a plain file (not a link, device, ...)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise ValueError(f"{path} is missing ({what})") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
        raise ValueError(f"{path} is {kind}; a model directory holds its {what} as a plain file")
    return st


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def pack_matrix(prefix: str, M) -> dict:
    """A dense or CSR matrix as plain arrays for ``arrays.npz``: ``{prefix: M}``, or its CSR
    parts ``prefix_data``, ``prefix_indices``, ``prefix_indptr``, ``prefix_shape``."""
    if sp.issparse(M):
        M = sp.csr_matrix(M)
        return {f"{prefix}_data": M.data, f"{prefix}_indices": M.indices,
                f"{prefix}_indptr": M.indptr, f"{prefix}_shape": np.asarray(M.shape)}
    return {prefix: np.asarray(M)}


def unpack_matrix(prefix: str, arrays: dict):
    """The matrix :func:`pack_matrix` stored under ``prefix``."""
    if prefix in arrays:
        return arrays[prefix]
    return sp.csr_matrix((arrays[f"{prefix}_data"], arrays[f"{prefix}_indices"],
                          arrays[f"{prefix}_indptr"]), shape=tuple(arrays[f"{prefix}_shape"]))


def registry() -> dict:
    """Every estimator a model directory may hold, by class name: the single-view ones
    (:data:`dask_ssl.models.ESTIMATORS`) and the multi-view ones
    (:data:`dask_ssl.multiview.ESTIMATORS`, which take a list of views instead of one X)."""
    from ..multiview import ESTIMATORS as MULTIVIEW
    from . import ESTIMATORS

    return {**ESTIMATORS, **MULTIVIEW}


def is_multiview(estimator) -> bool:
    """Whether ``estimator`` (a class or an instance) takes its rows as views."""
    from ..multiview import ESTIMATORS as MULTIVIEW

    cls = estimator if isinstance(estimator, type) else type(estimator)
    return MULTIVIEW.get(cls.__name__) is cls


_registry = registry


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
    return redact(doc)


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
            json.dump(doc, f, indent=2, default=json_default)
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
    if not (path / "model.json").exists() and not (path / "model.json").is_symlink():
        raise ValueError(f"{path} is not a model directory (no model.json)")
    st = _regular_file(path / "model.json", "model.json")
    if st.st_size > MAX_DOCUMENT_BYTES:
        raise ValueError(f"{path}/model.json has {st.st_size} bytes, more than a model "
                         f"document holds ({MAX_DOCUMENT_BYTES})")
    try:
        doc = json.loads((path / "model.json").read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}/model.json is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(f"{path}/model.json has format {found!r}, expected {FORMAT!r}")
    return doc


def _read_arrays(path: Path) -> dict:
    """The arrays of ``arrays.npz``, without pickle: object arrays and any file that is not an
    .npz of plain arrays are refused with the file's name."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            if not hasattr(npz, "files"):
                raise ValueError("a single .npy array, not an .npz archive")
            return {k: npz[k] for k in npz.files}
    except Exception as exc:  # numpy raises ValueError, OSError, zipfile.BadZipFile, ...
        raise ValueError(f"{path} is not an .npz archive of plain arrays (loading never "
                         f"unpickles): {exc}") from None


def load_model(path):
    """Load a model directory written by :func:`save_model`; checksums are verified.

    Nothing in the directory is executed: model.json is JSON, the arrays are read with
    ``allow_pickle=False``, both must be plain files (no links out of the directory), and the
    estimator is looked up by name among dask-ssl's own with its recorded parameters only.
    """
    path = Path(path)
    doc = read_document(path)
    _regular_file(path / "arrays.npz", "arrays")
    expected = (doc.get("checksums") or {}).get("arrays.npz")
    actual = _sha256(path / "arrays.npz")
    if expected != actual:
        raise ValueError(f"{path}/arrays.npz does not match its checksum in model.json "
                         f"(expected {expected}, found {actual})")
    cls = _registry().get(doc.get("estimator"))
    if cls is None:
        raise ValueError(f"{path}: unknown estimator {doc.get('estimator')!r}")
    if isinstance(doc.get("params"), dict):
        # documents written before the one vocabulary hold some parameters under old names
        # or meanings
        doc = upgrade_document(cls, doc)
    params = doc.get("params")
    known = cls().get_params(deep=False)
    if not isinstance(params, dict) or not set(params) <= set(known) - {"client"}:
        raise ValueError(f"{path}/model.json: params must be a mapping of {cls.__name__}'s "
                         f"parameters, got {params!r}")
    est = cls(**params)
    est._restore(_read_arrays(path / "arrays.npz"), doc)
    est.model_document_ = doc
    return est
