"""dask-ssl: semi-supervised classifiers from Sindhwani's and Rosenberg's theses, on Dask."""

__version__ = "0.1.0"

# numba caches this package's kernels in dask-ssl's own cache directory, keyed by their
# sources (see dask_ssl.kernel_cache); set before any kernel module is imported.
from .kernel_cache import install_locator as _install_locator

_install_locator()
del _install_locator

# The first import of an install (of a new version, on a new machine) compiles the kernels
# the fits call, in parallel, so that no fit waits for numba (see dask_ssl.compile_once).
from .compile_once import ensure_compiled as _ensure_compiled

_ensure_compiled()
del _ensure_compiled
