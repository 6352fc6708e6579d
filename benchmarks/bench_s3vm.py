"""TSVM and DA S3VM at scale (thesis Tables 6.2-6.7 protocol), with a supervised L2SVM beside.

    python benchmarks/bench_s3vm.py kdd99 [--labels 1000] [--replicate 1] [--fraction 1.0] [--seeds 1]
    python benchmarks/bench_s3vm.py rcv1 [--labels 100] [--rows 804414] [--workers 2]
    python benchmarks/bench_s3vm.py kdd99 --methods tsvm --profile
    python benchmarks/bench_s3vm.py kdd99 --methods tsvm --cold 5

``--cold N`` starts N fresh clusters and times each method's first fit in the new worker
processes against a second fit right after it (the medians and their difference are printed).
The workers get dask-ssl's start-up plugin as ``dask_ssl.cluster.get_client`` gives it
(``--no-warm-plugin``: without it).

svmlin (the seeds' C++, ``../shared/peers/svmlin``, built by its script) runs TSVM and DA on
the same rows and the same label split in the same run (``--no-peer``: without it): the rows
are gathered from the workers' blocks and written once to ``--workdir`` as svmlin's examples
file, each split as its labels file. Beside our in-process ``fit_seconds_`` (the blocks already
on the workers; kernels loaded by a warm-up fit on 3000 rows) the table gives svmlin's own
training seconds (what it prints: its one thread's CPU clock, reading and writing excluded: the
in-process figure to set beside ours) and its whole process's wall (reading the text file and
writing outputs included; ``bench_cli.py`` times both sides that way, from the shell). Ratios:
ours / svmlin's training seconds, per core: ours x the workers (one thread each) / svmlin's
one core, and CPU: the fit's CPU seconds (driver process and worker processes) / svmlin's.
svmlin's training seconds are its CPU clock, equal to its wall on a quiet host; on a loaded host
its wall grows and that clock does not, so there only the CPU ratio compares like with like. The load average is printed with each row: ratios from a loaded host are not a quiet
host's.

``--profile`` adds, per stage of TSVM and DA, the round trips, bytes sent and received and
seconds of each worker-side step, and the driver's own seconds between trips.

Prints per method: wall time of fit, Newton/stage counts, round trips, minimum TSVM objective,
error on the unlabeled rows, peak worker RSS. gamma = 0.001, gamma' = 1, r = 0.803 on KDD99
(the positive ratio), as in the thesis' experiments.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from _common import (KDD99, build_svmlin, load_average, local_cluster, run_svmlin,
                     worker_peak_rss, workers_cpu, write_svmlin_files)


def load(args, client):
    if args.data == "kdd99":
        from dask_ssl.data import read_kdd99

        blocks = read_kdd99(str(KDD99), client=client, replicate=args.replicate,
                            n_blocks=args.blocks, n_rows=args.rows)
    else:
        from dask_ssl.data import rcv1_like

        blocks = rcv1_like(n_rows=args.rows or 804414, client=client, n_blocks=args.blocks)
    if args.fraction < 1.0:
        keep = int(round(args.fraction * blocks.n_blocks))
        from dask_ssl.linalg import RowBlocks

        blocks = RowBlocks(client, blocks.blocks[:keep], blocks.sizes[:keep], blocks.n_features,
                           blocks.sparse, blocks.labels[:keep])
    return blocks


def svmlin_files(args, blocks, y, work: Path) -> Path:
    """svmlin's examples file of exactly these rows, in the blocks' order (written once per data
    setting and reused while present)."""
    import scipy.sparse as sp

    name = (f"{args.data}-x{args.replicate}-{args.rows or 'all'}-f{args.fraction}-b{args.blocks}"
            f"-{blocks.n_rows}")
    svm, examples = work / f"{name}.svm", work / f"{name}.examples"
    if not examples.exists():
        t0 = time.perf_counter()
        parts = blocks.gather(blocks.blocks)
        X = sp.vstack([sp.csr_matrix(p) for p in parts]).tocsr()
        write_svmlin_files(X, y, svm, examples)
        svm.unlink()  # svmlin reads the examples only
        print(f"wrote svmlin's {examples} ({examples.stat().st_size / 1e6:.0f} MB) in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    return examples


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


class TripProfile:
    """Round trips, bytes (dask's ``sizeof`` of arguments and results) and seconds per
    worker-side function and stage, recorded by wrapping :meth:`RowBlocks.call`."""

    def __init__(self):
        from dask_ssl.models.da import DADriver
        from dask_ssl.models.tsvm import TSVMDriver

        self.rows = {}
        self.stage = None
        self.stage_seconds = {}
        self._patched = []
        for cls in (TSVMDriver, DADriver):
            self._wrap_stage(cls)
        self._wrap_call()

    def _wrap_stage(self, cls):
        prof, run = self, cls.run_stage

        def run_stage(driver):
            prof.stage = driver.stage
            t0 = time.perf_counter()
            try:
                return run(driver)
            finally:
                prof.stage_seconds[driver.stage - 1] = time.perf_counter() - t0
                prof.stage = None

        self._patched.append((cls, "run_stage", run))
        cls.run_stage = run_stage

    def _wrap_call(self):
        from dask.sizeof import sizeof

        from dask_ssl.linalg import RowBlocks

        prof, call = self, RowBlocks.call

        def wrapped(blocks, fn, *args, per_block=None, combine=None):
            t0 = time.perf_counter()
            out = call(blocks, _Timed(fn), *args, per_block=per_block,
                       combine=None if combine is None else _TimedCombine(combine))
            seconds = time.perf_counter() - t0
            cpu = sum(c for _, c in out)
            out = [r for r, _ in out]
            sent = sizeof(args) * len(set(blocks.owners())) + (sizeof(per_block) if per_block else 0)
            row = prof.rows.setdefault((prof.stage, fn.__name__), [0, 0, 0, 0.0, 0.0])
            for k, v in enumerate((1, sent, sizeof(out), seconds, cpu)):
                row[k] += v
            return out

        self._patched.append((RowBlocks, "call", call))
        RowBlocks.call = wrapped

    def restore(self):
        for cls, name, fn in self._patched:
            setattr(cls, name, fn)

    def report(self):
        # stage -1: trips outside the stages (initial state, snapshots, result)
        self.rows = {(-1 if s is None else s, name): row for (s, name), row in self.rows.items()}
        stages = sorted({s for s, _ in self.rows})
        head = (f"{'stage':>5s} {'step':22s} {'trips':>6s} {'sent kB':>9s} {'recv kB':>9s} "
                f"{'seconds':>8s} {'wrk CPU s':>9s}")
        print(head)
        totals = {}
        for s in stages:
            stage = [0, 0, 0, 0.0, 0.0]
            for (st, name), row in sorted(self.rows.items(), key=str):
                if st != s:
                    continue
                print(f"{s:5d} {name:22s} " + self._fmt(row))
                t = totals.setdefault(name, [0, 0, 0, 0.0, 0.0])
                for k, v in enumerate(row):
                    t[k] += v
                    stage[k] += v
            wall = self.stage_seconds.get(s)
            print(f"{s:5d} {'= stage':22s} " + self._fmt(stage)
                  + ("" if wall is None else f"  wall {wall:.3f}, driver {wall - stage[3]:.3f}"))
        print("totals (stage -1: outside the stages):")
        grand = [0, 0, 0, 0.0, 0.0]
        for name, row in sorted(totals.items()):
            print(f"      {name:22s} " + self._fmt(row))
            for k, v in enumerate(row):
                grand[k] += v
        inside = sum(row[3] for (s, _), row in self.rows.items() if s >= 0)
        wall = sum(self.stage_seconds.values())
        print(f"      {'= all':22s} " + self._fmt(grand)
              + f"  stages' wall {wall:.3f}, their driver {wall - inside:.3f}")
        self.rows.clear()
        self.stage_seconds.clear()

    @staticmethod
    def _fmt(row):
        n, b_out, b_in, sec, cpu = row
        return f"{n:6d} {b_out / 1e3:9.1f} {b_in / 1e3:9.1f} {sec:8.3f} {cpu:9.3f}"


class _Timed:
    """A worker-side step that also returns the CPU seconds of its thread."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__

    def __call__(self, *args):
        t0 = time.thread_time()
        out = self.fn(*args)
        return out, time.thread_time() - t0


class _TimedCombine:
    def __init__(self, combine):
        self.combine = combine

    def __call__(self, results):
        return self.combine([r for r, _ in results]), sum(c for _, c in results)


def make_methods(args, gamma_u, client, r):
    from dask_ssl.models import DAS3VM, L2SVM, TSVM

    return {"svm": lambda: L2SVM(gamma_A=args.gamma, unlabeled=0, client=client),
            "tsvm": lambda: TSVM(gamma_A=args.gamma, gamma_u=gamma_u, pos_fraction=r,
                                 unlabeled=0, client=client),
            "da": lambda: DAS3VM(gamma_A=args.gamma, gamma_u=gamma_u, pos_fraction=r,
                                 unlabeled=0, client=client)}


def cold_vs_warm(args, gamma_u) -> None:
    """First fit in fresh worker processes against a second fit on the same cluster."""
    from dask_ssl.cluster import WarmWorker
    from dask_ssl.data import stratified_split

    names = args.methods.split(",")
    times = {name: ([], []) for name in names}
    print(f"{'run':>4s} {'method':6s} {'cold s':>8s} {'warm s':>8s} {'extra s':>8s}")
    for run in range(args.cold):
        with local_cluster(args.workers) as client:
            if not args.no_warm_plugin:
                client.register_plugin(WarmWorker())
            blocks = load(args, client)
            y = blocks.gather_labels()
            y_train = stratified_split(y, n_labeled=args.labels, seed=0).y_train(y, marker=0)
            methods = make_methods(args, gamma_u, client, float(np.mean(y[y_train == 0] > 0)))
            for name in names:
                cold = methods[name]().fit(blocks, y_train).fit_seconds_
                warm = methods[name]().fit(blocks, y_train).fit_seconds_
                times[name][0].append(cold)
                times[name][1].append(warm)
                print(f"{run:4d} {name:6s} {cold:8.3f} {warm:8.3f} {cold - warm:8.3f}", flush=True)
    for name, (cold, warm) in times.items():
        extra = np.subtract(cold, warm)
        print(f"median {name:6s} {np.median(cold):8.3f} {np.median(warm):8.3f} "
              f"{np.median(extra):8.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", choices=["kdd99", "rcv1"])
    ap.add_argument("--labels", type=int, default=1000)
    ap.add_argument("--replicate", type=int, default=1)
    ap.add_argument("--rows", type=int, help="rows to read or make (rcv1: 804414)")
    ap.add_argument("--fraction", type=float, default=1.0, help="use the first share of blocks")
    ap.add_argument("--blocks", type=int)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--gamma-A", dest="gamma", type=float, default=1e-3)
    ap.add_argument("--gamma-u", type=float, default=None)
    ap.add_argument("--methods", default="svm,tsvm,da")
    ap.add_argument("--profile", action="store_true",
                    help="per-stage round trips, bytes and seconds of each TSVM/DA step")
    ap.add_argument("--cold", type=int, default=0,
                    help="fresh clusters: first fit in new workers against a second one")
    ap.add_argument("--no-warm-plugin", action="store_true",
                    help="--cold without dask_ssl.cluster.WarmWorker")
    ap.add_argument("--no-peer", action="store_true", help="without svmlin")
    ap.add_argument("--workdir", default="/tmp/dask-ssl-bench-s3vm",
                    help="svmlin's build, examples and labels files")
    ap.add_argument("--repeat", type=int, default=1, help="fits per method and split")
    ap.add_argument("--seeds", type=int, default=1,
                    help="label splits 0..N-1 (one split's error varies by about 0.1%%)")
    args = ap.parse_args()
    if args.profile:
        import sys

        import cloudpickle

        # the profile's wrappers run on the workers, which cannot import this script
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    from dask_ssl.data import stratified_split

    gamma_u = args.gamma_u if args.gamma_u is not None else (1.0 if args.data == "kdd99" else 10.0)
    if args.cold:
        return cold_vs_warm(args, gamma_u)
    with local_cluster(args.workers) as client:
        t0 = time.perf_counter()
        blocks = load(args, client)
        y = blocks.gather_labels()
        read = time.perf_counter() - t0
        print(f"{args.data}: {blocks.n_rows} x {blocks.n_features} in {blocks.n_blocks} blocks "
              f"(read {read:.1f} s), l = {args.labels}, gamma = {args.gamma}, "
              f"gamma' = {gamma_u}, workers = {args.workers}")
        peer = not args.no_peer and bool({"tsvm", "da"} & set(args.methods.split(",")))
        if peer:
            work = Path(args.workdir)
            work.mkdir(parents=True, exist_ok=True)
            svmlin = build_svmlin(work)
            examples = svmlin_files(args, blocks, y, work)
        print(f"{'seed':>4s} {'method':6s} {'seconds':>8s} {'stages':>7s} {'trips':>7s} "
              f"{'objective':>12s} {'unl. error %':>12s} {'peak RSS MiB':>12s} "
              f"{'driver CPU s':>10s} {'load':>5s}")
        errors = {}
        for seed in range(args.seeds):
            split = stratified_split(y, n_labeled=args.labels, seed=seed)
            y_train = split.y_train(y, marker=0)
            unl = y_train == 0
            r = float(np.mean(y[unl] > 0))
            methods = make_methods(args, gamma_u, client, r)
            if seed == 0:
                warm_up(client, blocks, methods)
            if peer:
                labels = work / f"{examples.stem}.labels-{args.labels}-{seed}"
                np.savetxt(labels, y_train, fmt="%+d")
            for name in [m for m in args.methods.split(",") for _ in range(args.repeat)]:
                profile = TripProfile() if args.profile else None
                trips0 = blocks.round_trips
                wcpu0 = workers_cpu(client)
                cpu0 = time.process_time()
                try:
                    m = methods[name]().fit(blocks, y_train)
                finally:
                    if profile is not None:
                        profile.restore()
                # The driver's process (with LocalCluster's scheduler) shares the workers' cores.
                driver_cpu = time.process_time() - cpu0
                fit_cpu = driver_cpu + workers_cpu(client) - wcpu0
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
                      f"{obj:12.6f} {err:12.3f} {worker_peak_rss(client):12.0f} {driver_cpu:10.1f} "
                      f"{load_average():>5s}", flush=True)
                if profile is not None and name != "svm":
                    profile.report()
                if peer and name != "svm":
                    p = run_svmlin(svmlin, name, examples, labels, work / f"svmlin-{name}",
                                   gamma=args.gamma, gamma_u=gamma_u, r=r,
                                   switches=int(unl.sum()) // 2)
                    p_err = 100 * np.mean(np.where(p["outputs"][unl] > 0, 1, -1) != y[unl])
                    ratio = m.fit_seconds_ / p["train"]
                    print(f"{seed:4d} {'svmlin':6s} {p['train']:8.2f} {'':7s} {'':7s} "
                          f"{p['objective']:12.6f} {p_err:12.3f}  (process wall {p['wall']:.1f} s, "
                          f"CPU {p['cpu']:.1f} s, its reading {p['read']:.1f} s; load "
                          f"{load_average()})\n"
                          f"{'':4s} {name} / svmlin training seconds: {ratio:.2f}, per core "
                          f"({args.workers} / 1): {ratio * args.workers:.2f}; fit CPU s (driver + "
                          f"workers) / svmlin's: {fit_cpu:.1f} / {p['train']:.1f} = "
                          f"{fit_cpu / p['train']:.2f}; objectives {obj:.8f} / "
                          f"{p['objective']:.8f}", flush=True)
        if args.seeds > 1:
            print("mean unlabeled error % over " + str(args.seeds) + " splits: "
                  + ", ".join(f"{k} {np.mean(v):.3f} (sd {np.std(v, ddof=1):.3f})"
                              for k, v in errors.items()))


if __name__ == "__main__":
    main()
