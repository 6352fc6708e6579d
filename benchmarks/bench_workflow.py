"""What the workflow layer costs, and what a warm-started nightly retrain saves.

1. Overhead: ``dask-ssl run workflows/kdd99.yaml`` (read, split, TSVM fit, evaluation, model
   store, report.json, plots, Dask performance report) against the same steps written directly
   with the library (read_kdd99, stratified split, TSVM.fit, decision values, error) on the same
   client. Target: under 5%.
2. Retrain: fit seconds of a retrain warm-started from yesterday's promoted model against a cold
   start, on "today's" data: new rows from the same generator with another seed.

    python benchmarks/bench_workflow.py                       # both, KDD99 from ../shared/data
    python benchmarks/bench_workflow.py --only retrain --n 200000
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

import numpy as np
from distributed import Client, LocalCluster

from dask_ssl.data import read_kdd99
from dask_ssl.models import TSVM
from dask_ssl.workflow import split as split_mod
from dask_ssl.workflow.runner import new_run, run_workflow
from dask_ssl.workflow.spec import load_workflow

ROOT = Path(__file__).resolve().parents[1]


def direct_kdd99(doc: dict, client) -> tuple[float, dict]:
    """The kdd99 workflow's work, called directly: seconds and the test error."""
    t0 = time.perf_counter()
    data = read_kdd99(doc["data"]["path"], client=client)
    y = data.gather_labels()
    sp = doc["split"]
    split = split_mod.choose(y, test_fraction=sp["test_fraction"], seed=sp["seed"],
                             labeled=sp["labeled"])
    train = split_mod.take(data, split.train)
    test = split_mod.take(data, split.test)
    est = TSVM(**doc["estimator"]["params"], unlabeled=0, client=client)
    est.fit(train, split.train_labels())
    error = float(np.mean(est.predict(test) != split.y[split.test]))
    return time.perf_counter() - t0, {"error": error, "fit_seconds": est.fit_seconds_}


def workflow_kdd99(doc: dict, client) -> tuple[float, dict]:
    t0 = time.perf_counter()
    report = run_workflow(doc, new_run(doc), client=client, progress=False)
    return time.perf_counter() - t0, {"error": report["metrics"]["error"],
                                      "fit_seconds": report["estimator"]["fit_seconds"]}


def bench_overhead(client, kdd99: Path, out: Path, repeat: int) -> None:
    def doc(*extra):
        return load_workflow(ROOT / "workflows" / "kdd99.yaml", [
            f"data.path={kdd99}", f"outputs.runs={out / 'runs'}",
            f"outputs.model_store={out / 'models'}", *extra]).doc

    arms = [("direct", direct_kdd99, doc()),
            ("workflow", workflow_kdd99, doc()),
            ("workflow without performance report", workflow_kdd99,
             doc("outputs.performance_report=false"))]
    rows = []
    for k in range(repeat):
        # Rotate the order so that warm caches and drifting load favour no arm.
        for name, fn, d in arms[k % 3:] + arms[:k % 3]:
            seconds, info = fn(d, client)
            rows.append((name, seconds, info))
            print(f"  {name:<36} {seconds:8.2f} s  (fit {info['fit_seconds']:.2f} s, "
                  f"test error {info['error']:.4f})", flush=True)
    def medians(name):
        total = np.median([s for n, s, _ in rows if n == name])
        # Seconds outside TSVM.fit: the fit is the same code in every arm, and on a shared
        # machine its time varies far more than the workflow layer costs.
        rest = np.median([s - i["fit_seconds"] for n, s, i in rows if n == name])
        return total, rest

    direct, direct_rest = medians("direct")
    print(f"KDD99 10% TSVM (l=1000), medians of {repeat}: direct {direct:.2f} s "
          f"({direct_rest:.2f} s outside the fit)")
    for name, _, _ in arms[1:]:
        flow, rest = medians(name)
        print(f"  {name}: {flow:.2f} s, overhead {100 * (flow / direct - 1):+.1f}%; outside the "
              f"fit {rest:.2f} s, i.e. {rest - direct_rest:+.2f} s = "
              f"{100 * (rest - direct_rest) / direct:+.1f}% of the direct run")


def bench_retrain(client, out: Path, n: int, estimator: str) -> None:
    base = [f"outputs.runs={out / 'runs'}", "outputs.performance_report=false",
            "outputs.plots=false", "outputs.predictions=none", f"data.params.n={n}",
            "split.labeled_per_class=50", f"estimator.name={estimator}"]
    if estimator != "TSVM":
        base.append("estimator.params={gamma_A: 1e-3}")

    def run(seed: int, store: str, warm: bool) -> dict:
        doc = load_workflow(ROOT / "workflows" / "quickstart.yaml",
                            base + [f"data.params.seed={seed}",
                                    f"outputs.model_store={out / store}"]).doc
        return run_workflow(doc, new_run(doc), client=client, progress=False, warm_start=warm)

    yesterday = run(0, "models", warm=False)
    print(f"  yesterday (seed 0), cold: fit {yesterday['estimator']['fit_seconds']:.2f} s")
    warm = run(1, "models", warm=True)
    # The cold start gets its own store holding yesterday's model too, so both runs do the
    # same work apart from the starting point (both compare against yesterday's model).
    run(0, "models-cold", warm=False)
    cold = run(1, "models-cold", warm=False)
    def trips(rep):
        # Round trips are what a fit costs on any cluster, whatever else loads the machine.
        history = rep["history"]
        return history[-1].get("round_trips", len(history)) if history else None

    for name, rep in (("warm", warm), ("cold", cold)):
        print(f"  today (seed 1), {name}: fit {rep['estimator']['fit_seconds']:.2f} s, "
              f"{rep['estimator']['n_iter']} iterations, {trips(rep)} round trips, "
              f"error {rep['metrics']['error']:.4f}, promoted {rep['model']['promoted']}")
    ratio = warm["estimator"]["fit_seconds"] / cold["estimator"]["fit_seconds"]
    print(f"retrain {estimator} on g50c n={n}: warm / cold = {ratio:.2f} in fit seconds, "
          f"{trips(warm)} / {trips(cold)} round trips")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", choices=["overhead", "retrain"])
    p.add_argument("--kdd99", type=Path,
                   default=ROOT.parent / "shared" / "data" / "kdd99" / "kddcup.data_10_percent.gz")
    p.add_argument("--repeat", type=int, default=2, help="overhead runs per side")
    p.add_argument("--n", type=int, default=100000, help="rows per day in the retrain benchmark")
    p.add_argument("--estimator", default="TSVM", help="estimator of the retrain benchmark")
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1,
                           dashboard_address=":0", silence_logs=logging.ERROR)
    with Client(cluster) as client, tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        if args.only in (None, "overhead"):
            bench_overhead(client, args.kdd99, out / "overhead", args.repeat)
        if args.only in (None, "retrain"):
            bench_retrain(client, out / "retrain", args.n, args.estimator)
    cluster.close()


if __name__ == "__main__":
    main()
