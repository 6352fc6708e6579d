"""Regularized least squares classifier (thesis 1.3, linear form) on row blocks."""

from __future__ import annotations

import numpy as np

from .base import LinearSSLClassifier
from .l2svm import init_blocks


class RLS(LinearSSLClassifier):
    """Linear RLS: ``min gamma/2 ||w||^2 + 1/(2l) sum_{labeled} c_i (y_i - w^T x_i)^2``.

    The same minimizer as the thesis' ``(X^T X + gamma l I)^-1 X^T y`` (multiply by 2/l). One
    Newton step solves it: a Gram + Cholesky on small d, CG on large d.

    Parameters
    ----------
    gamma : float, default=1e-3
        Regularization gamma (thesis gamma / gamma_A with the 1/l loss normalization).
    tol : float, default=1e-6
        CG relative residual tolerance.
    max_iter : int, default=100
        Kept for a uniform interface; RLS needs one Newton step.
    fit_intercept, solver, unlabeled, client, n_blocks
        As in :class:`L2SVM`.
    """

    def __init__(self, *, gamma=1e-3, tol=1e-6, max_iter=100, fit_intercept=True,
                 solver="auto", unlabeled=None, client=None, n_blocks=None):
        self.gamma = gamma
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.unlabeled = unlabeled
        self.client = client
        self.n_blocks = n_blocks

    def _fit_binary(self, blocks, y, costs, w0, token):
        init_blocks(blocks, token, {"csq": np.where(y != 0, costs, 0.0), "tsq": y})
        res = self._solver(blocks, token).solve(w0, self.gamma)
        return {"w": res.w, "objective": res.objective, "n_iter": res.n_newton,
                "history": [{"newton_step": k, "objective": v} for k, v in enumerate(res.history)]}
