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
    mat = scipy.io.loadmat(path)
    for key in ("X", "Y"):
        if key not in mat:
            found = sorted(k for k in mat if not k.startswith("__"))
            raise ValueError(f"{path}: no variable {key!r} (found {found})")
    cells = mat["X"].ravel()
    views = [sp.csr_matrix(v, dtype=np.float64) if sp.issparse(v)
             else np.ascontiguousarray(v, dtype=np.float64) for v in cells]
    y = np.asarray(mat["Y"]).ravel().astype(np.int64)
    for k, view in enumerate(views):
        if view.shape[0] != y.shape[0]:
            raise ValueError(f"{path}: view {k} has {view.shape[0]} rows but Y has {y.shape[0]} "
                             "entries (views must hold examples as rows)")
    return views, y
