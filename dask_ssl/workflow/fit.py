"""``dask-ssl fit``: a one-step workflow made of the flags, timing each phase.

The flags become a workflow document (:func:`fit_workflow`: the ``--data`` file, the estimator
and its parameters, the ``--labeled`` / ``--seed`` split with no held-out rows) that runs
through the same steps as ``dask-ssl run`` (:class:`~dask_ssl.workflow.steps.Steps`: one
reader, one estimator builder, one split). Only the outputs differ: the model directory
``--model-out`` and the ``--outputs`` file, where a run has its run directory, model store and
report.

The phases are reported on standard error as they end, and in ``model.json`` as ``phases``
(seconds per phase), ``phases_cpu`` (CPU seconds, user + system, of the whole process, worker
threads included) and ``wall_seconds``:

``imports``
    From the start of the process (when ``dask-ssl`` is the program; else from the call) to
    the estimator checked: interpreter start-up, importing the CLI, distributed, the estimators
    and the reader (numba caches loaded), parsing the flags, checking the parameters.
``cluster``
    Starting the LocalCluster, or connecting to ``--scheduler``.
``read``
    Parsing the data on the workers, gathering the labels, choosing ``--labeled``.
``fit``
    The estimator's ``fit`` (its round trips are printed beside it and kept in ``round_trips``,
    counted from the read on; the bytes of their arguments and results in ``bytes_moved``).
``scores``
    The decision values of every row and the training metrics.
``write``
    The ``--outputs`` file and the model document (the model directory itself is written last,
    in milliseconds, after its figures are taken).

Each phase runs from the end of the one before it, ``wall_seconds`` from the start of the first
to the end of the last, so the phases add up to it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from . import sources
from .estimators import build_estimator, section_of
from .progress import Progress
from .session import CLIError, connect
from .steps import Steps, scalars

ALGORITHMS = {"rls": "RLS", "svm": "L2SVM", "tsvm": "TSVM", "da": "DAS3VM", "kda": "KernelDAS3VM",
              "bb": "BranchAndBoundS3VM", "laprls": "LapRLS", "lapsvm": "LapSVM",
              "linlaprls": "LinearLapRLS", "linlapsvm": "LinearLapSVM",
              "transduction": "GraphTransduction", "sparselaprls": "SparseLapRLS",
              "eigenfunction": "SparseEigenfunctionClassifier",
              # multi-view: --view (one svmlight file per view) or --views (a .mat file)
              "corls": "CoRLS", "colaprls": "CoLapRLS", "colapsvm": "CoLapSVM", "comr": "CoMR"}
#: Flags of ``fit`` that become estimator parameters, where the estimator has them.
ESTIMATOR_FLAGS = ("gamma_A", "gamma_u", "pos_fraction", "max_switches", "checkpoint",
                   "gamma_I", "graph_normalization", "kernel", "kernel_params", "n_neighbors",
                   "p", "loss", "n_components", "landmarks", "metric", "weights", "prior",
                   "unlabeled_weight", "class_balance", "gamma_C", "n_basis", "basis",
                   "method", "nu", "rho", "gamma_S", "sign_tol", "fit_intercept",
                   "random_state")
#: Flags whose value ``none`` switches a feature off (the parameter None).
NONE_FLAGS = ("prior", "class_balance")
#: Flags of the Nystrom feature map: meaningless without a kernel.
FEATURE_MAP_FLAGS = ("n_components", "landmarks")
JOB_FILE = "job.json"
#: The kernel family (:data:`dask_ssl.kernel_cache.FAMILIES`) each algorithm's fit calls: its
#: kernels are compiled (or loaded from the disk cache) ahead, while the command imports and
#: reads.
FAMILY = {"rls": "linear", "svm": "linear", "tsvm": "linear", "da": "linear", "bb": "linear",
          "kda": "kernel", "corls": "kernel", "eigenfunction": "kernel",
          "transduction": "graph",
          "laprls": "manifold", "lapsvm": "manifold", "linlaprls": "manifold",
          "linlapsvm": "manifold", "colaprls": "manifold", "colapsvm": "manifold",
          "comr": "manifold", "sparselaprls": "manifold"}
#: Namespace entries that are not ``fit`` flags (not recorded for ``resume``).
_NOT_FLAGS = ("func", "detach", "started", "old_gamma")


def process_start() -> float:
    """When this process started, as a ``time.time()`` value.

    On Linux from the process's start tick (``/proc/self/stat``, 10 ms resolution) against the
    boot-time clock both are counted on; psutil's figure adds the boot time rounded to a whole
    second, too coarse for timing a command of a few seconds.
    """
    import os

    try:
        with open("/proc/self/stat", "rb") as f:
            # Field 22 (starttime); the command name in field 2 may hold spaces, so count
            # from the closing parenthesis.
            fields = f.read().rsplit(b")", 1)[1].split()
        ticks = int(fields[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
        return time.time() - age
    except (OSError, IndexError, ValueError, AttributeError):
        import psutil

        return psutil.Process().create_time()


def make_estimator(args):
    """The estimator the flags describe, its parameters checked before any data is read."""
    from ..models.artifact import registry

    if getattr(args, "old_gamma", None) is not None:
        raise CLIError("--gamma was renamed --gamma-A (the ambient-norm weight, svmlin -W)")
    cls = registry()[ALGORITHMS[args.algorithm]]
    accepted = cls().get_params()
    params = {}
    for flag in ESTIMATOR_FLAGS:
        value = getattr(args, flag, None)
        if value is None:
            continue
        if flag not in accepted:
            raise CLIError(f"--{flag.replace('_', '-')} does not apply to --algorithm {args.algorithm}")
        params[flag] = None if flag in NONE_FLAGS and value == "none" else value
    for flag in FEATURE_MAP_FLAGS:
        if flag in params and params.get("kernel", accepted.get("kernel")) is None:
            raise CLIError(f"--{flag.replace('_', '-')} sets the Nystrom feature map of a "
                           f"kernel: give --kernel with --algorithm {args.algorithm}")
    if "verbose" in accepted:
        params["verbose"] = sys.stderr.isatty() or args.verbose
    est = build_estimator(cls.__name__, params)
    est._check_params()
    return est


#: The metrics of ``fit``: measured on the training rows, since it holds none out.
FIT_METRICS = ["train_error_labeled", "error_unlabeled"]


def fit_workflow(args, est) -> dict:
    """The one-step workflow ``fit`` runs: the ``--data`` file, the checked estimator ``est``
    and the ``--labeled`` / ``--seed`` split with no held-out rows.

    Its ``outputs`` are those of ``fit`` (the model directory and the outputs file), not a
    run's; a workflow file with the same ``data``, ``split``, ``estimator`` and ``evaluation``
    sections trains the same model under ``dask-ssl run``.
    """
    return {"name": "fit",
            "data": data_section(args, est),
            "split": {"labeled": args.labeled or "all", "test_fraction": 0, "seed": args.seed},
            "estimator": section_of(est),
            "evaluation": {"metrics": list(FIT_METRICS)},
            "outputs": {"model_out": args.model_out, "outputs": args.outputs}}


#: ``fit`` flags of a ``.mat`` file's views, as the keys of its ``data`` section.
MAT_FLAGS = {"mat_views": "views", "classes": "classes", "positive_class": "positive_class"}


def data_section(args, est) -> dict:
    """The ``data`` section of the flags: ``--data`` (a file of one matrix), ``--view`` (one
    svmlight file per view) or ``--views`` (a .mat file), exactly one, and views exactly for
    the multi-view estimators. Checked before any data is read."""
    from ..models.artifact import is_multiview
    from .views import parse_view_flags

    view, views = getattr(args, "view", None), getattr(args, "views", None)
    given = [flag for flag, value in (("--data", args.data), ("--view", view),
                                      ("--views", views)) if value]
    if len(given) != 1:
        raise CLIError(f"give the data with one of --data, --view (repeated) or --views; got "
                       f"{' and '.join(given) or 'none'}")
    mat = {key: getattr(args, flag, None) for flag, key in MAT_FLAGS.items()
           if getattr(args, flag, None) is not None}
    if mat and not views:
        raise CLIError(f"--{next(iter(mat)).replace('_', '-')} selects from a .mat file: "
                       "give it with --views")
    multiview = is_multiview(est)
    if multiview and args.data:
        raise CLIError(f"--algorithm {args.algorithm} takes views: give them with --view "
                       "NAME=PATH (one per view) or --views FILE.mat")
    if not multiview and not args.data:
        raise CLIError(f"--algorithm {args.algorithm} takes one matrix: give it with --data "
                       "(--view and --views are for corls, colaprls, colapsvm, comr)")
    if views:
        return {"source": "multiview_mat", "path": views, **mat}
    if view:
        names, paths = parse_view_flags(view)
        return {"source": "svmlight_views", "paths": paths, "names": names}
    return sources.file_section(args.data, args.format)


class FitSteps(Steps):
    """The steps of a workflow, with ``fit``'s outputs: ``--outputs`` and ``--model-out``."""

    def write(self, data, final: dict, started: float) -> None:
        """Write the outputs file and the model directory, as phase ``write``.

        The model directory is written last, so its figures cover everything before it: the
        phases, each from the end of the one before, and the wall from ``started``.
        """
        from ..models.artifact import save_model
        from .outputs import write_outputs

        out = self.doc["outputs"]
        progress = self.progress
        progress.say("  write ...")
        since = progress.start()
        if out["outputs"]:
            write_outputs(out["outputs"], final["train_scores"])
        metrics, extra = self.model_fields(data, final)
        progress.finish("write", since)
        extra["wall_seconds"] = round(time.time() - started, 4)
        extra["phases"] = {k: round(v, 4) for k, v in progress.timings.items()}
        extra["phases_cpu"] = {k: round(v, 4) for k, v in progress.cpu_timings.items()}
        save_model(final["estimator"], out["model_out"], metrics=metrics, extra=extra)
        progress.say(f"  write: done in {time.perf_counter() - since[0]:.1f} s")


def cmd_fit(args, *, resume: bool = False) -> int:
    """Train, write outputs, save the model directory. With ``--checkpoint`` the invocation is
    recorded beside the stage checkpoints so that ``dask-ssl resume DIR`` can finish it.

    ``args.started`` (a ``time.time()`` value, optional) is when the command's clock starts.
    """
    started = getattr(args, "started", None) or time.time()
    progress = Progress(sys.stderr)
    # The heavy imports, here rather than inside later phases, so that ``imports`` holds them.
    import distributed  # noqa: F401

    from ..data import svmlight  # noqa: F401
    from ..kernel_cache import ALGORITHM_MODULES, FAMILIES, READERS, compile_in_background

    # The kernels of the reader and of the estimator's family compile (or load from the disk
    # cache) while the estimators are imported and the data read (the command's worker
    # threads share them), not on their first call inside the fit.
    reader = (sources.file_section(args.data, args.format or "auto")["source"]
              if args.data else None)
    compile_in_background(READERS.get(reader, ())
                          + ALGORITHM_MODULES.get(args.algorithm, ())
                          + FAMILIES[FAMILY.get(args.algorithm, "manifold")])
    from ..models import artifact  # noqa: F401

    est = make_estimator(args)
    doc = fit_workflow(args, est)  # the data flags are checked here, before the cluster
    if args.checkpoint and not resume:
        ckpt = Path(args.checkpoint)
        ckpt.mkdir(parents=True, exist_ok=True)
        (ckpt / JOB_FILE).write_text(json.dumps(job_arguments(args), indent=2))
    progress.record("imports", time.time() - started, time.process_time())
    progress.say(f"  imports: done in {progress.timings['imports']:.1f} s")
    with progress.phase("cluster"):
        client = connect(args)
    steps = FitSteps(doc, client, progress, resume=resume)
    with client.as_current():
        data = steps.read()
        (final,) = steps.fit_all(data)
    steps.write(data, final, started)
    est, metrics = final["estimator"], scalars(final["metrics"])
    # the multi-view estimators solve in closed form and keep no objective
    objective = getattr(est, "objective_", None)
    text = ("" if objective is None else " objective " + (
        f"{objective:.10g}" if np.ndim(objective) == 0 else str(np.round(objective, 10))))
    print(f"dask-ssl: {type(est).__name__}{text} in {est.fit_seconds_:.2f} s; "
          f"{', '.join(f'{k} {v:.4%}' for k, v in metrics.items())}; model in {args.model_out}")
    return 0


def job_arguments(args) -> dict:
    """The ``fit`` flags as JSON (paths absolute, so a resume from elsewhere finds them)."""
    out = {k: v for k, v in vars(args).items() if k not in _NOT_FLAGS}
    for key in ("data", "model_out", "outputs", "checkpoint", "views"):
        if out.get(key) and "://" not in out[key]:
            out[key] = str(Path(out[key]).resolve())
    return out


def is_fit_checkpoint(target) -> bool:
    return (Path(target) / JOB_FILE).is_file()


def resume_fit(target, args) -> int:
    """``dask-ssl resume CHECKPOINT``: finish an interrupted ``fit`` from its checkpoint."""
    job = Path(target) / JOB_FILE
    fields = json.loads(job.read_text())
    # a job recorded before --gamma was renamed --gamma-A
    old_gamma = fields.pop("gamma", None)
    if fields.get("gamma_A") is None:
        fields["gamma_A"] = old_gamma
    saved = argparse.Namespace(**fields)
    saved.scheduler = args.scheduler or saved.scheduler
    saved.workers = args.workers if args.workers is not None else saved.workers
    saved.verbose = args.verbose or saved.verbose
    saved.started = getattr(args, "started", None)
    return cmd_fit(saved, resume=True)
