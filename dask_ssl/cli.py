"""The ``dask-ssl`` command."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np

from . import __version__

ALGORITHMS = {"rls": "RLS", "svm": "L2SVM"}


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
    client = get_client(scheduler=args.scheduler, n_workers=args.workers or 2)
    if args.scheduler is None:
        print(f"dask-ssl: LocalCluster with {len(client.scheduler_info()['workers'])} workers, "
              f"dashboard {client.dashboard_link}", file=sys.stderr)
    return client


def read_data(path: str, fmt: str, client, n_features=None):
    """Read a training or prediction file into row blocks with labels.

    Returns ``(blocks, unlabeled_marker)``: svmlight files mark unlabeled rows with label 0.
    """
    from .data.svmlight import read_svmlight

    if fmt == "auto":
        fmt = "kdd99" if "kddcup" in Path(path).name else "svmlight"
    if fmt == "svmlight":
        return read_svmlight(path, client=client, n_features=n_features), 0
    if fmt == "kdd99":
        from .data.kdd99 import read_kdd99

        return read_kdd99(path, client=client), 0
    raise CLIError(f"unknown data format {fmt!r}")


def make_estimator(args):
    from . import models

    name = ALGORITHMS[args.algorithm]
    params = {"gamma": args.gamma, "unlabeled": 0}
    for flag, param in (("gamma_u", "gamma_u"), ("pos_fraction", "pos_fraction"),
                        ("max_switches", "max_switches")):
        value = getattr(args, flag, None)
        if value is not None:
            params[param] = value
    est = getattr(models, name)(**params)
    est._check_params()
    return est


def write_outputs(path: str, scores) -> None:
    """One decision value per input row, in input order (multi-class: one column per class)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    np.savetxt(tmp, np.asarray(scores), fmt="%.10g")
    tmp.replace(path)


def cmd_fit(args) -> int:
    from .models.artifact import save_model

    est = make_estimator(args)
    client = connect(args)
    est.client = client
    blocks, _ = read_data(args.data, args.format, client)
    est.fit(blocks)
    est.client = None
    labeled = blocks.gather_labels()
    mask = labeled != 0
    scores = est.decision_function(blocks)
    metrics = {"train_error_labeled": float(np.mean(est._labels_from_scores(scores[mask])
                                                     != labeled[mask]))}
    save_model(est, args.model_out, metrics=metrics, extra={"data": str(args.data)})
    if args.outputs:
        write_outputs(args.outputs, scores)
    print(f"dask-ssl: {type(est).__name__} objective {est.objective_:.10g} in "
          f"{est.fit_seconds_:.2f} s ({est.n_iter_} iterations); model in {args.model_out}")
    return 0


def cmd_predict(args) -> int:
    from .models.artifact import load_model

    model = load_model(args.model)
    client = connect(args)
    blocks, _ = read_data(args.data, args.format, client, n_features=model.n_features_in_)
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
    fit.add_argument("--gamma", type=float, default=1e-3, help="regularization (svmlin -W)")
    fit.add_argument("--model-out", required=True, metavar="DIR")
    fit.add_argument("--outputs", metavar="FILE", help="write one decision value per input row")
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
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        return args.func(args)
    except (CLIError, ValueError, FileNotFoundError) as exc:
        print(f"dask-ssl: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
