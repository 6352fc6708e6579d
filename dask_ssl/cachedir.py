"""Where dask-ssl keeps what it caches on disk (parsed blocks, compiled kernels).

Light on purpose: :mod:`dask_ssl` reads it at import, before NumPy or numba.
"""

from __future__ import annotations

import os
from pathlib import Path

_OFF = ("", "off", "0", "false", "no")


def cache_dir() -> str | None:
    """The cache directory this process would use (absolute), or None when turned off:
    ``$DASK_SSL_CACHE`` when set (``off`` or empty turns it off), else
    ``$XDG_CACHE_HOME/dask-ssl``, else ``~/.cache/dask-ssl``."""
    env = os.environ.get("DASK_SSL_CACHE")
    if env is not None:
        return None if env.strip().lower() in _OFF else str(Path(env).expanduser().resolve())
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return str(Path(base).expanduser().resolve() / "dask-ssl")


def kernel_cache_dir() -> str | None:
    """Where compiled numba kernels go: ``$DASK_SSL_KERNEL_CACHE`` when set (``off`` leaves
    them to numba's own places: beside the source, else numba's per-user cache), else
    ``kernels/`` under :func:`cache_dir`."""
    env = os.environ.get("DASK_SSL_KERNEL_CACHE")
    if env is not None:
        return None if env.strip().lower() in _OFF else str(Path(env).expanduser().resolve())
    root = cache_dir()
    return None if root is None else os.path.join(root, "kernels")
