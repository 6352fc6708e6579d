"""L2SVM (L2-SVM-MFN on a 2-worker LocalCluster) against LIBLINEAR -s 2, same data, same run.

KDD99 10% sample, all rows labeled, gamma = 0.001 (LIBLINEAR C = 1/(2 gamma n), bias -B 1, both
regularize the bias). Prints, for each solver, its first run
and the median of ``--repeats`` runs (seconds of training, data in memory in each side's own
format), its objective (svmlin normalization) and the time ratio against LIBLINEAR at the
stopping tolerance that reaches an objective within 1e-6 (relative) of the best one, which is
the accuracy the target is set at; per core too (LIBLINEAR trains on one core, dask-ssl on its
workers, one thread each: ours x workers / LIBLINEAR). Every dask-ssl fit gets fresh blocks
(read anew onto the workers; the reading is not timed): a block's distinct rows are cached on
its worker, so a second fit on the same blocks would skip that work (one such refit is printed
apart). The workers load their compiled kernels in a fit on 2000 other rows before the timed
ones; the load average is printed (ratios from a loaded host are not a quiet host's).

    python benchmarks/bench_l2svm.py [--gamma-A 0.001] [--repeats 5] [--rcv1 [N_ROWS]]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _common import KDD99, load_average, local_cluster, worker_peak_rss


def objective(X, y, w, b, gamma):
    o = np.asarray(X @ w).ravel() + b
    return 0.5 * gamma * (w @ w + b * b) + 0.5 / len(y) * np.sum(np.maximum(0, 1 - y * o) ** 2)


def liblinear(X, y, gamma, eps):
    from liblinear.liblinearutil import parameter, problem, train

    C = 1.0 / (2.0 * gamma * len(y))
    prob = problem(y, X)
    param = parameter(f"-s 2 -c {C!r} -B 1 -e {eps} -q")
    prob.set_bias(1)
    t0 = time.perf_counter()
    model = train(prob, param)
    seconds = time.perf_counter() - t0
    w, b = model.get_decfun()
    sign = 1.0 if model.get_labels()[0] == 1 else -1.0
    return seconds, sign * np.asarray(w), sign * b


def kdd99(gamma: float, repeats: int, workers: int) -> None:
    from dask_ssl.data import read_kdd99
    from dask_ssl.models import L2SVM

    X, y = read_kdd99(str(KDD99))
    print(f"KDD99 10%: {X.shape[0]} x {X.shape[1]}, {X.nnz / X.shape[0]:.2f} nnz/row, "
          f"gamma={gamma}, {repeats} runs each, load {load_average()}")
    rows = []  # (name, first s, median s, objective of the first run)
    for eps in (0.01, 1e-4, 1e-5, 1e-6):
        runs = [liblinear(X, y, gamma, eps) for _ in range(repeats)]
        rows.append((f"LIBLINEAR -s 2 -e {eps:g}", runs[0][0], float(np.median([r[0] for r in runs])),
                     objective(X, y, runs[0][1], runs[0][2], gamma)))
    with local_cluster(workers) as client:
        # load the workers' compiled kernels outside the timed fits (on rows of their own, so
        # no state of the timed blocks is made here)
        first = read_kdd99(str(KDD99), client=client, n_rows=2000)
        L2SVM(gamma_A=gamma, client=client).fit(first)
        times, trips = [], 0
        for _ in range(repeats):
            # fresh blocks for every fit: a block's distinct rows are cached on its worker, so a
            # second fit on the same blocks skips finding them
            blocks = read_kdd99(str(KDD99), client=client)
            m = L2SVM(gamma_A=gamma, client=client).fit(blocks)
            times.append(m.fit_seconds_)
            trips += blocks.round_trips
            if len(times) == 1:
                ours = objective(X, y, m.coef_[0], m.intercept_[0], gamma)
        refit = L2SVM(gamma_A=gamma, client=client).fit(blocks).fit_seconds_
        rows.append((f"dask-ssl L2SVM ({workers} workers, {m.n_iter_} Newton steps)", times[0],
                     float(np.median(times)), ours))
    best_obj = min(r[3] for r in rows)
    # the peer at the target accuracy: the LIBLINEAR setting within 1e-6 of the best objective
    # with the smallest median
    matched = [r for r in rows[:-1] if (r[3] - best_obj) / best_obj <= 1e-6]
    ref = min(matched, key=lambda r: r[2]) if matched else ("-", np.nan, np.nan, np.nan)
    print(f"{'solver':48s} {'first s':>8s} {'median s':>8s} {'vs peer':>8s} {'per core':>8s} "
          f"{'objective':>14s} {'gap (rel)':>10s}")
    for name, first_s, med, obj in rows:
        cores = workers if name.startswith("dask-ssl") else 1
        print(f"{name:48s} {first_s:8.3f} {med:8.3f} {med / ref[2]:8.2f} "
              f"{med * cores / ref[2]:8.2f} {obj:14.10f} {(obj - best_obj) / best_obj:10.2e}")
    ours_row = rows[-1]
    print(f"time ratio at objective gap <= 1e-6 (peer: {ref[0]}): first fit {ours_row[1] / ref[1]:.2f}"
          f", median {ours_row[2] / ref[2]:.2f}; per core (x {workers} / 1) first "
          f"{ours_row[1] * workers / ref[1]:.2f}, median {ours_row[2] * workers / ref[2]:.2f}; "
          f"our fits {' '.join(f'{t:.3f}' for t in times)} s on fresh blocks, a refit on the "
          f"same blocks {refit:.3f} s; round trips over {repeats} fits: {trips}; load "
          f"{load_average()}")


def rcv1(n_rows: int) -> None:
    from dask_ssl.data import rcv1_like
    from dask_ssl.models import L2SVM

    with local_cluster(2) as client:
        t0 = time.perf_counter()
        blocks = rcv1_like(n_rows=n_rows, client=client)
        gen = time.perf_counter() - t0
        # compile (or load) the workers' numba kernels outside the timed fit
        first = client.submit(lambda X: X[:2000], blocks.blocks[0]).result()
        L2SVM(gamma_A=1e-3, unlabeled=0, client=client).fit(first, np.where(np.arange(2000) % 2, 1, -1))
        trips0 = blocks.round_trips
        m = L2SVM(gamma_A=1e-3, client=client).fit(blocks)
        trips = blocks.round_trips - trips0
        print(f"RCV1-like {n_rows} x {blocks.n_features}: generated in {gen:.1f} s; L2SVM fit "
              f"{m.fit_seconds_:.1f} s, {m.n_iter_} Newton steps, {trips} round trips "
              f"({trips / m.n_iter_:.1f} per Newton step incl. CG), objective {m.objective_:.6f}, "
              f"peak worker RSS {worker_peak_rss(client):.0f} MiB")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--gamma-A", dest="gamma", type=float, default=1e-3)
    ap.add_argument("--repeats", type=int, default=5, help="runs of each solver (KDD99)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rcv1", type=int, nargs="?", const=804414)
    args = ap.parse_args()
    if args.rcv1:
        rcv1(args.rcv1)
    else:
        kdd99(args.gamma, args.repeats, args.workers)
