"""SparseLapRLS with its defaults against the full LapRLS and the supervised sparse model on the
same labels: held-out error and fit time.

    python benchmarks/bench_sparse_defaults.py                       # every set, 2 label draws
    python benchmarks/bench_sparse_defaults.py --data g50c moons --draws 5
    python benchmarks/bench_sparse_defaults.py --data rcv1-like kdd99 --draws 1

Sets: g50c-like (two 50-d Gaussians, Bayes error 5%; 2000 training rows, 50 labels), two moons
(noise 0.1; 1000 training rows, 10 labels a class), and the throughput benchmark's RCV1-like
text and KDD99 10% sample (10 000 training rows, 1% labeled, stratified); 1000 held-out rows
each. Rows: ``SparseLapRLS()`` (the decoupled method, graph, ``gamma_I`` and basis chosen on the
labels), ``SparseLapRLS(method="slack")``, the full ``LapRLS()`` and the supervised sparse model
``SparseLapRLS(gamma_I=0)`` (kernel RLS on a basis holding the labeled rows). Every fit runs on a
2-worker LocalCluster of processes, one thread each.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from _common import local_cluster
from bench_sparse import one_percent_labeled, throughput_data
from dask_ssl.data.generators import g50c, two_moons
from dask_ssl.models import LapRLS, SparseLapRLS

MODELS = {
    "SparseLapRLS()": lambda c, s: SparseLapRLS(client=c, random_state=s),
    'SparseLapRLS(method="slack")': lambda c, s: SparseLapRLS(method="slack", client=c,
                                                               random_state=s),
    "LapRLS()": lambda c, s: LapRLS(client=c, random_state=s),
    "SparseLapRLS(gamma_I=0)": lambda c, s: SparseLapRLS(gamma_I=0.0, client=c,
                                                          random_state=s),
}


def data(name, draw):
    """``(X_train, y_train with -1 unlabeled, X_test, truth_test)`` of label draw ``draw``."""
    rng = np.random.default_rng(draw)
    if name in ("g50c", "moons"):
        X, t = (g50c(n=3000, seed=draw) if name == "g50c"
                else two_moons(n=2000, noise=0.1, seed=draw))
        X, t = np.asarray(X), (np.asarray(t) > 0).astype(int)
        per_class = 25 if name == "g50c" else 10
        y = np.full(X.shape[0] - 1000, -1)
        for c in (0, 1):
            rows = np.flatnonzero(t[:-1000] == c)
            y[rng.choice(rows, per_class, replace=False)] = c
        return X[:-1000], y, X[-1000:], t[-1000:]
    X, t, Xte, tte = throughput_data(name, 10000, 1000, seed=draw)
    return X, one_percent_labeled(t, rng), Xte, (tte > 0).astype(int)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=["g50c", "moons", "rcv1-like", "kdd99"],
                        choices=["g50c", "moons", "rcv1-like", "kdd99"])
    parser.add_argument("--draws", type=int, default=2)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print("| data | draw | model | held-out error % | fit s | graph (k, p) | gamma_I |")
    print("|---|---|---|---|---|---|---|")
    with local_cluster() as client:
        for name in args.data:
            for draw in range(args.draws):
                X, y, Xte, tte = data(name, draw)
                for model in args.models:
                    est = MODELS[model](client, draw)
                    t0 = time.perf_counter()
                    est.fit(X, y)
                    seconds = time.perf_counter() - t0
                    err = 100 * np.mean(est.predict(Xte) != tte)
                    print(f"| {name} | {draw} | {model} | {err:.2f} | {seconds:.1f} | "
                          f"({est.n_neighbors_}, {est.p_}) | {est.gamma_I_:g} |", flush=True)


if __name__ == "__main__":
    main()
