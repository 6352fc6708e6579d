"""The workers a cluster has now, asked of the scheduler itself."""

from __future__ import annotations

import time


def live_workers(client) -> dict:
    """Address -> scheduler's record of every worker it knows at this moment.

    Not ``client.scheduler_info()``: that returns the client's cached identity, which the
    client's own periodic refresh (every 2 s) overwrites with a copy that lists no workers (it
    asks for ``n_workers=0``). Read just after such a refresh, every worker looked gone: a
    804 k-row RCV1-like LinearLapRLS fit gave up its solve with both workers alive.
    """
    return client.sync(client.scheduler.identity, n_workers=-1)["workers"]


def _unblock(keys, dask_scheduler=None) -> list:
    """The tasks that can never run among ``keys`` and everything they are computed from:
    held as ``no-worker`` and allowed only on workers the scheduler no longer has.

    A task that another worker may run (loose restrictions) is held ``no-worker`` only while
    no worker is running, but Dask tries it again only on a worker its restrictions name, so
    once those are gone it would wait forever beside running workers (seen when the one
    running worker died while the others were still starting). Such tasks are scheduled
    again here, as their restrictions allow."""
    seen, stuck, held = set(), [], {}
    todo = [dask_scheduler.tasks.get(k) for k in keys]
    while todo:
        ts = todo.pop()
        if ts is None or ts.key in seen:
            continue
        seen.add(ts.key)
        if ts.state == "no-worker" and ts.worker_restrictions:
            if ts.loose_restrictions:
                held[ts.key] = "processing"
            elif not any(w in dask_scheduler.workers for w in ts.worker_restrictions):
                stuck.append(str(ts.key))
        todo.extend(ts.dependencies)
    if held and dask_scheduler.running:
        dask_scheduler.transitions(held, stimulus_id=f"dask-ssl-unblock-{time.time()}")
    return stuck


def unblock_lineage(client, futures) -> list:
    """Place again the lineage tasks of ``futures`` that the scheduler holds back though a
    running worker may run them, and return the keys of those no live worker may ever run: a
    result lost with its worker is recomputed from its lineage, and a lineage task pinned to
    that worker stays unrunnable, so a plain wait on it never returns (:func:`_unblock`)."""
    return client.run_on_scheduler(_unblock, [f.key for f in futures])
