"""Multi-view data sets stored as MATLAB ``.mat`` files (``X``: 1 x m cell of views, ``Y``)."""

from __future__ import annotations

import numpy as np
import scipy.io
import scipy.sparse as sp


def read_multiview(path):
    """Load the views and the classes of a multi-view ``.mat`` file, in memory.

    Parameters
    ----------
    path : str or path-like
        A MATLAB v5 file with ``X``, a 1 x m (or m x 1) cell array of per-view matrices with
        examples as rows, and ``Y``, class ids starting at 1.

    Returns
    -------
    views : list of (ndarray or scipy.sparse.csr_matrix)
        One float64 matrix per view, all with ``n`` rows; sparse views stay sparse (CSR).
    y : ndarray of int64, shape (n,)
        Class ids as stored.

    Raises
    ------
    ValueError
        If ``X`` or ``Y`` is missing, or the views and ``Y`` disagree on the number of rows.
    """
    try:
        mat = scipy.io.loadmat(path)
    except Exception as exc:  # noqa: BLE001
        # A malformed file fails anywhere in scipy's parser (MatReadError, IndexError, zlib,
        # ValueError, ...), and none of its messages names the file.
        raise ValueError(f"{path}: not a readable MATLAB v5 .mat file ({exc})") from None
    for key in ("X", "Y"):
        if key not in mat:
            found = sorted(k for k in mat if not k.startswith("__"))
            raise ValueError(f"{path}: no variable {key!r} (found {found})")
    if mat["X"].dtype != object:
        raise ValueError(f"{path}: X is a {mat['X'].dtype} matrix; expected a cell array of "
                         "views")
    views = [_view(path, k, v) for k, v in enumerate(mat["X"].ravel())]
    y = _matrix(path, "Y", mat["Y"]).ravel()
    if not (np.isfinite(y).all() and np.array_equal(y, np.round(y))):
        raise ValueError(f"{path}: Y holds non-integer class ids (entry "
                         f"{int(np.flatnonzero(~np.isfinite(y) | (y != np.round(y)))[0])})")
    y = y.astype(np.int64)
    for k, view in enumerate(views):
        if view.shape[0] != y.shape[0]:
            raise ValueError(f"{path}: view {k} has {view.shape[0]} rows but Y has {y.shape[0]} "
                             "entries (views must hold examples as rows)")
    return views, y


def _matrix(path, what: str, value) -> np.ndarray:
    """A numeric 2-D array as float64, else a ValueError naming the file and the variable."""
    if sp.issparse(value):
        return sp.csr_matrix(value, dtype=np.float64)
    value = np.asarray(value)
    if value.dtype.kind not in "biuf" or value.ndim != 2:
        raise ValueError(f"{path}: {what} is not a numeric matrix (dtype {value.dtype}, "
                         f"shape {value.shape})")
    return np.ascontiguousarray(value, dtype=np.float64)


def _view(path, k: int, value):
    return _matrix(path, f"view {k} of X", value)
