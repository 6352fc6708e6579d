"""Blocks lost with their worker: a lineage task allowed only on the dead worker can never run
again, and a solve waiting on it waited forever. The graph's own lineage now runs on any worker
(its recovery under kills: tests/test_fault_campaign.py); blocks pinned on purpose raise
StateLost."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from dask_ssl.data.generators import two_moons

pytestmark = pytest.mark.cluster

#: Seconds the recomputed blocks may take to come back (a hang before the fix).
BOUND = 60


def _within(fn, seconds):
    """``fn()``'s value, or an AssertionError when it has not returned in ``seconds``."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # re-raised in the test's thread
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"no answer {seconds} s after the worker was killed"
    if "error" in out:
        raise out["error"]
    return out["value"]


def _kill(cluster, client, address):
    """Kill the worker at ``address`` and return once the scheduler has removed it: before,
    a lookup still finds the blocks where they were."""
    from dask_ssl.linalg.workers import live_workers

    cluster.kill_worker_at(client, address)
    deadline = time.monotonic() + BOUND
    while address in live_workers(client) and time.monotonic() < deadline:
        time.sleep(0.1)


def test_blocks_pinned_to_a_lost_worker_raise_state_lost(real_cluster):
    """Rows moved to a worker on purpose (:func:`~dask_ssl.linalg.realign.take_rows` pins each
    new block to its worker) cannot be recomputed elsewhere once that worker dies: looking
    them up raises StateLost, which the solvers' restart from their inputs handles, instead of
    waiting forever."""
    from distributed import Client

    from dask_ssl.linalg.realign import take_rows
    from dask_ssl.linalg.workerstate import StateLost

    cluster = real_cluster(n_workers=3)
    with Client(cluster.address, set_as_default=False) as client:
        data = two_moons(n=600, client=client, n_blocks=6)
        moved = take_rows(data, [np.arange(i, 600, 6) for i in range(6)], data.owners())
        _kill(cluster, client, moved.owners()[0])
        with pytest.raises(StateLost, match="no live worker may run"):
            _within(lambda: moved.owners(refresh=True), BOUND)
