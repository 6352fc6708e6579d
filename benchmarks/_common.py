"""Helpers shared by the benchmark scripts: locating data, a LocalCluster, peak worker memory."""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from pathlib import Path

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


@contextmanager
def timed(out: dict, key: str):
    t0 = time.perf_counter()
    yield
    out[key] = time.perf_counter() - t0
