"""`dask-ssl predict` of a stored GraphTransduction model: its kNN index against the exact search.

The model directory is scored as written (the fit's per-block kNN indexes searched on the
workers) and as a directory written before directories kept the indexes (a copy without the
``index_*`` arrays, checksum renewed: every training row searched exactly), each in a new
``dask-ssl predict`` process with a 2-worker LocalCluster. Prints wall and CPU seconds of each
command (its workers included), the error against the new rows' labels and how many labels
the two searches give alike.

    python benchmarks/bench_stored_search.py MODEL_DIR NEW_ROWS_FILE
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def without_index(model: Path, dest: Path) -> Path:
    """A copy of ``model`` as written before directories kept the kNN index."""
    shutil.copytree(model, dest)
    with np.load(model / "arrays.npz") as npz:
        kept = {k: npz[k] for k in npz.files if not k.startswith("index_")}
    np.savez(dest / "arrays.npz", **kept)
    doc = json.loads((dest / "model.json").read_text())
    digest = hashlib.sha256((dest / "arrays.npz").read_bytes()).hexdigest()
    doc["checksums"]["arrays.npz"] = "sha256:" + digest
    (dest / "model.json").write_text(json.dumps(doc))
    return dest


def labels(path: str) -> np.ndarray:
    """+1 / -1 of each new row: KDD99 CSV (attack vs normal) or svmlight."""
    if "kddcup" in Path(path).name:
        with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as f:
            return np.array([-1 if line.rstrip().endswith(b"normal.") else 1 for line in f])
    with open(path) as f:
        return np.array([1 if float(line.split()[0]) > 0 else -1 for line in f])


def predict(model: Path, data: str, out: Path) -> tuple[float, float, float]:
    """Wall and CPU seconds of one `dask-ssl predict`, and the load average before it."""
    load = os.getloadavg()[0]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dask_ssl.cli", "predict", "--model", str(model),
                    "--data", data, "--outputs", str(out), "--workers", "2"], check=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("data")
    args = parser.parse_args()
    y = labels(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        models = {"index": args.model, "exact": without_index(args.model, tmp / "exact")}
        predicted = {}
        for name, model in models.items():
            wall, cpu, load = predict(model, args.data, tmp / f"{name}.out")
            predicted[name] = np.where(np.loadtxt(tmp / f"{name}.out") > 0, 1, -1)
            print(f"{name}: {wall:.1f} s wall, {cpu:.1f} s CPU, load {load:.1f}, "
                  f"error {np.mean(predicted[name] != y):.2%}", flush=True)
    differ = int(np.sum(predicted["index"] != predicted["exact"]))
    print(f"labels alike: {1 - differ / y.size:.2%} ({differ} of {y.size} differ)")


if __name__ == "__main__":
    main()
