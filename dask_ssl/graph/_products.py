"""numba kernels of a Laplacian row block's product, ``out = d * x - A [x; halo]``.

SciPy's CSR-times-dense product needs ``[x; halo]`` stacked into one array first and a second
pass for ``d * x``. Here each row is finished in one go, with the index arrays passed as
unsigned views (:func:`dask_ssl.linalg.kernels.unsigned_index`). The columns go through kernels
generated for them (:func:`column_kernels`), at most :data:`WIDTH` at a time.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys

import numpy as np
from numba import njit, typeof
from numba.core import config
from numba.core.compiler_lock import global_compiler_lock

from ..linalg.kernels import unsigned_index


#: Columns per generated kernel; more go through kernels for slices of this many. A pass over
#: a slice still brings the whole rows of ``[x; halo]`` into cache: on the KDD99 kNN graph
#: one pass of 16 columns ran 1.3x faster than two of 8, and four passes of 4 were 2.3x
#: slower. Beyond 16 the accumulators no longer fit the registers.
WIDTH = 16
#: fastmath without reassociation: with it, LLVM vectorized the loop over a row's non-zeros
#: with gathers instead of packing the columns.
_NO_REASSOC = {"contract", "nnan", "ninf", "nsz", "arcp"}

# Scalar accumulators per column ``t``: LLVM keeps them in registers, and its SLP vectorizer
# packs them into SIMD lanes. A loop over the columns sent every term through memory instead
# (1.2-2.5x slower). Two sets, ``a{t}`` for even and ``b{t}`` for odd non-zeros of a row, halve
# the chain of dependent multiply-adds that bounded 1-8 columns on the KDD99 kNN graph (1.1-1.25x).
_ROW = """
        di = d[i]
{init}
        p = indptr[i]
        end = indptr[i + 1]
        while p + 1 < end:
            j = indices[p]
            w = data[p]
            k = indices[p + 1]
            u = data[p + 1]
{update2}
            p += 2
        if p < end:
            j = indices[p]
            w = data[p]
{update1}
{total}
"""

#: The generated module's head (its text must be the same in every process: it keys the cache).
_HEADER = f"""from numba import njit

CACHE = True
_NO_REASSOC = set({sorted(_NO_REASSOC)!r})
"""

_ROWS = """

@njit(nogil=True, fastmath=_NO_REASSOC, cache=CACHE)
def rows(indptr, indices, data, d, v, out):
    for i in range(out.shape[0]):
{row}
{store}
"""

_FINISH = """

@njit(nogil=True, fastmath=_NO_REASSOC, cache=CACHE)
def finish(indptr, indices, data, d, v, gamma, a, pv, r, q, sums):
{zero}
    for i in range(q.shape[0]):
{row}
{finish}
{total}
"""


#: The generated kernels made so far in this process: {(start, stop): (rows, finish)}.
GENERATED: dict = {}


def _generated_namespace(start, stop, source: str) -> dict:
    """Run the generated ``source``: from a file in the kernel cache directory when there is
    one (so numba can cache what it compiles from it: a file, keyed with the text of this
    module), else in memory (compiled again in every process)."""
    from ..kernel_cache import kernel_dir

    root = kernel_dir()
    if root is not None:
        try:
            folder = os.path.join(root, "generated")
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, f"products_{start}_{stop}.py")
            if not os.path.exists(path) or open(path).read() != source:
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "w") as f:
                    f.write(source)
                os.replace(tmp, path)  # concurrent writers write the same text
            name = f"dask_ssl_generated_products_{start}_{stop}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            # registered: numba finds a cached kernel's globals by its module's name
            sys.modules[name] = module
            spec.loader.exec_module(module)
            return vars(module)
        except OSError:
            pass
    namespace = {}
    exec(source.replace("CACHE = True", "CACHE = False", 1), namespace)
    return namespace


@functools.lru_cache(maxsize=None)
def column_kernels(start, stop):
    """The kernels ``rows`` (:func:`apply_rows`) and ``finish`` (:func:`apply_finish`) for
    the columns ``start:stop``, generated with two accumulators per column.

    The columns are constants of the code: with a column offset passed in, numba's index
    arithmetic kept LLVM from packing the loads of a row (4-5x slower). The code is written
    to a file in the kernel cache directory, so that its compilations are cached like the
    other kernels' (2-3 s of CPU each for ``finish``, which a graph fit needs 2-4 of).
    """
    cols = range(start, stop)
    row = _ROW.format(
        init="\n".join(f"        a{t} = di * v[i, {t}]\n        b{t} = 0.0" for t in cols),
        update2="\n".join(f"            a{t} -= w * v[j, {t}]\n            b{t} -= u * v[k, {t}]"
                          for t in cols),
        update1="\n".join(f"            a{t} -= w * v[j, {t}]" for t in cols),
        total="\n".join(f"        a{t} += b{t}" for t in cols))
    finish = "\n".join(
        f"        q{t} = gamma[{t}] * a{t} + a[i, {t}] * pv[i, {t}]\n"
        f"        q[i, {t}] = q{t}\n"
        f"        pq{t} += pv[i, {t}] * q{t}\n"
        f"        rq{t} += r[i, {t}] * q{t}\n"
        f"        qq{t} += q{t} * q{t}" for t in cols)
    zero = "\n".join(f"    pq{t} = rq{t} = qq{t} = 0.0" for t in cols)
    total = "\n".join(f"    sums[0, {t}] = pq{t}\n    sums[1, {t}] = rq{t}\n    sums[2, {t}] = qq{t}"
                       for t in cols)
    source = (_HEADER
              + _ROWS.format(row=row, store="\n".join(f"        out[i, {t}] = a{t}" for t in cols))
              + _FINISH.format(zero=zero, row=row, finish=finish, total=total))
    namespace = _generated_namespace(start, stop, source)
    GENERATED[start, stop] = namespace["rows"], namespace["finish"]
    return GENERATED[start, stop]


def compile_listed(qualname: str, signature) -> int:
    """Compile (or load) the generated kernel ``rows[START:STOP]`` or ``finish[START:STOP]``
    (as :func:`generated_kernels` names them) for ``signature``; return 1 if it was compiled,
    0 if loaded or ready. (:mod:`dask_ssl.kernel_cache` compiles them ahead this way.)"""
    name, _, cols = qualname.partition("[")
    start, stop = (int(c) for c in cols.rstrip("]").split(":"))
    kernel = dict(zip(("rows", "finish"), column_kernels(start, stop)))[name]
    misses = sum(kernel._cache_misses.values())
    _vectorized_compile(kernel, tuple(signature))
    return sum(kernel._cache_misses.values()) - misses


def generated_kernels() -> list:
    """(name, kernel) of the generated kernels made in this process or whose code is in the
    kernel cache directory (so that their cached signatures can be listed)."""
    from ..kernel_cache import kernel_dir

    root = kernel_dir()
    folder = os.path.join(root, "generated") if root else None
    if folder and os.path.isdir(folder):
        for file in os.listdir(folder):
            if file.startswith("products_") and file.endswith(".py"):
                start, stop = (int(c) for c in file[len("products_"):-3].split("_"))
                column_kernels(start, stop)
    return [(f"{k.py_func.__name__}[{start}:{stop}]", k)
            for (start, stop), pair in sorted(GENERATED.items()) for k in pair]


def _vectorized_compile(kernel, signature):
    """Compile ``kernel`` for ``signature`` with LLVM's SLP vectorizer.

    numba switches that vectorizer off for all code (it miscompiled some programs, numba
    PR 8852); these kernels need it to pack their accumulators (1.4-1.8x on 4-8 columns) and
    are checked against dense products in the tests. The compiler lock keeps the switch from
    reaching any other compilation.
    """
    if signature not in kernel.overloads:
        with global_compiler_lock:
            saved, config.SLP_VECTORIZE = config.SLP_VECTORIZE, 1
            try:
                kernel.compile(signature)
            finally:
                config.SLP_VECTORIZE = saved


def _vectorized_call(kernel, *args):
    """Call a generated kernel, compiled for these argument types with LLVM's SLP vectorizer
    (:func:`_vectorized_compile`)."""
    _vectorized_compile(kernel, tuple(typeof(a) for a in args))
    return kernel(*args)


def _slices(c):
    return [slice(s, min(s + WIDTH, c)) for s in range(0, c, WIDTH)]


def _has_room(A, x):
    buffer = x if x.base is None else x.base
    return (isinstance(buffer, np.ndarray) and buffer.dtype == np.float64
            and buffer.shape == (A.shape[1], x.shape[1]) and buffer.flags.c_contiguous
            and buffer.ctypes.data == x.ctypes.data)


def with_room(A, x):
    """``x`` (``n_b x c``) as the top rows of an ``A.shape[1] x c`` buffer: ``x`` itself if it
    is one already (a result of :func:`apply_rows` or of this function), else a copy.

    The kernels read ``[x; halo]`` as one array, by row index alone (a branch per non-zero
    between ``x`` and the halo costs more). A product from such an ``x`` writes the halo into
    the buffer's bottom rows, which are scratch, instead of stacking ``[x; halo]`` anew: that
    copy of the block cost 10-25% of a product of 8-16 columns on the KDD99 kNN graph.
    """
    x = np.asarray(x, dtype=np.float64)
    if _has_room(A, x):
        return x
    v = np.empty((A.shape[1], x.shape[1]))
    v[:x.shape[0]] = x
    return v[:x.shape[0]]


def _block_arrays(A, d, x, pieces):
    """The kernels' arguments, with ``v = [x; pieces...]`` filled in ``x``'s buffer."""
    x = with_room(A, x)
    v = x if x.base is None else x.base
    halo = [np.asarray(p, np.float64).reshape(-1, x.shape[1]) for p in pieces]
    n_halo = sum(len(h) for h in halo)
    if n_halo != A.shape[1] - x.shape[0]:
        raise ValueError(f"the halo pieces hold {n_halo} rows, but the block's matrix has "
                         f"{A.shape[1] - x.shape[0]} halo columns")
    if halo:
        np.concatenate(halo, out=v[x.shape[0]:])
    return (unsigned_index(A.indptr), unsigned_index(A.indices), A.data,
            np.asarray(d, dtype=np.float64), v)


def apply_rows(A, d, x, pieces, out=None):
    """``d * x - A [x; pieces...]`` for a CSR block ``A`` (float64, int32 or int64 indices),
    returned as the top rows of a buffer with room for the halo (:func:`with_room`).

    ``out``, a previous result to overwrite, saves allocating the result anew (fresh pages
    cost 15-20% of a 16-column product); it is not used if it overlaps ``x``'s buffer.
    """
    indptr, indices, data, d, v = _block_arrays(A, d, x, pieces)
    if (out is None or out.shape != (len(d), v.shape[1]) or not _has_room(A, out)
            or np.may_share_memory(out, v)):
        out = np.empty_like(v)[:len(d)]
    for cols in _slices(v.shape[1]):
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
    fills ``q`` and returns the column sums ``(pv.q, r.q, q.q)``. ``gamma`` (a float or one per
    column) and ``a`` (``n_b x 1`` or one column per column) are the same for every column or
    one per column (a grid of weights and folds solved together)."""
    indptr, indices, data, d, v = _block_arrays(A, d, x, pieces)
    c = v.shape[1]
    gamma = np.ascontiguousarray(np.broadcast_to(np.asarray(gamma, np.float64), (c,)))
    a = np.broadcast_to(a, (a.shape[0], c))
    sums = np.empty((3, c))
    for cols in _slices(c):
        _, finish = column_kernels(cols.start, cols.stop)
        _vectorized_call(finish, indptr, indices, data, d, v, gamma, a, pv, r, q, sums)
    return sums[0], sums[1], sums[2]


@njit(cache=True, nogil=True)
def pcg_update(x, r, z, p, q, w, alpha, beta, active, rr, rz):
    """:func:`cg_update` of preconditioned CG (``z = M^-1 r``, ``w = M^-1 q``)::

        x += alpha p;  r -= alpha q;  z -= alpha w;  p = z + beta p where active, else 0

    with ``rr``, ``rz`` = column sums of the new ``r * r`` and ``r * z``. Not fastmath, for the
    same reason as :func:`cg_update`.
    """
    n, c = r.shape
    rr[:] = 0.0
    rz[:] = 0.0
    for i in range(n):
        for t in range(c):
            x[i, t] += alpha[t] * p[i, t]
            ri = r[i, t] - alpha[t] * q[i, t]
            zi = z[i, t] - alpha[t] * w[i, t]
            r[i, t] = ri
            z[i, t] = zi
            p[i, t] = zi + beta[t] * p[i, t] if active[t] else 0.0
            rr[t] += ri * ri
            rz[t] += ri * zi
