"""What the kernel S3VMs (thesis ch. 3) share: the weighted kernel fit on expansion coefficients,
the S3VM objective they are judged by, and the estimator base (one-vs-rest, prediction, saving).

Everything here is dense on the driver: the n x n Gram matrix of the l + u training rows and
Cholesky factors of n x n systems, the sizes at which the seeds ran these methods (n up to a few
thousand: 2,000 rows are 32 MB per matrix).

The objective is the thesis' Eq 3.7 normalization (labeled losses weighted ``1/l``, unlabeled
ones ``gamma_u/u``), with ``V`` the half squared hinge ``max(0, 1 - t)^2 / 2``
(``loss="squared_hinge"``)
or the half squared loss ``(1 - t)^2 / 2`` (``loss="squared"``); ``f(x) = sum_i alpha_i K(x, x_i)``
without a bias (Eq 3.9).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..kernels import check_kernel, kernel_matrix
from ..kernels.nystrom import scale_gamma
from ..linalg.kernels import active_weights, breakpoints_between, line_derivatives, loss_sum
from ..linalg import RowBlocks
from ..linalg.blas import single_blas_thread
from ..linalg.line_search import exact_root
from ._constraints import validate
from ._input import check_local, fit_input, target_columns
from ._part import fit_parts
from .base import OneVsRestLabels, fitted_info, restore_info
from ._selection_cost import measured_fit

LOSSES = ("squared_hinge", "squared")
KERNEL_S3VM_LOSSES = StrOptions(set(LOSSES))
#: The supervised estimator each loss gives without unlabeled rows.
_SUPERVISED = {"squared_hinge": "L2-SVM", "squared": "RLS"}


def half_loss(t: np.ndarray, loss: str) -> np.ndarray:
    """V(t): ``max(0, 1 - t)^2 / 2`` for ``"squared_hinge"``, ``(1 - t)^2 / 2`` for
    ``"squared"``."""
    m = 1.0 - t
    return 0.5 * (np.maximum(m, 0.0) if loss == "squared_hinge" else m) ** 2


def s3vm_objective(alpha, f, y, gamma_A, gamma_u, loss, n_pos=None) -> float:
    """S3VM objective of ``f = K alpha`` on the training rows (Eq 3.7 at T = 0, hard labels).

    ``gamma_A/2 alpha^T K alpha + 1/l sum_l V(y_i f_i) + gamma_u/u sum_u V(y_j f_j)`` with each
    unlabeled label the better one for f (``min(V(f), V(-f))``, what DA monitors), or, with
    ``n_pos``, the best labeling that has exactly ``n_pos`` positives (the balance constraint
    Eq 3.2 that branch and bound enforces): the ``n_pos`` largest outputs positive.
    """
    lab = y != 0
    fu = f[~lab]
    u = fu.size
    if n_pos is None:
        unl = np.minimum(half_loss(fu, loss), half_loss(-fu, loss)).sum()
    else:
        order = np.argsort(-fu, kind="stable")
        unl = half_loss(fu[order[:n_pos]], loss).sum() + half_loss(-fu[order[n_pos:]], loss).sum()
    labeled = half_loss(y[lab] * f[lab], loss).mean()
    return float(0.5 * gamma_A * (alpha @ f) + labeled + (gamma_u / u * unl if u else 0.0))


def weighted_alpha(K, a, b, gamma_A, factor=None) -> np.ndarray:
    """alpha minimizing ``gamma_A/2 alpha^T K alpha + sum_i (a_i/2 f_i^2 - b_i f_i)``, f = K alpha.

    The stationarity condition ``gamma_A alpha + A (K alpha) = b`` is solved in the symmetric
    form ``alpha = S (gamma_A I + S K S)^-1 S^-1 b`` with ``S = A^(1/2)``: rows of zero weight
    get alpha = 0 (their b is 0 too) without the infinite entries of ``K + gamma_A A^-1``.
    ``factor`` is a Cholesky factor of ``gamma_A I + S K S`` to reuse (Eq 3.10's factor-once).
    """
    s = np.sqrt(a)
    if factor is None:
        factor = weighted_factor(K, a, gamma_A)
    rhs = np.divide(b, s, out=np.zeros_like(b), where=s > 0)
    return s * scipy.linalg.cho_solve(factor, rhs)


def weighted_factor(K, a, gamma_A):
    """Cholesky factor of ``gamma_A I + S K S``, ``S = diag(sqrt(a))``."""
    s = np.sqrt(a)
    H = s[:, None] * K * s[None, :]
    H[np.diag_indices_from(H)] += gamma_A
    return scipy.linalg.cho_factor(H, lower=False, check_finite=False)


def _exact_step(f, df, d, cpos, cneg, gamma_A) -> float:
    """Exact minimizer over delta >= 0 of the objective along ``alpha + delta d`` (f moves by
    ``delta df``): its derivative is continuous, increasing and piecewise linear (6.2.2)."""
    zeros = np.zeros_like(f)
    der, slope, _, _ = line_derivatives(f, df, cpos, cneg, zeros, zeros, np.zeros(1))
    positions, changes = breakpoints_between(f, df, cpos, cneg, 0.0, np.inf)
    return exact_root(0.0, gamma_A * (d @ f) + der[0], gamma_A * (d @ df) + slope[0], positions,
                      changes, np.inf)


def fit_weighted(K, cpos, cneg, gamma_A, loss, alpha0=None, *, tol=1e-8, max_iter=100):
    """Minimize ``gamma_A/2 alpha^T K alpha + sum_i [cpos_i V(f_i) + cneg_i V(-f_i)]``.

    Each row carries a +1 copy of cost ``cpos`` and a -1 copy of cost ``cneg`` (a labeled row
    one of them, an unlabeled row under DA both). ``"squared"``: one weighted solve.
    ``"squared_hinge"``: finite Newton (thesis 3.5.1, index sets i0..i3): solve with the copies
    inside their margins, stop when that solution keeps the same copies inside (to ``tol``),
    else take the exact line-search step and repeat. Returns ``(alpha, f, objective, n_newton)``.
    """
    n = K.shape[0]
    zeros = np.zeros(n)
    if loss == "squared":
        csq = cpos + cneg
        tsq = np.divide(cpos - cneg, csq, out=np.zeros(n), where=csq > 0)
        a, b = active_weights(zeros, zeros, zeros, csq, tsq)
        alpha = weighted_alpha(K, a, b, gamma_A)
        f = K @ alpha
        obj = 0.5 * gamma_A * (alpha @ f) + 0.5 * (cpos @ (1 - f) ** 2 + cneg @ (1 + f) ** 2)
        return alpha, f, float(obj), 1
    alpha = zeros.copy() if alpha0 is None else np.array(alpha0, dtype=np.float64)
    f = K @ alpha
    for it in range(1, max_iter + 1):
        a, b = active_weights(f, cpos, cneg, zeros, zeros)
        alpha_bar = weighted_alpha(K, a, b, gamma_A)
        f_bar = K @ alpha_bar
        if _margin_consistent(f, f_bar, cpos, cneg, tol):
            alpha, f = alpha_bar, f_bar
            break
        d = alpha_bar - alpha
        delta = _exact_step(f, f_bar - f, d, cpos, cneg, gamma_A)
        alpha = alpha + delta * d
        f = f + delta * (f_bar - f)
    return alpha, f, float(0.5 * gamma_A * (alpha @ f) + loss_sum(f, cpos, cneg, zeros, zeros)), it


def _margin_consistent(f, f_bar, cpos, cneg, tol) -> bool:
    # svmlin's check (thesis 6.2.3): every copy stays on the side of its margin it was solved on
    inside_pos = f < 1.0
    inside_neg = f > -1.0
    ok_pos = np.where(inside_pos, f_bar < 1.0 + tol, f_bar >= 1.0 - tol) | (cpos <= 0)
    ok_neg = np.where(inside_neg, f_bar > -1.0 - tol, f_bar <= -1.0 + tol) | (cneg <= 0)
    return bool(ok_pos.all() and ok_neg.all())


def dense_rows(X) -> np.ndarray:
    """X as a finite two-dimensional float64 array on the driver (sparse input and row blocks
    on the workers are gathered and densified); complex, string and ragged input is refused."""
    if isinstance(X, RowBlocks):
        X = X.gather_rows()
    X = check_local(X)
    return X.toarray() if sp.issparse(X) else X


def expansion_scores(est, X) -> np.ndarray:
    """``K(X, X_fit) alpha`` of a fitted kernel expansion (``X_fit_``, ``dual_coef_``)."""
    check_is_fitted(est, "dual_coef_")
    if not isinstance(X, RowBlocks):
        # scikit-learn's check of the feature count (and names), with its message
        X = validate_data(est, X, reset=False, accept_sparse="csr", dtype=np.float64,
                          ensure_all_finite=False)
    X = dense_rows(X)
    if X.shape[1] != est.X_fit_.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features; the model expects {est.X_fit_.shape[1]}")
    # a model pickled before kernel_params_ was fitted scores with its kernel_params, as then
    params = getattr(est, "kernel_params_", est.kernel_params)
    return kernel_matrix(X, est.X_fit_, kernel=est.kernel, kernel_params=params) @ est.dual_coef_


class KernelExpansionClassifier(ClassifierMixin, OneVsRestLabels, BaseEstimator):
    """Base of the kernel S3VMs: ``f_k(x) = sum_i alpha_ik K(x, x_i)`` over the training rows.

    Subclasses implement ``_fit_binary(K, y) -> dict`` (``y`` +1/-1 on labeled rows, 0 on
    unlabeled ones) returning ``alpha``, ``objective``, ``n_iter`` and optionally ``history``
    and ``transduction`` (+1/-1 per row) and ``attrs`` (further fitted attributes, stacked
    as columns over the one-vs-rest parts), and ``_check_params``. Multi-class is one-vs-rest;
    the kernel matrix is computed once for all classes.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # densified on the driver
        return tags

    def _check_params(self) -> None:
        """Every hyperparameter against its declared constraint, then the kernel's own
        parameters. Runs first in ``fit``, before any work."""
        validate(self)
        check_kernel(self.kernel, self.kernel_params)

    @measured_fit
    def fit(self, X, y, *, resume=False):
        """Fit on labeled and unlabeled rows.

        Parameters
        ----------
        X : array, sparse matrix or RowBlocks, shape (n, d)
            All training rows (the expansion points of the result), gathered dense.
        y : array of shape (n,) or None
            Class labels; rows equal to ``unlabeled`` (default -1) are unlabeled. None: the
            labels a RowBlocks X carries (svmlin's 0 marks its unlabeled rows). Without
            unlabeled rows the supervised kernel L2-SVM (RLS for ``loss="squared"``) is fitted,
            with a warning: the objective without its unlabeled term.
        resume : bool, default=False
            Continue from the estimator's ``checkpoint`` (estimators with one only).
        """
        t0 = time.perf_counter()
        self._check_params()
        if resume and getattr(self, "checkpoint", None) is None:
            raise ValueError(f"{type(self).__name__} has no checkpoint to resume from")
        X, labels = fit_input(self, X, y)
        X = dense_rows(X)
        classes, codes, marker = labels.classes, labels.codes, labels.marker
        fit_part = self._fit_binary
        if not (codes < 0).any():
            warnings.warn(f"y has no unlabeled rows (marker {marker!r}): {type(self).__name__} "
                          f"fits the supervised kernel {_SUPERVISED[self.loss]} on them",
                          UserWarning, stacklevel=2)
            fit_part = self._fit_supervised
        self.kernel_params_ = self._kernel_params(X)
        K = kernel_matrix(X, kernel=self.kernel, kernel_params=self.kernel_params_)
        targets = labels.targets
        parts = fit_parts(getattr(self, "checkpoint", None), len(targets), resume)
        self._shared = {}
        outs = []
        # Thousands of small factorizations: a threaded BLAS gains little on them and its
        # spinning threads cost up to 500x on a loaded host (0.5 s instead of 1 ms at n = 200).
        with single_blas_thread():
            self._settle(K, codes, targets, bool(resume), fit_part == self._fit_supervised)
            for cls, part in zip(targets, parts):
                outs.append(fit_part(K, target_columns(codes, [cls])[:, 0], part))
        del self._shared
        self.classes_ = classes
        self.X_fit_ = X
        self.dual_coef_ = np.column_stack([o["alpha"] for o in outs])
        self.n_features_in_ = X.shape[1]
        self.data_shape_ = X.shape
        self.n_labeled_ = int((codes >= 0).sum())
        one = len(outs) == 1
        self.objective_ = outs[0]["objective"] if one else np.array([o["objective"] for o in outs])
        self.n_iter_ = outs[0]["n_iter"] if one else np.array([o["n_iter"] for o in outs])
        histories = [o.get("history", []) for o in outs]
        self.history_ = histories[0] if one else histories
        self.transduction_ = self._labels_from_scores(
            np.column_stack([o["transduction"] for o in outs]))
        for name in outs[0].get("attrs", {}):
            values = [o["attrs"][name] for o in outs]
            setattr(self, name, values[0] if one else np.column_stack(values))
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _kernel_params(self, X) -> dict | None:
        """``kernel_params`` with the RBF width filled in from the rows ``X`` where it is not
        given: ``gamma = 1 / (n_features var(X))``, the rows' global scale (scikit-learn's
        ``SVC(gamma="scale")``, :func:`~dask_ssl.kernels.nystrom.scale_gamma`, the Nystrom map's
        default too; no label read). ``1 / n_features`` ignores the rows' scale:
        on HW digits' raw features (a kernel matrix near the identity) or tf-idf text (near
        constant) the annealing put every unlabeled row in one class. Not the local width of
        the graph estimators (:func:`~._rbf_width.default_rbf_gamma`): without a graph term
        only the kernel carries a few labels across their clusters, and at the local width
        KernelDAS3VM lost to its supervised counterpart on two moons (figures in the README)."""
        if self.kernel != "rbf" or "gamma" in (self.kernel_params or {}):
            return self.kernel_params
        return {**(self.kernel_params or {}), "gamma": scale_gamma(X)}

    def _settle(self, K, codes, targets, resume, supervised) -> None:
        """Settings an estimator chooses on the labeled rows once for all its one-vs-rest
        parts, before they are fitted (``supervised``: there are no unlabeled rows). None
        here."""

    def _fit_supervised(self, K, y, part) -> dict:
        """Every row labeled: the objective without its unlabeled term, minimized directly
        (the kernel L2-SVM, or kernel RLS for ``loss="squared"``, with costs ``1/l``)."""
        c = 1.0 / y.size
        alpha, _, objective, n_iter = fit_weighted(
            K, np.where(y > 0, c, 0.0), np.where(y < 0, c, 0.0), self.gamma_A, self.loss,
            tol=self.tol, max_iter=self.max_iter)
        return {"alpha": alpha, "objective": objective, "n_iter": n_iter, "transduction": y}

    # prediction --------------------------------------------------------------------------
    def decision_function(self, X):
        """``K(X, X_fit) alpha``: shape (n,) for two classes (positive = ``classes_[1]``), else (n, k)."""
        scores = expansion_scores(self, X)
        return scores[:, 0] if self.classes_.size == 2 else scores

    # persistence (see artifact.py): expansion points + coefficients; the kernel is a parameter
    def _fitted_info(self) -> dict:
        if callable(self.kernel):
            raise ValueError("a model with a callable kernel cannot be saved; use a kernel by "
                             "name with kernel_params")
        return {**fitted_info(self), "kernel_params_": self.kernel_params_}

    def _fitted_arrays(self) -> dict:
        return {"X_fit": self.X_fit_, "dual_coef": self.dual_coef_, "classes": self.classes_}

    def _restore(self, arrays: dict, doc: dict) -> None:
        self.X_fit_ = arrays["X_fit"]
        self.dual_coef_ = arrays["dual_coef"]
        self.classes_ = arrays["classes"]
        restore_info(self, doc)
        # older documents get it from _renames.upgrade_document
        self.kernel_params_ = doc["kernel_params_"]
