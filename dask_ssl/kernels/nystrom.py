"""Nystrom features ``Z = K(X, landmarks) K_mm^-1/2``, computed on the workers beside the row blocks.

With ``m`` landmark rows, ``Z Z^T`` is the Nystrom approximation ``K_nm K_mm^-1 K_mn`` of the Gram
matrix, exact on the landmarks' span; with every row a landmark, ``Z = K^1/2`` and a linear model
``f = Z w`` on these features is the kernel model ``f = K alpha`` with ``alpha = K^-1/2 w`` and
``||f||_K = ||w||``. So the linear solvers (L2-SVM-MFN, TSVM, DA, linear LapRLS / LapSVM) run in
feature space unchanged: the kernel methods of the seeds on hundreds of thousands of rows.

Landmarks are sampled from the row blocks: ``"uniform"`` (rows drawn without replacement) or
``"kmeans++"`` (k-means++ seeding, D^2 sampling, among a uniform candidate sample of
:data:`CANDIDATES_PER_COMPONENT` rows per landmark, on the driver). ``K_mm^-1/2`` is the
pseudo-inverse square root: eigen-directions with eigenvalue below ``m * eps * max`` are dropped
(duplicate rows, common in event data, make ``K_mm`` singular), so ``Z`` may have fewer than
``m`` columns (:attr:`NystromFeatures.n_features_out_`).

The RBF width defaults to scikit-learn's ``gamma="scale"`` of its SVMs, ``1 / (d Var(X))`` (the
variance of all entries), computed on the uniform row sample the landmarks come from: the
kernel's length scale follows the spread of the data. (``1 / d``, pairwise_kernels' own default,
assumes unit-variance features; on features in [0, 1] it is a nearly linear kernel.)
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ..linalg.blas import single_blas_thread
from ..linalg.rowblocks import RowBlocks, is_dask_array
from .base import check_kernel, kernel_matrix

LANDMARKS = ("uniform", "kmeans++")
#: Uniform candidates per landmark among which k-means++ seeding picks (driver-side work is
#: O(candidates x m x d)).
CANDIDATES_PER_COMPONENT = 4


def _take(i, X, rows):
    return X[rows]


def _features(i, X, landmarks, normalization, kernel, kernel_params):
    return np.ascontiguousarray(
        kernel_matrix(X, landmarks, kernel=kernel, kernel_params=kernel_params) @ normalization)


def scale_gamma(rows) -> float:
    """scikit-learn's ``gamma="scale"``: ``1 / (d Var)`` over all entries of ``rows`` (dense or
    sparse), 1.0 when every entry is the same."""
    n, d = rows.shape
    if sp.issparse(rows):
        mean = rows.sum() / (n * d)
        variance = rows.multiply(rows).sum() / (n * d) - mean * mean
    else:
        variance = float(np.var(rows))
    return 1.0 / (d * variance) if variance > 0 else 1.0


def _stack(parts):
    return sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.vstack(parts)


class NystromFeatures:
    """Nystrom feature map fitted on row blocks (or an in-memory matrix).

    Parameters
    ----------
    kernel : str or callable, default="rbf"
        As :func:`sklearn.metrics.pairwise.pairwise_kernels` takes it (the seeds' K).
    kernel_params : dict, optional
        The kernel's parameters (e.g. ``{"gamma": 0.5}``, scikit-learn's RBF width
        ``exp(-gamma ||x - z||^2)``; the seeds' ``sigma`` is ``gamma = 1 / (2 sigma^2)``). An
        RBF kernel without ``gamma`` gets :func:`scale_gamma` of the sampled rows.
    n_components : int, default=100
        m, the landmark rows (at most the number of rows).
    landmarks : {"uniform", "kmeans++"}, default="uniform"
    random_state : int or None

    Attributes
    ----------
    components_ : ndarray or csr_matrix of shape (m, d)
        The landmark rows.
    component_indices_ : ndarray of shape (m,)
        Their row numbers in the data the map was fitted on.
    normalization_ : ndarray of shape (m, n_features_out_)
        ``K_mm^-1/2`` (pseudo-inverse square root).
    kernel_params_ : dict
        The kernel parameters used, the RBF default width filled in.
    n_features_in_, n_features_out_ : int
    """

    def __init__(self, *, kernel="rbf", kernel_params=None, n_components=100,
                 landmarks="uniform", random_state=None):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_components = n_components
        self.landmarks = landmarks
        self.random_state = random_state

    def check_params(self) -> None:
        """Raise ``ValueError`` for a bad kernel, landmark count or landmark rule."""
        check_kernel(self.kernel, self.kernel_params)
        m = self.n_components
        if not isinstance(m, (int, np.integer)) or isinstance(m, bool) or m < 1:
            raise ValueError(f"n_components must be a positive integer, got {m!r}")
        if self.landmarks not in LANDMARKS:
            raise ValueError(f"landmarks must be one of {LANDMARKS}, got {self.landmarks!r}")

    def fit(self, X) -> "NystromFeatures":
        """Pick the landmarks among the rows of ``X`` (RowBlocks or a matrix) and form
        ``K_mm^-1/2``: one round trip to fetch the sampled rows from the blocks."""
        self.check_params()
        n = X.n_rows if isinstance(X, RowBlocks) else X.shape[0]
        if self.n_components > n:
            raise ValueError(f"n_components={self.n_components} exceeds the {n} rows")
        rng = np.random.default_rng(self.random_state)
        m = self.n_components
        pool = m if self.landmarks == "uniform" else min(n, CANDIDATES_PER_COMPONENT * m)
        sample = np.sort(rng.choice(n, size=pool, replace=False))
        rows = self._fetch(X, sample)
        params = dict(self.kernel_params or {})
        if self.kernel == "rbf" and "gamma" not in params:
            params["gamma"] = scale_gamma(rows)  # a uniform sample, before k-means++ picks
        self.kernel_params_ = params
        if self.landmarks == "kmeans++":
            from sklearn.cluster import kmeans_plusplus

            _, picked = kmeans_plusplus(rows, m, random_state=int(rng.integers(2**31 - 1)))
            picked = np.sort(picked)
            sample, rows = sample[picked], rows[picked]
        self.components_ = rows
        self.component_indices_ = sample
        self.n_features_in_ = rows.shape[1]
        self._normalize()
        return self

    def _normalize(self) -> None:
        """``K_mm^-1/2`` of the landmarks at ``kernel_params_``."""
        m = self.components_.shape[0]
        K = kernel_matrix(self.components_, kernel=self.kernel, kernel_params=self.kernel_params_)
        # on the driver, beside the workers' processes: a threaded BLAS there competes with
        # them for the same cores (as in models.base), and one thread gives the same factors
        # whichever map (fit, on_landmarks) forms them
        with single_blas_thread():
            vals, vecs = scipy.linalg.eigh(0.5 * (K + K.T))
        keep = vals > max(vals[-1], 0.0) * m * np.finfo(np.float64).eps
        self.normalization_ = vecs[:, keep] / np.sqrt(vals[keep])
        self.n_features_out_ = int(keep.sum())

    def on_landmarks(self, kernel_params: dict) -> "NystromFeatures":
        """A fitted map on this map's landmarks with other kernel parameters (another RBF
        width): only ``K_mm^-1/2`` is formed anew, on the driver, with no round trip."""
        if not hasattr(self, "components_"):
            raise ValueError("this NystromFeatures is not fitted yet; call fit first")
        other = NystromFeatures(kernel=self.kernel, kernel_params=dict(kernel_params),
                                n_components=self.n_components, landmarks=self.landmarks,
                                random_state=self.random_state)
        other.components_ = self.components_
        other.component_indices_ = self.component_indices_
        other.n_features_in_ = self.n_features_in_
        other.kernel_params_ = dict(kernel_params)
        other._normalize()
        return other

    @staticmethod
    def _fetch(X, rows):
        if not isinstance(X, RowBlocks):
            return X[rows] if sp.issparse(X) else np.asarray(X, dtype=np.float64)[rows]
        block = np.searchsorted(X.offsets, rows, side="right") - 1
        parts = X.call(_take, per_block=[(rows[block == b] - X.offsets[b],)
                                         for b in range(X.n_blocks)])
        return _stack(parts)

    def transform(self, X):
        """``Z = K(X, landmarks) K_mm^-1/2``: new RowBlocks computed on the blocks' workers
        for RowBlocks, an ndarray for an in-memory matrix, a dask array for a dask array."""
        if not hasattr(self, "normalization_"):
            raise ValueError("this NystromFeatures is not fitted yet; call fit first")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features; the feature map was fitted on "
                             f"{self.n_features_in_}")
        args = (self.components_, self.normalization_, self.kernel, self.kernel_params_)
        if isinstance(X, RowBlocks):
            # Sent once per worker, not embedded in every block's task: K_mm^-1/2 alone is
            # m^2 doubles (32 MB at m = 2000).
            shared = X.client.scatter(list(args[:2]), broadcast=True, hash=False)
            futures = X.submit(_features, *shared, *args[2:])
            X.wait(futures)  # errors surface here, and the blocks are in place before use
            return RowBlocks(X.client, futures, X.sizes.copy(), self.n_features_out_, False,
                             X.labels)
        if is_dask_array(X):
            return X.rechunk({1: -1}).map_blocks(
                lambda b: _features(0, b, *args), chunks=(X.chunks[0], (self.n_features_out_,)),
                dtype=np.float64)
        return _features(0, X, *args)
