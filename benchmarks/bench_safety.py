"""Unlabeled data never hurts (issue 30): every semi-supervised estimator at its defaults next to
its supervised counterpart on the same labels.

    python benchmarks/bench_safety.py                                   # the full table
    python benchmarks/bench_safety.py --random-states 5                 # stability mode
    python benchmarks/bench_safety.py --datasets moons,hw-pix --estimators LapRLS,GraphTransduction
    python benchmarks/bench_safety.py --rows-scale 0.02 --draws 1 --datasets moons,g50c-2k  # smoke
    python benchmarks/bench_safety.py --plan                            # what would run, no fit
    python benchmarks/bench_safety.py --table safety.json               # a saved run's table
    python benchmarks/bench_safety.py --datasets g50c --g50c-rows 10000 --draws 3  # other sizes

Each semi-supervised estimator runs WITH ITS DEFAULTS: only ``client``, ``n_blocks``,
``random_state`` (0; the stability mode varies it) and, for LapRLS / LapSVM on more than
``--exact-max`` rows (5000, the size up to which their exact expansion is solved on the driver),
``n_components`` (``--components``, 1000 Nystrom landmarks) are set; ``--solver primal`` sets
LapRLS / LapSVM's solver where they expand over every row (the path the default solver takes
beyond 5000 rows without ``n_components``). Labels are 0/1 and the
unlabeled rows are marked -1 (scikit-learn's convention, the semi-supervised estimators'
default marker; the supervised L2SVM / RLS are told ``unlabeled=-1`` so they ignore those rows).

Supervised counterparts, fitted on the same labeled rows of the same draw:

| semi-supervised | supervised counterpart |
|---|---|
| LapRLS | LapRLS(gamma_I=0, n_neighbors=10, p=1): kernel RLS with the same kernel and gamma_A (and the same Nystrom landmarks), its RBF width chosen on the labels among the default's candidates (exact and Nystrom paths alike); it is given the graph the semi-supervised fit built, which gamma_I=0 ignores, so its seconds hold no kNN build |
| LapSVM | LapSVM(gamma_I=0, ...) likewise: the kernel L2-SVM |
| KernelDAS3VM | KernelDAS3VM fitted on the labeled rows alone (its supervised kernel L2-SVM, same kernel, width and gamma_A) |
| LinearLapRLS | RLS, same gamma_A |
| LinearLapSVM, TSVM, DAS3VM | L2SVM, same gamma_A |
| GraphTransduction | RLS (gamma_A at its default, 1e-3): the squared loss, as the graph system's |

A supervised fit shared by several rows (the same class and parameters on the same draw) is
fitted once.

Data sets (a stratified draw of the labeled rows per ``--draws`` seed, at least one per class;
the error is on the unlabeled rows, i.e. transductive; classes binarized to 0/1):

| name | rows | labels | what |
|---|---|---|---|
| moons | 1,000 | 10 (5 per class) | two moons, noise 0.1 |
| g50c-2k, g50c-10k, g50c-50k | 2,000 / 10,000 / 50,000 (``--g50c-rows``) | 100 (``--g50c-labels``) | g50c-like: two 50-d unit Gaussians, Bayes error 5% (``dask_ssl.data.g50c``) |
| hw-fac, hw-fou, hw-kar, hw-mor, hw-pix, hw-zer | 2,000 | 100 | UCI handwritten digits (HW.mat), one view each, class id 1 (digit 0 in the UCI files' order, 200 rows) vs the rest, features as stored |
| bbc | 685 | 50 | BBC news (BBC.mat), the four segment views side by side (18,641 term counts), class id 3 (226 rows, the largest) vs the rest; ltc tf-idf ``(1 + log tf) log(n / df)``, rows l2-normalized |
| kdd99 | 494,021 | 1,000 (``--kdd99-labels``) | KDD Cup 99 10% sample, attack vs normal (``dask_ssl.data.read_kdd99``) |
| rcv1-100, rcv1-1000 | 200,000 (``--rcv1-rows``) | 100 / 1,000 (``--rcv1-labels``) | RCV1-like sparse text (``dask_ssl.data.rcv1_like``, seed 0) |

The sets run smallest first, so an interrupted run of the large ones keeps the small ones.

Which estimators run where: LapRLS, LapSVM and GraphTransduction, LinearLapRLS, LinearLapSVM on
every set (LapRLS / LapSVM exact up to ``--exact-max`` rows, Nystrom above); KernelDAS3VM only up
to ``--exact-max`` rows (it has no Nystrom option: its Gram matrix is dense on the driver); TSVM
and DAS3VM on the linear sets (all but moons). ``--plan`` prints the resulting grid. The choice
is made on the full-size row counts, so a run shrunk by ``--rows-scale`` (every set to that share
of its rows, at least 100, a stratified subset of the real sets; labels at most a quarter of the
rows; n_components at most half) takes the same paths.

Before the first timed fit every selected estimator and counterpart is fitted once, untimed, on
200 two-moons rows and 300 small RCV1-like rows, so that compiling the numba kernels is not in
the first figure (``--no-warm-up`` skips it). The data of a set are scattered to the workers
once (RowBlocks, one block per worker thread unless ``--blocks``) and every distributed fit
reads those blocks; each fit builds its own kNN graph, as its defaults say.

Table columns: error % on the unlabeled rows (mean and worst over the draws) of the default and of
its counterpart, the mean paired difference (default - supervised, percentage points) and the
worst draw's difference, mean fit seconds of each, and when the fitted default has a non-empty
``selection_``: the chosen candidate per draw (counted) and the selection time ratio, the default
fit's seconds over those of a fit with the chosen candidate given as parameters (on the first
``--ratio-draws`` draws; the extra fit is timed only, not scored). Target per row: FAIL when the
default's mean error exceeds the counterpart's by more than max(0.3 points, 5% of the
counterpart's error); on moons, g50c-*, hw-* and the text sets (bbc, rcv1-*) the mean must also
be lower than the counterpart's (FAIL "not better" otherwise). A fit that raises is recorded
with its error text and the run goes on.

Stability mode (``--random-states R``): the first draw's labels only, each default whose result
can depend on ``random_state`` (a kNN graph or Nystrom landmarks: LapRLS, LapSVM, LinearLapRLS,
LinearLapSVM, GraphTransduction) fitted with random_state 0..R-1; the table gives the errors and
their spread max - min.

The table goes to stdout as markdown (with the command line, library versions and the load
average at start and end); progress lines go to stderr; ``--json PATH`` also writes every fit's
record (rewritten after each fit, so an interrupted run keeps what it finished).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import shlex
import subprocess
import sys
import time
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from typing import Callable

import numpy as np
import scipy.sparse as sp

from _common import KDD99, MULTIVIEW, local_cluster

#: HW.mat views in file order (the UCI "Multiple Features" files).
HW_VIEWS = ("fac", "fou", "kar", "mor", "pix", "zer")
#: Keys of a ``selection_`` row that score a candidate rather than name it.
SCORE_KEYS = {"errors", "error", "stderr", "squared", "passed", "chosen", "loo_errors"}
#: Data sets on which the default must beat its counterpart on average.
MUST_IMPROVE = ("moons", "g50c", "hw", "bbc", "rcv1")


def log(*parts) -> None:
    print(*parts, file=sys.stderr, flush=True)


def load_text() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


# data sets ------------------------------------------------------------------------------------
@dataclass
class DataSpec:
    name: str
    key: str  # data shared by specs with the same key (rcv1-100, rcv1-1000)
    rows: int  # full-size rows
    labels: int
    load: Callable  # scale -> (X, y in {0, 1})
    linear: bool = True  # TSVM / DAS3VM run here


def _scaled(n, scale, floor=100):
    return n if scale >= 1 else max(floor, int(round(n * scale)))


def _subsample(X, y, scale, floor=100):
    """A stratified subset of ``scale`` of the rows (at least ``floor``, one per class), in
    their order; all rows when ``scale >= 1``."""
    if scale >= 1:
        return X, y
    from dask_ssl.data import stratified_split

    keep = stratified_split(y, n_labeled=min(len(y), _scaled(len(y), scale, floor)),
                            seed=12345).labeled
    return X[keep], y[keep]


def _moons(scale):
    from dask_ssl.data import two_moons

    X, y = two_moons(n=_scaled(1000, scale), noise=0.1, seed=0)
    return X, (y > 0).astype(np.int64)


def _g50c(n):
    def load(scale):
        from dask_ssl.data import g50c

        X, y = g50c(n=_scaled(n, scale), seed=0)
        return X, (y > 0).astype(np.int64)
    return load


def _hw(view, positive):
    def load(scale):
        from dask_ssl.data import read_multiview

        views, classes = read_multiview(MULTIVIEW / "HW.mat")
        return _subsample(views[HW_VIEWS.index(view)], (classes == positive).astype(np.int64),
                          scale)
    return load


def _bbc(positive):
    def load(scale):
        from dask_ssl.data import read_multiview
        from dask_ssl.data.generators import _document_frequency, _idf, _tf_idf

        views, classes = read_multiview(MULTIVIEW / "BBC.mat")
        counts = sp.hstack(views, format="csr")
        counts.eliminate_zeros()
        X = _tf_idf(counts, _idf([_document_frequency(counts)], counts.shape[0]))
        return _subsample(X, (classes == positive).astype(np.int64), scale)
    return load


def _kdd99(scale):
    from dask_ssl.data import read_kdd99

    X, y = read_kdd99(str(KDD99))
    return _subsample(sp.csr_matrix(X), (np.asarray(y) > 0).astype(np.int64), scale)


def _rcv1(n):
    def load(scale):
        from dask_ssl.data import rcv1_like

        X, y = rcv1_like(n_rows=_scaled(n, scale), seed=0)
        return X, (y > 0).astype(np.int64)
    return load


def _count_name(n: int) -> str:
    """``n`` rows as a set name's suffix: 2k for 2000, 12500 as is."""
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def _counts(text: str, what: str) -> list[int]:
    try:
        counts = [int(float(c)) for c in text.split(",") if c.strip()]
    except ValueError:
        raise SystemExit(f"{what}: comma-separated counts, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise SystemExit(f"{what}: counts of at least 1, got {text!r}")
    return counts


def data_specs(args) -> list[DataSpec]:
    """The data sets, with the g50c-like rows, the KDD99 and RCV1-like label counts and the
    RCV1-like rows the arguments give, smallest first (a run does the cheap sets first)."""
    specs = [DataSpec("moons", "moons", 1000, 10, _moons, linear=False)]
    specs += [DataSpec(f"g50c-{_count_name(n)}", f"g50c-{n}", n, args.g50c_labels, _g50c(n))
              for n in _counts(args.g50c_rows, "--g50c-rows")]
    specs += [DataSpec(f"hw-{v}", f"hw-{v}", 2000, 100, _hw(v, args.hw_class)) for v in HW_VIEWS]
    specs += [DataSpec("bbc", "bbc", 685, 50, _bbc(args.bbc_class))]
    specs += [DataSpec("kdd99" if i == 0 else f"kdd99-{labels}", "kdd99", 494_021, labels,
                       _kdd99)
              for i, labels in enumerate(_counts(args.kdd99_labels, "--kdd99-labels"))]
    specs += [DataSpec(f"rcv1-{labels}", "rcv1", args.rcv1_rows, labels, _rcv1(args.rcv1_rows))
              for labels in _counts(args.rcv1_labels, "--rcv1-labels")]
    return sorted(specs, key=lambda s: s.rows)


def select(items, wanted: str | None, name=lambda x: x, what="item"):
    """``items`` named in the comma-separated ``wanted`` (exact names, case-insensitive, or a
    prefix before '-': "hw" for every hw-* set), in ``items``' order; all when None."""
    if not wanted:
        return list(items)
    keys = [w.strip().lower() for w in wanted.split(",") if w.strip()]
    names = [name(i).lower() for i in items]
    for k in keys:
        if not any(n == k or n.split("-")[0] == k for n in names):
            raise SystemExit(f"unknown {what} {k!r}; choose from {', '.join(map(name, items))}")
    return [i for i, n in zip(items, names) if any(n == k or n.split("-")[0] == k for k in keys)]


# estimators -----------------------------------------------------------------------------------
@dataclass
class Context:
    """What one data set's fits share."""

    client: object
    n_blocks: int | None
    X: object  # in memory (NumPy / CSR)
    blocks: object  # the same rows as RowBlocks on the workers
    n_components: int | None  # Nystrom m for the kernel estimators, None: exact
    random_state: int = 0
    solver: str | None = None  # LapRLS / LapSVM's solver on the exact expansion, None: default


def _set(cls, ctx, **extra) -> dict:
    """``extra`` plus the run settings ``cls`` takes: client, n_blocks, random_state."""
    params = inspect.signature(cls).parameters
    kw = {k: v for k, v in (("client", ctx.client), ("n_blocks", ctx.n_blocks),
                            ("random_state", ctx.random_state)) if k in params and v is not None}
    kw.update(extra)
    return kw


@dataclass
class Fit:
    """One estimator to fit: how to make it, what to fit it on, how to read its labels."""

    label: str  # as printed
    make: Callable
    rows: str = "all"  # "all" rows with y marked, or "labeled" rows only
    data: str = "blocks"  # "blocks" (RowBlocks) or "local" (in memory)
    graph_from: object = None  # a fitted estimator whose graph_ to pass (ignored by the result)
    transductive: bool = False  # read transduction_ instead of predict


@dataclass
class EstimatorSpec:
    name: str
    default: Callable  # ctx -> Fit
    supervised: Callable  # (ctx, fitted default or None) -> Fit
    applies: Callable  # (DataSpec, exact_max) -> (bool, why not)
    random_state_matters: bool = False
    no_random_state: str = ""  # why the stability mode skips it


def _gamma_A(est):
    return est.get_params()["gamma_A"]


def _kernel_extra(ctx) -> dict:
    """LapRLS / LapSVM's run settings: Nystrom landmarks, or the solver on every row."""
    if ctx.n_components is not None:
        return {"n_components": ctx.n_components}
    return {} if ctx.solver is None else {"solver": ctx.solver}


def _kernel_default(cls):
    def make(ctx):
        extra = _kernel_extra(ctx)
        label = cls.__name__ + ("" if ctx.n_components is None else f" m={ctx.n_components}")
        return Fit(label, lambda: cls(**_set(cls, ctx, **extra)))
    return make


def _kernel_supervised(cls):
    def make(ctx, fitted):
        extra = _kernel_extra(ctx)
        label = f"{cls.__name__}(gamma_I=0)" + ("" if ctx.n_components is None
                                                else f" m={ctx.n_components}")
        return Fit(label, lambda: cls(**_set(cls, ctx, gamma_I=0.0, n_neighbors=10, p=1,
                                             **extra)),
                   graph_from=fitted)
    return make


def _linear(cls_name, sup_name=None, same_gamma_A=True):
    def default(ctx):
        from dask_ssl import models

        cls = getattr(models, cls_name)
        return Fit(cls_name, lambda: cls(**_set(cls, ctx)))

    def supervised(ctx, fitted):
        from dask_ssl import models

        cls = getattr(models, sup_name)
        extra = {"unlabeled": -1}
        if same_gamma_A:
            extra["gamma_A"] = _gamma_A(getattr(models, cls_name)())
        label = sup_name + (f"(gamma_A={extra['gamma_A']:g})" if same_gamma_A else "")
        return Fit(label, lambda: cls(**_set(cls, ctx, **extra)))
    return default, supervised


def _kernel_da_default(ctx):
    from dask_ssl.models import KernelDAS3VM

    return Fit("KernelDAS3VM", lambda: KernelDAS3VM(**_set(KernelDAS3VM, ctx)), data="local")


def _kernel_da_supervised(ctx, fitted):
    from dask_ssl.models import KernelDAS3VM

    # the default's width (filled in from all its rows), not one from the labeled rows alone
    width = getattr(fitted, "kernel_params_", None)
    return Fit("KernelDAS3VM(labeled rows only)",
               lambda: KernelDAS3VM(**_set(KernelDAS3VM, ctx, kernel_params=width)),
               rows="labeled", data="local")


def _everywhere(spec, exact_max):
    return True, ""


def _exact_only(spec, exact_max):
    return (spec.rows <= exact_max,
            f"{spec.rows} rows > {exact_max}: exact kernel only (no n_components)")


def _linear_sets(spec, exact_max):
    return spec.linear, "not a linear set"


LINEAR_SEED = "random_state seeds only Nystrom landmarks, which the linear default has none of"


def estimator_specs() -> list[EstimatorSpec]:
    from dask_ssl.models import LapRLS, LapSVM

    lin_rls = _linear("LinearLapRLS", "RLS")
    lin_svm = _linear("LinearLapSVM", "L2SVM")
    gt = _linear("GraphTransduction", "RLS", same_gamma_A=False)
    gt_default = gt[0]

    def transduction(ctx):
        fit = gt_default(ctx)
        fit.transductive = True
        return fit

    tsvm = _linear("TSVM", "L2SVM")
    da = _linear("DAS3VM", "L2SVM")
    return [
        EstimatorSpec("LapRLS", _kernel_default(LapRLS), _kernel_supervised(LapRLS),
                      _everywhere, True),
        EstimatorSpec("LapSVM", _kernel_default(LapSVM), _kernel_supervised(LapSVM),
                      _everywhere, True),
        EstimatorSpec("KernelDAS3VM", _kernel_da_default, _kernel_da_supervised, _exact_only,
                      no_random_state="takes no random_state"),
        EstimatorSpec("LinearLapRLS", *lin_rls, _everywhere, True),
        EstimatorSpec("LinearLapSVM", *lin_svm, _everywhere, True),
        EstimatorSpec("GraphTransduction", transduction, gt[1], _everywhere, True),
        EstimatorSpec("TSVM", *tsvm, _linear_sets, no_random_state=LINEAR_SEED),
        EstimatorSpec("DAS3VM", *da, _linear_sets, no_random_state=LINEAR_SEED),
    ]


# fitting --------------------------------------------------------------------------------------
def _error_text(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first[:160]}"


def run_fit(fit: Fit, ctx: Context, y, y_train, unl) -> dict:
    """Fit, time and score one estimator; never raises (the error text is recorded)."""
    rec = {"estimator": fit.label}
    try:
        est = fit.make()
        X = ctx.blocks if fit.data == "blocks" else ctx.X
        kw = {}
        if fit.graph_from is not None and getattr(fit.graph_from, "graph_", None) is not None:
            kw["graph"] = fit.graph_from.graph_
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            if fit.rows == "labeled":
                lab = y_train != -1
                Xl = ctx.X[np.flatnonzero(lab)]
                est.fit(Xl, y_train[lab], **kw)
            else:
                est.fit(X, y_train, **kw)
            rec["fit_s"] = time.perf_counter() - t0
            pred = est.transduction_ if fit.transductive else est.predict(X)
        pred = np.asarray(pred)
        rec["error"] = 100.0 * float(np.mean(pred[unl] != y[unl]))
        rec["warnings"] = sorted({f"{w.category.__name__}: {str(w.message)[:200]}"
                                  for w in caught})
        rec["est"] = est
    except Exception as exc:  # noqa: BLE001 - one failing fit must not end the run
        rec["failed"] = _error_text(exc)
        rec["traceback"] = traceback.format_exc(limit=6)
    return rec


def chosen_candidate(est):
    """``(text, params)`` of the candidate a fitted estimator's ``selection_`` chose: the row
    marked ``chosen``, else (LapRLS / LapSVM's graph table) the fewest errors, first on ties;
    ``params`` are the entries that are constructor parameters. None without a selection."""
    sel = getattr(est, "selection_", None)
    if not sel:
        return None
    rows = list(sel)
    if any("chosen" in r for r in rows):
        row = next(r for r in rows if r.get("chosen"))
    else:
        score = next((k for k in ("errors", "loo_errors") if k in rows[0]), None)
        row = rows[0] if score is None else min(rows, key=lambda r: r[score])
    named = {k: v for k, v in row.items() if k not in SCORE_KEYS}
    text = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in named.items())
    # the supervised row's graph columns are None: no graph term, any graph gives that fit
    params = {k: v for k, v in named.items()
              if k in est.get_params(deep=False) and v is not None}
    if "gamma" in named and "kernel_params" in est.get_params(deep=False):
        # LapRLS / LapSVM's chosen RBF width: given as the kernel's gamma, nothing is chosen
        params["kernel_params"] = {**(est.kernel_params or {}), "gamma": named["gamma"]}
    return text, params


def selection_ratio(est, fit_s, X, y_train) -> float | None:
    """Seconds of the default fit over those of the same fit with the chosen candidate given."""
    chosen = chosen_candidate(est)
    if chosen is None or not chosen[1]:
        return None
    fixed = type(est)(**{**est.get_params(deep=False), **chosen[1]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        fixed.fit(X, y_train)
    return fit_s / (time.perf_counter() - t0)


def _sup_key(fit: Fit):
    try:
        est = fit.make()
    except Exception:  # noqa: BLE001 - run_fit records the error
        return (fit.label, id(fit))
    params = {k: v for k, v in est.get_params(deep=False).items() if k != "client"}
    return (type(est).__name__, fit.rows, repr(sorted(params.items())),
            fit.graph_from is not None and type(fit.graph_from).__name__)


def _summary(rec: dict) -> str:
    if "failed" in rec:
        return f"failed ({rec['failed']})"
    return f"{rec['error']:.2f}% in {rec['fit_s']:.1f} s"


def run_dataset(spec, X, y, n_labels, estimators, args, client, records, saved=None,
                quiet=False) -> None:
    """Every estimator of ``estimators`` that applies, on ``--draws`` label draws: one record
    per (estimator, draw) appended to ``records``, ``saved()`` called after each (a run
    stopped in a large set keeps the draws it finished)."""
    from dask_ssl.data import stratified_split
    from dask_ssl.linalg import RowBlocks

    blocks = RowBlocks.from_array(X, client=client, n_blocks=args.blocks)
    ctx = Context(client, args.blocks, X, blocks, n_components(spec, X.shape[0], args),
                  solver=args.solver)
    for draw in range(args.first_draw, args.first_draw + args.draws):
        split = stratified_split(y, n_labeled=n_labels, seed=draw)
        y_train = split.y_train(y, marker=-1)
        unl = split.unlabeled
        shared = {}  # supervised fits of this draw, by class and parameters
        for es in estimators:
            ok, why = es.applies(spec, args.exact_max)
            if not ok:
                if draw == 0:
                    records.append({"dataset": spec.name, "name": es.name, "skipped": why})
                continue
            ctx.random_state = 0
            fit = es.default(ctx)
            rec = run_fit(fit, ctx, y, y_train, unl)
            est = rec.pop("est", None)
            if est is not None:
                chosen = chosen_candidate(est)
                if getattr(est, "selection_cost_", None) is not None:
                    rec["selection_cost"] = est.selection_cost_
                if chosen is not None:
                    rec["chosen"] = chosen[0]
                    if draw < args.first_draw + args.ratio_draws:
                        try:
                            rec["selection_ratio"] = selection_ratio(
                                est, rec["fit_s"], ctx.blocks if fit.data == "blocks" else ctx.X,
                                y_train)
                        except Exception as exc:  # noqa: BLE001
                            rec["selection_ratio_failed"] = _error_text(exc)
            sfit = es.supervised(ctx, est)
            key = _sup_key(sfit)
            if key not in shared:
                sup = run_fit(sfit, ctx, y, y_train, unl)
                sup.pop("est", None)
                shared[key] = sup
            sup = shared[key]
            records.append({"dataset": spec.name, "name": es.name, "draw": draw,
                            "default": rec, "supervised": sup})
            if saved is not None:
                saved()
            if quiet:
                continue
            log(f"  {spec.name} draw {draw} {fit.label}: {_summary(rec)}"
                + (f" [{rec['chosen']}]" if "chosen" in rec else "")
                + f"; {sup['estimator']}: {_summary(sup)}")


def run_stability(spec, X, y, n_labels, estimators, args, client, records, saved=None) -> None:
    """The first draw's labels, every estimator whose fit depends on ``random_state`` fitted
    with each of ``--random-states`` seeds; records appended and saved as in
    :func:`run_dataset`."""
    from dask_ssl.data import stratified_split
    from dask_ssl.linalg import RowBlocks

    blocks = RowBlocks.from_array(X, client=client, n_blocks=args.blocks)
    ctx = Context(client, args.blocks, X, blocks, n_components(spec, X.shape[0], args),
                  solver=args.solver)
    split = stratified_split(y, n_labeled=n_labels, seed=0)
    y_train = split.y_train(y, marker=-1)
    for es in estimators:
        ok, why = es.applies(spec, args.exact_max)
        if ok and not es.random_state_matters:
            ok, why = False, es.no_random_state
        if not ok:
            records.append({"dataset": spec.name, "name": es.name, "skipped": why})
            continue
        for rs in range(args.random_states):
            ctx.random_state = rs
            fit = es.default(ctx)
            rec = run_fit(fit, ctx, y, y_train, split.unlabeled)
            est = rec.pop("est", None)
            if est is not None and chosen_candidate(est) is not None:
                rec["chosen"] = chosen_candidate(est)[0]
            records.append({"dataset": spec.name, "name": es.name, "random_state": rs,
                            "default": rec})
            if saved is not None:
                saved()
            log(f"  {spec.name} random_state {rs} {fit.label}: {_summary(rec)}")


def warm_up(estimators, args, client) -> None:
    """Fit every selected default and counterpart once, untimed, on small dense and sparse
    data, so that compiling the numba kernels is not in the first timed fit."""
    from dask_ssl.data import rcv1_like, two_moons

    Xd, yd = two_moons(n=200, noise=0.1, seed=1)
    Xs, ys = rcv1_like(n_rows=300, n_features=4000, topic_size=200, seed=1)
    spec = DataSpec("warm-up", "warm-up", 200, 20, None)
    for X, y in ((Xd, yd), (Xs, ys)):
        y = (y > 0).astype(np.int64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run_dataset(spec, X, y, 20, estimators, argparse.Namespace(
                **{**vars(args), "draws": 1, "first_draw": 0, "ratio_draws": 0}), client, [],
                quiet=True)


# tables ---------------------------------------------------------------------------------------
def _fmt(v, spec=".2f"):
    return "-" if v is None else format(v, spec)


def _must_improve(name: str) -> bool:
    return name.split("-")[0] in MUST_IMPROVE


def summarize(records, meta) -> list[dict]:
    """One row per (data set, estimator)."""
    rows, order = {}, []
    for r in records:
        key = (r["dataset"], r["name"])
        if key not in rows:
            rows[key] = []
            order.append(key)
        rows[key].append(r)
    out = []
    for key in order:
        rs = rows[key]
        ds, name = key
        row = {"dataset": ds, "n": meta[ds]["n"], "labels": meta[ds]["labels"], "name": name}
        if "skipped" in rs[0]:
            row["skipped"] = rs[0]["skipped"]
            out.append(row)
            continue
        row["label"] = next((r["default"]["estimator"] for r in rs), name)
        row["sup_label"] = next((r["supervised"]["estimator"] for r in rs), "")
        ok = [r for r in rs if "error" in r["default"] and "error" in r["supervised"]]
        d_err = [r["default"]["error"] for r in rs if "error" in r["default"]]
        s_err = [r["supervised"]["error"] for r in rs if "error" in r["supervised"]]
        row["draws"] = len(rs)
        row["paired"] = len(ok)
        row["failures"] = sorted({r[side]["failed"] for r in rs for side in ("default",
                                  "supervised") if "failed" in r[side]})
        if d_err:
            row["mean"], row["worst"] = float(np.mean(d_err)), float(np.max(d_err))
            row["fit_s"] = float(np.mean([r["default"]["fit_s"] for r in rs
                                          if "fit_s" in r["default"]]))
        if s_err:
            row["sup_mean"], row["sup_worst"] = float(np.mean(s_err)), float(np.max(s_err))
            row["sup_fit_s"] = float(np.mean([r["supervised"]["fit_s"] for r in rs
                                              if "fit_s" in r["supervised"]]))
        if ok:
            diffs = [r["default"]["error"] - r["supervised"]["error"] for r in ok]
            sup_mean = float(np.mean([r["supervised"]["error"] for r in ok]))
            row["diff"], row["worst_diff"] = float(np.mean(diffs)), float(np.max(diffs))
            tol = max(0.3, 0.05 * sup_mean)
            row["tolerance"] = tol
            if row["diff"] > tol:
                row["target"] = f"FAIL (worse by {row['diff']:.2f} > {tol:.2f})"
            elif _must_improve(ds) and not row["diff"] < 0:
                row["target"] = "FAIL (not better)"
            else:
                row["target"] = "pass"
            if len(ok) < len(rs):
                row["target"] += f" ({len(ok)} of {len(rs)} draws)"
        else:
            row["target"] = "no paired draw"
        chosen = Counter(r["default"]["chosen"] for r in rs if "chosen" in r["default"])
        row["chosen"] = "; ".join(f"{c} x{k}" if len(rs) > 1 else c
                                  for c, k in chosen.most_common())
        ratios = [r["default"]["selection_ratio"] for r in rs
                  if r["default"].get("selection_ratio") is not None]
        row["selection_ratio"] = float(np.mean(ratios)) if ratios else None
        warns = Counter(w.split(":")[0] for r in rs for w in r["default"].get("warnings", []))
        row["warnings"] = ", ".join(f"{w} x{k}" for w, k in warns.most_common())
        out.append(row)
    return out


def markdown(summary) -> str:
    head = ("| data | n | labels | default | error % mean / worst | supervised counterpart "
            "| error % mean / worst | diff mean / worst draw (points) | fit s default / "
            "supervised | chosen (selection_) | selection time ratio | target | notes |")
    lines = [head, "|" + "---|" * 13]
    for r in summary:
        if "skipped" in r:
            lines.append(f"| {r['dataset']} | {r['n']} | {r['labels']} | {r['name']} | - | - | "
                         f"- | - | - | - | - | skipped | {r['skipped']} |")
            continue
        notes = "; ".join(r["failures"] + ([f"warnings: {r['warnings']}"] if r["warnings"]
                                           else []))
        lines.append(
            f"| {r['dataset']} | {r['n']} | {r['labels']} | {r['label']} | "
            f"{_fmt(r.get('mean'))} / {_fmt(r.get('worst'))} | {r['sup_label']} | "
            f"{_fmt(r.get('sup_mean'))} / {_fmt(r.get('sup_worst'))} | "
            f"{_fmt(r.get('diff'), '+.2f')} / {_fmt(r.get('worst_diff'), '+.2f')} | "
            f"{_fmt(r.get('fit_s'), '.1f')} / {_fmt(r.get('sup_fit_s'), '.1f')} | "
            f"{r['chosen'] or '-'} | {_fmt(r.get('selection_ratio'))} | {r['target']} | "
            f"{notes or ''} |")
    return "\n".join(lines)


def stability_markdown(records, meta, n_states) -> str:
    lines = ["| data | n | labels | default | error % per random_state | mean | spread max - min "
             "(points) | fit s mean | chosen | notes |", "|" + "---|" * 10]
    groups = {}
    for r in records:
        groups.setdefault((r["dataset"], r["name"]), []).append(r)
    for (ds, name), rs in groups.items():
        n, labels = meta[ds]["n"], meta[ds]["labels"]
        if "skipped" in rs[0]:
            lines.append(f"| {ds} | {n} | {labels} | {name} | - | - | - | - | - | "
                         f"skipped: {rs[0]['skipped']} |")
            continue
        errs = [r["default"].get("error") for r in rs]
        got = [e for e in errs if e is not None]
        fails = sorted({r["default"]["failed"] for r in rs if "failed" in r["default"]})
        chosen = Counter(r["default"]["chosen"] for r in rs if "chosen" in r["default"])
        fit_s = [r["default"]["fit_s"] for r in rs if "fit_s" in r["default"]]
        lines.append(
            f"| {ds} | {n} | {labels} | {rs[0]['default']['estimator']} | "
            + " / ".join("failed" if e is None else f"{e:.2f}" for e in errs) + " | "
            f"{_fmt(np.mean(got) if got else None)} | "
            f"{_fmt(max(got) - min(got) if got else None)} | "
            f"{_fmt(np.mean(fit_s) if fit_s else None, '.1f')} | "
            + ("; ".join(f"{c} x{k}" for c, k in chosen.most_common()) or "-") + " | "
            + "; ".join(fails) + " |")
    return "\n".join(lines)


# run ------------------------------------------------------------------------------------------
def versions() -> str:
    out = []
    for pkg in ("dask-ssl", "numpy", "scipy", "scikit-learn", "dask", "distributed", "numba",
                "pynndescent"):
        try:
            out.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            out.append(f"{pkg} ?")
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        rev = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        if rev:
            out.append(f"commit {rev}")
    except Exception:  # noqa: BLE001
        pass
    return f"Python {platform.python_version()}; " + ", ".join(out)


def plan(specs, estimators, args) -> str:
    lines = ["| data | rows | labels | " + " | ".join(e.name for e in estimators) + " |",
             "|" + "---|" * (3 + len(estimators))]
    for spec in specs:
        n = _scaled(spec.rows, args.rows_scale)
        cells = []
        for es in estimators:
            ok, _ = es.applies(spec, args.exact_max)
            m = n_components(spec, n, args)
            if not ok:
                cells.append("-")
            elif es.name in ("LapRLS", "LapSVM") and m is not None:
                cells.append(f"Nystrom m={m}")
            elif es.name in ("LapRLS", "LapSVM", "KernelDAS3VM"):
                cells.append("exact")
            else:
                cells.append("yes")
        lines.append(f"| {spec.name} | ~{n} | {label_count(spec, n)} | " + " | ".join(cells)
                     + " |")
    return "\n".join(lines)


def n_components(spec, n_rows, args) -> int | None:
    """Nystrom landmarks of LapRLS / LapSVM: None (the exact expansion) on sets of at most
    ``--exact-max`` rows at full size, else ``--components`` (at most half the rows of a
    shrunken set); decided at full size so that a smoke run takes the same paths."""
    return None if spec.rows <= args.exact_max else min(args.components, n_rows // 2)


def label_count(spec, n_rows) -> int:
    """The spec's labels, at most a quarter of the rows (shrunken smoke runs)."""
    return max(2, min(spec.labels, n_rows // 4))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default=None,
                    help="comma-separated: moons, g50c-2k, g50c-10k, g50c-50k, hw-fac, hw-fou, "
                         "hw-kar, hw-mor, hw-pix, hw-zer, bbc, kdd99, rcv1-100, rcv1-1000, or a "
                         "family (g50c, hw, rcv1); default all")
    ap.add_argument("--estimators", default=None,
                    help="comma-separated: LapRLS, LapSVM, KernelDAS3VM, LinearLapRLS, "
                         "LinearLapSVM, GraphTransduction, TSVM, DAS3VM; default all")
    ap.add_argument("--draws", type=int, default=5,
                    help="label draws (seeds first-draw .. first-draw + draws - 1)")
    ap.add_argument("--first-draw", type=int, default=0,
                    help="seed of the first label draw (a long run continued in pieces)")
    ap.add_argument("--random-states", type=int, default=0,
                    help="stability mode: the first draw's labels, random_state 0..R-1 for each "
                         "default that uses it; the spread of its error (no supervised fits; "
                         "--draws is ignored)")
    ap.add_argument("--rows-scale", type=float, default=1.0,
                    help="shrink every data set to this share of its rows (at least 100; "
                         "labels at most a quarter of the rows), for smoke tests")
    ap.add_argument("--exact-max", type=int, default=5000,
                    help="largest row count for the exact kernel expansion (LapRLS, LapSVM, "
                         "KernelDAS3VM); above it LapRLS / LapSVM get n_components")
    ap.add_argument("--components", type=int, default=1000,
                    help="n_components of LapRLS / LapSVM above --exact-max")
    ap.add_argument("--solver", choices=("direct", "primal"), default=None,
                    help="solver of LapRLS / LapSVM on the exact expansion (default: theirs)")
    ap.add_argument("--ratio-draws", type=int, default=1,
                    help="draws on which the selection time ratio is measured (one extra fit "
                         "each, with the chosen candidate given); 0 skips it")
    ap.add_argument("--g50c-rows", default="2000,10000,50000",
                    help="rows of the g50c-like sets (two 50-d Gaussians, Bayes error 5%%), "
                         "comma-separated; each is a set named g50c-<rows>, 2000 -> g50c-2k")
    ap.add_argument("--g50c-labels", type=int, default=100, help="labels of the g50c-like sets")
    ap.add_argument("--kdd99-labels", default="1000",
                    help="labels of the KDD99 set, comma-separated for several (the first is "
                         "named kdd99, the others kdd99-<labels>)")
    ap.add_argument("--rcv1-rows", type=int, default=200_000, help="rows of the RCV1-like sets")
    ap.add_argument("--rcv1-labels", default="100,1000",
                    help="labels of the RCV1-like sets, comma-separated; each is a set named "
                         "rcv1-<labels> on the same rows")
    ap.add_argument("--hw-class", type=int, default=1,
                    help="HW class id (from 1) that is positive; 1 is digit 0")
    ap.add_argument("--bbc-class", type=int, default=3, help="BBC class id that is positive")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="threads per worker")
    ap.add_argument("--blocks", type=int, default=None,
                    help="row blocks (n_blocks); default one per worker thread")
    ap.add_argument("--no-warm-up", action="store_true",
                    help="skip the untimed fits on small data that compile the kernels before "
                         "the first timed fit")
    ap.add_argument("--json", default=None, help="also write every fit's record here")
    ap.add_argument("--plan", action="store_true", help="print which estimator runs where and "
                                                        "exit")
    ap.add_argument("--table", default=None, metavar="JSON",
                    help="print the table of a --json file (of a finished or stopped run) and "
                         "exit")
    args = ap.parse_args()
    if args.table:
        print(saved_table(args.table))
        return

    specs = select(data_specs(args), args.datasets, lambda s: s.name, "data set")
    estimators = select(estimator_specs(), args.estimators, lambda e: e.name, "estimator")
    if args.plan:
        print(plan(specs, estimators, args))
        return
    stability = args.random_states > 0
    started = datetime.now(timezone.utc)
    header = [f"# Unlabeled data never hurts{' (stability)' if stability else ''}", "",
              f"- command: `{' '.join(shlex.quote(a) for a in [sys.executable] + sys.argv)}`",
              f"- started {started:%Y-%m-%d %H:%M:%S} UTC, load average (1, 5, 15 min) at start: "
              f"{load_text()}, {os.cpu_count()} CPUs",
              f"- {versions()}",
              f"- LocalCluster: {args.workers} workers x {args.threads} threads, n_blocks "
              f"{args.blocks or 'one per worker thread'}; exact kernel up to {args.exact_max} "
              f"rows, n_components={args.components} above"
              + (f"; LapRLS / LapSVM solver={args.solver}" if args.solver else "")]
    for line in header:
        log(line)
    records, meta = [], {}
    t_run = time.perf_counter()
    with local_cluster(args.workers, args.threads) as client:
        if not args.no_warm_up:
            t0 = time.perf_counter()
            warm_up(estimators, args, client)
            log(f"warm-up fits (untimed in the table): {time.perf_counter() - t0:.1f} s")
        loaded_key, X, y = None, None, None
        for spec in specs:
            try:
                if spec.key != loaded_key:
                    X, y = None, None
                    t0 = time.perf_counter()
                    X, y = spec.load(args.rows_scale)
                    loaded_key = spec.key
                    log(f"{spec.name}: {X.shape[0]} x {X.shape[1]} "
                        f"{'sparse' if sp.issparse(X) else 'dense'}, positive share "
                        f"{np.mean(y):.3f}, loaded in {time.perf_counter() - t0:.1f} s; load "
                        f"average {load_text()}")
            except Exception as exc:  # noqa: BLE001
                log(f"{spec.name}: not loaded ({_error_text(exc)})")
                meta[spec.name] = {"n": "-", "labels": "-"}
                records += [{"dataset": spec.name, "name": e.name,
                             "skipped": f"data not loaded: {_error_text(exc)}"}
                            for e in estimators]
                loaded_key = None
                continue
            n_labels = label_count(spec, X.shape[0])
            meta[spec.name] = {"n": X.shape[0], "labels": n_labels}
            t0 = time.perf_counter()
            run = run_stability if stability else run_dataset
            saved = (lambda: write_json(args, records, meta, header)) if args.json else None
            try:
                run(spec, X, y, n_labels, estimators, args, client, records, saved)
            except Exception as exc:  # noqa: BLE001 - e.g. the data could not be scattered
                log(f"{spec.name}: stopped ({_error_text(exc)})")
                done = {r["name"] for r in records if r["dataset"] == spec.name}
                records += [{"dataset": spec.name, "name": e.name,
                             "skipped": f"run stopped: {_error_text(exc)}"} for e in estimators
                            if e.name not in done]
            log(f"{spec.name}: done in {time.perf_counter() - t0:.1f} s; load average "
                f"{load_text()}")
    footer = (f"- finished {datetime.now(timezone.utc):%Y-%m-%d %H:%M:%S} UTC after "
              f"{time.perf_counter() - t_run:.0f} s, load average at end: {load_text()}")
    print("\n".join(header + [footer, ""]))
    if stability:
        print(stability_markdown(records, meta, args.random_states))
    else:
        print(markdown(summarize(records, meta)))
        print()
        print("diff = default - supervised error on the same draws (points, negative: the "
              "default is better); FAIL when the mean diff exceeds max(0.3, 5% of the "
              "supervised error), or on moons, g50c, hw, bbc, rcv1 when it is not below 0. "
              "Selection time ratio: default fit s / fit s with the chosen candidate given.")
    if args.json:
        write_json(args, records, meta, header + [footer])


def saved_table(path) -> str:
    """The header and table of a ``--json`` file, as the run that wrote it prints them (so far,
    for a run that was stopped)."""
    with open(path) as f:
        doc = json.load(f)
    body = (stability_markdown(doc["records"], doc["meta"], doc["args"]["random_states"])
            if doc["args"]["random_states"] else markdown(summarize(doc["records"], doc["meta"])))
    return "\n".join(doc["header"] + ["", body])


def write_json(args, records, meta, header) -> None:
    doc = {"header": header, "args": vars(args), "meta": meta, "records": records}
    if args.random_states == 0:
        doc["summary"] = summarize(records, meta)
    tmp = f"{args.json}.tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, default=str)
    os.replace(tmp, args.json)


if __name__ == "__main__":
    main()
