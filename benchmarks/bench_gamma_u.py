"""``gamma_u="auto"`` of the S3VMs against the seeds' ``gamma_u=1`` and the supervised L2-SVM.

    python benchmarks/bench_gamma_u.py --per-class 8 20 --seeds 1 2

g50c (two 50-d Gaussians, Bayes error 5%, 600 rows), ``--per-class`` labels per class, error on
the unlabeled rows for L2SVM, TSVM and DAS3VM at ``gamma_u=1`` and ``"auto"`` (the choice in
brackets), and the time of the "auto" fit against a fit at 1. A 2-worker LocalCluster.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from dask_ssl.data.generators import g50c
from dask_ssl.models import DAS3VM, L2SVM, TSVM

from _common import local_cluster


def labels(y, per_class, seed):
    rng = np.random.default_rng(seed)
    out = np.full(y.size, -1)
    for c in (0, 1):
        idx = rng.choice(np.flatnonzero(y == c), per_class, replace=False)
        out[idx] = c
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", type=int, nargs="+", default=[8, 20])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    with local_cluster() as client:
        run(client, args)
    print(f"load average at end: {os.getloadavg()}")


def run(client, args):
    print("| labels | seed | L2SVM | TSVM 1 | TSVM auto | DAS3VM 1 | DAS3VM auto | "
          "auto / fit at 1 (TSVM, DA) |")
    print("|---|---|---|---|---|---|---|---|")
    for per_class in args.per_class:
        for seed in args.seeds:
            X, y = g50c(n=600, bayes_error=0.05, seed=seed)
            y = (y > 0).astype(int)
            yl = labels(y, per_class, seed)
            unl = yl < 0

            def err(model):
                return 100 * np.mean(model.predict(X)[unl] != y[unl])

            cells, ratios = [f"{err(L2SVM(unlabeled=-1, client=client).fit(X, yl)):.1f}%"], []
            for cls in (TSVM, DAS3VM):
                times = {}
                for gamma_u in (1.0, "auto"):
                    t = time.perf_counter()
                    model = cls(gamma_u=gamma_u, client=client).fit(X, yl)
                    times[gamma_u] = time.perf_counter() - t
                    chosen = f" ({model.gamma_u_:g})" if gamma_u == "auto" else ""
                    cells.append(f"{err(model):.1f}%{chosen}")
                ratios.append(f"{times['auto'] / times[1.0]:.1f}x")
            print(f"| {2 * per_class} | {seed} | " + " | ".join(cells)
                  + f" | {', '.join(ratios)} |", flush=True)


if __name__ == "__main__":
    main()
