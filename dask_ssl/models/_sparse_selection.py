"""``gamma_A`` / ``gamma_I="auto"`` of :class:`~dask_ssl.models.SparseLapRLS` with
``method="laprls"``: exact leave-one-out over the labeled rows on a fixed basis.

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


def select_on_basis(KNJ, basis, M, labeled, Ybar, unit: float, gamma_As, gamma_Is):
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
    """
    L = np.flatnonzero(labeled)
    l = L.size
    YL, KLJ, KJJ = Ybar[L], KNJ[L], KNJ[basis]
    G = KNJ.T @ (M @ KNJ) if any(g > 0 for g in gamma_Is) else None
    cases = [(ga, gi) for gi in gamma_Is for ga in gamma_As]
    outputs = [loo_outputs(KLJ, KJJ, G, YL, l * ga, l * gi * unit) for ga, gi in cases]
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
