"""Nightly retraining: one warm-started run per day, promoted only if not worse, rerun-safe.

Each day's outcome is recorded in ``STORE/retrains/DATE.json`` once the run has finished and the
promotion decision is on disk; a second retrain for the same day finds it and does nothing. A
retrain killed before that point left no record, so running it again does the whole day again
(the store's pointer is replaced atomically, so the model served meanwhile is always whole).
Two retrains of the same day at once are refused by a lock the kernel drops if its holder dies.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json

from .runner import new_run, run_workflow, store_for
from .state import now
from .store import write_json_atomic


@contextlib.contextmanager
def _day_lock(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"another retrain for this day holds {path}; wait for it "
                             f"to finish") from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def day_record(doc: dict, date: dt.date) -> dict | None:
    """The recorded outcome of ``date``'s retrain, or None if it has not completed."""
    path = store_for(doc).root / "retrains" / f"{date.isoformat()}.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def retrain(doc: dict, *, date: dt.date, client, progress: bool = True) -> dict:
    """Retrain ``doc`` on ``date``'s data; return the day's record.

    The record has ``date``, ``run_dir``, ``decision`` (version, promoted, reason, metric
    values) and ``skipped`` (True when the day had already been done).
    """
    store = store_for(doc)
    days = store.root / "retrains"
    with _day_lock(days / f".{date.isoformat()}.lock"):
        done = day_record(doc, date)
        if done is not None:
            return {**done, "skipped": True}
        run_dir = new_run(doc, date=date, kind="retrain")
        report = run_workflow(doc, run_dir, client=client, progress=progress,
                              warm_start=doc["retrain"]["warm_start"])
        record = {"date": date.isoformat(), "run_dir": str(run_dir), "finished": now(),
                  "decision": report["model"], "metrics": report["sweep"][-1]["metrics"],
                  "fit_seconds": report["estimator"]["fit_seconds"]}
        write_json_atomic(days / f"{date.isoformat()}.json", record)
    return {**record, "skipped": False}
