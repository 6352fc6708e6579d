"""``dask-ssl fit``: read a file, train, write the model directory and outputs, timing each phase.

The phases are reported on standard error as they end, and in ``model.json`` as ``phases``
(seconds per phase) and ``wall_seconds``:

``imports``
    From the start of the process (when ``dask-ssl`` is the program; else from the call) to
    the estimator checked: interpreter start-up, importing the CLI, distributed, the estimators
    and the reader (numba caches loaded), parsing the flags, checking the parameters.
``cluster``
    Starting the LocalCluster, or connecting to ``--scheduler``.
``read``
    Parsing the data on the workers, gathering the labels, choosing ``--labeled``.
``fit``
    The estimator's ``fit`` (its round trips are printed beside it and kept in ``round_trips``;
    the bytes of their arguments and results in ``bytes_moved``).
``scores``
    The decision values of every row and the training metrics.
``write``
    The ``--outputs`` file and the model document (the model directory itself is written last,
    in milliseconds, after its figures are taken).

Each phase is timed on its own; ``wall_seconds`` runs from the start of the first to the end of
the last, so the phases add up to it but for the few statements between them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from .progress import Progress
from .session import CLIError, connect

ALGORITHMS = {"rls": "RLS", "svm": "L2SVM", "tsvm": "TSVM", "da": "DAS3VM", "kda": "KernelDAS3VM",
              "bb": "BranchAndBoundS3VM", "laprls": "LapRLS", "lapsvm": "LapSVM",
              "linlaprls": "LinearLapRLS", "linlapsvm": "LinearLapSVM"}
#: Flags of ``fit`` that become estimator parameters, where the estimator has them.
ESTIMATOR_FLAGS = ("gamma_A", "gamma_u", "pos_fraction", "max_switches", "checkpoint",
                   "gamma_I", "kernel", "kernel_params", "n_neighbors", "p", "loss",
                   "n_components", "landmarks")
#: Flags of the Nystrom feature map: meaningless without a kernel.
FEATURE_MAP_FLAGS = ("n_components", "landmarks")
JOB_FILE = "job.json"
#: Modules whose compiled kernels ``fit`` loads ahead: the svmlight reader's and those of the
#: L2-SVM-MFN steps that every linear estimator (and the Nystrom and Laplacian ones) runs.
PRELOADED_KERNELS = ("dask_ssl.data._numbers", "dask_ssl.data.svmlight",
                     "dask_ssl.linalg.kernels", "dask_ssl.linalg.distinct")
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


def read_data(path: str, fmt: str, client, n_features=None, encoding=None):
    """Read a training or prediction file into row blocks with labels (0 = unlabeled).

    Returns ``(blocks, encoding)``: for KDD99 CSV the column encoding (categories, maxima) that
    a prediction file must be read with, as a dict for ``model.json``; None for svmlight.
    """
    from ..data.svmlight import read_svmlight

    if fmt == "auto":
        fmt = "kdd99" if "kddcup" in Path(path).name else "svmlight"
    if fmt == "svmlight":
        # Parsed blocks are cached (see dask_ssl.data.blockcache): a second command on an
        # unchanged file skips parsing.
        return read_svmlight(path, client=client, n_features=n_features, cache=True), None
    if fmt == "kdd99":
        from ..data.kdd99 import KDD99Encoding, read_kdd99

        given = None if encoding is None else KDD99Encoding.from_dict(encoding)
        blocks, enc = read_kdd99(path, client=client, encoding=given, return_encoding=True)
        return blocks, enc.to_dict()
    raise CLIError(f"unknown data format {fmt!r}")


def make_estimator(args):
    """The estimator the flags describe, its parameters checked before any data is read."""
    from .. import models

    if getattr(args, "old_gamma", None) is not None:
        raise CLIError("--gamma was renamed --gamma-A (the ambient-norm weight, svmlin -W)")
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
    for flag in FEATURE_MAP_FLAGS:
        if flag in params and params.get("kernel", accepted.get("kernel")) is None:
            raise CLIError(f"--{flag.replace('_', '-')} sets the Nystrom feature map of a "
                           f"kernel: give --kernel with --algorithm {args.algorithm}")
    if "verbose" in accepted:
        params["verbose"] = sys.stderr.isatty() or args.verbose
    est = cls(**params)
    est._check_params()
    return est


def hide_labels(y: np.ndarray, n_labeled: int, seed: int) -> np.ndarray:
    """The labels ``y`` with all but a stratified ``n_labeled`` of them set to 0 (unlabeled)."""
    from ..data.splits import stratified_split

    known = np.flatnonzero(y != 0)
    split = stratified_split(y[known], n_labeled=n_labeled, seed=seed)
    out = np.zeros_like(y)
    out[known[split.labeled]] = y[known[split.labeled]]
    return out


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
    from ..kernel_cache import load_in_background

    # The kernels of reading and of the linear solvers load while the estimators are imported
    # and the data read (the command's worker threads share them), not on their first call
    # inside the fit.
    load_in_background(PRELOADED_KERNELS)
    from ..models.artifact import save_model
    from .outputs import write_outputs

    est = make_estimator(args)
    if args.checkpoint and not resume:
        ckpt = Path(args.checkpoint)
        ckpt.mkdir(parents=True, exist_ok=True)
        (ckpt / JOB_FILE).write_text(json.dumps(job_arguments(args), indent=2))
    progress.timings["imports"] = time.time() - started
    progress.say(f"  imports: done in {progress.timings['imports']:.1f} s")
    with progress.phase("cluster"):
        client = connect(args)
    est.client = client
    with progress.phase("read"):
        blocks, encoding = read_data(args.data, args.format, client)
        truth = blocks.gather_labels()
        y = hide_labels(truth, args.labeled, args.seed) if args.labeled else truth
    with progress.phase("fit", counter=lambda: blocks.round_trips, unit="round trips"):
        est.fit(blocks, y, resume=resume)
    est.client = None
    with progress.phase("scores"):
        mask = y != 0
        scores = est.decision_function(blocks)
        predicted = est._labels_from_scores(scores)
        metrics = {"train_error_labeled": float(np.mean(predicted[mask] != truth[mask]))}
        hidden = ~mask & (truth != 0)
        if hidden.any():
            metrics["error_unlabeled"] = float(np.mean(predicted[hidden] != truth[hidden]))
    progress.say("  write ...")
    t_write = time.perf_counter()
    if args.outputs:
        write_outputs(args.outputs, scores)
    extra = {"data": str(args.data), "round_trips": int(blocks.round_trips),
             "bytes_moved": int(blocks.bytes_moved)}
    if encoding is not None:
        extra["kdd99_encoding"] = encoding
    # The model directory is written last, so its figures cover everything before it; each
    # phase is timed on its own, the wall from the start, so gaps between them would show.
    progress.timings["write"] = time.perf_counter() - t_write
    extra["wall_seconds"] = round(time.time() - started, 4)
    extra["phases"] = {k: round(v, 4) for k, v in progress.timings.items()}
    save_model(est, args.model_out, metrics=metrics, extra=extra)
    progress.say(f"  write: done in {time.perf_counter() - t_write:.1f} s")
    objective = est.objective_
    text = f"{objective:.10g}" if np.ndim(objective) == 0 else str(np.round(objective, 10))
    print(f"dask-ssl: {type(est).__name__} objective {text} in {est.fit_seconds_:.2f} s; "
          f"{', '.join(f'{k} {v:.4%}' for k, v in metrics.items())}; model in {args.model_out}")
    return 0


def job_arguments(args) -> dict:
    """The ``fit`` flags as JSON (paths absolute, so a resume from elsewhere finds them)."""
    out = {k: v for k, v in vars(args).items() if k not in _NOT_FLAGS}
    for key in ("data", "model_out", "outputs", "checkpoint"):
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
