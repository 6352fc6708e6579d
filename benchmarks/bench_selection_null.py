"""How often the selection rule lets a semi-supervised candidate through where the unlabeled
rows cannot help (issue 30): a random linear label over isotropic Gaussian rows, no clusters.

    python benchmarks/bench_selection_null.py                 # 200 draws, on the driver
    python benchmarks/bench_selection_null.py --fits --draws 20 --estimators LinearLapSVM

By default (cheap: no cluster) each draw runs the estimators' own selection functions on the
driver, as their Gram / direct paths do: LinearLapRLS's exact leave-one-out over its graph-term
shares (``_graph_weight.loo_gamma_I``), LinearLapSVM's check of that pick with the squared
hinge (``deformed_gram``, ``svm_held_out``, ``confirm``), and LapRLS's exact leave-one-out with
the linear kernel over ``gamma_I`` and its two default graphs (``manifold._loo_outputs``). The
graphs follow the estimators' default recipe, built with scikit-learn's exact kNN: heat weights
``exp(-d^2 / 4t)`` with ``4t`` the mean squared edge length, max-symmetrized, the normalized
Laplacian to the power ``p``. With ``--fits`` every estimator is fitted instead, on a
LocalCluster (2 workers), at its defaults (a few seconds a fit).

Each draw ``s`` (seeds 0..draws-1) is ``--rows`` rows of ``--dim`` independent standard normal
features, labeled by the sign of ``X w`` with ``w`` standard normal, and ``--per-class`` labeled
rows of each class (the rest marked -1). Every estimator runs at its defaults except ``client``,
``random_state`` (0) and, for LapRLS / LapSVM, ``kernel="linear"``: with the RBF kernel at the
seeds' ``gamma_A`` kernel RLS nearly interpolates and a graph term rightly wins as a smoother,
so only the linear kernel makes the supervised model the right answer. A draw counts as a false
pass when the fitted ``gamma_I_`` is above 0 (the graph term replaced the supervised model).

Beside the rule's false passes, the table gives those of the rule with the loss test alone
(before the sign test on the errors was added), recomputed from each fit's ``selection_``:
every row records the tests it ``passed``, so the loss test's choice among the same held-out
figures follows. Where an SVM checks a proxy's pick with its own loss and the loss test alone
would have picked another proxy candidate than the rule did, that check was not run and the
draw counts as unknown. The seconds are the fits' sum, with the load average of the run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from contextlib import nullcontext

import numpy as np

from _common import local_cluster

ESTIMATORS = ("LinearLapRLS", "LinearLapSVM", "LapRLS", "LapSVM", "GraphTransduction")
#: What the driver mode runs (module docstring).
DRIVER = ("LinearLapRLS", "LinearLapSVM", "LapRLS")


def draw(seed: int, rows: int, dim: int, per_class: int):
    """``(X, y, train)`` of draw ``seed`` (module docstring)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, dim))
    y = (X @ rng.normal(size=dim) > 0).astype(np.int64)
    train = np.full(rows, -1)
    for c in (0, 1):
        train[rng.choice(np.flatnonzero(y == c), per_class, replace=False)] = c
    return X, y, train


def loss_test_choice(rows: list) -> dict:
    """The row the loss test alone chooses among ``rows`` (one selection stage), as
    :func:`dask_ssl.models._selection.choose` does with both tests."""
    sup = next(r for r in rows if r["passed"] is None)
    eligible = [r for r in rows if r is sup
                or (r["errors"] < sup["errors"] and "loss" in r["passed"])]
    return min(eligible, key=lambda r: (r["errors"], r["squared"], r is not sup,
                                        rows.index(r)))


def loss_test_passes(selection: list):
    """Whether the loss test alone would have replaced the supervised model: True / False,
    None where it cannot be told from the table (module docstring)."""
    if not selection:
        return False
    proxy = [r for r in selection if r.get("criterion") in ("loo", "cv-squared")]
    check = [r for r in selection if r.get("criterion") == "cv" and proxy]
    stage = proxy or selection
    pick = loss_test_choice(stage)
    if pick["passed"] is None or not check:
        return pick["passed"] is not None
    names = [k for k in check[1] if k in ("n_neighbors", "p", "rho")]
    if any(pick[k] != check[1][k] for k in names):
        return None
    return loss_test_choice(check)["passed"] is not None


def heat_laplacian(X, k: int, p: int) -> np.ndarray:
    """The estimators' default graph on the rows ``X`` (module docstring) as ``L^p``."""
    from sklearn.neighbors import kneighbors_graph

    from dask_ssl.graph.dense import laplacian_matrix

    D = kneighbors_graph(X, k, mode="distance", include_self=False)
    D.data = np.exp(-D.data ** 2 / np.mean(D.data ** 2))
    M = np.linalg.matrix_power(laplacian_matrix(D.maximum(D.T), normalized=True), p)
    return 0.5 * (M + M.T)


def driver_selections(X, train) -> dict:
    """The selection tables of LinearLapRLS, LinearLapSVM and LapRLS (linear kernel) at their
    defaults on one draw, by their own selection functions on the driver."""
    from dask_ssl.models import LapRLS, LinearLapRLS
    from dask_ssl.models._graph_weight import (confirm, deformed_gram, loo_gamma_I,
                                               squared_hinge, svm_held_out, truth_of)
    from dask_ssl.models._selection import CV_FOLDS, choose, fold_of, table
    from dask_ssl.models._graph_seam import AUTO_GRAPHS
    from dask_ssl.models.manifold import AUTO_GAMMA_I, _loo_outputs

    n = X.shape[0]
    labeled = train >= 0
    Y = np.where(train[:, None] == 1, 1.0, -1.0) * labeled[:, None]
    Ms = [heat_laplacian(X, k, p) for k, p in AUTO_GRAPHS]
    out = {}
    # linear: the Gram path of LinearLapRLS / LinearLapSVM (costs 1/l, the graph of 10, p 1)
    lin = LinearLapRLS()
    Xa = np.column_stack([X, np.ones(n)])
    Xl, Yl = Xa[labeled], Y[labeled]
    cl = np.full(Xl.shape[0], 1.0 / Xl.shape[0])
    G = Xl.T @ (cl[:, None] * Xl)
    H = Xa.T @ Ms[0] @ Xa
    effective, selection = loo_gamma_I(G, H, Xl, cl, Yl, lin.gamma_A)
    out["LinearLapRLS"] = [dict(r) for r in selection]
    if effective > 0:
        fold = fold_of(truth_of(Yl), min(CV_FOLDS, Yl.shape[0]))
        held_out = [svm_held_out(deformed_gram(Xl, lin.gamma_A, w, H=H), cl, Yl, fold,
                                 tol=lin.tol, max_iter=lin.max_iter) for w in (0.0, effective)]
        pick = next(r for r in selection if r["chosen"])
        confirm(selection, [{"rho": 0.0, "gamma_I": 0.0},
                            {"rho": pick["rho"], "gamma_I": effective}],
                held_out, Yl, squared_hinge, proxy="loo")
    out["LinearLapSVM"] = selection
    # LapRLS direct, linear kernel: every (graph, gamma_I) candidate, gamma_I = 0 once
    gamma_A = LapRLS().gamma_A
    K = X @ X.T
    cases = [(j, g) for j in range(len(Ms)) for g in AUTO_GAMMA_I if g > 0 or j == 0]
    outputs = [_loo_outputs(K, Ms[j] @ K if g > 0 else None, g / n ** 2, Y, labeled, gamma_A)
               for j, g in cases]
    truth = truth_of(Yl)
    wrong = np.array([truth_of(o) != truth for o in outputs])
    squared = np.array([np.sum((Yl - o) ** 2, axis=1) for o in outputs])
    best = choose(wrong, squared, supervised=0)
    out["LapRLS"] = table([{"n_neighbors": None if g == 0 else AUTO_GRAPHS[j][0],
                            "p": None if g == 0 else AUTO_GRAPHS[j][1], "gamma_I": g}
                           for j, g in cases], wrong, squared, best)
    return out


def make(name: str, client):
    import dask_ssl.models as models

    kw = {"kernel": "linear"} if name in ("LapRLS", "LapSVM") else {}
    return getattr(models, name)(client=client, random_state=0, **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--rows", type=int, default=400)
    ap.add_argument("--dim", type=int, default=10)
    ap.add_argument("--per-class", type=int, default=40)
    ap.add_argument("--fits", action="store_true",
                    help="fit the estimators on a LocalCluster instead (slow)")
    ap.add_argument("--estimators", default=None,
                    help=f"with --fits: comma-separated, of {', '.join(ESTIMATORS)} (all)")
    args = ap.parse_args()
    names = ESTIMATORS if args.estimators is None else [
        n.strip() for n in args.estimators.split(",") if n.strip()]
    wrong = sorted(set(names) - set(ESTIMATORS))
    if wrong:
        raise SystemExit(f"unknown estimators {wrong}; choose from {', '.join(ESTIMATORS)}")
    if not args.fits:
        names = DRIVER
    load0 = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    passes, before, unknown = ({n: [] for n in names} for _ in range(3))
    seconds = dict.fromkeys(names, 0.0)
    t_run, cpu_run = time.perf_counter(), time.process_time()

    def record(n, s, selection):
        if any(r["chosen"] and r["gamma_I"] > 0 for r in selection or []):
            passes[n].append(s)
        old = loss_test_passes(selection or [])
        {True: before[n], None: unknown[n]}.get(old, []).append(s)

    with (local_cluster(2, 1) if args.fits else nullcontext()) as client, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in range(args.draws):
            X, y, train = draw(s, args.rows, args.dim, args.per_class)
            if not args.fits:
                for n, selection in driver_selections(X, train).items():
                    record(n, s, selection)
            for n in names if args.fits else ():
                t0 = time.perf_counter()
                est = make(n, client).fit(X, train)
                seconds[n] += time.perf_counter() - t0
                record(n, s, est.selection_)
            if (s + 1) % 10 == 0:
                print(f"{s + 1} draws, false passes (loss test alone): " + ", ".join(
                    f"{n} {len(passes[n])} ({len(before[n])})" for n in names),
                    file=sys.stderr, flush=True)
    load1 = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"- {args.draws} draws of {args.rows} x {args.dim}, {args.per_class} labels a class, "
          f"{'fitted on a LocalCluster' if args.fits else 'selection on the driver'}; "
          f"{time.perf_counter() - t_run:.0f} s ({time.process_time() - cpu_run:.0f} CPU s in "
          f"this process); load average at start {load0}, at end {load1}\n")
    print("| estimator | false passes | draws | loss test alone | draws | unknown |"
          + (" fit s (sum) |" if args.fits else "")
          + "\n|---|---|---|---|---|---|" + ("---|" if args.fits else ""))
    for n in names:
        print(f"| {n} | {_share(passes[n], args.draws)} | {_some(passes[n])} "
              f"| {_share(before[n], args.draws)} | {_some(before[n])} | {_some(unknown[n])} |"
              + (f" {seconds[n]:.0f} |" if args.fits else ""))


def _share(draws: list, total: int) -> str:
    return f"{len(draws)} ({100 * len(draws) / total:.1f}%)"


def _some(draws: list) -> str:
    return f"{draws[:12]}{' ...' if len(draws) > 12 else ''}"


if __name__ == "__main__":
    main()
