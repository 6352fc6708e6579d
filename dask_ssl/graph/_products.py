"""numba kernel of a Laplacian row block's product, ``out = d * x - A [x; halo]``.

SciPy's CSR-times-dense product walks the block once per call but needs ``[x; halo]`` stacked
into one array first (a copy of every vector the product reads) and a second pass for
``d * x``. Here each row is finished in one go, reading the block's own rows from ``x`` and
the rest from ``halo`` directly; with many right-hand sides (an ``n x c`` block) each non-zero
reads one contiguous row of ``c`` values, so the product runs near memory speed.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, fastmath=True)
def laplacian_rows(indptr, indices, data, d, x, halo, out):
    """``out[i] = d[i] x[i] - sum_p data[p] v[indices[p]]`` with ``v = [x; halo]``.

    Parameters
    ----------
    indptr, indices, data : CSR arrays of the block's ``A`` (``n_b x (n_b + n_halo)``)
    d : ndarray of shape (n_b,)
    x : ndarray of shape (n_b, c), C-contiguous
    halo : ndarray of shape (n_halo, c), C-contiguous
    out : ndarray of shape (n_b, c), written
    """
    n_b, c = x.shape
    for i in range(n_b):
        di = d[i]
        for t in range(c):
            out[i, t] = di * x[i, t]
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            a = data[p]
            if j < n_b:
                for t in range(c):
                    out[i, t] -= a * x[j, t]
            else:
                j -= n_b
                for t in range(c):
                    out[i, t] -= a * halo[j, t]


def apply_rows(A, d, x, pieces):
    """``d * x - A [x; pieces...]`` for a CSR block ``A`` (float64, int32 or int64 indices)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    c = x.shape[1]
    if pieces:
        halo = np.ascontiguousarray(pieces[0] if len(pieces) == 1 else np.vstack(pieces),
                                    dtype=np.float64)
    else:
        halo = np.empty((0, c))
    out = np.empty_like(x)
    laplacian_rows(A.indptr, A.indices, A.data, np.asarray(d, dtype=np.float64), x, halo, out)
    return out
