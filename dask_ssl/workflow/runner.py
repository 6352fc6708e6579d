"""Running a workflow: read, split, (graph), fit, evaluate, store and promote, report.

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
import inspect
import json
import os
import sys
import time
import traceback
import uuid
from pathlib import Path

import fsspec
import numpy as np

from ..linalg.workers import live_workers
from ..models.artifact import load_model, save_model
from . import metrics as metrics_mod
from . import report as report_mod
from . import sources, split as split_mod
from .outputs import write_outputs
from .progress import Progress
from .state import RunState, now
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


def _sweep_values(split: dict) -> list[tuple[str, object]]:
    key = "labeled_per_class" if "labeled_per_class" in split else "labeled"
    values = split[key]
    return [(key, v) for v in (sorted(values) if isinstance(values, list) else [values])]


def _estimator(doc: dict, run_dir: Path, client):
    from ..models import ESTIMATORS

    params = dict(doc["estimator"]["params"])
    if params.get("checkpoint"):
        params["checkpoint"] = params["checkpoint"].replace("{run_dir}", str(run_dir))
    cls = ESTIMATORS[doc["estimator"]["name"]]
    # the kernel S3VMs gather their rows on the driver and take no client
    if "client" in inspect.signature(cls).parameters:
        params["client"] = client
    return cls(**params, unlabeled=split_mod.UNLABELED)


def _scores(est, blocks) -> np.ndarray:
    return np.asarray(est.decision_function(blocks))


class Run:
    """One execution of a workflow in ``run_dir`` (see :func:`run_workflow`)."""

    def __init__(self, doc, run_dir, client, *, stream, warm_start: bool, resume: bool):
        self.doc = doc
        self.run_dir = Path(run_dir)
        self.client = client
        self.state = RunState(run_dir)
        self.progress = Progress(stream, on_change=self.state.progress)
        self.warm_start = warm_start
        self.resume = resume
        self.steps = self.state.read().get("steps", []) if resume else []
        self.store = store_for(doc)

    def execute(self) -> dict:
        t0 = time.perf_counter()
        doc, out = self.doc, self.doc["outputs"]
        state = self.state.read()
        date = dt.date.fromisoformat(state["date"])
        self.state.update(status="running", started=now(), error=None)
        current = self._current_model()
        with self.progress.phase("read"):
            data = sources.load(doc["data"], _data_path(doc, date), self.client,
                                n_features=current.n_features_in_ if current is not None else None)
            y = data.gather_labels()
        with self._performance_report():
            results = self._fit_all(data, y, current)
            final = results[-1]
            with self.progress.phase("compare"):
                decision = self._decide(final, current)
        if out["predictions"] != "none":
            self._write_predictions(final, data)
        report = self._report(data, results, decision, date, time.perf_counter() - t0)
        self.state.update(status="finished", finished=now(), phase=None, detail=None,
                          result={"metrics": _scalars(final["metrics"]), **decision})
        return report

    # phases ------------------------------------------------------------------------------
    def _current_model(self):
        if self.store.current() is None:
            return None
        return self.store.load()

    def _fit_all(self, data, y, current) -> list[dict]:
        sp = self.doc["split"]
        results = []
        settings = _sweep_values(sp)
        for k, (key, value) in enumerate(settings):
            with self.progress.phase("split"):
                split = split_mod.choose(y, test_fraction=sp["test_fraction"], seed=sp["seed"],
                                         **{key: value})
                train = split_mod.take(data, split.train)
                test = split_mod.take(data, split.test)
            est = self._fit(train, split.train_labels(), current, last=k == len(settings) - 1)
            with self.progress.phase("evaluate"):
                train_scores = _scores(est, train)
                y_train = split.y[split.train]
                # Transductive error: unlabeled training rows whose true label is known.
                hidden = ~split.labeled[split.train] & (y_train != split_mod.UNLABELED)
                m = metrics_mod.evaluate(
                    est, _scores(est, test), split.y[split.test],
                    wanted=self.doc["evaluation"]["metrics"] + [self._metric()],
                    unlabeled_scores=train_scores[hidden], y_unlabeled=y_train[hidden])
            last = k == len(settings) - 1
            results.append({"setting": {key: value}, **split.counts(), "metrics": m,
                            "estimator": est, "test": test if last else None,
                            "y_test": split.y[split.test]})
        return results

    def _fit(self, train, y_train, current, *, last: bool):
        saved = self.run_dir / "model"
        if last and self.resume and "fit" in self.steps and saved.is_dir():
            return load_model(saved)
        est = _estimator(self.doc, self.run_dir, self.client)
        fit_kw = {}
        if self.warm_start and current is not None:
            fit_kw["coef_init"] = current.coef_with_bias()
        if "graph" in self.doc:
            fit_kw["graph"] = self._graph(train)
        checkpoint = getattr(est, "checkpoint", None)
        if self.resume and checkpoint and fsspec.core.url_to_fs(checkpoint)[0].exists(checkpoint):
            # An outer loop interrupted mid-way goes on from its last stage.
            fit_kw["resume"] = True
        with self.progress.phase("fit", counter=lambda: train.round_trips, unit="round trips"):
            est.fit(train, y_train, **fit_kw)
        est.client = None
        if last:
            save_model(est, saved, metrics={})
            self.state.step_done("fit")
        return est

    def _graph(self, train):
        """The weighted kNN graph of the training rows, for estimators whose fit takes one."""
        from ..graph import build_graph, build_knn

        g = self.doc["graph"]
        with self.progress.phase("graph"):
            neigh = build_knn(train, g.get("n_neighbors", 10), metric=g.get("metric", "euclidean"),
                              random_state=g.get("random_state", 0))
            return build_graph(neigh, weights=g.get("weights", "heat"),
                               symmetrize=g.get("symmetrize", "max"))

    def _metric(self) -> str:
        return self.doc["evaluation"]["promote"]["metric"]

    def _decide(self, final: dict, current) -> dict:
        """Store the candidate and promote it unless it is worse than the current model."""
        state = self.state.read()
        if "store" in state.get("steps", []):
            return state["decision"]
        metric = self._metric()
        tol = self.doc["evaluation"]["promote"]["tolerance"]
        est = final["estimator"]
        candidate = final["metrics"][metric]
        current_value, previous = None, self.store.current()
        comparable = current is None or current.n_features_in_ == est.n_features_in_
        if current is not None and comparable:
            current_value = metrics_mod.evaluate(current, _scores(current, final["test"]),
                                                 final["y_test"], wanted=[metric])[metric]
        version = self.store.add(est, metrics=_scalars(final["metrics"]), extra={
            "workflow": self.doc["name"], "run_dir": str(self.run_dir),
            "data": _data_path(self.doc, dt.date.fromisoformat(state["date"])),
            "warm_started_from": previous if self.warm_start and current is not None else None})
        if not comparable:
            ok, reason = False, (f"cannot compare: the current model {previous} has "
                                 f"{current.n_features_in_} features, this data "
                                 f"{est.n_features_in_}; promote by hand if intended")
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
        scores = _scores(est, final["test"] if which == "test" else data)
        write_outputs(str(self.run_dir / f"predictions-{which}.txt"), scores)

    def _report(self, data, results, decision, date, seconds) -> dict:
        final = results[-1]
        est = final["estimator"]
        rep = {
            "workflow": self.doc["name"], "run_dir": str(self.run_dir),
            "run_id": self.run_dir.name, "date": date.isoformat(),
            "parameters": self.doc,
            "data": {"path": _data_path(self.doc, date), "n_rows": data.n_rows,
                     "n_features": data.n_features, "sparse": data.sparse,
                     "n_blocks": data.n_blocks},
            "split": {k: v for k, v in final.items()
                      if k not in ("metrics", "estimator", "test", "y_test")},
            "cluster": {"scheduler": self.client.scheduler.address,
                        "n_workers": len(live_workers(self.client))},
            "estimator": {"name": type(est).__name__, "objective": _jsonable(est.objective_),
                          "n_iter": _jsonable(est.n_iter_),
                          "fit_seconds": getattr(est, "fit_seconds_", None)},
            "metrics": final["metrics"],
            "history": est.history_,
            "sweep": [{"setting": r["setting"], "n_labeled": r["n_labeled"],
                       "metrics": _scalars(r["metrics"])} for r in results],
            "model": {"store": str(self.store.root), **decision},
            "timings": {**{k: round(v, 4) for k, v in self.progress.timings.items()},
                        "total": round(seconds, 4)},
            "versions": report_mod.versions(),
            "files": {},
        }
        if self.doc["outputs"]["plots"]:
            title = f"{self.doc['name']}: {type(est).__name__}"
            for name, made in (
                    ("history", report_mod.plot_history(est.history_, self.run_dir / "history.png", title)),
                    ("sweep", report_mod.plot_sweep(rep["sweep"], self._metric(),
                                                    self.run_dir / "sweep.png", title))):
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


def _scalars(m: dict) -> dict:
    return {k: v for k, v in m.items() if isinstance(v, float)}


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
