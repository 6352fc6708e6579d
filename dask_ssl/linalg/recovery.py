"""Lost workers: what they surface as in the driver, and a whole-solve retry for solvers
without stage snapshots.

The S3VMs' outer loops restore their last stage (:class:`dask_ssl.loop.StageLoop`). The graph
solves (graph transduction, the primal LapRLS/LapSVM) hold their whole state on the workers
(graph blocks, factorizations, kernel rows) and have no cheaper point to go back to: a lost
worker restarts the solve from its inputs. Their input blocks are Dask futures, which Dask
recomputes or re-places, and every step is deterministic given them, so the repeated solve
reaches the result of an uninterrupted one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging

from distributed.scheduler import KilledWorker

from .workerstate import StateLost

log = logging.getLogger(__name__)

#: What a lost worker can surface as in the driver: our own check, Dask's verdict on a task,
#: a cancelled future (Dask's ``FutureCancelledError`` from a result, ``FuturesCancelledError``
#: from a wait, e.g. on data scattered to the lost worker: both ``concurrent.futures``'
#: ``CancelledError``), or a connection closed mid-transfer (CommClosedError is an OSError).
RECOVERABLE = (StateLost, KilledWorker, concurrent.futures.CancelledError,
               asyncio.CancelledError, OSError)


def solve_with_restarts(solve, *, what: str, max_restarts: int = 5):
    """``(solve(), restarts)``: call ``solve()`` again from the start each time a worker is
    lost under it, at most ``max_restarts`` times (then the last error is raised)."""
    restarts = 0
    while True:
        try:
            return solve(), restarts
        except RECOVERABLE as exc:
            restarts += 1
            if restarts > max_restarts:
                raise
            log.warning("%s: lost a worker (%s: %s); solving again from the inputs (%d/%d)",
                        what, type(exc).__name__, exc, restarts, max_restarts)
