"""Sparse manifold regularization on a basis of kernel functions (thesis ch. 5, Eq 5.1-5.9).

Plain functions over arrays; :class:`dask_ssl.models.SparseLapRLS` is the shell. Units are the
thesis' chapter 5 (Eq 5.1): ``a/2 ||f||_K^2 + g/2 f^T M f + 1/2 sum_L (y_i - f_i)^2``, with
``a`` its gamma_A, ``g`` its gamma_I and ``nu`` the slack coupling (Eq 5.7). On a basis ``J``
(``f = K_NJ beta``, ``o = K_NJ beta`` the outputs on all ``n`` rows) each method's objective,
after anything not in ``beta`` is minimized out, is one quadratic

    R(beta) = c0 + a/2 beta^T K_JJ beta + 1/2 o^T Q o - r^T o                      (*)

per target column, so one greedy / l1 / fixed-basis machinery serves all of them
(:class:`Quadratic`):

- restricted LapRLS (Eq 5.2): ``Q = g M + I_L``, ``r = Ybar``;
- the slack method (Eq 5.7) with ``f`` minimized out exactly: ``Q = nu I - nu^2 A^-1``,
  ``r = nu A^-1 Ybar``, ``A = g M + I_L + nu I`` the f-step's matrix (Eq 5.8); ``Q`` is
  ``nu A^-1 (g M + I_L)``, positive semidefinite;
- the supervised fit of the fully decoupled method to graph-transduction scores ``F``:
  ``a/2 beta^T K_JJ beta + nu/2 ||F - o||^2``, ``Q = nu I``, ``r = nu F``.

The f-systems ``(g M + diag(fidelity)) F = B`` are solved by :class:`FSystem`: a sparse LU on
the driver, or :func:`~dask_ssl.solvers.graph.solve_graph_system` (block CG on the workers,
warm-started) for a graph held there. ``M`` itself is a CSR matrix on the driver, or
:class:`WorkerRegularizer`, whose products run on the workers: every function here only
multiplies by it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgError, cho_factor, cho_solve, solve_triangular
from scipy.sparse.linalg import splu

from ..graph.laplacian import LaplacianOperator
from ..kernels.base import kernel_matrix
from ..linalg.block_cg import on_moving_columns
from .graph import solve_graph_system
from .greedy_state import DriverState
from .laplacian_power import LaplacianPower, solve_power_system

#: Up to this many rows the f-system is factored dense on the driver (Cholesky: one BLAS-3
#: solve for many columns; a sparse LU of ``L^p`` with p > 1 or hub rows fills in anyway), and
#: the whole Gram matrix is computed once instead of column by column.
DENSE_MAX_ROWS = 3000
#: A candidate whose Cholesky pivot is below this share of its own curvature ``h_j`` lies in
#: the span of the basis (to round-off): it is dropped from the pool.
PIVOT_TOL = 1e-10


class KernelColumns:
    """Columns ``K(X, X[idx])`` of the Gram matrix of the training rows, computed on demand
    (the greedy methods never form ``K``)."""

    def __init__(self, X, kernel, kernel_params):
        self.X, self.kernel, self.kernel_params = X, kernel, kernel_params
        self.n = X.shape[0]
        self.evaluated = 0
        self._K = None
        if self.n <= DENSE_MAX_ROWS:
            self._K = kernel_matrix(X, kernel=kernel, kernel_params=kernel_params)

    def __call__(self, idx) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        self.evaluated += idx.size
        if self._K is not None:
            return self._K[:, idx]
        return kernel_matrix(self.X, self.X[idx], kernel=self.kernel,
                             kernel_params=self.kernel_params)


class WorkerRegularizer:
    """``M = L^p`` of a graph held on the workers, as far as ``M @ V`` goes: each product is
    the :class:`~dask_ssl.graph.laplacian.LaplacianOperator`'s halo exchange (the vectors go
    out and back, the graph stays), so ``M`` is never gathered to the driver. One operator
    serves a whole fit; :meth:`close` frees it on the workers."""

    def __init__(self, graph, *, normalized=True, p=1):
        self.op = LaplacianOperator(graph, normalized=normalized, p=p)
        self.shape = (graph.n_rows, graph.n_rows)
        self.products = 0   # columns multiplied

    def __matmul__(self, V):
        out, columns = on_moving_columns(self.op.matmat, V)
        self.products += columns
        return out

    def close(self) -> None:
        self.op.close()


class FSystem:
    """Solves ``(g M + diag(fidelity)) F = B`` for the columns of ``B``.

    ``graph=None``: one factorization of the matrix on the driver, reused by every solve (the
    matrix does not change during a fit): dense Cholesky up to :data:`DENSE_MAX_ROWS` rows,
    a sparse LU beyond; for ``M`` a :class:`~.laplacian_power.LaplacianPower` (``L^p`` not
    formed) block CG on the driver instead, started from ``X0``. With a :class:`~dask_ssl.graph.weights.Graph` on the
    workers: each solve is :func:`~dask_ssl.solvers.graph.solve_graph_system` (the
    GraphTransduction solver: block CG, block-Jacobi preconditioner), started from ``X0``;
    ``M`` is then unused, and when it is a :class:`WorkerRegularizer` of that graph its
    operator serves every solve (set up once, not once a solve).
    """

    def __init__(self, M, fidelity, g, *, graph=None, normalized=True, p=1, tol=1e-8,
                 max_iter=2000):
        self.fidelity = np.asarray(fidelity, dtype=np.float64)
        self.g, self.graph = float(g), graph
        self.normalized, self.p, self.tol, self.max_iter = normalized, int(p), tol, max_iter
        self.n = self.fidelity.size
        self.solves = 0      # columns solved
        self.cg_passes = 0   # block CG passes (workers)
        self._lu = self._cho = None
        self._op = M.op if isinstance(M, WorkerRegularizer) and graph is not None else None
        self._power = M if isinstance(M, LaplacianPower) and graph is None else None
        if graph is None and self._power is None:
            A = self.g * sp.csc_matrix(M) + sp.diags(self.fidelity)
            if self.n <= DENSE_MAX_ROWS:
                self._cho = cho_factor(A.toarray(), lower=True)
            else:
                self._lu = splu(sp.csc_matrix(A))

    @property
    def factored(self) -> bool:
        """Whether a solve is a factor's triangular sweeps (not an iterative solve)."""
        return self._cho is not None or self._lu is not None

    def solve(self, B, X0=None) -> np.ndarray:
        B = np.asarray(B, dtype=np.float64)
        B2 = B.reshape(self.n, -1)
        self.solves += B2.shape[1]
        if self._cho is not None:
            F = cho_solve(self._cho, B2)
        elif self._power is not None:
            X0 = None if X0 is None else np.asarray(X0, dtype=np.float64).reshape(B2.shape)
            F, passes = solve_power_system(self._power, self.g, self.fidelity, B2, X0=X0,
                                           tol=self.tol, max_iter=self.max_iter)
            self.cg_passes += passes
        elif self.graph is None:
            F = self._lu.solve(B2)
        else:
            X0 = None if X0 is None else np.asarray(X0, dtype=np.float64).reshape(B2.shape)
            sol = solve_graph_system(self.graph, self.fidelity, B2, gamma_I=self.g,
                                     normalized=self.normalized, p=self.p, partition=None,
                                     tol=self.tol, max_iter=self.max_iter, X0=X0, op=self._op)
            self.cg_passes += int(np.max(sol.cg.n_iter))
            F = sol.F
        return F.reshape(B.shape)


@dataclass
class Quadratic:
    """``R(beta)`` of (*): ``a``, the operator ``Q`` (``(n, m) -> (n, m)``), ``r`` of shape
    ``(n, n_columns)`` and the constant ``c0`` per column, so that ``R`` is the method's
    objective (in the thesis' units) at its minimum over everything but ``beta``.

    ``curvature`` (``(n, m) -> (m,)``): ``k^T Q k`` per column, or an upper bound of it where
    ``Q`` is costly to apply (the slack method's ``Q`` with an iterative f-solve: a solve a
    column). The greedy scores its ``kappa`` candidates with it and applies ``Q`` only to the
    one it keeps."""

    a: float
    Q: object
    r: np.ndarray
    c0: np.ndarray
    curvature: object

    def objective(self, KNJ, KJJ, beta) -> np.ndarray:
        """``R(beta)`` per column, computed from scratch (tests, checks)."""
        o = KNJ @ beta
        return (self.c0 + 0.5 * self.a * np.einsum("ic,ic->c", beta, KJJ @ beta)
                + 0.5 * np.einsum("ic,ic->c", o, self.Q(o)) - np.einsum("ic,ic->c", self.r, o))


def laprls_quadratic(M, labeled, Ybar, a, g) -> Quadratic:
    """Restricted LapRLS, Eq 5.2: ``Q = g M + I_L``, ``r = Ybar`` (labels on labeled rows, 0
    elsewhere), ``c0 = 1/2 ||Y||^2``."""
    lab = np.asarray(labeled, dtype=np.float64)[:, None]
    return Quadratic(a, lambda V: g * (M @ V) + lab * V, Ybar,
                     0.5 * np.sum(Ybar ** 2, axis=0),
                     curvature=lambda V: g * quadratic_form(M, V) + np.sum(lab * V ** 2, axis=0))


def quadratic_form(M, V) -> np.ndarray:
    """``v^T M v`` per column of ``V``; for ``M = L^p`` applied as a power, in about half
    the products (:meth:`~.laplacian_power.LaplacianPower.quadratic_form`)."""
    if isinstance(M, LaplacianPower):
        return M.quadratic_form(V)
    return np.einsum("im,im->m", V, M @ V)


def slack_quadratic(fsys: FSystem, Ybar, a, nu, M, labeled) -> Quadratic:
    """The slack objective (Eq 5.7) with ``f`` minimized out: for fixed ``beta`` the best ``f``
    is the f-step's ``A^-1 (Ybar + nu o)`` (Eq 5.8), and what is left is (*) with
    ``Q = nu I - nu^2 A^-1``, ``r = nu A^-1 Ybar``, ``c0 = 1/2 ||Y||^2 - 1/2 Ybar^T A^-1 Ybar``.
    ``fsys`` solves with ``A = g M + I_L + nu I``.

    ``Q`` is applied as ``nu A^-1 (g M + I_L) V``, its equal: on unlabeled rows where ``g M``
    is small against ``nu`` the difference ``nu V - nu^2 A^-1 V`` cancels to a small part of
    ``V``, and an iterative solve's relative error in ``A^-1 V`` would become that part's
    error (the greedy's pivots and ``H_JJ`` then go wrong).

    The candidates' curvatures are exact where ``fsys`` holds a factor (a solve is then two
    triangular sweeps). Where it solves by CG they are the upper bound of
    :func:`_slack_curvature` (no solve): with the exact gradient a score is then at most
    twice the candidate's exact decrease, and the candidate kept gets its exact ``Q k``, one
    f-solve a step instead of ``kappa``. (The thesis holds ``f`` to score, the curvature
    ``nu ||k||^2``, and refines each candidate by 50 CG iterations; held ``f`` alone ranks
    poorly where ``g M`` is large against ``nu``.)"""
    lab = np.asarray(labeled, dtype=np.float64)[:, None]
    g = fsys.g

    def Q(V):
        return nu * fsys.solve(g * (M @ V) + lab * V)

    AY = fsys.solve(Ybar)
    curvature = ((lambda V: np.einsum("im,im->m", V, Q(V))) if fsys.factored
                 else (lambda V: _slack_curvature(V, M, lab, g, nu)))
    return Quadratic(a, Q, nu * AY,
                     0.5 * np.sum(Ybar ** 2, axis=0) - 0.5 * np.sum(Ybar * AY, axis=0),
                     curvature=curvature)


def _slack_curvature(V, M, lab, g, nu) -> np.ndarray:
    """Upper bound of ``v^T Q v`` for the slack ``Q = phi(P)``, ``P = g M + I_L``,
    ``phi(q) = nu q / (q + nu)``: ``phi`` is concave, so (Jensen, over the spectral measure of
    ``v``) ``v^T phi(P) v <= ||v||^2 phi(v^T P v / ||v||^2)``, below both ``v^T P v`` and
    ``nu ||v||^2``; ``ceil(p / 2)`` products with ``L`` and no solve."""
    vv = np.sum(V ** 2, axis=0)
    vpv = g * quadratic_form(M, V) + np.sum(lab * V ** 2, axis=0)
    return nu * vv * vpv / np.maximum(vpv + nu * vv, np.finfo(float).tiny)


def regression_quadratic(F, a, nu) -> Quadratic:
    """The decoupled method's supervised fit to scores ``F`` on every row:
    ``a/2 beta^T K_JJ beta + nu/2 ||F - K_NJ beta||^2`` (only ``a / nu`` matters)."""
    return Quadratic(a, lambda V: nu * V, nu * F, 0.5 * nu * np.sum(F ** 2, axis=0),
                     curvature=lambda V: nu * np.sum(V ** 2, axis=0))


@dataclass
class BasisFit:
    """A basis and the minimizer of (*) on it.

    ``basis``: row indices in the order they entered; ``beta`` (d, n_columns); ``objective``
    per column (thesis units); ``history``: the objective (summed over columns) after each
    basis function entered (greedy); ``KNJ``: the basis' kernel columns; ``gamma_S``: the l1
    weight at which the path reached the basis (``basis="lasso"/"lars"``, per column);
    ``factor`` and ``rhs`` (greedy): the lower Cholesky factor of ``H_JJ`` and ``K_JN r`` in
    the order of entry, from which every prefix of the basis has its minimizer
    (:func:`prefix_coefs`)."""

    basis: np.ndarray
    beta: np.ndarray
    objective: np.ndarray
    KNJ: np.ndarray
    history: list = field(default_factory=list)
    gamma_S: list | None = None
    factor: np.ndarray | None = None
    rhs: np.ndarray | None = None


def prefix_coefs(fit: BasisFit, k: int) -> np.ndarray:
    """The minimizer of (*) on the first ``k`` functions of a greedy basis, shape
    ``(k, n_columns)``: ``H_JJ`` of a prefix is the leading block of the whole basis' and its
    Cholesky factor the leading block of the factor, so no new solve of ``Q`` is needed."""
    return cho_solve((fit.factor[:k, :k], True), fit.rhs[:k])


def candidate_scores(quad: Quadratic, Kc, cand, KNJ, beta, basis):
    """Post-backfitting scores of the candidate columns ``Kc = K_Nc`` with ``beta`` fixed at
    the minimizer on ``basis``, as :func:`greedy_basis` ranks them: ``(score, grad, h)``.

    ``grad[j] = a K_jJ beta + k_j^T (Q o - r)`` is the derivative of (*) in the new coefficient
    ``beta_j`` at 0, ``h[j] = a K_jj + k_j^T Q k_j`` its second derivative (or the bound of
    ``Quadratic.curvature``), and ``score = sum_columns grad^2 / h``: the best
    one-dimensional step ``beta_j = -grad / h`` lowers ``R`` by ``grad^2 / (2 h)``, so the
    score is twice the decrease (thesis 5.1.1); with the bound, at most twice the decrease.
    """
    cand = np.asarray(cand, dtype=np.int64)
    o = KNJ @ beta
    kjj = Kc[cand, np.arange(cand.size)]
    h = quad.a * kjj + quad.curvature(Kc)
    grad = quad.a * (Kc[basis].T @ beta) + Kc.T @ (quad.Q(o) - quad.r) if len(basis) else \
        -Kc.T @ quad.r
    return np.sum(grad ** 2, axis=1) / h, grad, h


def greedy_basis(quad: Quadratic, columns: KernelColumns, d: int, kappa: int, rng,
                 *, history=True, state=None) -> BasisFit:
    """Kernel matching pursuit with post-backfitting (thesis 5.1.1): ``d`` steps, each scoring
    ``kappa`` random candidates outside the basis by ``grad^2 / h`` (:func:`candidate_scores`,
    ``h`` from ``Quadratic.curvature``) and adding the best; ``beta`` is then the exact
    minimizer on the grown basis, by a Cholesky factor of ``H_JJ = a K_JJ + K_JN Q K_NJ``
    extended by one row a step. A step evaluates ``kappa`` kernel columns and applies ``Q``
    to the one kept: ``K_JN Q K_Nc`` is ``(Q K_NJ)^T K_Nc`` (``Q`` symmetric), from the basis'
    images kept; nothing ``n x n`` is formed.

    ``state`` keeps the ``n``-row quantities (the basis' columns, their images ``Q K_NJ``,
    ``Q o``) and computes the candidates' columns and the step's reductions: a
    :class:`~dask_ssl.solvers.greedy_state.BlockState` on the workers beside the row blocks,
    or by default a :class:`~dask_ssl.solvers.greedy_state.DriverState` over ``columns``."""
    n, c = quad.r.shape
    if state is None:
        state = DriverState(columns, quad.r, d)
    chol = np.zeros((d, d))
    b = np.zeros((d, c))
    beta = np.zeros((0, c))
    available = np.ones(n, dtype=bool)
    trace = []
    while len(state.basis) < d and available.any():
        k = len(state.basis)
        pool = np.flatnonzero(available)
        cand = rng.choice(pool, min(kappa, pool.size), replace=False)
        Kc = state.candidates(cand)
        kjj = Kc[cand, np.arange(cand.size)]
        h = quad.a * kjj + quad.curvature(Kc)
        KJc, JQc, residual = state.reductions()
        if k:
            grad = quad.a * (KJc.T @ beta) + residual
            cross = quad.a * KJc + JQc                                  # H_Jc, (k, m)
            w = solve_triangular(chol[:k, :k], cross, lower=True)
            pivot = h - np.sum(w ** 2, axis=0)
        else:
            grad = residual
            w, pivot = np.zeros((0, cand.size)), h
        # with h an upper bound the pivots are too: a candidate failing here lies in the span
        ok = pivot > PIVOT_TOL * np.maximum(h, np.finfo(float).tiny)
        available[cand[~ok]] = False
        if not ok.any():
            continue
        score = np.where(ok, np.sum(grad ** 2, axis=1) / np.where(ok, h, 1.0), -np.inf)
        j = int(np.argmax(score))
        available[cand[j]] = False
        Qk = quad.Q(Kc[:, [j]])[:, 0]
        hj = quad.a * kjj[j] + Kc[:, j] @ Qk
        pivot_j = hj - w[:, j] @ w[:, j]
        if not pivot_j > PIVOT_TOL * max(hj, np.finfo(float).tiny):
            continue
        chol[k, :k] = w[:, j]
        chol[k, k] = np.sqrt(pivot_j)
        b[k] = Kc[:, j] @ quad.r
        beta = cho_solve((chol[:k + 1, :k + 1], True), b[:k + 1])
        state.accept(j, int(cand[j]), Qk, beta)
        if history:
            trace.append(float(np.sum(quad.c0 - 0.5 * np.sum(b[:k + 1] * beta, axis=0))))
    d = len(state.basis)
    objective = quad.c0 - 0.5 * np.sum(b[:d] * beta, axis=0)
    return BasisFit(np.asarray(state.basis, dtype=np.int64), beta, objective,
                    state.basis_columns(), trace, factor=chol[:d, :d], rhs=b[:d])


def fit_on_basis(quad: Quadratic, columns: KernelColumns, basis) -> BasisFit:
    """The minimizer of (*) on a given basis: one ``d x d`` solve (Cholesky; a least-squares
    solve when ``H_JJ`` is singular to round-off, e.g. repeated rows)."""
    basis = np.asarray(basis, dtype=np.int64)
    KNJ = columns(basis)
    H = quad.a * KNJ[basis] + KNJ.T @ quad.Q(KNJ)
    H = (H + H.T) * 0.5
    b = KNJ.T @ quad.r
    try:
        beta = cho_solve(cho_factor(H, lower=True), b)
    except LinAlgError:
        beta = np.linalg.lstsq(H, b, rcond=None)[0]
    objective = quad.c0 + 0.5 * np.sum(beta * (H @ beta), axis=0) - np.sum(b * beta, axis=0)
    return BasisFit(basis, beta, objective, KNJ)


def l1_basis(quad: Quadratic, columns: KernelColumns, d: int, method: str):
    """``(basis, gamma_S)`` from the l1 path of ``R(beta) + gamma_S ||beta||_1`` over all
    ``n`` basis functions (thesis 5.1.2), by scikit-learn's :func:`~sklearn.linear_model.lars_path`
    (``method="lasso"``: the Lasso path, indices may leave; ``"lar"``: LARS, they never do).

    ``R`` is brought to least squares: with ``H = a K + K Q K = V diag(w) V^T`` (its positive
    part), ``Z = diag(sqrt w) V^T`` and ``t = diag(1/sqrt w) V^T K r`` give
    ``R(beta) = 1/2 ||t - Z beta||^2 + const``; the path in scikit-learn's ``alpha`` is
    ``gamma_S / n_rows(Z)``. The basis is the support where the path first holds ``d``
    functions (fewer if the path ends before); for several target columns, their supports in
    the order of entry, taken in turn. ``O(n^3)``: small problems only, as the thesis says.
    """
    from sklearn.linear_model import lars_path

    n = columns.n
    K = columns(np.arange(n))
    H = quad.a * K + K @ quad.Q(K)
    H = (H + H.T) * 0.5
    w, V = np.linalg.eigh(H)
    keep = w > w.max() * 1e-12
    w, V = w[keep], V[:, keep]
    Z = np.sqrt(w)[:, None] * V.T
    T = (V.T @ (K @ quad.r)) / np.sqrt(w)[:, None]
    orders, gammas = [], []
    for col in range(T.shape[1]):
        alphas, _, coefs = lars_path(Z, T[:, col], Gram=Z.T @ Z, method=method,
                                     max_iter=min(8 * d + 10, 4 * n))
        nnz = np.count_nonzero(coefs, axis=0)
        reach = np.flatnonzero(nnz >= d)
        step = int(reach[0]) if reach.size else coefs.shape[1] - 1
        support = np.flatnonzero(coefs[:, step])
        first = np.argmax(coefs[support, :step + 1] != 0, axis=1)
        orders.append(support[np.argsort(first, kind="stable")])
        gammas.append(float(alphas[step] * Z.shape[0]))
    basis: list[int] = []
    for i in range(max(len(o) for o in orders)):
        for order in orders:
            if i < len(order) and order[i] not in basis and len(basis) < d:
                basis.append(int(order[i]))
    return np.asarray(basis, dtype=np.int64), gammas


@dataclass
class SlackFit:
    """The alternating slack fit: ``beta``, ``f`` (n, n_columns), the objective (5.7) per
    alternation (summed over columns) and the alternations run."""

    beta: np.ndarray
    f: np.ndarray
    history: list
    n_iter: int


def slack_objective(M, labeled, Ybar, a, g, nu, KNJ, KJJ, beta, f) -> float:
    """Eq 5.7 at ``(beta, f)``, summed over columns:
    ``a/2 beta^T K_JJ beta + g/2 f^T M f + 1/2 ||f_L - Y||^2 + nu/2 ||f - K_NJ beta||^2``."""
    lab = np.asarray(labeled, dtype=bool)
    o = KNJ @ beta
    return float(0.5 * a * np.sum(beta * (KJJ @ beta)) + 0.5 * g * np.sum(f * (M @ f))
                 + 0.5 * np.sum((f[lab] - Ybar[lab]) ** 2) + 0.5 * nu * np.sum((f - o) ** 2))


def slack_alternate(fsys: FSystem, M, labeled, Ybar, a, g, nu, KNJ, KJJ, beta0, *, f0=None,
                    tol=1e-6, max_iter=200) -> SlackFit:
    """The thesis' alternating optimization of Eq 5.7 on a fixed basis: the f-step
    ``(g M + I_L + nu I) f = Ybar + nu K_NJ beta`` (Eq 5.8; ``fsys``, warm-started from the
    last ``f``) and the beta-step ``(a K_JJ + nu K_JN K_NJ) beta = nu K_JN f`` (Eq 5.9, one
    Cholesky factor for all steps), until the objective improves by less than ``tol``
    relatively (or ``max_iter`` alternations)."""
    B = a * KJJ + nu * (KNJ.T @ KNJ)
    factor = cho_factor((B + B.T) * 0.5, lower=True)
    beta, f = beta0, f0
    history: list[float] = []
    it = 0
    for it in range(1, max_iter + 1):
        f = fsys.solve(Ybar + nu * (KNJ @ beta), X0=f)
        beta = cho_solve(factor, nu * (KNJ.T @ f))
        history.append(slack_objective(M, labeled, Ybar, a, g, nu, KNJ, KJJ, beta, f))
        if len(history) > 1 and history[-2] - history[-1] <= tol * abs(history[-1]):
            break
    return SlackFit(beta, f, history, it)


def sigmoid_objective(beta, M, labeled, y, a, g, rho, KNJ, KJJ):
    """Eq 5.5 for one target column and its gradient in ``beta``:
    ``a/2 beta^T K_JJ beta + g/2 s^T M s + 1/2 ||Y - K_LJ beta||^2``, ``s = sigmoid(rho o)``,
    ``o = K_NJ beta``; the graph term's gradient is ``K_NJ^T (g rho s (1 - s) * M s)``."""
    from scipy.special import expit

    o = KNJ @ beta
    s = expit(rho * o)
    Ms = M @ s
    r = labeled * (o - y)
    value = 0.5 * a * beta @ (KJJ @ beta) + 0.5 * g * s @ Ms + 0.5 * r @ r
    grad = a * (KJJ @ beta) + KNJ.T @ (g * rho * s * (1.0 - s) * Ms + r)
    return float(value), grad


@dataclass
class SigmoidFit:
    """The sigmoid method on a fixed basis: ``beta`` (d, n_columns), Eq 5.5 per column at it,
    and the nonlinear CG iterations per column."""

    beta: np.ndarray
    objective: np.ndarray
    n_iter: np.ndarray


def sigmoid_fit(M, labeled, Ybar, a, g, rho, KNJ, KJJ, *, tol=1e-6, max_iter=200) -> SigmoidFit:
    """The sigmoid method (thesis 5.3.1, Eq 5.5) on the basis of ``KNJ``: nonlinear CG
    (scipy's Polak-Ribiere ``CG``) per target column, started from the supervised fit on the
    basis (``g = 0``, the labeled rows only: the thesis starts from a supervised solution, as
    the objective is not convex and the nearest local minimum is the one meant), until the
    gradient's norm falls to ``tol`` times its norm at the start."""
    from scipy.optimize import minimize

    lab = np.asarray(labeled, dtype=np.float64)
    L = lab > 0
    H = a * KJJ + KNJ[L].T @ KNJ[L]
    B0 = np.linalg.lstsq((H + H.T) * 0.5, KNJ[L].T @ Ybar[L], rcond=None)[0]
    beta = np.empty_like(B0)
    values, iters = np.empty(B0.shape[1]), np.zeros(B0.shape[1], dtype=int)
    for c in range(B0.shape[1]):
        args = (M, lab, Ybar[:, c], a, g, rho, KNJ, KJJ)
        start = np.linalg.norm(sigmoid_objective(B0[:, c], *args)[1])
        res = minimize(sigmoid_objective, B0[:, c], args=args, jac=True, method="CG",
                       options=dict(gtol=tol * max(start, np.finfo(float).tiny),
                                    maxiter=max_iter))
        beta[:, c], values[c], iters[c] = res.x, res.fun, res.nit
    return SigmoidFit(beta, values, iters)
