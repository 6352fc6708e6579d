"""Multi-view kernels: fitted on a point cloud's views, evaluated on any rows (out of sample).

:class:`MultiViewKernel` is the multi-view point cloud regularization kernel (Rosenberg,
Thm 3.2.1)::

    k~(z, x) = sum_j (a_j^2 / gamma_j) k^j(z, x)
               - lambda k_x^T A G^-1 (I + lambda M G^-1 Kcal)^-1 M G^-1 A k_z

over the cloud ``x_1..x_n`` seen in ``m`` views: ``Kcal = blockdiag(K^1..K^m)`` (each view's
Gram matrix on the cloud), ``A``, ``G`` diagonal with ``a_j``, ``gamma_j`` repeated n times,
``k_x`` the ``mn``-vector of every view's kernel values between the cloud and ``x``, and ``M``
a symmetric positive semi-definite ``mn x mn`` matrix. A supervised method run with ``k~``
minimizes ``L(sum_j a_j f^j) + sum_j gamma_j ||f^j||^2 + lambda f^T M f`` (``f`` the views'
functions on the cloud, stacked): manifold regularization is one view with ``M = L``
(:class:`~dask_ssl.kernels.DeformedKernel`), co-regularization is ``M = M^coreg``
(:func:`coregularization_factor`), and CoMR is the one-view kernel of its modified penalty.

:class:`CoRegularizationKernel` is the thesis' two-view co-regularization kernel (Eq 4.3),
written out as the thesis gives it.

How rows are passed
-------------------
A kernel estimator calls its ``kernel`` with two 2-D row sets (``kernel(A, B)``, as
:func:`dask_ssl.kernels.kernel_matrix` and scikit-learn's ``SVC`` do), but a multi-view kernel
needs every view of a row. A row is therefore given as the **horizontal stack of its views**,
in the views' order: the kernel records each view's width (``n_features_``) when it is fitted
and splits the columns again. :meth:`MultiViewKernel.stack` builds such rows from views
(``kernel.stack(Xs)``; named views are matched by name). So::

    mvk = MultiViewKernel.from_coregularization(Xs_all, gamma_C=1.0)
    est = KernelDAS3VM(kernel=mvk, gamma_u=0.0).fit(mvk.stack(Xs_train), y)
    est.predict(mvk.stack(Xs_new))

The cloud is fixed at fit time: evaluating ``k~`` on new rows costs their kernel values
against the cloud (``O(n m)`` a row), never a new inverse.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve, lu_factor, lu_solve

from ..kernels.base import check_kernel, kernel_matrix
from .views import check_views, views_at_predict


def _per_view(value, m: int, name: str) -> list:
    """``value`` for each of ``m`` views: a list / tuple of m values, or one value for all."""
    if isinstance(value, (list, tuple)):
        if len(value) != m:
            raise ValueError(f"{name} has {len(value)} entries for {m} view(s)")
        return list(value)
    return [value] * m


def _positive_per_view(value, m: int, name: str, *, strict: bool) -> np.ndarray:
    values = np.asarray(_per_view(value, m, name) if np.ndim(value) == 0 else value,
                        dtype=np.float64).ravel()
    if values.size != m:
        raise ValueError(f"{name} has {values.size} entries for {m} view(s)")
    bad = ~np.isfinite(values) | ((values <= 0) if strict else (values < 0))
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must be {'> 0' if strict else '>= 0'} and finite for every "
                         f"view; view {j} has {float(values[j])!r}")
    return values


def _coupling(gamma_C) -> float:
    if isinstance(gamma_C, bool) or not np.isscalar(gamma_C) or not np.isfinite(gamma_C) \
            or gamma_C < 0:
        raise ValueError(f"gamma_C must be a finite number >= 0, got {gamma_C!r}")
    return float(gamma_C)


def _stack(arrays):
    if any(sp.issparse(X) for X in arrays):
        return sp.hstack([sp.csr_matrix(X) for X in arrays], format="csr")
    return np.hstack(arrays)


def coregularization_factor(n_rows: int, n_views: int = 2, rows=None) -> sp.csr_matrix:
    """``D`` with ``D D^T = M^coreg``, the co-regularization penalty as the project reads it.

    ``f^T M^coreg f = sum_{i, j} sum_{k in rows} (f^i(x_k) - f^j(x_k))^2`` over **ordered**
    pairs of views (Rosenberg Eq 3.7), i.e. ``M^coreg`` has diagonal blocks ``2(m-1) I`` and
    off-diagonal blocks ``-2 I`` on ``rows``. Rosenberg prints diagonal blocks ``I`` and
    off-diagonal ``-I``, which is not positive semi-definite for m >= 3 and is half the ordered
    sum for m = 2 (ALGORITHMS §7.4); his CoMR section uses the ordered sum
    (``f^T M^coreg f = 2 ||f^i - f^a||^2``). So the coupling of the thesis' Eq 4.2,
    ``mu sum_k (f^1 - f^2)^2``, is ``gamma_C = mu / 2`` with this ``M``.

    One column per unordered pair ``i < j`` and row ``k``: ``sqrt(2) (e_{i,k} - e_{j,k})``;
    with two views ``D`` is ``mn x |rows|``, the ``u x u`` shortcut of
    :class:`MultiViewKernel`.

    Parameters
    ----------
    n_rows : int
        n, the rows of the cloud.
    n_views : int, default 2
        m.
    rows : array of int or bool mask, optional
        The cloud rows the views must agree on (Rosenberg: the unlabeled ones); default all.
    """
    n, m = int(n_rows), int(n_views)
    if n < 1 or m < 1:
        raise ValueError(f"need n_rows >= 1 and n_views >= 1, got {n_rows!r}, {n_views!r}")
    rows = np.arange(n) if rows is None else np.asarray(rows)
    if rows.dtype == bool:
        if rows.shape != (n,):
            raise ValueError(f"a row mask must have {n} entries, got {rows.shape}")
        rows = np.flatnonzero(rows)
    rows = rows.astype(np.int64)
    if rows.size and (rows.min() < 0 or rows.max() >= n):
        raise ValueError(f"rows must index the {n} cloud rows")
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    r = rows.size
    data, ind, col = [], [], []
    for c, (i, j) in enumerate(pairs):
        cols = c * r + np.arange(r)
        ind += [i * n + rows, j * n + rows]
        col += [cols, cols]
        data += [np.full(r, np.sqrt(2.0)), np.full(r, -np.sqrt(2.0))]
    if not pairs:
        return sp.csr_matrix((m * n, 0))
    return sp.csr_matrix((np.concatenate(data), (np.concatenate(ind), np.concatenate(col))),
                         shape=(m * n, len(pairs) * r))


class _StackedRows:
    """What both kernels share: rows given as their views stacked side by side (see the
    module docstring), cut again at the fitted widths ``n_features_``."""

    def stack(self, Xs):
        """Rows for :meth:`__call__` (and for an estimator's ``fit`` / ``predict``): the views
        of ``Xs`` stacked side by side, matched to the fitted views by name (a dict) or
        position (a list), each checked for its width."""
        views = views_at_predict(Xs, self.names_, self.n_features_)
        return _stack(views.arrays)

    def split(self, A) -> list:
        """The views of stacked rows ``A`` (its columns cut at the fitted widths)."""
        if not sp.issparse(A):
            A = np.asarray(A, dtype=np.float64)
            if A.ndim != 2:
                raise ValueError(f"rows must be two-dimensional, got shape {A.shape}")
        width = sum(self.n_features_)
        if A.shape[1] != width:
            raise ValueError(f"rows have {A.shape[1]} columns; this kernel's views "
                             f"{list(self.n_features_)} stack to {width}")
        edges = np.concatenate([[0], np.cumsum(self.n_features_)])
        A = A.tocsc() if sp.issparse(A) else A
        return [A[:, edges[j]:edges[j + 1]] for j in range(len(self.n_features_))]

    def __call__(self, A, B=None):
        """``k~(A, B)`` for stacked rows (see the module docstring); ``B`` defaults to ``A``.
        Two 1-D rows (scikit-learn's per-pair call) give one value."""
        pair = not sp.issparse(A) and np.ndim(A) == 1
        if pair:
            A = np.asarray(A, dtype=np.float64)[None, :]
            B = np.asarray(A if B is None else B, dtype=np.float64).reshape(1, -1)
        G = self.gram_views(self.split(A), None if B is None else self.split(B))
        return float(G[0, 0]) if pair else G


class MultiViewKernel(_StackedRows):
    """The multi-view point cloud kernel ``k~`` (Rosenberg Thm 3.2.1), fitted on a cloud.

    Parameters
    ----------
    Xs : list or dict of arrays / sparse matrices
        The cloud ``x_1..x_n`` in each of its ``m`` views (the same rows in each; one view is
        allowed). Checked by :func:`~dask_ssl.multiview.check_views`.
    M : array or sparse matrix of shape (mn, mn), optional
        Rosenberg's ``M``: symmetric positive semi-definite, rows ordered view by view (all n
        cloud rows of view 1, then of view 2, ...). Give ``M`` or ``D``, not both; neither is
        ``M = 0`` (the views only summed).
    D : array or sparse matrix of shape (mn, r), optional
        A factor ``M = D D^T``: the inverse is then ``r x r`` instead of ``mn x mn`` (the
        push-through identity ``(I + lambda M G^-1 Kcal)^-1 D = D (I + lambda D^T G^-1 Kcal
        D)^-1``); co-regularization on u rows has ``r = u`` for two views.
    gamma_C : float, default 1.0
        Rosenberg's point-cloud weight lambda (the package's coupling name), ``>= 0``.
    gamma_A : float or sequence of m floats, default 1.0
        Rosenberg's gamma_j, the weight of view j's norm ``||f^j||^2``, ``> 0``.
    view_weights : float or sequence of m floats, default 1.0
        Rosenberg's a_j: the prediction is ``sum_j a_j f^j`` (0 allowed: a view that only
        regularizes, as CoMR's intrinsic one).
    kernel : str, callable or sequence of m of them, default "rbf"
        The base kernel ``k^j`` of each view, by
        :func:`~sklearn.metrics.pairwise.pairwise_kernels` name or callable.
    kernel_params : dict or sequence of m dicts, optional
        Each view's kernel parameters (an RBF without ``gamma`` gets scikit-learn's
        ``1 / n_features`` of its view).

    Attributes
    ----------
    n_features_ : tuple of int
        Each view's width: a row given to :meth:`__call__` is its views stacked in this order.
    names_ : tuple of str or None
        The views' names when ``Xs`` was a dict.
    n_rows_ : int
        n, the cloud's rows.

    Notes
    -----
    The correction is held as ``k_x^T R k_z`` with ``R = lambda P (I + lambda M Ktil)^-1 M P``,
    ``P = A G^-1``, ``Ktil = G^-1 Kcal`` (symmetric, so ``R`` is; it is symmetrized against
    round-off). ``I + lambda M Ktil`` is invertible for positive semi-definite ``M`` (its
    eigenvalues are those of ``I + lambda M^1/2 Ktil M^1/2``). With a factor ``D`` only
    ``E = P D`` (``mn x r``) and ``C = lambda (I + lambda D^T Ktil D)^-1`` (``r x r``,
    Cholesky) are kept: ``R = E C E^T`` is never formed.
    """

    def __init__(self, Xs, M=None, *, D=None, gamma_C=1.0, gamma_A=1.0, view_weights=1.0,
                 kernel="rbf", kernel_params=None):
        views = check_views(Xs, min_views=1)
        m, n = len(views.arrays), views.n_rows
        kernels = _per_view(kernel, m, "kernel")
        params = _per_view(kernel_params, m, "kernel_params")
        for k, p in zip(kernels, params):
            check_kernel(k, p)
        gammas = _positive_per_view(gamma_A, m, "gamma_A", strict=True)
        weights = np.asarray(_per_view(view_weights, m, "view_weights")
                             if np.ndim(view_weights) == 0 else view_weights,
                             dtype=np.float64).ravel()
        if weights.size != m or not np.all(np.isfinite(weights)):
            raise ValueError(f"view_weights must be {m} finite numbers, got {view_weights!r}")
        lam = _coupling(gamma_C)
        if M is not None and D is not None:
            raise ValueError("give M or its factor D (M = D D^T), not both")
        if M is not None:
            M = M.toarray() if sp.issparse(M) else np.asarray(M, dtype=np.float64)
            if M.shape != (m * n, m * n):
                raise ValueError(f"M has shape {M.shape}; {m} view(s) of {n} cloud rows need "
                                 f"({m * n}, {m * n})")
            if not np.all(np.isfinite(M)):
                raise ValueError("M contains a non-finite value")
            if not np.allclose(M, M.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(M).max())):
                raise ValueError("M must be symmetric")
        if D is not None:
            D = sp.csr_matrix(D, dtype=np.float64) if sp.issparse(D) else \
                np.asarray(D, dtype=np.float64)
            if D.ndim != 2 or D.shape[0] != m * n:
                raise ValueError(f"D has shape {D.shape}; {m} view(s) of {n} cloud rows need "
                                 f"({m * n}, r)")
            if not np.all(np.isfinite(D.data if sp.issparse(D) else D)):
                raise ValueError("D contains a non-finite value")
        self.cloud_ = views.arrays
        self.names_ = views.names
        self.n_features_ = views.n_features
        self.n_rows_ = n
        self.kernel = kernels
        self.kernel_params = [dict(p or {}) for p in params]
        self.gamma_A = gammas
        self.gamma_C = lam
        self.view_weights = weights
        P = np.repeat(weights / gammas, n)  # A G^-1 on the stacked cloud
        self._E = self._C = self._R = None
        if lam == 0 or (M is None and D is None):
            return
        grams = [kernel_matrix(X, kernel=k, kernel_params=p)
                 for X, k, p in zip(self.cloud_, self.kernel, self.kernel_params)]
        if D is not None:
            if D.shape[1] == 0:
                return
            DtKD = sum((_rows(D, j, n).T @ (grams[j] / gammas[j]) @ _rows(D, j, n))
                       for j in range(m))
            DtKD = np.asarray(DtKD.toarray() if sp.issparse(DtKD) else DtKD)
            S = lam * (DtKD + DtKD.T) * 0.5
            S[np.diag_indices_from(S)] += 1.0
            E = (sp.diags(P) @ D) if sp.issparse(D) else P[:, None] * D
            self._E = E.toarray() if sp.issparse(E) else E
            self._C = (lam, cho_factor(S, lower=False, check_finite=False))
            return
        Ktil = np.zeros((m * n, m * n))
        for j in range(m):
            Ktil[j * n:(j + 1) * n, j * n:(j + 1) * n] = grams[j] / gammas[j]
        A = lam * (M @ Ktil)
        A[np.diag_indices_from(A)] += 1.0
        R = lam * lu_solve(lu_factor(A, overwrite_a=True), M)
        R = P[:, None] * R * P[None, :]
        self._R = (R + R.T) * 0.5

    @classmethod
    def from_coregularization(cls, Xs, *, gamma_C=1.0, rows=None, **kwargs):
        """The co-regularization kernel of ``m`` views: ``M = M^coreg`` on ``rows`` (default all
        cloud rows) by its factor (:func:`coregularization_factor`), so the inverse is
        ``|rows| x |rows|`` for two views. ``kwargs``: ``gamma_A``, ``view_weights``,
        ``kernel``, ``kernel_params``."""
        views = check_views(Xs, min_views=2)
        D = coregularization_factor(views.n_rows, len(views.arrays), rows)
        named = dict(zip(views.names, views.arrays)) if views.names else views.arrays
        return cls(named, D=D, gamma_C=gamma_C, **kwargs)

    def _cross(self, Zs) -> list:
        return [kernel_matrix(Z, X, kernel=k, kernel_params=p) for Z, X, k, p in
                zip(Zs, self.cloud_, self.kernel, self.kernel_params)]

    def gram_views(self, Zs, Ws=None) -> np.ndarray:
        """``k~(Z, W)`` for rows given as lists of their views (``Ws`` defaults to ``Zs``)."""
        same = Ws is None
        Ws = Zs if same else Ws
        weights = self.view_weights ** 2 / self.gamma_A
        G = sum(w * kernel_matrix(Z, W, kernel=k, kernel_params=p) for w, Z, W, k, p in
                zip(weights, Zs, Ws, self.kernel, self.kernel_params))
        G = np.asarray(G, dtype=np.float64)
        if self._R is None and self._E is None:
            return G
        kZ = np.hstack(self._cross(Zs))            # |Z| x mn
        kW = kZ if same else np.hstack(self._cross(Ws))
        if self._R is not None:
            return G - kZ @ self._R @ kW.T
        lam, factor = self._C
        eZ = kZ @ self._E                           # |Z| x r
        eW = eZ if same else kW @ self._E
        return G - lam * eZ @ cho_solve(factor, eW.T)


def _rows(D, j: int, n: int):
    """View j's rows of a factor ``D`` (its n rows of the stacked cloud)."""
    return D[j * n:(j + 1) * n]


class CoRegularizationKernel(_StackedRows):
    """The thesis' co-regularization kernel of two views (Eq 4.3, thesis 4.4)::

        K(x, z) = [K1(x, z)/g1 + K2(x, z)/g2]
                  - mu (k1_x/g1 - k2_x/g2)^T [I + mu (G1/g1 + G2/g2)]^-1 (k1_z/g1 - k2_z/g2)

    the reproducing kernel of ``{f1 + f2}`` under ``||f||^2 = min g1 ||f1||^2 + g2 ||f2||^2 +
    mu sum_i (f1(x_i) - f2(x_i))^2`` over the cloud. The thesis writes ``g1 = 1``,
    ``g2 = nu``; ``G1``, ``G2`` are the views' Gram matrices on the cloud. It is
    :class:`MultiViewKernel` with ``a = (1, 1)``, ``gamma_A = (g1, g2)`` and ``M^coreg``
    (:func:`coregularization_factor`) at ``gamma_C = mu / 2``; this class evaluates Eq 4.3 as
    printed (an n x n Cholesky).

    Parameters
    ----------
    Xs : list or dict of two views
        The cloud (the thesis: all n rows; Rosenberg's CoRLS: the unlabeled ones).
    gamma_C : float, default 1.0
        The thesis' mu (its gamma_C), the weight of the disagreement summed over the cloud.
    gamma_A : float or pair of floats, default 1.0
        ``(g1, g2)``: the thesis' ``(1, nu)``.
    kernel, kernel_params
        Per view or shared, as in :class:`MultiViewKernel`.

    Attributes
    ----------
    n_features_, names_, n_rows_
        As in :class:`MultiViewKernel`; rows are passed as stacked views the same way.
    """

    def __init__(self, Xs, *, gamma_C=1.0, gamma_A=1.0, kernel="rbf", kernel_params=None):
        views = check_views(Xs, min_views=2)
        if len(views.arrays) != 2:
            raise ValueError(f"the co-regularization kernel (Eq 4.3) takes two views, got "
                             f"{len(views.arrays)}; use MultiViewKernel.from_coregularization "
                             "for more")
        kernels = _per_view(kernel, 2, "kernel")
        params = _per_view(kernel_params, 2, "kernel_params")
        for k, p in zip(kernels, params):
            check_kernel(k, p)
        self.gamma_A = _positive_per_view(gamma_A, 2, "gamma_A", strict=True)
        self.gamma_C = _coupling(gamma_C)
        self.cloud_ = views.arrays
        self.names_ = views.names
        self.n_features_ = views.n_features
        self.n_rows_ = views.n_rows
        self.kernel = kernels
        self.kernel_params = [dict(p or {}) for p in params]
        G1, G2 = (kernel_matrix(X, kernel=k, kernel_params=p) / g for X, k, p, g in
                  zip(self.cloud_, self.kernel, self.kernel_params, self.gamma_A))
        S = self.gamma_C * (G1 + G2)
        S = (S + S.T) * 0.5
        S[np.diag_indices_from(S)] += 1.0
        self._factor = cho_factor(S, lower=False, check_finite=False)

    def gram_views(self, Zs, Ws=None) -> np.ndarray:
        """``K(Z, W)`` of Eq 4.3 for rows given as lists of their two views."""
        same = Ws is None
        Ws = Zs if same else Ws
        g1, g2 = self.gamma_A
        params = list(zip(self.cloud_, self.kernel, self.kernel_params))
        base = sum(kernel_matrix(Z, W, kernel=k, kernel_params=p) / g
                   for Z, W, (_, k, p), g in zip(Zs, Ws, params, self.gamma_A))

        def diff(Vs):
            k1, k2 = (kernel_matrix(V, X, kernel=k, kernel_params=p) for V, (X, k, p) in
                      zip(Vs, params))
            return k1 / g1 - k2 / g2

        dZ = diff(Zs)
        dW = dZ if same else diff(Ws)
        return base - self.gamma_C * dZ @ cho_solve(self._factor, dW.T)
