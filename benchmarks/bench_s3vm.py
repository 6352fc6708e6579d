"""TSVM and DA S3VM at scale (thesis Tables 6.2-6.7 protocol), with a supervised L2SVM beside.

    python benchmarks/bench_s3vm.py kdd99 [--labels 1000] [--replicate 1] [--fraction 1.0] [--seeds 1]
    python benchmarks/bench_s3vm.py rcv1 [--labels 100] [--rows 804414] [--workers 2]

Prints per method: wall time of fit, Newton/stage counts, round trips, minimum TSVM objective,
error on the unlabeled rows, peak worker RSS. gamma = 0.001, gamma' = 1, r = 0.803 on KDD99
(the positive ratio), as in the thesis' experiments.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _common import KDD99, local_cluster, worker_peak_rss


def load(args, client):
    if args.data == "kdd99":
        from dask_ssl.data import read_kdd99

        blocks = read_kdd99(str(KDD99), client=client, replicate=args.replicate,
                            n_blocks=args.blocks)
    else:
        from dask_ssl.data import rcv1_like

        blocks = rcv1_like(n_rows=args.rows, client=client, n_blocks=args.blocks)
    if args.fraction < 1.0:
        keep = int(round(args.fraction * blocks.n_blocks))
        from dask_ssl.linalg import RowBlocks

        blocks = RowBlocks(client, blocks.blocks[:keep], blocks.sizes[:keep], blocks.n_features,
                           blocks.sparse, blocks.labels[:keep])
    return blocks


def warm_up(client, blocks, methods) -> None:
    """Fit every method once on 3000 rows: the workers compile (or load) their numba kernels
    outside the timed runs, as they would have after a first run on the machine."""
    from dask_ssl.linalg import RowBlocks

    first = client.submit(lambda X: X[:3000], blocks.blocks[0]).result()
    small = RowBlocks.from_array(first, client=client)
    # labels do not matter here, only that both classes and unlabeled rows occur
    rng = np.random.default_rng(0)
    y_small = np.where(np.arange(first.shape[0]) % 10 == 0, rng.choice([-1, 1], first.shape[0]), 0)
    for make in methods.values():
        make().fit(small, y_small)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", choices=["kdd99", "rcv1"])
    ap.add_argument("--labels", type=int, default=1000)
    ap.add_argument("--replicate", type=int, default=1)
    ap.add_argument("--rows", type=int, default=804414)
    ap.add_argument("--fraction", type=float, default=1.0, help="use the first share of blocks")
    ap.add_argument("--blocks", type=int)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--gamma", type=float, default=1e-3)
    ap.add_argument("--gamma-u", type=float, default=None)
    ap.add_argument("--methods", default="svm,tsvm,da")
    ap.add_argument("--seeds", type=int, default=1,
                    help="label splits 0..N-1 (one split's error varies by about 0.1%%)")
    args = ap.parse_args()
    from dask_ssl.data import stratified_split
    from dask_ssl.models import DAS3VM, L2SVM, TSVM

    gamma_u = args.gamma_u if args.gamma_u is not None else (1.0 if args.data == "kdd99" else 10.0)
    with local_cluster(args.workers) as client:
        t0 = time.perf_counter()
        blocks = load(args, client)
        y = blocks.gather_labels()
        read = time.perf_counter() - t0
        print(f"{args.data}: {blocks.n_rows} x {blocks.n_features} in {blocks.n_blocks} blocks "
              f"(read {read:.1f} s), l = {args.labels}, gamma = {args.gamma}, "
              f"gamma' = {gamma_u}, workers = {args.workers}")
        print(f"{'seed':>4s} {'method':6s} {'seconds':>8s} {'stages':>7s} {'trips':>7s} "
              f"{'objective':>12s} {'unl. error %':>12s} {'peak RSS MiB':>12s} {'driver CPU s':>10s}")
        errors = {}
        for seed in range(args.seeds):
            split = stratified_split(y, n_labeled=args.labels, seed=seed)
            y_train = split.y_train(y, marker=0)
            unl = y_train == 0
            r = float(np.mean(y[unl] > 0))
            methods = {"svm": lambda: L2SVM(gamma=args.gamma, unlabeled=0, client=client),
                       "tsvm": lambda: TSVM(gamma=args.gamma, gamma_u=gamma_u, pos_fraction=r,
                                            unlabeled=0, client=client),
                       "da": lambda: DAS3VM(gamma=args.gamma, gamma_u=gamma_u, pos_fraction=r,
                                            unlabeled=0, client=client)}
            if seed == 0:
                warm_up(client, blocks, methods)
            for name in args.methods.split(","):
                trips0 = blocks.round_trips
                cpu0 = time.process_time()
                m = methods[name]().fit(blocks, y_train)
                # The driver's process (with LocalCluster's scheduler) shares the workers' cores.
                driver_cpu = time.process_time() - cpu0
                trips = blocks.round_trips - trips0
                pred = m.predict(blocks)
                err = 100 * np.mean(pred[unl] != y[unl])
                errors.setdefault(name, []).append(err)
                obj = m.objective_
                if name == "svm":  # its objective on the TSVM scale, for comparison
                    scores = m.decision_function(blocks)
                    lab = ~unl
                    w = np.r_[m.coef_[0], m.intercept_]
                    obj = (0.5 * args.gamma * w @ w
                           + 0.5 / lab.sum() * np.sum(np.maximum(0, 1 - y[lab] * scores[lab]) ** 2)
                           + 0.5 * gamma_u / unl.sum()
                           * np.sum(np.maximum(0, 1 - np.abs(scores[unl])) ** 2))
                print(f"{seed:4d} {name:6s} {m.fit_seconds_:8.1f} {m.n_iter_:7d} {trips:7d} "
                      f"{obj:12.6f} {err:12.3f} {worker_peak_rss(client):12.0f} {driver_cpu:10.1f}",
                      flush=True)
        if args.seeds > 1:
            print("mean unlabeled error % over " + str(args.seeds) + " splits: "
                  + ", ".join(f"{k} {np.mean(v):.3f} (sd {np.std(v, ddof=1):.3f})"
                              for k, v in errors.items()))


if __name__ == "__main__":
    main()
