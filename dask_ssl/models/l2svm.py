"""Supervised linear L2-SVM by the modified finite Newton method (thesis 6.2, svmlin ``-A 1``)."""

from __future__ import annotations

from ._constraints import constraints
from .base import LINEAR_SOLVERS, LinearSSLClassifier, hinge_costs, init_blocks


class SupervisedMFN(LinearSSLClassifier):
    """What L2SVM and RLS share: one L2-SVM-MFN solve on the labeled rows' per-row costs,
    which a subclass supplies through ``_row_arrays(y, costs)``.

    Every entry of a y passed to ``fit`` is a class unless ``unlabeled`` names a marker; labels
    read with the data (``y=None``) keep svmlin's 0 for unlabeled rows.
    """

    _semi_supervised = False

    def __init__(self, *, gamma_A=1e-3, tol=1e-6, max_iter=100, fit_intercept=True,
                 solver="auto", unlabeled=None, client=None, n_blocks=None):
        self.gamma_A = gamma_A
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.unlabeled = unlabeled
        self.client = client
        self.n_blocks = n_blocks

    _parameter_constraints = constraints(__init__, solver=[LINEAR_SOLVERS])

    def _fit_binary(self, blocks, y, costs, w0, token, part):
        init_blocks(blocks, token, self._row_arrays(y, costs))
        return self._solve_mfn(blocks, token, w0)


class L2SVM(SupervisedMFN):
    """Linear SVM with squared hinge loss, trained by L2-SVM-MFN on row blocks.

    Minimizes ``gamma_A/2 ||w||^2 + 1/(2l) sum_{labeled} c_i max(0, 1 - y_i w^T x_i)^2`` (thesis
    Eq 6.2 with labeled cost 1/l, as svmlin); unlabeled rows are ignored.

    Parameters
    ----------
    gamma_A : float, default=1e-3
        Ambient-norm weight (svmlin ``-W``, the thesis' lambda in ch. 6); LIBLINEAR's C is
        ``1/(gamma_A l)``.
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
        Marker of unlabeled rows in y, which the fit ignores. Default: none for a y passed to
        ``fit`` (every entry is a class, -1 included), 0 (svmlin / SVMlight's) for labels read
        with the data (``y=None``).
    client : distributed.Client, optional
        Client to run on; default: the current client, else a LocalCluster started on demand.
    n_blocks : int, optional
        Blocks to split in-memory X into (default: one per worker thread).
    """

    def _row_arrays(self, y, costs):
        return hinge_costs(y, costs)
