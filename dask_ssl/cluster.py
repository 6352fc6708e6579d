"""Finding or starting the Dask client an estimator runs on."""

from __future__ import annotations

import importlib
import logging
import os
import threading
from urllib.parse import urlsplit

from dask.system import CPU_COUNT
from distributed import Client, LocalCluster, Nanny, Worker
from distributed.system import MEMORY_LIMIT
from distributed.diagnostics.plugin import WorkerPlugin

from . import compile_once
from .kernel_cache import ALL_MODULES, compile_imported_kernels
from .linalg.workers import live_workers

log = logging.getLogger(__name__)

#: Modules whose functions run on the workers. A fresh worker imports them (scikit-learn
#: and SciPy with them: seconds on a busy host) and compiles or loads their kernels when the
#: first task needs them; :class:`WarmWorker` does it as the worker starts (the kernels in
#: the background), with every module that has kernels (:data:`~dask_ssl.kernel_cache.ALL_MODULES`).
WORKER_MODULES = ("dask_ssl.solvers.mfn", "dask_ssl.models", "dask_ssl.data", "dask_ssl.graph")

#: Where a started LocalCluster's dashboard listens when one is asked for (``dashboard=True``,
#: ``dask-ssl --dashboard``): this machine only, on a free port. The dashboard shows task names
#: and data sizes and accepts profiling requests; a shared host's other users must not reach it.
#: Set ``DASK_SSL_DASHBOARD`` (e.g. ``0.0.0.0:8787``) to choose the address; setting it also
#: turns the dashboard on. Off by default: starting it costs about 0.6 s (Bokeh), a tenth of a
#: KDD99 10% TSVM fit from the shell.
DEFAULT_DASHBOARD = "127.0.0.1:0"

_OWNED: list[Client] = []
_WITH_DASHBOARD: list[Client] = []


def close_owned() -> None:
    """Close the LocalClusters this process started (at exit, or before a quick exit)."""
    for client in _OWNED:
        cluster = client.cluster
        client.close()
        if cluster is not None:
            cluster.close()
    _OWNED.clear()
    _WITH_DASHBOARD.clear()


# Closed when the main thread ends, before concurrent.futures shuts its thread pools (Dask's
# offload pool among them). Closed later, from ``atexit``, about one exit in six after a graph
# fit ended with the interpreter's last flush of standard output failing ("TypeError: an
# integer is required", exit status 120). ``threading._register_atexit`` is the hook
# concurrent.futures registers its own shutdown with; the hooks run last-registered first.
threading._register_atexit(close_owned)

#: Least memory (GB) a default LocalCluster leaves each worker (the README's peak worker RSS:
#: 0.6-1.0 GB at kdd99-scale and RCV1-like full size), stated in ``--workers --help``.
WORKER_MEMORY_GB = 2.0


def default_workers() -> int:
    """Workers of a LocalCluster started without a count: one single-threaded worker per CPU
    core this process may use (cgroup quotas and affinity count, as dask reads them), fewer when
    that would leave a worker less than ``WORKER_MEMORY_GB`` of the memory limit."""
    by_memory = int(MEMORY_LIMIT // (WORKER_MEMORY_GB * 2 ** 30))
    return max(1, min(CPU_COUNT, by_memory))


def warm_worker(modules=WORKER_MODULES) -> int:
    """Import ``modules`` and make their kernels (and those of every dask-ssl module imported
    so far) ready: loaded from the disk cache, compiled and cached where it has none; return
    how many kernels are ready."""
    for name in modules:
        importlib.import_module(name)
    return compile_imported_kernels()


class WarmWorker(WorkerPlugin):
    """Worker plugin: when a worker starts, import :data:`WORKER_MODULES` and every module
    with kernels, then compile their kernels (or load them from the worker's own disk cache)
    in a background thread for the argument types the fits call
    (:mod:`dask_ssl.kernel_cache`), so a run's first tasks find both done (a task that needs
    a kernel still being compiled waits on numba's compiler lock, never compiles it twice).
    On a machine that shares no disk with the client, the first worker to import dask-ssl
    compiles the listed kernels there once, in child processes (:mod:`dask_ssl.compile_once`),
    while its tasks run; the thread waits for that, then loads.

    The imports run before the worker takes tasks, not in that thread: a task unpickled
    while another thread imports the same package can meet a circular import half done and
    fail with "cannot import name" (seen once on a worker restarted mid-run).
    """

    name = "dask-ssl-warm"

    def setup(self, worker):
        for name in WORKER_MODULES + ALL_MODULES:
            importlib.import_module(name)
        threading.Thread(target=_warm, name="dask-ssl-warm", daemon=True).start()


def _warm() -> None:
    # A worker whose machine had no compiled kernels compiles them in the background at
    # import (dask_ssl.compile_once); loading them here waits for that, not compiling twice.
    compile_once.wait()
    compile_imported_kernels()


class _ThreadWorker(Worker):
    """A worker thread whose HTTP server (health, metrics) listens on 127.0.0.1: Dask binds it
    to the worker's host, and an inproc:// address has none, so it would listen on every
    interface. (LocalCluster's ``worker_dashboard_address`` would also start a Bokeh
    dashboard per worker: 0.6 s.)"""

    def __init__(self, *args, **kwargs):
        kwargs["dashboard_address"] = "127.0.0.1:0"
        super().__init__(*args, **kwargs)


def _dashboard_address() -> str:
    return os.environ.get("DASK_SSL_DASHBOARD", DEFAULT_DASHBOARD)


def dashboard_link(client: Client) -> str | None:
    """The dashboard's address as a user can open it; None for a LocalCluster started here
    without one. Dask builds the link from the scheduler's host, which a threaded
    LocalCluster's inproc:// address names after the machine's network address although the
    dashboard listens where ``DASK_SSL_DASHBOARD`` says (127.0.0.1 by default)."""
    if client in _OWNED and client not in _WITH_DASHBOARD:
        return None
    link = client.dashboard_link
    if not client.scheduler.address.startswith("inproc://"):
        return link
    host = _dashboard_address().rpartition(":")[0]
    if host in ("", "0.0.0.0", "::"):
        return link
    url = urlsplit(link)
    return url._replace(netloc=f"{host}:{url.port}").geturl()


def _has_processes(client: Client) -> bool:
    """Whether a LocalCluster's workers are processes (their addresses are sockets)."""
    return not all(a.startswith("inproc://") for a in live_workers(client))


def get_client(client: Client | None = None, *, scheduler: str | None = None,
               n_workers: int | None = None, processes: bool = False,
               dashboard: bool | None = None, security=None) -> Client:
    """Return the client to run on.

    Order: an explicit ``client``; a ``scheduler`` address to connect to; the current default
    client; otherwise a LocalCluster started once per process (``n_workers`` workers with one
    thread each, :func:`default_workers` by default) and closed at exit, listening on
    127.0.0.1 only. It has a dashboard if ``dashboard`` (default: when ``DASK_SSL_DASHBOARD``
    is set), at ``DASK_SSL_DASHBOARD`` or ``DEFAULT_DASHBOARD``. A cluster reached by address
    or started here gets the :class:`WarmWorker` plugin.

    The LocalCluster's workers are threads of this process unless ``processes``: they start
    at once with this process's imports and compiled kernels, and a round trip crosses no
    socket and copies nothing (KDD99 10% TSVM: cluster start 1.6 -> 0.05 s, fit 4.9 -> 2.4 s;
    DA fit 21 -> 12 s), while the kernels release the GIL so the threads compute in parallel.
    Worker processes (``processes=True``) each get a nanny that restarts them and their own
    memory limit, at the cost of that start-up and a copy per transfer.
    """
    if client is not None:
        return client
    if scheduler is not None:
        remote = Client(scheduler, security=security)
        remote.register_plugin(WarmWorker())
        return remote
    if dashboard is None:
        dashboard = "DASK_SSL_DASHBOARD" in os.environ
    if n_workers is None:
        try:
            from distributed import default_client

            return default_client()
        except ValueError:
            pass
    for owned in _OWNED:
        if ((n_workers is None or len(live_workers(owned)) == n_workers)
                and _has_processes(owned) == processes):
            return owned
    cluster = LocalCluster(n_workers=n_workers or default_workers(), threads_per_worker=1,
                           # threads talk in-process (inproc://): no socket to bind
                           processes=processes, host="127.0.0.1" if processes else None,
                           # Threads of one process: each worker's memory monitor reads the
                           # whole process's RSS, so each is given the whole machine's limit.
                           memory_limit="auto" if processes else MEMORY_LIMIT,
                           # The scheduler's HTTP server (health, metrics; the dashboard when
                           # asked for) starts either way: bound here, not to every interface.
                           dashboard_address=_dashboard_address() if dashboard else DEFAULT_DASHBOARD,
                           scheduler_kwargs={"dashboard": dashboard},
                           worker_class=Nanny if processes else _ThreadWorker,
                           silence_logs=logging.ERROR)
    # Workers on this machine are reachable: solver round trips skip the scheduler hop
    # (RCV1-like TSVM, 200 k rows: 29.8 -> 27.2 s, driver CPU 5.7 -> 4.3 s).
    owned = Client(cluster, set_as_default=False, direct_to_workers=True)
    if processes:
        # registered with the scheduler: workers that replace lost ones start warm too.
        # (Worker threads share this process's imports; a warm-up thread there would only
        # take the GIL from the run's first tasks.)
        owned.register_plugin(WarmWorker())
    _OWNED.append(owned)
    if dashboard:
        _WITH_DASHBOARD.append(owned)
    log.info("started a LocalCluster%s", f", dashboard at {dashboard_link(owned)}"
             if dashboard else "")
    return owned
