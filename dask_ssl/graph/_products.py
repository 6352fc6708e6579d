"""numba kernels of a Laplacian row block's product, ``out = d * x - A [x; halo]``.

SciPy's CSR-times-dense product needs ``[x; halo]`` stacked into one array first and a second
pass for ``d * x``. Here each row is finished in one go, with the index arrays passed as
unsigned views (:func:`dask_ssl.linalg.kernels.unsigned_index`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..linalg.kernels import unsigned_index


@njit(cache=True, nogil=True, fastmath=True)
def laplacian_column(indptr, indices, data, d, v, out):
    """One column: ``out[i] = d[i] v[i] - sum_p data[p] v[indices[p]]``, ``v = [x; halo]``.

    (Stacking one column costs a copy of ``n_b + n_halo`` values, less than the branch per
    non-zero that reading ``x`` and ``halo`` apart would take.)
    """
    for i in range(out.size):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p] * v[indices[p]]
        out[i] = d[i] * v[i] - s


@njit(cache=True, nogil=True, fastmath=True)
def _laplacian_row(i, indptr, indices, data, d, x, halo, acc):
    """Row ``i`` of ``d x - A [x; halo]`` into ``acc`` (length c).

    A private accumulator: writing through the output array would force a store per term, as
    numba cannot tell that it does not overlap ``x``."""
    n_b, c = x.shape
    di = d[i]
    for t in range(c):
        acc[t] = di * x[i, t]
    for p in range(indptr[i], indptr[i + 1]):
        j = indices[p]
        w = data[p]
        if j < n_b:
            for t in range(c):
                acc[t] -= w * x[j, t]
        else:
            k = j - n_b
            for t in range(c):
                acc[t] -= w * halo[k, t]


@njit(cache=True, nogil=True, fastmath=True)
def laplacian_rows(indptr, indices, data, d, x, halo, out):
    """Several columns: ``out[i] = d[i] x[i] - sum_p data[p] v[indices[p]]``, ``v = [x; halo]``.

    Parameters
    ----------
    indptr, indices, data : CSR arrays of the block's ``A`` (``n_b x (n_b + n_halo)``),
        index arrays as unsigned views
    d : ndarray of shape (n_b,)
    x : ndarray of shape (n_b, c), C-contiguous
    halo : ndarray of shape (n_halo, c), C-contiguous
    out : ndarray of shape (n_b, c), written
    """
    n_b, c = x.shape
    acc = np.empty(c)
    for i in range(n_b):
        _laplacian_row(i, indptr, indices, data, d, x, halo, acc)
        o = out[i]
        for t in range(c):
            o[t] = acc[t]


def _stack(pieces, c):
    if not pieces:
        return np.empty((0, c))
    return np.ascontiguousarray(pieces[0] if len(pieces) == 1 else np.vstack(pieces),
                                dtype=np.float64)


def apply_rows(A, d, x, pieces):
    """``d * x - A [x; pieces...]`` for a CSR block ``A`` (float64, int32 or int64 indices)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    c = x.shape[1]
    d = np.asarray(d, dtype=np.float64)
    out = np.empty_like(x)
    indptr, indices = unsigned_index(A.indptr), unsigned_index(A.indices)
    if c == 1:
        v = np.concatenate([x.ravel(), *[np.asarray(p, np.float64).ravel() for p in pieces]])
        laplacian_column(indptr, indices, A.data, d, v, out.ravel())
        return out
    laplacian_rows(indptr, indices, A.data, d, x, _stack(pieces, c), out)
    return out


def apply_finish(A, d, x, pieces, gamma, a, pv, r, q):
    """:func:`laplacian_finish` on a CSR block: fills ``q``, returns ``(pv.q, r.q, q.q)``."""
    sums = np.empty((3, x.shape[1]))
    laplacian_finish(unsigned_index(A.indptr), unsigned_index(A.indices), A.data,
                     np.asarray(d, dtype=np.float64), x, _stack(pieces, x.shape[1]), gamma,
                     a, pv, r, q, sums)
    return sums[0], sums[1], sums[2]


@njit(cache=True, nogil=True)
def cg_update(x, r, p, q, alpha, beta, active, rr):
    """The CG update of a block in one pass, ``rr`` = column sums of the new ``r * r``::

        x += alpha p;  r -= alpha q;  p = r + beta p where active, else 0

    Not fastmath: the driver runs this same kernel on the send rows and must get the workers'
    values bit for bit (no contraction into fused multiply-adds on one side only).
    """
    n, c = r.shape
    rr[:] = 0.0
    for i in range(n):
        for t in range(c):
            x[i, t] += alpha[t] * p[i, t]
            ri = r[i, t] - alpha[t] * q[i, t]
            r[i, t] = ri
            p[i, t] = ri + beta[t] * p[i, t] if active[t] else 0.0
            rr[t] += ri * ri


@njit(cache=True, nogil=True, fastmath=True)
def laplacian_finish(indptr, indices, data, d, x, halo, gamma, a, pv, r, q, sums):
    """``q = gamma (d x - A [x; halo]) + a pv`` (the last step of the CG product
    ``q = (gamma L^p + diag(a)) pv``: ``x = L^(p-1) pv``) and the column sums ``sums[0] = pv.q``,
    ``sums[1] = r.q``, ``sums[2] = q.q``, in one pass over the rows."""
    n_b, c = x.shape
    sums[:] = 0.0
    acc = np.empty(c)
    for i in range(n_b):
        _laplacian_row(i, indptr, indices, data, d, x, halo, acc)
        ai = a[i, 0]
        for t in range(c):
            qi = gamma * acc[t] + ai * pv[i, t]
            q[i, t] = qi
            sums[0, t] += pv[i, t] * qi
            sums[1, t] += r[i, t] * qi
            sums[2, t] += qi * qi
