"""DAS3VM's annealing starts, each alone and paired, against the L2-SVM on the same labels.

    python benchmarks/bench_da_starts.py [--datasets g50c-2k,hw,bbc] [--draws 5]

Per data set and label draw (``bench_safety``'s sets and draws: 100 labels, 50 on bbc), three
single annealings of ``DAS3VM(cold_start=False)`` with otherwise default settings:

- ``first``: the default's first annealing (T from ``initial_temperature``, gamma' raised from
  ``initial_gamma_u``);
- ``cold``: the cold start alone (``initial_temperature * initial_gamma_u / gamma_u``);
- ``seeds``: the seeds' schedule (``initial_gamma_u=None``: gamma' fixed from the first stage).

Each pair (and the three together) keeps the run with the lowest TSVM objective, as
``DAS3VM`` keeps the lower of its two paths; ``first+cold`` is what ``DAS3VM()`` returns. Printed:
per draw each run's error % on the unlabeled rows and its objective, then per set the mean
error of each run and pair, its worst draw's excess over the L2-SVM, and the seconds a run.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from bench_safety import data_specs, label_count, select

#: bench_safety's data settings at its defaults (its sets, classes and label counts).
SAFETY_DEFAULTS = argparse.Namespace(hw_class=1, bbc_class=3, g50c_rows="2000,10000,50000",
                                     g50c_labels=100, kdd99_labels="1000", rcv1_rows=200_000,
                                     rcv1_labels="100,1000")
RUNS = {"first": {}, "cold": {"initial_temperature": 1e-4}, "seeds": {"initial_gamma_u": None}}
PAIRS = {"first": ["first"], "cold": ["cold"], "seeds": ["seeds"], "first+cold": ["first", "cold"],
         "first+seeds": ["first", "seeds"], "seeds+cold": ["seeds", "cold"],
         "all three": ["first", "cold", "seeds"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="g50c-2k,hw,bbc")
    ap.add_argument("--draws", type=int, default=5)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    from distributed import Client, LocalCluster

    from dask_ssl.data import stratified_split
    from dask_ssl.models import DAS3VM, L2SVM

    specs = select(data_specs(SAFETY_DEFAULTS), args.datasets, name=lambda s: s.name,
                   what="data set")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False) as cluster, \
            Client(cluster) as client:
        for spec in specs:
            X, y = spec.load(1.0)
            n_labels = label_count(spec, X.shape[0])
            sup, picked, seconds = [], {k: [] for k in PAIRS}, {k: 0.0 for k in RUNS}
            for draw in range(args.draws):
                split = stratified_split(y, n_labeled=n_labels, seed=draw)
                train = split.y_train(y, marker=-1)
                hidden, labeled = split.unlabeled, train != -1
                svm = L2SVM(client=client).fit(X[labeled], train[labeled])
                sup.append(100 * np.mean(svm.predict(X[hidden]) != y[hidden]))
                runs = {}
                for name, params in RUNS.items():
                    t0 = time.perf_counter()
                    est = DAS3VM(cold_start=False, client=client, **params).fit(X, train)
                    seconds[name] += time.perf_counter() - t0
                    runs[name] = (est.objective_,
                                  100 * np.mean(est.predict(X[hidden]) != y[hidden]))
                for pair, members in PAIRS.items():
                    picked[pair].append(min(runs[m] for m in members)[1])
                print(f"{spec.name} draw {draw}: L2SVM {sup[-1]:.2f}; "
                      + "; ".join(f"{k} {e:.2f} (objective {o:.4g})"
                                  for k, (o, e) in runs.items()), flush=True)
            sup = np.array(sup)
            print(f"{spec.name}: L2SVM {sup.mean():.2f}; "
                  + "; ".join(f"{k} {np.mean(v):.2f} (worst +{np.max(np.array(v) - sup):.2f})"
                              for k, v in picked.items())
                  + "; seconds a run " + ", ".join(f"{k} {s / args.draws:.2f}"
                                                   for k, s in seconds.items()), flush=True)


if __name__ == "__main__":
    main()
