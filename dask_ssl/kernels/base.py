"""Base kernels the way scikit-learn takes them: ``kernel`` by name or callable, ``kernel_params``.

The names are those of :func:`sklearn.metrics.pairwise.pairwise_kernels` (``"rbf"``,
``"linear"``, ``"poly"``, ...), each with its own parameters (the RBF width is ``gamma`` there,
as in scikit-learn; it lives in ``kernel_params`` so that it never meets the package's
regularizer names ``gamma_A``, ``gamma_I``). A callable takes two 2-D arrays and returns their
Gram matrix, as :class:`sklearn.svm.SVC` expects. Every estimator checks its kernel with
:func:`check_kernel` before any work and evaluates it with :func:`kernel_matrix`, which refuses
a non-finite result.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import KERNEL_PARAMS, pairwise_kernels


def check_kernel(kernel, kernel_params=None) -> None:
    """Raise ``ValueError`` for an unknown kernel name or parameters it does not take."""
    if kernel_params is not None and not isinstance(kernel_params, dict):
        raise ValueError(f"kernel_params must be a dict or None, got {type(kernel_params).__name__}")
    if callable(kernel):
        return
    if not isinstance(kernel, str) or kernel not in KERNEL_PARAMS or kernel == "precomputed":
        raise ValueError(f"unknown kernel {kernel!r}; use a callable or one of "
                         f"{sorted(k for k in KERNEL_PARAMS if k != 'precomputed')}")
    unknown = set(kernel_params or ()) - set(KERNEL_PARAMS[kernel])
    if unknown:
        raise ValueError(f"kernel {kernel!r} takes no parameter(s) {sorted(unknown)}; "
                         f"it takes {sorted(KERNEL_PARAMS[kernel]) or 'none'}")


def kernel_matrix(X, Y=None, *, kernel="rbf", kernel_params=None) -> np.ndarray:
    """``K(X, Y)`` as a dense float64 array; ``Y`` defaults to ``X``.

    A callable gets the two row sets whole (one call, not one per pair of rows). Raises
    ``ValueError`` when the result has the wrong shape or a non-finite entry.
    """
    Yr = X if Y is None else Y
    if callable(kernel):
        K = kernel(X, Yr, **(kernel_params or {}))
        K = K.toarray() if sp.issparse(K) else np.asarray(K, dtype=np.float64)
    else:
        K = pairwise_kernels(X, Yr, metric=kernel, **(kernel_params or {}))
        K = np.asarray(K, dtype=np.float64)
    expected = (X.shape[0], Yr.shape[0])
    if K.shape != expected:
        raise ValueError(f"kernel {_name(kernel)} returned shape {K.shape}, expected {expected}")
    if not np.all(np.isfinite(K)):
        i, j = np.argwhere(~np.isfinite(K))[0]
        raise ValueError(f"kernel {_name(kernel)} returned a non-finite value ({K[i, j]}) "
                         f"for rows {int(i)} and {int(j)}")
    return K


def _name(kernel) -> str:
    return repr(kernel) if isinstance(kernel, str) else getattr(kernel, "__name__", repr(kernel))
