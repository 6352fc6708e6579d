"""Semi-supervised learning with sparse eigenfunction bases (Sinha and Belkin, NIPS 2009).

Under the cluster assumption each dense region of the data has a representative eigenfunction of
the kernel operator, positive on the region and near zero elsewhere (no sign change); a
classifier is then a sparse combination of them. The fit: the eigenvectors of the kernel matrix
over all rows (labeled and unlabeled), those with no sign change up to ``sign_tol`` (the seed's
``N_eps``), the Lasso on the labeled rows over them, and the Nystrom extension for new rows, so
that the model is a kernel expansion ``f(x) = sum_j W_j k(x_j, x) + b`` (the seed's Eq 3). The
computations are in :mod:`dask_ssl.solvers.eigenfunction`.

With ``gamma_S="auto"`` (the default) the l1 weight is chosen on the labeled rows against the
supervised counterpart, kernel RLS on the labeled rows alone, which stays unless a Lasso
candidate is better beyond the noise (:mod:`._gamma_s_selection`).
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ..cluster import get_client
from ..kernels.base import check_kernel, kernel_matrix
from ..kernels.nystrom import NystromFeatures
from ..linalg.blas import blas_for_rows
from ..solvers import eigenfunction as solve
from ._clone import SharesClient
from ._constraints import AUTO, COUNT, NON_NEGATIVE, constraints, validate
from ._gamma_s_selection import SEED_GAMMA_S, kernel_rls, select_gamma_s
from ._input import check_finite_local, fit_input, gather_rows, to_blocks
from ._selection import enough_labels, warn_unchecked
from ._selection_cost import measured_fit, selecting
from ._transduction_selection import labeled_rows
from ._rbf_width import WIDTH_FACTOR, blocks_rbf_gamma, default_rbf_gamma
from .artifact import pack_matrix, unpack_matrix
from .base import OneVsRestLabels, fitted_info, restore_info
from .manifold import expansion_scores

#: The default RBF width: ``sigma`` this many times the mean distance to the 10 nearest rows
#: (twice the package's kernel default): eigenfunctions follow regions, not single points.
#: At the package default, eigenvectors living on a handful of rows deep in the spectrum pass
#: the filter and the Lasso fits the few labels with them (the seed's toy mixture, breast
#: cancer); at twice that width the filtered set is the regions' representatives.
EIGEN_WIDTH_FACTOR = 2 * WIDTH_FACTOR
#: Up to this many rows the exact eigendecomposition runs on one BLAS thread.
SINGLE_THREAD_ROWS = 2000
#: Where the estimator widens the shared constraints: the exact eigenvectors (None), the l1
#: weight chosen on the labels ("auto").
_OVERRIDES = dict(n_components=[COUNT, None], gamma_S=[NON_NEGATIVE, AUTO])


class SparseEigenfunctionClassifier(SharesClient, OneVsRestLabels, ClassifierMixin,
                                    BaseEstimator):
    """Sparse eigenfunction bases (SSL-SEB, Sinha and Belkin 2009): the Lasso over the kernel
    matrix's eigenvectors without sign change, extended to new rows by Nystrom.

    Per one-vs-rest class column (+1/-1 on the labeled rows) the fit minimizes

        (1/2l) ||y_L - Psi_L beta - b||^2 + gamma_S ||beta||_1

    over the eigenfunctions ``psi_i`` that pass the filter (``Psi_L`` their values on the ``l``
    labeled rows), ``psi_i = sqrt(n) v_i`` on the training rows and ``psi_i(x) = sqrt(n) /
    lambda_i sum_j v_i(x_j) k(x, x_j)`` elsewhere (``v_i`` unit norm). The seed's Eq 1, with its
    unit-norm design ``V_L``, is this objective times ``2l`` with ``lambda = 2 l gamma_S /
    sqrt(n)``.

    Parameters
    ----------
    kernel : str or callable, default "rbf"
        The kernel k (the seed's Gaussian ``exp(-||x - z||^2 / 2 omega^2)`` is ``"rbf"`` with
        ``gamma = 1 / (2 omega^2)``). It should be positive (an RBF kernel is): the top
        eigenvector of a positive matrix never changes sign, so the filter keeps at least it.
    kernel_params : dict, optional
        The kernel's parameters. An RBF kernel without ``gamma`` gets ``omega``
        :data:`EIGEN_WIDTH_FACTOR` times the mean distance from a row to its 10 nearest rows;
        the value used is in ``kernel_params_``.
    n_components : int or None, default None
        None: the exact eigenvectors of the ``n x n`` kernel matrix (``O(n^3)`` on the driver,
        the model expands over all ``n`` rows). An int ``m``: the eigenvectors of the Nystrom
        approximation ``K_nm K_mm^-1 K_mn`` on ``m`` landmark rows, computed on the workers
        (nothing ``n x n`` is formed; the model expands over the ``m`` landmarks). With every
        row a landmark the two agree.
    landmarks : {"uniform", "kmeans++"}, default "uniform"
        How the ``m`` landmarks are drawn (:class:`~dask_ssl.kernels.nystrom.NystromFeatures`).
    eig_tol : float, default 1e-8
        Eigenvectors whose eigenvalue is below ``eig_tol`` times the largest are left out: their
        Nystrom extension divides by a numerically zero eigenvalue.
    sign_tol : float in [0, 1], default 0.1
        eps of the seed, relative: an eigenvector passes the filter when its entries on one
        side of zero are all within ``sign_tol`` times its largest absolute entry. 1 keeps
        every eigenvector (the seed's KPCA+L1 baseline).
    gamma_S : float or "auto", default "auto"
        The l1 weight (the seed's lambda, ``2 l gamma_S / sqrt(n)`` in its units; thesis ch. 5
        gamma_S for an l1 path). 0 is the least-squares fit on the filtered basis. "auto":
        chosen by cross-validation on the labeled rows among
        :data:`~dask_ssl.models._gamma_s_selection.AUTO_GAMMA_S` and the supervised
        counterpart, kernel RLS on the labeled rows with the same kernel and its ridge by
        leave-one-out (:mod:`dask_ssl.models._gamma_s_selection` says why that one). A
        Lasso candidate replaces the supervised one only when it errs on fewer held-out rows
        and a paired test over the labeled rows finds it better beyond the noise
        (:mod:`dask_ssl.models._selection`), so where the eigenfunctions do not follow the
        labels the fit is kernel RLS's. With fewer than 5 labeled rows in a class the seeds'
        0.02 stands unchecked, with a warning.
    fit_intercept : bool, default False
        An unpenalized bias ``b``. The seed has none: where the data has a cluster per class
        the top eigenvectors carry the level, and a bias moves the boundary out of the valley
        between the clusters. With one compact class and one spread one (a density level set
        is the boundary) it is needed.
    tol : float, default 1e-6
        Tolerance of the Lasso's coordinate descent.
    max_iter : int, default 10000
        Coordinate-descent sweeps of the Lasso.
    unlabeled : scalar, default -1
        Marker of unlabeled rows in ``y``.
    client, n_blocks
        Cluster and row blocks of the Nystrom path.
    random_state : int or None
        Draws the landmarks.

    Attributes
    ----------
    classes_ : ndarray
    eigenvalues_ : ndarray of shape (r,)
        The kernel matrix's (or its Nystrom approximation's) eigenvalues kept, largest first.
    basis_ : ndarray of shape (n_basis_,)
        Positions in ``eigenvalues_`` of the eigenfunctions without sign change (``N_eps``).
    coef_ : ndarray of shape (n_basis_, n_columns)
        beta per class column over ``basis_`` (one column for two classes, positive
        ``classes_[1]``); zero where the supervised kernel RLS was chosen.
    n_nonzero_ : int
        Eigenfunctions with a non-zero coefficient in some column: the model's sparsity (0
        where the supervised kernel RLS was chosen).
    gamma_S_ : float or None
        The l1 weight fitted: ``gamma_S``, the one "auto" chose, or None where "auto" chose
        the supervised kernel RLS.
    selection_ : list of dict
        The candidates of ``gamma_S="auto"`` (``gamma_S`` None and the ridge ``gamma_A`` it
        chose for kernel RLS, first; ``gamma_S`` for the Lasso), their held-out ``errors``,
        ``error``, ``stderr``, ``squared`` residual, the paired tests ``passed`` and whether
        ``chosen`` (:func:`dask_ssl.models._selection.table`); empty where nothing was
        chosen.
    selection_cost_ : dict or None
        What the selection cost beside the rest of the fit
        (:mod:`dask_ssl.models._selection_cost`); None where nothing was chosen.
    expansion_points_ : ndarray or CSR
        All training rows (exact), the landmarks (``n_components``), or the labeled rows
        where the supervised kernel RLS was chosen.
    dual_coef_ : ndarray of shape (n_points, n_columns)
        The seed's W: ``f(x) = k(x, expansion_points_) @ dual_coef_ + intercept_``.
    intercept_ : ndarray of shape (n_columns,)
    landmark_indices_ : ndarray or None
        Row numbers of the landmarks (``n_components``).
    kernel_params_ : dict
    objective_ : float or ndarray
        The Lasso objective per column at the fit; where kernel RLS was chosen, its
        ``(1/l) ||y - K_LL alpha||^2 + gamma_A alpha^T K_LL alpha``.
    n_iter_ : int
        Coordinate-descent sweeps (the most of any column); 1 for kernel RLS (a direct
        solve).
    history_ : list
        Empty (one convex fit, no stages).
    transduction_ : ndarray of shape (n,)
        Labels of the training rows.
    n_features_in_, n_labeled_, data_shape_, fit_seconds_
    """

    def __init__(self, *, kernel="rbf", kernel_params=None, n_components=None,
                 landmarks="uniform", eig_tol=1e-8, sign_tol=0.1, gamma_S="auto",
                 fit_intercept=False, tol=1e-6, max_iter=10000, unlabeled=-1, client=None,
                 n_blocks=None, random_state=None):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_components = n_components
        self.landmarks = landmarks
        self.eig_tol = eig_tol
        self.sign_tol = sign_tol
        self.gamma_S = gamma_S
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.unlabeled = unlabeled
        self.client = client
        self.n_blocks = n_blocks
        self.random_state = random_state

    _parameter_constraints = constraints(__init__, **_OVERRIDES)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _check_params(self) -> None:
        """Every hyperparameter against its declared constraint, then the kernel's own
        parameters; first in ``fit``, before any work."""
        validate(self)
        check_kernel(self.kernel, self.kernel_params)

    # fitting -----------------------------------------------------------------------------
    @measured_fit
    def fit(self, X, y=None):
        """Fit on labeled and unlabeled rows.

        Parameters
        ----------
        X : array, sparse matrix, dask array or RowBlocks, shape (n, n_features)
            All training rows: the eigenvectors are those of their kernel matrix.
        y : array of shape (n,), optional
            Classes, ``unlabeled`` on unlabeled rows; from the blocks' labels when omitted.
        """
        t0 = time.perf_counter()
        self._check_params()
        X, labels = fit_input(self, X, y)
        n = labels.codes.size
        if self.n_components is not None and self.n_components > n:
            raise ValueError(f"n_components={self.n_components} exceeds the {n} rows")
        rows = np.flatnonzero(labels.labeled)
        if self.n_components is None:
            basis, points, kparams = self._exact(X, rows)
            self.landmark_indices_ = None
            source = points  # where the labeled rows are read, if the selection needs them
        else:
            basis, points, kparams, source = self._nystrom(X, rows)
        keep = solve.no_sign_change(basis.lowest, basis.highest, self.sign_tol)
        if not keep.any():
            raise ValueError(f"no eigenvector of the kernel matrix is without sign change at "
                             f"sign_tol={self.sign_tol}: raise sign_tol, or use a positive "
                             f"kernel (kernel={self.kernel!r})")
        Y = labels.columns()[rows]
        self.kernel_params_ = kparams
        self.gamma_S_, self.selection_, XL, K_LL = self._gamma_S(
            basis.labeled[:, keep], Y, labels.codes[rows], source, rows)
        self.classes_ = labels.classes
        self.eigenvalues_ = basis.values
        self.basis_ = np.flatnonzero(keep)
        if self.gamma_S_ is None:
            # the supervised counterpart won: kernel RLS over the labeled rows
            gamma_A = self.selection_[0]["gamma_A"]
            alpha = kernel_rls(K_LL, Y, gamma_A)
            self.coef_ = np.zeros((self.basis_.size, Y.shape[1]))
            self.expansion_points_, self.dual_coef_ = XL, alpha
            self.intercept_ = np.zeros(Y.shape[1])
            residual = Y - K_LL @ alpha
            objective = ((residual ** 2).sum(axis=0) / rows.size
                         + gamma_A * np.sum(alpha * (K_LL @ alpha), axis=0))
            n_iter = 1  # one direct solve
        else:
            fit = solve.lasso(basis.labeled[:, keep], Y, self.gamma_S_,
                              fit_intercept=self.fit_intercept, tol=self.tol,
                              max_iter=self.max_iter)
            self.coef_ = fit.coef
            self.expansion_points_ = points
            self.dual_coef_ = basis.extension[:, keep] @ fit.coef
            self.intercept_ = fit.intercept
            objective, n_iter = fit.objective, fit.n_iter
        self.n_nonzero_ = int(np.any(self.coef_ != 0, axis=1).sum())
        self.objective_ = float(objective[0]) if objective.size == 1 else objective
        self.n_iter_ = n_iter
        self.history_ = []
        self.n_features_in_ = self.expansion_points_.shape[1]
        self.n_labeled_ = int(rows.size)
        self.data_shape_ = (n, self.n_features_in_)
        self.transduction_ = self._labels_from_scores(self.decision_function(X))
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _gamma_S(self, Psi_L, Y, truth, source, rows):
        """``(gamma_S_, selection_, X_L, K_LL)``: the given l1 weight; with "auto" the seeds'
        where the labels are too few to choose (with a warning), else the cross-validated
        choice (None: the supervised kernel RLS). ``X_L`` and ``K_LL``, the labeled rows
        ``rows`` of ``source`` and their kernel matrix, are fetched for the selection only
        (else None)."""
        if self.gamma_S != "auto":
            return float(self.gamma_S), [], None, None
        if not enough_labels(truth):
            warn_unchecked(self, "gamma_S")
            return SEED_GAMMA_S, [], None, None
        with selecting():
            XL = labeled_rows(source, rows)
            K_LL = kernel_matrix(XL, kernel=self.kernel, kernel_params=self.kernel_params_)
            gamma_S, selection = select_gamma_s(Psi_L, K_LL, Y,
                                                fit_intercept=self.fit_intercept,
                                                tol=self.tol, max_iter=self.max_iter)
        return gamma_S, selection, XL, K_LL

    def _kernel_params(self, default_gamma) -> dict:
        """``kernel_params`` with the default RBF width filled in (``default_gamma()``)."""
        kparams = dict(self.kernel_params or {})
        if self.kernel == "rbf" and "gamma" not in kparams:
            kparams["gamma"] = default_gamma()
        return kparams

    def _exact(self, X, rows):
        """The eigenbasis of the whole kernel matrix, on the driver."""
        points = gather_rows(X)
        check_finite_local(points)
        # default_rbf_gamma is 1 / (2 sigma^2) at WIDTH_FACTOR; sigma scales with the factor
        kparams = self._kernel_params(
            lambda: default_rbf_gamma(points) * (WIDTH_FACTOR / EIGEN_WIDTH_FACTOR) ** 2)
        K = kernel_matrix(points, kernel=self.kernel, kernel_params=kparams)
        # a small eigendecomposition gains nothing from BLAS threads, and on a shared host
        # they lose much (breast cancer, 569 rows, under load: 15 s threaded, 0.3 s on one)
        with blas_for_rows(K.shape[0], SINGLE_THREAD_ROWS):
            basis = solve.exact_eigenbasis(K, rows, float(self.eig_tol))
        return basis, points, kparams

    def _nystrom(self, X, rows):
        """The eigenbasis of the Nystrom approximation, from feature blocks on the workers."""
        blocks = to_blocks(X, get_client(self.client), self.n_blocks)
        kparams = self._kernel_params(lambda: blocks_rbf_gamma(blocks,
                                                               factor=EIGEN_WIDTH_FACTOR))
        fm = NystromFeatures(kernel=self.kernel, kernel_params=kparams,
                             n_components=self.n_components, landmarks=self.landmarks,
                             random_state=self.random_state).fit(blocks)
        Z = fm.transform(blocks)
        try:
            basis = solve.nystrom_eigenbasis(Z, fm.normalization_, rows, float(self.eig_tol))
        finally:
            Z.client.cancel(Z.blocks)
        self.landmark_indices_ = fm.component_indices_
        return basis, fm.components_, kparams, blocks

    # prediction --------------------------------------------------------------------------
    def decision_function(self, X):
        """``f(x) = sum_j W_j k(x_j, x) + b`` per class column (the Nystrom extension of the
        fitted combination of eigenfunctions): shape (m,) for two classes (positive
        ``classes_[1]``), (m, n_classes) otherwise."""
        check_is_fitted(self, "dual_coef_")
        return expansion_scores(self, X, self.expansion_points_)

    def predict_proba(self, X):
        """Class probabilities from the least-squares scores: each column's ``f`` estimates
        ``2 P(class) - 1`` (targets +1/-1), so ``P = (1 + f) / 2`` clipped to [0, 1]; for more
        than two classes the columns are then scaled to sum to one (uniform where all are 0).
        The most probable class is :meth:`predict`'s, but for ties where clipping makes two
        columns equal."""
        S = self.decision_function(X)
        if S.ndim == 1:
            p = np.clip((1.0 + S) / 2.0, 0.0, 1.0)
            return np.column_stack([1.0 - p, p])
        P = np.clip((1.0 + S) / 2.0, 0.0, 1.0)
        total = P.sum(axis=1, keepdims=True)
        return np.where(total > 0, P / np.where(total > 0, total, 1.0), 1.0 / P.shape[1])

    # persistence (see artifact.py) --------------------------------------------------------
    def _fitted_info(self) -> dict:
        if callable(self.kernel):
            raise ValueError("a model with a callable kernel cannot be saved (models are stored "
                             "without pickle); use a kernel by name")
        return {**fitted_info(self), "kernel_params_": self.kernel_params_,
                "n_nonzero_": self.n_nonzero_, "gamma_S_": self.gamma_S_}

    def _fitted_arrays(self) -> dict:
        self._fitted_info()  # refuses a callable kernel before anything is written
        arrays = {"dual_coef": self.dual_coef_, "intercept": self.intercept_,
                  "classes": self.classes_, "eigenvalues": self.eigenvalues_,
                  "basis": self.basis_, "coef": self.coef_,
                  **pack_matrix("points", self.expansion_points_)}
        if self.landmark_indices_ is not None:
            arrays["landmark_indices"] = self.landmark_indices_
        return arrays

    def _restore(self, arrays: dict, doc: dict) -> None:
        self.expansion_points_ = unpack_matrix("points", arrays)
        self.dual_coef_ = arrays["dual_coef"]
        self.intercept_ = arrays["intercept"]
        self.classes_ = arrays["classes"]
        self.eigenvalues_ = arrays["eigenvalues"]
        self.basis_ = arrays["basis"]
        self.coef_ = arrays["coef"]
        self.landmark_indices_ = arrays.get("landmark_indices")
        restore_info(self, doc)
        self.kernel_params_ = doc["kernel_params_"]
        self.n_nonzero_ = doc["n_nonzero_"]
        # models stored before gamma_S was chosen on the labels: the given weight, no table
        self.gamma_S_ = doc.get("gamma_S_", self.gamma_S)
        self.selection_ = doc.get("selection_", [])
        self.selection_cost_ = doc.get("selection_cost_")
