"""Round trips to the workers counted over a stretch of code, whichever row blocks make them.

Each :class:`~dask_ssl.linalg.RowBlocks` counts its own trips (``round_trips``); a fit makes
them on several (the input rows, the graph's re-blocked rows, the kernel rows), and a part of a
fit such as its selection on the labeled rows reaches them through many functions. A
:func:`counting` block adds up the trips of all of them made by the code inside it, and blocks
may nest (each counts what happens inside it). The count follows the calling context (a
:mod:`contextvars` variable): a thread or task running beside the block does not add to it.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager

_TALLIES: contextvars.ContextVar[tuple] = contextvars.ContextVar("round_trip_tallies",
                                                                 default=())


class Tally:
    """The round trips made inside one :func:`counting` block."""

    def __init__(self):
        self.round_trips = 0


@contextmanager
def counting():
    """Count the round trips of the code inside: ``with counting() as tally: ...``, then
    ``tally.round_trips``."""
    tally = Tally()
    token = _TALLIES.set(_TALLIES.get() + (tally,))
    try:
        yield tally
    finally:
        _TALLIES.reset(token)


def count_round_trip() -> None:
    """One round trip made (by :meth:`RowBlocks.map` or :meth:`RowBlocks.call`)."""
    for tally in _TALLIES.get():
        tally.round_trips += 1
