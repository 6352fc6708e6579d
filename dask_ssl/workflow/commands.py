"""The workflow subcommands of ``dask-ssl``: run, status, resume, retrain, datasets, models."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import sys
import time
from pathlib import Path

from .fit import is_fit_checkpoint, resume_fit
from .metrics import format_table
from .session import cluster_args, connect
from .spec import load_workflow
from .store import ModelStore

#: Seconds ``run --detach`` waits for the cluster to start the run before leaving it queued.
DETACH_WAIT = 20.0


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {text!r}") from None


@contextlib.contextmanager
def _connected(args):
    """The command's client; one made for ``--scheduler`` is closed after the command (a
    LocalCluster's client is closed at exit by :mod:`dask_ssl.cluster`)."""
    client = connect(args)
    if args.scheduler is None:
        yield client
        return
    print(f"dask-ssl: connected to {args.scheduler}, dashboard {client.dashboard_link}",
          file=sys.stderr)
    try:
        yield client
    finally:
        client.close()


def _summary(report: dict) -> str:
    model = report["model"]
    verdict = "promoted" if model["promoted"] else "NOT promoted"
    lines = [f"dask-ssl: {report['workflow']}: {report['estimator']['name']} on "
             f"{report['data']['n_rows']} x {report['data']['n_features']} "
             f"({report['split']['n_labeled']} labeled, {report['split']['n_test']} test rows) "
             f"in {report['timings']['total']:.1f} s",
             format_table(report["metrics"]),
             f"model {model['version']} {verdict}: {model['reason']}",
             f"model store: {model['store']}",
             f"report: {Path(report['run_dir']) / 'report.json'}"]
    return "\n".join(lines)


# run / resume ------------------------------------------------------------------------------
def _submit(client, doc: dict, run_dir: Path, *, warm_start=False, resume=False) -> None:
    from distributed import fire_and_forget

    from .runner import detached_task
    from .state import RunState

    fut = client.submit(detached_task, doc, str(run_dir), warm_start, resume, pure=False,
                        key=f"dask-ssl-{'resume' if resume else 'run'}-{run_dir.name}-"
                            f"{time.time_ns()}")
    fire_and_forget(fut)
    state = RunState(run_dir)
    deadline = time.monotonic() + DETACH_WAIT
    while state.read()["status"] == "queued" and time.monotonic() < deadline:
        time.sleep(0.2)
    status = state.read()["status"]
    print(f"dask-ssl: run {run_dir.name} {status} on the cluster; the run goes on without this "
          f"process.\n  follow it with: dask-ssl status {run_dir}", file=sys.stderr)
    print(run_dir)


def _check_detach(args) -> None:
    if args.detach_run and args.scheduler is None:
        raise ValueError("--detach needs --scheduler: a LocalCluster ends with this process")


def cmd_run(args) -> int:
    from .runner import new_run, run_workflow

    _check_detach(args)
    wf = load_workflow(args.workflow, args.set)
    with _connected(args) as client:
        run_dir = new_run(wf.doc, date=args.date)
        print(f"dask-ssl: run {run_dir}", file=sys.stderr)
        if args.detach_run:
            _submit(client, wf.doc, run_dir)
            return 0
        report = run_workflow(wf.doc, run_dir, client=client)
    print(_summary(report))
    return 0


def cmd_resume(args) -> int:
    from .estimators import build_estimator
    from .runner import read_run, run_workflow

    target = Path(args.target)
    if is_fit_checkpoint(target):
        return resume_fit(target, args)
    if not (target / "state.json").is_file():
        raise ValueError(f"{target} is neither a run directory nor a 'dask-ssl fit' checkpoint")
    _check_detach(args)
    run_dir = target.resolve()
    doc, state = read_run(run_dir)
    # the run's fit does not check its parameters (they were, when the run was made): check
    # them again here, before any work, in case workflow.json changed since
    estimator = doc["estimator"]
    build_estimator(estimator["name"], estimator.get("params") or {})._check_params()
    if state["status"] == "finished":
        print(f"dask-ssl: run {run_dir.name} already finished; nothing to resume")
        return 0
    print(f"dask-ssl: resuming {run_dir} ({state['status']}; steps done: "
          f"{', '.join(state.get('steps', [])) or 'none'})", file=sys.stderr)
    warm = state.get("kind") == "retrain" and doc["retrain"]["warm_start"]
    with _connected(args) as client:
        if args.detach_run:
            _submit(client, doc, run_dir, warm_start=warm, resume=True)
            return 0
        report = run_workflow(doc, run_dir, client=client, warm_start=warm, resume=True)
    print(_summary(report))
    return 0


# status ------------------------------------------------------------------------------------
#: A running run rewrites its state every few seconds; silence this long suggests it died.
STALE_SECONDS = 120


def _seconds_since(stamp: str) -> float:
    return (dt.datetime.now(dt.timezone.utc) - dt.datetime.fromisoformat(stamp)).total_seconds()


def _show_state(run_dir: Path, state: dict) -> None:
    print(f"run {state.get('run_id', run_dir.name)} ({state.get('workflow')}, {state.get('kind')}, "
          f"data of {state.get('date')}): {state['status']}")
    print(f"  directory: {run_dir}")
    if state["status"] in ("queued", "running"):
        print(f"  phase: {state.get('phase') or '-'} {state.get('detail') or ''}".rstrip())
        age = _seconds_since(state["updated"])
        print(f"  last update: {age:.0f} s ago")
        if state["status"] == "running" and age > STALE_SECONDS:
            print(f"  no news for {age / 60:.0f} min: the runner may have died "
                  f"(resume with: dask-ssl resume {run_dir})")
    if state.get("steps"):
        print(f"  steps done: {', '.join(state['steps'])}")
    result = state.get("result")
    if result:
        print(f"  model {result['version']}: {'promoted' if result['promoted'] else 'NOT promoted'}"
              f" ({result['reason']})")
        for k, v in result["metrics"].items():
            print(f"  {k:<16} {v:.6g}")
    if state.get("error"):
        print(f"  error: {state['error']}")


def cmd_status(args) -> int:
    from .state import RunState

    target = Path(args.target) if args.target else Path(args.runs)
    if (target / "state.json").is_file():
        state = RunState(target).read()
        if args.json:
            print(json.dumps(state, indent=2))
        else:
            _show_state(target.resolve(), state)
        return 1 if state["status"] == "failed" else 0
    runs = sorted(target.glob("*/*/state.json")) + sorted(target.glob("*/state.json"))
    if not runs:
        raise ValueError(f"no runs under {target}")
    latest = {}
    for path in runs:
        state = json.loads(path.read_text())
        latest[state.get("workflow")] = (path.parent, state)
    for run_dir, state in latest.values():
        _show_state(run_dir, state)
    return 0


# retrain -----------------------------------------------------------------------------------
def cmd_retrain(args) -> int:
    from .retrain import retrain

    wf = load_workflow(args.workflow, args.set)
    date = args.date or dt.date.today()
    with _connected(args) as client:
        record = retrain(wf.doc, date=date, client=client)
    decision = record["decision"]
    if record["skipped"]:
        print(f"dask-ssl: {wf.name} was already retrained for {date}: nothing to do "
              f"(model {decision['version']} "
              f"{'promoted' if decision['promoted'] else 'not promoted'}; run {record['run_dir']})")
        return 0
    print(f"dask-ssl: retrain of {wf.name} for {date}: model {decision['version']} "
          f"{'promoted' if decision['promoted'] else 'NOT promoted'}: {decision['reason']}")
    for k, v in record["metrics"].items():
        print(f"  {k:<16} {v:.6g}")
    print(f"  run: {record['run_dir']}")
    return 0


# datasets ----------------------------------------------------------------------------------
def cmd_datasets(args) -> int:
    from ..data import DATASETS
    from .schema import DATA_SOURCES, keyword_params
    from .sources import generators

    print("readers (data.source: KIND; data.path: a file, a glob or an fsspec URL):")
    for kind, spec in DATA_SOURCES.items():
        if kind not in ("generator", "multiview_generator"):
            print(f"  {kind:<10} keys: {', '.join(spec['properties'])}")
    print("generators (data.source: generator; data.name: NAME; data.params: {...}):")
    for name, fn in sorted(generators().items()):
        print(f"  {name:<10} {DATASETS[name].description}\n"
              f"  {'':<10} params: {', '.join(keyword_params(fn))}")
    from .views import generator_params, view_generators

    print("multi-view generators (data.source: multiview_generator; data.name: NAME; "
          "data.params: {...}):")
    for name in sorted(view_generators()):
        print(f"  {name:<10} params: {', '.join(generator_params(name))}")
    return 0


# models ------------------------------------------------------------------------------------
def _store(args) -> ModelStore:
    root = Path(args.store) / args.name
    if not root.is_dir():
        raise ValueError(f"no model named {args.name!r} in {args.store}")
    return ModelStore(root)


def _metrics_text(metrics: dict) -> str:
    return " ".join(f"{k}={v:.4g}" for k, v in metrics.items() if isinstance(v, (int, float)))


def cmd_models_list(args) -> int:
    if args.name is None:
        names = sorted(p.parent.name for p in Path(args.store).glob("*/versions"))
        if not names:
            print(f"no models in {args.store}")
        for name in names:
            store = ModelStore(Path(args.store) / name)
            print(f"{name:<24} current: {store.current() or '-'} "
                  f"({len(store.versions())} versions)")
        return 0
    for v in _store(args).versions():
        mark = "*" if v["current"] else " "
        print(f"{mark} {v['version']}  {v['created']}  {v['estimator']}  {_metrics_text(v['metrics'])}")
    return 0


def cmd_models_show(args) -> int:
    store = _store(args)
    version = args.version or store.current()
    if version is None:
        raise ValueError(f"{args.name} has no promoted model; give a version")
    doc = store.document(version)
    print(f"{args.name} {version}{' (current)' if version == store.current() else ''}")
    print(f"  path: {store.path(version)}")
    for key in ("estimator", "created", "library_version", "n_features", "data_shape",
                "n_labeled", "objective", "fit_seconds", "workflow", "data", "warm_started_from"):
        if key in doc:
            print(f"  {key}: {doc[key]}")
    print(f"  params: {json.dumps(doc.get('params', {}))}")
    print(f"  metrics: {_metrics_text(doc.get('metrics', {}))}")
    history = store.pointer()["history"]
    if history:
        print("  promotions:")
        for h in history:
            print(f"    {h['at']} {h['action']:<8} {h['version']}  {h['reason']}")
    return 0


def cmd_models_promote(args) -> int:
    record = _store(args).promote(args.version, reason=args.reason)
    print(f"{args.name}: {record['version']} promoted (was {record['previous']})")
    return 0


def cmd_models_rollback(args) -> int:
    record = _store(args).rollback(reason=args.reason)
    print(f"{args.name}: rolled back from {record['previous']} to {record['version']}")
    return 0


# registration ------------------------------------------------------------------------------
def register(sub) -> None:
    """Add the workflow subcommands to the ``dask-ssl`` subparsers."""
    def workflow_args(p):
        p.add_argument("workflow", metavar="WORKFLOW", help="workflow file (YAML)")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override a value, e.g. --set estimator.params.gamma_A=0.01")
        p.add_argument("--date", type=_date, help="data date for {date} in paths (default today)")
        cluster_args(p)

    run = sub.add_parser("run", help="run a workflow file")
    workflow_args(run)
    # dest is not "detach": cli.main routes any args.detach to `fit --detach`.
    run.add_argument("--detach", dest="detach_run", action="store_true",
                     help="run as a task on the cluster and return; follow with `status`")
    run.set_defaults(func=cmd_run)

    status = sub.add_parser("status", help="state of a run (or the latest run of each workflow)")
    status.add_argument("target", nargs="?", metavar="RUN_DIR")
    status.add_argument("--runs", default="runs", help="runs directory to list (default ./runs)")
    status.add_argument("--json", action="store_true", help="print the state file")
    status.set_defaults(func=cmd_status)

    resume = sub.add_parser("resume", help="finish an interrupted workflow run (RUN_DIR) or "
                                           "`fit --checkpoint` (its checkpoint directory)")
    resume.add_argument("target", metavar="RUN_DIR|CHECKPOINT")
    resume.add_argument("--detach", dest="detach_run", action="store_true",
                        help="resume as a task on the cluster and return")
    cluster_args(resume)
    resume.set_defaults(func=cmd_resume)

    retrain = sub.add_parser("retrain", help="warm-started retrain on a day's data, promoted "
                                             "only if not worse; safe to rerun")
    workflow_args(retrain)
    retrain.set_defaults(func=cmd_retrain)

    datasets = sub.add_parser("datasets", help="list data readers and generators")
    datasets.set_defaults(func=cmd_datasets)

    models = sub.add_parser("models", help="list, show, promote or roll back stored models")
    msub = models.add_subparsers(dest="models_command", required=True)

    def action(name, func, help, *positionals, reason=None):
        p = msub.add_parser(name, help=help)
        for arg, nargs in positionals:
            p.add_argument(arg, nargs=nargs)
        if reason is not None:
            p.add_argument("--reason", default=reason)
        p.add_argument("--store", default="models", help="model store directory (default ./models)")
        p.set_defaults(func=func)

    action("list", cmd_models_list, "model names, or the versions of one", ("name", "?"))
    action("show", cmd_models_show, "one version (the current one by default)",
           ("name", None), ("version", "?"))
    action("promote", cmd_models_promote, "make a version current, unconditionally",
           ("name", None), ("version", None), reason="promoted by hand")
    action("rollback", cmd_models_rollback, "return to the previously promoted version",
           ("name", None), reason="rolled back by hand")
