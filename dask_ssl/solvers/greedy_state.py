"""Where the greedy matching pursuit of :func:`dask_ssl.solvers.sparse.greedy_basis` keeps its
``n``-row state: the basis' kernel columns ``K_NJ``, their images ``Q K_NJ`` and the outputs'
image ``Q o``.

:class:`DriverState` holds them on the driver next to the training rows (small problems, where
the whole Gram matrix is computed once). :class:`BlockState` leaves them on the workers beside
the row blocks of the training data (:class:`~dask_ssl.linalg.rowblocks.RowBlocks`): a step
sends the ``kappa`` candidate rows out, each block returns its rows of the candidates' kernel
columns ``K_bc`` (for the candidates' curvatures and the kept column's ``Q`` product, which
run where ``Q`` lives) and the step's reductions (``K_Jc``, ``(Q K_NJ)^T K_Nc``,
``K_Nc^T (Q o - r)``: ``d x kappa`` and ``kappa x c`` numbers a block, returned with its
columns in the same round trip and summed on the driver); the kept column's image ``Q k``
joins the blocks' state, split like them. Neither the rows nor anything
``n x n`` come to the driver; ``K_NJ`` (``n x d``) is gathered once, after the last step, for
the fit on the final basis.

Both answer the same four questions, so one greedy loop serves both and their results agree to
round-off.
"""

from __future__ import annotations

import uuid

import numpy as np
import scipy.sparse as sp

from ..kernels.base import kernel_matrix
from ..linalg import workerstate


class DriverState:
    """The greedy's state on the driver: ``columns`` (a :class:`~.sparse.KernelColumns`)
    computes kernel columns, ``r`` is the quadratic's ``(n, c)`` right-hand side."""

    def __init__(self, columns, r, d: int):
        n, c = r.shape
        self.columns, self.r = columns, r
        self.KNJ, self.QKNJ = np.empty((n, d)), np.empty((n, d))
        self.Qo = np.zeros((n, c))
        self.basis: list[int] = []
        self._Kc = None

    def candidates(self, cand) -> np.ndarray:
        """``K_Nc``, the candidates' kernel columns on every row, ``(n, m)``."""
        self._Kc = self.columns(cand)
        return self._Kc

    def reductions(self):
        """``(K_Jc, (Q K_NJ)^T K_Nc, K_Nc^T (Q o - r))`` for the columns of the last
        :meth:`candidates` (``(Q K_NJ)^T K_Nc = K_JN Q K_Nc``, ``Q`` symmetric)."""
        k, Kc = len(self.basis), self._Kc
        return Kc[self.basis], self.QKNJ[:, :k].T @ Kc, Kc.T @ (self.Qo - self.r)

    def accept(self, j: int, row: int, Qk, beta) -> None:
        """Candidate ``j`` (training row ``row``, its image ``Qk = Q k``) entered the basis;
        ``beta`` is the new minimizer on the grown basis."""
        k = len(self.basis)
        self.KNJ[:, k], self.QKNJ[:, k] = self._Kc[:, j], Qk
        self.basis.append(row)
        self.Qo = self.QKNJ[:, :k + 1] @ beta

    def basis_columns(self) -> np.ndarray:
        """``K_NJ`` of the basis reached, ``(n, d)``."""
        return self.KNJ[:, :len(self.basis)]

    def close(self) -> None:
        pass


# worker side -------------------------------------------------------------------------------
def _take(i, X, rows):
    return X[rows]


def _setup(i, X, r, offset, d, token):
    n_b, c = r.shape
    workerstate.put(token, i, {"offset": int(offset), "r": r, "KNJ": np.empty((n_b, d)),
                               "QKNJ": np.empty((n_b, d)), "Qo": np.zeros((n_b, c)),
                               "at": [], "rows": [], "k": 0, "Kc": None})


def _apply_pending(st, pending) -> None:
    """Add the last step's chosen candidate (if any) to the block's basis state."""
    if pending is None:
        return
    j, row, beta, Qk_b = pending
    k = st["k"]
    st["KNJ"][:, k], st["QKNJ"][:, k] = st["Kc"][:, j], Qk_b
    local = row - st["offset"]
    if 0 <= local < st["KNJ"].shape[0]:
        st["at"].append(k)
        st["rows"].append(local)
    st["k"] = k + 1
    st["Qo"] = st["QKNJ"][:, :k + 1] @ beta


def _candidate_columns(i, X, pending, token, Xc, kernel, kernel_params):
    """The block's rows of the candidates' kernel columns and its part of the step's
    reductions, in one round trip (the reductions read only the block's own state)."""
    st = workerstate.get(token, i)
    _apply_pending(st, pending)
    st["Kc"] = Kc = kernel_matrix(X, Xc, kernel=kernel, kernel_params=kernel_params)
    k = st["k"]
    KJc = np.zeros((k, Kc.shape[1]))
    KJc[st["at"]] = Kc[st["rows"]]
    return Kc, (KJc, st["QKNJ"][:, :k].T @ Kc, Kc.T @ (st["Qo"] - st["r"]))


def _sum_parts(parts):
    return tuple(sum(p[t] for p in parts) for t in range(len(parts[0])))


def _finish(i, X, pending, token):
    st = workerstate.get(token, i)
    _apply_pending(st, pending)
    return st["KNJ"][:, :st["k"]]


def _stack(parts):
    return sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.vstack(parts)


def read_rows(blocks, idx) -> np.ndarray | sp.csr_matrix:
    """Rows ``idx`` (in that order) of the row blocks ``blocks``, read from their blocks."""
    idx = np.asarray(idx, dtype=np.int64)
    order = np.argsort(idx, kind="stable")
    sorted_idx = idx[order]
    block = np.searchsorted(blocks.offsets, sorted_idx, side="right") - 1
    parts = blocks.call(_take, per_block=[(sorted_idx[block == b] - blocks.offsets[b],)
                                          for b in range(blocks.n_blocks)])
    taken = _stack(parts)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return taken[inverse]


def _kernel_columns(i, X, Xc, kernel, kernel_params):
    return kernel_matrix(X, Xc, kernel=kernel, kernel_params=kernel_params)


class BlockState:
    """The greedy's state on the workers, beside the row blocks ``blocks`` of the training
    rows (in the quadratic's row order); ``r`` is sent once, split like the blocks. The
    candidate rows are read from the blocks (one round trip a step); a step's chosen column
    joins the blocks' state with the next step's first round trip. :meth:`close` frees the
    state on the workers."""

    def __init__(self, blocks, kernel, kernel_params, r, d: int):
        self.blocks, self.kernel, self.kernel_params = blocks, kernel, kernel_params
        self.token = "greedy-" + uuid.uuid4().hex[:12]
        self.basis: list[int] = []
        self._pending = self._reductions = None
        self._slices = blocks.block_slices()
        blocks.call(_setup, d, self.token,
                    per_block=[(r[s], int(s.start)) for s in self._slices])

    def rows(self, idx) -> np.ndarray | sp.csr_matrix:
        """Training rows ``idx`` (in that order), read from their blocks."""
        return read_rows(self.blocks, idx)

    def candidates(self, cand) -> np.ndarray:
        Xc = self.rows(cand)
        parts = self.blocks.call(_candidate_columns, self.token, Xc, self.kernel,
                                 self.kernel_params, per_block=self._pending_parts())
        self._reductions = _sum_parts([reduced for _, reduced in parts])
        return np.vstack([Kc for Kc, _ in parts])

    def reductions(self):
        """The reductions of the last :meth:`candidates`, summed over the blocks (they came
        back with the columns)."""
        return self._reductions

    def accept(self, j: int, row: int, Qk, beta) -> None:
        self.basis.append(row)
        self._pending = (int(j), int(row), beta, Qk)

    def _pending_parts(self) -> list:
        """Per block: the last kept column's entry for its state (its rows of ``Q k``), or
        ``None``; the pending column is then sent."""
        pending, self._pending = self._pending, None
        if pending is None:
            return [(None,)] * len(self._slices)
        j, row, beta, Qk = pending
        return [((j, row, beta, np.ascontiguousarray(Qk[s])),) for s in self._slices]

    def basis_columns(self) -> np.ndarray:
        parts = self.blocks.call(_finish, self.token, per_block=self._pending_parts())
        return np.vstack(parts)

    def close(self) -> None:
        self.blocks.client.run(workerstate.drop, self.token)


class BlockColumns:
    """Kernel columns ``K(X, X[idx])`` of training rows held as row blocks on the workers, as
    :class:`~dask_ssl.solvers.sparse.KernelColumns` gives them for rows on the driver: the
    rows ``idx`` are read from their blocks and each block returns its rows of the columns."""

    def __init__(self, blocks, kernel, kernel_params):
        self.blocks, self.kernel, self.kernel_params = blocks, kernel, kernel_params
        self.n = blocks.n_rows
        self.evaluated = 0

    def __call__(self, idx) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        self.evaluated += idx.size
        Xc = read_rows(self.blocks, idx)
        return np.vstack(self.blocks.call(_kernel_columns, Xc, self.kernel, self.kernel_params))
