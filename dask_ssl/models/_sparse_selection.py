"""``gamma_A`` / ``gamma_I="auto"`` of :class:`~dask_ssl.models.SparseLapRLS` with
``method="laprls"`` or ``"slack"``: exact leave-one-out over the labeled rows on a fixed basis.

On a basis ``J`` restricted LapRLS (Eq 5.2, the thesis' ch. 5 units) minimizes
``a/2 beta^T K_JJ beta + g/2 o^T M o + 1/2 ||Y_L - K_LJ beta||^2`` with ``o = K_NJ beta``:
``beta = H^-1 K_LJ^T Y_L``, ``H = a K_JJ + K_LJ^T K_LJ + g G``, ``G = K_NJ^T M K_NJ``. Leaving
labeled row ``i`` out of the loss (it stays in the graph, unlabeled) takes ``k_i k_i^T`` from
``H`` and ``k_i y_i`` from the right side, so by Sherman-Morrison its held-out output is
``(o_i - s_i y_i) / (1 - s_i)`` with ``s_i = k_i^T H^-1 k_i``: one ``d x d`` Cholesky factor
per candidate ``(a, g)``, solved for ``l`` columns. ``K_NJ``, ``K_LJ^T K_LJ`` and ``G`` (the
only graph products, ``d`` columns) are shared by every candidate, and the basis is grown once
(at the pilot setting, :data:`PILOT_GAMMA_A` and the seeds' ``gamma_I``, or the given values),
not once per candidate or fold. As in LapRLS's leave-one-out, ``a = l gamma_A`` and
``g = l gamma_I_eff`` keep the full ``l``.

The slack method (Eq 5.7) is a quadratic in ``z = (f, beta)`` with Hessian
``[[A, -nu K_NJ], [-nu K_JN, a K_JJ + nu K_JN K_NJ]]``, ``A = g M + I_L + nu I`` the f-step's
matrix, and right side ``(Ybar, 0)``. Leaving labeled row ``i`` out takes ``e_i e_i^T`` (in
``f``) from the Hessian and ``y_i e_i`` from the right side; Sherman-Morrison gives
``z^(-i) = z + H^-1 e_i (f_i - y_i) / (1 - s_i)``, ``s_i = (H^-1)_ii``, so the held-out output
of the sparse model is ``o_i + nu k_i^T S^-1 p_i (f_i - y_i) / (1 - s_i)`` with
``s_i = (A^-1)_ii + nu^2 p_i^T S^-1 p_i``, ``p_i = K_JN A^-1 e_i`` and
``S = a K_JJ + K_JN Q K_NJ`` the ``d x d`` matrix of the fit with ``f`` eliminated
(:func:`~dask_ssl.solvers.sparse.slack_quadratic`). ``f`` is refitted on every row for every
held-out label, exactly: nothing is approximated beyond keeping the basis. A candidate ``g``
costs one f-system solve of ``n_columns + d + l`` columns (``Ybar``, ``(g M + I_L) K_NJ``
and the labeled rows' unit vectors: one many-column block CG on the graph solver's paths, one
factor on the direct one), every ``a`` at that ``g`` one ``d x d`` factor; ``g = 0`` makes
``A`` diagonal. The greedy basis itself costs ``kappa`` f-system columns per basis function,
so the selection stays a small part of the fit.

The candidates are :data:`AUTO_GAMMA_A` (decades, LapRLS's units) times LapRLS's
``AUTO_GAMMA_I`` (0, the supervised sparse RLS on the same basis, included). The supervised
candidate is the ``gamma_I = 0`` one with the fewest held-out errors (then the smallest
squared residual): choosing the ridge among supervised models needs no guard. A graph
candidate replaces it only under the rule of :mod:`._selection`.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve, eigh

from ._graph_weight import loo_outputs as regularized_loo
from ._graph_weight import truth_of
from ._selection import choose, table

#: ``gamma_A`` tried by ``gamma_A="auto"`` (LapRLS's units: the weight of ``beta^T K_JJ beta``
#: against the mean squared loss over the labeled rows).
AUTO_GAMMA_A = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
#: The ``gamma_A`` at which the basis is grown when ``gamma_A="auto"``, and the one kept when
#: the labels are too few to choose (the estimator's former default).
PILOT_GAMMA_A = 1e-6


def _inverse_on(H, B):
    """``H^-1 B`` for the symmetric positive semidefinite ``H``: Cholesky, or the
    pseudo-inverse of its positive part when ``H`` is singular to round-off."""
    try:
        return cho_solve(cho_factor(H, lower=True), B)
    except LinAlgError:
        w, V = eigh(H)
        keep = w > w.max() * 1e-12
        return V[:, keep] @ ((V[:, keep].T @ B) / w[keep][:, None])


def loo_outputs(KLJ, KJJ, G, YL, a: float, g: float) -> np.ndarray:
    """Restricted LapRLS's leave-one-out outputs on the labeled rows, shape ``(l, n_columns)``.

    Parameters
    ----------
    KLJ : ndarray of shape (l, d)
        The basis' kernel columns on the labeled rows.
    KJJ : ndarray of shape (d, d)
        The kernel among the basis rows.
    G : ndarray of shape (d, d) or None
        ``K_NJ^T M K_NJ`` (None when ``g = 0``).
    YL : ndarray of shape (l, n_columns)
        The labeled rows' +1/-1 targets.
    a, g : float
        The thesis' ch. 5 gamma_A and gamma_I (``l gamma_A``, ``l gamma_I_eff``).
    """
    H = a * KJJ + KLJ.T @ KLJ
    if g > 0:
        H = H + g * G
    H = (H + H.T) * 0.5
    return regularized_loo(lambda B: _inverse_on(H, B), KLJ, YL)


def slack_loo_outputs(KNJ, basis, labeled, Ybar, fsys, M, nu: float, a_values) -> list:
    """The slack method's leave-one-out outputs ``K_iJ beta^(-i)`` on the labeled rows on the
    basis ``basis``, one ``(l, n_columns)`` array per ``a`` in ``a_values``, at the ``g`` of
    ``fsys`` (module docstring).

    Parameters
    ----------
    KNJ : ndarray of shape (n, d)
        The basis' kernel columns on every training row.
    basis : ndarray of int
        The basis rows.
    labeled : ndarray of bool
    Ybar : ndarray of shape (n, n_columns)
        +1/-1 targets on labeled rows, 0 elsewhere.
    fsys : FSystem or None
        Solves with ``A = g M + I_L + nu I`` (:class:`~dask_ssl.solvers.sparse.FSystem`);
        None for ``g = 0``, where ``A`` is diagonal.
    M : matrix or operator
        The graph regularizer (``M @ V``).
    nu : float
        The slack coupling.
    a_values : sequence of float
        The thesis' ch. 5 gamma_A (``l gamma_A``) of each candidate.
    """
    L = np.flatnonzero(labeled)
    n, d = KNJ.shape
    l, c = L.size, Ybar.shape[1]
    lab = np.asarray(labeled, dtype=np.float64)[:, None]
    E = np.zeros((n, l))
    E[L, np.arange(l)] = 1.0
    # Q K_NJ as nu A^-1 (g M + I_L) K_NJ, the form the fit uses (solvers.sparse.slack_quadratic)
    if fsys is None:
        X = np.hstack([Ybar, lab * KNJ, E]) / (lab + nu)
    else:
        X = fsys.solve(np.hstack([Ybar, fsys.g * (M @ KNJ) + lab * KNJ, E]))
    T, QK, AE = X[:, :c], nu * X[:, c:c + d], X[:, c + d:]
    P = AE.T @ KNJ                       # rows of A^-1 K_NJ on the labeled rows (A symmetric)
    D = AE[L, np.arange(l)]              # (A^-1)_ii
    G = KNJ.T @ QK
    G = (G + G.T) * 0.5
    rhs = np.hstack([nu * (KNJ.T @ T), P.T])
    KLJ, KJJ, YL, TL = KNJ[L], KNJ[basis], Ybar[L], T[L]
    outputs = []
    for a in a_values:
        Z = _inverse_on(a * KJJ + G, rhs)
        beta, V = Z[:, :c], Z[:, c:]
        q = np.einsum("ij,ji->i", KLJ, V)
        s = D + nu ** 2 * np.einsum("ij,ji->i", P, V)
        F = TL + nu * (P @ beta)         # f on the labeled rows
        outputs.append(KLJ @ beta + (nu * q / (1.0 - s))[:, None] * (F - YL))
    return outputs


def select_on_basis(KNJ, basis, M, labeled, Ybar, unit: float, gamma_As, gamma_Is, *,
                    slack=None):
    """``(gamma_A, gamma_I, selection_)`` by leave-one-out on the basis ``basis`` (module
    docstring).

    Parameters
    ----------
    KNJ : ndarray of shape (n, d)
        The basis' kernel columns on every training row.
    basis : ndarray of int
        The basis rows.
    M : matrix or operator
        The graph regularizer (``M @ V``).
    labeled : ndarray of bool
    Ybar : ndarray of shape (n, n_columns)
        +1/-1 targets on labeled rows, 0 elsewhere.
    unit : float
        ``gamma_I_eff`` per unit ``gamma_I`` on this graph.
    gamma_As, gamma_Is : sequence of float
        The candidate values (LapRLS's units). With more than one ``gamma_I`` the first must
        be 0, the supervised candidate.
    slack : tuple (nu, fsystem), optional
        Score the slack method with coupling ``nu`` instead of restricted LapRLS;
        ``fsystem(g)`` returns the f-system solver at ``g`` (thesis units, ``g > 0``).
    """
    L = np.flatnonzero(labeled)
    l = L.size
    YL = Ybar[L]
    cases = [(ga, gi) for gi in gamma_Is for ga in gamma_As]
    if slack is None:
        KLJ, KJJ = KNJ[L], KNJ[basis]
        G = KNJ.T @ (M @ KNJ) if any(g > 0 for g in gamma_Is) else None
        outputs = [loo_outputs(KLJ, KJJ, G, YL, l * ga, l * gi * unit) for ga, gi in cases]
    else:
        nu, fsystem = slack
        outputs = []
        for gi in gamma_Is:
            g = l * gi * unit
            outputs += slack_loo_outputs(KNJ, basis, labeled, Ybar,
                                         fsystem(g) if g > 0 else None, M, nu,
                                         [l * ga for ga in gamma_As])
    truth = truth_of(YL)
    wrong = np.array([truth_of(out) != truth for out in outputs])
    squared = np.array([np.sum((YL - out) ** 2, axis=1) for out in outputs])
    first = [j for j, (_, gi) in enumerate(cases) if gi == cases[0][1]]
    errors, residual = wrong.sum(axis=1), squared.sum(axis=1)
    supervised = min(first, key=lambda j: (errors[j], residual[j], j))
    best = (choose(wrong, squared, supervised=supervised) if len(gamma_Is) > 1
            else supervised)
    rows = [{"gamma_A": ga, "gamma_I": gi} for ga, gi in cases]
    selection = [{**row, "criterion": "loo"}
                 for row in table(rows, wrong, squared, best, supervised=supervised)]
    return cases[best][0], cases[best][1], selection
