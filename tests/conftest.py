"""Shared fixtures: one LocalCluster for the session, shared data paths, and real ``dask
scheduler`` / ``dask worker`` processes on 127.0.0.1 for the cluster tests (one set for the
whole session, plus a factory for tests that need their own, such as TLS).

The session LocalCluster's workers are threads of the test process, as in the cluster a user
gets by default (:func:`dask_ssl.cluster.get_client`): a round trip crosses no socket, which
took the suite from about 23 to 15 minutes on two cores. What needs worker processes (a killed
worker, an address another process connects to, serialization between hosts) runs on the
real processes."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from distributed import Client, LocalCluster

from ._procs import DaskProcesses

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

# distributed binds its log handler to the stderr of import time, which is pytest's capture
# file: INFO lines from the session cluster's shutdown would be written after it is closed.
logging.getLogger("distributed").setLevel(logging.WARNING)


@pytest.fixture(scope="session", autouse=True)
def _block_cache(tmp_path_factory):
    """Commands cache parsed svmlight blocks (``$DASK_SSL_CACHE``): keep the suite's entries,
    and those of the subprocesses it starts, out of the user's ~/.cache. The compiled kernels
    stay where this process keeps them (the user's kernel cache), so that the subprocesses
    load what it compiled and the next session finds them."""
    from dask_ssl.cachedir import kernel_cache_dir

    mp = pytest.MonkeyPatch()
    mp.setenv("DASK_SSL_KERNEL_CACHE", kernel_cache_dir() or "off")
    mp.setenv("DASK_SSL_CACHE", str(tmp_path_factory.mktemp("dask-ssl-cache")))
    yield
    mp.undo()


@pytest.fixture(scope="session")
def client():
    """The session's default client: two one-thread workers in this process (module text)."""
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                           dashboard_address=":0", silence_logs=logging.ERROR)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} is missing (tests that read real data skip)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def kdd99_path(shared_data) -> Path:
    path = shared_data / "kdd99" / "kddcup.data_10_percent.gz"
    if not path.is_file():
        pytest.skip(f"{path} is missing")
    return path


@pytest.fixture(scope="session")
def _real_cluster(tmp_path_factory):
    procs = DaskProcesses(tmp_path_factory.mktemp("real-cluster"), n_workers=2)
    try:
        yield procs.start()
    finally:
        procs.stop()


@pytest.fixture
def real_cluster(_real_cluster):
    """Factory: a real ``dask scheduler`` with ``n_workers`` ``dask worker`` processes on
    127.0.0.1. One scheduler serves the whole session (each fresh worker pays seconds of imports
    and numba cache loads); every call returns it with exactly ``n_workers`` live workers,
    starting some in place of ones a previous test killed, or stopping the newest."""
    return _real_cluster.ensure_workers


@pytest.fixture
def dask_processes(tmp_path):
    """Factory: start a real scheduler and N workers on 127.0.0.1; all are stopped afterwards."""
    started = []

    def start(n_workers: int = 2, **kwargs) -> DaskProcesses:
        procs = DaskProcesses(tmp_path / f"cluster{len(started)}", n_workers=n_workers, **kwargs)
        started.append(procs)
        procs.start()
        return procs

    yield start
    for procs in started:
        procs.stop()
