"""Sparse eigenfunction bases (Sinha and Belkin, NIPS 2009): the kernel matrix's eigenvectors,
the no-sign-change filter and the Lasso over the kept eigenfunctions.

Plain functions over arrays and row blocks; :class:`dask_ssl.models.SparseEigenfunctionClassifier`
is the shell. An eigenvector ``v_i`` of the kernel matrix (eigenvalue ``lambda_i``, unit norm)
becomes the function

    psi_i(x) = sqrt(n) / lambda_i sum_j v_i(x_j) k(x, x_j)                (Nystrom extension)

whose values on the training rows are ``sqrt(n) v_i``: every basis function has unit mean square
over the rows, so one l1 weight means the same on any ``n``. The seed's ``1/(lambda_i sqrt n)``
with ``K/u`` is the same function up to that constant.

Two ways to the eigenvectors:

- :func:`exact_eigenbasis`: ``eigh`` of the whole ``n x n`` matrix on the driver (small data).
- :func:`nystrom_eigenbasis`: from Nystrom features ``Z = K_nm K_mm^-1/2`` held as row blocks on
  the workers (:class:`~dask_ssl.kernels.nystrom.NystromFeatures`). ``Z Z^T`` is the Nystrom
  approximation of ``K``; its eigenvectors are ``U = Z W S^-1`` with ``Z^T Z = W S^2 W^T``, an
  ``m x m`` problem. The blocks send ``Z_b^T Z_b`` (one round trip), then the smallest and largest
  entry of each eigenvector on their rows (one round trip): nothing ``n``-sized leaves a worker
  but the labeled rows. With every row a landmark, ``Z Z^T = K`` and both ways agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
from sklearn.linear_model import Lasso

from ..kernels.nystrom import NystromFeatures
from ..linalg import RowBlocks


@dataclass
class Eigenbasis:
    """Eigenpairs of the (approximated) kernel matrix, largest first.

    ``values`` are the eigenvalues ``lambda_i`` kept (above ``eig_tol`` times the largest);
    ``lowest`` / ``highest`` each eigenvector's smallest and largest entry over all rows (unit
    norm vectors); ``labeled`` the labeled rows' values of ``psi_i`` (``sqrt(n) v_i``, rows in
    the order asked); ``extension`` maps the expansion points' kernel values to ``psi``:
    ``psi(x) = k(x, points) @ extension``.
    """

    values: np.ndarray
    lowest: np.ndarray
    highest: np.ndarray
    labeled: np.ndarray
    extension: np.ndarray


def _descending(values, vectors, eig_tol: float):
    """Eigenpairs sorted largest first, those below ``eig_tol`` times the largest dropped."""
    order = np.argsort(values)[::-1]
    values, vectors = values[order], vectors[:, order]
    keep = values > eig_tol * max(values[0], 0.0)
    return values[keep], vectors[:, keep]


def exact_eigenbasis(K: np.ndarray, rows: np.ndarray, eig_tol: float) -> Eigenbasis:
    """The eigenbasis of the whole kernel matrix ``K`` (``n x n``, symmetric) on the driver;
    ``rows`` are the labeled rows; the expansion points are all ``n`` rows."""
    n = K.shape[0]
    values, V = _descending(*scipy.linalg.eigh(0.5 * (K + K.T)), eig_tol)
    return Eigenbasis(values=values, lowest=V.min(axis=0), highest=V.max(axis=0),
                      labeled=np.sqrt(n) * V[rows], extension=np.sqrt(n) * V / values)


def _gram(i, Z):
    return Z.T @ Z


def _extremes(i, Z, W):
    U = Z @ W
    return np.vstack([U.min(axis=0), U.max(axis=0)])


def nystrom_eigenbasis(Z: RowBlocks, normalization: np.ndarray, rows: np.ndarray,
                       eig_tol: float) -> Eigenbasis:
    """The eigenbasis of ``Z Z^T`` from Nystrom feature blocks ``Z`` (``n x r``, on the
    workers), ``normalization`` the map's ``K_mm^-1/2`` (``m x r``): the expansion points are
    the ``m`` landmarks. Two round trips, and one to fetch the labeled rows ``rows``."""
    n = Z.n_rows
    G = sum(Z.call(_gram, combine=sum))
    values, W = _descending(*scipy.linalg.eigh(0.5 * (G + G.T)), eig_tol)
    # U = Z W S^-1 has orthonormal columns: the eigenvectors of Z Z^T for eigenvalues S^2
    to_u = W / np.sqrt(values)
    parts = Z.call(_extremes, to_u)
    lowest = np.min([p[0] for p in parts], axis=0)
    highest = np.max([p[1] for p in parts], axis=0)
    labeled = np.sqrt(n) * (NystromFeatures._fetch(Z, np.asarray(rows)) @ to_u)
    return Eigenbasis(values=values, lowest=lowest, highest=highest, labeled=labeled,
                      extension=np.sqrt(n) * (normalization @ to_u))


def no_sign_change(lowest, highest, sign_tol: float) -> np.ndarray:
    """Which vectors have no sign change up to ``sign_tol`` (the seed's ``N_eps``): every
    entry above ``-sign_tol * peak`` or every entry below ``sign_tol * peak``, ``peak`` the
    vector's largest absolute entry. Relative to the peak, the filter reads the same for any
    ``n`` and any normalization; ``sign_tol = 1`` keeps every vector.

    Parameters
    ----------
    lowest, highest : array of shape (r,)
        Each vector's smallest and largest entry.
    sign_tol : float in [0, 1]
        eps of the seed, as a share of the peak.
    """
    lowest, highest = np.asarray(lowest, dtype=float), np.asarray(highest, dtype=float)
    minor = np.minimum(highest, -lowest)   # the extreme entry on the lesser side
    peak = np.maximum(highest, -lowest)
    return minor <= sign_tol * peak


@dataclass
class LassoFit:
    """Coefficients ``coef`` (``|N| x columns``), intercepts, the objective per column and
    coordinate-descent iterations."""

    coef: np.ndarray
    intercept: np.ndarray
    objective: np.ndarray
    n_iter: int


def lasso(Psi: np.ndarray, Y: np.ndarray, gamma_S: float, *, fit_intercept: bool,
          tol: float, max_iter: int) -> LassoFit:
    """``min (1/2l) ||y - Psi beta - b||^2 + gamma_S ||beta||_1`` per column of ``Y`` (``l x c``,
    +1/-1): scikit-learn's coordinate descent; ``b`` is 0 unless ``fit_intercept``. At
    ``gamma_S = 0`` the least-squares fit (minimum norm where it is not unique)."""
    l = Psi.shape[0]
    if gamma_S == 0:
        mean_psi = Psi.mean(axis=0) if fit_intercept else np.zeros(Psi.shape[1])
        mean_y = Y.mean(axis=0) if fit_intercept else np.zeros(Y.shape[1])
        coef = np.linalg.lstsq(Psi - mean_psi, Y - mean_y, rcond=None)[0]
        intercept, n_iter = mean_y - mean_psi @ coef, 0
    else:
        model = Lasso(alpha=gamma_S, fit_intercept=fit_intercept, tol=tol, max_iter=max_iter)
        model.fit(Psi, Y)
        coef = np.atleast_2d(model.coef_).reshape(Y.shape[1], -1).T
        intercept = np.broadcast_to(model.intercept_, (Y.shape[1],)).astype(float)
        n_iter = int(np.max(model.n_iter_))
    residual = Y - Psi @ coef - intercept
    objective = (residual ** 2).sum(axis=0) / (2 * l) + gamma_S * np.abs(coef).sum(axis=0)
    return LassoFit(coef=coef, intercept=np.asarray(intercept, dtype=float),
                    objective=objective, n_iter=n_iter)
