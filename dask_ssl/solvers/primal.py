"""LapRLS and LapSVM (squared hinge) trained in the primal on kernel row blocks held by the workers.

Per column, with ``f = K alpha + b`` on all n rows (l of them labeled in that column),

    F(alpha, b) = 1/l sum_labeled V(y_i, f_i) + gamma_A alpha^T K alpha + gamma_I f^T M f,

``M = L^p`` of the graph. ``V`` is ``(y - f)^2`` without a bias (LapRLS: the minimizer solves
Eq 2.12, ``(J K + gamma_A l I + gamma_I l M K) alpha = Y``) or ``max(0, 1 - y f)^2`` with an
unregularized bias ``b`` (LapSVM with the squared hinge, as Melacci and Belkin train it in the
primal, JMLR 2011). ``gamma_I`` is the coefficient of ``f^T M f`` as given: the estimator folds in
the thesis's ``1/(u+l)^2`` or another normalization. A column is a class (one-vs-rest) or any other
system on the same kernel and graph: each may have its own labeled rows (and so its own ``l``) and
its own ``gamma_I``, so that cross-validation folds and ``gamma_I`` candidates run as columns of
one solve (a fold's held-out rows are unlabeled rows of its columns).

Solver. With the labeled rows inside the margin, ``E``, fixed, ``F`` is a quadratic whose Hessian
is ``2 G^T (J_E/l + gamma_I M) G + 2 gamma_A diag(K, 0)`` for ``G = [K, 1]``. Preconditioned by
``P = diag(K, 1)``, its gradient needs no product with ``K`` (``P^-1 grad / 2 = [w + gamma_A
alpha; 1^T w]`` with ``w = J_E (f - y)/l + gamma_I M f``, and ``f``, ``M f`` are kept up to date),
so a PCG iteration costs one product with ``K`` (of the preconditioned residual ``z``; the
direction's ``K d`` follows as ``K z + beta K d``) and one with ``M``: ``1 + p`` round trips,
``p`` for the Laplacian power (none when every column has ``gamma_I = 0``; columns with
``gamma_I = 0`` never enter it). The squared loss is one such solve.
The squared hinge runs Newton steps over ``E`` (each a PCG solve warm-started at the current
point, then an exact line search on the piecewise quadratic ``F``) until ``E`` stops changing.
Every column runs its own recurrences; the columns still moving share each product.

Stopping, per column: the relative residual ``sqrt(z^T P z) <= tol * |rhs|_{P^-1}`` (the
preconditioned norm; ``z^T P z = z_a^T K z_a + z_b^2`` comes with the product), or, with
``early_stopping``, the predictions on unlabeled rows settling: the PCG of a Newton step stops
once, over the last :data:`STABLE_ITERATIONS` iterations, at most :data:`STABLE_FRACTION` of the
column's unlabeled rows (those unlabeled in that column, a fold's held-out rows among them)
changed the sign of that column's ``f`` (Melacci and Belkin's stability check,
here tested after every iteration: ``f`` is kept on the driver, so the test costs no round trip).
The squared hinge's Newton loop applies the same test to its steps: a column whose solve ended
that way and whose step (solve and line search) changed at most that many signs stops.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..graph.laplacian import LaplacianOperator, apply_block, to_inner, to_outer
from ..graph.weights import Graph
from ..linalg.kernels import breakpoints_between, line_derivatives
from ..linalg.line_search import exact_root
from ..linalg.rowblocks import RowBlocks
from ..kernels.base import check_kernel
from ..kernels.blocks import DTYPES, KernelBlocks

LOSSES = ("squared", "squared_hinge")
#: Window (PCG iterations) and share of unlabeled rows of the early-stopping rule.
STABLE_ITERATIONS = 10
STABLE_FRACTION = 1e-3
#: Newton steps (active-set changes) at most, per column, for the squared hinge.
MAX_NEWTON = 50


@dataclass
class PrimalResult:
    """What :func:`solve_primal` returns.

    Attributes
    ----------
    alpha : ndarray of shape (n, c)
        Expansion coefficients, ``f(x) = sum_i alpha_i K(x_i, x) + b``.
    intercept : ndarray of shape (c,)
        ``b`` (zeros for the squared loss).
    decision : ndarray of shape (n, c)
        ``f`` on the training rows, from a final product with ``K``.
    objective : ndarray of shape (c,)
        ``F`` at the solution.
    n_iter : int
        PCG iterations (products with K inside the solves) over all Newton steps.
    n_newton : ndarray of int, shape (c,)
        Newton steps per column (1 for the squared loss).
    converged : ndarray of bool, shape (c,)
        The last solve reached ``tol`` (and, for the squared hinge, the active set settled).
    stopped_early : ndarray of bool, shape (c,)
        The last solve ended by the early-stopping rule.
    round_trips : int
        Calls to the workers, setup included (kernel rows, Laplacian operator).
    history : list of dict
        Per PCG iteration: ``newton`` step, ``residual`` (relative, per column moving),
        ``changed`` (unlabeled sign changes per column moving), ``columns`` moving.
    """

    alpha: np.ndarray
    intercept: np.ndarray
    decision: np.ndarray
    objective: np.ndarray
    n_iter: int
    n_newton: np.ndarray
    converged: np.ndarray
    stopped_early: np.ndarray
    round_trips: int
    history: list = field(default_factory=list)


def _check(blocks, graph, Y, labeled, gamma_A, gamma_I, loss, p, tol, max_iter, kernel,
           kernel_params, dtype):
    if not isinstance(blocks, RowBlocks):
        raise ValueError(f"blocks must be RowBlocks, got {type(blocks).__name__}")
    n = blocks.n_rows
    if not isinstance(graph, Graph):
        raise ValueError(f"graph must be a Graph, got {type(graph).__name__}")
    if graph.n_rows != n:
        raise ValueError(f"the graph has {graph.n_rows} rows but the data has {n}")
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 1:
        Y = Y[:, None]
    if Y.ndim != 2 or Y.shape[0] != n:
        raise ValueError(f"Y must have shape ({n}, c), got {Y.shape}")
    c = Y.shape[1]
    labeled = _per_column_mask(labeled, n, c)
    if not np.isfinite(Y).all():
        raise ValueError(f"Y has a non-finite value in row {int(np.argwhere(~np.isfinite(Y))[0, 0])}")
    bad = np.argwhere(labeled & (np.abs(Y) != 1.0))
    if bad.size:
        raise ValueError(f"Y must be +1 or -1 on labeled rows; row {int(bad[0, 0])}, column "
                         f"{int(bad[0, 1])} holds {Y[bad[0, 0], bad[0, 1]]}")
    if (Y[~labeled] != 0).any():
        raise ValueError("Y must be 0 on unlabeled rows")
    if not (np.isfinite(gamma_A) and gamma_A > 0):
        raise ValueError(f"gamma_A must be a positive number, got {gamma_A!r}")
    gamma_I = _per_column_weight(gamma_I, c)
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    if not isinstance(p, (int, np.integer)) or p < 1:
        raise ValueError(f"the Laplacian power p must be a positive integer, got {p!r}")
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be positive, got {tol!r}")
    if not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    if str(np.dtype(dtype)) not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    check_kernel(kernel, kernel_params)
    return Y, labeled, gamma_I


def _per_column_mask(labeled, n: int, c: int) -> np.ndarray:
    """``labeled`` as a boolean ``(n, c)`` array: an ``(n,)`` mask holds for every column."""
    labeled = np.asarray(labeled)
    if labeled.dtype != bool or labeled.shape not in ((n,), (n, c)):
        raise ValueError(f"labeled must be a boolean array of shape ({n},) or ({n}, {c})")
    if labeled.ndim == 1:
        labeled = np.repeat(labeled[:, None], c, axis=1)
    empty = np.flatnonzero(~labeled.any(axis=0))
    if empty.size:
        raise ValueError("no labeled rows" if c == 1 or empty.size == c
                         else f"no labeled rows in column {int(empty[0])}")
    return labeled


def _per_column_weight(gamma_I, c: int) -> np.ndarray:
    """``gamma_I`` as a float array of shape ``(c,)``: a scalar holds for every column."""
    values = np.asarray(gamma_I, dtype=np.float64)
    if values.ndim > 1 or (values.ndim == 1 and values.shape != (c,)):
        raise ValueError(f"gamma_I must be a number or an array of shape ({c},), got shape "
                         f"{values.shape}")
    if not (np.isfinite(values).all() and (values >= 0).all()):
        raise ValueError(f"gamma_I must be a non-negative number, got {gamma_I!r}")
    return np.broadcast_to(values, (c,)).copy()


def _lap_step(i, W, x, halo, token):
    s = {"x": to_inner(i, token, x)}
    apply_block(i, token, s, "x", "y", [halo])
    return to_outer(i, token, s["y"])


class _GraphProducts:
    """``M V`` through a :class:`LaplacianOperator` with ``V`` held here: ``p`` direct calls,
    each sending a block its rows and its halo rows (cut from ``V`` on the driver, so no call
    is spent collecting halos)."""

    def __init__(self, op: LaplacianOperator):
        self.op = op
        W = op.W
        self.slices = W.block_slices()
        self.halo = [np.concatenate([W.offsets[c] + op.halo_rows[b][c] for c in op.sources[b]]
                                    or [np.zeros(0, np.int64)]).astype(np.int64)
                     for b in range(W.n_blocks)]

    def __call__(self, V: np.ndarray) -> np.ndarray:
        X = self.op.to_block_order(V)
        for _ in range(self.op.p):
            X = np.vstack(self.op.W.call(_lap_step, self.op.token, per_block=[
                (X[s], X[h]) for s, h in zip(self.slices, self.halo)]))
        return self.op.from_block_order(X)


def _colsum(u, v):
    return np.einsum("ij,ij->j", u, v)


class _Problem:
    """The products, the data of the objective and the current point of every column.

    ``labeled`` is the ``(n, c)`` mask of each column's labeled rows, ``gamma_I`` the ``(c,)``
    graph weights."""

    def __init__(self, K: KernelBlocks, M, Y, labeled, gamma_A, gamma_I, bias, early_stopping):
        self.K, self.M, self.Y, self.labeled = K, M, Y, labeled
        self.gamma_A, self.gamma_I, self.bias = gamma_A, gamma_I, bias
        self.l = labeled.sum(axis=0).astype(np.float64)
        self.unlabeled = ~labeled
        self.early_stopping = early_stopping
        #: unlabeled sign changes the stability rule tolerates per column (per window, per
        #: Newton step)
        self.allowed = np.floor(STABLE_FRACTION * self.unlabeled.sum(axis=0)).astype(np.int64)
        #: the columns with a graph term: every product with M carries this many columns
        self.n_graph = int(np.count_nonzero(gamma_I > 0))
        # the rows labeled in some column; K on them gives the norm of every right-hand side
        # J_E Y / l, on the driver
        self.lab_rows = np.flatnonzero(labeled.any(axis=1))
        self.K_ll = K.submatrix(self.lab_rows, self.lab_rows)
        n, c = Y.shape
        self.alpha, self.b = np.zeros((n, c)), np.zeros(c)
        self.f, self.Mf = np.zeros((n, c)), np.zeros((n, c))
        self.history: list = []
        self.n_iter = 0

    def Mprod(self, V, cols):
        """``M V`` for ``V`` holding columns ``cols``; zeros, without a product, in the columns
        whose ``gamma_I`` is 0. The product always carries :attr:`n_graph` columns (zeros
        padding the ones at rest): the graph kernels are compiled per column count on each
        worker, and shrinking sets of moving columns would compile one for every count."""
        graph = np.flatnonzero(self.gamma_I[cols] > 0)
        if graph.size == self.n_graph == V.shape[1]:
            return self.M(V)
        out = np.zeros_like(V)
        if graph.size:
            padded = np.zeros((V.shape[0], self.n_graph))
            padded[:, :graph.size] = V[:, graph]
            out[:, graph] = self.M(padded)[:, :graph.size]
        return out

    def refresh(self, cols):
        """``f = K alpha + b`` and ``M f`` of columns ``cols`` by fresh products (the
        recurrences of the solves drift with round-off)."""
        f = self.K.matmat(self.alpha[:, cols]) + self.b[cols]
        self.f[:, cols] = f
        self.Mf[:, cols] = self.Mprod(f, cols)

    def active_rows(self, cols, f):
        """The labeled rows inside the margin (the squared hinge's quadratic piece), 0/1."""
        return (self.labeled[:, cols] & (self.Y[:, cols] * f < 1.0)).astype(np.float64)

    def residual(self, cols, alpha, f, Mf, mask, Y):
        """``z = -P^-1 grad / 2`` of the quadratic with active rows ``mask`` for columns
        ``cols``: (alpha part, bias part)."""
        w = mask * (f - Y) / self.l[cols] + self.gamma_I[cols] * Mf
        z_b = -w.sum(axis=0) if self.bias else np.zeros(w.shape[1])
        return -(w + self.gamma_A * alpha), z_b

    def rhs_norm2(self, cols, mask, Y):
        """``|rhs|^2`` in the ``P^-1`` norm: ``(J_E y/l)^T K (J_E y/l) + (1^T J_E y/l)^2``."""
        v = (mask * Y)[self.lab_rows] / self.l[cols]
        out = _colsum(v, self.K_ll @ v)
        return out + v.sum(axis=0) ** 2 if self.bias else out

    def pcg(self, cols, mask, tol, budget, newton):
        """PCG on the quadratic with active rows ``mask`` (``n x len(cols)``) from the current
        point of ``cols``; returns the end point ``(alpha, b, f, Mf)``, the columns that met
        ``tol`` and the ones stopped by the stability rule."""
        cols = np.asarray(cols)
        Y, unl, allowed = self.Y[:, cols], self.unlabeled[:, cols], self.allowed[cols]
        l, gamma_I = self.l[cols], self.gamma_I[cols]
        a, b = self.alpha[:, cols].copy(), self.b[cols].copy()
        f, Mf = self.f[:, cols].copy(), self.Mf[:, cols].copy()
        k = len(cols)
        ref = self.rhs_norm2(cols, mask, Y)
        ref = np.where(ref > 0, ref, 1.0)
        z_a, z_b = self.residual(cols, a, f, Mf, mask, Y)
        Kz = self.K.matmat(z_a)
        rho = _colsum(z_a, Kz) + z_b ** 2
        converged = rho <= tol * tol * ref
        stable = np.zeros(k, dtype=bool)
        d_a, d_b, Kd = z_a, z_b, Kz
        signs = np.signbit(f)
        changes = []
        it = 0
        while it < budget:
            act = np.flatnonzero(~converged & ~stable)
            if act.size == 0:
                break
            # step along d: needs M G d, G d = K d_a + d_b (p round trips)
            Gd = Kd[:, act] + d_b[act]
            MGd = self.Mprod(Gd, cols[act])
            kappa = (_colsum(mask[:, act] * Gd, Gd) / l[act]
                     + self.gamma_A * _colsum(d_a[:, act], Kd[:, act])
                     + gamma_I[act] * _colsum(Gd, MGd))
            eta = rho[act] / kappa
            a[:, act] += eta * d_a[:, act]
            b[act] += eta * d_b[act]
            f[:, act] += eta * Gd
            Mf[:, act] += eta * MGd
            it += 1
            new_signs = np.signbit(f)
            changed = ((new_signs != signs) & unl).sum(axis=0)
            signs = new_signs
            changes.append(changed)
            if self.early_stopping and it >= STABLE_ITERATIONS:
                recent = np.sum(changes[-STABLE_ITERATIONS:], axis=0)
                stable[act] = recent[act] <= allowed[act]
                act = np.flatnonzero(~converged & ~stable)
            if act.size:
                # next residual and direction: one product with K (one round trip)
                za, zb = self.residual(cols[act], a[:, act], f[:, act], Mf[:, act], mask[:, act],
                                       Y[:, act])
                Kz = self.K.matmat(za)
                rho_new = _colsum(za, Kz) + zb ** 2
                beta = rho_new / rho[act]
                rho[act] = rho_new
                d_a[:, act] = za + beta * d_a[:, act]
                d_b[act] = zb + beta * d_b[act]
                Kd[:, act] = Kz + beta * Kd[:, act]
                converged[act] = rho_new <= tol * tol * ref[act]
            self.history.append({"newton": newton, "columns": [int(cols[j]) for j in act],
                                 "residual": np.sqrt(np.maximum(rho, 0.0) / ref).tolist(),
                                 "changed": changed.tolist()})
        self.n_iter += it
        return (a, b, f, Mf), converged, stable

    def line_search(self, j, f_new, Mf_new, alpha_new, b_new) -> float:
        """Exact minimizer ``t >= 0`` of ``F`` (squared hinge) along the step to the solve's
        end point, column ``j``: ``F`` is a convex piecewise quadratic in ``t``."""
        f, Mf, alpha, b = self.f[:, j], self.Mf[:, j], self.alpha[:, j], self.b[j]
        D, MD, da, db = f_new - f, Mf_new - Mf, alpha_new - alpha, b_new - b
        lab = np.flatnonzero(self.labeled[:, j])
        y = self.Y[lab, j]
        l, gamma_I = self.l[j], self.gamma_I[j]
        cpos = np.where(y > 0, 2.0 / l, 0.0)
        cneg = np.where(y < 0, 2.0 / l, 0.0)
        o, dd, zero = f[lab], D[lab], np.zeros(lab.size)
        der, slope, _, _ = line_derivatives(o, dd, cpos, cneg, zero, zero, np.zeros(1))
        # regularizer part: K alpha = f - b, K delta = D - db
        der0 = der[0] + 2 * (self.gamma_A * da @ (f - b) + gamma_I * D @ Mf)
        slope0 = slope[0] + 2 * (self.gamma_A * da @ (D - db) + gamma_I * D @ MD)
        pos, change = breakpoints_between(o, dd, cpos, cneg, 0.0, np.inf)
        return exact_root(0.0, der0, slope0, pos, change, np.inf)

    def objective(self) -> np.ndarray:
        lab = self.lab_rows
        f, Y = self.f[lab], self.Y[lab]
        if self.bias:
            loss = np.maximum(0.0, 1.0 - f * Y) ** 2
        else:
            loss = (Y - f) ** 2
        return (np.where(self.labeled[lab], loss, 0.0).sum(axis=0) / self.l
                + self.gamma_A * _colsum(self.alpha, self.f - self.b)
                + self.gamma_I * _colsum(self.f, self.Mf))

    def set_point(self, cols, point):
        a, b, f, Mf = point
        self.alpha[:, cols], self.b[cols], self.f[:, cols], self.Mf[:, cols] = a, b, f, Mf


def solve_primal(blocks: RowBlocks, graph: Graph, Y, labeled, *, kernel="rbf",
                 kernel_params=None, gamma_A: float, gamma_I, loss: str = "squared",
                 normalized: bool = True, p: int = 1, tol: float = 1e-6, max_iter: int = 1000,
                 client=None, dtype: str = "float32", early_stopping: bool = True,
                 alpha0=None, intercept0=None, kernel_blocks: KernelBlocks | None = None
                 ) -> PrimalResult:
    """Minimize ``F`` (module docstring) for every column of ``Y`` on the workers.

    The columns share the kernel rows, the graph and every round trip; each may have its own
    labeled rows and ``gamma_I`` (e.g. cross-validation folds times candidate weights).

    Parameters
    ----------
    blocks : RowBlocks
        The rows ``x_1..x_n``, labeled and unlabeled. The kernel rows are computed and kept
        beside these blocks.
    graph : Graph
        The graph over the same n rows, same order (its blocks may differ).
    Y : ndarray of shape (n, c) or (n,)
        +1/-1 on a column's labeled rows (e.g. one-vs-rest columns), 0 elsewhere (the
        seeds' ``Y``).
    labeled : bool ndarray of shape (n,) or (n, c)
        The labeled rows of every column, or of each column; ``l`` is counted per column.
        Every column needs a labeled row.
    kernel, kernel_params
        As scikit-learn's ``pairwise_kernels`` takes them (seed: ``K``).
    gamma_A : float
        Weight of ``||f||_K^2 = alpha^T K alpha`` (seed ``gamma_A``), > 0.
    gamma_I : float or ndarray of shape (c,)
        Weight of ``f^T M f`` as it enters ``F``, >= 0, for every column or per column: the
        thesis's ``gamma_I/(u+l)^2`` is applied by the caller. 0 gives kernel RLS / the
        squared-hinge SVM (such columns never enter a product with ``M``).
    loss : {"squared", "squared_hinge"}
        LapRLS (no bias) or LapSVM with ``max(0, 1 - y f)^2`` and an unregularized bias.
    normalized : bool
        ``L = D^-1/2 (D - W) D^-1/2`` instead of ``D - W``.
    p : int
        ``M = L^p``.
    tol : float
        Relative residual of each PCG solve in the preconditioned norm.
    max_iter : int
        PCG iterations at most, over all Newton steps.
    client : distributed.Client, optional
        The client of ``blocks`` (default ``blocks.client``).
    dtype : {"float32", "float64"}
        Storage of the kernel rows (:class:`KernelBlocks`).
    early_stopping : bool
        Stop a column's solve when the signs on its unlabeled rows settle (module docstring);
        False runs every solve to ``tol``.
    alpha0, intercept0 : ndarray, optional
        Warm start (seeding).
    kernel_blocks : KernelBlocks, optional
        Kernel rows already on the workers (then ``kernel``, ``kernel_params``, ``dtype`` are
        theirs; they are not freed here).

    Returns
    -------
    PrimalResult
    """
    Y, labeled, gamma_I = _check(blocks, graph, Y, labeled, gamma_A, gamma_I, loss, p, tol,
                                 max_iter, kernel, kernel_params, dtype)
    n, c = Y.shape
    if alpha0 is not None and np.size(alpha0) != n * c:
        raise ValueError(f"alpha0 must have shape ({n}, {c}), got {np.shape(alpha0)}")
    if kernel_blocks is not None and kernel_blocks.n_rows != n:
        raise ValueError(f"kernel_blocks has {kernel_blocks.n_rows} rows but the data has {n}")
    client = client or blocks.client
    W_trips0 = graph.W.round_trips
    K = kernel_blocks or KernelBlocks(blocks, kernel=kernel, kernel_params=kernel_params,
                                      dtype=dtype)
    # building the rows took one round trip (counted below when built here)
    trips0 = K.rows.round_trips - (kernel_blocks is None)
    op = None
    try:
        M = None
        if (gamma_I > 0).any():
            op = LaplacianOperator(graph, normalized=normalized, p=int(p), partition=None)
            M = _GraphProducts(op)
        bias = loss == "squared_hinge"
        prob = _Problem(K, M, Y, labeled, float(gamma_A), gamma_I, bias, early_stopping)
        cols = np.arange(c)
        if alpha0 is not None:
            prob.alpha[:] = np.asarray(alpha0, dtype=np.float64).reshape(n, c)
            if bias and intercept0 is not None:
                prob.b[:] = np.asarray(intercept0, dtype=np.float64).reshape(c)
            prob.refresh(cols)
        n_newton = np.zeros(c, dtype=np.int64)
        converged = np.zeros(c, dtype=bool)
        stopped = np.zeros(c, dtype=bool)
        if not bias:
            mask = labeled.astype(np.float64)
            point, converged, stopped = prob.pcg(cols, mask, tol, max_iter, 0)
            prob.set_point(cols, point)
            n_newton[:] = 1
        else:
            _newton(prob, cols, tol, max_iter, n_newton, converged, stopped)
        prob.refresh(cols)
        return PrimalResult(prob.alpha, prob.b, prob.f.copy(), prob.objective(), prob.n_iter,
                            n_newton, converged, stopped,
                            K.rows.round_trips - trips0 + graph.W.round_trips - W_trips0,
                            prob.history)
    finally:
        if op is not None:
            op.close()
        if kernel_blocks is None:
            K.close()


def _newton(prob: _Problem, cols, tol, max_iter, n_newton, converged, stopped):
    """Squared hinge: Newton steps over the active set, each a warm-started PCG solve and an
    exact line search; a column stops when the solve's end point keeps its active set, or,
    with early stopping, when a solve ended by the stability rule and the whole Newton step
    changed the sign of at most ``prob.allowed`` of its unlabeled rows: the stability rule applied
    to Newton steps. (Solves cut short leave the labeled rows near the margin moving in and
    out of the active set, so without it the active set need not settle: at n = 50 k, 1%
    labeled, every column ran all :data:`MAX_NEWTON` steps.)"""
    todo = cols
    for step in range(MAX_NEWTON):
        if todo.size == 0 or prob.n_iter >= max_iter:
            return
        if step > 0:
            prob.refresh(todo)
        mask = prob.active_rows(todo, prob.f[:, todo])
        point, conv, stab = prob.pcg(todo, mask, tol, max_iter - prob.n_iter, step)
        a, b, f, Mf = point
        n_newton[todo] += 1
        settled = (prob.active_rows(todo, f) == mask).all(axis=0)
        keep = []
        for k, j in enumerate(todo):
            if settled[k]:
                prob.set_point([j], (a[:, [k]], b[[k]], f[:, [k]], Mf[:, [k]]))
                converged[j], stopped[j] = conv[k], stab[k]
                continue
            unl = prob.unlabeled[:, j]
            signs = np.signbit(prob.f[unl, j])
            t = prob.line_search(j, f[:, k], Mf[:, k], a[:, k], b[k])
            prob.set_point([j], tuple(old + t * (new - old) for old, new in zip(
                (prob.alpha[:, [j]], prob.b[[j]], prob.f[:, [j]], prob.Mf[:, [j]]),
                (a[:, [k]], b[[k]], f[:, [k]], Mf[:, [k]]))))
            if stab[k] and (np.signbit(prob.f[unl, j]) != signs).sum() <= prob.allowed[j]:
                stopped[j] = True
                continue
            keep.append(j)
        todo = np.array(keep, dtype=np.int64)
