"""Helpers shared by the benchmark scripts: locating data, a LocalCluster, peak worker memory,
and the peers that run as programs (svmlin), timed from the outside."""

from __future__ import annotations

import logging
import re
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from distributed import Client, LocalCluster

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
KDD99 = SHARED / "kdd99" / "kddcup.data_10_percent.gz"
MULTIVIEW = SHARED / "multiview"


@contextmanager
def local_cluster(n_workers: int = 2, threads_per_worker: int = 1):
    with LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                      dashboard_address=":0",
                      silence_logs=logging.ERROR, memory_limit="10GiB") as cluster, \
            Client(cluster, direct_to_workers=True) as client:  # as dask_ssl.cluster does
        yield client


def worker_peak_rss(client) -> float:
    """Largest resident set size among the workers now, in MiB."""
    import psutil

    rss = client.run(lambda: psutil.Process().memory_info().rss)
    return max(rss.values()) / 2**20


def workers_cpu(client) -> float:
    """CPU seconds (user + system) the worker processes have used so far, summed."""
    import psutil

    def cpu():
        t = psutil.Process().cpu_times()
        return t.user + t.system

    return float(sum(client.run(cpu).values()))


@contextmanager
def timed(out: dict, key: str):
    t0 = time.perf_counter()
    yield
    out[key] = time.perf_counter() - t0


# peers run as programs -----------------------------------------------------------------------
SVMLIN_BUILD = SHARED.parent / "peers" / "svmlin" / "build.sh"


def load_average() -> str:
    """The host's 1-minute load average now, for the printed figures (the ratios of a loaded
    host are not a quiet host's)."""
    import os

    return f"{os.getloadavg()[0]:.1f}"


def run_program(cmd, **kw):
    """Run ``cmd`` to its exit: (wall seconds from start to exit, CPU seconds (user + system)
    of the process and its children, the CompletedProcess). Exits with its output on failure."""
    import resource
    import subprocess
    import sys

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed:\n{done.stdout}\n{done.stderr}")
    return wall, cpu, done


def build_svmlin(work: Path) -> str:
    """Build svmlin (the seeds' C++, ``../shared/peers/svmlin``) into ``work``; its path."""
    import subprocess

    return subprocess.run(["sh", str(SVMLIN_BUILD), str(work / "svmlin-bin")],
                          capture_output=True, text=True, check=True).stdout.strip()


def write_svmlin_files(X, y, svm: Path, examples: Path) -> None:
    """``svm``: the rows as svmlight with their labels (what ``dask-ssl fit`` reads);
    ``examples``: the same lines without the label column (svmlin takes its labels apart)."""
    import subprocess

    from sklearn.datasets import dump_svmlight_file

    dump_svmlight_file(X, y, str(svm), zero_based=False)
    with open(svm, "rb") as src, open(examples, "wb") as dst:
        subprocess.run(["cut", "-d", " ", "-f", "2-"], stdin=src, stdout=dst, check=True)


def run_svmlin(svmlin: str, method: str, examples: Path, labels: Path, run_dir: Path, *,
               gamma: float, gamma_u: float, r: float, switches: int) -> dict:
    """One svmlin process (``method`` tsvm or da) on the examples and a labels file (0 =
    unlabeled), timed from the outside: ``wall`` (process start to exit, reading and writing
    its outputs included), ``cpu`` (its user + system seconds), ``read`` (its own reading
    seconds), ``train`` (its own printed training seconds, CPU clock of its one thread),
    ``objective`` and ``outputs`` (one decision value per row)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    algo = {"tsvm": "2", "da": "3"}[method]
    cmd = [svmlin, "-A", algo, "-W", str(gamma), "-U", str(gamma_u), "-R", repr(r),
           "-S", str(max(1, switches)), str(examples), str(labels)]
    wall, cpu, done = run_program(cmd, cwd=run_dir)
    objective = float(re.findall(r"Objective Value = ([-+0-9.eE]+)", done.stdout)[-1])
    read = sum(float(s) for s in re.findall(r"Reading took ([0-9.eE+-]+) secs", done.stdout))
    train = float(re.findall(r"(?:Transductive L2_SVM_MFN|DA-SVM) took ([0-9.eE+-]+) seconds",
                             done.stdout)[-1])
    outputs = np.loadtxt(run_dir / f"{Path(examples).name}.outputs")
    return {"wall": wall, "cpu": cpu, "read": read, "train": train, "objective": objective,
            "outputs": outputs}
