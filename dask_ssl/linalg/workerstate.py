"""Per-block state that stays in a worker process between round trips.

The data blocks themselves are Dask futures (Dask can recompute or re-scatter them); the small
mutable state a solver keeps beside each block (outputs, costs, temporary labels) lives here,
keyed by a run token and a block index. If a worker dies, its entries are gone: the next task
for that block raises :class:`StateLost` and the driver rebuilds the block's state from its last
stage checkpoint.
"""

from __future__ import annotations

import threading

_STORE: dict = {}
_LOCK = threading.Lock()


class StateLost(RuntimeError):
    """A block's worker-side state is not in this process (its worker was replaced)."""


def put(run: str, block: int, value) -> None:
    with _LOCK:
        _STORE[(run, block)] = value


def get(run: str, block: int):
    try:
        return _STORE[(run, block)]
    except KeyError:
        raise StateLost(f"state of block {block} for run {run} is not on this worker") from None


def drop(run: str) -> int:
    """Forget every block of ``run`` held in this process; return how many were dropped."""
    with _LOCK:
        keys = [k for k in _STORE if k[0] == run]
        for k in keys:
            del _STORE[k]
    return len(keys)
