"""How much co-regularization shrinks the function class: Rosenberg's Thm 2.4.3.

The CoRLS class of two views, ``J = {(f1 + f2)/2 : g1 ||f1||^2 + g2 ||f2||^2 + lambda sum_U
(f1 - f2)^2 <= 1}``, has empirical Rademacher complexity on the labeled rows bounded by::

    U / (l sqrt 2) <= R_l(J) <= U / l,
    U^2 = tr(K1_LL)/g1 + tr(K2_LL)/g2 - lambda tr(J'^T (I + lambda S)^-1 J'),
    J' = K1_UL/g1 - K2_UL/g2,      S = K1_UU/g1 + K2_UU/g2.

(The printed lower constant 1/2^(1/4) is inconsistent with the proof; ALGORITHMS §5.6 takes
1/sqrt 2.) The last term, ``Delta(lambda)``, is the reduction the unlabeled rows buy: 0 at
``lambda = 0``, nondecreasing, with the finite limit ``tr(J'^T S^+ J')`` (Prop 2.5.1). It is
the trace on the labeled rows of :class:`~dask_ssl.multiview.MultiViewKernel`'s correction
with ``a = (1, 1)``, ``gamma_A = (g1, g2)`` and the coupling on the unlabeled rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.base import check_kernel, kernel_matrix
from ..models._input import encode_labels
from .kernels import _per_view, _positive_per_view
from .views import check_views


@dataclass(frozen=True)
class CoRegularizationComplexity:
    """Thm 2.4.3's quantities at each coupling ``gamma_C`` (arrays of its shape).

    Attributes
    ----------
    gamma_C : ndarray
        The couplings lambda evaluated.
    U : ndarray
        U, the square root of the expression above.
    lower, upper : ndarray
        ``U / (l sqrt 2)`` and ``U / l``, the bounds on the Rademacher complexity.
    reduction : ndarray
        ``Delta(lambda)``, what co-regularization takes off ``U^2``.
    supervised : float
        ``U^2`` at ``lambda = 0``: ``tr(K1_LL)/g1 + tr(K2_LL)/g2``.
    limit : float
        ``Delta`` as lambda grows without bound.
    n_labeled : int
        l.
    """

    gamma_C: np.ndarray
    U: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    reduction: np.ndarray
    supervised: float
    limit: float
    n_labeled: int

    @property
    def shrinkage(self) -> np.ndarray:
        """``U(lambda) / U(0)``: the fraction of the supervised bound that remains."""
        return self.U / np.sqrt(self.supervised)


def coregularization_complexity(Xs, y, *, gamma_C=1.0, gamma_A=1.0, kernel="rbf",
                                kernel_params=None, unlabeled=-1) -> CoRegularizationComplexity:
    """Rosenberg's Thm 2.4.3 bound on the CoRLS class of two views, at one or many couplings.

    Parameters
    ----------
    Xs : list or dict of two views
        All rows (labeled and unlabeled) in both views.
    y : array of shape (n,)
        Labels, ``unlabeled`` on unlabeled rows; only which rows are labeled is read.
    gamma_C : float or array of floats, default 1.0
        Rosenberg's lambda, the coupling ``lambda sum_U (f1 - f2)^2`` over the unlabeled rows
        (``>= 0``; ``np.inf`` gives the limit). An array gives the curve.
    gamma_A : float or pair of floats, default 1.0
        Rosenberg's ``(gamma_1, gamma_2)``, the views' norm weights (``> 0``).
    kernel, kernel_params
        Each view's kernel (shared, or a pair), as
        :class:`~dask_ssl.multiview.MultiViewKernel` takes them.
    unlabeled : scalar, default -1
        Marker of unlabeled rows in ``y``.

    Returns
    -------
    CoRegularizationComplexity
    """
    views = check_views(Xs, min_views=2)
    if len(views.arrays) != 2:
        raise ValueError(f"Thm 2.4.3 is stated for two views, got {len(views.arrays)}")
    kernels = _per_view(kernel, 2, "kernel")
    params = _per_view(kernel_params, 2, "kernel_params")
    for k, p in zip(kernels, params):
        check_kernel(k, p)
    g = _positive_per_view(gamma_A, 2, "gamma_A", strict=True)
    lam = np.asarray(gamma_C, dtype=np.float64)
    if lam.ndim > 1 or np.isnan(lam).any() or (lam < 0).any():
        raise ValueError(f"gamma_C must be a number or a 1-D array of numbers >= 0, "
                         f"got {gamma_C!r}")
    _, codes = encode_labels(y, views.n_rows, unlabeled)
    L, U = np.flatnonzero(codes >= 0), np.flatnonzero(codes < 0)
    grams = [kernel_matrix(X, kernel=k, kernel_params=p) / gj
             for X, k, p, gj in zip(views.arrays, kernels, params, g)]
    supervised = float(sum(np.trace(K[np.ix_(L, L)]) for K in grams))
    Jp = grams[0][np.ix_(U, L)] - grams[1][np.ix_(U, L)]
    S = grams[0][np.ix_(U, U)] + grams[1][np.ix_(U, U)]
    # Delta(lambda) = sum_ij (Q^T J')_ij^2 / (1/lambda + d_j), S = Q diag(d) Q^T (Prop 2.5.1)
    d, Q = np.linalg.eigh((S + S.T) * 0.5) if U.size else (np.zeros(0), np.zeros((0, 0)))
    d = np.maximum(d, 0.0)
    weight = np.sum((Q.T @ Jp) ** 2, axis=1)  # per eigenvector, summed over labeled rows
    keep = d > d.max(initial=0.0) * 1e-12
    limit = float(np.sum(weight[keep] / d[keep]))
    flat = np.atleast_1d(lam)
    red = np.array([limit if np.isinf(v) else
                    float(np.sum(weight * v / (1.0 + v * d))) for v in flat])
    U2 = np.maximum(supervised - red, 0.0)
    root = np.sqrt(U2).reshape(lam.shape)
    l = L.size
    return CoRegularizationComplexity(
        gamma_C=lam, U=root, lower=root / (l * np.sqrt(2.0)), upper=root / l,
        reduction=red.reshape(lam.shape), supervised=supervised, limit=limit, n_labeled=l)
