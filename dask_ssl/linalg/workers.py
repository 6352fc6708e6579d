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
