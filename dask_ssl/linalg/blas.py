"""The driver's BLAS held to one thread where threads lose (see ``models.base``).

A threaded BLAS on the driver competes with the workers of a LocalCluster for the same cores,
and its threads spin between calls; on matrices of a few hundred to a thousand rows it gains
nothing to pay for that. Each caller states the size up to which its dense work runs on one
thread (:func:`blas_for_rows`), measured where it was set.
"""

from __future__ import annotations

from contextlib import nullcontext
from functools import lru_cache

from threadpoolctl import ThreadpoolController


@lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    # Made once, at the first solve, when NumPy's and SciPy's BLAS are loaded: a controller
    # scans every shared library of the process (0.05-0.1 s, 200 of them after the imports),
    # which ``threadpool_limits`` did again on each call, inside each fit.
    return ThreadpoolController()


def single_blas_thread():
    """A context manager that limits the BLAS libraries loaded so far to one thread."""
    return _controller().limit(limits=1, user_api="blas")


def blas_for_rows(n: int, single_up_to: int):
    """:func:`single_blas_thread` for dense work on ``n <= single_up_to`` rows, else the
    BLAS's own threads (a context manager either way)."""
    return single_blas_thread() if n <= single_up_to else nullcontext()
