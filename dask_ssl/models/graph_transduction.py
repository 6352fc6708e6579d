"""Graph transduction (Sindhwani's thesis, ch. 5): smooth label scores over a kNN graph.

Solves ``(gamma_I M + I_L + mu I_U) F = Ybar + mu S_U`` for all classes at once with block CG on
the workers, ``M = L^p`` the (normalized) graph Laplacian, ``Ybar`` the one-hot labels on labeled
rows and 0 elsewhere, ``S`` a supervised prior (RLS fitted on the labeled rows, its scores on
the 0/1 scale of ``Ybar``; :mod:`._transduction_selection`) or 0. Without a prior and with
``mu = 0`` this is the thesis' graph transduction (the f-step of the slack method with nu = 0,
and the first half of the fully decoupled method); without a prior, with ``mu = 1``, ``M`` the
normalized Laplacian and ``gamma_I = alpha / (1 - alpha)`` it is the fixed point of
scikit-learn's ``LabelSpreading(alpha)`` on the same graph, times ``1 / (1 - alpha)``. With a
prior, ``gamma_I = 0`` gives the unlabeled rows the supervised model's labels, and the default
chooses ``gamma_I``, ``mu`` and ``class_balance`` on the labeled rows, keeping the supervised
model unless a graph setting errs less by more than the noise of the estimate.

Rows of a connected component without any labeled row have ``Ybar = 0``: without a prior their
scores are 0 for every ``mu > 0``, and for ``mu = 0`` the system is singular there (any
multiple of the component's null vector solves it) and 0 is its minimum-norm solution. Such
rows get fidelity 1 instead of ``mu``, which leaves every other row's scores unchanged (no edge
leaves a component), makes the system nonsingular and keeps a warm start from carrying old
values there: their scores are 0, their ``label_distributions_`` rows zero; with a prior they
are the prior smoothed over their component.

With few labels the largest score per row can pick one class almost everywhere. On a graph
close to an expander (a text kNN graph) a walk from an unlabeled row mixes before it meets a
label, so every row's scores are nearly the same mixture: on RCV1-like text (100 k rows, 100
labels) the share ``F_i1 / (F_i0 + F_i1)`` lies between 0.438 and 0.463 on 90% of the rows, the
class signal is in those small differences, and the largest score errs on 47% of them.
``class_balance`` decides by ``w_c F_ic`` with class weights ``w`` chosen so that the unlabeled
rows go to the classes in given shares (by default the labeled rows' shares): the class balance
constraint of the thesis' S3VMs (``r``, Eq 3.2) in transductive form, a ranking of the rows by
their score shares cut at the class shares. On that data it errs on 2.1%. Zhu, Ghahramani and
Lafferty's class mass normalization (``w_c = q_c / sum_U F_ic``) is not used: there it still
errs on 47%, because a few percent of error in its weights moves the cut across the whole
narrow band.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from ..cluster import get_client
from ..graph.diagnostics import graph_diagnostics, warn_graph
from ..graph.knn import DriverIndex, DriverRows, driver_search
from ..graph.laplacian import LaplacianOperator
from ..graph.weights import LOCAL, Graph, check_graph_params
from ..linalg import RowBlocks
from ..linalg.recovery import solve_with_restarts
from ..solvers.graph import solve_graph_system
from . import _transduction_selection as auto
from ._clone import SharesClient
from .base import OneVsRestLabels
from ._constraints import AUTO, NON_NEGATIVE, SHARED, constraints, validate
from ._graph_seam import clip_n_neighbors, estimator_graph, graph_term_weight_on
from ._input import check_finite_local, fit_input, gather_rows, to_blocks
from ._selection import enough_labels, warn_unchecked
from ._selection_cost import measured_fit, selecting
from ._transduction_serving import (Placement, place, place_block, restore, stored_arrays,
                                   stored_info)
from .rls import RLS


class GraphTransduction(SharesClient, OneVsRestLabels, ClassifierMixin, BaseEstimator):
    """Graph transduction with block CG on a distributed kNN graph, on a supervised prior.

    Solves ``(gamma_I M + I_L + mu I_U) F = Ybar + mu S_U``: ``S`` is the prior, RLS fitted on
    the labeled rows (its scores on the 0/1 scale of ``Ybar``; ``prior=None``: ``S = 0``, the
    thesis method). ``gamma_I = 0`` gives the unlabeled rows RLS's labels; a larger weight
    lets the graph carry the labels further. By default ``gamma_I``, ``class_balance``,
    ``metric`` and ``weights`` are ``"auto"``: the graph settings by the data, the others by
    cross-validation on the labeled rows, where a graph candidate replaces the supervised one
    only when it errs less by more than one standard error (:mod:`._transduction_selection`).

    Parameters
    ----------
    gamma_I : float or "auto", default "auto"
        Weight of the graph term, as in every graph estimator: the thesis' (ch. 2)
        ``(1/l) sum_l (y_i - f_i)^2 + gamma_I_eff f^T M f`` (plus ``(mu/l) sum_u (f_i -
        s_i)^2``), ``gamma_I_eff`` by ``graph_normalization`` (``gamma_I / (u + l)^2`` by
        default); the system above is that objective times ``l/2``, so its weight is ``l
        gamma_I_eff`` (ch. 5 writes the system's weight as gamma_I). 0 (with a prior): the
        supervised model. ``"auto"``: the system's weight chosen among
        :data:`~._transduction_selection.AUTO_GAMMA_I` (0 included) on the labeled rows; with
        fewer than 5 labeled rows in a class, or without a prior, the system's weight is the
        seeds' 1.0. ``gamma_I_`` is the value used, in this parameter's units.
    graph_normalization : {"n2", "edges", "none"}, default "n2"
        ``gamma_I_eff = gamma_I / (u + l)^2``, ``gamma_I / sum W_ij`` or ``gamma_I``, as in
        :class:`~dask_ssl.models.LapRLS`.
    prior : {"auto", "rls"} or None, default "auto"
        The unlabeled rows' targets ``S_U``: ``"rls"``, the one-vs-rest scores of
        :class:`~dask_ssl.models.RLS` (default parameters) fitted on the labeled rows, mapped
        to 0/1 class scores (``(1 + o) / 2``); None, 0 (the thesis method). ``"auto"``:
        ``"rls"`` when every class has at least 5 labeled rows and ``unlabeled_weight`` is not
        0, else None.
    n_neighbors : int, default 10
        k of the kNN graph (the seeds' ``nn``); at most n - 1 on n rows (with a warning).
    metric : {"auto", "euclidean", "cosine"}, default "auto"
        ``"auto"``: ``"cosine"`` for sparse rows with no negative entry (term counts, tf-idf),
        else ``"euclidean"`` (or ``"cosine"`` when ``weights="cosine"``).
    weights : {"auto", "heat", "binary", "cosine"}, default "auto"
        Edge weights: heat kernel ``exp(-d^2/4t)``, 1, or cosine similarity. ``"auto"``:
        ``"cosine"`` with the cosine metric, else ``"heat"``.
    t : float or "local", optional
        Heat-kernel width t; default ``mean(edge length^2) / 4``. ``"local"``: a width per row
        from its k-th neighbour's distance, ``exp(-d_ij^2 / (s_i s_j))`` (local scaling;
        :mod:`dask_ssl.graph.weights`). Not selected: every candidate shares one graph.
    symmetrize : {"max", "mean", "mutual"}, default "max"
    normalized : bool, default True
        Use ``D^-1/2 L D^-1/2`` (the seeds' experiments) instead of ``L = D - W``.
    p : int, default 1
        Power of the Laplacian: ``M = L^p``.
    partition : {"metis", None}, default "metis"
        How block CG splits the graph's rows among the workers: ``"metis"`` re-splits them by a
        minimum edge cut (:mod:`dask_ssl.graph.partition`), so that a pass moves few halo rows;
        None keeps the data's blocks. Both solve the same system (in another summation order,
        so the two agree to the CG tolerance, not bit for bit).
    unlabeled_weight : float or "auto", default "auto"
        mu, the pull of unlabeled scores towards the prior (towards 0 without one): 1 weighs
        a prior score as a label, 0 drops the prior (the thesis method); with ``prior=None``,
        1 reproduces LabelSpreading's fixed point. ``"auto"``: chosen with ``gamma_I`` among
        :data:`~._transduction_selection.AUTO_MU`; where nothing is chosen, 1 with a prior and
        0 without. Components without a labeled row use 1 (see the module docstring).
    class_balance : "auto", None, "labeled" or array-like of shape (n_classes,), default "auto"
        None: each row's class is its largest score (the thesis method). ``"labeled"``: the
        unlabeled rows are shared among the classes as the labeled rows are; an array: in
        these shares (``classes_`` order, positive, summing to 1; the S3VMs' ``pos_fraction``
        for two classes). Decisions are then by ``class_weights_ * F`` (see the module
        docstring): ``transduction_``, ``label_distributions_`` and everything predicted.
        ``"auto"``: None or ``"labeled"``, chosen with ``gamma_I`` (the supervised candidate
        keeps None: it predicts as the prior does); None where nothing is chosen.
    preconditioner : {"block", None}, default "block"
        ``"block"``: block-Jacobi preconditioned CG, each worker's rows of the system factored
        where they lie (:mod:`dask_ssl.graph.precond`); with METIS blocks that no edge crosses
        it solves the system in one pass. A factorization costs about as much as thousands of
        plain passes of one column, so it is made only for the columns plain CG leaves
        unconverged after a bounded number of passes (:mod:`dask_ssl.solvers.graph`). None:
        plain CG.
    tol : float, default 1e-6
        Relative residual at which each class column of block CG stops.
    max_iter : int, default 2000
        Block-CG passes.
    search_epsilon : float, default 0.1
        Recall knob of the approximate kNN search (see :func:`dask_ssl.graph.knn.build_knn`).
    unlabeled : scalar, default -1
        Marker of unlabeled rows in ``y``.
    client : distributed.Client, optional
    n_blocks : int, optional
        Row blocks for in-memory X (default one per worker thread).
    random_state : int or None
        Seeds the kNN indexes and the unlabeled rows the selection samples (``selection_rows_``).

    Attributes
    ----------
    classes_ : ndarray
    scores_ : ndarray of shape (n, n_classes)
        F, the solution of the system, per training row and class.
    gamma_I_, unlabeled_weight_, class_balance_, metric_, weights_, prior_kind_
        The settings fitted (``"auto"`` resolved).
    gamma_I_effective_ : float
        ``gamma_I_eff``, the coefficient of ``f^T M f`` in the thesis' objective; the system's
        weight is ``n_labeled_`` times it.
    n_labeled_ : int
    prior_ : RLS or None
        The prior, fitted on the labeled rows.
    selection_ : list of dict or None
        Per candidate its ``gamma_I``, ``unlabeled_weight``, ``class_balance``, held-out
        errors and whether it was chosen (:func:`._selection.table`); None when nothing was
        selected.
    selection_rows_ : int or None
        Rows of the graph the candidates were scored on: every row, or above
        :data:`~._transduction_selection.SELECTION_ROWS` rows (without a given graph) that many,
        every labeled row and unlabeled rows drawn by ``random_state`` (a graph candidate
        chosen there then meets the supervised one again on the full graph: the table's rows
        say which graph scored them, ``graph_rows``); None when nothing was selected.
    selection_cost_ : dict or None
        What the selection cost beside the fit at the chosen setting: the ``seconds`` and
        ``round_trips`` to the workers spent choosing, and ``fit_seconds`` and
        ``fit_round_trips`` of the rest of the fit (:mod:`dask_ssl.models._selection_cost`);
        None when nothing was selected (the fits of the fold priors' RLS count in the fit).
        Stored in ``model.json``.
    class_weights_ : ndarray of shape (n_classes,)
        The weight of each class's scores in every decision, largest 1: with ``class_balance``
        the weights that give the unlabeled rows those shares, else ones.
    label_distributions_ : ndarray of shape (n, n_classes)
        The weighted F normalized to sum 1 per row (rows of zeros stay zero).
    transduction_ : ndarray of shape (n,)
        Class of each training row: its largest weighted score.
    n_neighbors_ : int
        The k used: ``n_neighbors``, or n - 1 on fewer rows.
    n_iter_ : int
        Block-CG passes of the final system until the last class converged (0 at
        ``gamma_I_ = 0``, where the system is diagonal).
    history_ : list of ndarray
        Relative residual per class after each pass.
    objective_ : float
        The solved system's quadratic ``1/2 F'(gamma_I M + diag a) F - F'B + 1/2 sum B^2/a``
        at ``scores_`` (0 at ``gamma_I_ = 0``): the thesis' objective times ``l/2`` without a
        prior.
    fit_seconds_ : float
    data_shape_ : tuple of int
    graph_ : Graph
        Held on the workers of the fit's client, with the kNN indexes that place new rows. A
        pickle leaves it out and carries the training rows and the indexes instead (gathered
        when pickling, :class:`~dask_ssl.graph.knn.DriverIndex`): the unpickled model searches
        them in its own process as the workers did, so it finds the same neighbours (below
        5000 rows, ``build_knn``'s ``exact_below``, there is no index and both search the rows
        exactly). A model directory (``save_model``) keeps the same rows and indexes, the
        scores and the prior, and reports their bytes in ``model.json``'s ``stored_bytes``;
        the loaded model scores row blocks on their workers. A directory written before it
        kept the indexes searches its rows exactly.
    diagnostics_ : GraphDiagnostics
    """

    def __init__(self, *, gamma_I="auto", prior="auto", n_neighbors=10, metric="auto",
                 weights="auto", t=None, symmetrize="max", normalized=True, p=1,
                 graph_normalization="n2", partition="metis", unlabeled_weight="auto",
                 class_balance="auto",
                 preconditioner="block", tol=1e-6, max_iter=2000,
                 search_epsilon=0.1, unlabeled=-1, client=None, n_blocks=None,
                 random_state=None):
        self.gamma_I = gamma_I
        self.prior = prior
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.weights = weights
        self.t = t
        self.symmetrize = symmetrize
        self.normalized = normalized
        self.p = p
        self.graph_normalization = graph_normalization
        self.partition = partition
        self.unlabeled_weight = unlabeled_weight
        self.class_balance = class_balance
        self.preconditioner = preconditioner
        self.tol = tol
        self.max_iter = max_iter
        self.search_epsilon = search_epsilon
        self.unlabeled = unlabeled
        self.client = client
        self.n_blocks = n_blocks
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    _parameter_constraints = constraints(
        __init__, unlabeled_weight=[NON_NEGATIVE, AUTO],
        metric=[SHARED["metric"][0], AUTO], weights=[SHARED["weights"][0], AUTO],
        class_balance=[*SHARED["class_balance"], AUTO])

    def _check_params(self):
        """Every hyperparameter against its declared constraint, then the settings that do
        not fit together. Runs first in ``fit``, before any work."""
        validate(self)
        if self.prior == "rls" and self.unlabeled_weight == 0:
            raise ValueError("prior='rls' needs unlabeled_weight > 0 (the prior's weight)")
        if self.gamma_I == 0 and (self.prior is None or self.unlabeled_weight == 0):
            raise ValueError("gamma_I=0 needs a prior held with unlabeled_weight > 0: "
                             "without one the unlabeled rows' system is singular")
        metric = "cosine" if self.metric == "auto" and self.weights == "cosine" else self.metric
        if metric != "auto" and self.weights != "auto":
            check_graph_params(self.weights, self.symmetrize, self.t, metric)
        else:
            check_graph_params("binary", self.symmetrize, self.t, "euclidean")

    def _graph_settings(self, X):
        """``(metric, weights)`` with ``"auto"`` resolved by the data (class docstring)."""
        metric = self.metric
        if metric == "auto":
            metric = "cosine" if self.weights == "cosine" else auto.graph_metric(X)
        weights = self.weights
        if weights == "auto":
            weights = "cosine" if metric == "cosine" else "heat"
        check_graph_params(weights, self.symmetrize, self.t, metric)
        return metric, weights

    @measured_fit
    def fit(self, X, y=None, *, graph: Graph | None = None, scores_init=None):
        """Build the graph (unless given), select the ``"auto"`` settings and solve for all
        classes.

        Parameters
        ----------
        X : array, sparse matrix, dask array or RowBlocks, shape (n, d)
        y : array of shape (n,), optional
            Classes, ``unlabeled`` on unlabeled rows; from the blocks' labels when omitted.
        graph : Graph, optional
            A graph built earlier on these rows (e.g. :func:`dask_ssl.graph.io.load_graph`),
            reused instead of a new kNN search (``metric`` and ``weights`` are then the
            graph's).
        scores_init : ndarray of shape (n, n_classes), optional
            Seed for block CG (e.g. last night's ``scores_``).
        """
        t0 = time.perf_counter()
        self._check_params()
        X, labels = fit_input(self, X, y, graph=graph)
        classes, codes = labels.classes, labels.codes
        n_rows = codes.size
        k = clip_n_neighbors(self.n_neighbors, n_rows)
        if scores_init is not None and np.shape(scores_init) != (n_rows, classes.size):
            raise ValueError(f"scores_init must have shape {(n_rows, classes.size)}, "
                             f"got {np.shape(scores_init)}")
        labeled = codes >= 0
        if not _is_auto(self.class_balance):
            _class_shares(self.class_balance, codes[labeled], classes.size)
        # the metric's look at the data is a pass over the blocks: a lost worker repeats it
        (metric, weights), looked = (
            ((getattr(graph.neighbors, "metric", "given"), graph.weights), 0)
            if graph is not None else
            solve_with_restarts(lambda: self._graph_settings(X), what=type(self).__name__))
        enough = enough_labels(codes[labeled])
        prior = self.prior
        if prior == "auto":
            prior = "rls" if enough and self.unlabeled_weight != 0 else None
        if self.gamma_I == 0 and prior is None:
            raise ValueError("gamma_I=0 needs a prior (prior='auto' takes none with fewer "
                             "than 5 labeled rows in a class): without one the unlabeled "
                             "rows' system is singular")
        choosing = [name for name in ("gamma_I", "unlabeled_weight", "class_balance")
                    if _is_auto(getattr(self, name))]
        if choosing and not enough:
            warn_unchecked(self, " and ".join(choosing))
        client = get_client(self.client)
        setting = _Setting(metric, weights, prior, select=bool(choosing) and enough
                           and prior is not None)
        (graph, diag, F, result, chosen, selection, selection_rows, prior_model, unit,
         objective), restarts = \
            solve_with_restarts(lambda: self._solve(X, client, graph, k, codes, classes.size,
                                                    scores_init, setting),
                                what=type(self).__name__)
        self.restarts_ = looked + restarts
        if result is not None and not result.converged.all():
            warnings.warn(f"block CG stopped after {self.max_iter} passes with relative "
                          f"residuals {np.round(result.residual, 8).tolist()} > tol={self.tol}",
                          ConvergenceWarning, stacklevel=2)
        self.classes_ = classes
        self.n_features_in_ = int(X.shape[1])
        # the system's weight, l gamma_I_eff, back in gamma_I's units (see gamma_I)
        self.n_labeled_ = int(labeled.sum())
        self.objective_ = float(objective)
        self.data_shape_ = (n_rows, int(X.shape[1]))
        self.fit_seconds_ = time.perf_counter() - t0
        self.gamma_I_effective_ = chosen["gamma_I"] / self.n_labeled_
        self.gamma_I_ = chosen["gamma_I"] / unit
        for row in selection or []:
            row["gamma_I"] /= unit
        self.unlabeled_weight_ = chosen["unlabeled_weight"]
        self.class_balance_ = chosen["class_balance"]
        self.metric_, self.weights_ = metric, weights
        self.prior_kind_ = prior
        self.prior_ = prior_model
        self.selection_ = selection
        self.selection_rows_ = selection_rows
        self.scores_ = F
        shares = _class_shares(self.class_balance_, codes[labeled], classes.size)
        self.class_weights_ = (np.ones(classes.size) if shares is None
                               else balance_weights(F[~labeled], shares))
        weighted = F * self.class_weights_
        self.label_distributions_ = _normalize(weighted)
        self.transduction_ = classes[np.argmax(weighted, axis=1)]
        self.n_neighbors_ = k
        self.n_iter_ = 0 if result is None else int(result.n_iter.max())
        self.history_ = [] if result is None else result.history
        self.graph_ = graph
        # an unpickled model refitted: new rows are placed by the new graph
        self.__dict__.pop("_pickled_search", None)
        self.diagnostics_ = diag
        return self

    def _solve(self, X, client, graph, k, codes, n_classes, scores_init, setting):
        """Graph (unless given), priors, selection and the final block CG: ``(graph,
        diagnostics, F, result, chosen, selection, selection_rows, prior, unit, objective)``
        (``result`` None when the system is diagonal; ``chosen["gamma_I"]`` the system's
        weight, ``unit`` that of ``gamma_I = 1``; ``selection_rows`` the rows of the graph the
        candidates were scored on; ``objective`` the solved system's, see ``objective_``).
        Everything here is on the workers, so a lost worker repeats all of it."""
        # a given graph is the one to select on: its settings need not be the estimator's
        sample = (auto.selection_sample(codes, self.random_state)
                  if setting.select and graph is None else None)
        if graph is None:
            graph = self._graph(to_blocks(X, client, self.n_blocks), k, setting)
        diag = graph_diagnostics(graph)
        labeled = codes >= 0
        warn_graph(diag, labeled)
        fidelity = _fidelity(diag, labeled)

        with contextlib.ExitStack() as held:
            operators = {}

            def operator(on):
                # one operator a graph, open across its solves (the full graph's check of the
                # sample's pick and the fit): building one costs seconds on a large graph
                if id(on) not in operators:
                    op = LaplacianOperator(on, normalized=self.normalized, p=self.p,
                                           partition=self.partition)
                    held.callback(op.close)
                    # the graph is kept beside its operator, so that its id stays its own
                    operators[id(on)] = (on, op)
                return operators[id(on)][1]

            def solve(gamma, a, B, on=graph, **options):
                return solve_graph_system(on, a, B, gamma_I=gamma, op=operator(on),
                                          preconditioner=self.preconditioner,
                                          max_iter=self.max_iter,
                                          **{"tol": self.tol, **options})

            return self._select_and_solve(X, client, graph, diag, k, codes, n_classes,
                                          setting, sample, fidelity, scores_init, solve)

    def _select_and_solve(self, X, client, graph, diag, k, codes, n_classes, setting, sample,
                          fidelity, scores_init, solve):
        """:meth:`_solve` past the graph: priors, selection and the final block CG, every
        graph system through ``solve(gamma, a, B, on=graph, **options)``."""
        labeled = codes >= 0

        def cv_solve(on):
            # the selection's many-column solves on the graph ``on``: a looser tolerance and
            # a bounded preconditioner fill (module docstring of _transduction_selection)
            return lambda gamma, a, B, a_precond: solve(
                gamma, a, B, on=on, tol=auto.CV_TOL, a_precond=a_precond,
                fill_budget=auto.CV_FILL_BUDGET).F

        fold = auto.folds(codes) if setting.select else None
        trains = [labeled & (fold != f) for f in range(auto.CV_FOLDS)] if setting.select else []
        prior_model, S, fold_priors = None, np.zeros((codes.size, n_classes)), []
        if setting.prior is not None:
            rows = np.flatnonzero(labeled)
            Xl = auto.labeled_rows(X, rows)
            prior_model = RLS(client=self.client).fit(Xl, codes[rows])
            S, *fold_priors = auto.prior_scores(
                [prior_model.coef_with_bias().T]
                + [auto.fold_rls_weights(Xl[train[rows]], codes[rows][train[rows]],
                                         prior_model.gamma_A) for train in trains], X)
            # kept to score new rows, on any worker: without the fit's client
            prior_model.client = None

        # the thesis' (1/l) sum (y - f)^2 + gamma_I_eff f^T M f, times l/2: the system's graph
        # weight is l gamma_I_eff
        unit = int(labeled.sum()) * graph_term_weight_on(self, graph, 1.0)
        given = self.gamma_I if _is_auto(self.gamma_I) else self.gamma_I * unit
        chosen = {"gamma_I": given, "unlabeled_weight": self.unlabeled_weight,
                  "class_balance": self.class_balance}
        selection, selection_rows = None, None
        if setting.select:
            def balance(F, class_balance, train_codes):
                shares = _class_shares(class_balance, train_codes, n_classes)
                return np.ones(n_classes) if shares is None else balance_weights(F, shares)

            with selecting():
                on, scored = graph, slice(None)
                if sample is not None:
                    # the candidates on a graph over the sample (module docstring of
                    # _transduction_selection); the full graph solves the chosen one only
                    on, scored = self._graph(to_blocks(auto.labeled_rows(X, sample), client,
                                                       self.n_blocks), k, setting), sample
                    fidelity_on = _fidelity(graph_diagnostics(on), labeled[sample])
                else:
                    fidelity_on = fidelity
                chosen, selection = auto.select(
                    cv_solve(on), codes[scored], fidelity_on, fold[scored],
                    [prior[scored] for prior in fold_priors], balance,
                    gammas=_candidates(given, auto.AUTO_GAMMA_I),
                    mus=_candidates(self.unlabeled_weight, auto.AUTO_MU),
                    balances=_candidates(self.class_balance, (None, "labeled")))
                selection_rows = int(on.n_rows)
                if (sample is not None and chosen["gamma_I"] > 0
                        and selection[0]["gamma_I"] == 0):
                    chosen, selection = self._confirm(cv_solve(graph), chosen, selection,
                                                      codes, fidelity, fold, fold_priors,
                                                      balance, on.n_rows, graph.n_rows)
        # what is not selected: the seeds' weight, a prior weighed as a label, no balancing
        if _is_auto(chosen["gamma_I"]):
            chosen["gamma_I"] = auto.SEED_GAMMA_I
        if _is_auto(chosen["unlabeled_weight"]):
            chosen["unlabeled_weight"] = 1.0 if setting.prior is not None else 0.0
        if _is_auto(chosen["class_balance"]):
            chosen["class_balance"] = None

        if chosen["gamma_I"] == 0:
            # the diagonal system's solution, written as it is: the labels and the prior
            F = auto.targets(codes, labeled, np.ones(codes.size), S)
            return (graph, diag, F, None, chosen, selection, selection_rows, prior_model, unit,
                    0.0)
        a = fidelity(chosen["unlabeled_weight"])
        B = auto.targets(codes, labeled, a, S)
        sol = solve(chosen["gamma_I"], a, B, X0=scores_init)
        # the system's quadratic 1/2 F'(gamma_I M + diag a)F - F'B + 1/2 sum B^2/a at its
        # solution, where F'(gamma_I M + diag a)F = F'B: no Laplacian product needed
        held = a > 0
        objective = 0.5 * (np.sum(B[held] ** 2 / a[held, None]) - np.sum(sol.F * B))
        return (graph, diag, sol.F, sol.cg, chosen, selection, selection_rows, prior_model,
                unit, objective)

    @staticmethod
    def _confirm(solve, chosen, selection, codes, fidelity, fold, priors, balance,
                 sample_rows, rows):
        """``(chosen, selection)`` once the sample's pick ``chosen`` met the supervised
        candidate again on the full graph, the one the fit solves (``solve``: the selection's
        many-column solve on it): the same folds and rule,
        these two candidates only. The sample holds the labels far more densely than the full
        graph, so a graph term can win there and not on the full graph; the supervised model
        is replaced only where the graph the fit uses says so. The table holds the sample's
        rows (none chosen) and the confirmation's, each with the ``graph_rows`` it was scored
        on."""
        confirmed, check = auto.select(
            solve, codes, fidelity, fold, priors, balance,
            gammas=(0.0, chosen["gamma_I"]), mus=(chosen["unlabeled_weight"],),
            balances=(chosen["class_balance"],))
        if confirmed["gamma_I"] == 0:
            # the supervised candidate as the sample's table names it
            confirmed = {k: selection[0][k] for k in confirmed}
        table = ([{**r, "chosen": False, "graph_rows": int(sample_rows)} for r in selection]
                 + [{**r, "graph_rows": int(rows)} for r in check])
        return confirmed, table

    def _graph(self, blocks, k, setting) -> Graph:
        """The estimator's kNN graph on ``blocks``, ``metric`` and ``weights`` resolved."""
        return estimator_graph(self, blocks, k, metric=setting.metric, weights=setting.weights)

    def __getstate__(self):
        # graph_ is futures of the fit's client, which do not pickle. What placing new rows
        # reads from it travels as arrays instead: the training rows (gathered now) and the
        # edge weighting (see graph_ in the class docstring).
        state = dict(super().__getstate__())
        graph = state.pop("graph_", None)
        if graph is not None and graph.neighbors is not None:
            state["_pickled_search"] = self._driver_search()
        return state

    def _search(self):
        """``(neighbors, weights, t, widths)`` placing new rows: the fitted graph's, or after
        unpickling the arrays that stood in for it."""
        graph = self.__dict__.get("graph_")
        if graph is None:
            return self._pickled_search
        widths = graph.local_widths() if graph.t == LOCAL else None
        return graph.neighbors, graph.weights, graph.t, widths

    def _driver_search(self):
        """:meth:`_search` with the training rows and kNN indexes gathered to the driver
        (what a model directory keeps and a row block's worker searches), once per fit."""
        cached = self.__dict__.get("_pickled_search")
        if cached is not None:
            return cached
        search = self._search()
        if not isinstance(search[0], (DriverIndex, DriverRows)):
            search = (driver_search(search[0]), *search[1:])
            self.__dict__["_pickled_search"] = search
        return search

    def _placement(self, search) -> Placement:
        return Placement(search, self.scores_, self.class_weights_, self.prior_,
                         self.gamma_I_effective_ * self.n_labeled_, self.unlabeled_weight_,
                         self.n_neighbors_, self.search_epsilon)

    def _neighbor_scores(self, X):
        """Scores of new rows, times ``class_weights_``: each row's own equation of the
        system (:func:`._transduction_serving.place`). Row blocks are scored on their
        workers, each searching the gathered (or stored) kNN index; rows in memory on the
        driver, through the fit's kNN index while its workers hold it."""
        check_is_fitted(self, "scores_")
        if isinstance(X, RowBlocks):
            if X.shape[1] != self.n_features_in_:
                raise ValueError(f"X has {X.shape[1]} features; {type(self).__name__} is "
                                 f"expecting {self.n_features_in_}")
            if "graph_" in self.__dict__:
                # the fit's workers still hold its kNN index: a search there (rows sent from
                # the driver) spares gathering the index and sending it to every worker
                return place(self._placement(self._search()), gather_rows(X))
            [placement] = X.client.scatter([self._placement(self._driver_search())],
                                           broadcast=True, hash=False)
            return np.concatenate(X.map(place_block, placement))
        X = validate_data(self, X, reset=False, accept_sparse="csr", dtype=np.float64,
                          ensure_all_finite=False)
        check_finite_local(X)
        return place(self._placement(self._search()), X)

    def decision_function(self, X):
        """Out-of-sample scores: the class shares of :meth:`predict_proba`.

        A row's F grows and shrinks as a whole with how near it is to labeled rows and (with
        the normalized Laplacian) with its degree; its class shares keep the class mix alone,
        which is what ``class_balance`` cuts and what :meth:`predict_proba` reports, so the
        two rank rows alike.

        Returns shape (m,) for two classes (share of ``classes_[1]`` minus share of
        ``classes_[0]``, in [-1, 1]; its sign is :meth:`predict`'s wherever a class has a
        positive score, always with ``p=1``, where F >= 0) and (m, n_classes), the shares,
        otherwise.
        """
        P = self.predict_proba(X)
        return P[:, 1] - P[:, 0] if P.shape[1] == 2 else P

    def predict_proba(self, X):
        """Out-of-sample label distributions (kNN mean of F times ``class_weights_``,
        normalized per row)."""
        return _normalize(self._neighbor_scores(X))

    def predict(self, X):
        """Class of new rows: the largest kNN mean of F times ``class_weights_``."""
        scores = self._neighbor_scores(X)
        return self.classes_[np.argmax(scores, axis=1)]


    # persistence (see artifact.py) --------------------------------------------------------
    def _fitted_info(self) -> dict:
        return stored_info(self, self._driver_search())

    def _fitted_arrays(self) -> dict:
        return stored_arrays(self, self._driver_search())

    def _restore(self, arrays: dict, doc: dict) -> None:
        restore(self, arrays, doc)


@dataclass(frozen=True)
class _Setting:
    """What a fit resolved before its work: the graph's metric and weights, the prior and
    whether the ``"auto"`` settings are selected on the labels."""

    metric: str
    weights: str
    prior: str | None
    select: bool


def _fidelity(diag, labeled):
    """``mu -> a`` on a graph with components ``diag``: 1 on labeled rows and on components
    without one (module docstring), ``mu`` on the other unlabeled rows."""
    has_label = np.bincount(diag.labels, weights=labeled, minlength=diag.n_components) > 0
    free = ~has_label[diag.labels]

    def fidelity(mu):
        return np.where(labeled | free, 1.0, mu)
    return fidelity


def _is_auto(value) -> bool:
    return isinstance(value, str) and value == "auto"


def _candidates(value, grid) -> tuple:
    """The values a selection tries for a setting: ``grid`` for ``"auto"``, else the one
    given."""
    return tuple(grid) if _is_auto(value) else (value,)


def _class_shares(class_balance, labeled_codes, n_classes):
    """The shares ``class_balance`` asks for, checked (None: no balancing)."""
    if class_balance is None:
        return None
    if isinstance(class_balance, str):
        if class_balance != "labeled":
            raise ValueError(f"class_balance must be None, 'labeled' or an array of class "
                             f"shares, got {class_balance!r}")
        return np.bincount(labeled_codes, minlength=n_classes) / labeled_codes.size
    shares = np.asarray(class_balance, dtype=np.float64)
    if (shares.shape != (n_classes,) or not np.all(np.isfinite(shares))
            or np.any(shares <= 0) or abs(shares.sum() - 1.0) > 1e-6):
        raise ValueError(f"class_balance must hold {n_classes} positive class shares summing "
                         f"to 1 (one per class, in classes_ order), got {class_balance!r}")
    return shares


#: Rounds of :func:`balance_weights` over the classes (two classes need one).
BALANCE_ROUNDS = 20


def balance_weights(F, shares) -> np.ndarray:
    """Class weights ``w`` (largest 1) such that ``argmax_c w_c F_ic`` gives class ``c`` the share
    ``shares[c]`` of the rows of ``F`` (those with a positive score; the rest have no say).

    Class ``c`` wins row ``i`` when ``w_c`` exceeds ``t_i = max_{c' != c} w_c' F_ic' / F_ic``:
    with the other weights fixed, ``w_c`` is put between the ``k``-th and ``k+1``-th smallest
    ``t`` (their geometric mean), ``k`` the rows its share asks for. With two classes one class
    settles it; with more, the classes take turns for :data:`BALANCE_ROUNDS` rounds (a
    coordinate search: the shares come close, not exact).
    """
    F = np.clip(F, 0.0, None)
    F = F[F.sum(axis=1) > 0]
    n_rows, n_classes = F.shape
    w = np.ones(n_classes)
    if n_rows == 0:
        return w
    rounds = 1 if n_classes == 2 else BALANCE_ROUNDS
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(rounds):
            for c in range(n_classes - 1 if n_classes == 2 else n_classes):
                others = np.max(np.delete(F * w, c, axis=1), axis=1)
                t = np.sort(np.where(F[:, c] > 0, others / F[:, c], np.inf))
                k = int(round(shares[c] * n_rows))
                w[c] = _between(t[k - 1] if k > 0 else 0.0, t[k] if k < n_rows else np.inf)
    return w / w.max()


def _between(lo, hi) -> float:
    """A weight strictly between two sorted thresholds (their geometric mean; ends handled)."""
    if lo <= 0:
        return hi / 2.0 if 0 < hi < np.inf else 1.0
    if hi == np.inf:
        return 2.0 * lo if lo < np.inf else 1.0
    return float(np.sqrt(lo * hi))


def _normalize(F):
    F = np.clip(F, 0.0, None)
    total = F.sum(axis=1, keepdims=True)
    return F / np.where(total > 0, total, 1.0)
