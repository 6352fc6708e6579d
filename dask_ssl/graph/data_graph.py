"""The graph term of linear manifold regularization, ``X^T M X``, on data and graph blocks that line up.

Linear LapRLS and LapSVM (linear paper Eq 2-3) need ``X^T M X`` with ``M = L^p`` a Laplacian of a
graph on the rows of ``X``: as a matrix (small d: one many-column Laplacian product and a Gram)
or as a product with a few vectors (large sparse d, inside CG). Both run as ``p + 1`` direct
calls (:meth:`RowBlocks.call <dask_ssl.linalg.rowblocks.RowBlocks.call>`) on worker-held state:

1. each block computes ``U = [X_b, 1] Z``, keeps it (in the Laplacian's row order for the block,
   see :func:`~dask_ssl.graph.laplacian.to_inner`) and returns the rows other blocks' halos hold;
2. ``p - 1`` steps ``U <- L [U; halo]`` return their send rows the same way;
3. the last step forms ``L [U; halo]``, returns to the data's row order and multiplies by
   ``[X_b, 1]^T``; each worker sums its blocks before replying (a d-sized reply per worker).

A per-row weighted term ``[X, 1]^T diag(a) [X, 1] Z`` (the labeled loss of LapRLS, the active set
of an L2-SVM Newton system) rides on the same calls, so a CG product costs ``p + 1`` round trips.

Data block ``b`` and graph block ``b`` must hold the same rows in one worker process; when they do
not (a graph loaded from disk with other blocks, a block placed on another worker, a METIS
re-split), the data rows move once (:func:`dask_ssl.linalg.realign.take_rows`).
"""

from __future__ import annotations

import uuid

import numpy as np
import scipy.sparse as sp

from ..linalg import workerstate
from ..linalg.block_cg import on_moving_columns
from ..linalg.kernels import gram_rows
from ..linalg.realign import lined_up, take_rows
from ..linalg.rowblocks import RowBlocks
from ._products import WIDTH
from .laplacian import LaplacianOperator, _send_rows, apply_block, to_inner, to_outer

#: Rows x columns of float64 a block's many-column buffer may hold (three such buffers live at
#: once); wider Gram products go in column groups, each ``p + 1`` round trips.
MAX_BUFFER = 32_000_000
#: Stored entries of the data rows and the graph up to which :meth:`DataGraph.local_product`
#: gathers both to the driver (about 24 MB in CSR).
LOCAL_ENTRIES = 2_000_000
#: Rows up to which :meth:`DataGraph.local_kernel` forms ``n x n`` matrices on the driver (two of
#: 32 MB; an ``n x n`` LU there takes a fraction of a second).
KERNEL_ROWS = 2_000


# worker side ------------------------------------------------------------------------------

def _augmented(X, Z, bias):
    """``[X, 1] Z`` as a dense ``n_b x c`` array."""
    if bias:
        return np.asarray(X @ Z[:-1]) + Z[-1]
    return np.asarray(X @ Z)


def _columns(X, cols, bias):
    """Columns ``cols`` (a slice) of ``[X, 1]``, dense."""
    d = X.shape[1]
    stop = min(cols.stop, d)
    part = X[:, cols.start:stop] if cols.start < d else X[:, :0]
    part = part.toarray() if sp.issparse(part) else np.asarray(part)
    if bias and cols.stop > d:
        part = np.column_stack([part, np.ones(X.shape[0])])
    return np.ascontiguousarray(part, dtype=np.float64)


def _transpose_times(X, Y, bias):
    """``[X, 1]^T Y`` for a dense ``n_b x c`` ``Y``."""
    out = np.asarray(X.T @ Y)
    return np.vstack([out, Y.sum(axis=0)]) if bias else out


def _laplacian(i, lap, x, pieces):
    """``L [x; halo]`` on block ``i`` in the operator's row order. Many columns go in groups
    of :data:`~dask_ssl.graph._products.WIDTH`, zero-padded, so that one compiled product
    kernel serves every width (a kernel per column slice took seconds to compile each)."""
    c = x.shape[1]
    if c <= WIDTH:
        return apply_block(i, lap, {"x": x}, "x", "y", pieces)
    out = np.empty_like(x)
    for start in range(0, c, WIDTH):
        cols = slice(start, min(start + WIDTH, c))
        width = cols.stop - cols.start

        def padded(a):
            block = np.zeros((a.shape[0], WIDTH))
            block[:, :width] = a[:, cols]
            return block

        y = apply_block(i, lap, {"x": padded(x)}, "x", "y", [padded(p) for p in pieces])
        out[:, cols] = y[:, :width]
    return out


def _new_store(i, X, token):
    workerstate.put(token, i, {})


def _set_rows(i, X, values, token, name):
    workerstate.get(token, i)[name] = values


def _start(i, X, token, lap, Z, cols, bias):
    """``U = [X, 1] Z`` (or the columns ``cols`` of ``[X, 1]``) kept in the operator's order;
    returns its send rows."""
    s = workerstate.get(token, i)
    U = _columns(X, cols, bias) if Z is None else _augmented(X, Z, bias)
    s["outer"] = U
    s["u"] = to_inner(i, lap, U)
    return _send_rows(i, None, lap, s["u"])


def _step(i, X, pieces, token, lap):
    s = workerstate.get(token, i)
    s["u"] = _laplacian(i, lap, s["u"], pieces)
    return _send_rows(i, None, lap, s["u"])


def _finish(i, X, pieces, token, lap, bias, gamma_I, weights):
    """``[X, 1]^T (gamma_I L [u; halo] + a * U)``, ``a`` the per-row weights ``weights`` =
    ``(state token, key)`` (none if None)."""
    s = workerstate.get(token, i)
    Y = gamma_I * to_outer(i, lap, _laplacian(i, lap, s.pop("u"), pieces))
    U = s.pop("outer")
    if weights is not None:
        a = workerstate.get(weights[0], i)[weights[1]]
        Y += a[:, None] * U
    return _transpose_times(X, Y, bias)


def _finish_gram(i, X, pieces, token, lap, bias):
    """``[X, 1]^T M U`` for the columns ``U`` of ``[X, 1]`` that :func:`_start` took."""
    s = workerstate.get(token, i)
    s.pop("outer")
    Y = to_outer(i, lap, _laplacian(i, lap, s.pop("u"), pieces))
    return _transpose_times(X, Y, bias)


def _weighted(i, X, token, name, rhs, bias, gram):
    """``[X, 1]^T (a * Y)`` of the block, with ``[X, 1]^T diag(a) [X, 1]`` first if ``gram``
    (``a``, ``Y`` stored under ``name`` and ``rhs``)."""
    s = workerstate.get(token, i)
    a = s[name]
    right = _transpose_times(X, a[:, None] * s[rhs], bias)
    if not gram:
        return (right,)
    rows = np.flatnonzero(a)
    return gram_rows(X, rows, a[rows], bias), right


def _values(i, X, token, name):
    return workerstate.get(token, i)[name]


def _rows_where(i, X, token, name, others, bias, sparse):
    """The rows of ``[X, 1]`` (dense, or CSR if ``sparse`` and ``X`` is) where the values under
    ``name`` are nonzero, and those rows' values under ``name`` and each of ``others``."""
    s = workerstate.get(token, i)
    rows = np.flatnonzero(s[name])
    if sparse and sp.issparse(X):
        part = X[rows].tocsr().astype(np.float64)
        if bias:
            part = sp.hstack([part, np.ones((rows.size, 1))], format="csr")
    else:
        part = _columns(X[rows], slice(0, X.shape[1] + (1 if bias else 0)), bias)
    return (part, *(s[key][rows] for key in (name, *others)))


# driver side ------------------------------------------------------------------------------

class DataGraph:
    """``X`` and a Laplacian ``M = L^p`` of a graph on its rows, on one row layout.

    Parameters
    ----------
    data : RowBlocks
        The rows of ``X``, in the graph's row order.
    op : LaplacianOperator
        ``M``. If its blocks do not line up with ``data`` (sizes, workers, or a METIS row
        order), the data rows are moved once to the operator's layout.
    bias : bool
        Append the constant feature (``[X, 1]``), as the linear estimators do.

    Attributes
    ----------
    blocks : RowBlocks
        The data rows as the operator's blocks hold them: block ``b`` has the graph rows
        ``order[offsets[b]:offsets[b + 1]]`` on the worker of graph block ``b``.
    order : ndarray or None
        The graph row at each position of ``blocks`` (None: the graph's own order).
    moved : bool
        Whether the data rows had to move to line up.
    """

    def __init__(self, data: RowBlocks, op: LaplacianOperator, *, bias: bool = True):
        if data.n_rows != op.W.n_rows:
            raise ValueError(f"the graph has {op.W.n_rows} rows but the data has {data.n_rows}")
        self.op, self.bias, self.order = op, bool(bias), op.order
        self.moved = op.order is not None or not lined_up(data, op.W)
        if self.moved:
            rows = (np.arange(data.n_rows) if op.order is None else op.order)
            self.blocks = take_rows(data, [rows[s] for s in op.W.block_slices()], op.W.owners())
        else:
            self.blocks = data
        self.token = "dg-" + uuid.uuid4().hex[:12]
        self.blocks.call(_new_store, self.token)

    @property
    def dim(self) -> int:
        return self.blocks.n_features + (1 if self.bias else 0)

    def set_rows(self, name: str, values) -> None:
        """Keep per-row values (an n-vector or n x c array) beside each block. They are in the
        order of :attr:`blocks` (an estimator's labels after ``codes[order]``), not permuted
        again: a second permutation by :attr:`order` scrambled them against their rows."""
        values = np.asarray(values, dtype=np.float64)
        self.blocks.call(_set_rows, self.token, name,
                         per_block=[(values[s],) for s in self.blocks.block_slices()])

    def weighted_gram(self, name: str, rhs: str):
        """``([X,1]^T diag(a) [X,1], [X,1]^T (a * Y))`` for rows set by :meth:`set_rows`:
        one round trip."""
        parts = self.blocks.call(_weighted, self.token, name, rhs, self.bias, True,
                                 combine=_sum_pairs)
        return _sum_pairs(parts)

    def rhs(self, name: str, rhs: str) -> np.ndarray:
        """``[X,1]^T (a * Y)`` alone (large d): one round trip."""
        parts = self.blocks.call(_weighted, self.token, name, rhs, self.bias, False,
                                 combine=_sum_pairs)
        return _sum_pairs(parts)[0]

    def rows_where(self, name: str, *others: str, sparse: bool = False) -> tuple:
        """``([X,1]`` rows where the values set under ``name`` are nonzero, dense (CSR with
        ``sparse`` for sparse data: large d); their values under ``name`` and each of
        ``others``)``, in block order: one round trip."""
        parts = self.blocks.call(_rows_where, self.token, name, others, self.bias, sparse)
        rows, *values = zip(*parts)
        rows = sp.vstack(rows, format="csr") if sp.issparse(rows[0]) else np.concatenate(rows)
        return (rows, *(np.concatenate(col) for col in values))

    def _halos(self, send_rows):
        return self.op._halos(send_rows)

    def _through(self, send, finish, *args):
        """The ``p - 1`` middle steps and the summed last one, from the first call's sends."""
        for _ in range(self.op.p - 1):
            send = self.blocks.call(_step, self.token, self.op.token,
                                    per_block=self._halos(send))
        return sum(self.blocks.call(finish, self.token, self.op.token, *args,
                                    per_block=self._halos(send), combine=sum))

    def product(self, Z, *, gamma_I: float = 1.0, weights=None) -> np.ndarray:
        """``[X,1]^T (gamma_I M + diag(a)) [X,1] Z`` for a ``dim x c`` (or ``dim``) ``Z``:
        ``p + 1`` round trips. ``weights`` = ``(state token, key)`` of per-row weights ``a``
        held beside each data block (e.g. an L2-SVM-MFN run's active-set weights).

        Zero columns are not sent: their product is zero, and a block CG over many columns
        (cross-validation folds x graph weights) zeroes each column's direction once it
        converges, so most columns of its late products are zero; with none left to move, no
        round trip."""
        def apply(Z2):
            send = self.blocks.call(_start, self.token, self.op.token, Z2, None, self.bias)
            return self._through(send, _finish, self.bias, float(gamma_I), weights)

        return on_moving_columns(apply, Z)[0]

    def _gathered(self, budget: int | None):
        """The data rows and ``L`` (CSR), both in the order of :attr:`blocks`, on the driver;
        None where they hold more than ``budget`` (:data:`LOCAL_ENTRIES`) stored entries."""
        from .dense import laplacian_matrix

        budget = LOCAL_ENTRIES if budget is None else budget
        entries = sum(self.op.W.call(_entries, combine=sum)) \
            + sum(self.blocks.call(_entries, combine=sum))
        if entries > budget:
            return None
        L = laplacian_matrix(self.op.graph.to_scipy(), normalized=self.op.normalized,
                             sparse=True)
        if self.order is not None:  # blocks hold graph row order[k] at position k
            L = L[self.order][:, self.order]
        return self.blocks.gather_rows(), L

    def local_product(self, budget: int | None = None):
        """``Z -> [X,1]^T M [X,1] Z`` (:meth:`product` at ``gamma_I = 1`` without weights) on
        the driver, from the data rows and the graph gathered once; None where they hold more
        than ``budget`` (:data:`LOCAL_ENTRIES`) stored entries. A selection's many-column
        solves on a few hundred rows are bound by the round trips and the columns sent, not by
        arithmetic; ``M = L^p`` is applied as ``p`` sparse products, never formed."""
        local = self._gathered(budget)
        if local is None:
            return None
        (X, L), bias, p = local, self.bias, self.op.p

        def product(Z):
            U = _augmented(X, Z, bias)
            for _ in range(p):
                U = L @ U
            return _transpose_times(X, U, bias)

        return product

    def local_kernel(self, name: str, *, max_rows: int | None = None,
                     budget: int | None = None):
        """``(K, MK, rows)`` on the driver: ``K = [X,1] [X,1]^T`` and ``M K`` over all ``n``
        rows in the order of :attr:`blocks`, and the positions of the rows whose values set
        under ``name`` are nonzero (the rows :meth:`rows_where` returns, in its order). None
        above ``max_rows`` rows (:data:`KERNEL_ROWS`) or ``budget`` entries. With few rows and
        many features, ``n x n`` systems replace ``dim x dim`` ones (``[X,1]^T W [X,1]`` and
        ``W K`` share their nonzero eigenvalues)."""
        if self.blocks.n_rows > (KERNEL_ROWS if max_rows is None else max_rows):
            return None
        local = self._gathered(budget)
        if local is None:
            return None
        X = local[0].astype(np.float64)
        K = X @ X.T
        K = K.toarray() if sp.issparse(K) else K
        if self.bias:
            K += 1.0
        MK = K
        for _ in range(self.op.p):
            MK = np.asarray(local[1] @ MK)
        values = np.concatenate(self.blocks.call(_values, self.token, name))
        return K, MK, np.flatnonzero(values)

    def gram(self) -> np.ndarray:
        """``[X,1]^T M [X,1]`` (dim x dim): ``p + 1`` round trips per column group (one group
        unless a block's dense ``n_b x dim`` copy would exceed :data:`MAX_BUFFER`)."""
        group = max(WIDTH, MAX_BUFFER // max(int(self.blocks.sizes.max()), 1))
        columns = []
        for start in range(0, self.dim, group):
            cols = slice(start, min(start + group, self.dim))
            send = self.blocks.call(_start, self.token, self.op.token, None, cols, self.bias)
            columns.append(self._through(send, _finish_gram, self.bias))
        H = np.hstack(columns)
        return 0.5 * (H + H.T)

    def close(self) -> None:
        """Free the worker-side vectors (the operator is the caller's)."""
        self.blocks.client.run(workerstate.drop, self.token)


def _entries(i, X):
    return int(X.nnz) if sp.issparse(X) else int(X.size)


def _sum_pairs(parts):
    return tuple(sum(col) for col in zip(*parts))
