"""Loading numba's cached compilations of dask-ssl's kernels ahead of their first call.

numba loads a ``cache=True`` kernel on its first call: tens of ms each, and the first load in
a process also sets numba's compiler up (0.2-0.7 s). A fresh worker process does it when it
starts (:class:`dask_ssl.cluster.WarmWorker`); ``dask-ssl fit`` does it in a thread while the
rest of its imports run (:func:`load_in_background`). This module imports no Dask, so the
command can start that thread before it imports ``distributed``.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading

log = logging.getLogger(__name__)


def load_cached_kernels(module) -> int:
    """Load every numba kernel of ``module`` that has a cached compilation on disk, for every
    signature cached (none is compiled anew); return how many were loaded.

    The signatures come from the cache's own index (a numba internal, hence the broad guard: a
    numba without it leaves the kernels to load on first call, as before).
    """
    import numba.core.registry

    loaded = 0
    for fn in list(vars(module).values()):
        if not isinstance(fn, numba.core.registry.CPUDispatcher):
            continue
        try:
            index = fn._cache._cache_file._load_index()
            magic = fn.targetctx.codegen().magic_tuple()
            for sig, key_magic, _ in index:
                if key_magic == magic:
                    fn.compile(sig)
                    loaded += 1
        except Exception as exc:  # a warm-up must never break a worker
            log.debug("could not preload %s: %r", fn, exc)
    return loaded


def load_imported_kernels() -> int:
    """Load the cached kernels of every dask-ssl module imported so far; return how many."""
    return sum(load_cached_kernels(module) for name, module in list(sys.modules.items())
               if name.startswith("dask_ssl.") and module is not None)


def load_in_background(modules) -> threading.Thread:
    """Import ``modules`` (names) here, then load their cached kernels in that order in a
    daemon thread. (The imports stay in the calling thread: a thread importing beside
    another can meet a module half done and fail with "cannot import name".)"""
    loaded = [importlib.import_module(name) for name in modules]
    thread = threading.Thread(target=lambda: [load_cached_kernels(m) for m in loaded],
                              name="dask-ssl-kernels", daemon=True)
    thread.start()
    return thread
