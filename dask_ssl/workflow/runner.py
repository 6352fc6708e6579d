"""Running a workflow: its steps (:mod:`.steps`: read, split, graph, fit, scores), then the
outputs of a run: store and promote, predictions, report.

A run lives in its own directory (``RUNS/NAME/RUN_ID``): the resolved workflow
(``workflow.json``), ``state.json`` (see :mod:`.state`), the fitted model (``model/``, so a
resumed run need not fit again), ``report.json``, plots, the Dask performance report and
predictions. The same function runs in the command's process or as a task on a worker
(``--detach``), where it reaches the cluster through the worker's own client.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import json
import os
import sys
import time
import traceback
import uuid
from pathlib import Path

import numpy as np

from ..linalg.workers import live_workers
from ..models.artifact import load_model, save_model
from . import metrics as metrics_mod
from . import report as report_mod
from .outputs import write_outputs
from .progress import Progress
from .state import RunState, now
from .steps import Steps, scalars, scores_of
from .views import width_of
from .store import ModelStore, compare


def store_for(doc: dict) -> ModelStore:
    """The model store a workflow's outputs name: ``MODEL_STORE/MODEL_NAME``."""
    return ModelStore(Path(doc["outputs"]["model_store"]) / doc["outputs"]["model_name"])


def new_run(doc: dict, *, date: dt.date | None = None, kind: str = "run") -> Path:
    """Create ``RUNS/NAME/RUN_ID`` with ``workflow.json`` and a ``queued`` state; return it."""
    run_id = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
    run_dir = Path(doc["outputs"]["runs"]) / doc["name"] / run_id
    run_dir.mkdir(parents=True)
    # The resolved workflow keeps its storage options (a resumed run reads the data again), so
    # it is the one file of a run with credentials: readable by its owner only.
    fd = os.open(run_dir / "workflow.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(doc, indent=2) + "\n")
    RunState(run_dir).update(run_id=run_id, workflow=doc["name"], kind=kind, status="queued",
                             date=(date or dt.date.today()).isoformat(), created=now(), steps=[])
    return run_dir


def read_run(run_dir) -> tuple[dict, dict]:
    """``(workflow document, state)`` of a run directory."""
    run_dir = Path(run_dir)
    state = RunState(run_dir).read()
    return json.loads((run_dir / "workflow.json").read_text()), state


class Run(Steps):
    """One execution of a workflow in ``run_dir`` (see :func:`run_workflow`): the workflow's
    steps, then its outputs (model store and promotion, predictions, report, state)."""

    def __init__(self, doc, run_dir, client, *, stream, warm_start: bool, resume: bool):
        self.run_dir = Path(run_dir)
        self.state = RunState(run_dir)
        super().__init__(doc, client, Progress(stream, on_change=self.state.progress),
                         resume=resume)
        self.warm_start = warm_start
        state = self.state.read()
        self.steps = state.get("steps", []) if resume else []
        self.store = store_for(doc)
        self.date = dt.date.fromisoformat(state["date"])

    def execute(self) -> dict:
        t0 = time.perf_counter()
        self.state.update(status="running", started=now(), error=None)
        current = self._current_model()
        data = self.read(n_features=width_of(current) if current is not None else None)
        with self._performance_report():
            results = self.fit_all(data, start_from=current if self.warm_start else None)
            final = results[-1]
            with self.progress.phase("compare"):
                decision = self._decide(data, final, current)
        if self.doc["outputs"]["predictions"] != "none":
            self._write_predictions(final, data)
        report = self._report(data, results, decision, time.perf_counter() - t0)
        self.state.update(status="finished", finished=now(), phase=None, detail=None,
                          result={"metrics": scalars(final["metrics"]), **decision})
        return report

    # the steps, in a run directory ----------------------------------------------------------
    def data_path(self) -> str | None:
        return _data_path(self.doc, self.date) or self.doc["data"].get("paths")

    def estimator_params(self) -> dict:
        params = super().estimator_params()
        if params.get("checkpoint"):
            params["checkpoint"] = params["checkpoint"].replace("{run_dir}", str(self.run_dir))
        return params

    def fitted_before(self):
        saved = self.run_dir / "model"
        if self.resume and "fit" in self.steps and saved.is_dir():
            return load_model(saved)
        return None

    def fitted(self, est) -> None:
        # A resumed run need not fit again.
        save_model(est, self.run_dir / "model", metrics={})
        self.state.step_done("fit")

    # outputs --------------------------------------------------------------------------------
    def _current_model(self):
        if self.store.current() is None:
            return None
        return self.store.load()

    def _metric(self) -> str:
        return self.doc["evaluation"]["promote"]["metric"]

    def _decide(self, data, final: dict, current) -> dict:
        """Store the candidate and promote it unless it is worse than the current model."""
        state = self.state.read()
        if "store" in state.get("steps", []):
            return state["decision"]
        metric = self._metric()
        tol = self.doc["evaluation"]["promote"]["tolerance"]
        est = final["estimator"]
        # None when there are no held-out rows to measure it on (test_fraction: 0)
        candidate = final["metrics"].get(metric)
        current_value, previous = None, self.store.current()
        comparable = current is None or width_of(current) == width_of(est)
        if current is not None and comparable and candidate is not None:
            current_value = metrics_mod.evaluate(current, scores_of(current, final["test"]),
                                                 final["y_test"], wanted=[metric])[metric]
        metrics, extra = self.model_fields(data, final)
        version = self.store.add(est, metrics=metrics, extra={
            **extra, "workflow": self.doc["name"], "run_dir": str(self.run_dir),
            "warm_started_from": previous if self.warm_started else None})
        if not comparable:
            ok, reason = False, (f"cannot compare: the current model {previous} has "
                                 f"{width_of(current)} features, this data "
                                 f"{width_of(est)}; promote by hand if intended")
        elif candidate is None and current is not None:
            ok, reason = False, (f"cannot compare: no held-out rows to measure {metric} on "
                                 f"(split.test_fraction is 0); promote by hand if intended")
        else:
            ok, reason = compare(metric, candidate, current_value, tol)
        decision = {"version": version, "promoted": ok, "reason": reason, "metric": metric,
                    "candidate": candidate, "current": current_value, "previous": previous}
        if ok:
            self.store.promote(version, reason=reason, metric=metric, value=candidate,
                               run=str(self.run_dir))
        else:
            self.store.log({"action": "refuse", "version": version, "current": previous,
                            "reason": reason, "run": str(self.run_dir)})
        self.state.step_done("store", decision=decision)
        return decision

    @contextlib.contextmanager
    def _performance_report(self):
        if not self.doc["outputs"]["performance_report"]:
            yield
            return
        from distributed import performance_report

        with performance_report(filename=str(self.run_dir / "dask-performance.html")):
            yield

    def _write_predictions(self, final: dict, data) -> None:
        est = final["estimator"]
        which = self.doc["outputs"]["predictions"]
        if which == "test":
            scores = scores_of(est, final["test"]) if final["test"] is not None else []
        elif final["test"] is None:  # no held-out rows: every row was a training row
            scores = final["train_scores"]
        else:
            scores = scores_of(est, data.blocks)
        write_outputs(str(self.run_dir / f"predictions-{which}.txt"), scores)

    def _report(self, data, results, decision, seconds) -> dict:
        final = results[-1]
        est = final["estimator"]
        blocks = data.blocks
        rep = {
            "workflow": self.doc["name"], "run_dir": str(self.run_dir),
            "run_id": self.run_dir.name, "date": self.date.isoformat(),
            "parameters": self.doc,
            "data": {"path": data.path, "n_rows": blocks.n_rows,
                     "n_features": blocks.n_features, "sparse": blocks.sparse,
                     "n_blocks": blocks.n_blocks},
            "split": {"setting": final["setting"], **final["counts"]},
            "cluster": {"scheduler": self.client.scheduler.address,
                        "n_workers": len(live_workers(self.client))},
            # the multi-view estimators solve in closed form: no objective or iterations kept
            "estimator": {"name": type(est).__name__,
                          "objective": _jsonable(getattr(est, "objective_", None)),
                          "n_iter": _jsonable(getattr(est, "n_iter_", None)),
                          "fit_seconds": getattr(est, "fit_seconds_", None)},
            "metrics": final["metrics"],
            "history": getattr(est, "history_", []),
            "selection": getattr(est, "selection_", []),
            "graph_selection": getattr(est, "graph_selection_", []),
            "sweep": [{"setting": r["setting"], "n_labeled": r["counts"]["n_labeled"],
                       "metrics": scalars(r["metrics"])} for r in results],
            "model": {"store": str(self.store.root), **decision},
            "timings": {**{k: round(v, 4) for k, v in self.progress.timings.items()},
                        "total": round(seconds, 4)},
            "versions": report_mod.versions(),
            "files": {},
        }
        if self.doc["outputs"]["plots"]:
            title = f"{self.doc['name']}: {type(est).__name__}"
            for name, made in (
                    ("history", report_mod.plot_history(rep["history"], self.run_dir / "history.png", title)),
                    ("sweep", report_mod.plot_sweep(rep["sweep"], self._metric(),
                                                    self.run_dir / "sweep.png", title)),
                    ("selection", report_mod.plot_selection(rep["selection"],
                                                            self.run_dir / "selection.png",
                                                            title)),
                    ("graph_selection", report_mod.plot_selection(
                        rep["graph_selection"], self.run_dir / "graph-selection.png",
                        f"{title}: the graph"))):
                if made is not None:
                    rep["files"][name] = made.name
        for name in ("dask-performance.html", "predictions-test.txt", "predictions-all.txt"):
            if (self.run_dir / name).exists():
                rep["files"][name.split(".")[0]] = name
        report_mod.write_report(self.run_dir, rep)
        return rep


def _data_path(doc: dict, date: dt.date) -> str | None:
    path = doc["data"].get("path")
    return None if path is None else path.format(date=date)


def _jsonable(value):
    return value.tolist() if isinstance(value, np.ndarray) else value


def run_workflow(doc: dict, run_dir, *, client=None, progress: bool = True,
                 warm_start: bool = False, resume: bool = False) -> dict:
    """Execute the workflow ``doc`` in ``run_dir`` (made by :func:`new_run`); return the report.

    ``progress`` shows the phases on standard error; ``warm_start`` starts the fit from the
    promoted model's weights; ``resume`` skips the steps ``state.json`` records as done.

    The state file ends ``finished`` or ``failed`` (with the error and traceback); the error is
    raised again for the caller.
    """
    from ..cluster import get_client

    client = get_client(client)
    run = Run(doc, run_dir, client, stream=sys.stderr if progress else None,
              warm_start=warm_start, resume=resume)
    try:
        # Library code (distributed.wait, performance_report) looks for the current client;
        # the one a command starts is not the process default.
        with client.as_current():
            return run.execute()
    except BaseException as exc:
        run.state.update(status="failed", finished=now(), error=f"{type(exc).__name__}: {exc}",
                         traceback=traceback.format_exc())
        raise
    finally:
        # The run's data leaves the workers now, not at some later garbage collection: a
        # reference cycle through this call's frames (exceptions caught below it keep their
        # tracebacks, e.g. matplotlib's first import) holds its blocks' futures, and a
        # long-lived driver (retrain() night after night) kept a finished day's data so.
        del run
        gc.collect()


def detached_task(doc: dict, run_dir: str, warm_start: bool, resume: bool) -> str:
    """The task ``--detach`` submits: the whole run, on a worker, through its own client."""
    from distributed import worker_client

    # worker_client secedes this task from the worker's thread pool, so the run's own tasks can
    # use the thread it would otherwise hold for its whole length.
    with worker_client() as client:
        run_workflow(doc, run_dir, client=client, progress=False, warm_start=warm_start,
                     resume=resume)
    return run_dir
