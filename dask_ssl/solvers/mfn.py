"""Modified finite Newton (L2-SVM-MFN, thesis 6.2) on row blocks held by the workers.

Minimizes, over w (bias last, regularized like a feature, as svmlin does),

    f(w) = gamma_A/2 ||w||^2 + sum_i [ cpos_i/2 max(0, 1 - o_i)^2 + cneg_i/2 max(0, 1 + o_i)^2
                                     + csq_i/2 (o_i - tsq_i)^2 ],     o = [X, 1] w.

One labeled row with label y and cost c is ``cpos = c`` (y = +1) or ``cneg = c`` (y = -1); an
unlabeled row of the deterministic-annealing w-step carries both hinge terms (Eq 6.11); RLS uses
the squared term. The per-row costs live in worker-side state (see :mod:`.workerstate`) and are
set by the estimator that owns the run.

Round trips per Newton step: one to assemble the Newton system (the Gram matrix update on the
small-d path, the right-hand side on the CG path, plus one per CG iteration), one that moves to the
Newton point, runs svmlin's optimality check and evaluates phi' at a grid of step lengths, and at
most one more to fetch the breakpoints inside the bracketing interval for the exact line search.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from ..linalg import kernels, workerstate
from ..linalg.distinct import DistinctRows, distinct_rows
from ..linalg.line_search import exact_root
from ..linalg.rowblocks import RowBlocks

#: Step lengths evaluated in the first line-search round trip; Newton steps usually land near 1.
STEP_GRID = np.array([0.0, 1 / 16, 1 / 8, 1 / 4, 3 / 8, 1 / 2, 5 / 8, 3 / 4, 7 / 8, 1.0,
                      1.25, 1.5, 2.0, 4.0, 8.0, 16.0])
#: Breakpoints one interval may hold before the driver refines the grid instead of fetching them.
MAX_BREAKPOINTS = 200_000
#: Smallest breakpoints each block sends with the first line-search pass; when the minimizer
#: lies below every block's cut-off the search ends without another round trip.
EAGER_BREAKPOINTS = 2048


# worker side ------------------------------------------------------------------------------

def ws_init(i, X, arrays, token):
    """Create block ``i``'s state from per-row arrays (cpos, cneg and optionally csq, tsq, ...)."""
    n = X.shape[0]
    state = {k: np.asarray(v, dtype=np.float64) if k in ("cpos", "cneg", "csq", "tsq") else v
             for k, v in arrays.items()}
    for k in ("cpos", "cneg", "csq", "tsq"):
        state.setdefault(k, np.zeros(n))
    rows = distinct_rows(X)
    state["rows"] = rows
    state["U"] = rows.U if isinstance(rows, DistinctRows) else rows
    state["so"] = np.zeros(state["U"].shape[0])
    _solver_costs(state)
    workerstate.put(token, i, state)
    return n


def _solver_costs(st) -> None:
    """The costs per row of ``U``, the rows the solver works on.

    A block stored as its distinct rows (:mod:`.distinct`) has one output per distinct row:
    the loss terms of its copies add up to one term with their costs summed (the squared
    terms to one around their cost-weighted target, plus a constant), so every per-row pass
    (active set, loss, line search, optimality check) runs over the distinct rows only.
    """
    X = st["rows"]
    cpos, cneg, csq, tsq = st["cpos"], st["cneg"], st["csq"], st["tsq"]
    offset = 0.0
    if isinstance(X, DistinctRows):
        cpos, cneg = X.combine(cpos), X.combine(cneg)
        if csq.any():
            sq = X.combine(csq)
            target = X.combine(csq * tsq)
            tsq = np.divide(target, sq, out=np.zeros_like(sq), where=sq > 0)
            offset = 0.5 * (float(np.dot(st["csq"], st["tsq"] ** 2)) - float(np.dot(sq, tsq ** 2)))
            csq = sq
        else:
            csq = tsq = np.zeros(cpos.shape[0])
    st["scost"] = (cpos, cneg, csq, tsq)
    st["loss_offset"] = offset


def _loss(st, so) -> float:
    return kernels.loss_sum(so, *st["scost"]) + st["loss_offset"]


def _row_outputs(st, so) -> np.ndarray:
    """Per-row outputs from the solver's (one per distinct row)."""
    X = st["rows"]
    return X.gather(so) if isinstance(X, DistinctRows) else so


def _run_epilogue(i, X, st, so, epilogue):
    """The owner's epilogue, which reads per-row outputs ``st["o"]``, at the outputs ``so``."""
    st["o"] = _row_outputs(st, so)
    return epilogue[0](i, X, st, *epilogue[1:])


def final_outputs(st) -> np.ndarray:
    """A block's per-row outputs at the w the last solve returned (a converged solve leaves
    them as the Newton point's outputs, ``so_new``, without a round trip to move ``so``)."""
    return _row_outputs(st, st["so_new"] if "so_new" in st else st["so"])


def ws_assemble(i, X, prologue, token, w, step, bias, gram, full, at_w):
    st = workerstate.get(token, i)
    so_new = st.pop("so_new", None)
    if prologue is not None:
        # the owner's per-block update (new costs, switched labels) rides on this round trip
        prologue[0](i, X, st, *prologue[1:])
    if step is None:
        # a solve starts: the owner may have changed costs since the last one
        _solver_costs(st)
    U = st["U"]
    if at_w:
        # the last solve ended at w: its final outputs are the outputs at w, no product needed
        if so_new is not None:
            st["so"] = so_new
    elif step is None:
        st["so"] = kernels.matvec(U, w, bias)
    else:
        st["so"] = st["so"] + step * st["d"]
    so = st["so"]
    cpos, cneg, csq, tsq = st["scost"]
    a, b = kernels.active_weights(so, cpos, cneg, csq, tsq)
    loss = _loss(st, so)
    st["a"] = a
    if not gram:
        # CG path: with the right-hand side goes the normal product at the start point
        # (``a * o`` is its inner half), so CG's first residual needs no trip of its own
        rhs, product = kernels.rmatvec_pair(U, b, a * so, bias)
        return None, rhs, loss, product
    if not full and "a_prev" not in st:
        raise workerstate.StateLost(f"block {i} has no Gram bookkeeping to update")
    if full:
        rows = np.flatnonzero(a)
        G = kernels.gram_rows(U, rows, a[rows], bias, packed=True)
        rhs = kernels.rmatvec(U, b, bias)
    else:
        # Only rows whose weight or target changed (crossed a margin, switched label, new
        # cost) add to the driver's running sums; its periodic full rebuild bounds round-off.
        rows = np.flatnonzero(a != st["a_prev"])
        G = kernels.gram_rows(U, rows, a[rows] - st["a_prev"][rows], bias, packed=True)
        rows = np.flatnonzero(b != st["b_prev"])
        rhs = kernels.rmatvec_rows(U, rows, b[rows] - st["b_prev"][rows], bias)
    st["a_prev"], st["b_prev"] = a, b
    return G, rhs, loss, None


def sum_parts(parts: list) -> tuple:
    """Element-wise sum of per-block result tuples (``None`` entries stay ``None``): a worker
    returns one assembly result for all its blocks instead of one per block."""
    return tuple(None if col[0] is None else sum(col) for col in zip(*parts))


def ws_advance(i, X, token, step, epilogue=None):
    """Move the block's outputs to ``o + step d`` (exactly the Newton point's outputs for a
    full step); return its loss there and the epilogue's result (what the owner needs from
    the final outputs: switching candidates, p-step sums)."""
    st = workerstate.get(token, i)
    so_new = st.pop("so_new", None)
    st["so"] = so_new if step == 1.0 and so_new is not None else st["so"] + step * st["d"]
    loss = _loss(st, st["so"])
    return loss, (None if epilogue is None else _run_epilogue(i, X, st, st["so"], epilogue))


def ws_normal_product(i, X, token, p, bias):
    st = workerstate.get(token, i)
    return kernels.weighted_normal_product(st["U"], st["a"], p, bias)


def ws_direction(i, X, token, wbar, bias, deltas, tau, epilogue=None):
    """Newton point outputs, optimality check, and phi' on the step grid.

    When this block alone already passes the optimality check, the owner's epilogue runs on
    the Newton point's outputs here, speculatively: if every block passes, the solve ends on
    this round trip.
    """
    st = workerstate.get(token, i)
    so = st["so"]
    so_new = kernels.matvec(st["U"], wbar, bias)
    st["d"] = d = so_new - so
    cpos, cneg, csq, tsq = st["scost"]
    viol = kernels.margin_violations(so, so_new, cpos, cneg, tau)
    der, slope, val, counts = kernels.line_derivatives(so, d, cpos, cneg, csq, tsq, deltas)
    pos, change = kernels.breakpoints_between(so, d, cpos, cneg, 0.0, deltas[-1])
    if pos.size > EAGER_BREAKPOINTS:
        cut = float(np.partition(pos, EAGER_BREAKPOINTS)[EAGER_BREAKPOINTS])
        # keep everything below the cut-off: the list is then complete on (0, limit]
        keep = np.flatnonzero(pos < cut)
        eager = (pos[keep], change[keep], float(np.nextafter(cut, 0.0)))
    else:
        eager = (pos, change, float(deltas[-1]))
    extra = None
    if viol == 0:
        st["so_new"] = so_new
        if epilogue is not None:
            extra = _run_epilogue(i, X, st, so_new, epilogue)
    return viol, der, slope, val + st["loss_offset"], counts, extra, eager


def ws_grid(i, X, token, deltas):
    st = workerstate.get(token, i)
    der, slope, val, counts = kernels.line_derivatives(st["so"], st["d"], *st["scost"], deltas)
    return 0, der, slope, val + st["loss_offset"], counts


def ws_breakpoints(i, X, token, lo, hi):
    st = workerstate.get(token, i)
    cpos, cneg, _, _ = st["scost"]
    return kernels.breakpoints_between(st["so"], st["d"], cpos, cneg, lo, hi)


# driver side ------------------------------------------------------------------------------

class RidgeTerm:
    """The regularizer ``1/2 w^T R w`` of L2-SVM-MFN, ``R = gamma_A I`` (svmlin's, bias
    included).

    A solver asks it for ``R w``, the quadratic forms along a Newton direction (the exact line
    search), ``R`` as a matrix (small-d path) and the CG product ``(R + X^T A X) p``, and tells
    it where each solve starts and each step lands, so that a term whose products cost round
    trips can carry them along the steps. Another quadratic term is another object with these
    methods (the graph term of the linear Laplacian SVM:
    :class:`dask_ssl.models.linear_manifold.GraphTerm`).
    """

    def begin(self, w) -> None:
        """A solve starts at ``w``."""

    def moved(self, w, delta, direction):
        """The iterate after a line-search step of length ``delta`` along ``direction``."""
        return w + delta * direction

    def apply(self, gamma_A, w):
        """``R w`` at the current iterate ``w``."""
        return gamma_A * w

    def form(self, gamma_A, w, direction):
        """``(w^T R w, w^T R d, d^T R d)`` for the line search along ``d``."""
        return gamma_A * (w @ w), gamma_A * (w @ direction), gamma_A * (direction @ direction)

    def matrix(self, gamma_A, dim):
        """``R`` as a ``dim x dim`` matrix."""
        return gamma_A * np.eye(dim)

    def normal_product(self, gamma_A, p, solver):
        """``(R + X^T A X) p``: the data's part is ``solver``'s (one round trip)."""
        return gamma_A * p + solver.data_normal_product(p)


@dataclass
class MFNResult:
    w: np.ndarray
    objective: float
    n_newton: int
    n_cg: int
    converged: bool
    history: list = field(default_factory=list)
    extra: list = field(default_factory=list)


class MFNSolver:
    """Driver of L2-SVM-MFN over the worker-side state of one run.

    Parameters
    ----------
    blocks : RowBlocks
    token : str
        Run token under which :func:`ws_init` stored each block's state.
    bias : bool
        Append the constant feature (svmlin's regularized bias).
    gram : bool
        Small-d path: each block returns ``[X,1]^T A [X,1]`` and ``[X,1]^T b`` (updated
        incrementally between Newton steps, solves and stages by the rows whose weight or
        target changed, rebuilt every ``refresh_every`` assemblies to bound round-off) and
        the driver solves by Cholesky.
        Otherwise conjugate gradients on the normal equations, one round trip per iteration.
    tol : float
        tau of the stopping rule (6.2.3) and epsilon of CG (svmlin: 1e-6 both).
    regularizer : RidgeTerm, optional
        The quadratic term ``1/2 w^T R w``; default ``gamma_A I``.
    """

    def __init__(self, blocks: RowBlocks, token: str, *, bias: bool = True, gram: bool = True,
                 tol: float = 1e-6, cg_tol: float | None = None, max_newton: int = 100,
                 max_cg: int = 1000, refresh_every: int = 30, regularizer=None):
        self.reg = RidgeTerm() if regularizer is None else regularizer
        self.blocks = blocks
        self.token = token
        self.bias = bias
        self.gram = gram
        self.tol = tol
        self.cg_tol = tol if cg_tol is None else cg_tol
        self.max_newton = max_newton
        self.max_cg = max_cg
        self.refresh_every = refresh_every
        self.reset()

    def reset(self) -> None:
        """Forget the driver's Gram matrix (the workers' state was rebuilt)."""
        self._G = self._rhs = None
        self._assembles = 0
        # the w at which the workers' (final) outputs stand
        self._w_out = None

    @property
    def dim(self) -> int:
        return self.blocks.n_features + (1 if self.bias else 0)

    def data_normal_product(self, p):
        """``X^T A X p`` over the blocks' active rows (one round trip)."""
        return sum(self._map(ws_normal_product, p, self.bias, combine=sum))

    def _map(self, fn, *args, per_block=None, combine=None):
        return self.blocks.call(fn, self.token, *args, per_block=per_block, combine=combine)

    def _cg(self, gamma_A: float, rhs: np.ndarray, w0: np.ndarray,
            product_w0: np.ndarray) -> tuple[np.ndarray, int]:
        """Conjugate gradients on ``(gamma_A I + X^T A X) w = rhs`` seeded with ``w0``;
        ``product_w0`` is ``X^T A X w0``, computed in the assembly trip.

        (A Jacobi preconditioner took more iterations on the RCV1-like TSVM, 1467 trips
        against 1256: the rows are l2-normalized and the diagonal says little.)"""
        w = w0.copy()
        r = rhs - (self.reg.apply(gamma_A, w) + product_w0)
        target = self.cg_tol * max(np.linalg.norm(rhs), 1e-300)
        p = r.copy()
        rr = r @ r
        it = 0
        while np.sqrt(rr) > target and it < self.max_cg:
            q = self.reg.normal_product(gamma_A, p, self)
            alpha = rr / (p @ q)
            w += alpha * p
            r -= alpha * q
            rr_new = r @ r
            p = r + (rr_new / rr) * p
            rr = rr_new
            it += 1
        return w, it

    def _reduce_grid(self, parts, w, direction, gamma_A, deltas):
        viol = sum(int(p[0]) for p in parts)
        der = np.sum([p[1] for p in parts], axis=0)
        slope = np.sum([p[2] for p in parts], axis=0)
        val = np.sum([p[3] for p in parts], axis=0)
        counts = np.sum([p[4] for p in parts], axis=0)
        ww, wd, dd = self.reg.form(gamma_A, w, direction)
        der = der + wd + deltas * dd
        slope = slope + dd
        # (w + delta d)^T R (w + delta d) expanded: no grid x d array on the driver
        val = val + 0.5 * (ww + 2.0 * deltas * wd + deltas ** 2 * dd)
        return viol, der, slope, val, counts

    def _line_search(self, w, direction, gamma_A, grid, eager) -> float:
        """Exact minimizer of phi(delta) = f(w + delta direction) given the first grid pass
        and the smallest breakpoints of each block (complete below ``min(cut-offs)``)."""
        deltas = STEP_GRID
        _, der, slope, _, counts = grid
        while True:
            above = np.flatnonzero(der >= 0.0)
            if above.size:
                k = int(above[0])
                if k == 0:
                    return 0.0
                lo, hi = float(deltas[k - 1]), float(deltas[k])
                if counts[k] <= MAX_BREAKPOINTS or hi - lo <= 1e-12 * max(hi, 1.0):
                    break
                deltas = np.linspace(lo, hi, 17)
            else:
                deltas = np.geomspace(deltas[-1], deltas[-1] * 1e4, 16)
            _, der, slope, _, counts = self._reduce_grid(
                self._map(ws_grid, deltas), w, direction, gamma_A, deltas)
        if counts[k] == 0:
            return float(min(lo - der[k - 1] / slope[k - 1], hi))
        if hi <= min(e[2] for e in eager):
            positions = np.concatenate([e[0] for e in eager])
            changes = np.concatenate([e[1] for e in eager])
            inside = (positions > lo) & (positions <= hi)
            return exact_root(lo, float(der[k - 1]), float(slope[k - 1]), positions[inside],
                              changes[inside], hi)
        parts = self._map(ws_breakpoints, lo, hi)
        positions = np.concatenate([p[0] for p in parts])
        changes = np.concatenate([p[1] for p in parts])
        return exact_root(lo, float(der[k - 1]), float(slope[k - 1]), positions, changes, hi)

    def solve(self, w0: np.ndarray | None, gamma_A: float, *, prologue=None,
              epilogue=None, checkpoint=None) -> MFNResult:
        """Run Newton steps from ``w0`` (zeros if None) until the active set is stable.

        ``prologue``, a list with one ``(fn, *args)`` per block, runs ``fn(i, X, state, *args)``
        on each block's worker-side state before the first Newton system is assembled (in
        the same round trip). ``epilogue`` ``(fn, *args)`` runs the same way on the final
        outputs; its per-block results are returned in ``MFNResult.extra``.

        ``checkpoint`` (a :class:`~dask_ssl.loop.NewtonCheckpoint`) makes the solve resumable:
        the state after every Newton step and the result are saved; a state it loads is
        continued from (``w0`` ignored), a finished one returned as it is. Not with a prologue
        or an epilogue, whose effects on the workers' state a checkpoint does not hold.
        """
        if checkpoint is not None and (prologue is not None or epilogue is not None):
            raise ValueError("a checkpointed solve takes no prologue or epilogue")
        saved = None if checkpoint is None else checkpoint.load()
        if saved is not None and saved["done"]:
            self._w_out = None
            return MFNResult(saved["w"], saved["objective"], saved["steps"], saved["n_cg"],
                             saved["converged"], saved["history"])
        w = np.zeros(self.dim) if w0 is None else np.asarray(w0, dtype=np.float64).copy()
        at_w = w0 is not None and self._w_out is not None and np.array_equal(w, self._w_out)
        start, step, n_cg, history = 0, None, 0, []
        if saved is not None:
            if saved["steps"] >= self.max_newton:
                raise ValueError(f"the checkpoint holds {saved['steps']} Newton steps, as many "
                                 f"as max_newton = {self.max_newton} allows")
            # the workers' outputs are recomputed from w (step None) in the first round trip
            w, at_w = saved["w"].copy(), False
            start, n_cg, history = saved["steps"], saved["n_cg"], list(saved["history"])
        self._epilogue = epilogue
        self.reg.begin(w)
        for it in range(start, self.max_newton):
            # The Gram matrix carries over between solves (switches, stages): only rows whose
            # cost or side of the margin changed are sent, with a full rebuild now and then.
            full = self._G is None or self._assembles % self.refresh_every == 0
            self._assembles += 1
            pro = prologue if (it == 0 and prologue is not None) else [None] * self.blocks.n_blocks
            per_block = [(p,) for p in pro]
            parts = self._map(ws_assemble, w, step, self.bias, self.gram, full, at_w and it == 0,
                              per_block=per_block, combine=sum_parts)
            loss = sum(p[2] for p in parts)
            history.append(0.5 * (w @ self.reg.apply(gamma_A, w)) + loss)
            if self.gram:
                dG = kernels.unpack_symmetric(np.sum([p[0] for p in parts], axis=0), self.dim)
                d_rhs = np.sum([p[1] for p in parts], axis=0)
                self._G = dG if full else self._G + dG
                self._rhs = d_rhs if full else self._rhs + d_rhs
                H = self._G + self.reg.matrix(gamma_A, self.dim)
                wbar = scipy.linalg.cho_solve(scipy.linalg.cho_factor(H), self._rhs)
            else:
                rhs = np.sum([p[1] for p in parts], axis=0)
                wbar, k = self._cg(gamma_A, rhs, w, np.sum([p[3] for p in parts], axis=0))
                n_cg += k
            direction = wbar - w
            parts = self._map(ws_direction, wbar, self.bias, STEP_GRID, self.tol, epilogue)
            grid = self._reduce_grid(parts, w, direction, gamma_A, STEP_GRID)
            if grid[0] == 0:
                # every block passed the check: outputs and epilogue at wbar are in hand
                objective = float(grid[3][int(np.flatnonzero(STEP_GRID == 1.0)[0])])
                history.append(objective)
                self._w_out = wbar
                return self._saved(checkpoint, MFNResult(wbar, objective, it + 1, n_cg, True,
                                                         history, [p[5] for p in parts]))
            delta = self._line_search(w, direction, gamma_A, grid, [p[6] for p in parts])
            w = self.reg.moved(w, delta, direction)
            step = delta
            if checkpoint is not None:
                checkpoint.save({"steps": it + 1, "w": w, "n_cg": n_cg, "history": history})
        return self._saved(checkpoint, self._finish(w, step, gamma_A, self.max_newton, n_cg,
                                                    False, history))

    @staticmethod
    def _saved(checkpoint, res: MFNResult) -> MFNResult:
        """``res``, saved as the solve's end when there is a checkpoint."""
        if checkpoint is not None:
            checkpoint.save({"steps": res.n_newton, "w": res.w, "n_cg": res.n_cg,
                             "history": res.history, "objective": res.objective,
                             "converged": res.converged})
        return res

    def _finish(self, w, step, gamma_A, n_newton, n_cg, converged, history) -> MFNResult:
        """Leave the workers' outputs at the returned w; the objective is evaluated there."""
        parts = self._map(ws_advance, step, self._epilogue)
        objective = float(0.5 * (w @ self.reg.apply(gamma_A, w)) + sum(p[0] for p in parts))
        history.append(objective)
        self._w_out = w
        return MFNResult(w, objective, n_newton, n_cg, converged, history,
                         [p[1] for p in parts])
