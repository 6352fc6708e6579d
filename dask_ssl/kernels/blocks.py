"""The kernel matrix as row blocks on the workers: ``K[rows of block b, :]`` beside data block b.

Exact kernel methods need products ``K V`` with the whole ``n x n`` Gram matrix. One process
holding it in float64 caps n near 20 k in 24 GB; here block ``b``'s worker computes and keeps only
its rows, and a product is one round trip (:meth:`RowBlocks.call
<dask_ssl.linalg.rowblocks.RowBlocks.call>`): ``V`` (``n x c``) goes to each worker once, each
block returns its rows of ``K V``. At setup the driver collects the data rows and sends them to every
worker once to evaluate its rows; after that no data row moves.

Rows are stored as float32 by default, half the memory of float64: with ``w`` workers a worker
holds ``4 n^2 / w`` bytes, below half of one dense float64 ``n x n`` matrix for ``w >= 2``. The
product still accumulates in float64 (:func:`_product32`), so float32 mode applies the rounded
matrix ``K32`` exactly: a fixed symmetric operator that conjugate gradients can rely on, rather
than a float32 product whose rounding changes from one product to the next.
"""

from __future__ import annotations

import uuid

import numba
import numpy as np
import scipy.sparse as sp

from ..linalg import workerstate
from ..linalg.rowblocks import RowBlocks
from .base import check_kernel, kernel_matrix

#: Bytes of float64 kernel values evaluated at once while a block's rows are built.
CHUNK_BYTES = 32 * 2**20
DTYPES = ("float32", "float64")


@numba.njit(cache=True, nogil=True, fastmath=True)
def _product32(K, VT, out):
    """``out = K @ VT.T`` for float32 ``K``, accumulated in float64 (``VT``: ``c x n``)."""
    for i in range(K.shape[0]):
        row = K[i]
        for k in range(VT.shape[0]):
            v = VT[k]
            acc = 0.0
            for j in range(row.shape[0]):
                acc += np.float64(row[j]) * v[j]
            out[i, k] = acc


def _stack(parts):
    return sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.vstack(parts)


def _build(i, X, token, kernel, kernel_params, dtype, X_all):
    """Block ``i``'s rows of ``K`` against every row, evaluated in chunks of rows so that the
    float64 intermediate stays near :data:`CHUNK_BYTES`; returns the bytes kept."""
    n_b, n = X.shape[0], X_all.shape[0]
    K = np.empty((n_b, n), dtype=dtype)
    step = max(1, CHUNK_BYTES // (8 * max(n, 1)))
    for start in range(0, n_b, step):
        stop = min(start + step, n_b)
        K[start:stop] = kernel_matrix(X[start:stop], X_all, kernel=kernel,
                                      kernel_params=kernel_params)
    workerstate.put(token, i, K)
    return K.nbytes


def _matmat(i, X, token, V):
    K = workerstate.get(token, i)
    if K.dtype == np.float64:
        return K @ V
    out = np.empty((K.shape[0], V.shape[1]))
    _product32(K, np.ascontiguousarray(V.T), out)
    return out


def _submatrix(i, X, rows, token, cols):
    return workerstate.get(token, i)[rows][:, cols].astype(np.float64)


class KernelBlocks:
    """``K = kernel(X, X)`` held as row blocks on the workers of the data blocks.

    Parameters
    ----------
    data : RowBlocks
        The rows ``X`` (dense or CSR); block ``b`` of ``K`` lives where block ``b`` of ``X`` does.
    kernel : str or callable, default "rbf"
        As :func:`dask_ssl.kernels.base.kernel_matrix` takes it.
    kernel_params : dict, optional
        The kernel's parameters (the RBF width is ``gamma`` here, as in scikit-learn).
    dtype : {"float32", "float64"}, default "float32"
        Storage of ``K``. Products accumulate in float64 either way.

    Attributes
    ----------
    nbytes : ndarray of int
        Bytes of ``K`` each block keeps.
    rows : RowBlocks
        The blocks the kernel rows are kept beside (its ``round_trips`` counts products).
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
        # The kernel rows are reached through copies of the data blocks that only this object
        # uses, one per block on the block's worker: the data blocks themselves get replicated
        # when other steps (the kNN build) read them, and Dask's active memory manager may then
        # drop the copy on the worker a block's state was placed with.
        self.rows = RowBlocks(client, [client.scatter(part, workers=[w], hash=False)
                                       for part, w in zip(parts, owners)],
                              data.sizes.copy(), data.n_features, data.sparse)
        # All rows go to each worker once, as an argument of a direct call (sent once per
        # worker, not as task dependencies, which would replicate blocks again).
        self.nbytes = np.array(self.rows.call(_build, self.token, kernel, kernel_params,
                                              self.dtype, _stack(parts)), dtype=np.int64)

    @property
    def n_rows(self) -> int:
        return self.data.n_rows

    def matmat(self, V) -> np.ndarray:
        """``K V`` for an ``n x c`` (or length-n) array: one round trip."""
        V = np.asarray(V, dtype=np.float64)
        if V.shape[0] != self.n_rows:
            raise ValueError(f"V has {V.shape[0]} rows but K is {self.n_rows} x {self.n_rows}")
        V2 = np.ascontiguousarray(V.reshape(V.shape[0], -1))
        out = np.vstack(self.rows.call(_matmat, self.token, V2))
        return out.reshape(V.shape)

    def submatrix(self, rows, cols) -> np.ndarray:
        """``K[rows][:, cols]`` (float64, rows in the given order): one round trip."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        off = self.data.offsets
        owner = np.searchsorted(off, rows, side="right") - 1
        parts = self.rows.call(_submatrix, self.token, cols,
                               per_block=[(rows[owner == b] - off[b],)
                                          for b in range(self.data.n_blocks)])
        out = np.empty((rows.size, cols.size))
        for b, part in enumerate(parts):
            out[owner == b] = part
        return out

    def close(self) -> None:
        """Free the kernel rows on the workers."""
        self.rows.client.run(workerstate.drop, self.token)
        self.rows.client.cancel(self.rows.blocks)
