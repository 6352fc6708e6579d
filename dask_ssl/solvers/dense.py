"""Dense LapRLS / LapSVM solves on the driver (thesis ch. 2), for every class column at once.

Each minimizes, per column of ``Y`` (+1/-1 on labeled rows, 0 elsewhere),

    (1/l) sum_{labeled} V(y_i, f_i) + gamma_A alpha^T K alpha + gamma_I f^T M f,

``f = K alpha`` (+ b for the squared hinge, whose bias enters the graph term too), with ``K`` the
n x n kernel matrix over all rows and ``M`` the graph regularizer; ``gamma_I`` is the graph
term's coefficient as it stands (any normalization already applied). The results are
:class:`DenseSolution`: the expansion coefficients and biases, iterations and history.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import lu_factor, lu_solve
from sklearn.svm import SVC

from ..linalg.line_search import exact_root


@dataclass
class DenseSolution:
    """A dense solve's result: ``alpha`` (n, n_columns), ``intercept`` (n_columns,),
    iterations (per column, or one for a solve shared by all columns) and the per-iteration
    objectives of each column (squared hinge only)."""

    alpha: np.ndarray
    intercept: np.ndarray
    n_iter: np.ndarray
    history: list = field(default_factory=list)


def laprls_direct(K, M, Y, labeled, *, gamma_A: float, gamma_I: float,
                  MK=None) -> DenseSolution:
    """LapRLS, Eq 2.12: ``alpha = (J K + gamma_A l I + gamma_I l M K)^-1 Y``, one LU for all
    columns; no bias. ``MK``: ``M K`` where the caller has it (a selection computed it)."""
    n, l = K.shape[0], int(labeled.sum())
    A = labeled[:, None] * K + (gamma_I * l) * (M @ K if MK is None else MK)
    A[np.diag_indices(n)] += gamma_A * l
    alpha = lu_solve(lu_factor(A), Y)
    # one factorization solves every column: one iteration in all
    return DenseSolution(alpha, np.zeros(Y.shape[1]), np.array([1]))


def lapsvm_dual(K, M, Y, labeled, *, gamma_A: float, gamma_I: float,
                tol: float, MK=None) -> DenseSolution:
    """LapSVM with the hinge loss (Eq 2.19-2.21): the dual is the SVM of the deformed kernel
    on the labeled rows, ``2 gamma_A J K B^-1 J^T`` with ``B = 2 gamma_A I + 2 gamma_I M K``
    (Prop 2.5.2), solved by scikit-learn's ``SVC(kernel="precomputed")`` with
    ``C = 1/(2 gamma_A l)`` (the thesis' beta scaled); then ``alpha = B^-1 J^T Y beta`` with one
    LU for all columns, and the bias from the KKT conditions (libsvm's). ``MK``: ``M K``
    where the caller has it."""
    n, L = K.shape[0], np.flatnonzero(labeled)
    l = L.size
    B = (2.0 * gamma_I) * (M @ K if MK is None else MK)
    B[np.diag_indices(n)] += 2.0 * gamma_A
    lu = lu_factor(B)
    E = np.zeros((n, l))
    E[L, np.arange(l)] = 1.0
    Z = lu_solve(lu, E)
    G = (2.0 * gamma_A) * (K[L] @ Z)
    G = (G + G.T) * 0.5
    alpha = np.zeros((n, Y.shape[1]))
    b = np.zeros(Y.shape[1])
    iters = []
    for c in range(Y.shape[1]):
        svc = SVC(kernel="precomputed", C=1.0 / (2.0 * gamma_A * l), tol=tol,
                  max_iter=-1).fit(G, Y[L, c])
        coef = np.zeros(l)
        coef[svc.support_] = svc.dual_coef_[0]
        alpha[:, c] = Z @ ((2.0 * gamma_A) * coef)
        b[c] = svc.intercept_[0]
        iters.append(int(svc.n_iter_[0]))
    return DenseSolution(alpha, b, np.array(iters))


def lapsvm_newton(K, M, Y, labeled, *, gamma_A: float, gamma_I: float, tol: float,
                  max_iter: int, MK=None) -> DenseSolution:
    """LapSVM with the squared hinge and a bias (also in the graph term), by finite Newton with
    an exact line search per column (:func:`_squared_hinge_newton`); ``history`` holds one list
    of objectives per column. ``MK``: ``M K`` where the caller has it."""
    n, l = K.shape[0], int(labeled.sum())
    alpha = np.zeros((n, Y.shape[1]))
    b = np.zeros(Y.shape[1])
    iters, history = [], []
    MK, M1 = (M @ K if MK is None else MK), M.sum(axis=1)

    def dense_step(active, y):
        s = np.zeros(n)
        s[active] = 1.0
        P_K = s[:, None] * K + (l * gamma_I) * MK
        P_1 = s + (l * gamma_I) * M1
        A = np.empty((n + 1, n + 1))
        A[:n, :n] = P_K
        A[np.diag_indices(n)] += l * gamma_A
        A[:n, n] = P_1
        A[n, :n] = P_K.sum(axis=0)
        A[n, n] = P_1.sum()
        return np.linalg.solve(A, np.append(s * y, (s * y).sum()))

    for c in range(Y.shape[1]):
        a, bc, hist = _squared_hinge_newton(K, M, Y[:, c], labeled, l, gamma_A, gamma_I,
                                            max_iter, tol, dense_step)
        alpha[:, c], b[c] = a, bc
        iters.append(len(hist))
        history.append(hist)
    return DenseSolution(alpha, b, np.array(iters), history)


def lapsvm_newton_subsets(K, M, Y, masks, *, gamma_A: float, gamma_I: float, tol: float,
                          max_iter: int, MK=None) -> list:
    """:func:`lapsvm_newton` for each of several sets of labeled rows (``masks``, boolean
    columns of shape (n, n_fits); ``Y`` the +1/-1 targets of every row a mask holds), with
    one factorization for all; ``gamma_I > 0``. ``MK``: ``M K`` where the caller has it.

    The Newton system of :func:`_squared_hinge_newton` divided by ``l``, its bias row reduced
    to ``1^T a = 0`` (the sum of the first ``n`` rows minus the bias row), is

        [[w M K + gamma_A I + I_S K / l,  w M 1 + I_S 1 / l], [1^T, 0]] [a; b] = [I_S y / l; 0]:

    a fixed matrix ``C`` (the graph and ambient terms) plus the rank-``|S|`` loss term of the
    active set ``S``. By Woodbury, ``[a; b] = Z_S (l I + G_SS)^-1 y_S`` with ``Z = C^-1 [E_R;
    0]`` over the rows ``R`` some mask holds and ``G = [K_R:, 1] Z``: one LU of ``C`` and one
    solve with ``|R|`` right-hand sides serve every Newton step of every subset and column,
    where :func:`lapsvm_newton` factors an ``(n + 1)``-square matrix each step. (``C`` is
    singular without the graph term: its ``w M 1`` fixes the bias when no loss row is
    active.) Returns one :class:`DenseSolution` per mask."""
    n = K.shape[0]
    if not gamma_I > 0:
        raise ValueError("lapsvm_newton_subsets needs a graph term (gamma_I > 0)")
    R = np.flatnonzero(masks.any(axis=1))
    position = np.full(n, -1)
    position[R] = np.arange(R.size)
    C = np.empty((n + 1, n + 1))
    C[:n, :n] = gamma_I * (M @ K if MK is None else MK)
    C[np.diag_indices(n)] += gamma_A
    C[:n, n] = gamma_I * M.sum(axis=1)
    C[n, :n], C[n, n] = 1.0, 0.0
    E = np.zeros((n + 1, R.size))
    E[R, np.arange(R.size)] = 1.0
    Z = lu_solve(lu_factor(C, overwrite_a=True), E)
    G = K[R] @ Z[:n] + Z[n]
    out = []
    for m in range(masks.shape[1]):
        labeled = masks[:, m]
        l = int(labeled.sum())

        def step(active, y, l=l):
            cols = position[active]
            return Z[:, cols] @ np.linalg.solve(l * np.eye(cols.size) + G[np.ix_(cols, cols)],
                                                y[active])

        alpha, b = np.zeros((n, Y.shape[1])), np.zeros(Y.shape[1])
        iters, history = [], []
        for c in range(Y.shape[1]):
            alpha[:, c], b[c], hist = _squared_hinge_newton(
                K, M, Y[:, c] * labeled, labeled, l, gamma_A, gamma_I, max_iter, tol, step)
            iters.append(len(hist))
            history.append(hist)
        out.append(DenseSolution(alpha, b, np.array(iters), history))
    return out


def _squared_hinge_newton(K, M, y, labeled, l, gamma_A, weight, max_iter, tol, solve_step):
    """Finite Newton for one column: ``min (1/l) sum_L max(0, 1 - y f)^2 + gamma_A a^T K a +
    weight f^T M f``, ``f = K a + b``. Each step solves the stationarity conditions on the
    current active set S,

        (I_S + l w M) f + l gamma_A a = I_S y,      1^T (I_S + l w M) f = 1^T I_S y,

    (``solve_step(S, y)`` returns their solution ``[a; b]``), then moves by an exact line search on
    the piecewise-quadratic objective (the seeds' L2-SVM-MFN step,
    :func:`~dask_ssl.linalg.line_search.exact_root`)."""
    n = K.shape[0]
    L = np.flatnonzero(labeled)
    yL = y[L]
    a, b = np.zeros(n), 0.0
    history = []
    for _ in range(max_iter):
        o = K[L] @ a + b
        active = L[yL * o < 1.0]
        sol = solve_step(active, y)
        da, db = sol[:n] - a, sol[n] - b
        step = _line_search(K, M, a, b, da, db, L, yL, l, gamma_A, weight)
        a, b = a + step * da, b + step * db
        f = K @ a + b
        history.append(float(np.mean(np.maximum(0.0, 1.0 - yL * f[L]) ** 2)
                             + gamma_A * a @ (K @ a) + weight * f @ (M @ f)))
        if step * np.sqrt(da @ da + db * db) <= tol * max(1.0, np.sqrt(a @ a + b * b)):
            break
    return a, b, history


def _line_search(K, M, a, b, da, db, L, yL, l, gamma_A, weight) -> float:
    """argmin over t >= 0 of the objective at ``(a + t da, b + t db)``: the root of its
    increasing piecewise-linear derivative."""
    f, df = K @ a + b, K @ da + db
    Ka, Kda = K @ a, K @ da
    g = 1.0 - yL * f[L]          # margin slack at t = 0
    h = yL * df[L]               # its decrease per unit t
    reg0 = 2.0 * (gamma_A * da @ Ka + weight * df @ (M @ f))
    reg_slope = 2.0 * (gamma_A * da @ Kda + weight * df @ (M @ df))
    on = (g > 0) | ((g == 0) & (h < 0))
    der = reg0 - (2.0 / l) * np.sum(h[on] * g[on])
    slope = reg_slope + (2.0 / l) * np.sum(h[on] ** 2)
    moving = h != 0
    t = np.full(g.shape, -1.0)
    t[moving] = g[moving] / h[moving]
    cross = moving & (t > 0)
    change = np.where(on, -1.0, 1.0) * (2.0 / l) * h ** 2
    return exact_root(0.0, der, slope, t[cross], change[cross], np.inf)
