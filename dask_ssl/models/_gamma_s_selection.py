"""``gamma_S="auto"`` of :class:`~dask_ssl.models.SparseEigenfunctionClassifier`: the Lasso's l1
weight chosen on the labeled rows, against the supervised counterpart on the same labels.

The candidates are the supervised model first, then the Lasso over the filtered eigenfunctions
at each l1 weight of :data:`AUTO_GAMMA_S` (a path, largest first, as scikit-learn's
``lasso_path`` runs it). The eigenvectors are those of the kernel matrix over every row,
labeled or not, and read no label: they are computed once and every fold and candidate reuses
them, so the whole selection costs a few small Lasso paths and ``l x l`` solves beside the one
eigendecomposition of the fit.

The supervised counterpart is kernel RLS on the labeled rows alone (:func:`kernel_rls`): the
same kernel at the same width, the same squared loss on the same +1/-1 targets, the ridge
``gamma_A l`` with ``gamma_A`` among :data:`SUPERVISED_GAMMA_A` by exact leave-one-out on the
labels it is fitted on (:func:`loo_gamma_A`); at a given ``gamma_A`` it is LapRLS with
``gamma_I = 0``. The ridge is chosen, not the seeds' ``gamma_A = 1e-6`` of LapRLS, because
there the graph term regularizes and here nothing else does: at 1e-6 kernel RLS all but
interpolates a few labels, a weaker counterpart than a supervised user would fit. Why that and
not the same
eigen-Lasso over the labeled rows' own kernel matrix: what the unlabeled rows give this method
is its basis (the eigenfunctions of the density they sample, and the filter that keeps one per
dense region); with the labeled rows alone there is no density to read, and the basis of all
eigenvectors of ``K_LL`` spans exactly the kernel expansions over the labeled rows, the span of
kernel RLS. Kernel RLS is the least-squares fit in that span, the package's supervised
counterpart of its kernel methods (LapRLS's ``gamma_I = 0``), so the comparison isolates what
the unlabeled rows add.

Every candidate is scored by :data:`._selection.CV_FOLDS`-fold cross-validation on the labeled
rows (stratified, :func:`._selection.fold_of`): a fold's held-out rows stay in the basis as
unlabeled rows, as in the final fit; only held-out labeled rows are scored. Kernel RLS
chooses its ridge inside each fold, on the fold's training labels alone, so that its score is
that of the whole supervised procedure, as the Lasso's is of a fit at a given weight. The choice is
:func:`._selection.choose` with the supervised candidate first: a Lasso candidate replaces it
only when it errs on fewer held-out rows and a paired test over the labeled rows finds it
better beyond the noise. With fewer than :data:`._selection.MIN_PER_CLASS` labels in a class
the seeds' ``gamma_S`` (:data:`SEED_GAMMA_S`) stands unchecked, with a
:class:`._selection.SelectionWarning`.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from sklearn.linear_model import lasso_path

from ._graph_weight import truth_of
from ._selection import CV_FOLDS, choose, fold_of, table

#: l1 weights tried, largest first (the path's order). Basis functions have unit mean square
#: over the rows and targets are +1/-1, so a weight near 1 zeroes every coefficient; the path
#: spans two and a half decades down from there, through the seeds' value.
AUTO_GAMMA_S = (0.2, 0.05, 0.02, 0.005, 0.001)
#: The seeds' l1 weight, used where the labels are too few to choose.
SEED_GAMMA_S = 0.02
#: Ridges ``gamma_A`` of the supervised counterpart, kernel RLS, tried by leave-one-out: every
#: decade from LapRLS's seeds' 1e-6 (thesis Table 2.6; near interpolation) to 1 (a ridge of
#: ``l``, against kernel values at most 1: the fit shrinks towards 0).
SUPERVISED_GAMMA_A = tuple(10.0 ** k for k in range(-6, 1))


def loo_outputs(K_LL: np.ndarray, Y: np.ndarray, gammas) -> np.ndarray:
    """Kernel RLS's exact leave-one-out outputs on ``l`` labeled rows at each ridge of
    ``gammas``: shape ``(len(gammas), l, c)``. From one eigendecomposition ``K_LL = U diag(s)
    U^T``: with ``G = (K_LL + gamma_A l I)^-1 = U diag(1 / (s + gamma_A l)) U^T`` the left-out
    residual of row ``i`` is ``(G y)_i / G_ii`` (the hat matrix's ``(y - H y) / (1 - diag H)``
    in a form that keeps its digits where ``diag H`` is near 1, a small ridge on close rows)."""
    l = K_LL.shape[0]
    s, U = np.linalg.eigh(0.5 * (K_LL + K_LL.T))
    s = np.maximum(s, 0.0)
    UtY = U.T @ Y
    out = np.empty((len(gammas),) + Y.shape)
    for j, gamma_A in enumerate(gammas):
        inverse = 1.0 / (s + gamma_A * l)
        residual = U @ (inverse[:, None] * UtY)
        out[j] = Y - residual / np.einsum("ij,j,ij->i", U, inverse, U)[:, None]
    return out


def loo_gamma_A(K_LL: np.ndarray, Y: np.ndarray, gammas=SUPERVISED_GAMMA_A) -> float:
    """The ridge of kernel RLS on the labeled rows with the fewest leave-one-out errors
    (:func:`loo_outputs`; ties: the smaller summed squared residual, then the smaller
    ridge)."""
    truth = truth_of(Y)
    scores = [(int(np.sum(truth_of(out) != truth)), float(np.sum((Y - out) ** 2)))
              for out in loo_outputs(K_LL, Y, gammas)]
    return float(gammas[min(range(len(gammas)), key=lambda j: (scores[j], j))])


def kernel_rls(K_LL: np.ndarray, Y: np.ndarray, gamma_A: float) -> np.ndarray:
    """Kernel RLS on ``l`` labeled rows: ``alpha = (K_LL + gamma_A l I)^-1 Y`` (``Y``: ``l x
    c`` +1/-1), so that ``f(x) = k(x, X_L) @ alpha``; LapRLS with ``gamma_I = 0``."""
    l = K_LL.shape[0]
    A = 0.5 * (K_LL + K_LL.T) + gamma_A * l * np.eye(l)
    try:
        return scipy.linalg.solve(A, Y, assume_a="pos")
    except np.linalg.LinAlgError:
        # an RBF matrix with repeated rows is singular up to the small ridge's rounding
        return np.linalg.lstsq(A, Y, rcond=None)[0]


def lasso_outputs(Psi_train, Y_train, Psi_held, gammas, *, fit_intercept: bool, tol: float,
                  max_iter: int) -> np.ndarray:
    """Outputs on the held-out rows of the Lasso fitted at each weight of ``gammas``
    (descending) on the training rows: shape ``(len(gammas), held, columns)``. One
    scikit-learn ``lasso_path`` per class column (its multi-output form would be the
    multi-task Lasso, a shared support, which the fit does not use); an intercept by
    centering, as scikit-learn's ``Lasso`` fits it."""
    mean_psi = Psi_train.mean(axis=0) if fit_intercept else np.zeros(Psi_train.shape[1])
    mean_y = Y_train.mean(axis=0) if fit_intercept else np.zeros(Y_train.shape[1])
    out = np.empty((len(gammas), Psi_held.shape[0], Y_train.shape[1]))
    for c in range(Y_train.shape[1]):
        _, coefs, _ = lasso_path(Psi_train - mean_psi, Y_train[:, c] - mean_y[c],
                                 alphas=np.asarray(gammas, dtype=float), tol=tol,
                                 max_iter=max_iter)
        # coefs: (basis, gammas); the intercept makes each fit pass through the means
        out[:, :, c] = ((Psi_held - mean_psi) @ coefs).T + mean_y[c]
    return out


def select_gamma_s(Psi_L, K_LL, Y, *, fit_intercept: bool, tol: float, max_iter: int,
                   gammas=AUTO_GAMMA_S) -> tuple[float | None, list]:
    """``(gamma_S, selection_)``: the chosen l1 weight, None where the supervised kernel RLS
    wins (module docstring); the table's first row holds kernel RLS's ``gamma_A`` on all the
    labels, the one the fit then uses.

    Parameters
    ----------
    Psi_L : ndarray of shape (l, |N|)
        The filtered eigenfunctions on the labeled rows.
    K_LL : ndarray of shape (l, l)
        The kernel among the labeled rows.
    Y : ndarray of shape (l, c)
        +1/-1 targets per class column.
    """
    truth = truth_of(Y)
    fold = fold_of(truth, CV_FOLDS)
    outputs = np.empty((1 + len(gammas),) + Y.shape)
    for f in range(CV_FOLDS):
        held, train = fold == f, fold != f
        K_train = K_LL[np.ix_(train, train)]
        alpha = kernel_rls(K_train, Y[train], loo_gamma_A(K_train, Y[train]))
        outputs[0, held] = K_LL[np.ix_(held, train)] @ alpha
        outputs[1:, held] = lasso_outputs(Psi_L[train], Y[train], Psi_L[held], gammas,
                                          fit_intercept=fit_intercept, tol=tol,
                                          max_iter=max_iter)
    wrong = np.array([truth_of(out) != truth for out in outputs])
    squared = np.array([np.sum((Y - out) ** 2, axis=1) for out in outputs])
    best = choose(wrong, squared, supervised=0)
    rows = [{"gamma_S": None, "gamma_A": loo_gamma_A(K_LL, Y)}]
    rows += [{"gamma_S": float(g), "gamma_A": None} for g in gammas]
    return (None if best == 0 else float(gammas[best - 1])), table(rows, wrong, squared, best)
