"""Regularized least squares classifier (thesis 1.3, linear form) on row blocks."""

from __future__ import annotations

import numpy as np

from .l2svm import SupervisedMFN


class RLS(SupervisedMFN):
    """Linear RLS: ``min gamma_A/2 ||w||^2 + 1/(2l) sum_{labeled} c_i (y_i - w^T x_i)^2``.

    The same minimizer as the thesis' ``(X^T X + gamma_A l I)^-1 X^T y`` (multiply by 2/l). One
    Newton step solves it: a Gram + Cholesky on small d, CG on large d.

    Parameters
    ----------
    gamma_A : float, default=1e-3
        Ambient-norm weight (the thesis' gamma_A with the 1/l loss normalization; svmlin ``-W``).
    tol : float, default=1e-6
        CG relative residual tolerance.
    max_iter : int, default=100
        Kept for a uniform interface; RLS needs one Newton step.
    fit_intercept, solver, unlabeled, client, n_blocks
        As in :class:`L2SVM`.
    """

    def _row_arrays(self, y, costs):
        return {"csq": np.where(y != 0, costs, 0.0), "tsq": y}
