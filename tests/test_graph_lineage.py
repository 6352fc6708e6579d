"""A graph outlives the worker that built a block of it: Dask recomputes the lost blocks from
their lineage (the kNN search, the directed edges), on the workers still there, and every
product then sees the same graph. A lineage task allowed only on the dead worker could never
run again, and a solve waiting on it waited forever."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from dask_ssl.data.generators import two_moons
from dask_ssl.graph import knn_graph

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


def test_graph_blocks_lost_with_their_worker_are_made_again(real_cluster):
    from distributed import Client

    cluster = real_cluster(n_workers=3)
    with Client(cluster.address, set_as_default=False) as client:
        data = two_moons(n=600, client=client, n_blocks=6)
        # the exact search (small data) and the indexes: each its own lineage
        graphs = [knn_graph(data, 8, random_state=0, exact_below=below) for below in (5000, 0)]
        before = [g.to_scipy().toarray() for g in graphs]
        # a graph block lives beside its data block: one kill takes a block of each graph
        assert graphs[0].W.owners()[0] == graphs[1].W.owners()[0]
        _kill(cluster, client, graphs[0].W.owners()[0])
        after = _within(lambda: [g.to_scipy().toarray() for g in graphs
                                 if g.W.owners(refresh=True)], BOUND)
    for a, b in zip(after, before):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)


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


def test_blocks_lost_with_every_running_worker_are_made_on_a_new_one(dask_processes):
    """The only worker at work dies and a new one comes: Dask holds the blocks' lineage as
    ``no-worker`` while no worker runs, then tries it only on the workers its restrictions
    name, all gone, though any worker may run it. The wait for the blocks schedules it again
    on the new worker instead of waiting forever."""
    from distributed import Client

    from dask_ssl.linalg.workers import live_workers

    procs = dask_processes(1)
    with Client(procs.address, set_as_default=False) as client:
        data = two_moons(n=200, client=client, n_blocks=2)
        before = np.vstack(client.gather(data.blocks))
        _kill(procs, client, data.owners()[0])
        procs.ensure_workers(1)
        owners = _within(lambda: data.owners(refresh=True), BOUND)
        assert set(owners) == set(live_workers(client))
        np.testing.assert_array_equal(np.vstack(client.gather(data.blocks)), before)
