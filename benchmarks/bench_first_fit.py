"""The first fit of a fresh install against the second: ``dask-ssl fit`` twice, each in a new
process, the first with no compiled kernels anywhere (as right after ``pip install``), the
second finding what the first left behind. The first command's import compiles the package's
listed kernels once (:mod:`dask_ssl.compile_once`); its line on stderr is printed, and that
cost is in the first command's wall and CPU (children included) and its ``imports`` phase.

    python benchmarks/bench_first_fit.py [--python VENV/bin/python] [--only svm,tsvm,...]
                                         [--repeats 1] [--workdir DIR] [--compile-first]
                                         [--peers liblinear,svmlin,labelspreading,pynndescent]

Before each first run the installed package's ``__pycache__`` folders are deleted (numba's
in-tree cache, ``.nbi``/``.nbc``, and the byte code) and the pair gets a new, empty
``XDG_CACHE_HOME`` (dask-ssl's caches and numba's per-user one live there). Same data, same
flags, same 2 worker threads in both runs. Printed per run: the ``fit`` phase (wall and CPU
seconds, the whole process's CPU, worker threads included: far less sensitive to other work on
the host than wall time), the estimator's ``fit_seconds``, the ``imports`` phase (its CPU is
the command process's only, not the compiling children's), the command's wall and CPU from the
shell (child processes included); then the ratios first / second. The load average is printed
with each run: wall figures on a busy host are noisy, CPU seconds much less so.

Data: KDD99 10% (``../shared/data/kdd99/kddcup.data_10_percent.gz``, 494,021 rows) for the
linear S3VMs, and a 50,000-row sample of it (rows drawn without replacement, seed 0, written
once to ``--workdir`` as CSV) for the graph, kernel and manifold estimators, whose fits grow
faster than linearly in the rows.

Then the peers' first and second runs, each in a new process of the same interpreter, on the
same files (``_first_run_peers.py``: LIBLINEAR, svmlin, LabelSpreading, pynndescent; ``--peers
""`` skips them), with the same columns: their fit (wall, CPU), the command's, the ratios.
"""

from __future__ import annotations

import argparse
import gzip
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

from _common import KDD99
from _first_run_peers import peer_pairs

SAMPLE_ROWS = 50_000
#: name -> (data: "full" or "sample", fit flags)
CASES = {
    "svm": ("full", ["--algorithm", "svm"]),
    "tsvm": ("full", ["--algorithm", "tsvm", "--labeled", "1000"]),
    "da": ("full", ["--algorithm", "da", "--labeled", "1000"]),
    "transduction": ("sample", ["--algorithm", "transduction", "--labeled", "1000"]),
    "laprls": ("sample", ["--algorithm", "laprls", "--labeled", "1000", "--n-components", "500"]),
    "linlaprls": ("sample", ["--algorithm", "linlaprls", "--labeled", "1000"]),
}


def sample_file(work: Path) -> Path:
    """A 50 k-row sample of KDD99 10% (the same rows every time), written once."""
    out = work / f"kddcup-sample-{SAMPLE_ROWS}.data.gz"
    if not out.exists():
        with gzip.open(KDD99, "rb") as f:
            lines = f.read().splitlines(keepends=True)
        keep = np.sort(np.random.default_rng(0).choice(len(lines), SAMPLE_ROWS, replace=False))
        tmp = out.with_suffix(".tmp")
        with gzip.open(tmp, "wb") as f:
            f.writelines(lines[i] for i in keep)
        tmp.rename(out)
    return out


def package_dir(python: str) -> Path:
    code = "import importlib.util as u; print(u.find_spec('dask_ssl').submodule_search_locations[0])"
    return Path(subprocess.run([python, "-c", code], capture_output=True, text=True,
                               check=True).stdout.strip())


def forget_compiled(pkg: Path) -> int:
    """Delete every ``__pycache__`` under the package (numba's in-tree cache, byte code)."""
    gone = 0
    for d in list(pkg.rglob("__pycache__")):
        gone += sum(1 for _ in d.iterdir())
        shutil.rmtree(d)
    return gone


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def run_fit(python: str, data: Path, flags: list, env: dict, work: Path) -> dict:
    model = Path(tempfile.mkdtemp(dir=work, prefix="model-"))
    cmd = [str(Path(python).with_name("dask-ssl")), "fit", "--data", str(data), "--workers", "2",
           *flags, "--model-out", str(model)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = load()
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    doc = json.loads((model / "model.json").read_text())
    shutil.rmtree(model)
    compiled = [line for line in done.stderr.splitlines() if "dask-ssl: compiling" in line]
    return {"fit": doc["phases"]["fit"], "fit_cpu": doc["phases_cpu"]["fit"],
            "imports": doc["phases"]["imports"], "imports_cpu": doc["phases_cpu"]["imports"],
            "fit_seconds": doc["fit_seconds"], "phases": doc["phases"],
            "phases_cpu": doc["phases_cpu"], "wall": wall,
            "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "load": load_before, "compile_at_import": compiled[0] if compiled else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter of the install to measure (its dask-ssl beside it)")
    ap.add_argument("--only", default=",".join(CASES))
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "dask-ssl-first-fit"))
    ap.add_argument("--json", help="also write the runs here")
    ap.add_argument("--peers", default="liblinear,svmlin,labelspreading,pynndescent",
                    help="peers whose first and second runs are timed too ('' for none)")
    ap.add_argument("--compile-first", action="store_true",
                    help="run `dask-ssl compile --family F` (timed) before the first fit, as "
                         "after an install or in an image build")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    files = {"full": KDD99, "sample": sample_file(work)}
    pkg = package_dir(args.python)
    print(f"package {pkg}; load {load()}", flush=True)
    rows = []
    for name in args.only.split(","):
        where, flags = CASES[name]
        for rep in range(args.repeats):
            home = Path(tempfile.mkdtemp(dir=work, prefix="xdg-"))
            env = {k: v for k, v in os.environ.items()
                   if k not in ("NUMBA_CACHE_DIR", "DASK_SSL_CACHE")}
            env["XDG_CACHE_HOME"] = str(home)
            forget_compiled(pkg)
            if args.compile_first:
                family = subprocess.run(
                    [args.python, "-c", f"from dask_ssl.workflow.fit import FAMILY; "
                                        f"print(FAMILY[{flags[1]!r}])"],
                    capture_output=True, text=True, check=True).stdout.strip()
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                subprocess.run([str(Path(args.python).with_name("dask-ssl")), "compile",
                                "--family", family], env=env, check=True,
                               capture_output=True)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                print(f"{name:13s} dask-ssl compile --family {family}: "
                      f"{time.perf_counter() - t0:.1f} s (CPU "
                      f"{after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime:.1f})",
                      flush=True)
            runs = [run_fit(args.python, files[where], flags, env, work) for _ in range(2)]
            shutil.rmtree(home)
            first, second = runs
            ratio, ratio_cpu = first["fit"] / second["fit"], first["fit_cpu"] / second["fit_cpu"]
            for label, r in zip(("first", "second"), runs):
                print(f"{name:13s} {label:6s} fit {r['fit']:7.2f} s (CPU {r['fit_cpu']:7.2f}) "
                      f"fit_seconds {r['fit_seconds']:7.2f}  imports {r['imports']:6.2f} s "
                      f"(CPU {r['imports_cpu']:6.2f}, this process only)  command "
                      f"{r['wall']:6.2f} s (CPU {r['cpu']:6.2f})  load {r['load']}  "
                      f"phases {json.dumps(r['phases'])}", flush=True)
                if r["compile_at_import"]:
                    print(f"{name:13s} {label:6s} {r['compile_at_import']}", flush=True)
            print(f"{name:13s} ratio first/second: fit wall {ratio:.2f}, fit CPU {ratio_cpu:.2f}, "
                  f"command wall {first['wall'] / second['wall']:.2f}, "
                  f"command CPU {first['cpu'] / second['cpu']:.2f}", flush=True)
            rows.append({"estimator": name, "data": where, "first": first, "second": second})
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    for name, first, second in peer_pairs(args.python, [p for p in args.peers.split(",") if p],
                                          work, files["sample"], env):
        for label, r in (("first", first), ("second", second)):
            print(f"{name:13s} {label:6s} fit {r['fit']:7.2f} s (CPU {r['fit_cpu']:7.2f})  "
                  f"command {r['wall']:6.2f} s (CPU {r['cpu']:6.2f})  load {load()}", flush=True)
        print(f"{name:13s} ratio first/second: fit wall {first['fit'] / second['fit']:.2f}, "
              f"fit CPU {first['fit_cpu'] / second['fit_cpu']:.2f}, command wall "
              f"{first['wall'] / second['wall']:.2f}, command CPU "
              f"{first['cpu'] / second['cpu']:.2f}", flush=True)
        rows.append({"peer": name, "first": first, "second": second})
    print(f"load at the end {load()}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
