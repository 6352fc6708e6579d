"""What an estimator's selection on the labeled rows cost, beside the rest of its fit
(``selection_cost_``).

:func:`measured_fit` wraps an estimator's ``fit``; inside it, the code that scores the
candidates runs in a :func:`selecting` block, wherever in the fit that is. The fit then
records ``selection_cost_``: the seconds and round trips to the workers (:mod:`..linalg.trips`)
spent inside its selecting blocks, and those of the rest of the fit (``fit_seconds``,
``fit_round_trips``), which is the fit at the chosen setting: its graph, features and final
solve. A fit nested in another (the Nystrom path's linear fit, a prior's RLS) adds its
selection to every fit around it; a selecting block inside another counts once. Where nothing
was selected (the settings were given, or the labels too few to choose) it is None.
"""

from __future__ import annotations

import contextvars
import functools
import time
from contextlib import contextmanager

from ..linalg.trips import counting

_FITS: contextvars.ContextVar[tuple] = contextvars.ContextVar("measured_fits", default=())


class _Cost:
    def __init__(self):
        self.seconds, self.round_trips, self.depth, self.selected = 0.0, 0, 0, False


@contextmanager
def selecting():
    """Count the code inside as the selection of every fit around it."""
    fits = _FITS.get()
    # a block inside another selecting block of the same fit is already counted there
    outer = [cost for cost in fits if cost.depth == 0]
    for cost in fits:
        cost.depth += 1
    t0 = time.perf_counter()
    try:
        with counting() as tally:
            yield
    finally:
        for cost in fits:
            cost.depth -= 1
        for cost in outer:
            cost.seconds += time.perf_counter() - t0
            cost.round_trips += tally.round_trips
            cost.selected = True


def measured_fit(fit):
    """Wrap ``fit`` so that an estimator with a ``selection_`` records ``selection_cost_``:
    ``{"seconds", "round_trips", "fit_seconds", "fit_round_trips"}`` (module docstring)."""
    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        cost = _Cost()
        token = _FITS.set(_FITS.get() + (cost,))
        t0 = time.perf_counter()
        try:
            with counting() as tally:
                out = fit(self, *args, **kwargs)
        finally:
            _FITS.reset(token)
        if hasattr(self, "selection_"):
            self.selection_cost_ = None if not cost.selected else {
                "seconds": cost.seconds, "round_trips": cost.round_trips,
                "fit_seconds": time.perf_counter() - t0 - cost.seconds,
                "fit_round_trips": tally.round_trips - cost.round_trips}
        return out
    return wrapper
