"""What a user times: ``dask-ssl fit FILE`` against svmlin (and LIBLINEAR) on the same files,
each in fresh processes, wall clock from the shell, runs alternating.

    python benchmarks/bench_cli.py kdd99 [--replicate 10] [--methods tsvm,da,svm] [--repeats 1]
    python benchmarks/bench_cli.py rcv1 [--methods tsvm,da,svm]

Data: KDD99 10% (the project's reader; ``--replicate 10`` is kdd99-scale) or the RCV1-like
generator, all rows labeled, written once as svmlight to ``--workdir`` (reused while present).
dask-ssl reads that file and keeps a stratified ``--labels`` of the labels (``fit --labeled N
--seed S``); svmlin gets the same rows without the label column and a labels file with the
same split (0 = unlabeled), since it takes features and labels in two files. Same parameters:
gamma (svmlin -W), gamma' (-U), r = the positive share of the unlabeled rows (-R), S = u/2
(-S; dask-ssl's default, "switch every pair that qualifies"). svm: dask-ssl L2SVM on all labels
against LIBLINEAR -s 2 at its defaults (C = 1/(2 gamma n), -B 1), read and trained in a fresh
process; there the ratio compares ``fit_seconds`` with LIBLINEAR's training seconds.

Both write one decision value per row (svmlin always does; dask-ssl with ``--outputs``).
Each run prints its wall time (process start to exit), its phases (dask-ssl: the model.json
``phases``; svmlin: its reading time and the rest), objective and error on the unlabeled rows,
and the ratio dask-ssl / peer, also per core: svmlin and LIBLINEAR compute on one core,
dask-ssl on its worker threads (``--workers``, default one per CPU), so the per-core ratio is
ours x our cores / the peer's; the CPU seconds (user + system) of both processes are printed
beside, with the load average (ratios taken on a loaded host are not a quiet host's). dask-ssl runs with ``DASK_SSL_CACHE=off`` (cold: parsing
included); ``--cached`` adds a second dask-ssl run that reuses the parsed blocks.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from _common import KDD99, build_svmlin, load_average, run_program, write_svmlin_files
from _common import run_svmlin as _run_svmlin

#: The console script installed beside this interpreter: what a user runs.
DASK_SSL = str(Path(sys.executable).with_name("dask-ssl"))


# data --------------------------------------------------------------------------------------
def make_data(args, work: Path) -> dict:
    """Write (once) the svmlight file, svmlin's example and label files; return their paths
    and the labels (truth, and the training labels with the hidden ones 0)."""
    from dask_ssl.workflow.split import choose

    name = (f"kdd99-x{args.replicate}-{args.rows or 'all'}" if args.data == "kdd99"
            else f"rcv1-{args.rows or 804414}")
    svm, examples = work / f"{name}.svm", work / f"{name}.examples"
    truth_file = work / f"{name}.labels.npy"
    if not (svm.exists() and examples.exists() and truth_file.exists()):
        t0 = time.perf_counter()
        if args.data == "kdd99":
            from dask_ssl.data import read_kdd99

            X, y = read_kdd99(str(KDD99), replicate=args.replicate, n_rows=args.rows)
        else:
            from dask_ssl.data import rcv1_like

            X, y = rcv1_like(n_rows=args.rows or 804414)
        write_svmlin_files(X, y, svm, examples)
        np.save(truth_file, y)
        print(f"wrote {svm} ({svm.stat().st_size / 1e6:.0f} MB, {X.shape[0]} x {X.shape[1]}) "
              f"in {time.perf_counter() - t0:.0f} s", flush=True)
    y = np.load(truth_file)
    # the split `fit --labeled N --seed S` makes
    train = choose(y, test_fraction=0, seed=args.seed, labeled=args.labels).train_labels()
    labels = work / f"{name}.labels-{args.labels}-{args.seed}"
    np.savetxt(labels, train, fmt="%+d")
    hidden = (train == 0) & (y != 0)
    return {"svm": svm, "examples": examples, "labels": labels, "y": y, "hidden": hidden,
            "r": float(np.mean(y[hidden] > 0)), "u": int(np.sum(train == 0))}


# runs --------------------------------------------------------------------------------------
def run_dask_ssl(args, data, method, work: Path, cached=False) -> dict:
    model = work / f"model-{method}"
    cmd = [DASK_SSL, "fit", "--data", str(data["svm"]), "--gamma-A", str(args.gamma),
           "--model-out", str(model), "--outputs", str(work / f"outputs-{method}.txt")]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    if method == "svm":
        cmd += ["--algorithm", "svm"]
    else:
        cmd += ["--algorithm", method, "--gamma-u", str(args.gamma_u), "--labeled",
                str(args.labels), "--seed", str(args.seed), "--pos-fraction", repr(data["r"])]
        if method == "tsvm":
            cmd += ["--max-switches", str(max(1, data["u"] // 2))]
    env = dict(os.environ, DASK_SSL_CACHE=str(work / "cache") if cached else "off")
    wall, cpu, _ = run_program(cmd, env=env)
    doc = json.loads((model / "model.json").read_text())
    return {"wall": wall, "cpu": cpu, "cores": cores(args), "fit": doc["fit_seconds"], "objective": doc["objective"],
            "error": doc["metrics"].get("error_unlabeled"), "trips": doc["round_trips"],
            "phases": " ".join(f"{k} {v:.2f}" for k, v in doc["phases"].items())
                      + f" (in-process wall {doc['wall_seconds']:.2f})"}


def run_svmlin(args, data, method, svmlin: str, work: Path) -> dict:
    out = _run_svmlin(svmlin, method, data["examples"], data["labels"], work / f"svmlin-{method}",
                      gamma=args.gamma, gamma_u=args.gamma_u, r=data["r"], switches=data["u"] // 2)
    hidden = data["hidden"]
    error = float(np.mean(np.where(out["outputs"][hidden] > 0, 1, -1) != data["y"][hidden]))
    return {"wall": out["wall"], "cpu": out["cpu"], "cores": 1, "fit": out["train"],
            "objective": out["objective"], "error": error, "trips": None,
            "phases": f"read {out['read']:.2f} train {out['train']:.2f} "
                      f"(its own CPU clock) rest {out['wall'] - out['read'] - out['train']:.2f}"}


def cores(args) -> int:
    """Cores dask-ssl computes on: its worker threads (``--workers``, one thread each;
    default one per CPU)."""
    if args.workers:
        return args.workers
    from dask_ssl.cluster import default_workers

    return default_workers()


def run_liblinear(args, data) -> dict:
    wall, cpu, done = run_program([sys.executable, __file__, "_liblinear", str(data["svm"]),
                                   str(args.gamma)])
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {"wall": wall, "cpu": cpu, "cores": 1, "fit": out["train"], "objective": out["objective"], "error": None,
            "trips": None, "phases": f"read {out['read']:.2f} train {out['train']:.2f}"}


def _liblinear_main(path: str, gamma: float) -> None:
    """Fresh-process LIBLINEAR -s 2 at its defaults: read the file, train, print JSON."""
    from liblinear.liblinearutil import parameter, problem, train

    from dask_ssl.data import read_svmlight

    t0 = time.perf_counter()
    X, y = read_svmlight(path)
    t1 = time.perf_counter()
    prob = problem(y, X)
    prob.set_bias(1)
    param = parameter(f"-s 2 -c {1.0 / (2.0 * gamma * len(y))!r} -B 1 -q")
    t2 = time.perf_counter()
    model = train(prob, param)
    t3 = time.perf_counter()
    w, b = model.get_decfun()
    sign = 1.0 if model.get_labels()[0] == 1 else -1.0
    w, b = sign * np.asarray(w), sign * b
    o = np.asarray(X @ w).ravel() + b
    obj = 0.5 * gamma * (w @ w + b * b) + 0.5 / len(y) * np.sum(np.maximum(0, 1 - y * o) ** 2)
    print(json.dumps({"read": t1 - t0, "train": t3 - t2, "objective": float(obj)}))


# report ------------------------------------------------------------------------------------
def show(label, ours, peer, peer_name, ratio_of="wall"):
    """The ratio dask-ssl / peer of ``ratio_of`` seconds, and per core: ours times the cores
    it computes on against the peer's (svmlin and LIBLINEAR use one); the CPU seconds of the
    two processes (user + system, imports and reading included) beside."""
    def fmt(v, spec):
        return "-" if v is None else format(v, spec)

    ratio = ours[ratio_of] / peer[ratio_of]
    per_core = ours[ratio_of] * ours["cores"] / (peer[ratio_of] * peer["cores"])
    print(f"{label}: ratio ({ratio_of}) {ratio:.2f}, per core ({ours['cores']} / "
          f"{peer['cores']}) {per_core:.2f}; process CPU s {ours['cpu']:.2f} / {peer['cpu']:.2f} "
          f"= {ours['cpu'] / peer['cpu']:.2f}; load {load_average()}", flush=True)
    for name, r in (("dask-ssl", ours), (peer_name, peer)):
        print(f"  {name:10s} wall {r['wall']:8.2f} s  CPU {r['cpu']:8.2f} s  fit "
              f"{fmt(r['fit'], '8.2f')}  objective {fmt(r['objective'], '.8f')}  unl. error "
              f"{fmt(r['error'], '.4%')}  trips {fmt(r['trips'], 'd')}\n  {'':10s} phases: "
              f"{r['phases']}", flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_liblinear":
        _liblinear_main(sys.argv[2], float(sys.argv[3]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", choices=["kdd99", "rcv1"])
    ap.add_argument("--replicate", type=int, default=1)
    ap.add_argument("--rows", type=int,
                    help="rows (default: all of KDD99 10%%, 804414 RCV1-like); for trying it out")
    ap.add_argument("--labels", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gamma-A", dest="gamma", type=float, default=1e-3)
    ap.add_argument("--gamma-u", type=float, default=None,
                    help="gamma' (default 1 on KDD99, 10 on RCV1-like, as bench_s3vm)")
    ap.add_argument("--methods", default="tsvm,da,svm")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--workers", type=int, help="dask-ssl --workers (default: its own default)")
    ap.add_argument("--cached", action="store_true", help="also time a fit from the block cache")
    ap.add_argument("--workdir", default="/tmp/dask-ssl-bench-cli")
    args = ap.parse_args()
    if args.gamma_u is None:
        args.gamma_u = 1.0 if args.data == "kdd99" else 10.0
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    data = make_data(args, work)
    methods = args.methods.split(",")
    svmlin = None
    if {"tsvm", "da"} & set(methods):
        svmlin = build_svmlin(work)
    print(f"{args.data}: {len(data['y'])} rows, {args.labels} labels (seed {args.seed}), "
          f"gamma {args.gamma}, gamma' {args.gamma_u}, r {data['r']:.4f}, S {data['u'] // 2}",
          flush=True)
    for rep in range(args.repeats):
        for method in methods:
            if method == "svm":
                peer_name, peer = "LIBLINEAR", (lambda: run_liblinear(args, data))
            else:
                peer_name, peer = "svmlin", (lambda m=method: run_svmlin(args, data, m, svmlin, work))
            ours = lambda m=method: run_dask_ssl(args, data, m, work)  # noqa: E731
            # Alternate which goes first, so neither always meets a warmer page cache.
            if rep % 2 == 0:
                a, b = ours(), peer()
            else:
                b, a = peer(), ours()
            show(f"[{rep}] {method}", a, b, peer_name, "fit" if method == "svm" else "wall")
            if args.cached:
                run_dask_ssl(args, data, method, work, cached=True)  # fills the cache
                show(f"[{rep}] {method}, blocks from the cache",
                     run_dask_ssl(args, data, method, work, cached=True), b, peer_name,
                     "fit" if method == "svm" else "wall")


if __name__ == "__main__":
    main()
