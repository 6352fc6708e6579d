"""Co-regularized least squares (thesis 4.3, L1932-1951; Rosenberg eq 2.1-2.2), any number of views.

One kernel RLS per view ``s``, ``f_s = sum_i alpha_(s,i) K_s(x_i, .)`` over all ``n = l + u``
training rows, pushed to agree. Both formulations minimize

    (1 / (l Z)) sum_s c_s sum_{labeled} (y_i - f_s(x_i))^2 + sum_s gamma_s ||f_s||^2
        + gamma_C / (l + u) sum_{s < t} sum_{i in D} (f_s(x_i) - f_t(x_i))^2

with loss weights ``c = (1, mu)`` and

- ``"coupled"`` (the thesis): ``Z = 1``, ``D`` every row. For two views its stationarity,
  divided by ``K_s``, is the thesis' block system (L1944-1945)

      [ (1/l) J K1 + gamma1 I + gamma_C/(l+u) K1 ] alpha - gamma_C/(l+u) K2 beta = (1/l) Y
      [ (mu/l) J K2 + gamma2 I + gamma_C/(l+u) K2 ] beta - gamma_C/(l+u) K1 alpha = (mu/l) Y

  (the printed objective lacks the 1/l its system has; the system is the reference).
- ``"averaged"`` (Rosenberg): ``Z = sum_s c_s`` (with ``mu = 1`` the loss of eq 2.2,
  ``1/(2l) sum [(f1 - y)^2 + (f2 - y)^2]``), ``D`` the unlabeled rows (eq 2.1), the coupling
  ``lambda = gamma_C / (l + u)``; the prediction is the views' mean.

In general the rows of view ``s`` read

    [ c_s/(lZ) J K_s + gamma_s I + g (m-1) D K_s ] alpha_s - g D sum_{t != s} K_t alpha_t
        = c_s/(lZ) Y,          g = gamma_C / (l + u),

one ``m n x m n`` system for every one-vs-rest column, solved with one LU. Summed over the
views, the coupling terms cancel, so on every unlabeled row ``sum_s gamma_s alpha_(s,i) = 0``
(for two views the thesis' ``gamma1 alpha_i = -gamma2 beta_i``, L1949). ``gamma_C = 0``
decouples it into one kernel RLS per view, ``alpha_s = (K_s,LL + (gamma_s l Z / c_s) I)^-1 Y_L``
on the labeled rows and 0 elsewhere.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg import lu_factor, lu_solve
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.validation import check_is_fitted

from sklearn.utils._param_validation import StrOptions

from ..cluster import get_client
from ..kernels.base import kernel_matrix
from ..linalg.recovery import solve_with_restarts
from ..models._clone import SharesClient
from ..models._constraints import COUNT, constraints, validate
from ..models._graph_weight import truth_of
from ..models._input import Labels, encode_labels
from ..models.base import GRAM_MAX_FEATURES
from ..models._rbf_width import default_rbf_gamma
from ..models._selection import choose, enough_labels, table, warn_unchecked
from ..models._selection_cost import measured_fit, selecting
from . import _serving
from ._per_view import (PER_VIEW, CombinedViews, check_combine, combined, fit_labels,
                        kernels_per_view, labels_of, positive_per_view, squeeze_columns)
from .blocks import MultiViewBlocks, as_multiview
from .views import Views, check_views, views_at_predict

FORMULATIONS = ("coupled", "averaged")
#: ``solver``: the dense block system (``"direct"``), or the system in the views' feature
#: weights (:mod:`dask_ssl.multiview.corls_primal`) by Cholesky (``"gram"``) or CG (``"cg"``).
SOLVERS = ("auto", "direct", "gram", "cg")
#: Rows of the block system (views x training rows) solved on the driver at most: its dense
#: matrix then takes 3.2 GB.
MAX_SYSTEM_ROWS = 20000


def loss_weights(mu, n_views: int) -> np.ndarray:
    """``c``: 1 for the first view, ``mu`` (one value, or one per later view) for the others."""
    mu = np.atleast_1d(np.asarray(mu, dtype=float))
    if mu.size == 1:
        mu = np.repeat(mu, n_views - 1)
    if mu.size != n_views - 1:
        raise ValueError(f"mu has {mu.size} values; it weighs the loss of views 2..m, "
                         f"{n_views - 1} here")
    return np.concatenate([[1.0], mu])


def corls_system(Ks, Y, labeled, *, gamma_A, gamma_C: float, mu=1.0,
                 formulation: str = "coupled", n_labeled: int | None = None):
    """The block system ``(A, B)`` of the module docstring: ``A z = B`` with ``z`` the views'
    coefficients stacked (``m n`` rows), ``B`` of shape ``(m n, n_columns)``.

    Parameters
    ----------
    Ks : list of ndarray of shape (n, n)
        The views' kernel matrices over all training rows.
    Y : ndarray of shape (n, n_columns)
        +1/-1 on labeled rows, 0 on unlabeled rows.
    labeled : ndarray of bool, shape (n,)
    gamma_A : float or sequence of float
        gamma_s per view (thesis gamma_1, gamma_2; Rosenberg gamma_1, gamma_2).
    gamma_C : float
        The coupling before its ``1/(l+u)``.
    mu : float or sequence
        Loss weight of views 2..m (thesis mu).
    formulation : {"coupled", "averaged"}
    n_labeled : int, optional
        The ``l`` of the loss normalization; the labeled rows' count by default (the
        leave-one-out fits keep the full fit's).
    """
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation must be one of {FORMULATIONS}, got {formulation!r}")
    m, n = len(Ks), Ks[0].shape[0]
    labeled = np.asarray(labeled, dtype=bool)
    l = int(labeled.sum()) if n_labeled is None else int(n_labeled)
    c = loss_weights(mu, m)
    Z = 1.0 if formulation == "coupled" else float(c.sum())
    gammas = np.broadcast_to(np.asarray(gamma_A, dtype=float), (m,))
    g = float(gamma_C) / n
    D = np.ones(n) if formulation == "coupled" else (~labeled).astype(float)
    J = labeled.astype(float)
    A = np.zeros((m * n, m * n))
    B = np.zeros((m * n, Y.shape[1]))
    for s in range(m):
        rows = slice(s * n, (s + 1) * n)
        w = c[s] / (l * Z)
        A[rows, rows] = (w * J + g * (m - 1) * D)[:, None] * Ks[s]
        A[rows, rows][np.diag_indices(n)] += gammas[s]
        for t in range(m):
            if t != s and g > 0:
                A[rows, t * n:(t + 1) * n] = -(g * D)[:, None] * Ks[t]
        B[rows] = w * (J[:, None] * Y)
    return A, B


def corls_direct(Ks, Y, labeled, **params) -> np.ndarray:
    """The views' coefficients, shape ``(m, n, n_columns)``: :func:`corls_system` solved with
    one LU for every column."""
    A, B = corls_system(Ks, Y, labeled, **params)
    m, n = len(Ks), Ks[0].shape[0]
    return lu_solve(lu_factor(A, overwrite_a=True), B).reshape(m, n, Y.shape[1])


def corls_loo_outputs(Ks, Y, labeled, *, gamma_A, gamma_C: float, mu=1.0,
                      formulation: str = "coupled", combine="mean") -> np.ndarray:
    """Exact leave-one-out outputs on the labeled rows, shape ``(l, n_columns)``: the
    prediction (``combine``: the views' mean or one view's index) at each labeled row ``i`` of
    the fit in which ``i`` is an unlabeled row (its loss terms gone, ``l`` kept, and for
    ``"averaged"`` its coupling term added, as for any unlabeled row).

    Leaving row ``i`` out changes only row ``i`` of each view's block rows: ``A`` gains a
    rank-``m`` term ``E_i W_i`` (``E_i`` the ``m`` unit columns of those rows), so by Woodbury
    ``z_(-i) = z'_i - A^-1 E_i (I + W_i A^-1 E_i)^-1 W_i z'_i`` with ``z'_i = A^-1 B_(-i)``;
    one LU of ``A`` and ``m l`` extra columns serve every row."""
    m, n = len(Ks), Ks[0].shape[0]
    labeled = np.asarray(labeled, dtype=bool)
    L = np.flatnonzero(labeled)
    l = L.size
    c = loss_weights(mu, m)
    Z = 1.0 if formulation == "coupled" else float(c.sum())
    g = float(gamma_C) / n
    A, B = corls_system(Ks, Y, labeled, gamma_A=gamma_A, gamma_C=gamma_C, mu=mu,
                        formulation=formulation)
    lu = lu_factor(A, overwrite_a=True)
    z = lu_solve(lu, B)
    # the unit columns of row i in every view's block, for all labeled i: (m n, m l)
    E = np.zeros((m * n, m * l))
    for s in range(m):
        E[s * n + L, s * l + np.arange(l)] = 1.0
    AE = lu_solve(lu, E)
    # the change W_i of row (s, i): the loss term leaves; "averaged" adds the coupling term
    averaged = formulation == "averaged"
    wts = np.ones(m) / m if combine == "mean" else np.eye(m)[combine]
    out = np.empty((l, Y.shape[1]))
    for k, i in enumerate(L):
        W = np.zeros((m, m * n))
        for s in range(m):
            for t in range(m):
                if t == s:
                    coef = -c[s] / (l * Z) + (g * (m - 1) if averaged else 0.0)
                else:
                    coef = -g if averaged else 0.0
                if coef:
                    W[s, t * n:(t + 1) * n] = coef * Ks[t][i]
        cols = [s * l + k for s in range(m)]
        AEi = AE[:, cols]
        # B_(-i): row i's labels leave every view's right-hand side
        zp = z - AEi @ (c[:, None] / (l * Z) * Y[i][None, :])
        corr = AEi @ np.linalg.solve(np.eye(m) + W @ AEi, W @ zp)
        zi = (zp - corr).reshape(m, n, Y.shape[1])
        out[k] = sum(wts[s] * (Ks[s][i] @ zi[s]) for s in range(m) if wts[s])
    return out


def _view_scores(i, X, points, kernel, kernel_params, coef):
    """One view's outputs on rows ``X``: the kernel expansion over ``points``, or ``X coef``
    for linear features (``points`` None)."""
    if points is None:
        return np.asarray(X @ coef)
    return kernel_matrix(X, points, kernel=kernel, kernel_params=kernel_params) @ coef


# the estimator ------------------------------------------------------------------------------

#: Couplings tried by ``gamma_C="auto"``, as multiples ``rho`` of the views' mean ``gamma_A``:
#: 0 (one RLS per view, the supervised model) first. The coupling acts against the ridge (the
#: unlabeled rows' coefficients are held by ``gamma_s`` alone), so its useful range follows
#: ``gamma_A``, not the data's size: on two moons and two lines the unlabeled error fell from
#: 14% at 0 to 9% at rho = 1, 2.4% at 10 and 0.1% at 1e4 (the same at gamma_A = 1e-3 and 1e-1,
#: and for 100 to 600 rows); on 3-sources (3 labels a class, linear kernels) rho = 0.1 gave
#: 17.7% against 18.1% at 0 and 24% from rho = 1 up.
AUTO_COUPLING = (0.0, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1e3, 1e4)
#: ``rho`` where the labels are too few to choose (``gamma_C = rho * mean(gamma_A)``). Neither
#: seed prints a value (the thesis chose "over a small range"; Rosenberg's lambda = 1/10 has
#: another normalization): a coupling as strong as the ridge, a middle course between the
#: data sets above.
UNCHECKED_COUPLING = 1.0

class CoRLS(SharesClient, CombinedViews, ClassifierMixin, BaseEstimator):
    """Co-regularized least squares on two or more views (thesis 4.3; Rosenberg ch. 2),
    multi-class one-vs-rest.

    One kernel RLS per view over all training rows, coupled on the rows by the squared
    disagreement of their outputs (see :mod:`dask_ssl.multiview.corls` for the system). Every
    class column is solved with one LU of the ``m n x m n`` block system on the driver (the
    rows in memory; ``m n`` up to :data:`MAX_SYSTEM_ROWS`, checked before any work).
    ``gamma_C="auto"`` costs one such LU per candidate (eight), which dominates: two views of
    1500 rows took 13 s on a shared 2-core machine under load, 10 s of it in the LUs.

    At scale (views held as row blocks, :class:`~dask_ssl.multiview.blocks.MultiViewBlocks`,
    or more rows than the dense system takes) the same objective is solved in the views'
    feature weights (:mod:`dask_ssl.multiview.corls_primal`): Nystrom features per view
    (``n_components``) or the rows themselves (``kernel="linear"``), the system's Gram
    matrices or products summed over the co-located blocks on the workers, nothing ``n x n``
    formed.

    Parameters
    ----------
    gamma_A : float or list of float, default 1e-3
        gamma_s, each view's RKHS-norm weight ``gamma_s ||f_s||^2`` (thesis gamma_1, gamma_2;
        Rosenberg gamma_1, gamma_2), one value for every view or a list with one per view.
        With the loss ``(1/l) sum`` it is :class:`~dask_ssl.models.RLS`'s gamma_A: at
        ``gamma_C = 0`` view s is kernel RLS with ridge ``gamma_A l``.
    gamma_C : float or "auto", default "auto"
        gamma_C, the coupling: ``gamma_C / (l + u)`` times the squared disagreement summed over
        the rows (the thesis' normalization; Rosenberg's lambda is ``gamma_C / (l + u)``, over
        the unlabeled rows) and over the pairs of views. 0 gives one RLS per view. ``"auto"``
        chooses it among ``rho * mean(gamma_A)`` for ``rho`` in :data:`AUTO_COUPLING` (0
        first, the supervised model) by the exact leave-one-out outputs of the prediction
        (``combine``) on the labeled rows (:func:`corls_loo_outputs`; the row left out stays
        as an unlabeled row; on the primal ``"gram"`` path its closed form in the feature
        weights, on ``"cg"`` 4-fold cross-validation by one block CG over every fold and
        candidate, :mod:`dask_ssl.multiview.corls_primal`) and the rule of
        :mod:`dask_ssl.models._selection`: a coupling
        replaces 0 only when its gain in held-out residual exceeds its noise and it errs on
        fewer held-out rows. With fewer than 5 labeled rows in a class: ``rho =``
        :data:`UNCHECKED_COUPLING`, unchecked (with a
        :class:`~dask_ssl.models._selection.SelectionWarning`). The value used is
        ``gamma_C_``.
    mu : float or list of float, default 1.0
        The thesis' mu: the weight of view 2's labeled loss against view 1's (one value for
        every later view, or one per view after the first).
    formulation : {"coupled", "averaged"}, default "coupled"
        ``"coupled"``: the thesis' system (loss ``(1/l) sum_s c_s sum (y - f_s)^2``, coupling
        on all rows). ``"averaged"``: Rosenberg's CoRLS, eq 2.1-2.2 (loss averaged over the
        views, ``1/(2l) sum [(f1 - y)^2 + (f2 - y)^2]`` at ``mu = 1``, coupling on the
        unlabeled rows), whose predictor is the views' mean.
    kernel : str, callable or list, default "rbf"
        K_s by :func:`~sklearn.metrics.pairwise.pairwise_kernels` name or callable, for every
        view or one per view.
    kernel_params : dict, None or list, default None
        The kernels' parameters, for every view or one per view. For ``"rbf"`` without
        ``gamma``: the width from each view's rows as :class:`~dask_ssl.models.LapRLS` takes
        it; the values used are in ``kernel_params_``.
    combine : "mean", int or str, default "mean"
        The prediction: the mean of the views' outputs ``(f_1 + ... + f_m) / m`` (Rosenberg's
        ``phi``), or one view's ``f_s`` by index (or name, for views given as a dict).
    n_components : int or None, default None
        m, Nystrom landmarks per view: each view's kernel replaced by Nystrom features
        ``Z_s = K_s(X_s, landmarks) K_s,mm^-1/2`` computed on the workers, and the system
        solved in the features' weights (:mod:`dask_ssl.multiview.corls_primal`; with every
        row a landmark, the exact CoRLS). None: the exact kernels (``"direct"``), or, on the
        primal solvers, the rows themselves as features, which needs ``kernel="linear"``.
    landmarks : {"uniform", "kmeans++"}, default "uniform"
        How each view's landmarks are drawn (``random_state`` seeds it).
    solver : {"auto", "direct", "gram", "cg"}, default "auto"
        ``"direct"``: the dense ``m n x m n`` block system (views in memory, ``m n`` up to
        :data:`MAX_SYSTEM_ROWS`). ``"gram"``: the system in the stacked feature weights (size
        ``sum_s d_s``) from two Gram matrices summed over the row blocks (one round trip),
        solved by Cholesky. ``"cg"``: the same system by conjugate gradients, one round trip a
        product (wide sparse views, ``kernel="linear"``). ``"auto"``:
        ``"direct"`` for views in memory within :data:`MAX_SYSTEM_ROWS` and no
        ``n_components``, else ``"gram"`` up to ``GRAM_MAX_FEATURES`` (1000) feature weights in
        all, else ``"cg"``. Views given as :class:`~dask_ssl.multiview.blocks.MultiViewBlocks`
        (or a list of RowBlocks) always take a primal solver.
    tol : float, default 1e-6
        Relative residual at which CG stops (``"cg"``).
    max_iter : int, default 1000
        CG iterations at most (``"cg"``).
    unlabeled : scalar, default -1
        Marker of unlabeled rows in ``y``.
    client, n_blocks
        Cluster and row blocks of the primal solvers (views in memory are scattered in
        ``n_blocks`` blocks, one per worker thread by default).
    random_state : int or None
        Seeds the landmarks.

    Attributes
    ----------
    classes_ : ndarray
    dual_coef_ : ndarray of shape (n_views, n, n_columns), list or None
        The views' coefficients (thesis alpha, beta) per class column (one column for two
        classes, positive ``classes_[1]``); with ``n_components`` a list, per view the
        coefficients over its landmarks, ``K_s,mm^-1/2 w_s``; None for linear features.
    coef_ : list of ndarray or None
        With linear features (``n_components=None`` on a primal solver): each view's weights
        ``w_s``, shape (d_s, n_columns), ``f_s(x) = x^T w_s`` (no bias, as the kernel model).
    expansion_points_ : list
        Each view's training rows (its landmarks with ``n_components``; None per view for
        linear features).
    kernels_ : list
        Each view's kernel.
    kernel_params_ : list of dict
        Each view's kernel parameters used.
    combine_ : "mean" or int
        The prediction's combination (a view's name resolved to its index).
    gamma_C_ : float
        The coupling used (the choice with "auto").
    selection_ : list of dict
        With "auto": per candidate ``rho`` and ``gamma_C``, its held-out ``errors``
        (count, rate, standard error), ``squared`` residual and whether it was ``chosen``
        (:func:`dask_ssl.models._selection.table`) and the ``criterion`` ("loo": exact
        leave-one-out; "cv": cross-validation, on ``"cg"``); empty otherwise.
    selection_cost_ : dict or None
        What the selection cost beside the fit at the chosen setting: the ``seconds`` and
        ``round_trips`` to the workers spent choosing, and ``fit_seconds`` and
        ``fit_round_trips`` of the rest of the fit (:mod:`dask_ssl.models._selection_cost`);
        None when nothing was selected. Stored in ``model.json``.
    view_names_ : tuple or None
        The views' names (a dict's keys), or None for a list; predict takes the views the
        same way.
    view_features_ : tuple of int
        Columns per view.
    n_labeled_ : int
    transduction_ : ndarray of shape (n,)
        The prediction on the training rows.
    solver_ : str
        The solver used.
    n_features_out_ : tuple of int or None
        With ``n_components``: the Nystrom features kept per view (the rank of ``K_mm``).
    landmark_indices_ : list of ndarray or None
        With ``n_components``: each view's landmark rows.
    restarts_ : int
        Times a primal fit was repeated from the views' blocks after a lost worker (0 for
        ``"direct"``, which runs on the driver).
    round_trips_ : int or None
        Round trips of a primal fit's system (Gram or CG products and the outputs; the feature
        maps and the RBF widths excluded); None for ``"direct"``.
    n_iter_ : int
        CG iterations (1 for a Cholesky or LU solve).
    fit_seconds_ : float
    """

    def __init__(self, *, gamma_A=1e-3, gamma_C="auto", mu=1.0, formulation="coupled",
                 kernel="rbf", kernel_params=None, combine="mean", n_components=None,
                 landmarks="uniform", solver="auto", tol=1e-6, max_iter=1000, unlabeled=-1,
                 client=None, n_blocks=None, random_state=None):
        self.gamma_A = gamma_A
        self.gamma_C = gamma_C
        self.mu = mu
        self.formulation = formulation
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.combine = combine
        self.n_components = n_components
        self.landmarks = landmarks
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.unlabeled = unlabeled
        self.client = client
        self.n_blocks = n_blocks
        self.random_state = random_state

    _parameter_constraints = constraints(__init__, **PER_VIEW, n_components=[COUNT, None],
                                         solver=[StrOptions(set(SOLVERS))])

    def _check(self, Xs, y):
        """Parameters, views and labels, all before any work: ``(views, labels, settings)``."""
        validate(self)
        mv = as_multiview(Xs)
        views = check_views(Xs) if mv is None else Views(list(mv.views), mv.names)
        if mv is not None and mv.n_views < 2:
            raise ValueError(f"Xs holds {mv.n_views} view(s); this estimator needs at least 2")
        m = len(views.arrays)
        gammas = positive_per_view(self.gamma_A, m, "gamma_A")
        if isinstance(self.mu, (list, tuple, np.ndarray)):
            mu = positive_per_view(self.mu, m - 1, "mu")
        else:
            mu = positive_per_view(self.mu, 1, "mu")[0]
        kernels, kparams = kernels_per_view(self, m)
        combine = check_combine(self.combine, views.names, m)
        if self.formulation == "averaged" and combine != "mean":
            raise InvalidParameterError("formulation='averaged' predicts by the views' mean "
                                        "(Rosenberg's phi); combine must be 'mean'")
        solver = self._solver_of(mv is not None, views, kernels)
        marker = self.unlabeled
        if y is None and mv is not None and mv.labels is not None:
            y, marker = mv.gather_labels(), mv.unlabeled
            classes, codes = encode_labels(y, views.n_rows, marker)
        else:
            classes, codes = fit_labels(self, y, views.n_rows)
        return (views, mv), Labels(classes, codes, marker), (gammas, mu, kernels, kparams,
                                                             combine, solver)

    def _solver_of(self, at_scale: bool, views, kernels) -> str:
        """The solver ``"auto"`` stands for, and the checks of the one given (before any
        work)."""
        m, n = len(views.arrays), views.n_rows
        solver = self.solver
        if solver == "auto":
            solver = ("direct" if not at_scale and self.n_components is None
                      and m * n <= MAX_SYSTEM_ROWS else "primal")
        if solver == "primal" and not at_scale and self.n_components is None and any(
                k != "linear" for k in kernels):
            solver = "direct"  # too large for it: refused below, naming the ways out
        if solver == "direct":
            if at_scale:
                raise ValueError("solver='direct' forms the kernels on the driver: views held "
                                 "as row blocks take solver='gram' or 'cg'")
            if self.n_components is not None:
                raise ValueError("n_components fits in Nystrom feature space: solver='gram' "
                                 "or 'cg' (or 'auto')")
            if m * n > MAX_SYSTEM_ROWS:
                raise ValueError(f"CoRLS solves a dense system of {m} views x {n} rows on the "
                                 f"driver ({8 * (m * n) ** 2 / 1e9:.1f} GB); at most "
                                 f"{MAX_SYSTEM_ROWS} such rows are taken: give n_components "
                                 "(Nystrom features) or kernel='linear' for the primal solvers")
            return solver
        if self.n_components is None:
            odd = [s for s, k in enumerate(kernels) if k != "linear"]
            if odd:
                raise ValueError(f"the primal solvers need features: view(s) {odd} have kernel "
                                 f"{kernels[odd[0]]!r}; give n_components (Nystrom features of "
                                 "each view's kernel) or kernel='linear'")
            dims = sum(views.n_features)
        else:
            if self.n_components > n:
                raise ValueError(f"n_components={self.n_components} exceeds the {n} rows")
            dims = m * self.n_components
        if solver == "primal":
            solver = "gram" if dims <= GRAM_MAX_FEATURES else "cg"
        return solver

    @measured_fit
    def fit(self, Xs, y=None):
        """Fit on labeled and unlabeled rows.

        Parameters
        ----------
        Xs : list or dict of arrays or sparse matrices (each of shape (n, d_s)), MultiViewBlocks, or list or dict of RowBlocks
            The views of the same rows (a dict names them; predict then takes them by name).
            Row blocks take a primal solver (``n_components`` or ``kernel="linear"``).
        y : array of shape (n,), optional
            Classes, ``unlabeled`` on unlabeled rows; for a MultiViewBlocks (or RowBlocks)
            carrying labels it may be omitted (their own marker then: 0 for svmlight files).
        """
        t0 = time.perf_counter()
        (views, mv), labels, (gammas, mu, kernels, kparams, combine, solver) = \
            self._check(Xs, y)
        self.classes_ = labels.classes
        self.kernels_ = kernels
        self.combine_ = combine
        self.view_names_ = views.names
        self.view_features_ = views.n_features
        self.n_labeled_ = int(labels.labeled.sum())
        self.solver_ = solver
        if solver != "direct":
            if mv is None:
                mv = MultiViewBlocks.from_arrays(
                    views.arrays if views.names is None else dict(zip(views.names, views.arrays)),
                    client=get_client(self.client), n_blocks=self.n_blocks)
            self._fit_primal(mv, labels, gammas, mu, kernels, kparams, combine, solver)
            self.fit_seconds_ = time.perf_counter() - t0
            return self
        kparams = [dict(kp or {}) for kp in kparams]
        for X, kernel, kp in zip(views.arrays, kernels, kparams):
            if kernel == "rbf" and "gamma" not in kp:
                kp["gamma"] = default_rbf_gamma(X)
        Ks = [kernel_matrix(X, kernel=k, kernel_params=kp)
              for X, k, kp in zip(views.arrays, kernels, kparams)]
        Y, labeled = labels.columns(), labels.labeled
        params = dict(gamma_A=gammas, mu=mu, formulation=self.formulation)
        self.gamma_C_, self.selection_ = self._choose_gamma_C(
            lambda gs: ([corls_loo_outputs(Ks, Y, labeled, gamma_C=g, combine=combine,
                                           **params) for g in gs], "loo"),
            Y[labeled], float(np.mean(gammas)))
        self.dual_coef_ = corls_direct(Ks, Y, labeled, gamma_C=self.gamma_C_, **params)
        self.coef_ = self.n_features_out_ = self.landmark_indices_ = self.round_trips_ = None
        self.round_trips_per_iter_ = None
        self.restarts_ = 0
        self.n_iter_ = 1
        self.expansion_points_ = list(views.arrays)
        self.kernel_params_ = kparams
        scores = [squeeze_columns(K @ a) for K, a in zip(Ks, self.dual_coef_)]
        self.transduction_ = labels_of(self.classes_, combined(scores, combine))
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _fit_primal(self, mv, labels, gammas, mu, kernels, kparams, combine, solver):
        """The fit in the views' feature weights (:mod:`dask_ssl.multiview.corls_primal`) on
        co-located row blocks. Its state is all on the workers with no cheaper point to go back
        to, so a lost worker repeats it from the views' blocks (:func:`solve_with_restarts`),
        which Dask recomputes or re-places; every step is deterministic given them."""
        attempts = []

        def fit():
            if attempts:  # the joined blocks were pinned to the old workers
                mv.forget_joined()
            attempts.append(None)
            return self._solve_primal(mv, labels, gammas, mu, kernels, kparams, combine, solver)

        (system, W, maps, kernel_params, chosen, trips), self.restarts_ = \
            solve_with_restarts(fit, what=type(self).__name__)
        self.kernel_params_ = kernel_params
        self.gamma_C_, self.selection_ = chosen
        Ws = system.split(W)
        if self.n_components is None:
            self.coef_, self.dual_coef_ = Ws, None
            self.expansion_points_ = [None] * len(Ws)
            self.n_features_out_ = self.landmark_indices_ = None
        else:
            self.coef_ = None
            self.dual_coef_ = [fm.normalization_ @ w for fm, w in zip(maps, Ws)]
            self.expansion_points_ = [fm.components_ for fm in maps]
            self.n_features_out_ = tuple(int(fm.n_features_out_) for fm in maps)
            self.landmark_indices_ = [fm.component_indices_ for fm in maps]
        self.round_trips_ = trips

    def _solve_primal(self, mv, labels, gammas, mu, kernels, kparams, combine, solver):
        """One attempt of :meth:`_fit_primal`: ``(system, W, feature maps, kernel parameters,
        (gamma_C, selection), round trips)``; sets the solve's records and ``transduction_``."""
        from .corls_primal import PrimalCoRLS, view_features

        feats, maps, kernel_params = view_features(
            mv, kernels, kparams, self.n_components, self.landmarks, self.random_state)
        Y, labeled = labels.columns(), labels.labeled
        system = PrimalCoRLS(feats, Y, labeled, gamma_A=gammas, mu=mu,
                             formulation=self.formulation, gram=solver == "gram", tol=self.tol,
                             max_iter=self.max_iter)
        trips = system.blocks.round_trips - system.setup_round_trips
        chosen = self._choose_gamma_C(lambda gs: system.held_out_outputs(gs, combine),
                                      Y[labeled], float(np.mean(gammas)))
        W, info = system.solve(chosen[0])
        self.n_iter_ = info["n_iter"]
        self.round_trips_per_iter_ = info["round_trips_per_iter"]
        scores = [squeeze_columns(S) for S in system.view_scores(W)]
        self.transduction_ = labels_of(self.classes_, combined(scores, combine))
        return system, W, maps, kernel_params, chosen, system.blocks.round_trips - trips

    def _choose_gamma_C(self, held_out, YL, scale):
        """``(gamma_C, selection_)``: the given value, or the choice of "auto" among
        ``rho * scale`` (``scale`` the views' mean gamma_A) by the held-out outputs on the
        labeled rows (targets ``YL``): ``held_out(gammas)`` returns them per candidate and
        the criterion ("loo" or "cv")."""
        if self.gamma_C != "auto":
            return float(self.gamma_C), []
        truth = truth_of(YL)
        if not enough_labels(truth):
            warn_unchecked(self, "gamma_C")
            return UNCHECKED_COUPLING * scale, []
        gammas = [rho * scale for rho in AUTO_COUPLING]
        with selecting():
            outputs, criterion = held_out(gammas)
        wrong = np.array([truth_of(out) != truth for out in outputs])
        squared = np.array([np.sum((YL - out) ** 2, axis=1) for out in outputs])
        best = choose(wrong, squared, supervised=0)
        selection = table([{"rho": rho, "gamma_C": g} for rho, g in zip(AUTO_COUPLING, gammas)],
                          wrong, squared, best)
        for row in selection:
            row["criterion"] = criterion
        return gammas[best], selection

    # prediction --------------------------------------------------------------------------
    def view_decision_functions(self, Xs) -> list:
        """Each view's ``f_s(x) = sum_i alpha_(s,i) K_s(x_i, x)`` on new rows (the views given
        as at fit: a list in the same order, or a dict by name): one array per view, shape
        (m,) for two classes, (m, n_classes) otherwise."""
        check_is_fitted(self, "dual_coef_")
        coefs = self.coef_ if self.dual_coef_ is None else self.dual_coef_
        settings = list(zip(self.expansion_points_, self.kernels_, self.kernel_params_, coefs))
        mv = as_multiview(Xs)
        if mv is not None:
            if mv.n_features != tuple(self.view_features_):
                raise ValueError(f"the views have {mv.n_features} features; the model was "
                                 f"fitted with {tuple(self.view_features_)}")
            return [squeeze_columns(np.concatenate(view.call(_view_scores, *setting)))
                    for view, setting in zip(mv.views, settings)]
        views = views_at_predict(Xs, self.view_names_, self.view_features_)
        return [squeeze_columns(_view_scores(0, X, *setting))
                for X, setting in zip(views.arrays, settings)]

    # checks before any data, and the model directory (see dask_ssl.multiview._serving) -----
    def _check_params(self) -> None:
        """The parameters alone, before any data: their constraints, and each view's kernel
        (as many views as a per-view list gives, else one)."""
        validate(self)
        lists = [len(v) for v in (self.gamma_A, self.kernel, self.kernel_params)
                 if isinstance(v, (list, tuple))]
        kernels_per_view(self, lists[0] if lists else 1)

    def _fitted_info(self) -> dict:
        return _serving.corls_info(self)

    def _fitted_arrays(self) -> dict:
        return _serving.corls_arrays(self)

    def _restore(self, arrays: dict, doc: dict) -> None:
        _serving.corls_restore(self, arrays, doc)
