"""The ``dask-ssl`` command."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np

from . import __version__

ALGORITHMS = {"rls": "RLS", "svm": "L2SVM", "tsvm": "TSVM", "da": "DAS3VM", "laprls": "LapRLS",
              "lapsvm": "LapSVM"}
#: Flags of ``fit`` that become estimator parameters, where the estimator has them.
ESTIMATOR_FLAGS = ("gamma", "gamma_u", "pos_fraction", "max_switches", "checkpoint", "gamma_A",
                   "gamma_I", "kernel", "kernel_params", "n_neighbors", "p", "loss")


class CLIError(Exception):
    """A user-facing error: printed as ``dask-ssl: error: ...`` with exit status 2."""


def _cluster_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, metavar="N",
                   help="start a LocalCluster with N single-threaded workers (default 2)")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="connect to a running scheduler (tcp://host:port or tls://host:port)")


def connect(args):
    """The client the command runs on; prints the dashboard of a LocalCluster it starts."""
    from .cluster import get_client

    if args.workers is not None and args.workers < 1:
        raise CLIError(f"--workers must be at least 1, got {args.workers}")
    # Neither flag: the current client when the command runs in a process that has one (tests,
    # notebooks), else a LocalCluster of 2 workers as from a shell.
    client = get_client(scheduler=args.scheduler, n_workers=args.workers)
    if args.scheduler is None:
        print(f"dask-ssl: LocalCluster with {len(client.scheduler_info()['workers'])} workers, "
              f"dashboard {client.dashboard_link}", file=sys.stderr)
    return client


def read_data(path: str, fmt: str, client, n_features=None, encoding=None):
    """Read a training or prediction file into row blocks with labels (0 = unlabeled).

    Returns ``(blocks, encoding)``: for KDD99 CSV the column encoding (categories, maxima) that
    a prediction file must be read with, as a dict for ``model.json``; None for svmlight.
    """
    from .data.svmlight import read_svmlight

    if fmt == "auto":
        fmt = "kdd99" if "kddcup" in Path(path).name else "svmlight"
    if fmt == "svmlight":
        return read_svmlight(path, client=client, n_features=n_features), None
    if fmt == "kdd99":
        from .data.kdd99 import KDD99Encoding, read_kdd99

        given = None if encoding is None else KDD99Encoding.from_dict(encoding)
        blocks, enc = read_kdd99(path, client=client, encoding=given, return_encoding=True)
        return blocks, enc.to_dict()
    raise CLIError(f"unknown data format {fmt!r}")


def make_estimator(args):
    """The estimator the flags describe, its parameters checked before any data is read."""
    from . import models

    cls = getattr(models, ALGORITHMS[args.algorithm])
    accepted = cls().get_params()
    params = {"unlabeled": 0}
    for flag in ESTIMATOR_FLAGS:
        value = getattr(args, flag, None)
        if value is None:
            continue
        if flag not in accepted:
            raise CLIError(f"--{flag.replace('_', '-')} does not apply to --algorithm {args.algorithm}")
        params[flag] = value
    if "verbose" in accepted:
        params["verbose"] = sys.stderr.isatty() or args.verbose
    est = cls(**params)
    est._check_params()
    return est


def hide_labels(blocks, n_labeled: int, seed: int) -> np.ndarray:
    """Training labels with all but a stratified ``n_labeled`` of them set to 0 (unlabeled)."""
    from .data.splits import stratified_split

    y = blocks.gather_labels()
    known = np.flatnonzero(y != 0)
    split = stratified_split(y[known], n_labeled=n_labeled, seed=seed)
    out = np.zeros_like(y)
    out[known[split.labeled]] = y[known[split.labeled]]
    return out


def write_outputs(path: str, scores) -> None:
    """One decision value per input row, in input order (multi-class: one column per class)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    np.savetxt(tmp, np.asarray(scores), fmt="%.10g")
    tmp.replace(path)


JOB_FILE = "job.json"


def cmd_fit(args, *, resume: bool = False) -> int:
    """Train, save the model directory, write outputs. With ``--checkpoint`` the invocation is
    recorded beside the stage checkpoints so that ``dask-ssl resume DIR`` can finish it."""
    from .models.artifact import save_model

    est = make_estimator(args)
    if args.checkpoint and not resume:
        ckpt = Path(args.checkpoint)
        ckpt.mkdir(parents=True, exist_ok=True)
        (ckpt / JOB_FILE).write_text(json.dumps(job_arguments(args), indent=2))
    client = connect(args)
    est.client = client
    blocks, encoding = read_data(args.data, args.format, client)
    y = hide_labels(blocks, args.labeled, args.seed) if args.labeled else blocks.gather_labels()
    est.fit(blocks, y, resume=resume)
    est.client = None
    mask = y != 0
    scores = est.decision_function(blocks)
    truth = blocks.gather_labels()
    predicted = est._labels_from_scores(scores)
    metrics = {"train_error_labeled": float(np.mean(predicted[mask] != truth[mask]))}
    if (~mask & (truth != 0)).any():
        hidden = ~mask & (truth != 0)
        metrics["error_unlabeled"] = float(np.mean(predicted[hidden] != truth[hidden]))
    extra = {"data": str(args.data), "round_trips": int(blocks.round_trips)}
    if encoding is not None:
        extra["kdd99_encoding"] = encoding
    save_model(est, args.model_out, metrics=metrics, extra=extra)
    if args.outputs:
        write_outputs(args.outputs, scores)
    objective = est.objective_
    text = f"{objective:.10g}" if np.ndim(objective) == 0 else str(np.round(objective, 10))
    print(f"dask-ssl: {type(est).__name__} objective {text} in {est.fit_seconds_:.2f} s; "
          f"{', '.join(f'{k} {v:.4%}' for k, v in metrics.items())}; model in {args.model_out}")
    return 0


def job_arguments(args) -> dict:
    """The ``fit`` flags as JSON (paths absolute, so a resume from elsewhere finds them)."""
    out = {k: v for k, v in vars(args).items() if k not in ("func", "detach")}
    for key in ("data", "model_out", "outputs", "checkpoint"):
        if out.get(key) and "://" not in out[key]:
            out[key] = str(Path(out[key]).resolve())
    return out


def is_fit_checkpoint(target) -> bool:
    return (Path(target) / JOB_FILE).is_file()


def resume_fit(target, args) -> int:
    """``dask-ssl resume CHECKPOINT``: finish an interrupted ``fit`` from its checkpoint."""
    job = Path(target) / JOB_FILE
    saved = argparse.Namespace(**json.loads(job.read_text()))
    saved.scheduler = args.scheduler or saved.scheduler
    saved.workers = args.workers if args.workers is not None else saved.workers
    saved.verbose = args.verbose or saved.verbose
    return cmd_fit(saved, resume=True)


def run_detached(argv: list[str]) -> int:
    """Body of a detached ``fit``: runs on a worker, off the worker's thread pool."""
    from distributed import secede

    secede()
    return main(argv)


def cmd_detach(args, argv: list[str]) -> int:
    from distributed import fire_and_forget

    if args.scheduler is None:
        raise CLIError("--detach needs --scheduler: a LocalCluster ends with this process")
    job = job_arguments(args)
    forwarded = ["fit"] + [a for a in argv if a not in ("fit", "--detach")]
    for key in ("data", "model_out", "outputs", "checkpoint"):
        flag = "--" + key.replace("_", "-")
        if job.get(key) and flag in forwarded:
            forwarded[forwarded.index(flag) + 1] = job[key]
    client = connect(args)
    future = client.submit(run_detached, forwarded, pure=False, key=f"dask-ssl-fit-{time.time_ns()}")
    fire_and_forget(future)
    print(f"dask-ssl: submitted {future.key} to {args.scheduler}; model will be written to "
          f"{job['model_out']}")
    return 0


def cmd_predict(args) -> int:
    from .models.artifact import load_model

    model = load_model(args.model)
    client = connect(args)
    blocks, _ = read_data(args.data, args.format, client, n_features=model.n_features_in_,
                          encoding=model.model_document_.get("kdd99_encoding"))
    write_outputs(args.outputs, model.decision_function(blocks))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dask-ssl", description=__doc__)
    parser.add_argument("--version", action="version", version=f"dask-ssl {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True)

    fit = sub.add_parser("fit", help="train a model on a data file")
    fit.add_argument("--data", required=True, help="svmlight file (label 0 = unlabeled), glob or URL")
    fit.add_argument("--format", choices=["auto", "svmlight", "kdd99"], default="auto")
    fit.add_argument("--algorithm", choices=sorted(ALGORITHMS), default="svm")
    fit.add_argument("--gamma", type=float,
                     help="regularization of the linear methods (svmlin -W; default 1e-3)")
    fit.add_argument("--gamma-u", type=float, help="unlabeled loss weight gamma' (svmlin -U)")
    fit.add_argument("--pos-fraction", type=float,
                     help="fraction r of unlabeled rows that are positive (svmlin -R)")
    fit.add_argument("--max-switches", type=int,
                     help="TSVM label pairs switched per round (svmlin -S; default: all)")
    fit.add_argument("--gamma-A", dest="gamma_A", type=float,
                     help="LapRLS/LapSVM: ambient norm weight gamma_A")
    fit.add_argument("--gamma-I", dest="gamma_I", type=float,
                     help="LapRLS/LapSVM: graph term weight gamma_I (divided by (u+l)^2)")
    fit.add_argument("--kernel", help="LapRLS/LapSVM: base kernel by scikit-learn name (rbf, ...)")
    fit.add_argument("--kernel-params", type=json.loads, metavar="JSON",
                     help='LapRLS/LapSVM: kernel parameters, e.g. \'{"gamma": 0.01}\'')
    fit.add_argument("--n-neighbors", type=int, help="LapRLS/LapSVM: k of the kNN graph")
    fit.add_argument("--p", type=int, help="LapRLS/LapSVM: power of the graph Laplacian")
    fit.add_argument("--loss", choices=["squared_hinge", "hinge"], help="LapSVM loss")
    fit.add_argument("--labeled", type=int, metavar="N",
                     help="keep a stratified N of the labels, treat the other rows as unlabeled")
    fit.add_argument("--seed", type=int, default=0, help="seed of --labeled")
    fit.add_argument("--checkpoint", metavar="DIR",
                     help="checkpoint the outer loop after every stage (resume with 'resume DIR')")
    fit.add_argument("--model-out", required=True, metavar="DIR")
    fit.add_argument("--outputs", metavar="FILE", help="write one decision value per input row")
    fit.add_argument("--detach", action="store_true",
                     help="run the fit as a task on the cluster and return at once (needs --scheduler)")
    _cluster_args(fit)
    fit.set_defaults(func=cmd_fit)

    pred = sub.add_parser("predict", help="decision values of a saved model on a data file")
    pred.add_argument("--model", required=True, metavar="DIR")
    pred.add_argument("--data", required=True)
    pred.add_argument("--format", choices=["auto", "svmlight", "kdd99"], default="auto")
    pred.add_argument("--outputs", required=True, metavar="FILE")
    _cluster_args(pred)
    pred.set_defaults(func=cmd_predict)
    from .workflow.commands import register
    register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.INFO,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        if args.command == "fit" and args.detach:
            return cmd_detach(args, list(sys.argv[1:] if argv is None else argv))
        return args.func(args)
    except (CLIError, ValueError, FileNotFoundError) as exc:
        print(f"dask-ssl: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
