"""dask-ssl: semi-supervised classifiers from Sindhwani's and Rosenberg's theses, on Dask."""

__version__ = "0.1.0"

# numba caches this package's kernels in dask-ssl's own cache directory, keyed by their
# sources (see dask_ssl.kernel_cache); set before any kernel module is imported.
from .kernel_cache import install_locator as _install_locator

_install_locator()
del _install_locator
