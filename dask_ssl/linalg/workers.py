"""The workers a cluster has now, asked of the scheduler itself."""

from __future__ import annotations


def live_workers(client) -> dict:
    """Address -> scheduler's record of every worker it knows at this moment.

    Not ``client.scheduler_info()``: that returns the client's cached identity, which the
    client's own periodic refresh (every 2 s) overwrites with a copy that lists no workers (it
    asks for ``n_workers=0``). Read just after such a refresh, every worker looked gone: a
    804 k-row RCV1-like LinearLapRLS fit gave up its solve with both workers alive.
    """
    return client.sync(client.scheduler.identity, n_workers=-1)["workers"]


def _stuck_among(keys, dask_scheduler=None) -> list:
    """The tasks that can never run among ``keys`` and everything they are computed from:
    held as ``no-worker`` and allowed only on workers the scheduler no longer has. (A task
    that another worker may run is ``no-worker`` only while no worker is running, and runs
    when one is.)"""
    seen, stuck = set(), []
    todo = [dask_scheduler.tasks.get(k) for k in keys]
    while todo:
        ts = todo.pop()
        if ts is None or ts.key in seen:
            continue
        seen.add(ts.key)
        if (ts.state == "no-worker" and ts.worker_restrictions and not ts.loose_restrictions
                and not any(w in dask_scheduler.workers for w in ts.worker_restrictions)):
            stuck.append(str(ts.key))
        todo.extend(ts.dependencies)
    return stuck


def stuck_tasks(client, futures) -> list:
    """Keys of the tasks that ``futures`` wait on and no live worker may ever run: a result
    lost with its worker is recomputed from its lineage, and a lineage task pinned to that
    worker stays unrunnable, so a plain wait on it never returns."""
    return client.run_on_scheduler(_stuck_among, [f.key for f in futures])
