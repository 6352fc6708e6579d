"""``(gamma M + diag(a)) X = B`` on the workers, for :func:`dask_ssl.linalg.block_cg.block_cg`.

``M = L^p`` is a :class:`LaplacianOperator`; ``a`` is a per-row fidelity weight (1 on labeled rows
for graph transduction). The CG vectors ``x, r, p, q`` live beside the graph blocks.

A CG pass through the scheduler (an update task, halo-send tasks, a product task per block) cost
about ten times the arithmetic on a 100 k-row graph. So a pass here is ``p`` direct calls
(:meth:`RowBlocks.call <dask_ssl.linalg.rowblocks.RowBlocks.call>`), one per power of ``L``, and
the halos travel with the calls: the driver keeps ``r``, ``p`` and ``q`` on the *send rows* (the
rows of each block that some other block's halo holds). Each pass returns ``q`` there, and the
driver runs the workers' update kernel on those rows, so it knows the next ``p``'s halo values,
bit for bit, before the pass that needs them. For ``p > 1`` the intermediate ``L^k p`` come back
on the send rows the same way.
"""

from __future__ import annotations

import uuid

import numpy as np

from ..linalg import workerstate
from ..linalg.block_cg import Reductions
from ._products import cg_update
from .laplacian import LaplacianOperator, apply_block, finish_block, inner_rows, to_inner


def _colsum(u, v):
    return np.einsum("ij,ij->j", u, v)


def _load(i, W, b, a, x, send, store, token):
    workerstate.put(store, i, {"b": to_inner(i, token, b), "a": to_inner(i, token, a),
                               "x": to_inner(i, token, x), "send": inner_rows(i, token, send)})



def _head_plain(s):
    s["r"] = s["b"].copy()
    s["p"] = s["r"].copy()
    s["q"] = np.empty_like(s["p"])
    return _colsum(s["r"], s["r"]), _colsum(s["b"], s["b"])


def _head_update(s, alpha, beta, active):
    rr = np.empty(alpha.size)
    cg_update(s["x"], s["r"], s["p"], s["q"], alpha, beta, active, rr)
    return rr


def _step(i, W, halo, store, token, head, src, tail, gamma):
    """``head(s)``, then a product step with ``halo`` on block ``i``, then ``tail``:

    - ``None``: ``y = L [s[src]; halo]``; returns ``y`` on the send rows (the next step's halo);
    - ``"seed"``: ``r = b - (gamma L y + a x)``, ``p = r``; returns ``(r.r, b.b)`` and ``r``
      on the send rows;
    - ``"finish"``: ``q = gamma L y + a p``; returns ``(p.q, r.q, q.q)`` and ``q`` on the send
      rows.

    Returns ``(head result, tail result)``.
    """
    s = workerstate.get(store, i)
    first = head[0](s, *head[1]) if head is not None else None
    if tail == "finish":
        sums = finish_block(i, token, s, src, halo, gamma)
        return first, (sums, s["q"][s["send"]])
    apply_block(i, token, s, src, "y", halo)
    if tail == "seed":
        s["r"] = s["b"] - (gamma * s["y"] + s["a"] * s["x"])
        s["p"] = s["r"].copy()
        s["q"] = np.empty_like(s["p"])
        return first, ((_colsum(s["r"], s["r"]), _colsum(s["b"], s["b"])), s["r"][s["send"]])
    return first, s["y"][s["send"]]


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
        self.W = W = op.W
        B = op.to_block_order(np.asarray(B, dtype=np.float64))
        self.n_cols = B.shape[1]
        self.seeded = X0 is not None
        X0 = np.zeros_like(B) if X0 is None else op.to_block_order(np.asarray(X0, np.float64))
        a = op.to_block_order(np.asarray(a, dtype=np.float64).reshape(-1, 1))
        nb = W.n_blocks
        # send[c]: rows of block c in any halo; where[b][c]: block b's halo rows from c, as
        # positions in send[c].
        self.send = [np.unique(np.concatenate(
            [op.halo_rows[b][c] for b in range(nb) if c in op.halo_rows[b]] or
            [np.zeros(0, np.int64)])).astype(np.int64) for c in range(nb)]
        self.where = [{c: np.searchsorted(self.send[c], op.halo_rows[b][c]) for c in op.sources[b]}
                      for b in range(nb)]
        self.store = "cg-" + uuid.uuid4().hex[:12]
        sl = W.block_slices()
        W.call(_load, self.store, op.token,
               per_block=[(B[s], a[s], X0[s], self.send[c]) for c, s in enumerate(sl)])
        self._x_send = [X0[s][self.send[c]] for c, s in enumerate(sl)]
        self._b_send = [B[s][self.send[c]] for c, s in enumerate(sl)]

    def _halos(self, values):
        """Per block, its halo pieces (ascending source) from the send-row ``values``."""
        return [([values[c][self.where[b][c]] for c in self.op.sources[b]],)
                for b in range(self.W.n_blocks)]

    def _product(self, src, halo_values, head, tail):
        """``head``, ``y = M src``, ``tail`` on every block: ``p`` direct calls.

        Returns the per-block ``(head result, tail result)`` of the last call (head results
        of the first call when ``p > 1``)."""
        token = self.op.token
        heads = None
        for step in range(self.op.p):
            last = step == self.op.p - 1
            got = self.W.call(_step, self.store, token, head if step == 0 else None,
                              src if step == 0 else "y", tail if last else None, self.gamma,
                              per_block=self._halos(halo_values))
            if step == 0:
                heads = [g[0] for g in got]
            halo_values = [g[1] for g in got]
        return heads, got

    def _finish(self, rr, got):
        """Keep ``q`` on the send rows; the reductions with ``r.r`` = ``rr``."""
        sums = [g[1][0] for g in got]
        self._q = [g[1][1] for g in got]
        return Reductions(rr, *(sum(s[j] for s in sums) for j in range(3)))

    def start(self):
        """``r = b - A x0``, ``p = r``, ``q = A p``; returns the sums and ``b.b``."""
        if self.seeded:
            _, got = self._product("x", self._x_send, None, "seed")
            firsts = [g[1][0] for g in got]
            self._r = [g[1][1] for g in got]
            head = None
        else:
            self._r = [v.copy() for v in self._b_send]
            head = (_head_plain, ())
        self._p = [v.copy() for v in self._r]
        # the update kernel also moves x, which the driver does not need on the send rows
        self._x_unused = [np.zeros_like(v) for v in self._r]
        heads, got = self._product("p", self._p, head, "finish")
        if not self.seeded:
            firsts = heads
        return self._finish(sum(f[0] for f in firsts), got), sum(f[1] for f in firsts)

    def iterate(self, alpha, beta, active) -> Reductions:
        """One CG pass (see :mod:`dask_ssl.linalg.block_cg`): ``p`` direct calls."""
        alpha, beta = np.asarray(alpha, np.float64), np.asarray(beta, np.float64)
        active = np.asarray(active, bool)
        # The workers' update kernel, run on the send rows: the next p's halo values.
        rr = np.empty(alpha.size)
        for x, r, p, q in zip(self._x_unused, self._r, self._p, self._q):
            cg_update(x, r, p, q, alpha, beta, active, rr)
        heads, got = self._product("p", self._p, (_head_update, (alpha, beta, active)),
                                   "finish")
        return self._finish(sum(heads), got)

    def solution(self) -> np.ndarray:
        """The current ``X``, gathered (n x c, the graph's row order)."""
        return self.op.gather(self.store, "x")

    def close(self) -> None:
        """Free the vectors on the workers."""
        self.op.release(self.store)
