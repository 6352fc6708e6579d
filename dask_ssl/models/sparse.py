"""Sparse manifold regularization: LapRLS on a few kernel basis functions (thesis ch. 5).

The model is ``f(x) = sum_{j in J} beta_j K(x_j, x)`` over ``d = |J|`` training rows (the basis),
so a new row costs ``d`` kernel evaluations instead of ``n``. The basis is grown by kernel
matching pursuit (``basis="greedy"``), drawn at random, read off an l1 path (``"lasso"``,
``"lars"``) or given; by default (``"auto"``) it is the greedy's, checked on held-out labels
against its prefixes and a random basis (:mod:`._basis_selection`). On it the estimator fits
one of these objectives (``method``):

- ``"laprls"``: LapRLS restricted to the basis (Eq 5.2; the thesis' GREEDY / RANDOM / LASSO /
  LARS rows of Tables 5.3 and 5.5);
- ``"slack"``: the slack method (Eq 5.6-5.9), graph outputs ``f`` on all rows coupled to the
  basis outputs by ``nu/2 ||f - K_NJ beta||^2``; with ``basis="greedy"`` this is the thesis'
  GREEDY+SLACK, with a given basis (e.g. a GREEDY model's ``basis_``) its SLACK;
- ``"decoupled"``: the fully decoupled method, graph transduction ``(gamma_I M + I_L) f = Ybar``
  first, then a sparse supervised fit ``gamma_A/2 ||h||^2 + nu/2 ||f - h||^2`` to its scores;
- ``"sigmoid"``: the sigmoid method (Eq 5.5), the graph term on ``s = sigmoid(rho o)`` instead
  of the outputs ``o``; not convex, minimized by nonlinear CG from the supervised fit on the
  basis.

The computations are in :mod:`dask_ssl.solvers.sparse`.
"""

from __future__ import annotations

import time
import warnings
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from ..cluster import get_client
from ..graph.dense import laplacian_matrix, regularizer_matrix
from ..graph.diagnostics import graph_diagnostics, warn_graph
from ..graph.weights import Graph
from ..kernels.base import check_kernel, kernel_matrix
from ..kernels.nystrom import NystromFeatures
from ..linalg.blas import blas_for_rows
from ..linalg import RowBlocks
from ..solvers import sparse as solve
from ..solvers.graph import solve_graph_system
from ..solvers.greedy_state import BlockColumns, BlockState
from ..solvers.laplacian_power import LaplacianPower
from ._clone import SharesClient
from ._constraints import AUTO, COUNT, POSITIVE, constraints, validate
from ._graph_weight import SEED_GAMMA_I, truth_of
from ._graph_seam import (check_graph_combination, estimator_graphs, graph_settings,
                          graph_term_weight_on)
from ._input import check_finite_local, fit_input, gather_rows, to_blocks
from ._pickle import PicklesWithoutGraph
from ._rbf_width import blocks_rbf_gamma, default_rbf_gamma
from .artifact import pack_matrix, unpack_matrix
from .base import OneVsRestLabels
from ._selection import (CV_FOLDS, MIN_PER_CLASS, SelectionWarning, choose, enough_labels,
                         fold_of, table, warn_unchecked)
from ._selection_cost import measured_fit, selecting
from ._basis_selection import choose_basis
from ._sparse_graph import (choose_graph, driver_solve, held_out_rls, held_out_transduction,
                            transduction_fidelity)
from ._transduction_selection import CV_FILL_BUDGET, CV_TOL
from ._sparse_selection import AUTO_GAMMA_A, PILOT_GAMMA_A, select_on_basis
from .manifold import (AUTO_GAMMA_I, _squeeze, expansion_info, expansion_scores,
                       restore_expansion_info)

BASES = ("auto", "greedy", "random", "lasso", "lars")
METHODS = ("laprls", "slack", "decoupled", "sigmoid")
#: The methods whose "auto" settings are scored by exact leave-one-out on one basis.
ON_BASIS = ("laprls", "slack")
SOLVERS = ("direct", "graph")
#: Where SparseLapRLS narrows the shared constraints: its own solvers.
_OVERRIDES = dict(solver=[StrOptions(set(SOLVERS))],
                  gamma_A=[POSITIVE, AUTO], n_neighbors=[COUNT, AUTO], p=[COUNT, AUTO])


def _fraction_or_count(n_basis, n_rows: int) -> int:
    """``d``: an int as given, a float as that share of the rows (at least one)."""
    if isinstance(n_basis, Integral):
        d = int(n_basis)
        if not 1 <= d <= n_rows:
            raise ValueError(f"n_basis={d} is out of range: the basis is drawn from the "
                             f"{n_rows} training rows (1 <= n_basis <= {n_rows})")
        return d
    return max(1, int(round(float(n_basis) * n_rows)))


def _given_basis(basis, n_rows: int) -> np.ndarray:
    """A user's basis as row indices: integers, one-dimensional, distinct, in range."""
    idx = np.asarray(basis)
    if idx.ndim != 1 or idx.size == 0:
        raise ValueError(f"basis must be a non-empty one-dimensional array of row indices, "
                         f"got shape {idx.shape}")
    if idx.dtype.kind not in "iu":
        if idx.dtype.kind == "f" and np.all(np.isfinite(idx)) and np.all(idx == np.round(idx)):
            idx = idx.astype(np.int64)
        else:
            raise ValueError(f"basis must hold integer row indices, got dtype {idx.dtype}")
    bad = np.flatnonzero((idx < 0) | (idx >= n_rows))
    if bad.size:
        raise ValueError(f"basis index {int(idx[bad[0]])} (position {int(bad[0])}) is out of "
                         f"range for {n_rows} training rows")
    if np.unique(idx).size != idx.size:
        raise ValueError("basis repeats a row index; each basis function is one row")
    return idx.astype(np.int64)


class SparseLapRLS(SharesClient, PicklesWithoutGraph, OneVsRestLabels, ClassifierMixin,
                   BaseEstimator):
    """Sparse Laplacian RLS (thesis ch. 5): GREEDY, RANDOM, LASSO, LARS, SLACK, GREEDY+SLACK
    and the fully decoupled method; multi-class one-vs-rest on one shared basis.

    Units are those of :class:`LapRLS`: the objective is ``(1/l) sum_L (y_i - f_i)^2 + gamma_A
    beta^T K_JJ beta + gamma_I_eff f^T M f`` (+ ``(nu/l) ||f - K_NJ beta||^2`` with slack), so
    with every row in the basis ``method="laprls"`` is :class:`LapRLS`. Times ``l/2`` it is the
    thesis' Eq 5.1 / 5.7, whose gamma_A, gamma_I are ``l gamma_A``, ``l gamma_I_eff`` here and
    whose nu is ``nu``.

    Parameters
    ----------
    n_basis : int or float, default 0.1
        d, the number of basis functions: an int ``1 <= d <= n``, or a float in ``(0, 1]``,
        that share of the ``n`` training rows (the thesis' ``d_max = 0.1 n``). Ignored when
        ``basis`` is an index array. A greedy or l1 basis may end smaller when no further
        row is linearly independent of it (``n_basis_`` is the size reached).
    basis : {"auto", "greedy", "random", "lasso", "lars"} or array of int, default "auto"
        The index set J. ``"auto"``: the greedy basis, checked by cross-validation on the
        labeled rows against its prefixes of a quarter, half and three quarters of ``d``
        functions and against a random basis of ``d`` (each fold's basis grown again without
        that fold's labels, at the given ``gamma_A`` and ``gamma_I`` or the pilot ones; the
        decoupled method checks only its supervised fit, ``gamma_I = 0``: with a graph term
        its basis fits the transduction's scores on every row, not the labels, and the
        greedy basis is used unchecked;
        :mod:`dask_ssl.models._basis_selection`); the whole greedy basis is kept unless a
        candidate errs less beyond the noise (the shared rule of
        :mod:`dask_ssl.models._selection`), and the candidates are in ``basis_selection_``.
        With many more basis functions than labels the greedy can spend its last functions
        on fitting the labels, which only labels it did not see reveal. It costs
        ``CV_FOLDS`` further greedy fits. With fewer than 5 labeled rows in a class: the
        greedy basis, with a warning. ``"greedy"``: kernel matching pursuit with post-backfitting
        (thesis 5.1.1) on the objective of ``method``: each step scores ``kappa`` random rows
        outside J by ``g_j^2 / h_j`` (the first and second derivative of the objective in the
        new coefficient at ``beta_J`` fixed; twice the decrease of the best one-dimensional
        step; for ``"slack"`` with an upper bound of the second derivative that needs no
        f-solve, so only the function kept costs one) and adds the best; ``beta_J`` is then
        refitted exactly by a Cholesky factor
        extended by one row a step. Beyond ``DENSE_MAX_ROWS`` training rows the candidates
        are scored on the workers, beside the row blocks of ``X``
        (:class:`~dask_ssl.solvers.greedy_state.BlockState`): only the candidates' rows,
        their kernel columns and ``d x kappa`` reductions travel a step, and rows given as
        :class:`~dask_ssl.linalg.RowBlocks` are not gathered to the driver (the basis rows
        are fetched at the end). ``"random"``: ``d`` rows drawn uniformly. ``"lasso"`` /
        ``"lars"``: the support where the Lasso / LARS path of ``R(beta) + gamma_S
        ||beta||_1`` over all ``n`` functions (Eq 5.3, scikit-learn's ``lars_path`` on the
        least-squares form of R; O(n^3), small data) first holds ``d`` functions, refitted
        without the l1 term; the path's ``gamma_S`` (thesis units) is kept in ``gamma_S_``.
        An array: those rows.
    method : {"laprls", "slack", "decoupled", "sigmoid"}, default "decoupled"
        The objective (see the module docstring). The default, the decoupled method, lets
        the basis follow graph transduction's scores, which already carry the graph's
        effect, where the slack and restricted methods spend the basis on the graph term
        itself (the README compares them on the same labels); its ``gamma_I`` is chosen
        without growing a basis per candidate. With ``"slack"`` the greedy scores are those
        of the slack objective with ``f`` minimized out exactly (the candidate's coefficient
        and ``f`` jointly optimal, ``beta_J`` fixed): the thesis' GREEDY+SLACK scores a
        candidate after a few CG iterations on ``f`` instead. ``"sigmoid"`` finds a greedy
        or l1 basis on restricted LapRLS's objective (Eq 5.5 is not a quadratic to score
        candidates on), then minimizes Eq 5.5 on it.
    kappa : int, default 50
        kappa, candidates scored per greedy step.
    gamma_A : float or "auto", default 1e-6
        gamma_A, weight of the ambient norm ``beta^T K_JJ beta`` (LapRLS's units; the thesis'
        ch. 5 gamma_A is ``l gamma_A``). ``"auto"`` (``method="laprls"`` or ``"slack"``)
        chooses it among :data:`~dask_ssl.models._sparse_selection.AUTO_GAMMA_A` by exact
        leave-one-out on the labeled rows, with ``gamma_I`` (see ``gamma_I``); the value used
        is ``gamma_A_``. The ridge a basis needs grows with its size against the labels: with
        many more basis functions than labeled rows a tiny ``gamma_A`` lets the expansion
        fit the labels exactly.
    gamma_I : float or "auto", default "auto"
        gamma_I, weight of the graph term before ``graph_normalization`` (the thesis' ch. 5
        gamma_I is ``l gamma_I_eff``, the weight GraphTransduction's system carries). 0 is
        the supervised fit on the basis (for ``"decoupled"`` too: without a graph term there
        is nothing to propagate). ``"auto"`` chooses among LapRLS's ``AUTO_GAMMA_I`` (0
        first) on the labeled rows by the shared rule of :mod:`dask_ssl.models._selection`
        (a graph candidate replaces the supervised one only when it errs less and a paired
        test over the labeled rows finds it better beyond the noise); with fewer than 5
        labeled rows in a class it is the seeds' 1e4, with a
        :class:`~dask_ssl.models._selection.SelectionWarning`. The value used is
        ``gamma_I_``; the candidates are in ``selection_``. With ``method="laprls"`` or
        ``"slack"`` the basis (its kind and size first chosen by ``basis="auto"``) is chosen
        once, at the seeds' 1e4 (and ``gamma_A`` given, or
        1e-6 for ``"auto"``), and every ``(gamma_A, gamma_I)`` candidate is scored on it by
        exact leave-one-out over the labeled rows, closed form through the ``d x d`` system
        of the method on that basis (for the slack method, ``f`` refitted on every row too;
        :mod:`dask_ssl.models._sparse_selection`); the coefficients on that basis are then
        refitted at the chosen setting. With ``"decoupled"`` and ``"sigmoid"`` it is 4-fold
        cross-validation on the labeled rows, the held-out rows staying in the graph
        unlabeled: the decoupled method scores each weight by what its sparse fit then
        follows, the graph transduction (the same columns that chose the graph), and 0 by
        kernel RLS on the fold's labels (its supervised fit on a basis holding the labeled
        rows), so a fold costs no basis; the sigmoid method refits the whole method (basis
        included) in each fold.
    nu : float, default 1.0
        nu, the slack coupling (Eq 5.7): the weight of ``||f - K_NJ beta||^2`` relative to the
        labeled squared loss (``nu/2`` against ``1/2`` in the thesis' units). ``nu -> inf``
        gives restricted LapRLS on the basis. For ``"decoupled"`` only ``gamma_A / nu``
        matters (the ridge of the supervised fit to the transduction scores).
    rho : float, default 1.0
        rho, the sigmoid's slope in ``s_i = 1 / (1 + exp(-rho o_i))`` (``method="sigmoid"``
        only; the thesis gives no value).
    kernel, kernel_params
        Base kernel K (:class:`LapRLS`; the default RBF width is filled into
        ``kernel_params_``).
    n_neighbors : int or "auto", default "auto"
        The seeds' nn, neighbours per row of the kNN graph. ``"auto"``: see ``p``.
    metric, weights, t, symmetrize, search_epsilon, random_state
        The kNN graph as in :class:`LapRLS`; ``random_state`` also draws the greedy
        candidates and the random basis.
    normalized : bool, default True
        Normalized Laplacian ``D^-1/2 L D^-1/2``.
    p : int or "auto", default "auto"
        ``M = L^p``. With ``"auto"`` for ``n_neighbors`` and/or ``p`` the candidate settings
        are LapRLS's (``AUTO_GRAPHS`` = ((10, 1), (50, 5)), or the one given crossed with the
        other's), and the one kept is the graph on which graph transduction, the graph term
        alone, errs least on held-out labels (:data:`CV_FOLDS`-fold cross-validation on the
        labeled rows, at every ``gamma_I`` above 0 the fit may use; :mod:`._sparse_graph`);
        a sparse model cannot afford a basis per candidate graph. Whether the graph term is
        used at all is ``gamma_I``'s choice on that graph (0 is a candidate). Both graphs
        come from one search for the larger neighbour count. The candidates are in
        ``graph_selection_``, the choice in ``n_neighbors_`` and ``p_``. With fewer than 5
        labeled rows in a class (or ``gamma_I = 0``) the first setting, (10, 1), unscored.
    graph_normalization : {"n2", "edges", "none"}, default "n2"
        ``gamma_I_eff`` from ``gamma_I`` as in :class:`LapRLS`.
    solver : {"direct", "graph"}, default "direct"
        How the f-systems ``(gamma_I M + I_L [+ nu I]) f = b`` of ``"slack"`` and
        ``"decoupled"`` are solved. ``"direct"``: one sparse LU on the driver for the whole
        fit, and the slack fit on the final basis is its exact minimizer (``f`` eliminated).
        ``"graph"``: every f-system is
        :func:`~dask_ssl.solvers.graph.solve_graph_system`, GraphTransduction's block CG on
        the workers (a greedy step solves for the column it keeps), and
        the fit on the final basis is the thesis' alternation of f-steps (Eq 5.8, warm-started
        from the last ``f``) and ``d x d`` beta-steps (Eq 5.9); the graph stays on the
        workers, and every ``M`` product (``"laprls"``'s candidate scores, the objective) is
        a halo exchange there. With ``"direct"`` the graph is gathered to the driver; beyond
        ``DENSE_MAX_ROWS`` rows only ``L`` is formed (``L^p`` of a kNN graph fills in, and a
        sparse LU of ``L`` on a small-world graph such as text's is nearly dense), ``M`` is
        applied as ``p`` products with it and the f-systems, whose ``nu I`` keeps them well
        conditioned, are solved by block CG there, to ``tol``; the decoupled method's
        system has no ``nu I``, so there it keeps one sparse LU with ``p = 1`` and with
        ``p > 1`` is solved on the workers as with ``"graph"``.
    tol : float, default 1e-6
        Relative tolerance of block CG, of the alternation's objective decrease and of the
        sigmoid method's gradient norm.
    max_iter : int, default 200
        Alternations of the slack fit (``solver="graph"``); nonlinear CG iterations of the
        sigmoid method.
    unlabeled : scalar, default -1
        Marker of unlabeled rows in ``y``.
    client, n_blocks
        Cluster and row blocks of the kNN search (and of the graph solver).

    Attributes
    ----------
    classes_ : ndarray
    basis_ : ndarray of shape (d,)
        Indices of the basis rows in the training data, in the order they entered.
    basis_points_ : ndarray or CSR of shape (d, n_features)
        The basis rows x_j.
    dual_coef_ : ndarray of shape (d, n_columns)
        beta_J per class column (one column for two classes, positive ``classes_[1]``).
    intercept_ : ndarray of shape (n_columns,)
        Zero (no bias, as LapRLS).
    n_basis_ : int
        d reached.
    kernel_params_ : dict
    gamma_A_ : float
        gamma_A used (chosen with ``gamma_A="auto"``).
    gamma_I_, gamma_I_effective_ : float
        gamma_I and the coefficient of ``f^T M f`` after normalization.
    gamma_S_ : list of float or None
        ``basis="lasso"/"lars"``: gamma_S (thesis units) where each column's path reached d.
    graph_scores_ : ndarray of shape (n, n_columns) or None
        ``f`` of the slack method, or the decoupled method's transduction scores.
    objective_ : float or ndarray
        The objective (LapRLS's units) per column at the fit.
    history_ : list of float
        Greedy: the objective (thesis units, summed over columns) after each basis function
        entered (with ``"sigmoid"``, restricted LapRLS's, on which the basis grew); slack with
        ``solver="graph"``: Eq 5.7 per alternation.
    n_iter_ : int
        Alternations of the slack fit with ``solver="graph"``; nonlinear CG iterations of the
        sigmoid method (the most over the class columns); 1 otherwise (one exact solve on the
        final basis).
    selection_ : list of dict
        With an ``"auto"`` setting and enough labels: per candidate its settings, held-out
        ``errors``, ``error``, ``stderr``, ``squared`` residual, ``passed``, ``chosen``
        (:func:`dask_ssl.models._selection.table`) and the ``criterion``: ``"loo"`` with its
        ``gamma_A`` and ``gamma_I`` for ``method="laprls"`` / ``"slack"``, ``"cv"`` with its
        ``gamma_I`` otherwise; empty otherwise.
    basis_selection_ : list of dict
        With ``basis="auto"`` and enough labels: per candidate basis its ``basis``
        (``"greedy"`` or ``"random"``) and ``n_basis``, the held-out ``errors``, ``error``,
        ``stderr``, ``squared`` residual, ``passed`` (against the whole greedy basis) and
        ``chosen``, with ``criterion`` ``"cv"``; empty otherwise (and for models stored
        before it existed).
    selection_cost_ : dict or None
        What the selection cost beside the fit at the chosen setting: the ``seconds`` and
        ``round_trips`` to the workers spent choosing, and ``fit_seconds`` and
        ``fit_round_trips`` of the rest of the fit (:mod:`dask_ssl.models._selection_cost`);
        None when nothing was selected. Stored in ``model.json``.
    graph_selection_ : list of dict
        With several graph settings (``"auto"``) and enough labels: per candidate its
        ``n_neighbors``, ``p``, ``gamma_I``, held-out ``errors``, ``error``, ``stderr``,
        ``squared`` residual, ``criterion`` ``"cv"`` and ``chosen``; empty otherwise (and for
        models stored before the graph was chosen). Plotted in a workflow's run report.
    transduction_, graph_, diagnostics_, fit_seconds_, n_neighbors_, p_
    """

    def __init__(self, *, n_basis=0.1, basis="auto", method="decoupled", kappa=50,
                 gamma_A=1e-6, gamma_I="auto", nu=1.0, rho=1.0, kernel="rbf",
                 kernel_params=None,
                 n_neighbors="auto", metric="euclidean", weights="heat", t=None,
                 symmetrize="max", normalized=True, p="auto", graph_normalization="n2",
                 solver="direct", tol=1e-6, max_iter=200, search_epsilon=0.1, unlabeled=-1,
                 client=None, n_blocks=None, random_state=None):
        self.n_basis = n_basis
        self.basis = basis
        self.method = method
        self.kappa = kappa
        self.gamma_A = gamma_A
        self.gamma_I = gamma_I
        self.nu = nu
        self.rho = rho
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
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.search_epsilon = search_epsilon
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
        """Every hyperparameter against its declared constraint, then the kernel and graph
        settings together; first in ``fit``, before any work."""
        validate(self)
        if self.gamma_A == "auto" and self.method not in ON_BASIS:
            raise ValueError(f"gamma_A='auto' is chosen by leave-one-out on the basis, which "
                             f"methods {ON_BASIS} have in closed form; method={self.method!r} "
                             "takes a number")
        check_kernel(self.kernel, self.kernel_params)
        check_graph_combination(self)

    # fitting -----------------------------------------------------------------------------
    @measured_fit
    def fit(self, X, y=None, *, graph: Graph | None = None):
        """Fit on labeled and unlabeled rows.

        Parameters
        ----------
        X : array, sparse matrix, dask array or RowBlocks, shape (n, n_features)
            All training rows; the basis is drawn from them.
        y : array of shape (n,), optional
            Classes, ``unlabeled`` on unlabeled rows; from the blocks' labels when omitted.
        graph : Graph, optional
            A graph on exactly these rows, used instead of a new kNN search.
        """
        t0 = time.perf_counter()
        self._check_params()
        X, labels = fit_input(self, X, y, graph=graph)
        n = labels.codes.size
        given = None if isinstance(self.basis, str) else _given_basis(self.basis, n)
        d = given.size if given is not None else _fraction_or_count(self.n_basis, n)
        client = get_client(self.client)
        # beyond DENSE_MAX_ROWS the greedy scores its candidates on the workers, beside the
        # row blocks (solvers.greedy_state): rows held there are not gathered to the driver
        greedy_on_workers = (given is None and self.basis in ("auto", "greedy")
                             and n > solve.DENSE_MAX_ROWS)
        points = blocks = None
        if greedy_on_workers and isinstance(X, RowBlocks):
            blocks = to_blocks(X, client, self.n_blocks)   # checked where they live
        else:
            points = gather_rows(X)
            check_finite_local(points)
        kparams = dict(self.kernel_params or {})
        if self.kernel == "rbf" and "gamma" not in kparams:
            kparams["gamma"] = (default_rbf_gamma(points) if points is not None
                                else blocks_rbf_gamma(blocks))
        first_rows = points[:2] if points is not None else NystromFeatures._fetch(
            blocks, np.arange(min(2, n)))
        kernel_matrix(first_rows, kernel=self.kernel, kernel_params=kparams)
        if blocks is None and (graph is None or greedy_on_workers):
            blocks = to_blocks(X, client, self.n_blocks)
        labeled = labels.labeled
        l = int(labeled.sum())
        Ybar = labels.columns()
        (k, p), graph, graph_selection, held_out = self._choose_graph(blocks, graph, n, Ybar,
                                                                       labeled)
        diag = graph_diagnostics(graph)
        warn_graph(diag, labeled)
        unit = graph_term_weight_on(self, graph, 1.0)   # gamma_I_eff is linear in gamma_I
        M = self._regularizer(graph, p, n)
        # rows left on the workers give kernel columns there (a random basis of "auto")
        columns = (BlockColumns(blocks, self.kernel, kparams) if points is None
                   else solve.KernelColumns(points, self.kernel, kparams))
        problem = dict(M=M, graph=graph, diag=diag, p=p, columns=columns, d=d, given=given, n=n,
                       kind=None if given is not None else self.basis,
                       blocks=blocks if greedy_on_workers else None, kernel_params=kparams)
        # small dense solves gain nothing from BLAS threads, and on a shared host they lose
        # much (a 300-row fit with its selection: 40 s threaded under load, 1.5 s on one)
        try:
            with blas_for_rows(n, solve.DENSE_MAX_ROWS):
                if self.method == "decoupled":
                    # its gamma_I is chosen without a basis, so the basis is checked at it
                    # (none to check at 0: the labeled rows)
                    gamma_A = float(self.gamma_A)
                    gamma_I, selection = self._gamma_I(problem, Ybar, labeled, unit, held_out)
                    basis_selection = self._resolve_basis(problem, Ybar, labeled, unit,
                                                          gamma_I=gamma_I)
                    out = self._solve(problem, gamma_I * unit, Ybar, labeled)
                elif self.method in ON_BASIS and "auto" in (self.gamma_A, self.gamma_I):
                    basis_selection = self._resolve_basis(problem, Ybar, labeled, unit)
                    gamma_A, gamma_I, selection, out = self._select_on_basis(
                        problem, Ybar, labeled, unit)
                else:
                    basis_selection = self._resolve_basis(problem, Ybar, labeled, unit)
                    gamma_A = float(self.gamma_A)
                    gamma_I, selection = self._gamma_I(problem, Ybar, labeled, unit)
                    out = self._solve(problem, gamma_I * unit, Ybar, labeled)
        finally:
            if isinstance(M, solve.WorkerRegularizer):
                M.close()
        weight = gamma_I * unit
        fit, beta, F = out["fit"], out["beta"], out["F"]
        self.classes_ = labels.classes
        self.basis_ = fit.basis
        self.basis_points_ = (points[fit.basis] if points is not None
                              else NystromFeatures._fetch(blocks, np.sort(fit.basis))[
                                  np.argsort(np.argsort(fit.basis))])
        self.dual_coef_ = beta
        self.intercept_ = np.zeros(beta.shape[1])
        self.n_basis_ = int(fit.basis.size)
        self.kernel_params_ = kparams
        self.gamma_A_ = float(gamma_A)
        self.gamma_I_ = float(gamma_I)
        self.gamma_I_effective_ = float(weight)
        self.gamma_S_ = out["gamma_S"]
        self.graph_scores_ = F
        self.objective_ = _squeeze(2.0 / l * np.asarray(out["objective"], dtype=float))
        self.history_ = [float(v) for v in out["history"]]
        self.n_iter_ = int(out["n_iter"])
        self.selection_ = selection
        self.basis_selection_ = basis_selection
        self.graph_ = graph
        self.diagnostics_ = diag
        self.n_neighbors_ = k
        self.p_ = int(p)
        self.graph_selection_ = graph_selection
        self.n_features_in_ = int(blocks.n_features if points is None else points.shape[1])
        self.n_labeled_ = l
        self.data_shape_ = (n, self.n_features_in_)
        S = fit.KNJ @ beta
        self.transduction_ = self._labels_from_scores(S)
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _choose_graph(self, blocks, graph, n, Ybar, labeled):
        """``((n_neighbors, p), graph, graph_selection_, held_out)``: the setting of
        :func:`~._graph_seam.graph_settings` whose graph transduction errs least on held-out
        labels (:mod:`._sparse_graph`), at each ``gamma_I`` above 0 the fit may use, its
        graph, the candidates, and on that graph the held-out transduction outputs per
        ``gamma_I`` (None where nothing was scored; ``"decoupled"`` with ``gamma_I="auto"``
        chooses its weight from them). The neighbours of every setting come from one search
        for the most of them. ``gamma_I = 0`` (no graph term to choose for) or fewer than 5
        labeled rows in a class (then with a warning): the first setting, unscored."""
        settings = graph_settings(self, n, graph)
        gammas = (AUTO_GAMMA_I[1:] if self.gamma_I == "auto"
                  else (float(self.gamma_I),) if float(self.gamma_I) > 0 else ())
        truth = truth_of(Ybar[labeled])
        if len(settings) > 1 and gammas and not enough_labels(truth):
            warn_unchecked(self, "the graph (n_neighbors, p)")
        if not gammas or not enough_labels(truth):
            settings = settings[:1]
        if graph is not None:
            graphs = {None: graph}
        else:
            graphs = estimator_graphs(self, blocks, sorted({k for k, _ in settings}))
        if len(settings) == 1 and not (self.method == "decoupled" and self.gamma_I == "auto"
                                       and gammas and enough_labels(truth)):
            k, q = settings[0]
            return (k, q), graphs[k], [], None
        l = truth.size
        candidates, outputs = [], []
        with selecting():
            for k, q in settings:
                g_k = graphs[k]
                weights = [l * gamma * graph_term_weight_on(self, g_k, 1.0) for gamma in gammas]
                outputs += held_out_transduction(self._scoring_solve(g_k, q, n), Ybar, labeled,
                                                 truth, graph_diagnostics(g_k), weights)
                candidates += [{"n_neighbors": k, "p": q, "gamma_I": float(gamma)}
                               for gamma in gammas]
        best, selection = choose_graph(candidates, outputs, Ybar[labeled], truth)
        k, q = candidates[best]["n_neighbors"], candidates[best]["p"]
        held_out = {c["gamma_I"]: out for c, out in zip(candidates, outputs)
                    if (c["n_neighbors"], c["p"]) == (k, q)}
        return (k, q), graphs[k], selection if len(settings) > 1 else [], held_out

    def _scoring_solve(self, graph, p, n):
        """The many-column solve of :func:`~._sparse_graph.held_out_transduction` on ``graph``
        with ``M = L^p``: up to ``DENSE_MAX_ROWS`` rows with the direct solver, dense
        factors on the driver; otherwise GraphTransduction's block CG on the workers, every
        column at once (its selection's tolerance and preconditioner fill), where the graph
        stays: a sparse LU per (weight, fold) of a text graph is nearly dense."""
        if self.solver == "direct" and n <= solve.DENSE_MAX_ROWS:
            M = regularizer_matrix(graph, normalized=self.normalized, p=p, sparse=True)
            return driver_solve(lambda a, g: solve.FSystem(M, a, g))
        return lambda g, A, B, A_full: solve_graph_system(
            graph, A, B, gamma_I=g, normalized=self.normalized, p=p, tol=CV_TOL,
            a_precond=A_full, fill_budget=CV_FILL_BUDGET).F

    def _regularizer(self, graph, p, n):
        """``M = L^p`` as the f-systems take it. With ``solver="graph"`` the graph stays on
        the workers (:class:`~dask_ssl.solvers.sparse.WorkerRegularizer`, whose f-systems
        are GraphTransduction's preconditioned block CG), and so it does for ``"decoupled"``
        with ``p > 1`` beyond ``DENSE_MAX_ROWS`` rows; beyond them otherwise ``L`` and its
        power applied as products on the driver, never formed or factored (with ``p = 1``
        the decoupled method keeps a sparse LU of ``M``); ``L^p`` as a sparse matrix up to
        them."""
        big = n > solve.DENSE_MAX_ROWS
        # the decoupled system (g L^p + I_L) has no nu I to bound its condition number: plain
        # CG on the driver did not reach 1e-6 in 2000 passes on KDD99 (10 000 rows, L^5)
        if self.solver == "graph" or (big and p > 1 and self.method == "decoupled"):
            return solve.WorkerRegularizer(graph, normalized=self.normalized, p=p)
        if big and self.method != "decoupled":
            # L^p of a kNN graph fills in (dense from p = 3 on text), and so does a sparse LU
            # of L itself on a small-world graph: M is applied, never formed or factored.
            return LaplacianPower(laplacian_matrix(graph.to_scipy(), normalized=self.normalized,
                                                   sparse=True), p)
        return regularizer_matrix(graph, normalized=self.normalized, p=p, sparse=True)

    def _resolve_basis(self, problem, Ybar, labeled, unit, gamma_I=None) -> list:
        """With ``basis="auto"``: set ``problem``'s basis kind and size to the candidate
        :func:`~._basis_selection.choose_basis` keeps, the basis regrown in every fold at the
        pilot setting (the given ``gamma_A`` and ``gamma_I``, else
        :data:`~._sparse_selection.PILOT_GAMMA_A` and the seeds' ``gamma_I``; ``gamma_I``,
        where it is already chosen); returns ``basis_selection_``. The decoupled method with
        a graph term: the greedy basis, unchecked. With fewer than 5 labeled rows in a
        class: the greedy basis, with a warning. Any other ``basis``: as given, nothing
        selected."""
        if problem["kind"] != "auto":
            return []
        problem["kind"] = "greedy"
        if gamma_I is None:
            gamma_I = SEED_GAMMA_I if self.gamma_I == "auto" else float(self.gamma_I)
        if self.method == "decoupled" and gamma_I > 0:
            # its basis fits the transduction's scores on every row, where the labeled rows
            # are a few among many: no label for the check to catch it over-fitting
            return []
        if not enough_labels(truth_of(Ybar[labeled])):
            warnings.warn(f"SparseLapRLS: fewer than {MIN_PER_CLASS} labeled rows in a class, "
                          "too few to check the greedy basis against its prefixes and a random "
                          "basis on them; the greedy basis is used unchecked", SelectionWarning,
                          stacklevel=4)
            return []
        gamma_A = PILOT_GAMMA_A if self.gamma_A == "auto" else float(self.gamma_A)
        weight = gamma_I * unit
        if weight == 0 and labeled.sum() <= problem["d"]:
            return []   # the labeled rows are the basis (see _solve): nothing to check

        def grow(kind, train):
            problem["kind"] = kind
            # a fold may hold no more labels than d where every label does
            return self._solve(problem, weight, Ybar * train[:, None], train,
                               gamma_A=gamma_A, grow_only=True, greedy_only=True)["fit"]

        with selecting():
            (kind, size), selection = choose_basis(grow, labeled, Ybar, problem["d"])
        problem["kind"], problem["d"] = kind, size
        return selection

    def _gamma_I(self, problem, Ybar, labeled, unit, held_out=None):
        """``(gamma_I, selection_)`` of ``method="decoupled"`` / ``"sigmoid"``: the given
        value, or with ``"auto"`` the choice among :data:`AUTO_GAMMA_I` (0, the supervised
        model, first) by :data:`CV_FOLDS`-fold cross-validation on the labeled rows and the
        rule of :mod:`._selection`; with fewer than 5 labeled rows in a class the seeds' 1e4,
        with a warning. The decoupled method's candidates are scored by what the sparse fit
        then follows: graph transduction's held-out outputs (``held_out``, per ``gamma_I``,
        from the graph's choice) and, for 0, kernel RLS on the fold's labels
        (:func:`~._sparse_graph.held_out_rls`, the supervised fit on a basis holding the
        labeled rows). The sigmoid method's are refitted whole in every fold, basis
        included; a fold's held-out rows stay in the graph, unlabeled."""
        if self.gamma_I != "auto":
            return float(self.gamma_I), []
        L = np.flatnonzero(labeled)
        YL = Ybar[L]
        truth = truth_of(YL)
        if not enough_labels(truth):
            warn_unchecked(self, "gamma_I")
            return SEED_GAMMA_I, []
        fold = fold_of(truth, min(CV_FOLDS, L.size))
        if held_out is not None:
            with selecting():
                outputs = [held_out_rls(problem["columns"](L)[L], YL, fold,
                                        float(self.gamma_A))]
            outputs += [held_out[g] for g in AUTO_GAMMA_I[1:]]
        else:
            outputs = []
            with selecting():
                for gamma in AUTO_GAMMA_I:
                    out = np.empty_like(YL)
                    for f in range(int(fold.max()) + 1):
                        train = labeled.copy()
                        train[L[fold == f]] = False
                        fit = self._solve(problem, gamma * unit, Ybar * train[:, None], train)
                        out[fold == f] = fit["fit"].KNJ[L[fold == f]] @ fit["beta"]
                    outputs.append(out)
        wrong = np.array([truth_of(out) != truth for out in outputs])
        squared = np.array([np.sum((YL - out) ** 2, axis=1) for out in outputs])
        best = choose(wrong, squared, supervised=0)
        rows = [{"gamma_I": g} for g in AUTO_GAMMA_I]
        selection = [{**row, "criterion": "cv"} for row in table(rows, wrong, squared, best)]
        return AUTO_GAMMA_I[best], selection

    def _select_on_basis(self, problem, Ybar, labeled, unit):
        """``(gamma_A, gamma_I, selection_, fit)`` of ``method="laprls"`` or ``"slack"`` with
        an ``"auto"`` setting: the basis grown (or drawn, or read off the l1 path) once at the
        pilot setting (the given values, else :data:`~._sparse_selection.PILOT_GAMMA_A` and
        the seeds' ``gamma_I``), the candidates scored on it by exact leave-one-out
        (:mod:`._sparse_selection`), and the coefficients on it refitted at the chosen
        setting; with fewer than 5 labeled rows in a class the pilot fit, with a warning."""
        auto_A, auto_I = self.gamma_A == "auto", self.gamma_I == "auto"
        pilot_A = PILOT_GAMMA_A if auto_A else float(self.gamma_A)
        pilot_I = SEED_GAMMA_I if auto_I else float(self.gamma_I)
        if not enough_labels(truth_of(Ybar[labeled])):
            warn_unchecked(self, " and ".join(name for name, auto in
                                             (("gamma_A", auto_A), ("gamma_I", auto_I)) if auto))
            return pilot_A, pilot_I, [], self._solve(problem, pilot_I * unit, Ybar, labeled,
                                                     gamma_A=pilot_A)
        pilot = self._solve(problem, pilot_I * unit, Ybar, labeled, gamma_A=pilot_A,
                            grow_only=True)
        fit, slack = pilot["fit"], None
        if self.method == "slack":
            def fsystem(g):
                # the pilot's f-system (its factor, on the direct path) serves its own g
                if pilot["fsys"] is not None and np.isclose(g, pilot["fsys"].g, rtol=1e-12):
                    return pilot["fsys"]
                return self._fsystem(problem, labeled + float(self.nu), g)
            slack = (float(self.nu), fsystem)
        with selecting():
            gamma_A, gamma_I, selection = select_on_basis(
                fit.KNJ, fit.basis, problem["M"], labeled, Ybar, unit,
                AUTO_GAMMA_A if auto_A else (pilot_A,), AUTO_GAMMA_I if auto_I else (pilot_I,),
                slack=slack)
        out = self._solve(problem, gamma_I * unit, Ybar, labeled, gamma_A=gamma_A, fixed=fit)
        out["gamma_S"] = pilot["gamma_S"]
        return gamma_A, gamma_I, selection, out

    def _fsystem(self, problem, fidelity, g):
        """The solver of ``(g M + diag(fidelity)) F = B`` for ``solver``."""
        return solve.FSystem(problem["M"], fidelity, g,
                             graph=(problem["graph"] if isinstance(problem["M"],
                                                                   solve.WorkerRegularizer)
                                    else None),
                             normalized=self.normalized, p=problem["p"], tol=self.tol)

    def _solve(self, problem, weight, Ybar, labeled, gamma_A=None, *, fixed=None,
               grow_only=False, greedy_only=False) -> dict:
        """The fit at ``gamma_I_eff = weight`` on the labels ``Ybar`` / ``labeled``: the basis
        (chosen, drawn or given; ``fixed``, a :class:`~dask_ssl.solvers.sparse.BasisFit`,
        keeps its basis and kernel columns) and its coefficients, ``F`` (slack's f or the
        transduction scores), the objective per column (thesis units), history and
        alternations. ``grow_only`` stops once the basis is found (the result then also
        holds the slack method's f-system, ``fsys``). With ``weight = 0`` the decoupled
        method has no graph to propagate on: it is then the restricted (supervised) fit, as
        every method is at ``gamma_I = 0``. With ``weight = 0`` a greedy basis of at least
        ``l`` functions is the labeled rows: every method's objective then sees the outputs on
        the labeled rows only, so (representer theorem) its minimizer over all ``n`` functions
        lies in their span, and the fit on them is the full model's; ``greedy_only`` grows
        the greedy basis there too (the basis check compares its prefixes)."""
        M, columns = problem["M"], problem["columns"]
        l = int(labeled.sum())
        gamma_A = float(self.gamma_A if gamma_A is None else gamma_A)
        a, g, nu = l * gamma_A, l * weight, float(self.nu)
        rng = check_random_state(self.random_state)
        method = "laprls" if self.method == "decoupled" and weight == 0 else self.method
        fsys, F = None, None
        if method in ("laprls", "sigmoid"):
            quad = solve.laprls_quadratic(M, labeled, Ybar, a, g)
        elif method == "slack":
            fsys = self._fsystem(problem, labeled + nu, g)
            quad = solve.slack_quadratic(fsys, Ybar, a, nu, M, labeled)
        else:
            # graph transduction, rows of a component without labels held at 0 (as
            # GraphTransduction does), then the supervised fit to its scores
            fidelity = transduction_fidelity(labeled, problem["diag"])
            F = self._fsystem(problem, fidelity, g).solve(Ybar)
            quad = solve.regression_quadratic(F, a, nu)
        gamma_S, given, d, kind = None, problem["given"], problem["d"], problem["kind"]
        if kind == "greedy" and weight == 0 and l <= d and not greedy_only:
            kind = "labeled"
        if fixed is not None:
            fit = solve.fit_on_basis(quad, lambda idx: fixed.KNJ, fixed.basis)
            fit.history = fixed.history
        elif kind == "greedy":
            state = None
            if problem["blocks"] is not None:
                state = BlockState(problem["blocks"], self.kernel, problem["kernel_params"],
                                   quad.r, d)
            try:
                fit = solve.greedy_basis(quad, columns, d, int(self.kappa), rng, state=state)
            finally:
                if state is not None:
                    state.close()
        else:
            if given is not None:
                J = given
            elif kind == "labeled":
                J = np.flatnonzero(labeled)
            elif kind == "random":
                J = np.sort(rng.choice(problem["n"], d, replace=False))
            else:
                J, gamma_S = solve.l1_basis(quad, columns, d,
                                            "lasso" if kind == "lasso" else "lar")
            fit = solve.fit_on_basis(quad, columns, J)
        if grow_only:
            return dict(fit=fit, fsys=fsys, gamma_S=gamma_S)
        # one exact solve on the final basis, unless the alternation runs
        beta, history, n_iter, objective = fit.beta, fit.history, 1, fit.objective
        if method == "slack":
            KJJ = fit.KNJ[fit.basis]
            if self.solver == "graph":
                res = solve.slack_alternate(fsys, M, labeled, Ybar, a, g, nu, fit.KNJ, KJJ,
                                            beta, tol=self.tol, max_iter=self.max_iter)
                beta, F, history, n_iter = res.beta, res.f, res.history, res.n_iter
                objective = [solve.slack_objective(M, labeled, Ybar[:, [c]], a, g, nu, fit.KNJ,
                                                   KJJ, beta[:, [c]], F[:, [c]])
                             for c in range(beta.shape[1])]
            else:
                # f of the exact minimizer: the f-step at the final beta
                F = fsys.solve(Ybar + nu * (fit.KNJ @ beta))
        elif method == "sigmoid":
            res = solve.sigmoid_fit(M, labeled, Ybar, a, g, float(self.rho), fit.KNJ,
                                    fit.KNJ[fit.basis], tol=self.tol, max_iter=self.max_iter)
            beta, objective, n_iter = res.beta, res.objective, int(res.n_iter.max())
        return dict(fit=fit, beta=beta, F=F, history=history, n_iter=n_iter,
                    objective=objective, gamma_S=gamma_S)

    # prediction --------------------------------------------------------------------------
    def decision_function(self, X):
        """``f(x) = sum_{j in J} beta_j K(x_j, x)`` per class column (``n_basis_`` kernel
        evaluations a row): shape (m,) for two classes (positive ``classes_[1]``),
        (m, n_classes) otherwise."""
        check_is_fitted(self, "dual_coef_")
        return expansion_scores(self, X, self.basis_points_)

    # persistence (see artifact.py) --------------------------------------------------------
    def _fitted_info(self) -> dict:
        return {**expansion_info(self), "n_basis_": int(self.n_basis_),
                "gamma_S_": self.gamma_S_, "gamma_A_": float(self.gamma_A_),
                "basis_selection_": self.basis_selection_,
                "graph_selection_": self.graph_selection_}

    def _fitted_arrays(self) -> dict:
        self._fitted_info()  # refuses a callable kernel before anything is written
        return {"dual_coef": self.dual_coef_, "intercept": self.intercept_,
                "classes": self.classes_, "basis": self.basis_,
                **pack_matrix("points", self.basis_points_)}

    def _restore(self, arrays: dict, doc: dict) -> None:
        self.basis_points_ = unpack_matrix("points", arrays)
        self.basis_ = arrays["basis"]
        self.dual_coef_ = arrays["dual_coef"]
        self.intercept_ = arrays["intercept"]
        self.classes_ = arrays["classes"]
        restore_expansion_info(self, doc)
        self.n_basis_ = doc["n_basis_"]
        self.gamma_I_ = doc["gamma_I_"]
        # models stored before gamma_A was selected used the given gamma_A
        self.gamma_A_ = doc.get("gamma_A_", self.gamma_A)
        self.gamma_S_ = doc["gamma_S_"]
        # models stored before basis="auto" existed chose no basis on the labels
        self.basis_selection_ = doc.get("basis_selection_", [])
        # models stored before the graph was chosen fitted the one given
        self.graph_selection_ = doc.get("graph_selection_", [])
        self.graph_scores_ = None
