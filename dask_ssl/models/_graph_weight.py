"""``gamma_I="auto"`` of the linear manifold estimators: the graph term's weight by leave-one-out
on the labeled rows.

The candidates are ``rho * tr(G) / tr(H)`` for ``rho`` in :data:`AUTO_RHO`, ``G = [X_l,1]^T C
[X_l,1]`` the labeled loss's Gram matrix and ``H = [X,1]^T M [X,1]`` the graph term's: ``rho``
is the graph term's share against the loss, which does not change with the number of rows the
graph sums over (a fixed ``gamma_I`` weighs a graph on 500 k rows 50 times more than one on
10 k). ``rho = 0`` (no graph term) is a candidate: where the graph does not help, the labels say
so. LapRLS's leave-one-out outputs on the labeled rows are exact for a linear smoother:
with ``A = G + gamma_A I + gamma_I H`` and ``s_i = c_i x_i^T A^-1 x_i``, removing row ``i``
from the loss gives ``(o_i - s_i y_i) / (1 - s_i)`` (Sherman-Morrison); the graph stays on all
rows. The candidate with the fewest leave-one-out misclassifications wins, ties going to the
smaller squared leave-one-out residual. Only the labels of labeled rows are read.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

#: Graph-term shares tried by ``gamma_I="auto"`` (see the module docstring).
AUTO_RHO = (0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)


def loo_gamma_I(G, H, Xl, cl, Yl, gamma_A: float) -> tuple[float, list]:
    """The ``gamma_I`` of :data:`AUTO_RHO` with the fewest LapRLS leave-one-out errors.

    Parameters
    ----------
    G, H : ndarray of shape (dim, dim)
        The labeled loss's and the graph term's Gram matrices (bias column included).
    Xl : ndarray of shape (l, dim)
        The labeled rows of ``[X, 1]``.
    cl : ndarray of shape (l,)
        Their costs ``c_i``.
    Yl : ndarray of shape (l, n_targets)
        Their +1/-1 targets, one column per one-vs-rest target (one column: two classes).

    Returns
    -------
    gamma_I : float
    selection : list of dict
        Per candidate: ``rho``, ``gamma_I``, leave-one-out ``errors`` and ``squared`` residual.
    """
    trace_H = np.trace(H)
    # a graph without edges (or constant outputs on it) has no term to weigh: every candidate
    # is the same fit, and the first (0) is kept
    scale = np.trace(G) / trace_H if trace_H > 1e-12 * np.trace(G) else 0.0
    R = Xl.T @ (cl[:, None] * Yl)
    truth = Yl[:, 0] > 0 if Yl.shape[1] == 1 else np.argmax(Yl, axis=1)
    selection = []
    for rho in AUTO_RHO:
        gamma_I = rho * scale
        factor = scipy.linalg.cho_factor(G + gamma_A * np.eye(G.shape[0]) + gamma_I * H)
        O = Xl @ scipy.linalg.cho_solve(factor, R)
        s = cl * np.einsum("ij,ji->i", Xl, scipy.linalg.cho_solve(factor, Xl.T))
        loo = (O - s[:, None] * Yl) / (1.0 - s)[:, None]
        guess = loo[:, 0] > 0 if Yl.shape[1] == 1 else np.argmax(loo, axis=1)
        selection.append({"rho": rho, "gamma_I": float(gamma_I),
                          "errors": int(np.sum(guess != truth)),
                          "squared": float(np.sum((Yl - loo) ** 2))})
    best = min(selection, key=lambda r: (r["errors"], r["squared"]))
    return best["gamma_I"], selection
