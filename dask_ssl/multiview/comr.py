"""Manifold co-regularization, CoMR (Rosenberg 4.3): semi-supervised (4.3.3, Eq 4.3) and
transductive (4.3.1, the objective of his ref. [29] and of his experiments, Tables 4.3-4.4).

Two views of one input: the ambient view, an RKHS on the rows (kernel ``K``), and the intrinsic
view, functions on the cloud of training rows whose smoothness is ``f^T M^intr f`` with
``M^intr = 1e-6 I + L^p`` (a kNN graph's normalized Laplacian). The views are coupled by
``lambda ||f^i - f^a||^2`` (``M^coreg``, ordered sum) and the prediction out of sample is the
ambient function alone. The two formulations differ in the labeled loss:

- semi-supervised (``a^a = 1``, ``a^i = 0``): the loss on ``f^a``. Minimizing over the intrinsic
  function in closed form leaves manifold regularization with a modified graph term (Eq 4.3)::

      (1/l) sum_{labeled} (y_i - f(x_i))^2 + gamma_A ||f||_K^2 + gamma_I f^T M~ f,
      M~ = M^intr (I + (gamma_I / 2 lambda) M^intr)^-1.

  The eigenvalues ``mu`` of ``M^intr`` become ``mu / (1 + gamma_I mu / 2 lambda)``, so the term
  weighs the graph's rough directions at most ``2 lambda`` each, like a Euclidean norm, and its
  smooth ones (``mu`` well below ``2 lambda / gamma_I``) as MR does. By Rosenberg Thm 3.2.1
  this is RLS with the one-view point-cloud kernel of ``M~``
  (:class:`~dask_ssl.multiview.MultiViewKernel`); the fit solves the LapRLS minimizer with
  ``M~`` in place of ``L^p`` (:func:`dask_ssl.solvers.dense.laprls_direct`).
- transductive: the loss on ``(f^a + f^i) / 2``. The labels then reach the intrinsic function
  directly, which spreads them along the graph, and the ambient one follows it through the
  coupling; Rosenberg (4.3.1) keeps ``f^a`` for out-of-sample predictions, as done here. The fit
  is RLS on the labeled rows in the kernel of ``(f^a + f^i) / 2``
  (:func:`transductive_kernel`).

lambda -> infinity gives MR (LapRLS with ``M^intr``) in both; lambda -> 0 (or gamma_I = 0) is
taken as the supervised RLS of the ambient view. ``f(x) = sum_i alpha_i K(x_i, x)`` over the
training rows.
"""

from __future__ import annotations

import time
from numbers import Real

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lu_factor, lu_solve
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Options, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..kernels.base import check_kernel, kernel_matrix
from ..kernels.deformed import graph_term_weight
from ..linalg.blas import single_blas_thread
from ..models._clone import SharesClient
from ..models._constraints import AUTO, COUNT, NON_NEGATIVE, SHARED, constraints, validate
from ..models._graph_kernel import graph_regularizer
from ..models._graph_seam import check_graph_combination, graph_settings
from ..models._graph_weight import SEED_GAMMA_I, truth_of
from ..models._input import Labels, encode_labels
from ..models._rbf_width import default_rbf_gamma
from ..models._selection import choose, enough_labels, table, warn_unchecked
from ..models._selection_cost import measured_fit, selecting
from ..models.graph_transduction import _class_shares
from ..models.manifold import AUTO_GAMMA_I, _loo_outputs
from ..solvers.dense import DenseSolution, laprls_direct
from . import _serving
from ._balance import balance_offsets
from .kernels import _stack
from .views import check_views, views_at_predict

#: Rosenberg's ridge on the intrinsic regularizer, ``M^intr = 1e-6 I + L^p`` (4.4.1).
INTRINSIC_RIDGE = 1e-6


def _as_views(Xs):
    """A bare matrix is one view; lists and dicts are checked as views."""
    if sp.issparse(Xs) or isinstance(Xs, np.ndarray):
        Xs = [Xs]
    return check_views(Xs, min_views=1)


def coupling_weight(gamma_C, graph_normalization: str, n_rows: int) -> float:
    """The coefficient of ``||f^i - f^a||^2`` (a sum over the ``n_rows`` rows of the cloud):
    ``gamma_C / (u + l)``, the package's coupling (the disagreement's mean, as in
    :class:`~dask_ssl.multiview.CoRLS`), or ``gamma_C`` itself with
    ``graph_normalization="none"`` (Rosenberg's Eq 4.3)."""
    gamma_C = float(gamma_C)
    return gamma_C if graph_normalization == "none" else gamma_C / float(n_rows)


def comr_regularizer(eigenvalues, eigenvectors, ratio) -> np.ndarray:
    """``M~ = M (I + ratio M)^-1`` from the eigen-decomposition of ``M`` (Rosenberg Eq 4.3,
    ``ratio = gamma_I / 2 lambda``): ``V diag(mu / (1 + ratio mu)) V^T``; ``ratio = 0`` is
    ``M`` itself (lambda infinite)."""
    mu = np.maximum(eigenvalues, 0.0)
    shrunk = mu / (1.0 + ratio * mu)
    Mt = (eigenvectors * shrunk) @ eigenvectors.T
    return (Mt + Mt.T) * 0.5


def transductive_kernel(K, VtK, eigenvalues, eigenvectors, labeled_idx, *, gamma_A, gamma_I,
                        coupling):
    """The transductive CoMR objective (Rosenberg 4.3.1, the one of his ref. [29]) as RLS on the
    labeled rows: ``(K~_LL, Z)`` such that ``beta = (K~_LL + l I)^-1 y`` fits and
    ``alpha = Z beta / 2`` is the ambient function's expansion.

    The objective over the ambient values ``a = K alpha`` and the intrinsic ones ``g``,
    ``(1/l) ||(a + g)_L / 2 - y||^2 + gamma_A alpha^T K alpha + gamma_I g^T M g
    + 2 lambda ||g - a||^2``, is a quadratic form ``P`` in ``(a, g)`` plus the loss of
    ``phi = (a + g) / 2``; so ``phi`` is RLS in the kernel ``K~ = B P^-1 B^T``. Eliminating
    ``g`` (``C = gamma_I M + 2 lambda I``) leaves ``S_aa = K (gamma_A I + gamma_I M~ K)^-1``
    with Eq 4.3's ``M~``, and ``4 K~ = R^T S_aa R + C^-1`` with ``R = I + 2 lambda C^-1``:
    no inverse of ``K`` (the linear kernel's is singular) or of ``M``. ``VtK = V^T K`` is
    shared by every candidate gamma_I on one graph.
    """
    mu = np.maximum(eigenvalues, 0.0)
    V = eigenvectors
    L = labeled_idx
    c = gamma_I * mu + 2.0 * coupling  # eigenvalues of C
    A = (V * (2.0 * coupling * gamma_I * mu / c)) @ VtK  # gamma_I M~ K
    A[np.diag_indices_from(A)] += gamma_A
    C_inv_L = (V / c) @ V[L].T
    R = 2.0 * coupling * C_inv_L
    R[L, np.arange(L.size)] += 1.0
    Z = lu_solve(lu_factor(A, overwrite_a=True), R)
    Kt = 0.25 * (R.T @ (K @ Z) + C_inv_L[L])
    return (Kt + Kt.T) * 0.5, Z


class CoMR(SharesClient, ClassifierMixin, BaseEstimator):
    """Manifold co-regularization (CoMR, Rosenberg 4.3), squared loss, multi-class one-vs-rest.

    Semi-supervised (Eq 4.3): ``alpha = (J K + gamma_A l I + gamma_I_eff l M~ K)^-1 Y`` with the
    CoMR penalty ``M~ = M^intr (I + (gamma_I / 2 gamma_C) M^intr)^-1``,
    ``M^intr = 1e-6 I + L^p``. Transductive (4.3.1): the loss on ``(f^a + f^i) / 2``, solved as
    RLS in its kernel (:func:`transductive_kernel`). Both predict by
    ``f(x) = sum_i alpha_i K(x_i, x) + b``, the ambient function, with class offsets ``b``
    from ``class_balance`` (0 without it).

    Parameters
    ----------
    gamma_A : float, default 1e-6
        Rosenberg's gamma_A, weight of the ambient norm ``||f||_K^2`` (loss ``(1/l) sum``).
    gamma_I : float or "auto", default "auto"
        Rosenberg's gamma_I, weight of the intrinsic term, before ``graph_normalization``.
        0 is the supervised RLS. ``"auto"`` chooses it among ``AUTO_GAMMA_I`` of
        :class:`~dask_ssl.models.LapRLS` (0, the supervised model, always a candidate),
        jointly with the "auto" graph settings (``n_neighbors``, ``p``), by exact
        leave-one-out on the labeled rows (RLS with each candidate's CoMR point-cloud kernel;
        the left-out row stays in the graph) and the rule of
        :mod:`dask_ssl.models._selection`: a graph candidate replaces the supervised model
        only when it errs on fewer held-out rows beyond the noise. With fewer than 5 labeled
        rows in a class the seeds' 1e4 on the first graph setting is used, unchecked, with a
        :class:`~dask_ssl.models._selection.SelectionWarning`. The value used is
        ``gamma_I_``, the table ``selection_``.
    gamma_C : float, default 1.0
        Rosenberg's lambda, the coupling ``lambda ||f^i - f^a||^2`` of the ambient and
        intrinsic views (his experiments fix 1). ``np.inf`` is manifold regularization
        (LapRLS with ``M^intr``), 0 the supervised RLS. The coupling sums over the rows of the
        cloud, so it weighs ``gamma_C / (u + l)`` (the disagreement's mean, CoRLS's
        convention), or ``gamma_C`` with ``graph_normalization="none"`` (Rosenberg's Eq 4.3,
        where his Table 4.2 values hold). ``M~`` is shaped by the ratio of the effective
        weights, ``gamma_I_eff / (2 gamma_C_eff)``: with the default ``"n2"`` it is
        ``gamma_I / (2 (u + l) gamma_C)``, so the candidates of ``gamma_I="auto"`` reach from
        MR-like penalties (small ratios) to the capped ones.
    kernel : str or callable, default "rbf"
        The ambient kernel K on the rows (all views side by side), by
        :func:`~sklearn.metrics.pairwise.pairwise_kernels` name or callable. Rosenberg's
        LINES uses ``"linear"``.
    kernel_params : dict, optional
        Its parameters; an RBF without ``gamma`` gets LapRLS's default width
        (:func:`~dask_ssl.models._rbf_width.default_rbf_gamma`), in ``kernel_params_``.
    n_neighbors : int or "auto", default "auto"
        Rosenberg's nn, k of the kNN graph on the rows (at most n - 1, with a warning).
        ``"auto"`` (with ``p``): see ``p``.
    metric, weights, t, symmetrize, search_epsilon, random_state
        The kNN graph, as in :class:`~dask_ssl.models.LapRLS` (heat weights
        ``exp(-d^2 / 4t)``; Rosenberg's ``sigma^2 = 1`` is ``t = 0.5``).
    normalized : bool, default True
        ``L = I - D^-1/2 W D^-1/2`` (Rosenberg's), else ``D - W``.
    p : int or "auto", default "auto"
        Rosenberg's p, the power of the Laplacian in ``M^intr``. With ``"auto"`` for
        ``n_neighbors`` and / or ``p`` the graph settings are LapRLS's candidates
        (``AUTO_GRAPHS`` of :mod:`dask_ssl.models._graph_seam`, ((10, 1), (50, 5)) when both are
        "auto": Rosenberg's nn = 10, p = 1 and a wider, smoother graph), chosen with
        ``gamma_I`` on the labeled rows (see ``gamma_I``); a graph given to ``fit`` fixes the
        neighbours, so only ``p`` can vary. The choice is in ``n_neighbors_`` and ``p_``. A
        graph suits one data set and not another (a 10-NN graph on a text set can cut a class
        apart where a 50-NN one does not), and the labels, not the data set's name, say which.
    graph_normalization : {"n2", "edges", "none"}, default "n2"
        gamma_I_eff = gamma_I / (u + l)^2 (thesis ch. 2, the package's default), gamma_I /
        sum W_ij, or gamma_I as Rosenberg writes Eq 4.3 (his Table 4.2 values need "none").
    formulation : {"semi-supervised", "transductive"}, default "semi-supervised"
        Rosenberg's semi-supervised CoMR (4.3.3, Eq 4.3: the labeled loss on the ambient
        function ``f^a``, ``a^a = 1``, ``a^i = 0``), the form his thesis settles on; or the
        transductive objective (4.3.1: the loss on ``(f^a + f^i) / 2``), the one of his ref.
        [29], which his Tables 4.3-4.4 come from. Both predict by ``f^a``; the leave-one-out
        of ``gamma_I="auto"`` scores the function the loss is on.
    class_balance : "auto", "labeled", None or array-like of shape (n_classes,), default "auto"
        Shares the unlabeled rows are cut to: the offsets ``b`` (``intercept_``) are set so
        that ``argmax_c f_c`` (the sign with two classes) gives the unlabeled training rows
        the classes in these shares (``"labeled"``: the labeled rows' shares; an array: in
        ``classes_`` order, positive, summing to 1), the class balance constraint of the
        thesis' S3VMs (``r``, Eq 3.2) as :class:`~dask_ssl.models.GraphTransduction` applies
        it (:func:`dask_ssl.multiview._balance.balance_offsets`). Why: with few labels the
        graph term can put most of each one-vs-rest column's outputs along the graph's
        smoothest vector with a coefficient set by the labeled rows' degrees rather than by
        the class, and the largest score then names one class for nearly every row; the cut
        keeps the columns' differences between rows, which carry the class. None: no offset.
        ``"auto"``: ``"labeled"`` when the fitted model has a graph term (``gamma_I_eff > 0``
        and ``gamma_C > 0``) whose setting the labels were too few to check (the seeds'
        ``gamma_I`` or a given graph setting standing with a ``SelectionWarning``), else None:
        the supervised RLS has no such common part, and a setting the leave-one-out chose
        already decides well on the labeled rows, where a cut at the labeled shares (equal
        when the labels are drawn per class) would force them on unbalanced classes. The
        value used is ``class_balance_``.
    unlabeled : scalar, default -1
        Marker of unlabeled rows in ``y``.
    client, n_blocks
        Cluster and row blocks of the kNN search.

    Attributes
    ----------
    classes_ : ndarray
    dual_coef_ : ndarray of shape (n, n_columns)
        alpha per class column (one column for two classes, positive ``classes_[1]``).
    class_balance_ : "labeled", None or array-like
        The ``class_balance`` used (``"auto"`` resolved).
    intercept_ : ndarray of shape (n_columns,)
        ``-b``, the class offsets of ``class_balance`` (zero with None).
    expansion_points_ : ndarray or CSR of shape (n, sum of view widths)
        The training rows, views side by side.
    view_names_ : tuple of str or None
        The views' names when ``Xs`` was a dict (``predict`` then matches them by name).
    view_features_ : tuple of int
        Each view's width.
    n_features_in_ : int
        Their sum.
    kernel_params_ : dict
    gamma_I_, gamma_I_effective_ : float
        The gamma_I used and its normalized value.
    n_neighbors_, p_ : int
        The graph setting used (``n_neighbors_`` None for a graph given to ``fit``, and both
        None for a model stored before CoMR chose its graph).
    gamma_C_effective_ : float
        The coupling's coefficient (:func:`coupling_weight`).
    selection_ : list of dict
        With "auto" settings: per candidate ``n_neighbors``, ``p`` (None for ``gamma_I = 0``,
        the supervised model, on no graph) and ``gamma_I``, leave-one-out ``errors``,
        ``error``, ``stderr``, ``squared``, the paired tests ``passed`` and ``chosen``
        (:func:`dask_ssl.models._selection.table`); empty when nothing was chosen.
    selection_cost_ : dict or None
        What the selection cost beside the fit at the chosen setting: the ``seconds`` and
        ``round_trips`` to the workers spent choosing, and ``fit_seconds`` and
        ``fit_round_trips`` of the rest of the fit (:mod:`dask_ssl.models._selection_cost`);
        None when nothing was selected. Stored in ``model.json``.
    transduction_ : ndarray of shape (n,)
    n_labeled_ : int
    fit_seconds_ : float
    """

    def __init__(self, *, gamma_A=1e-6, gamma_I="auto", gamma_C=1.0, kernel="rbf",
                 kernel_params=None, n_neighbors="auto", metric="euclidean", weights="heat",
                 t=None, symmetrize="max", normalized=True, p="auto", graph_normalization="n2",
                 search_epsilon=0.1, formulation="semi-supervised", class_balance="auto",
                 unlabeled=-1, client=None, n_blocks=None, random_state=None):
        self.gamma_A = gamma_A
        self.gamma_I = gamma_I
        self.gamma_C = gamma_C
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.weights = weights
        self.t = t
        self.symmetrize = symmetrize
        self.normalized = normalized
        self.p = p
        self.graph_normalization = graph_normalization
        self.search_epsilon = search_epsilon
        self.formulation = formulation
        self.class_balance = class_balance
        self.unlabeled = unlabeled
        self.client = client
        self.n_blocks = n_blocks
        self.random_state = random_state

    # gamma_C: also np.inf, the MR limit (the shared constraint is finite); n_neighbors, p:
    # also "auto", LapRLS's graph candidates; formulation:
    # Rosenberg's two CoMR objectives, not CoRLS's systems
    _parameter_constraints = constraints(
        __init__, gamma_C=[NON_NEGATIVE, Options(Real, {np.inf})], n_neighbors=[COUNT, AUTO],
        p=[COUNT, AUTO], class_balance=[*SHARED["class_balance"], AUTO],
        formulation=[StrOptions({"semi-supervised", "transductive"})])

    def _check_params(self) -> None:
        validate(self)
        check_kernel(self.kernel, self.kernel_params)
        check_graph_combination(self)

    @measured_fit
    def fit(self, Xs, y, *, graph=None):
        """Fit on labeled and unlabeled rows.

        Parameters
        ----------
        Xs : list or dict of views, or one matrix
            All training rows in each view (the same rows); a single array or sparse matrix
            is one view. The ambient kernel and the graph see the views side by side.
        y : array of shape (n,)
            Classes, ``unlabeled`` on unlabeled rows.
        graph : Graph, optional
            A graph on exactly these rows (:func:`dask_ssl.graph.knn_graph`,
            :meth:`~dask_ssl.graph.weights.Graph.from_scipy`) instead of a new kNN search.
        """
        t0 = time.perf_counter()
        self._check_params()
        views = _as_views(Xs)
        n = views.n_rows
        classes, codes = encode_labels(y, n, self.unlabeled)
        labels = Labels(classes, codes, self.unlabeled)
        if self.class_balance != "auto":
            _class_shares(self.class_balance, codes[codes >= 0], classes.size)
        if graph is not None and graph.n_rows != n:
            raise ValueError(f"graph has {graph.n_rows} rows but Xs has {n}")
        X = _stack(views.arrays)
        kparams = dict(self.kernel_params or {})
        if self.kernel == "rbf" and "gamma" not in kparams:
            kparams["gamma"] = default_rbf_gamma(X)
        K = kernel_matrix(X, kernel=self.kernel, kernel_params=kparams)
        labeled = labels.labeled
        Y = labels.columns()
        settings = graph_settings(self, n, graph)
        if self.gamma_C == 0:
            settings = settings[:1]  # no graph term at all: the supervised RLS on any graph
        regularizers = [graph_regularizer(self, X, graph, n_neighbors=k, p=q)
                        for k, q in settings]
        # the dense algebra below: one BLAS thread (a threaded BLAS on a loaded host spins;
        # an n = 500 eigh took 1.6 s with threads and 0.12 s without)
        with single_blas_thread():
            regularizers = [(M + INTRINSIC_RIDGE * np.eye(n), total) for M, total in regularizers]
            sol, j, gamma_I, weight, unchecked = self._solve(K, regularizers, Y, labeled,
                                                             settings)
        self.classes_ = classes
        self.dual_coef_ = sol.alpha
        F = K @ sol.alpha
        # "auto": the cut only where an unchecked graph term shapes the scores (see the
        # class_balance docstring)
        self.class_balance_ = (("labeled" if weight > 0 and unchecked else None)
                               if self.class_balance == "auto" else self.class_balance)
        shares = _class_shares(self.class_balance_, codes[labeled], classes.size)
        self.intercept_ = (np.zeros(F.shape[1]) if shares is None
                           else -balance_offsets(F[~labeled], shares))
        self.expansion_points_ = X
        self.view_names_ = views.names
        self.view_features_ = views.n_features
        self.n_features_in_ = int(sum(views.n_features))
        self.kernel_params_ = kparams
        self.n_neighbors_, self.p_ = settings[j]
        self.gamma_I_ = gamma_I
        self.gamma_I_effective_ = weight
        self.gamma_C_effective_ = coupling_weight(self.gamma_C, self.graph_normalization, n)
        self.n_labeled_ = int(labeled.sum())
        self.transduction_ = self._labels_from_scores(self._scores(F + self.intercept_))
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _solve(self, K, regularizers, Y, labeled, settings):
        """``(solution, j, gamma_I, gamma_I_eff, unchecked)``: the graph setting ``j`` (of
        ``settings``, whose ``M^intr`` and edge weight sum are ``regularizers[j]``), the
        ``gamma_I`` given or chosen (sets ``selection_``) and whether the labels were too few
        to check a choice that had candidates."""
        n = K.shape[0]
        L = np.flatnonzero(labeled)
        coupling = coupling_weight(self.gamma_C, self.graph_normalization, n)
        spectra = {}  # per graph setting: M's eigen-decomposition (and V^T K), once

        def eigen(j):
            if j not in spectra:
                mu, V = np.linalg.eigh(regularizers[j][0])
                spectra[j] = (mu, V, V.T @ K if self.formulation == "transductive" else None)
            return spectra[j]

        def weight_of(j, g):
            return graph_term_weight(g, self.graph_normalization, n, regularizers[j][1])

        def transductive(g):
            """Whether gamma_I = g needs the two-view solve: at either coupling limit, or
            without a graph term, both formulations are one view's (MR or the supervised RLS)."""
            return (self.formulation == "transductive" and g > 0
                    and 0 < self.gamma_C < np.inf)

        def two_views(j, g):
            """``(K~_LL, Z)`` of the transductive objective at graph j, gamma_I = g."""
            mu, V, VtK = eigen(j)
            return transductive_kernel(K, VtK, mu, V, L, gamma_A=self.gamma_A,
                                       gamma_I=weight_of(j, g), coupling=coupling)

        def penalty(j, g):
            """``M~`` at graph j, gamma_I = g; None where the term vanishes."""
            if g == 0 or self.gamma_C == 0:
                return None
            if np.isinf(self.gamma_C):
                return regularizers[j][0]  # M~ = M: manifold regularization, no eigh
            mu, V, _ = eigen(j)
            return comr_regularizer(mu, V, weight_of(j, g) / (2.0 * coupling))

        def loo_outputs(j, g):
            if transductive(g):
                Kt = two_views(j, g)[0]
                H = Kt @ np.linalg.inv(Kt + L.size * np.eye(L.size))
                YL = Y[L]
                return YL - (YL - H @ YL) / (1.0 - np.diag(H))[:, None]
            Mt = penalty(j, g)
            return _loo_outputs(K, None if Mt is None else Mt @ K,
                                0.0 if Mt is None else weight_of(j, g), Y, labeled,
                                self.gamma_A)

        gammas = AUTO_GAMMA_I if self.gamma_I == "auto" else (float(self.gamma_I),)
        checks = (len(settings) * len(gammas) > 1
                  and (self.gamma_I == "auto" or self.gamma_I > 0))
        unchecked = checks and not enough_labels(truth_of(Y[labeled]))
        if unchecked:
            warn_unchecked(self, "gamma_I" if self.gamma_I == "auto" else "the graph")
            settings = settings[:1]
            gammas = (SEED_GAMMA_I,) if self.gamma_I == "auto" else gammas
        # gamma_I = 0, the supervised RLS, is one candidate whatever the graph (first)
        cases = [(j, g) for j in range(len(settings)) for g in gammas if g > 0 or j == 0]
        self.selection_ = []
        j, g = cases[0]
        if len(cases) > 1:
            # exact leave-one-out of RLS in each candidate's CoMR kernel (the row left out
            # stays in the graph)
            YL = Y[labeled]
            with selecting():
                outputs = [loo_outputs(*case) for case in cases]
            truth = truth_of(YL)
            wrong = np.array([truth_of(out) != truth for out in outputs])
            squared = np.array([np.sum((YL - out) ** 2, axis=1) for out in outputs])
            best = choose(wrong, squared, supervised=0)
            rows = [{"n_neighbors": None if c == 0 else settings[i][0],
                     "p": None if c == 0 else settings[i][1], "gamma_I": c}
                    for i, c in cases]
            self.selection_ = table(rows, wrong, squared, best, supervised=0)
            j, g = cases[best]
        if transductive(g):
            Kt, Z = two_views(j, g)
            beta = np.linalg.solve(Kt + L.size * np.eye(L.size), Y[L])
            sol = DenseSolution(0.5 * Z @ beta, np.zeros(Y.shape[1]), np.array([1]))
            return sol, j, g, weight_of(j, g), unchecked
        Mt = penalty(j, g)
        weight = 0.0 if Mt is None else weight_of(j, g)
        sol = laprls_direct(K, np.zeros((n, n)) if Mt is None else Mt, Y, labeled,
                            gamma_A=self.gamma_A, gamma_I=weight)
        return sol, j, g, weight, unchecked

    # prediction --------------------------------------------------------------------------
    @staticmethod
    def _scores(S):
        return S[:, 0] if S.shape[1] == 1 else S

    def decision_function(self, Xs):
        """``f(x) = sum_i alpha_i K(x_i, x)`` per class column for new rows given as views
        (matched to the fitted ones by name or position): shape (m,) for two classes
        (positive ``classes_[1]``), (m, n_classes) otherwise."""
        check_is_fitted(self, "dual_coef_")
        if sp.issparse(Xs) or isinstance(Xs, np.ndarray):
            Xs = [Xs]
        views = views_at_predict(Xs, self.view_names_, self.view_features_)
        Z = _stack(views.arrays)
        S = kernel_matrix(Z, self.expansion_points_, kernel=self.kernel,
                          kernel_params=self.kernel_params_) @ self.dual_coef_
        return self._scores(S + self.intercept_)

    def _labels_from_scores(self, scores):
        scores = np.asarray(scores)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def predict(self, Xs):
        return self._labels_from_scores(self.decision_function(Xs))

    # the model directory (see dask_ssl.multiview._serving) ---------------------------------
    def _fitted_info(self) -> dict:
        return _serving.comr_info(self)

    def _fitted_arrays(self) -> dict:
        return _serving.comr_arrays(self)

    def _restore(self, arrays: dict, doc: dict) -> None:
        _serving.comr_restore(self, arrays, doc)
