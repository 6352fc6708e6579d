"""numba kernels of a Laplacian row block's product, ``out = d * x - A [x; halo]``.

SciPy's CSR-times-dense product needs ``[x; halo]`` stacked into one array first and a second
pass for ``d * x``. Here each row is finished in one go, with the index arrays passed as
unsigned views (:func:`dask_ssl.linalg.kernels.unsigned_index`). Several columns go through
kernels generated for their number (:func:`column_kernels`), at most :data:`WIDTH` at a time.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit, typeof
from numba.core import config
from numba.core.compiler_lock import global_compiler_lock

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


#: Columns per generated kernel; more go through kernels for slices of this many. A pass over
#: a slice still brings the whole rows of ``[x; halo]`` into cache: on the KDD99 kNN graph
#: one pass of 16 columns ran 1.3x faster than two of 8, and four passes of 4 were 2.3x
#: slower. Beyond 16 the accumulators no longer fit the registers.
WIDTH = 16
#: fastmath without reassociation: with it, LLVM vectorized the loop over a row's non-zeros
#: with gathers instead of packing the columns.
_NO_REASSOC = {"contract", "nnan", "ninf", "nsz", "arcp"}

# One scalar accumulator per column ``t``: LLVM keeps them in registers, and its SLP
# vectorizer packs them into SIMD lanes. A loop over the columns sent every term through
# memory instead (1.2-2.5x slower).
_ROW = """
        di = d[i]
{init}
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            w = data[p]
{update}
"""

_ROWS = """
def rows(indptr, indices, data, d, v, out):
    for i in range(out.shape[0]):
{row}
{store}
"""

_FINISH = """
def finish(indptr, indices, data, d, v, gamma, a, pv, r, q, sums):
{zero}
    for i in range(q.shape[0]):
{row}
        ai = a[i, 0]
{finish}
{total}
"""


@functools.lru_cache(maxsize=None)
def column_kernels(start, stop):
    """The kernels ``rows`` (:func:`apply_rows`) and ``finish`` (:func:`apply_finish`) for
    the columns ``start:stop``, generated with one accumulator ``a{t}`` per column.

    The columns are constants of the code: with a column offset passed in, numba's index
    arithmetic kept LLVM from packing the loads of a row (4-5x slower).
    """
    cols = range(start, stop)
    row = _ROW.format(init="\n".join(f"        a{t} = di * v[i, {t}]" for t in cols),
                      update="\n".join(f"            a{t} -= w * v[j, {t}]" for t in cols))
    finish = "\n".join(
        f"        q{t} = gamma * a{t} + ai * pv[i, {t}]\n"
        f"        q[i, {t}] = q{t}\n"
        f"        pq{t} += pv[i, {t}] * q{t}\n"
        f"        rq{t} += r[i, {t}] * q{t}\n"
        f"        qq{t} += q{t} * q{t}" for t in cols)
    zero = "\n".join(f"    pq{t} = rq{t} = qq{t} = 0.0" for t in cols)
    total = "\n".join(f"    sums[0, {t}] = pq{t}\n    sums[1, {t}] = rq{t}\n    sums[2, {t}] = qq{t}"
                       for t in cols)
    namespace = {}
    exec(_ROWS.format(row=row, store="\n".join(f"        out[i, {t}] = a{t}" for t in cols)),
         namespace)
    exec(_FINISH.format(zero=zero, row=row, finish=finish, total=total), namespace)
    jit = njit(nogil=True, fastmath=_NO_REASSOC)
    return jit(namespace["rows"]), jit(namespace["finish"])


def _vectorized_call(kernel, *args):
    """Call a generated kernel, compiled for these argument types with LLVM's SLP vectorizer.

    numba switches that vectorizer off for all code (it miscompiled some programs, numba
    PR 8852); these kernels need it to pack their accumulators (1.4-1.8x on 4-8 columns) and
    are checked against dense products in the tests. The compiler lock keeps the switch from
    reaching any other compilation.
    """
    signature = tuple(typeof(a) for a in args)
    if signature not in kernel.overloads:
        with global_compiler_lock:
            saved, config.SLP_VECTORIZE = config.SLP_VECTORIZE, 1
            try:
                kernel.compile(signature)
            finally:
                config.SLP_VECTORIZE = saved
    return kernel(*args)


def _slices(c):
    return [slice(s, min(s + WIDTH, c)) for s in range(0, c, WIDTH)]


def _stacked(x, pieces):
    """``[x; pieces...]`` as one C-contiguous float64 array (the kernels read it by row index
    alone, without a branch per non-zero between ``x`` and the halo)."""
    return np.ascontiguousarray(np.vstack([x, *pieces]) if pieces else x, dtype=np.float64)


def _block_arrays(A, d, x, pieces):
    x = np.asarray(x, dtype=np.float64)
    c = x.shape[1]
    pieces = [np.asarray(p, np.float64).reshape(-1, c) for p in pieces]
    return (unsigned_index(A.indptr), unsigned_index(A.indices), A.data,
            np.asarray(d, dtype=np.float64), x, pieces)


def apply_rows(A, d, x, pieces):
    """``d * x - A [x; pieces...]`` for a CSR block ``A`` (float64, int32 or int64 indices)."""
    indptr, indices, data, d, x, pieces = _block_arrays(A, d, x, pieces)
    c = x.shape[1]
    out = np.empty((x.shape[0], c))
    v = _stacked(x, pieces)
    if c == 1:
        laplacian_column(indptr, indices, data, d, v.ravel(), out.ravel())
        return out
    for cols in _slices(c):
        rows, _ = column_kernels(cols.start, cols.stop)
        _vectorized_call(rows, indptr, indices, data, d, v, out)
    return out


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


def apply_finish(A, d, x, pieces, gamma, a, pv, r, q):
    """``q = gamma (d x - A v) + a pv`` with ``v = [x; pieces...]`` (the last step of the CG
    product ``q = (gamma L^p + diag(a)) pv``: ``x = L^(p-1) pv``), in one pass over the rows;
    fills ``q`` and returns the column sums ``(pv.q, r.q, q.q)``."""
    indptr, indices, data, d, x, pieces = _block_arrays(A, d, x, pieces)
    c = x.shape[1]
    sums = np.empty((3, c))
    v = _stacked(x, pieces)
    for cols in _slices(c):
        _, finish = column_kernels(cols.start, cols.stop)
        _vectorized_call(finish, indptr, indices, data, d, v, float(gamma), a, pv, r, q, sums)
    return sums[0], sums[1], sums[2]
