"""A versioned model store: immutable model directories and one atomically replaced pointer.

Layout of a store for one model name::

    ROOT/versions/VERSION/      model.json + arrays.npz (see dask_ssl.models.artifact)
    ROOT/current.json           the promoted version, the promotion stack and its history
    ROOT/events.jsonl           every decision, refusals included (append-only log)

``current.json`` is the single source of truth and is only ever replaced by ``os.replace`` of a
complete file, so a process killed at any moment leaves either the old pointer or the new one,
and both name a complete, checksummed model directory (versions are written before they are
pointed at, and never changed after). The promotion history lives in the same file as the
pointer so the two cannot disagree.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import uuid
from pathlib import Path

from ..models.artifact import load_model, read_document, redact, save_model
from .schema import METRICS


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def write_json_atomic(path: Path, doc) -> None:
    """Write ``doc`` as JSON to ``path`` by writing a temporary file and renaming it over."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2, default=str)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dirfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dirfd)
    finally:
        os.close(dirfd)


def compare(metric: str, candidate: float, current: float | None, tolerance: float) -> tuple[bool, str]:
    """Whether a candidate may replace the current model, and why.

    The candidate is promoted unless it is worse than the current model by more than
    ``tolerance`` (absolute, in the metric's units) on the same validation rows.
    """
    if current is None:
        return True, "no current model"
    higher = METRICS[metric]
    worse_by = (current - candidate) if higher else (candidate - current)
    if worse_by > tolerance:
        return False, (f"validation {metric} {candidate:.6g} is worse than the current model's "
                       f"{current:.6g} by {worse_by:.3g} (tolerance {tolerance:g})")
    return True, (f"validation {metric} {candidate:.6g} vs current {current:.6g} "
                  f"(tolerance {tolerance:g})")


class ModelStore:
    """Versions of one model, the promoted one, and how it got there.

    Parameters
    ----------
    root : path-like
        The store directory for one model name (created on first write).
    """

    def __init__(self, root):
        self.root = Path(root)

    # paths -------------------------------------------------------------------------------
    @property
    def versions_dir(self) -> Path:
        return self.root / "versions"

    def path(self, version: str) -> Path:
        """The directory of ``version``: a plain name directly under ``versions/`` (no ``/``,
        no ``..``, no link leading out of the store), which holds a model.json."""
        if not isinstance(version, str) or not version or version.startswith(".") \
                or "/" in version or "\\" in version or "\0" in version:
            raise ValueError(f"{self.root}: {version!r} is not a version name (no '/', '..' "
                             "or leading '.')")
        p = self.versions_dir / version
        if p.is_symlink() or (p.exists() and p.resolve().parent != self.versions_dir.resolve()):
            raise ValueError(f"{p} is a link; a store's versions are directories inside it")
        if not (p / "model.json").is_file():
            raise ValueError(f"{self.root}: no version {version!r} (see `dask-ssl models list`)")
        return p

    # reading -----------------------------------------------------------------------------
    def pointer(self) -> dict:
        """The content of ``current.json``: ``version``, ``stack`` and ``history``."""
        try:
            return json.loads((self.root / "current.json").read_text())
        except FileNotFoundError:
            return {"version": None, "stack": [], "history": []}

    def current(self) -> str | None:
        """The promoted version, or None when nothing was promoted yet."""
        return self.pointer()["version"]

    def versions(self) -> list[dict]:
        """Every stored version, oldest first: ``version``, ``created``, ``metrics``, ``current``."""
        if not self.versions_dir.is_dir():
            return []
        current = self.current()
        out = []
        for d in self.versions_dir.iterdir():
            if d.name.startswith(".") or d.is_symlink() or not (d / "model.json").is_file():
                continue  # a temporary directory of a save that did not finish
            doc = read_document(d)
            out.append({"version": d.name, "created": doc.get("created"),
                        "estimator": doc.get("estimator"), "metrics": doc.get("metrics", {}),
                        "current": d.name == current})
        return sorted(out, key=lambda r: r["version"])

    def document(self, version: str | None = None) -> dict:
        version = version or self._require_current()
        return read_document(self.path(version))

    def load(self, version: str | None = None):
        """The estimator of ``version`` (the promoted one by default), checksums verified."""
        return load_model(self.path(version or self._require_current()))

    def events(self) -> list[dict]:
        try:
            text = (self.root / "events.jsonl").read_text()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def _require_current(self) -> str:
        version = self.current()
        if version is None:
            raise ValueError(f"{self.root}: no promoted model yet")
        return version

    # writing -----------------------------------------------------------------------------
    def add(self, estimator, *, metrics: dict | None = None, extra: dict | None = None) -> str:
        """Save a fitted estimator as a new version (not promoted); return its version id."""
        # Sortable by time to the microsecond: the order of versions is the order of saves.
        t = dt.datetime.now(dt.timezone.utc)
        version = f"{t:%Y%m%dT%H%M%S}.{t.microsecond:06d}"
        save_model(estimator, self.versions_dir / version, metrics=metrics, extra=extra)
        return version

    def log(self, event: dict) -> None:
        """Append a decision to ``events.jsonl`` (informational; ``current.json`` decides)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / "events.jsonl", "a") as f:
            f.write(json.dumps(redact({"at": _now(), **event}), default=str) + "\n")

    @contextlib.contextmanager
    def _locked(self):
        # Two retrains finishing together must not both read the old pointer and each write
        # their own; flock is released by the kernel if the holder dies.
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def promote(self, version: str, *, reason: str, **details) -> dict:
        """Point ``current.json`` at ``version`` (one atomic rename); return the history record."""
        self.path(version)
        with self._locked():
            ptr = self.pointer()
            record = {"action": "promote", "version": version, "previous": ptr["version"],
                      "at": _now(), "reason": reason, **details}
            ptr = {"version": version, "stack": [*ptr["stack"], version],
                   "history": [*ptr["history"], record]}
            write_json_atomic(self.root / "current.json", ptr)
        self.log(record)
        return record

    def rollback(self, *, reason: str = "rolled back by hand") -> dict:
        """Return to the version promoted before the current one; return the history record."""
        with self._locked():
            ptr = self.pointer()
            if len(ptr["stack"]) < 2:
                raise ValueError(f"{self.root}: nothing to roll back to "
                                 f"({len(ptr['stack'])} promotion(s) on record)")
            stack = ptr["stack"][:-1]
            record = {"action": "rollback", "version": stack[-1], "previous": ptr["version"],
                      "at": _now(), "reason": reason}
            write_json_atomic(self.root / "current.json",
                              {"version": stack[-1], "stack": stack,
                               "history": [*ptr["history"], record]})
        self.log(record)
        return record
