"""Supervised linear L2-SVM by the modified finite Newton method (thesis 6.2, svmlin ``-A 1``)."""

from __future__ import annotations

import numpy as np

from ..linalg.mfn import ws_init
from .base import LinearSSLClassifier


def hinge_costs(y: np.ndarray, costs: np.ndarray) -> dict:
    """Per-row hinge costs of labeled rows: ``cpos`` for y = +1, ``cneg`` for y = -1."""
    return {"cpos": np.where(y > 0, costs, 0.0), "cneg": np.where(y < 0, costs, 0.0)}


def init_blocks(blocks, token: str, arrays: dict) -> None:
    """Ship per-row arrays (n-sized, split like the blocks) into each block's worker state."""
    per_block = [({k: v[s] for k, v in arrays.items()},) for s in blocks.block_slices()]
    blocks.call(ws_init, token, per_block=per_block)


class SupervisedMFN(LinearSSLClassifier):
    """What L2SVM and RLS share: one L2-SVM-MFN solve on the labeled rows' per-row costs,
    which a subclass supplies through ``_row_arrays(y, costs)``."""

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
        init_blocks(blocks, token, self._row_arrays(y, costs))
        res = self._solver(blocks, token).solve(w0, self.gamma)
        return {"w": res.w, "objective": res.objective, "n_iter": res.n_newton,
                "history": [{"newton_step": k, "objective": v} for k, v in enumerate(res.history)]}


class L2SVM(SupervisedMFN):
    """Linear SVM with squared hinge loss, trained by L2-SVM-MFN on row blocks.

    Minimizes ``gamma/2 ||w||^2 + 1/(2l) sum_{labeled} c_i max(0, 1 - y_i w^T x_i)^2`` (thesis
    Eq 6.2 with labeled cost 1/l, as svmlin); unlabeled rows are ignored.

    Parameters
    ----------
    gamma : float, default=1e-3
        Regularization gamma (svmlin ``-W``, thesis lambda); LIBLINEAR's C is ``1/(gamma l)``.
    tol : float, default=1e-6
        tau of the active-set stopping rule and epsilon of CG (svmlin's epsilon).
    max_iter : int, default=100
        Maximum Newton steps.
    fit_intercept : bool, default=True
        Append a constant feature whose weight is the bias; it is regularized (svmlin).
    solver : {'auto', 'gram', 'cg'}, default='auto'
        'gram' assembles ``X^T C X`` on the blocks and solves by Cholesky (small d); 'cg'
        runs conjugate gradients with one round trip per iteration; 'auto' picks by d.
    unlabeled : scalar, optional
        Marker of unlabeled rows in y. Default: -1 (scikit-learn's convention) for a y passed
        to ``fit``, 0 (svmlin / SVMlight's) for labels read with the data (``y=None``).
    client : distributed.Client, optional
        Client to run on; default: the current client, else a LocalCluster started on demand.
    n_blocks : int, optional
        Blocks to split in-memory X into (default: one per worker thread).
    """

    def _row_arrays(self, y, costs):
        return hinge_costs(y, costs)
