"""Direct calls to the blocks a worker holds, without a scheduler hop per task.

A solver's round trip through the scheduler (submit, schedule, run, report, gather) costs
several batched-stream intervals, about 20 ms on a quiet laptop; a call on a Dask actor goes to
the worker (or through one scheduler proxy hop) and back, a few ms. One :class:`BlockRunner`
actor per worker runs a function on every block of the call that the worker holds, reading the
block from the worker's own memory. Actors die with their worker; the caller then recreates
them after the blocks are back (see :meth:`RowBlocks.call <.rowblocks.RowBlocks.call>`).

:func:`run_blocks` sends the call itself rather than through Dask's ``Actor`` proxy object,
which binds to whichever client is the process default when it is unpickled: with several
clients in one process (tests, a driver beside a notebook) that can be the wrong cluster.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from distributed import get_worker
from distributed.protocol import to_serialize

from .workerstate import StateLost


class BlockRunner:
    """Actor that applies ``fn(i, X_i, *extra_i, *args)`` to blocks held by its worker."""

    def __init__(self):
        self._pool = None

    def _block(self, worker, i, key):
        try:
            return worker.data[key]
        except KeyError:
            raise StateLost(f"block {i} is not in the memory of {worker.address}") from None

    def run(self, fn, items, args, combine=None):
        """``items``: ``(i, key, extra)`` per block; returns the results in the same order, or
        ``[combine(results)]`` (one value for the worker) when ``combine`` is given."""
        worker = get_worker()

        def one(item):
            i, key, extra = item
            return fn(i, self._block(worker, i, key), *extra, *args)

        threads = worker.state.nthreads
        if len(items) == 1 or threads == 1:
            results = [one(item) for item in items]
        else:
            # the kernels release the GIL, so a worker's threads share its blocks as tasks would
            if self._pool is None:
                self._pool = ThreadPoolExecutor(threads, thread_name_prefix="dask-ssl-block")
            results = list(self._pool.map(one, items))
        return results if combine is None else [combine(results)]


async def run_blocks(client, address: str, runner_key: str, fn, items, args, combine=None):
    """Call ``BlockRunner.run(fn, items, args, combine)`` on the actor ``runner_key`` at
    ``address``, directly or through the scheduler as the client is configured
    (``direct_to_workers``)."""
    msg = {"actor": runner_key, "function": "run",
           "args": [to_serialize(fn), to_serialize(items), to_serialize(args),
                    to_serialize(combine)], "kwargs": {}}
    if client.direct_to_workers:
        response = await client.rpc(address).actor_execute(**msg)
    else:
        response = await client.scheduler.proxy(worker=address, msg={"op": "actor_execute", **msg})
    if response["status"] != "OK":
        raise response["exception"]
    return response["result"]
