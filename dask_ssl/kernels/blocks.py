"""The kernel matrix on the workers, each entry once: row ``i`` keeps the band ``K[i, i + d]``.

Exact kernel methods need products ``K V`` with the whole ``n x n`` Gram matrix. One process
holding it in float64 caps n near 20 k in 24 GB. Here the symmetric ``K`` is stored once over
the workers: row ``i`` keeps ``K[i, (i + d) mod n]`` for ``d = 0 .. n // 2`` (for even ``n`` the
pair at ``d = n / 2`` is kept by the row below ``n / 2`` only, and zero in the other), so each
unordered pair lives in exactly one row and every row holds ``n // 2 + 1`` values, whatever the
row blocks. Block ``b``'s worker computes and keeps the bands of its rows. A product is one round
trip (:meth:`RowBlocks.call <dask_ssl.linalg.rowblocks.RowBlocks.call>`): ``V`` (``n x c``) goes to
each worker once, each worker returns a whole ``n x c`` contribution (its band times ``V`` and
the band's transpose times ``V``), summed on its worker and then on the driver. At setup the
driver collects the data rows and sends them to every worker once; after that no data row moves.

Values are stored as float32 by default: with ``w`` workers a worker holds about ``2 n^2 / w``
bytes, a quarter of one dense float64 ``n x n`` matrix for ``w = 2``. The product accumulates in
float64 (:func:`_band_product`), so float32 mode applies the rounded matrix ``K32`` exactly: a
fixed symmetric operator that conjugate gradients can rely on, rather than a float32 product
whose rounding changes from one product to the next.
"""

from __future__ import annotations

import uuid

import numba
import numpy as np
import scipy.sparse as sp

from ..linalg import workerstate
from ..linalg.rowblocks import RowBlocks
from .base import check_kernel, kernel_matrix

#: Bytes of float64 kernel values evaluated at once while a block's band is built ...
CHUNK_BYTES = 4 * 2**20
#: ... but at least this many rows at once (per-evaluation costs grow with n).
MIN_CHUNK_ROWS = 64
DTYPES = ("float32", "float64")


def band_width(n: int) -> int:
    """Values kept per row: ``d = 0 .. n // 2``."""
    return n // 2 + 1


@numba.njit(cache=True, nogil=True, fastmath=True)
def _band_product(S, offset, VT, out):
    """``out += (K V).T`` restricted to the pairs kept in band ``S`` (rows ``offset ..``):
    ``K[i, j] = S[i - offset, (j - i) mod n]`` enters row ``i`` and, off the diagonal, row ``j``
    (its symmetric twin, not stored). ``VT`` and ``out`` are ``c x n``; sums in float64.

    A row's band meets ``V`` in two contiguous pieces (before and after the wrap past ``n``);
    the dot products and the transposed updates run as separate loops over those slices,
    which the compiler vectorizes (one loop doing both, with wrapped indices, ran 2.5x
    slower)."""
    n = VT.shape[1]
    h = S.shape[1]
    for r in range(S.shape[0]):
        i = offset + r
        row = S[r]
        stop = min(h, n - i)  # d below stop: j = i + d needs no wrap
        a = row[1:stop]
        b = row[max(stop, 1):h]  # j = i + d - n = 0 .. b.size - 1
        for k in range(VT.shape[0]):
            v = VT[k]
            y = out[k]
            vi = v[i]
            va, ya = v[i + 1:i + stop], y[i + 1:i + stop]
            vb, yb = v[:b.size], y[:b.size]
            acc = np.float64(row[0]) * vi
            for d in range(a.size):
                acc += np.float64(a[d]) * va[d]
            for d in range(b.size):
                acc += np.float64(b[d]) * vb[d]
            for d in range(a.size):
                ya[d] += np.float64(a[d]) * vi
            for d in range(b.size):
                yb[d] += np.float64(b[d]) * vi
            y[i] += acc


def _stack(parts):
    return sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.vstack(parts)


def _build(i, X, offset, token, kernel, kernel_params, dtype, X_all):
    """Block ``i``'s band (rows ``offset ..``), evaluated a few rows at a time so that the
    float64 values in flight stay near :data:`CHUNK_BYTES` (at least :data:`MIN_CHUNK_ROWS`
    rows: each evaluation also reads half of the rows); returns the bytes kept."""
    n_b, n = X.shape[0], X_all.shape[0]
    h = band_width(n)
    S = np.empty((n_b, h), dtype=dtype)
    step = min(n_b, max(MIN_CHUNK_ROWS, CHUNK_BYTES // (8 * max(n, 1))))
    Kc = np.empty((step, step + h - 1))
    for start in range(0, n_b, step):
        stop = min(start + step, n_b)
        k, width = stop - start, stop - start + h - 1
        # the columns rows start..stop-1 reach, i .. i + h - 1 (mod n) for each row i, as
        # slices of X_all (contiguous pieces between wraps past n): no copy of the rows
        done = 0
        while done < width:
            first = (offset + start + done) % n
            take = min(width - done, n - first)
            Kc[:k, done:done + take] = kernel_matrix(X[start:stop], X_all[first:first + take],
                                                     kernel=kernel, kernel_params=kernel_params)
            done += take
        # row r of the chunk keeps Kc[r, r : r + h]: a strided view, then one cast into S
        S[start:stop] = np.lib.stride_tricks.as_strided(
            Kc, shape=(k, h), strides=(Kc.strides[0] + Kc.strides[1], Kc.strides[1]),
            writeable=False)
    if n % 2 == 0 and n > 1:
        # the pair (i, i + n/2) for i >= n/2 is (i - n/2, i)'s, kept by the row below n/2
        S[max(n // 2 - offset, 0):, n // 2] = 0
    workerstate.put(token, i, S)
    return S.nbytes


def _matmat(i, X, offset, token, VT):
    out = np.zeros(VT.shape)
    _band_product(workerstate.get(token, i), offset, VT, out)
    return out


def _entries(i, X, rows, ds, token):
    return workerstate.get(token, i)[rows, ds].astype(np.float64)


class KernelBlocks:
    """``K = kernel(X, X)`` held once, as row bands on the workers of the data blocks.

    Parameters
    ----------
    data : RowBlocks
        The rows ``X`` (dense or CSR); block ``b``'s band lives where block ``b`` of ``X`` does.
    kernel : str or callable, default "rbf"
        As :func:`dask_ssl.kernels.base.kernel_matrix` takes it; it must be symmetric,
        ``k(x, z) = k(z, x)`` (only one of each pair is evaluated).
    kernel_params : dict, optional
        The kernel's parameters (the RBF width is ``gamma`` here, as in scikit-learn).
    dtype : {"float32", "float64"}, default "float32"
        Storage of ``K``. Products accumulate in float64 either way.

    Attributes
    ----------
    nbytes : ndarray of int
        Bytes of ``K`` each block keeps.
    rows : RowBlocks
        The blocks the bands are kept beside (its ``round_trips`` counts products).
    """

    def __init__(self, data: RowBlocks, *, kernel="rbf", kernel_params=None,
                 dtype: str = "float32"):
        check_kernel(kernel, kernel_params)
        if str(np.dtype(dtype)) not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
        self.data = data
        self.dtype = np.dtype(dtype)
        self.token = "kernel-" + uuid.uuid4().hex[:12]
        client = data.client
        owners = data.owners(refresh=True)
        parts = client.gather(data.blocks)
        # The bands are reached through copies of the data blocks that only this object
        # uses, one per block on the block's worker: the data blocks themselves get replicated
        # when other steps (the kNN build) read them, and Dask's active memory manager may then
        # drop the copy on the worker a block's state was placed with.
        self.rows = RowBlocks(client, [client.scatter(part, workers=[w], hash=False)
                                       for part, w in zip(parts, owners)],
                              data.sizes.copy(), data.n_features, data.sparse)
        self._offsets = [(int(o),) for o in data.offsets[:-1]]
        # All rows go to each worker once, as an argument of a direct call (sent once per
        # worker, not as task dependencies, which would replicate blocks again).
        self.nbytes = np.array(self.rows.call(_build, self.token, kernel, kernel_params,
                                              self.dtype, _stack(parts),
                                              per_block=self._offsets), dtype=np.int64)

    @property
    def n_rows(self) -> int:
        return self.data.n_rows

    def matmat(self, V) -> np.ndarray:
        """``K V`` for an ``n x c`` (or length-n) array: one round trip."""
        V = np.asarray(V, dtype=np.float64)
        if V.shape[0] != self.n_rows:
            raise ValueError(f"V has {V.shape[0]} rows but K is {self.n_rows} x {self.n_rows}")
        VT = np.ascontiguousarray(V.reshape(V.shape[0], -1).T)
        out = sum(self.rows.call(_matmat, self.token, VT, per_block=self._offsets,
                                 combine=sum))
        return out.T.reshape(V.shape)

    def submatrix(self, rows, cols) -> np.ndarray:
        """``K[rows][:, cols]`` (float64, rows in the given order): one round trip."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        n = self.n_rows
        I, J = np.meshgrid(rows, cols, indexing="ij")
        I, J = I.ravel(), J.ravel()
        d = (J - I) % n
        # the pair is kept by row I at d, unless d is past the band or the even-n twin
        # (d = n/2 from a row at or past n/2): then by row J at n - d
        twin = (d >= band_width(n)) | ((n % 2 == 0) & (d == n // 2) & (I >= n // 2))
        keeper = np.where(twin, J, I)
        d = np.where(twin, (I - J) % n, d)
        off = self.data.offsets
        owner = np.searchsorted(off, keeper, side="right") - 1
        parts = self.rows.call(_entries, self.token, per_block=[
            (keeper[owner == b] - off[b], d[owner == b]) for b in range(self.data.n_blocks)])
        out = np.empty(I.size)
        for b, part in enumerate(parts):
            out[owner == b] = part
        return out.reshape(rows.size, cols.size)

    def close(self) -> None:
        """Free the bands on the workers."""
        self.rows.client.run(workerstate.drop, self.token)
        self.rows.client.cancel(self.rows.blocks)
