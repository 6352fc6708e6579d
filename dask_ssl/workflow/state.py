"""A run directory's ``state.json``: what ``dask-ssl status`` reads while a run goes on elsewhere.

The runner (in this process or as a task on a worker) rewrites the file atomically at each
phase and every few seconds within one, so a reader on shared storage always sees a whole
document: ``status`` (queued, running, finished, failed), the phase, an ``updated`` time that
shows whether the runner is still alive, the steps already done (for ``resume``), and the
result or the error.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from pathlib import Path

from .store import write_json_atomic

STATUSES = ("queued", "running", "finished", "failed")


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class RunState:
    """Read-modify-write access to ``RUN_DIR/state.json``.

    Parameters
    ----------
    run_dir : path-like
    min_interval : float
        Seconds between writes of live progress details (phase changes are always written).
    """

    def __init__(self, run_dir, min_interval: float = 2.0):
        self.path = Path(run_dir) / "state.json"
        self.min_interval = min_interval
        self._lock = threading.Lock()
        self._last = 0.0

    def read(self) -> dict:
        try:
            return json.loads(self.path.read_text())
        except FileNotFoundError:
            raise ValueError(f"{self.path.parent} is not a run directory (no state.json)") from None

    def update(self, **fields) -> dict:
        with self._lock:
            doc = self.read() if self.path.exists() else {}
            doc.update(fields, updated=now())
            write_json_atomic(self.path, doc)
            self._last = time.monotonic()
            return doc

    def progress(self, phase: str, detail: str) -> None:
        """Progress callback: phase starts are written at once, live details at most every
        ``min_interval`` seconds."""
        if detail == "started" or time.monotonic() - self._last >= self.min_interval:
            self.update(phase=phase, detail=detail)

    def step_done(self, step: str, **fields) -> None:
        steps = self.read().get("steps", [])
        self.update(steps=[*steps, step] if step not in steps else steps, **fields)
