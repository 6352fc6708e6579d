"""How often the selection rule lets a semi-supervised candidate through where the unlabeled
rows cannot help (issue 30): a random linear label over isotropic Gaussian rows, no clusters.

    python benchmarks/bench_selection_null.py                 # 200 draws, every estimator
    python benchmarks/bench_selection_null.py --draws 20 --estimators LinearLapSVM

Each draw ``s`` (seeds 0..draws-1) is ``--rows`` rows of ``--dim`` independent standard normal
features, labeled by the sign of ``X w`` with ``w`` standard normal, and ``--per-class`` labeled
rows of each class (the rest marked -1). Every estimator runs at its defaults except ``client``,
``random_state`` (0) and, for LapRLS / LapSVM, ``kernel="linear"``: with the RBF kernel at the
seeds' ``gamma_A`` kernel RLS nearly interpolates and a graph term rightly wins as a smoother,
so only the linear kernel makes the supervised model the right answer. A draw counts as a false
pass when the fitted ``gamma_I_`` is above 0 (the graph term replaced the supervised model).
The table gives the false passes per estimator with the seconds of the run and the load
average; run it on two checkouts to compare two rules on the same draws.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

from _common import local_cluster

ESTIMATORS = ("LinearLapRLS", "LinearLapSVM", "LapRLS", "LapSVM", "GraphTransduction")


def draw(seed: int, rows: int, dim: int, per_class: int):
    """``(X, y, train)`` of draw ``seed`` (module docstring)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, dim))
    y = (X @ rng.normal(size=dim) > 0).astype(np.int64)
    train = np.full(rows, -1)
    for c in (0, 1):
        train[rng.choice(np.flatnonzero(y == c), per_class, replace=False)] = c
    return X, y, train


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
    ap.add_argument("--estimators", default=",".join(ESTIMATORS))
    args = ap.parse_args()
    names = [n.strip() for n in args.estimators.split(",") if n.strip()]
    unknown = sorted(set(names) - set(ESTIMATORS))
    if unknown:
        raise SystemExit(f"unknown estimators {unknown}; choose from {', '.join(ESTIMATORS)}")
    load0 = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    passes = {n: [] for n in names}
    seconds = dict.fromkeys(names, 0.0)
    with local_cluster(2, 1) as client, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in range(args.draws):
            X, y, train = draw(s, args.rows, args.dim, args.per_class)
            for n in names:
                t0 = time.perf_counter()
                est = make(n, client).fit(X, train)
                seconds[n] += time.perf_counter() - t0
                if est.gamma_I_ > 0:
                    passes[n].append(s)
            if (s + 1) % 20 == 0:
                print(f"{s + 1} draws: " + ", ".join(f"{n} {len(passes[n])}" for n in names),
                      file=sys.stderr, flush=True)
    load1 = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"- {args.draws} draws of {args.rows} x {args.dim}, {args.per_class} labels a class; "
          f"load average at start {load0}, at end {load1}\n")
    print("| estimator | false passes | draws | fit s (sum) |\n|---|---|---|---|")
    for n in names:
        print(f"| {n} | {len(passes[n])} ({100 * len(passes[n]) / args.draws:.1f}%) "
              f"| {passes[n][:12]}{' ...' if len(passes[n]) > 12 else ''} "
              f"| {seconds[n]:.0f} |")


if __name__ == "__main__":
    main()
