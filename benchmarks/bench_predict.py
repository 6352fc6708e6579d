"""``dask-ssl predict`` throughput of a stored GraphTransduction model against a stored TSVM's,
the same new rows of RCV1-like text.

    python benchmarks/bench_predict.py [--train 20000] [--new 20000] [--labels 100] [--repeats 2]

Data: the RCV1-like generator (one call, ``--train + --new`` rows), written as two svmlight
files to ``--workdir``: the first ``--train`` rows to fit on, the next ``--new`` rows to
predict. Both models are fitted by ``dask-ssl fit`` on the training file with a stratified
``--labels`` of its labels (``--labeled N --seed 0``): ``--algorithm transduction --metric
cosine --weights cosine --class-balance labeled`` (the setting that works on text) and
``--algorithm tsvm --gamma-u 10`` with r the positive share of the unlabeled rows. Each model
directory's size on disk is printed.

Then, alternating between the two models, ``--repeats`` times:

- the whole ``dask-ssl predict --model DIR --data new.svm --outputs FILE`` command, a fresh
  process timed from the shell (start to exit: imports, cluster, loading the model, reading
  the rows onto the workers, scoring, writing), and its CPU seconds;
- the same steps in a fresh process of this script, each phase timed in-process, the
  scoring phase (``model.decision_function(blocks)``, the rows already on the workers) apart,
  and the scoring once more in that process (first-call costs gone).

Rows per second = new rows / seconds. Error on the new rows by the sign of the decision
value (GraphTransduction's two-column scores: the larger). Both run on the same default
LocalCluster (``--workers`` to set it), so no per-core column is needed. The load average is
printed with each row: figures from a loaded host are not a quiet host's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from _common import load_average, run_program

#: The console script installed beside this interpreter: what a user runs.
DASK_SSL = str(Path(sys.executable).with_name("dask-ssl"))


def make_data(args, work: Path) -> dict:
    """Write (once) the training and new-rows files; return their paths and labels."""
    name = f"rcv1-{args.train}-{args.new}"
    train, new = work / f"{name}.train.svm", work / f"{name}.new.svm"
    truth = work / f"{name}.labels.npy"
    if not (train.exists() and new.exists() and truth.exists()):
        from sklearn.datasets import dump_svmlight_file

        from dask_ssl.data import rcv1_like

        t0 = time.perf_counter()
        X, y = rcv1_like(n_rows=args.train + args.new, seed=0)
        dump_svmlight_file(X[:args.train], y[:args.train], str(train), zero_based=False)
        dump_svmlight_file(X[args.train:], y[args.train:], str(new), zero_based=False)
        np.save(truth, y)
        print(f"wrote {train} and {new} ({X.shape[1]} columns) in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    y = np.load(truth)
    return {"train": train, "new": new, "y_train": y[:args.train], "y_new": y[args.train:]}


def fit(args, data, method: str, work: Path) -> Path:
    from dask_ssl.workflow.split import choose

    model = work / f"model-{method}"
    cmd = [DASK_SSL, "fit", "--data", str(data["train"]), "--labeled", str(args.labels),
           "--seed", "0", "--model-out", str(model)]
    if method == "transduction":
        cmd += ["--algorithm", "transduction", "--metric", "cosine", "--weights", "cosine",
                "--class-balance", "labeled"]
    else:
        y = data["y_train"]
        split = choose(y, test_fraction=0, seed=0, labeled=args.labels).train_labels()
        hidden = (split == 0) & (y != 0)
        cmd += ["--algorithm", "tsvm", "--gamma-u", "10",
                "--pos-fraction", repr(float(np.mean(y[hidden] > 0)))]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    wall, cpu, _ = run_program(cmd)
    doc = json.loads((model / "model.json").read_text())
    size = sum(f.stat().st_size for f in model.rglob("*") if f.is_file())
    print(f"fit {method}: {wall:.1f} s from the shell (fit_seconds {doc.get('fit_seconds', 0):.1f}"
          f", CPU {cpu:.1f} s), model directory {size / 1e6:.1f} MB; load {load_average()}",
          flush=True)
    return model


def error(outputs: Path, y) -> float:
    s = np.loadtxt(outputs)
    pred = np.where(s[:, 1] > s[:, 0], 1, -1) if s.ndim == 2 else np.where(s > 0, 1, -1)
    return float(np.mean(pred != y))


def predict_shell(args, data, model: Path, work: Path) -> dict:
    out = work / f"outputs-{model.name}.txt"
    cmd = [DASK_SSL, "predict", "--model", str(model), "--data", str(data["new"]),
           "--outputs", str(out)]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    wall, cpu, _ = run_program(cmd)
    return {"wall": wall, "cpu": cpu, "error": error(out, data["y_new"])}


def predict_phases(args, data, model: Path, work: Path) -> dict:
    cmd = [sys.executable, __file__, "_phases", str(model), str(data["new"]),
           str(work / f"outputs-{model.name}-phases.txt"), str(args.workers or 0)]
    _, _, done = run_program(cmd)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _phases_main(model_dir: str, path: str, outputs: str, workers: int) -> None:
    """``dask-ssl predict``'s steps (as ``cli.cmd_predict`` takes them), each timed."""
    t = {}
    t0 = time.perf_counter()
    from dask_ssl.cluster import get_client
    from dask_ssl.models.artifact import load_model
    from dask_ssl.workflow.outputs import write_outputs
    from dask_ssl.workflow.sources import file_section, load

    t1 = time.perf_counter()
    t["imports"] = t1 - t0
    client = get_client(n_workers=workers or None)
    t2 = time.perf_counter()
    t["cluster"] = t2 - t1
    model = load_model(model_dir)
    t3 = time.perf_counter()
    t["load model"] = t3 - t2
    blocks, _ = load(file_section(path, "svmlight"), path, client,
                     n_features=model.n_features_in_)
    blocks.wait(blocks.blocks)
    t4 = time.perf_counter()
    t["read"] = t4 - t3
    scores = model.decision_function(blocks)
    t5 = time.perf_counter()
    t["score"] = t5 - t4
    write_outputs(outputs, scores)
    t6 = time.perf_counter()
    t["write"] = t6 - t5
    # the scoring once more in the same process: what is left without first-call costs
    # (compiling or loading kernels, building the model's search structures)
    model.decision_function(blocks)
    t["score again"] = time.perf_counter() - t6
    print(json.dumps({"rows": int(blocks.n_rows), "phases": t}))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_phases":
        _phases_main(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", type=int, default=20000, help="rows to fit on")
    ap.add_argument("--new", type=int, default=20000, help="new rows to predict")
    ap.add_argument("--labels", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--workers", type=int, help="dask-ssl --workers (default: its own)")
    ap.add_argument("--workdir", default="/tmp/dask-ssl-bench-predict")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    data = make_data(args, work)
    print(f"RCV1-like: {args.train} training rows ({args.labels} labels), {args.new} new rows",
          flush=True)
    models = {m: fit(args, data, m, work) for m in ("transduction", "tsvm")}
    rows = {m: [] for m in models}
    for rep in range(args.repeats):
        order = list(models) if rep % 2 == 0 else list(models)[::-1]
        for m in order:
            shell = predict_shell(args, data, models[m], work)
            ph = predict_phases(args, data, models[m], work)
            rows[m].append((shell, ph))
            p = ph["phases"]
            print(f"[{rep}] {m:12s} predict from the shell {shell['wall']:6.2f} s "
                  f"({args.new / shell['wall']:8.0f} rows/s, CPU {shell['cpu']:.1f} s), error on "
                  f"the new rows {shell['error']:.4%}; in-process phases: "
                  + " ".join(f"{k} {v:.2f}" for k, v in p.items())
                  + f" -> scoring {args.new / p['score']:.0f} rows/s; load {load_average()}",
                  flush=True)
    print("| model | predict from the shell s (rows/s) | scoring phase s (rows/s) | scoring "
          "again s (rows/s) | error on the new rows % |")
    for m, runs in rows.items():
        wall = float(np.median([s["wall"] for s, _ in runs]))
        score = float(np.median([p["phases"]["score"] for _, p in runs]))
        again = float(np.median([p["phases"]["score again"] for _, p in runs]))
        print(f"| {m} | {wall:.2f} ({args.new / wall:.0f}) | {score:.3f} ({args.new / score:.0f}) "
              f"| {again:.3f} ({args.new / again:.0f}) | {100 * runs[0][0]['error']:.2f} |")
    g = np.median([p["phases"]["score"] for _, p in rows["transduction"]])
    t = np.median([p["phases"]["score"] for _, p in rows["tsvm"]])
    print(f"scoring phase GraphTransduction / TSVM: {g / t:.1f}x the time (medians); load "
          f"{load_average()}")


if __name__ == "__main__":
    main()
