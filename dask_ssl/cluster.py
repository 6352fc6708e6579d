"""Finding or starting the Dask client an estimator runs on."""

from __future__ import annotations

import atexit
import logging

from dask.system import CPU_COUNT
from distributed import Client, LocalCluster
from distributed.system import MEMORY_LIMIT

log = logging.getLogger(__name__)

_OWNED: list[Client] = []


def _close_owned() -> None:
    for client in _OWNED:
        cluster = client.cluster
        client.close()
        if cluster is not None:
            cluster.close()
    _OWNED.clear()


atexit.register(_close_owned)

#: Least memory (GB) a default LocalCluster leaves each worker (the README's peak worker RSS:
#: 0.6-1.0 GB at kdd99-scale and RCV1-like full size), stated in ``--workers --help``.
WORKER_MEMORY_GB = 2.0


def default_workers() -> int:
    """Workers of a LocalCluster started without a count: one single-threaded worker per CPU
    core this process may use (cgroup quotas and affinity count, as dask reads them), fewer when
    that would leave a worker less than ``WORKER_MEMORY_GB`` of the memory limit."""
    by_memory = int(MEMORY_LIMIT // (WORKER_MEMORY_GB * 2 ** 30))
    return max(1, min(CPU_COUNT, by_memory))


def get_client(client: Client | None = None, *, scheduler: str | None = None,
               n_workers: int | None = None, security=None) -> Client:
    """Return the client to run on.

    Order: an explicit ``client``; a ``scheduler`` address to connect to; the current default
    client; otherwise a LocalCluster started once per process (``n_workers`` workers with one
    thread each, 2 by default) and closed at exit.
    """
    if client is not None:
        return client
    if scheduler is not None:
        return Client(scheduler, security=security)
    if n_workers is None:
        try:
            from distributed import default_client

            return default_client()
        except ValueError:
            pass
    for owned in _OWNED:
        if n_workers is None or len(owned.scheduler_info(n_workers=-1)["workers"]) == n_workers:
            return owned
    cluster = LocalCluster(n_workers=n_workers or default_workers(), threads_per_worker=1,
                           dashboard_address=":0", silence_logs=logging.ERROR)
    # Workers on this machine are reachable: solver round trips skip the scheduler hop
    # (RCV1-like TSVM, 200 k rows: 29.8 -> 27.2 s, driver CPU 5.7 -> 4.3 s).
    owned = Client(cluster, set_as_default=False, direct_to_workers=True)
    _OWNED.append(owned)
    log.info("started a LocalCluster, dashboard at %s", owned.dashboard_link)
    return owned
