"""The driver's BLAS held to one thread while a solver runs (see ``models.base``)."""

from __future__ import annotations

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
