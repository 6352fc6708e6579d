"""numba kernels of a Laplacian row block's product, ``out = d * x - A [x; halo]``.

SciPy's CSR-times-dense product needs ``[x; halo]`` stacked into one array first and a second
pass for ``d * x``. Here each row is finished in one go, with the index arrays passed as
unsigned views (:func:`dask_ssl.linalg.kernels.unsigned_index`); several columns go through a
row kernel compiled for their number (:func:`row_kernel`).
"""

from __future__ import annotations

import functools

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


#: Column counts with a generated row kernel (one scalar accumulator per column).
MAX_UNROLLED = 8
#: fastmath without reassociation
_NO_REASSOC = {"contract", "nnan", "ninf", "nsz", "arcp"}

_ROW_SOURCE = """
def row(i, indptr, indices, data, d, v, acc):
    di = d[i]
{init}
    for p in range(indptr[i], indptr[i + 1]):
        j = indices[p]
        w = data[p]
{update}
{store}
"""


@functools.lru_cache(maxsize=None)
def row_kernel(c):
    """``acc = d[i] v[i] - sum_p data[p] v[indices[p]]`` for one row of ``v = [x; halo]``
    (``n x c``), compiled for ``c`` columns.

    Up to :data:`MAX_UNROLLED` columns the kernel is generated with one scalar accumulator per
    column, which LLVM keeps in registers and packs into SIMD lanes; a loop over the columns
    sent every term through memory (1.2-2.5x slower for c = 2-8 on 494 k-row graphs).
    Not reassociated: with reassociation LLVM vectorized the loop over a row's non-zeros with
    gathers instead.
    """
    if c > MAX_UNROLLED:
        return _row_loop
    src = _ROW_SOURCE.format(
        init="\n".join(f"    a{t} = di * v[i, {t}]" for t in range(c)),
        update="\n".join(f"        a{t} -= w * v[j, {t}]" for t in range(c)),
        store="\n".join(f"    acc[{t}] = a{t}" for t in range(c)))
    namespace = {}
    exec(src, namespace)
    return njit(nogil=True, fastmath=_NO_REASSOC)(namespace["row"])


@njit(cache=True, nogil=True, fastmath=True)
def _row_loop(i, indptr, indices, data, d, v, acc):
    """:func:`row_kernel` for many columns. A private accumulator: writing through the output
    array would force a store per term, as numba cannot tell that it does not overlap ``v``."""
    di = d[i]
    for t in range(acc.size):
        acc[t] = di * v[i, t]
    for p in range(indptr[i], indptr[i + 1]):
        j = indices[p]
        w = data[p]
        for t in range(acc.size):
            acc[t] -= w * v[j, t]


@njit(nogil=True)
def laplacian_rows(row, indptr, indices, data, d, v, out):
    """Several columns: ``out[i] = d[i] v[i] - sum_p data[p] v[indices[p]]``, ``v = [x; halo]``.

    Parameters
    ----------
    row : the :func:`row_kernel` for ``c`` columns
    indptr, indices, data : CSR arrays of the block's ``A`` (``n_b x (n_b + n_halo)``),
        index arrays as unsigned views
    d : ndarray of shape (n_b,)
    v : ndarray of shape (n_b + n_halo, c), C-contiguous
    out : ndarray of shape (n_b, c), written
    """
    n_b, c = out.shape
    acc = np.empty(c)
    for i in range(n_b):
        row(i, indptr, indices, data, d, v, acc)
        for t in range(c):
            out[i, t] = acc[t]


def _stacked(x, pieces):
    """``[x; pieces...]`` as one C-contiguous float64 array (the kernels read it by row index
    alone, without a branch per non-zero between ``x`` and the halo)."""
    return np.ascontiguousarray(np.vstack([x, *pieces]) if pieces else x, dtype=np.float64)


def apply_rows(A, d, x, pieces):
    """``d * x - A [x; pieces...]`` for a CSR block ``A`` (float64, int32 or int64 indices)."""
    x = np.asarray(x, dtype=np.float64)
    c = x.shape[1]
    d = np.asarray(d, dtype=np.float64)
    out = np.empty((x.shape[0], c))
    indptr, indices = unsigned_index(A.indptr), unsigned_index(A.indices)
    v = _stacked(x, [np.asarray(p, np.float64).reshape(-1, c) for p in pieces])
    if c == 1:
        laplacian_column(indptr, indices, A.data, d, v.ravel(), out.ravel())
    else:
        laplacian_rows(row_kernel(c), indptr, indices, A.data, d, v, out)
    return out


def apply_finish(A, d, x, pieces, gamma, a, pv, r, q):
    """:func:`laplacian_finish` on a CSR block: fills ``q``, returns ``(pv.q, r.q, q.q)``."""
    c = x.shape[1]
    sums = np.empty((3, c))
    laplacian_finish(row_kernel(c), unsigned_index(A.indptr), unsigned_index(A.indices),
                     A.data, np.asarray(d, dtype=np.float64), _stacked(x, pieces), gamma, a,
                     pv, r, q, sums)
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


@njit(nogil=True, fastmath=True)
def laplacian_finish(row, indptr, indices, data, d, v, gamma, a, pv, r, q, sums):
    """``q = gamma (d x - A v) + a pv`` with ``v = [x; halo]`` (the last step of the CG
    product ``q = (gamma L^p + diag(a)) pv``: ``x = L^(p-1) pv``) and the column sums
    ``sums[0] = pv.q``, ``sums[1] = r.q``, ``sums[2] = q.q``, in one pass over the rows.
    ``row``: the :func:`row_kernel` for ``c`` columns."""
    n_b, c = q.shape
    sums[:] = 0.0
    acc = np.empty(c)
    for i in range(n_b):
        row(i, indptr, indices, data, d, v, acc)
        ai = a[i, 0]
        for t in range(c):
            qi = gamma * acc[t] + ai * pv[i, t]
            q[i, t] = qi
            sums[0, t] += pv[i, t] * qi
            sums[1, t] += r[i, t] * qi
            sums[2, t] += qi * qi
