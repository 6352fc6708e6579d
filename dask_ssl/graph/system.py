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

With ``preconditioner="block"`` each block also factors its diagonal block of the system
(:mod:`dask_ssl.graph.precond`) when the vectors are loaded, and keeps ``z = P_b^-1 r`` and
``w = P_b^-1 q`` (:mod:`dask_ssl.linalg.block_cg`): ``w`` is computed right after ``q`` in the
last call of a pass and returned on the send rows beside it, so the driver's update kernel also
knows the next ``p = z + beta p`` there. A pass stays ``p`` direct calls; only an unseeded start
takes one more (``z = P^-1 b`` before the first product).
"""

from __future__ import annotations

import uuid

import numpy as np

from ..linalg import workerstate
from ..linalg.block_cg import Reductions
from ._products import cg_update, pcg_update
from .laplacian import LaplacianOperator, apply_block, finish_block, inner_rows, to_inner
from .precond import check_preconditioner, factor_columns


def _colsum(u, v):
    return np.einsum("ij,ij->j", u, v)


def _load(i, W, b, a, pa, x, send, store, token, gamma, p, precond, fill_budget):
    s = {"b": to_inner(i, token, b), "a": to_inner(i, token, a), "x": to_inner(i, token, x),
         "send": inner_rows(i, token, send)}
    if precond:
        st = workerstate.get(token, i)
        s["lu"] = factor_columns(st["A"], st["d"], to_inner(i, token, pa), gamma, p,
                                 fill_budget)
    workerstate.put(store, i, s)


def _head_plain(s):
    s["r"] = s["b"].copy()
    s["p"] = s["r"].copy()
    s["q"] = np.empty_like(s["p"])
    return _colsum(s["r"], s["r"]), _colsum(s["b"], s["b"])


def _precond_start(i, W, store):
    """Unseeded preconditioned start: ``r = b``, ``z = p = P^-1 r``; returns ``(r.r, b.b, r.z)``
    and ``p`` on the send rows."""
    s = workerstate.get(store, i)
    s["r"] = s["b"].copy()
    s["z"] = s["lu"].solve(s["r"])
    s["p"] = s["z"].copy()
    s["q"] = np.empty_like(s["p"])
    sums = (_colsum(s["r"], s["r"]), _colsum(s["b"], s["b"]), _colsum(s["r"], s["z"]))
    return sums, s["p"][s["send"]]


def _head_update(s, alpha, beta, active):
    rr = np.empty(alpha.size)
    if "lu" not in s:
        cg_update(s["x"], s["r"], s["p"], s["q"], alpha, beta, active, rr)
        return (rr,)
    rz = np.empty(alpha.size)
    pcg_update(s["x"], s["r"], s["z"], s["p"], s["q"], s["w"], alpha, beta, active, rr, rz)
    return rr, rz


def _step(i, W, halo, store, token, head, src, tail, gamma):
    """``head(s)``, then a product step with ``halo`` on block ``i``, then ``tail``:

    - ``None``: ``y = L [s[src]; halo]``; returns ``y`` on the send rows (the next step's halo);
    - ``"seed"``: ``r = b - (gamma L y + a x)``, ``p = r`` (``z = p = P^-1 r`` when
      preconditioned); returns ``(r.r, b.b[, r.z])`` and ``r`` (and ``z``) on the send rows;
    - ``"finish"``: ``q = gamma L y + a p`` (and ``w = P^-1 q``); returns ``(p.q, r.q, q.q[,
      z.q, q.w])`` and ``q`` (and ``w``) on the send rows.

    Returns ``(head result, tail result)``.
    """
    s = workerstate.get(store, i)
    first = head[0](s, *head[1]) if head is not None else None
    lu = s.get("lu")
    if tail == "finish":
        sums = finish_block(i, token, s, src, halo, gamma)
        if lu is None:
            return first, (sums, s["q"][s["send"]])
        s["w"] = lu.solve(s["q"])
        sums = (*sums, _colsum(s["z"], s["q"]), _colsum(s["q"], s["w"]))
        return first, (sums, s["q"][s["send"]], s["w"][s["send"]])
    apply_block(i, token, s, src, "y", halo)
    if tail == "seed":
        s["r"] = s["b"] - (gamma * s["y"] + s["a"] * s["x"])
        sums = (_colsum(s["r"], s["r"]), _colsum(s["b"], s["b"]))
        send = (s["r"][s["send"]],)
        if lu is None:
            s["p"] = s["r"].copy()
        else:
            s["z"] = lu.solve(s["r"])
            s["p"] = s["z"].copy()
            sums = (*sums, _colsum(s["r"], s["z"]))
            send = (*send, s["z"][s["send"]])
        s["q"] = np.empty_like(s["p"])
        return first, (sums, *send)
    return first, s["y"][s["send"]]


class GraphSystem:
    """The block-CG system ``(gamma M + diag(a)) X = B`` with ``X``, ``B`` partitioned like ``M``.

    Parameters
    ----------
    op : LaplacianOperator
        ``M``.
    gamma : float or ndarray of shape (c,)
        Weight of ``M`` (gamma_I in graph transduction), for every column or one per column:
        a grid of weights is columns of one solve (the block preconditioner then factors each
        block once per distinct weight).
    a : ndarray of shape (n,) or (n, c)
        Diagonal fidelity weights, ``a >= 0``, for every column or one set per column;
        ``gamma M + diag(a)`` must be positive definite
        on the columns solved (every component of the graph needs a row with ``a > 0``), or
        ``B`` must vanish on the components where it is singular (CG then leaves ``X0`` there).
    B : ndarray of shape (n, c)
    X0 : ndarray of shape (n, c), optional
        Seed (warm start).
    preconditioner : {None, "block"}, default None
        ``"block"``: block Jacobi, each block's own rows of ``gamma L^p + diag(a)`` (with ``L^p``'s
        block taken as ``(L_bb)^p``) factored on its worker (:mod:`dask_ssl.graph.precond`);
        exact where no edge crosses the blocks. None: plain CG.
    a_precond : ndarray of shape (n,) or (n, c), optional
        The fidelity weights the preconditioner factors (default ``a``): columns whose ``a``
        differ on a few rows (folds of the labeled rows) can share one factor per block,
        which stays symmetric positive definite and leaves those rows' difference to CG.
    fill_budget : float, optional
        Largest fill of a block factored exactly (a block past it is preconditioned by its
        diagonal); default :data:`~dask_ssl.graph.precond.FILL_BUDGET`. Applying a factor
        costs about its fill in products per column and pass, so a solve of many columns,
        bound by arithmetic rather than round trips, may ask for less.
    """

    def __init__(self, op: LaplacianOperator, gamma, a, B, X0=None, *,
                 preconditioner=None, a_precond=None, fill_budget=None):
        check_preconditioner(preconditioner)
        self.op = op
        self.preconditioned = preconditioner is not None
        self.W = W = op.W
        B = op.to_block_order(np.asarray(B, dtype=np.float64))
        self.n_cols = B.shape[1]
        self.gamma = np.broadcast_to(np.asarray(gamma, dtype=np.float64), (self.n_cols,)).copy()
        self.seeded = X0 is not None
        X0 = np.zeros_like(B) if X0 is None else op.to_block_order(np.asarray(X0, np.float64))
        a = np.asarray(a, dtype=np.float64)
        pa = a if a_precond is None else np.asarray(a_precond, dtype=np.float64)
        a = op.to_block_order(a.reshape(a.shape[0], -1))
        pa = op.to_block_order(pa.reshape(pa.shape[0], -1))
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
        W.call(_load, self.store, op.token, self.gamma, op.p, self.preconditioned, fill_budget,
               per_block=[(B[s], a[s], pa[s] if self.preconditioned else None, X0[s],
                           self.send[c]) for c, s in enumerate(sl)])
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

    def _finish(self, rr, rz, got):
        """Keep ``q`` (and ``w``) on the send rows; the reductions with ``r.r`` = ``rr`` (and
        ``r.z`` = ``rz``)."""
        sums = [g[1][0] for g in got]
        self._q = [g[1][1] for g in got]
        totals = [sum(s[j] for s in sums) for j in range(len(sums[0]))]
        if not self.preconditioned:
            return Reductions(rr, *totals)
        self._w = [g[1][2] for g in got]
        pq, rq, qq, zq, qw = totals
        return Reductions(rr, pq, rq, qq, rz, zq, qw)

    def start(self):
        """``r = b - A x0``, ``p = r`` (``z = p = P^-1 r``), ``q = A p``; returns the sums and
        ``b.b``."""
        head = None
        if self.seeded:
            _, got = self._product("x", self._x_send, None, "seed")
            firsts = [g[1][0] for g in got]
            self._r = [g[1][1] for g in got]
            if self.preconditioned:
                self._z = [g[1][2] for g in got]
        elif self.preconditioned:
            got = self.W.call(_precond_start, self.store)
            firsts = [g[0] for g in got]
            self._r = [v.copy() for v in self._b_send]
            self._z = [g[1] for g in got]
        else:
            self._r = [v.copy() for v in self._b_send]
            head = (_head_plain, ())
        self._p = [v.copy() for v in (self._z if self.preconditioned else self._r)]
        # x on the send rows, moved by the update kernel as on the workers: a restart's halo
        self._x = [v.copy() for v in self._x_send]
        heads, got = self._product("p", self._p, head, "finish")
        if head is not None:
            firsts = heads
        rr, bb = (sum(f[j] for f in firsts) for j in range(2))
        rz = sum(f[2] for f in firsts) if self.preconditioned else None
        return self._finish(rr, rz, got), bb

    def iterate(self, alpha, beta, active) -> Reductions:
        """One CG pass (see :mod:`dask_ssl.linalg.block_cg`): ``p`` direct calls."""
        alpha, beta = np.asarray(alpha, np.float64), np.asarray(beta, np.float64)
        active = np.asarray(active, bool)
        # The workers' update kernel, run on the send rows: the next p's halo values.
        rr, rz = np.empty(alpha.size), np.empty(alpha.size)
        for k, (x, r, p, q) in enumerate(zip(self._x, self._r, self._p, self._q)):
            if self.preconditioned:
                pcg_update(x, r, self._z[k], p, q, self._w[k], alpha, beta, active, rr, rz)
            else:
                cg_update(x, r, p, q, alpha, beta, active, rr)
        heads, got = self._product("p", self._p, (_head_update, (alpha, beta, active)),
                                   "finish")
        rr = sum(h[0] for h in heads)
        rz = sum(h[1] for h in heads) if self.preconditioned else None
        return self._finish(rr, rz, got)

    def restart(self) -> Reductions:
        """:meth:`start` again, seeded with the current ``X`` (after a CG breakdown)."""
        self.seeded = True
        self._x_send = self._x
        return self.start()[0]

    def solution(self) -> np.ndarray:
        """The current ``X``, gathered (n x c, the graph's row order)."""
        return self.op.gather(self.store, "x")

    def close(self) -> None:
        """Free the vectors on the workers."""
        self.op.release(self.store)
