"""``(gamma M + diag(a)) X = B`` on the workers, for :func:`dask_ssl.linalg.block_cg.block_cg`.

``M = L^p`` is a :class:`LaplacianOperator`; ``a`` is a per-row fidelity weight (1 on labeled rows
for graph transduction). The CG vectors ``x, r, p, q`` live beside the graph blocks; one CG pass
is one submission: an update task per block, ``p`` halo exchanges, and a finishing task per block
whose column sums are the only thing gathered.
"""

from __future__ import annotations

import numpy as np

from ..linalg import workerstate
from ..linalg.block_cg import Reductions
from .laplacian import LaplacianOperator


def _colsum(u, v):
    return np.einsum("ij,ij->j", u, v)


def _init(i, store, gamma, seeded, *deps):
    s = workerstate.get(store, i)
    s["r"] = s["b"] - (gamma * s["Mx"] + s["a"] * s["x"]) if seeded else s["b"].copy()
    s["p"] = s["r"].copy()
    return _colsum(s["r"], s["r"]), _colsum(s["b"], s["b"])


def _update(i, store, alpha, beta, active):
    s = workerstate.get(store, i)
    s["x"] += alpha * s["p"]
    s["r"] -= alpha * s["q"]
    s["p"] = np.where(active, s["r"] + beta * s["p"], 0.0)
    return _colsum(s["r"], s["r"])


def _finish(i, store, gamma):
    s = workerstate.get(store, i)
    s["q"] = gamma * s["Mp"] + s["a"] * s["p"]
    return _colsum(s["p"], s["q"]), _colsum(s["r"], s["q"]), _colsum(s["q"], s["q"])


class GraphSystem:
    """The block-CG system ``(gamma M + diag(a)) X = B`` with ``X``, ``B`` partitioned like ``M``.

    Parameters
    ----------
    op : LaplacianOperator
        ``M``.
    gamma : float
        Weight of ``M`` (gamma_I in graph transduction).
    a : ndarray of shape (n,)
        Diagonal fidelity weights, ``a >= 0``; ``gamma M + diag(a)`` must be positive definite
        on the columns solved (every component of the graph needs a row with ``a > 0``).
    B : ndarray of shape (n, c)
    X0 : ndarray of shape (n, c), optional
        Seed (warm start).
    """

    def __init__(self, op: LaplacianOperator, gamma: float, a, B, X0=None):
        self.op, self.gamma = op, float(gamma)
        B = np.asarray(B, dtype=np.float64)
        self.n_cols = B.shape[1]
        self.store = op.new_store()
        self.seeded = X0 is not None
        X0 = np.zeros_like(B) if X0 is None else np.asarray(X0, dtype=np.float64)
        a = np.asarray(a, dtype=np.float64).reshape(-1, 1)
        # Per block, all three writes: a block's first task may read any of them (and a
        # neighbour's halo send reads its "x").
        self._ready = list(zip(op.scatter(self.store, "b", B), op.scatter(self.store, "a", a),
                               op.scatter(self.store, "x", X0)))

    def _submit(self, fn, *args, deps=(), per_block_deps=None):
        W, client = self.op.W, self.op.client
        return [client.submit(fn, b, self.store, *args, *deps,
                              *(per_block_deps[b] if per_block_deps else ()),
                              workers=[self.op.owners[b]], allow_other_workers=False, pure=False)
                for b in range(W.n_blocks)]

    def _product_and_sums(self, after):
        """``q = A p`` behind the tasks ``after``; returns the finishing futures."""
        return self.op.apply(self.store, "p", "Mp", after, then=(_finish, (self.gamma,)))

    def _sums(self, rr_futs, fin_futs) -> Reductions:
        got = self.op.W.gather(rr_futs + fin_futs)
        n = len(rr_futs)
        rr = sum(g if not isinstance(g, tuple) else g[0] for g in got[:n])
        pq, rq, qq = (sum(f[j] for f in got[n:]) for j in range(3))
        return Reductions(rr, pq, rq, qq), got[:n]

    def start(self):
        """``r = b - A x0``, ``p = r``, ``q = A p``; returns the sums and ``b.b``."""
        deps = self._ready
        if self.seeded:
            deps = self.op.apply(self.store, "x", "Mx", deps)
        init = self._submit(_init, self.gamma, self.seeded, per_block_deps=[(f,) for f in deps])
        red, got = self._sums(init, self._product_and_sums(init))
        return red, sum(g[1] for g in got)

    def iterate(self, alpha, beta, active) -> Reductions:
        """One fused CG pass (see :mod:`dask_ssl.linalg.block_cg`)."""
        upd = self._submit(_update, alpha, beta, active)
        return self._sums(upd, self._product_and_sums(upd))[0]

    def solution(self) -> np.ndarray:
        """The current ``X``, gathered (n x c)."""
        return self.op.gather(self.store, "x")

    def close(self) -> None:
        """Free the vectors on the workers."""
        self.op.release(self.store)
