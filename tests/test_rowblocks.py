"""RowBlocks' bounded wait on real workers."""

import asyncio
import gc
import time
import weakref

import numpy as np

from dask_ssl.linalg import RowBlocks, rowblocks
from dask_ssl.linalg.workers import live_workers


def _slow(i, X):
    time.sleep(0.2)
    return X.shape[0]


def test_polling_wait_leaves_no_cycle_holding_the_blocks(client, monkeypatch):
    """A trip that outlasts POLL_SECONDS times out and polls; the timeouts must not leave a
    reference cycle that keeps the blocks (their data on the workers) alive after the caller
    dropped them, until a garbage collection happens to run (a nightly retrain in a long-lived
    process kept a finished day's data on the workers so)."""
    monkeypatch.setattr(rowblocks, "POLL_SECONDS", 0.02)
    blocks = RowBlocks.from_array(np.ones((40, 3)), client=client)
    gc.disable()
    try:
        assert sum(blocks.call(_slow)) == 40
        ref = weakref.ref(blocks)
        del blocks
        assert ref() is None
    finally:
        gc.enable()


def test_a_wait_longer_than_a_poll_runs_once(client, monkeypatch):
    """Each poll's timeout must not cancel the awaited transfer: cancelled and started again,
    a gather longer than POLL_SECONDS (2 GB of Nystrom features) never finished."""
    monkeypatch.setattr(rowblocks, "POLL_SECONDS", 0.02)
    blocks = RowBlocks.from_array(np.ones((40, 3)), client=client)
    starts = []

    async def transfer():
        starts.append(time.perf_counter())
        await asyncio.sleep(0.3)
        return "done"

    assert blocks._bounded(transfer) == "done"
    assert len(starts) == 1


def _scaled_rows(i, X, v):
    return X @ v


def test_bytes_moved_counts_arguments_per_worker_and_results(client):
    n_workers = len(client.nthreads())
    blocks = RowBlocks.from_array(np.ones((60, 5)), client=client, n_blocks=2 * n_workers)
    v = np.arange(5.0)
    parts = blocks.call(_scaled_rows, v)
    # v goes once to each worker holding blocks; every block's 15 outputs come back
    assert blocks.bytes_moved == n_workers * v.nbytes + 60 * 8
    assert np.concatenate(parts).sum() == 60 * v.sum()
    before = blocks.bytes_moved
    blocks.map(_scaled_rows, v)
    # as tasks, the argument goes with every block's task
    assert blocks.bytes_moved - before == blocks.n_blocks * v.nbytes + 60 * 8


def test_a_wait_does_not_take_the_clients_refresh_for_lost_workers(client, monkeypatch):
    """The client's periodic refresh caches an identity without workers; a poll that read that
    cache took every block's worker for gone and gave up a live solve (804 k-row RCV1-like)."""
    monkeypatch.setattr(rowblocks, "POLL_SECONDS", 0.01)
    blocks = RowBlocks.from_array(np.ones((40, 3)), client=client)
    blocks.owners()
    refreshing = [True]

    async def refresh():  # what the client's PeriodicCallback does, back to back
        while refreshing[0]:
            await client._update_scheduler_info()
            await asyncio.sleep(0)

    async def transfer():
        await asyncio.sleep(1.0)
        return "done"

    client.loop.add_callback(refresh)
    try:
        assert blocks._bounded(transfer) == "done"
    finally:
        refreshing[0] = False
    assert set(live_workers(client)) >= set(blocks.owners())


def test_counting_adds_the_round_trips_of_every_row_blocks_inside_it(client):
    """A counting block sees the trips of any RowBlocks made inside it (nested blocks each
    their own), not those made before or after, nor those of a thread running beside it."""
    import threading

    from dask_ssl.linalg.trips import counting

    a = RowBlocks.from_array(np.ones((40, 3)), client=client)
    b = RowBlocks.from_array(np.ones((30, 3)), client=client)
    a.call(_scaled_rows, np.ones(3))
    with counting() as outer:
        a.call(_scaled_rows, np.ones(3))
        with counting() as inner:
            b.map(_scaled_rows, np.ones(3))
            beside = threading.Thread(target=lambda: b.call(_scaled_rows, np.ones(3)))
            beside.start()
            beside.join()
        b.call(_scaled_rows, np.ones(3))
    a.call(_scaled_rows, np.ones(3))
    assert (inner.round_trips, outer.round_trips) == (1, 3)
    assert (a.round_trips, b.round_trips) == (3, 3)
