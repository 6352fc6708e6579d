"""The deformed (point-cloud) kernel of manifold regularization (thesis 2.5, Prop 2.5.2).

    K~(x, z) = K(x, z) - k_x^T (I + M K)^-1 M k_z,      k_x = (K(x_1, x), ..., K(x_n, x))

over the point cloud ``x_1..x_n`` with a symmetric positive semi-definite ``M``. The norm of
the deformed space is ``||f||~^2 = ||f||_K^2 + f^T M f`` (``f`` on the cloud), so with

    M = (gamma_I_eff / gamma_A) L^p

a plain RLS or SVM with ``K~`` and regularizer ``gamma_A`` minimizes the LapRLS / LapSVM
objective ``(1/l) sum V + gamma_A ||f||_K^2 + gamma_I_eff f^T L^p f``. Here ``gamma_I_eff`` is
the coefficient of ``f^T L^p f`` after the graph-term normalization (:func:`graph_term_weight`;
by default the thesis' ``gamma_I / (u + l)^2``), exactly the one
:class:`~dask_ssl.models.LapRLS` and :class:`~dask_ssl.models.LapSVM` use.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lu_factor, lu_solve

from ..graph.dense import regularizer_matrix
from .base import check_kernel, kernel_matrix

#: Graph-term normalizations: the factor that multiplies gamma_I in front of ``f^T L^p f``.
GRAPH_NORMALIZATIONS = ("n2", "edges", "none")


def graph_term_weight(gamma_I: float, graph_normalization: str, n_rows: int,
                      total_weight: float) -> float:
    """``gamma_I_eff``, the coefficient of ``f^T L^p f`` in the objective.

    ``"n2"``: ``gamma_I / (u + l)^2`` (thesis ch. 2, JMLR paper, the default); ``"edges"``:
    ``gamma_I / sum_ij W_ij`` (the seeds' replacement on a sparse graph); ``"none"``:
    ``gamma_I`` (the linear paper and thesis ch. 4).
    """
    if graph_normalization == "n2":
        return gamma_I / float(n_rows) ** 2
    if graph_normalization == "edges":
        if not total_weight > 0:
            raise ValueError("graph_normalization='edges' needs a graph with at least one edge")
        return gamma_I / float(total_weight)
    if graph_normalization == "none":
        return float(gamma_I)
    raise ValueError(f"graph_normalization must be one of {GRAPH_NORMALIZATIONS}, "
                     f"got {graph_normalization!r}")


class DeformedKernel:
    """``K~`` over a point cloud, as a callable that scikit-learn's kernel estimators accept.

    Parameters
    ----------
    X : array or sparse matrix of shape (n, d)
        The point cloud ``x_1..x_n`` (labeled and unlabeled rows).
    M : array or sparse matrix of shape (n, n)
        Symmetric positive semi-definite deformation; :meth:`from_graph` builds the manifold
        regularizer ``(gamma_I_eff / gamma_A) L^p``.
    kernel : str or callable, default "rbf"
        Base kernel ``K`` by :func:`~sklearn.metrics.pairwise.pairwise_kernels` name or callable.
    kernel_params : dict, optional
        Parameters of the base kernel (e.g. ``{"gamma": 0.01}`` for the RBF).

    Notes
    -----
    Called with two 2-D arrays ``(A, B)`` it returns the ``len(A) x len(B)`` Gram matrix, as
    :class:`sklearn.svm.SVC` calls a kernel. :class:`sklearn.kernel_ridge.KernelRidge` (and
    anything else going through ``pairwise_kernels``) calls a callable once per *pair of rows*
    with two 1-D rows: then it returns that one value. That works but costs ``O(n d)`` per pair;
    for more than a few hundred rows give KernelRidge ``kernel="precomputed"`` and the Gram
    matrices ``dk(X_train)`` and ``dk(X_new, X_train)`` instead.

    ``(I + M K)^-1 M`` is computed once (``O(n^3)``) and symmetrized; ``I + M K`` is invertible
    for positive semi-definite ``M`` and ``K`` (the eigenvalues of ``M K`` are >= 0), so no ridge
    on ``M`` is needed.
    """

    def __init__(self, X, M, *, kernel="rbf", kernel_params=None):
        check_kernel(kernel, kernel_params)
        X = X.tocsr() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        n = X.shape[0]
        M = M.toarray() if sp.issparse(M) else np.asarray(M, dtype=np.float64)
        if M.shape != (n, n):
            raise ValueError(f"M has shape {M.shape}; the point cloud has {n} rows")
        if not np.all(np.isfinite(M)):
            raise ValueError("M contains a non-finite value")
        self.X = X
        self.kernel = kernel
        self.kernel_params = dict(kernel_params or {})
        K = kernel_matrix(X, kernel=kernel, kernel_params=self.kernel_params)
        R = lu_solve(lu_factor(np.eye(n) + M @ K), M)
        self.R = (R + R.T) * 0.5

    @classmethod
    def from_graph(cls, X, graph, *, gamma_A, gamma_I, normalized=True, p=1,
                   graph_normalization="n2", kernel="rbf", kernel_params=None):
        """The kernel with ``M = (gamma_I_eff / gamma_A) L^p`` of ``graph`` (a
        :class:`~dask_ssl.graph.Graph` on the rows of ``X``), ``gamma_I_eff`` by
        :func:`graph_term_weight`: the same hyperparameters as LapRLS / LapSVM."""
        if not gamma_A > 0:
            raise ValueError(f"gamma_A must be > 0, got {gamma_A!r}")
        if graph.n_rows != X.shape[0]:
            raise ValueError(f"graph has {graph.n_rows} rows but X has {X.shape[0]}")
        Lp = regularizer_matrix(graph, normalized=normalized, p=p)
        total = graph.to_scipy().sum() if graph_normalization == "edges" else 0.0
        weight = graph_term_weight(gamma_I, graph_normalization, X.shape[0], total)
        return cls(X, (weight / gamma_A) * Lp, kernel=kernel, kernel_params=kernel_params)

    def __call__(self, A, B=None):
        pair = not sp.issparse(A) and np.ndim(A) == 1
        if pair:  # pairwise_kernels' per-pair call: two 1-D rows, one value back
            A = np.asarray(A, dtype=np.float64)[None, :]
            B = np.asarray(A if B is None else B, dtype=np.float64).reshape(1, -1)
        G = self.gram(A, B)
        return float(G[0, 0]) if pair else G

    def gram(self, A, B=None):
        """``K~(A, B)`` for row sets ``A`` and ``B`` (default ``A``)."""
        params = {"kernel": self.kernel, "kernel_params": self.kernel_params}
        kA = kernel_matrix(A, self.X, **params)
        kB = kA if B is None else kernel_matrix(B, self.X, **params)
        return kernel_matrix(A, B, **params) - kA @ self.R @ kB.T
