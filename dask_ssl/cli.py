"""The ``dask-ssl`` command."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time

from . import __version__
from .cluster import close_owned
from .kernel_cache import ALL_MODULES, FAMILIES, READERS, compile_ahead, kernel_dir
from .workflow.fit import ALGORITHMS, cmd_fit, job_arguments, process_start
from .workflow.outputs import write_outputs
from .workflow.sources import FILE_FORMATS, file_section, load
from .workflow.session import CLIError, cluster_args, connect


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
    for key in ("data", "model_out", "outputs", "checkpoint", "views"):
        flag = "--" + key.replace("_", "-")
        if job.get(key) and flag in forwarded:
            forwarded[forwarded.index(flag) + 1] = job[key]
    client = connect(args)
    try:
        future = client.submit(run_detached, forwarded, pure=False,
                               key=f"dask-ssl-fit-{time.time_ns()}")
        fire_and_forget(future)
    finally:
        # A graceful close flushes the submission to the scheduler before this process ends.
        # Left to the exit handlers, the connection could drop with the submission still in
        # the client's send buffer: the fit then never ran (1 detached fit in 5 under load).
        client.close()
    print(f"dask-ssl: submitted {future.key} to {args.scheduler}; model will be written to "
          f"{job['model_out']}")
    return 0


def cmd_compile(args) -> int:
    """Compile (or load) the kernels of the chosen families into the kernel cache and say
    how many were compiled: after the first import's compile, none (a container image can
    run it to check that its cache is complete)."""
    # the readers' kernels with any family: every fit reads
    modules = (ALL_MODULES if not args.family else tuple(dict.fromkeys(
        [m for reader in READERS.values() for m in reader]
        + [m for f in args.family for m in FAMILIES[f]])))
    t0, c0 = time.perf_counter(), time.process_time()
    ready, compiled = compile_ahead(modules)
    print(f"dask-ssl: {ready} kernels ready ({compiled} compiled, {ready - compiled} from the "
          f"cache) in {kernel_dir() or 'numba default cache'}; {time.perf_counter() - t0:.1f} s, "
          f"CPU {time.process_time() - c0:.1f} s")
    return 0


def cmd_predict(args) -> int:
    from .models.artifact import is_multiview, load_model
    from .workflow.views import predict_views

    model = load_model(args.model)
    views_given = bool(args.view or args.views)
    if is_multiview(model):
        # the views are checked against the model's (names, count) before any file is read
        if args.data or not views_given or (args.view and args.views):
            raise CLIError(f"{args.model} holds a multi-view {type(model).__name__} fitted on "
                           f"views {list(model.view_names_ or [])}: give them with --view "
                           "NAME=PATH (one each) or --views FILE.mat, not --data")
        write_outputs(args.outputs, model.decision_function(
            predict_views(model, view_flags=args.view, mat=args.views)))
        return 0
    if views_given or not args.data:
        raise CLIError(f"{args.model} holds a {type(model).__name__}, which takes one matrix: "
                       "give it with --data (--view and --views are for multi-view models)")
    client = connect(args)
    blocks, _ = load(file_section(args.data, args.format), args.data, client,
                     n_features=model.n_features_in_,
                     encoding=model.model_document_.get("kdd99_encoding"))
    write_outputs(args.outputs, model.decision_function(blocks))
    return 0


def _number_or_auto(text: str):
    """A flag's value: a number, or "auto" where the estimator chooses it (its check says
    where "auto" is not taken)."""
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {text!r}") from None


def _count_or_share(text: str):
    """``--n-basis``: an int (that many rows), or a number with a point (that share of them)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a row count (500) or a share of the rows "
                                         f"(0.05), got {text!r}") from None


def sparse_flags(parser) -> None:
    """The flags of a sparse model (sparselaprls): its basis and the objective on it."""
    parser.add_argument("--n-basis", dest="n_basis", type=_count_or_share, metavar="D",
                        help="sparselaprls: basis size d, a row count (500) or a share of the "
                             "training rows (0.05; the default 0.1)")
    # no argparse choices: the estimator's own check names them
    parser.add_argument("--basis", help="sparselaprls: how the basis is found: auto (the "
                                        "default: greedy, checked on the labels against its "
                                        "prefixes and a random basis), greedy, random, lasso, "
                                        "lars")
    parser.add_argument("--method", help="sparselaprls: the objective on the basis: decoupled "
                                         "(the default), slack, laprls, sigmoid")
    parser.add_argument("--nu", type=float, help="sparselaprls: the slack coupling nu")
    parser.add_argument("--rho", type=float, help="sparselaprls --method sigmoid: the sigmoid's "
                                                  "slope rho")


def eigenfunction_flags(parser) -> None:
    """The flags of sparse eigenfunction bases (eigenfunction) beyond the kernel's and
    ``--n-components``: the eigenfunctions' filter and the Lasso over them."""
    parser.add_argument("--gamma-S", dest="gamma_S", type=_number_or_auto, metavar="GAMMA_S",
                        help="eigenfunction: the Lasso's l1 weight gamma_S (0: least squares "
                             "on the filtered basis); 'auto' (the default): chosen on the "
                             "labeled rows, the supervised kernel RLS included")
    parser.add_argument("--sign-tol", dest="sign_tol", type=float, metavar="EPS",
                        help="eigenfunction: the no-sign-change filter's eps, a share of an "
                             "eigenvector's largest entry (default 0.1; 1 keeps every one)")
    parser.add_argument("--fit-intercept", dest="fit_intercept",
                        action=argparse.BooleanOptionalAction, default=None,
                        help="eigenfunction: fit an unpenalized bias (default: none, as the "
                             "seed)")


def view_flags(parser) -> None:
    """``--view`` and ``--views``: the views of a multi-view model (corls, colaprls, colapsvm,
    comr), instead of ``--data``."""
    parser.add_argument("--view", action="append", metavar="[NAME=]PATH",
                        help="one svmlight file per view, the same rows in each (repeat the "
                             "flag; NAME defaults to the file's name without its extension)")
    parser.add_argument("--views", metavar="FILE.mat",
                        help="a multi-view .mat file (X: cell of views named view0, view1, "
                             "...; Y: classes)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dask-ssl", description=__doc__)
    parser.add_argument("--version", action="version", version=f"dask-ssl {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True)

    fit = sub.add_parser("fit", help="train a model on a data file")
    fit.add_argument("--data", help="svmlight file (label 0 = unlabeled), glob or URL")
    view_flags(fit)
    fit.add_argument("--mat-views", dest="mat_views", type=int, nargs="+", metavar="K",
                     help="--views: keep these views of the .mat file (indices, from 0)")
    fit.add_argument("--classes", type=int, nargs="+", metavar="C",
                     help="--views: keep the rows of these classes of the .mat file")
    fit.add_argument("--positive-class", dest="positive_class", type=int, metavar="C",
                     help="--views: class C of the .mat file against the rest (+1 / -1)")
    fit.add_argument("--format", choices=FILE_FORMATS, default="auto")
    fit.add_argument("--algorithm", choices=sorted(ALGORITHMS), default="svm")
    fit.add_argument("--gamma", type=float, dest="old_gamma", help=argparse.SUPPRESS)
    fit.add_argument("--gamma-u", type=_number_or_auto, metavar="GAMMA_U",
                     help="tsvm/da/kda/bb: unlabeled loss weight gamma' (svmlin -U); 'auto' "
                          "(tsvm/da/kda): chosen on the labeled rows")
    fit.add_argument("--pos-fraction", type=float,
                     help="fraction r of unlabeled rows that are positive (svmlin -R)")
    fit.add_argument("--max-switches", type=int,
                     help="TSVM label pairs switched per round (svmlin -S; default: all)")
    fit.add_argument("--gamma-A", dest="gamma_A", type=_number_or_auto, metavar="GAMMA_A",
                     help="ambient-norm weight gamma_A (svmlin -W; default 1e-3 for the linear "
                          "methods); 'auto' (sparse with --method laprls or slack): chosen with "
                          "gamma_I by leave-one-out on the labeled rows")
    fit.add_argument("--gamma-I", dest="gamma_I", type=_number_or_auto, metavar="GAMMA_I",
                     help="laprls/lapsvm/linlaprls/linlapsvm/transduction: graph term weight "
                          "gamma_I of the thesis, scaled by --graph-normalization (by default "
                          "divided by (u+l)^2); 'auto' (their default): chosen on the labeled rows, 0 "
                          "(the supervised model) included")
    fit.add_argument("--gamma-C", dest="gamma_C", type=_number_or_auto, metavar="GAMMA_C",
                     help="corls: coupling of the views ('auto', the default: chosen on the "
                          "labeled rows); comr: coupling lambda of its ambient and intrinsic "
                          "views (inf: manifold regularization)")
    # no argparse choices: the estimator's own check names them
    fit.add_argument("--graph-normalization", dest="graph_normalization",
                     metavar="{n2,edges,none}",
                     help="laprls/lapsvm/linlaprls/linlapsvm/transduction: gamma_I's scaling: n2 (the "
                          "default) divides it by (u+l)^2, edges by the sum of the edge "
                          "weights, none takes it as given (the linear paper's gamma_I)")
    fit.add_argument("--kernel", help="base kernel by scikit-learn name (rbf, ...): laprls, "
                                      "lapsvm, kda, bb, eigenfunction; Nystrom features of tsvm, da, linlaprls, "
                                      "linlapsvm")
    fit.add_argument("--kernel-params", type=json.loads, metavar="JSON",
                     help='kernel parameters, e.g. \'{"gamma": 0.01}\'')
    fit.add_argument("--n-components", type=int, metavar="M",
                     help="Nystrom landmarks m (laprls/lapsvm: instead of the exact expansion; "
                          "eigenfunction: the eigenvectors of the Nystrom approximation, "
                          "computed on the workers; tsvm/da/linlaprls/linlapsvm: with "
                          "--kernel)")
    fit.add_argument("--landmarks", choices=["uniform", "kmeans++"],
                     help="how the --n-components landmarks are drawn (default uniform)")
    fit.add_argument("--n-neighbors", type=int, help="Laplacian methods: k of the kNN graph")
    # no argparse choices: the estimator's own check names them
    fit.add_argument("--metric", help="transduction: the graph's distance (euclidean, cosine; "
                                      "default auto: cosine for non-negative sparse rows)")
    fit.add_argument("--weights", help="transduction: edge weights (heat, binary, cosine; "
                                       "default auto: by the metric)")
    fit.add_argument("--prior", help="transduction: the unlabeled rows' supervised prior: rls, "
                                     "none (the thesis method), auto (the default: rls with "
                                     "5 labels a class)")
    fit.add_argument("--unlabeled-weight", dest="unlabeled_weight", type=_number_or_auto,
                     metavar="MU", help="transduction: the prior's weight mu on the unlabeled "
                                        "rows; 'auto' (the default): chosen on the labeled rows")
    fit.add_argument("--class-balance", dest="class_balance",
                     help="transduction, comr, colaprls, colapsvm: labeled (cut the unlabeled "
                          "rows' scores to the labeled class mix), none, auto (the default; "
                          "transduction: chosen on the labeled rows, the others: labeled where "
                          "too few labels left a graph setting unchecked)")
    fit.add_argument("--p", type=int, help="Laplacian methods: power of the graph Laplacian")
    sparse_flags(fit)
    eigenfunction_flags(fit)
    # no argparse choices: the estimator's own check names the choices and old spellings
    fit.add_argument("--loss", help="loss V: lapsvm (squared_hinge, hinge), kda and bb "
                                    "(squared_hinge, squared)")
    fit.add_argument("--labeled", type=int, metavar="N",
                     help="keep a stratified N of the labels, treat the other rows as unlabeled")
    fit.add_argument("--seed", type=int, default=0, help="seed of --labeled")
    fit.add_argument("--random-state", dest="random_state", type=int, metavar="N",
                     help="seed of the estimator's own draws (sparselaprls: the greedy "
                          "candidates and a random basis; the kNN search, Nystrom landmarks "
                          "(eigenfunction too)); "
                          "default: fresh draws each fit")
    fit.add_argument("--checkpoint", metavar="DIR",
                     help="checkpoint the outer loop after every stage (tsvm, da), the CG state "
                          "every 10 iterations (linlaprls), the Newton state after every step "
                          "(linlapsvm); resume with 'resume DIR'")
    fit.add_argument("--model-out", required=True, metavar="DIR")
    fit.add_argument("--outputs", metavar="FILE", help="write one decision value per input row")
    fit.add_argument("--detach", action="store_true",
                     help="run the fit as a task on the cluster and return at once (needs --scheduler)")
    cluster_args(fit)
    fit.set_defaults(func=cmd_fit)

    pred = sub.add_parser("predict", help="decision values of a saved model on a data file")
    pred.add_argument("--model", required=True, metavar="DIR")
    pred.add_argument("--data", help="a file for a single-view model")
    view_flags(pred)
    pred.add_argument("--format", choices=FILE_FORMATS, default="auto")
    pred.add_argument("--outputs", required=True, metavar="FILE")
    cluster_args(pred)
    pred.set_defaults(func=cmd_predict)

    comp = sub.add_parser("compile", help="make the numba kernels ready in the kernel cache and "
                                          "report them (the first import of an install "
                                          "compiles them once; this checks or completes it)")
    comp.add_argument("--family", choices=sorted(FAMILIES), action="append",
                      help="only the readers' and these estimator families' kernels (repeat; "
                           "default: all)")
    comp.set_defaults(func=cmd_compile)
    from .workflow.commands import register
    register(sub)
    return parser


def main(argv=None) -> int:
    # Run as the program (argv from the shell), a command's clock starts with the process.
    started = process_start() if argv is None else time.time()
    parser = build_parser()
    args = parser.parse_args(argv)
    args.started = started
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


def run() -> None:
    """The ``dask-ssl`` program: :func:`main`, then exit without the interpreter's teardown.

    Once a command returns, what it wrote is closed and flushed; tearing down the modules and
    arrays a fit leaves behind took another 1.1 s after a KDD99 10% TSVM fit (a fifth of the
    command), which a user waits for at the shell. The LocalCluster is closed and the logs and
    standard streams flushed first; an exception leaves through the normal path.
    """
    status = main()
    close_owned()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    run()
