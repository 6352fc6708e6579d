"""Regularized spectral clustering and class-dependent Laplacian RLS (thesis 2.8.1, 2.8.2)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, ClassifierMixin, ClusterMixin, TransformerMixin

from ..kernels import check_kernel, graph_term_weight, kernel_matrix
from ._clone import SharesClient
from ._constraints import POSITIVE, constraints, validate
from ._graph_kernel import graph_on_rows, graph_regularizer
from ._graph_seam import check_graph_combination, clip_n_neighbors
from ._input import encode_labels
from ._kernel_s3vm import dense_rows, expansion_scores
from .base import OneVsRestLabels


class _KernelGraphModel(SharesClient, BaseEstimator):
    """Kernel expansion over the training rows, with a kNN-graph Laplacian built at fit."""

    def _check_params(self):
        """Every hyperparameter against its declared constraint, then the kernel's own
        parameters and the graph settings together. Runs first in ``fit``."""
        validate(self)
        check_kernel(self.kernel, self.kernel_params)
        check_graph_combination(self)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # densified on the driver
        return tags

    def _scores(self, X):
        return expansion_scores(self, X)


class RegularizedSpectralClustering(ClusterMixin, TransformerMixin, _KernelGraphModel):
    """Spectral clustering with an RKHS out-of-sample extension (thesis 2.8.1, Eqs 2.25-2.28).

    ``f = sum_i alpha_i K(., x_i)`` minimizing ``gamma_A ||f||_K^2 + gamma_I_eff f^T M f``
    subject to ``sum_i f(x_i) = 0`` and ``sum_i f(x_i)^2 = 1``: the generalized eigenproblem
    ``P (gamma K + K M K) P v = lambda P K^2 P v`` (Eq 2.28), ``gamma = gamma_A / gamma_I_eff``
    (``gamma_I_eff`` after ``graph_normalization``, as in :class:`LapRLS`), P the
    projection orthogonal to ``K 1``, its smallest eigenvalues, ``alpha = P v``. Two clusters are
    the signs of the first eigenfunction; more components are the regularized Laplacian
    eigenmap of Remark 2, with values on new rows through the kernel.

    K and the Laplacian are dense on the driver (n up to a few thousand). Solved in K's
    eigenbasis: with ``K = U S U^T`` and ``e = S U^T alpha`` (so ``f = U e`` on the training
    rows), Eq 2.28 becomes the symmetric problem ``(gamma S^-1 + U^T M U) e = lambda e`` on
    ``e`` orthogonal to ``U^T 1``, solved by :func:`scipy.linalg.eigh`. Directions where K's
    eigenvalues fall below ``eig_tol`` times the largest are left out: there ``K^2`` is
    numerically singular and Eq 2.28 has no definite solution (a smooth kernel such as the RBF
    has many).

    Parameters
    ----------
    gamma_A, gamma_I : float, default 1e-6 and 1e4
        The ambient and intrinsic weights of Eq 2.25 (gamma_I before ``graph_normalization``);
        only ``gamma = gamma_A / gamma_I_eff`` matters. The defaults are :class:`LapRLS`'s
        (the seeds', thesis Table 2.6): ``gamma = 1e-10 n^2`` with the default normalization,
        1e-6 on 100 rows and 1e-4 on 1000, where the first eigenfunction follows the graph.
    graph_normalization : {"n2", "edges", "none"}, default "n2"
        ``gamma_I_eff = gamma_I / n^2`` (thesis ch. 2, ``u + l = n``), ``gamma_I / sum W_ij``
        or ``gamma_I``, as in :class:`LapRLS`.
    n_components : int, default 1
        Eigenfunctions computed (smallest eigenvalues first).
    kernel, kernel_params
        As in :class:`KernelDAS3VM` (scikit-learn names).
    eig_tol : float, default 1e-10
    n_neighbors, metric, weights, t, symmetrize, normalized, p, search_epsilon, client,
    n_blocks, random_state
        The kNN graph, as in :class:`GraphTransduction` (``M = L^p``, normalized or not).

    Attributes
    ----------
    X_fit_ : training rows; dual_coef_ : ndarray (n, n_components), alpha
    eigenvalues_ : ndarray (n_components,)
    embedding_ : ndarray (n, n_components), f on the training rows
    labels_ : ndarray (n,), 1 where the first eigenfunction is positive, else 0
    """

    def __init__(self, *, gamma_A=1e-6, gamma_I=1e4, graph_normalization="n2", n_components=1,
                 kernel="rbf", kernel_params=None, eig_tol=1e-10, n_neighbors=10,
                 metric="euclidean", weights="heat", t=None, symmetrize="max", normalized=True,
                 p=1, search_epsilon=0.1, client=None, n_blocks=None, random_state=None):
        self.gamma_A = gamma_A
        self.gamma_I = gamma_I
        self.graph_normalization = graph_normalization
        self.n_components = n_components
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.eig_tol = eig_tol
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.weights = weights
        self.t = t
        self.symmetrize = symmetrize
        self.normalized = normalized
        self.p = p
        self.search_epsilon = search_epsilon
        self.client = client
        self.n_blocks = n_blocks
        self.random_state = random_state

    _parameter_constraints = constraints(__init__, gamma_I=[POSITIVE])

    def fit(self, X, y=None, *, graph=None):
        """Cluster the rows of X (``y`` is ignored); ``graph`` reuses a graph built on them."""
        self._check_params()
        X = dense_rows(X)
        if self.n_components > X.shape[0] - 2:
            raise ValueError(f"n_components={self.n_components} must be at most n - 2 = "
                             f"{X.shape[0] - 2} (n_samples={X.shape[0]})")
        k = None if graph is not None else clip_n_neighbors(self.n_neighbors, X.shape[0])
        K = kernel_matrix(X, kernel=self.kernel, kernel_params=self.kernel_params)
        M, total = graph_regularizer(self, X, graph, n_neighbors=k)
        gamma = self.gamma_A / graph_term_weight(self.gamma_I, self.graph_normalization,
                                                 X.shape[0], total)
        s, U = scipy.linalg.eigh(K)
        keep = s > self.eig_tol * s[-1]
        s, U = s[keep], U[:, keep]
        if s.size < self.n_components + 1:
            raise ValueError(f"the kernel matrix has numerical rank {s.size}; Eq 2.28 needs more "
                             f"than n_components = {self.n_components}")
        # an orthonormal basis of the e with 1^T f = (U^T 1)^T e = 0
        Q = scipy.linalg.null_space((U.T @ np.ones(X.shape[0]))[None, :])
        A = U.T @ M @ U
        A[np.diag_indices_from(A)] += gamma / s
        values, Z = scipy.linalg.eigh(Q.T @ A @ Q, subset_by_index=[0, self.n_components - 1])
        E = Q @ Z
        self.X_fit_ = X
        self.n_features_in_ = X.shape[1]
        self.dual_coef_ = U @ (E / s[:, None])
        self.eigenvalues_ = values
        self.embedding_ = U @ E
        self.labels_ = (self.embedding_[:, 0] > 0).astype(int)
        return self

    def transform(self, X):
        """The eigenfunctions at new rows: ``K(X, X_fit) alpha``."""
        return self._scores(X)

    def predict(self, X):
        """Cluster of new rows: 1 where the first eigenfunction is positive."""
        return (self._scores(X)[:, 0] > 0).astype(int)


class ClassDependentLapRLS(ClassifierMixin, OneVsRestLabels, _KernelGraphModel):
    """Supervised RLS with a separate intrinsic regularizer per class (thesis 2.8.2, Eq 2.29).

    ``min 1/l sum_i (y_i - f(x_i))^2 + gamma_A ||f||_K^2 + gamma_I_pos_eff f_+^T M_+ f_+
    + gamma_I_neg_eff f_-^T M_- f_-``, ``M_+``, ``M_-`` the Laplacians of kNN graphs built on
    the positive and on the negative rows separately, each weight after ``graph_normalization``
    (by default Eq 2.29's ``gamma_I / (u+l)^2``; all rows labeled: u = 0, so that is ``l^2``).
    LapRLS (Eq 2.12) with ``gamma_I_eff L`` replaced by ``C = blockdiag(gamma_I_pos_eff M_+,
    gamma_I_neg_eff M_-)``: ``alpha = (K + gamma_A l I + l C K)^-1 y``, C in row order. A dense
    solve on the driver (n up to a few thousand). Multi-class: one-vs-rest, class k's rows
    against the rest.

    Parameters
    ----------
    gamma_A : float, default 1e-2
    gamma_I_pos, gamma_I_neg : float, default 1.0
        gamma_I^+ and gamma_I^- of Eq 2.29 (for one-vs-rest: the class and the rest), before
        ``graph_normalization``. Both 0 give kernel RLS.
    graph_normalization : {"n2", "edges", "none"}, default "n2"
        ``gamma_I_eff = gamma_I / l^2`` (Eq 2.29), ``gamma_I / sum W_ij`` (summed over the
        graphs of a one-vs-rest target, one per side of positive weight) or ``gamma_I``, for
        both weights, as in :class:`LapRLS`.
    kernel, kernel_params, n_neighbors, metric, weights, t, symmetrize, normalized, p,
    search_epsilon, client, n_blocks, random_state
        As in :class:`RegularizedSpectralClustering`; a side with fewer rows than
        ``n_neighbors + 1`` makes each row's neighbours all its other rows (with a warning).

    Attributes
    ----------
    classes_, X_fit_, dual_coef_ : ndarray (n, 1) or (n, n_classes)
    """

    def __init__(self, *, gamma_A=1e-2, gamma_I_pos=1.0, gamma_I_neg=1.0,
                 graph_normalization="n2", kernel="rbf", kernel_params=None, n_neighbors=10,
                 metric="euclidean", weights="heat", t=None, symmetrize="max", normalized=True,
                 p=1, search_epsilon=0.1, client=None, n_blocks=None, random_state=None):
        self.gamma_A = gamma_A
        self.gamma_I_pos = gamma_I_pos
        self.gamma_I_neg = gamma_I_neg
        self.graph_normalization = graph_normalization
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.weights = weights
        self.t = t
        self.symmetrize = symmetrize
        self.normalized = normalized
        self.p = p
        self.search_epsilon = search_epsilon
        self.client = client
        self.n_blocks = n_blocks
        self.random_state = random_state

    _parameter_constraints = constraints(__init__)

    def fit(self, X, y):
        self._check_params()
        if y is None:
            raise ValueError("ClassDependentLapRLS requires y to be passed, but the target y "
                             "is None")
        X = dense_rows(X)
        classes, codes = encode_labels(y, X.shape[0], unlabeled=object())
        targets = [1] if classes.size == 2 else list(range(classes.size))
        # per one-vs-rest target, a graph on each side with a positive weight
        graphs = [(j, side, weight) for j, cls in enumerate(targets)
                  for side, weight in ((codes == cls, self.gamma_I_pos),
                                       (codes != cls, self.gamma_I_neg)) if weight > 0]
        ks = clip_n_neighbors(self.n_neighbors, [int(side.sum()) for _, side, _ in graphs])
        built = self._side_graphs(X, [side for _, side, _ in graphs], ks)
        K = kernel_matrix(X, kernel=self.kernel, kernel_params=self.kernel_params)
        n = X.shape[0]
        alphas = []
        for j, cls in enumerate(targets):
            pos = codes == cls
            C = np.zeros((n, n))
            total = 0.0
            for (g, side, weight), k, graph in zip(graphs, ks, built):
                if g == j:
                    rows = np.flatnonzero(side)
                    M, side_total = graph_regularizer(self, X[rows], graph, n_neighbors=k)
                    C[np.ix_(rows, rows)] = weight * M
                    total += side_total
            # one normalization for both sides' graphs; without an edge C is 0: nothing to
            # scale (and "edges" nothing to divide by)
            if C.any():
                C *= graph_term_weight(1.0, self.graph_normalization, n, total)
            A = K + n * (C @ K)
            A[np.diag_indices_from(A)] += self.gamma_A * n
            alphas.append(np.linalg.solve(A, np.where(pos, 1.0, -1.0)))
        self.classes_ = classes
        self.X_fit_ = X
        self.n_features_in_ = X.shape[1]
        self.dual_coef_ = np.column_stack(alphas)
        return self

    def _side_graphs(self, X, sides, ks) -> list:
        """The kNN graph on the rows of each side (None without neighbours), all built at once:
        each is a few round trips to the workers and waits more than it computes, so their
        waits overlap. The dense regularizers are formed one target at a time afterwards."""
        with ThreadPoolExecutor(max(len(sides), 1)) as pool:
            return list(pool.map(lambda side, k: graph_on_rows(self, X[side], k), sides, ks))

    def decision_function(self, X):
        """``K(X, X_fit) alpha``: shape (n,) for two classes (positive = ``classes_[1]``), else (n, k)."""
        scores = self._scores(X)
        return scores[:, 0] if self.classes_.size == 2 else scores
