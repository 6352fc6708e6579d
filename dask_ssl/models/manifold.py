"""Manifold regularization with kernels: LapRLS and LapSVM (thesis ch. 2, Eq 2.12, 2.19-2.21).

Both minimize, per class column (one-vs-rest, +1/-1 on labeled rows),

    (1/l) sum_{labeled} V(y_i, f_i) + gamma_A alpha^T K alpha + gamma_I_eff f^T M f,

``f = K alpha`` over all ``n = l + u`` training rows (the expansion points), ``M = L^p`` the
(normalized) Laplacian of a kNN graph on those rows, ``gamma_I_eff`` the graph weight after the
normalization (:func:`~dask_ssl.kernels.deformed.graph_term_weight`, by default
``gamma_I / (u + l)^2`` as in the thesis). ``V`` is the squared loss (LapRLS, no bias, Eq 2.10),
the hinge (LapSVM, unregularized bias from the KKT conditions, Eq 2.13-2.21) or the squared
hinge (LapSVM ``loss="squared_hinge"``, with a bias and ``f = K alpha + b`` also in the graph
term, as in Melacci and Belkin's primal LapSVM). Prediction on any row is
``f(x) = sum_i alpha_i K(x_i, x) [+ b]``.

Solvers: ``"direct"`` gathers the rows and the graph on the driver and solves dense
(:mod:`dask_ssl.solvers.dense`, ``O(n^3)``; one LU factorization for every class column of
LapRLS and of the LapSVM dual);
``"primal"`` is the distributed solver of :mod:`dask_ssl.solvers.primal` (kernel row blocks on
the workers, early stopping) for the same objective. With ``n_components=m`` neither: the rows
are mapped to m Nystrom features on the workers and the linear estimators solve the same
objective there (:mod:`._nystrom_manifold`); the model is an expansion over the m landmarks.

Where the RBF width is not given, every solver chooses it on the labeled rows together with
``gamma_I`` and the graph (:func:`._rbf_width.width_candidates`; the direct solver first among
the supervised candidates, then the graph candidates at that width); the graphs do not depend
on it (their heat weights have their own width) and are built once. With ``n_components`` each
width is a Nystrom feature space of its own on shared landmarks (:mod:`._nystrom_width`).
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg import lu_factor, lu_solve
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..cluster import get_client
from ..graph.dense import direct_regularizer
from ..graph.diagnostics import graph_diagnostics, warn_graph
from ..graph.weights import Graph
from ..kernels.base import check_kernel, kernel_matrix
from ..linalg import RowBlocks
from ..linalg.blas import blas_for_rows
from ..linalg.recovery import solve_with_restarts
from ..linalg.rowblocks import is_dask_array
from ..solvers.dense import laprls_direct, lapsvm_dual, lapsvm_newton, lapsvm_newton_subsets
from ._clone import SharesClient
from .artifact import pack_matrix, unpack_matrix
from .base import OneVsRestLabels
from ._constraints import AUTO, COUNT, constraints, validate
from ._graph_seam import (check_graph_combination, estimator_graph, estimator_graphs,
                          graph_settings, graph_term_weight_on)
from ._input import check_finite_local, fit_input, gather_rows, to_blocks
from ._nystrom_manifold import fit_nystrom
from ._gamma_s_selection import loo_outputs as rls_loo_outputs
from ._graph_weight import CV_TOL, SEED_GAMMA_I, confirm, truth_of
from ._pickle import PicklesWithoutGraph
from ._rbf_width import blocks_rbf_gamma, default_rbf_gamma, width_candidates
from ._selection_cost import measured_fit, selecting
from ._selection import (CV_FOLDS, choose, chosen_row, enough_labels, fold_of, table,
                         warn_unchecked)

SOLVERS = ("auto", "direct", "primal")
#: ``solver="auto"`` solves directly up to this many rows (a dense n x n LU on the driver).
DIRECT_MAX_ROWS = 5000
#: Labeled rows up to which the primal solver's selection fits its supervised candidate on the
#: driver (dense ``l x l`` solves; beyond, a column of the solve on the workers).
DRIVER_SUPERVISED_MAX_LABELS = 5000
#: Up to this many rows the direct solver's leave-one-out choice and fit run on one BLAS
#: thread: two made a 550-row default fit 1.8x slower on two cores beside a LocalCluster's
#: workers (eigendecompositions and LUs of a few hundred rows, each waking the other thread),
#: and one made a 2,000-row fit 10-20% slower.
DIRECT_SINGLE_THREAD_ROWS = 1000
#: ``gamma_I`` values tried by ``gamma_I="auto"`` on the direct and primal solvers (before
#: ``graph_normalization``): 0, the supervised model, and eight decades around the seeds' 1e4.
AUTO_GAMMA_I = (0.0, 1e-2, 1.0, 1e2, 1e4, 1e6)
#: Where LapRLS / LapSVM widen the shared constraints: "auto" graphs, the exact expansion.
_OVERRIDES = dict(n_neighbors=[COUNT, AUTO], p=[COUNT, AUTO], n_components=[COUNT, None],
                  solver=[StrOptions(set(SOLVERS))])


#: Kernel values one scoring step computes at once (16 MB of float64). A block of rows is scored
#: in chunks of rows against the expansion's points, so its kernel values never exist whole (a
#: 25 000-row block against 10 000 training rows would be 2 GB) and the elementwise kernel
#: arithmetic runs on cache-sized pieces.
SCORE_CHUNK_VALUES = 1 << 21
#: Rows a chunk holds at least: each kernel call also reads all the points (their norms, a
#: sparse transpose), which a chunk of a few hundred rows against 10 000 points no longer
#: amortizes.
SCORE_CHUNK_MIN_ROWS = 2048


def _block_decision(i, X, points, coef, intercept, kernel, kernel_params):
    rows = max(SCORE_CHUNK_MIN_ROWS, SCORE_CHUNK_VALUES // max(1, points.shape[0]))
    S = np.empty((X.shape[0], coef.shape[1]))
    for start in range(0, X.shape[0], rows):
        S[start:start + rows] = kernel_matrix(X[start:start + rows], points, kernel=kernel,
                                              kernel_params=kernel_params) @ coef
    return S + intercept


def expansion_scores(est, X, points):
    """``sum_i alpha_i K(x_i, x) + b`` of the fitted kernel expansion ``est`` over ``points``
    on the rows ``X`` (checked here): row blocks on their workers, anything else on the
    driver. Shape (m,) for two classes, (m, n_classes) otherwise."""
    args = (points, est.dual_coef_, est.intercept_, est.kernel, est.kernel_params_)
    if isinstance(X, RowBlocks):
        # as tasks, not direct calls: after the fit's kNN search a direct call to the cached
        # owner intermittently found block 0 gone (StateLost in test_cli, cause not pinned
        # down); a task fetches the block from wherever it is
        S = np.concatenate(X.map(_block_decision, *args))
    else:
        if not is_dask_array(X):
            # scikit-learn's check of the feature count (and names), with its message
            X = validate_data(est, X, reset=False, accept_sparse="csr", dtype=np.float64,
                              ensure_all_finite=False)
        X = gather_rows(X)
        check_finite_local(X)
        if X.shape[1] != est.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features; the model expects "
                             f"{est.n_features_in_}")
        S = _block_decision(0, X, *args)
    return S[:, 0] if S.shape[1] == 1 else S


def expansion_info(est) -> dict:
    """The ``model.json`` fields of a fitted kernel expansion on a graph (LapRLS, LapSVM,
    SparseLapRLS); a callable kernel is refused, since models are stored without pickle."""
    if callable(est.kernel):
        raise ValueError("a model with a callable kernel cannot be saved (models are stored "
                         "without pickle); use a kernel by name")
    obj = np.asarray(est.objective_)
    return {"n_features": int(est.n_features_in_),
            "data_shape": [int(v) for v in est.data_shape_],
            "n_labeled": int(est.n_labeled_), "classes": est.classes_.tolist(),
            "objective": obj.tolist() if obj.ndim else float(obj),
            "n_iter": np.asarray(est.n_iter_).tolist(),
            "fit_seconds": float(est.fit_seconds_), "history": est.history_,
            "kernel_params_": est.kernel_params_,
            "gamma_I_effective": float(est.gamma_I_effective_),
            "n_neighbors_": est.n_neighbors_, "p_": int(est.p_),
            "gamma_I_": float(est.gamma_I_), "selection_": est.selection_,
            "selection_cost_": est.selection_cost_}


def restore_expansion_info(est, doc: dict) -> None:
    """Set the attributes :func:`expansion_info` stored (but ``gamma_I_``, whose fallback for
    old documents is the estimator's)."""
    est.kernel_params_ = doc["kernel_params_"]
    est.gamma_I_effective_ = doc["gamma_I_effective"]
    est.n_neighbors_, est.p_ = doc["n_neighbors_"], doc["p_"]
    est.selection_ = doc.get("selection_", [])
    # models saved before the cost was recorded
    est.selection_cost_ = doc.get("selection_cost_")
    est.n_features_in_ = doc["n_features"]
    est.data_shape_ = tuple(doc["data_shape"])
    est.n_labeled_ = doc["n_labeled"]
    est.objective_ = _squeeze(np.asarray(doc["objective"]))
    est.n_iter_ = doc["n_iter"]
    est.fit_seconds_ = doc["fit_seconds"]
    est.history_ = doc.get("history", [])


class _ManifoldClassifier(SharesClient, PicklesWithoutGraph, OneVsRestLabels, ClassifierMixin,
                          BaseEstimator):
    """Shared fit / predict / persistence of LapRLS and LapSVM (see the subclasses)."""

    _LOSSES: tuple = ()

    def __init__(self, *, gamma_A=1e-6, gamma_I="auto", kernel="rbf", kernel_params=None,
                 n_neighbors="auto", metric="euclidean", weights="heat", t=None,
                 symmetrize="max", normalized=True, p="auto", graph_normalization="n2",
                 solver="auto", tol=1e-6, max_iter=200, early_stopping=True, search_epsilon=0.1,
                 n_components=None, landmarks="uniform", unlabeled=-1, client=None,
                 n_blocks=None, random_state=None):
        self.gamma_A = gamma_A
        self.gamma_I = gamma_I
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
        self.early_stopping = early_stopping
        self.search_epsilon = search_epsilon
        self.n_components = n_components
        self.landmarks = landmarks
        self.unlabeled = unlabeled
        self.client = client
        self.n_blocks = n_blocks
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # checks ------------------------------------------------------------------------------
    _parameter_constraints = constraints(__init__, **_OVERRIDES)

    def _check_params(self) -> None:
        """Every hyperparameter against its declared constraint, then what the constraints
        cannot say (the kernel's parameters, graph settings and solver choices together). Runs
        first in ``fit``, before any work."""
        validate(self)
        check_kernel(self.kernel, self.kernel_params)
        check_graph_combination(self)
        if self.solver == "primal" and self._loss() == "hinge":
            raise ValueError("the primal solver takes loss 'squared' or 'squared_hinge'; "
                             "the hinge loss is solved by solver='direct' (the SVM dual)")
        if self.n_components is not None:
            if self._loss() == "hinge":
                raise ValueError("n_components fits the squared hinge in Nystrom feature space; "
                                 "the hinge loss needs the exact expansion (n_components=None)")
            if self.solver != "auto":
                raise ValueError(f"solver={self.solver!r} applies to the exact expansion; with "
                                 "n_components the linear solver is chosen by the feature count")

    def _loss(self) -> str:
        return self._LOSSES[0]

    # fitting -----------------------------------------------------------------------------
    @measured_fit
    def fit(self, X, y=None, *, graph: Graph | None = None, resume: bool = False):
        """Fit on labeled and unlabeled rows.

        Parameters
        ----------
        X : array, sparse matrix, dask array or RowBlocks, shape (n, d)
            All training rows; they become the expansion points.
        y : array of shape (n,), optional
            Classes, ``unlabeled`` on unlabeled rows; from the blocks' labels when omitted.
        graph : Graph or dict of Graph, optional
            A graph on exactly these rows (e.g. from :func:`dask_ssl.graph.knn_graph` or
            :meth:`Graph.from_scipy`), used instead of a new kNN search. A dict names
            candidate graphs: the direct and primal solvers choose among them as among the
            "auto" graph settings (the name chosen is ``graph_name_`` and the ``graph`` column
            of ``selection_``); the first stands where nothing is chosen (too few labels,
            ``n_components``).
        resume : bool, default False
            For the interface of the CLI; these estimators have no outer loop to resume.
        """
        t0 = time.perf_counter()
        self._check_params()
        if resume:
            raise ValueError(f"{type(self).__name__} has no checkpoint to resume from")
        named = isinstance(graph, dict)
        X, labels = fit_input(self, X, y, graph=None if named else graph)
        classes, codes = labels.classes, labels.codes
        n_rows = codes.size
        if named:
            _check_named_graphs(graph, n_rows)
        if self.n_components is not None:
            if self.n_components > n_rows:
                raise ValueError(f"n_components={self.n_components} exceeds the {n_rows} rows")
            self._fit_nystrom(X, labels, graph)
            self.fit_seconds_ = time.perf_counter() - t0
            return self
        solver = self.solver
        if solver == "auto":
            solver = "direct" if n_rows <= DIRECT_MAX_ROWS or self._loss() == "hinge" else "primal"
        points = gather_rows(X)
        check_finite_local(points)
        kparams = self._kernel_candidates(
            default_rbf_gamma(points) if self._width_selected() else None)
        labeled = labels.labeled
        Y = labels.columns()

        def block(kp, rows):
            return kernel_matrix(points[rows], kernel=self.kernel, kernel_params=kp)

        if solver == "direct":
            # the whole Gram first: a kernel returning NaN stops the fit before the graph is built
            grams = _Grams(lambda kp: kernel_matrix(points, kernel=self.kernel, kernel_params=kp),
                           kparams, make_block=block)
            grams[0]
        else:
            # the same check on 64 rows; the kernel rows are made on the workers (_fit_primal),
            # the kernel among a few rows here
            block(kparams[0], slice(64))
            grams = _Grams(None, kparams, make_block=block)
        client = get_client(self.client)
        candidates = graph_settings(self, n_rows, graph)
        (graphs, fitted), self.restarts_ = solve_with_restarts(
            lambda: self._fit_graphs(X, client, graph, candidates, solver, grams, Y, labeled),
            what=type(self).__name__)
        chosen = fitted.pop("graph_setting")
        K = fitted.pop("gram")
        self.landmark_indices_ = self.n_components_ = None
        self.graph_ = graphs[chosen[0]]
        self.diagnostics_ = graph_diagnostics(self.graph_)
        warn_graph(self.diagnostics_, labeled)
        self.n_neighbors_ = None if named else chosen[0]
        self.graph_name_ = chosen[0] if named else None
        self.p_ = chosen[1]
        self.selection_ = fitted.pop("selection")
        if named:  # the candidates' column holds their names, not neighbour counts
            for row in self.selection_:
                row["graph"] = row.pop("n_neighbors")
        for key, value in fitted.items():
            setattr(self, key, value)
        self.classes_ = classes
        self.expansion_points_ = points
        self.n_features_in_ = points.shape[1]
        self.n_labeled_ = int(labeled.sum())
        self.data_shape_ = tuple(points.shape)
        scores = self._scores_train(K)
        self.transduction_ = self._labels_from_scores(scores)
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _fit_nystrom(self, X, labels, graph) -> None:
        """The fit in Nystrom feature space (see :mod:`._nystrom_manifold`): the rows stay on
        the workers, the model is an expansion over the landmarks; an RBF width not given is
        chosen with ``gamma_I`` (:mod:`._nystrom_width`)."""
        client = get_client(self.client)
        setting = graph_settings(self, labels.codes.size, graph)[0]
        self.graph_name_ = None
        if isinstance(graph, dict):
            self.graph_name_, graph = setting[0], graph[setting[0]]
            setting = (None, setting[1])
        (blocks, graph, fitted), restarts = solve_with_restarts(
            lambda: self._nystrom_on_workers(X, client, labels, graph, setting),
            what=type(self).__name__)
        for key, value in fitted.items():
            setattr(self, key, value)
        self.restarts_ += restarts
        self.graph_ = graph
        self.diagnostics_ = graph_diagnostics(graph)
        warn_graph(self.diagnostics_, labels.labeled)
        self.n_neighbors_, self.p_ = setting
        self.n_features_in_ = blocks.n_features
        self.n_labeled_ = int(labels.labeled.sum())
        self.data_shape_ = (blocks.n_rows, blocks.n_features)
        self.transduction_ = self._labels_from_scores(self.decision_function(blocks))

    def _nystrom_on_workers(self, X, client, labels, graph, setting):
        """The row blocks, the graph (unless given), the default width, its choice and the fit:
        ``(blocks, graph, fitted attributes)``. All of it is on the workers, so a lost worker
        repeats it from the inputs (:func:`solve_with_restarts`), width selection included."""
        blocks = to_blocks(X, client, self.n_blocks)
        kparams = self._kernel_candidates(
            blocks_rbf_gamma(blocks) if self._width_selected() else None)
        if graph is None:
            graph = estimator_graph(self, blocks, setting[0])
        return blocks, graph, fit_nystrom(self, blocks, labels, graph, setting, kparams, client)

    def _width_selected(self) -> bool:
        """Whether the RBF width is chosen on the labels: the kernel is "rbf" and its ``gamma``
        was not given."""
        return self.kernel == "rbf" and "gamma" not in (self.kernel_params or {})

    def _kernel_candidates(self, gamma) -> list:
        """The kernel parameters to try, the default first: with the width chosen, one per
        :func:`._rbf_width.width_candidates` around the default ``gamma``; else the given."""
        given = dict(self.kernel_params or {})
        if gamma is None:
            return [given]
        return [{**given, "gamma": g} for g in width_candidates(gamma)]

    def _unchecked(self, n_graphs: int, n_widths: int) -> str:
        """The settings a selection without enough labels leaves unchecked, for the warning."""
        what = ["gamma_I"] if self.gamma_I == "auto" else (
            ["the graph"] if n_graphs > 1 and self.gamma_I > 0 else [])
        return " and ".join(what + (["the RBF width"] if n_widths > 1 else []))

    def _fit_graphs(self, X, client, graph, candidates, solver, grams, Y, labeled):
        """The candidate graphs (unless given) and the solve: ``(graphs, fitted)``. Both are on
        the workers, so a lost worker repeats them (:func:`solve_with_restarts`)."""
        ks = list(dict.fromkeys(k for k, _ in candidates))
        if isinstance(graph, dict):
            graphs = {k: graph[k] for k in ks}
        elif graph is not None:  # the graph given: every candidate's k is None
            graphs = {None: graph}
        else:
            graphs = estimator_graphs(self, to_blocks(X, client, self.n_blocks), ks)
        if solver == "direct":
            return graphs, self._fit_direct(grams, graphs, candidates, Y, labeled)
        return graphs, self._fit_primal(X, client, graphs, candidates, Y, labeled, grams)

    def _weight(self, graph, gamma_I) -> float:
        """``gamma_I_eff`` on ``graph`` (:func:`._graph_seam.graph_term_weight_on`)."""
        return graph_term_weight_on(self, graph, gamma_I)

    def _fit_direct(self, grams, graphs, candidates, Y, labeled) -> dict:
        """The dense fit at the setting :meth:`_select_direct` chooses; ``grams`` the Gram
        matrix of each candidate width (:class:`_Grams`, the default first)."""
        settings = [((k, q), direct_regularizer(graphs[k], normalized=self.normalized, p=q))
                    for k, q in candidates]
        gammas = AUTO_GAMMA_I if self.gamma_I == "auto" else (float(self.gamma_I),)
        checks = (len(settings) * len(gammas) > 1
                  and (self.gamma_I == "auto" or self.gamma_I > 0)) or len(grams) > 1
        if checks and not enough_labels(truth_of(Y[labeled])):
            warn_unchecked(self, self._unchecked(len(settings), len(grams)))
            settings, grams = settings[:1], grams.first()
            gammas = (SEED_GAMMA_I,) if self.gamma_I == "auto" else gammas
        MK = {}
        with blas_for_rows(Y.shape[0], DIRECT_SINGLE_THREAD_ROWS):
            (w, j, gamma_I), fallback, selection = self._select_direct(
                grams, graphs, settings, gammas, Y, labeled, MK)
            # the chosen graph's M K serves the fits that follow; the others' are released
            MK = MK.get((w, j)) if gamma_I > 0 else None
            setting, M = settings[j]
            weight = self._weight(graphs[setting[0]], gamma_I)
            if gamma_I > 0 and selection and selection[0]["gamma_I"] == 0:
                if not self._confirm(grams, fallback[0], w, M, MK, weight, Y, labeled,
                                     selection):
                    w, weight, gamma_I, MK = fallback[0], 0.0, 0.0, None
            out = self._solve_dense(grams[w], M, weight, Y, labeled, MK=MK)
        out.update(graph_setting=setting, selection=selection, gamma_I_=gamma_I,
                   gamma_I_effective_=weight, kernel_params_=grams.params[w], gram=grams[w])
        return out

    def _select_direct(self, grams, graphs, settings, gammas, Y, labeled, MK):
        """``(chosen, fallback, selection_)``: the candidate width, graph and ``gamma_I`` (as
        ``(width index, setting index, gamma_I)``) by LapRLS's exact leave-one-out outputs on
        the labeled rows (:func:`_loo_outputs`) and the rule of :mod:`._selection`, and the
        supervised candidate the rule chooses among the supervised ones alone (where a
        graph candidate fails its confirmation, :meth:`_confirm`). ``gamma_I = 0`` is one
        candidate per width whatever the graph; without it the first graph stands in its
        place.

        Two stages. The width first, by the rule among the supervised candidates alone (the
        fallback), whose incumbent is the supervised model at the default width: the
        estimator without its unlabeled rows and without a choice. Their leave-one-out needs
        the kernel among the labeled rows only, so a width costs no Gram matrix unless it is
        chosen. Then the graph candidates at that width only: each costs an ``n x n`` LU, and
        scoring them at every width made the selection several fits long; the width that
        suits the labels is the scale of the kernel the graph term then deforms. The table
        holds every width's supervised candidate and every candidate at the chosen width; the
        graph candidates must beat the fallback under the rule (the rule over more
        alternatives is stricter, and must not hand the choice back to a width the first
        stage rejected). At the chosen width the Gram matrix is computed once and ``M K``
        once per graph, for every ``gamma_I`` tried (kept in ``MK``, by (width, setting), for
        the fit); the graphs are shared by every width (their heat weights do not depend on
        the kernel)."""
        grid = _candidate_grid(len(grams), len(settings), gammas)
        if len(grid) == 1:
            return grid[0], grid[0], []
        L = np.flatnonzero(labeled)
        YL = Y[L]
        truth = truth_of(YL)
        # each width's first candidate: the supervised one where gamma_I = 0 is tried
        base = [case for case in grid if case[1:] == grid[0][1:]]
        outputs = {}

        def scores(cases):
            outs = [outputs[case] for case in cases]
            return (np.array([truth_of(out) != truth for out in outs]),
                    np.array([np.sum((YL - out) ** 2, axis=1) for out in outs]))

        with selecting():
            for case in base:
                outputs[case] = self._loo_case(grams, graphs, settings, case, Y, labeled, MK)
            fallback = base[choose(*scores(base), supervised=0)]
            for case in grid:
                if case[0] == fallback[0] and case not in outputs:
                    outputs[case] = self._loo_case(grams, graphs, settings, case, Y, labeled,
                                                   MK)
        cases = [case for case in grid if case in outputs]
        wrong, squared = scores(cases)
        # the graph candidates meet the first stage's pick: the rule over more alternatives
        # must not hand the choice back to a width the first stage rejected
        incumbent = cases.index(fallback)
        best = choose(wrong, squared, supervised=incumbent)
        width = len(grams) > 1
        rows = [{**({"gamma": grams.params[w]["gamma"]} if width else {}),
                 "n_neighbors": None if g == 0 else settings[j][0][0],
                 "p": None if g == 0 else settings[j][0][1], "gamma_I": g} for w, j, g in cases]
        return cases[best], fallback, table(rows, wrong, squared, best, supervised=incumbent)

    def _loo_case(self, grams, graphs, settings, case, Y, labeled, MK) -> np.ndarray:
        """LapRLS's leave-one-out outputs of the candidate ``case`` = ``(width index, setting
        index, gamma_I)``; ``MK`` caches ``M K`` per (width, setting) for the next ``gamma_I``.
        A supervised candidate reads the kernel among the labeled rows alone."""
        w, j, g = case
        if g == 0:
            L = np.flatnonzero(labeled)
            return rls_loo_outputs(grams.block(w, L), Y[L], [self.gamma_A])[0]
        K = grams[w]
        if (w, j) not in MK:
            MK[(w, j)] = settings[j][1] @ K
        return _loo_outputs(K, MK[(w, j)], self._weight(graphs[settings[j][0][0]], g), Y,
                            labeled, self.gamma_A)

    def _confirm(self, grams, w_supervised, w, M, MK, weight, Y, labeled, selection) -> bool:
        """Whether the chosen graph candidate (width ``w``, graph term ``weight M``, ``MK`` its
        ``M K``) stands against the supervised one of width ``w_supervised`` when checked with
        this estimator's own loss; LapRLS's leave-one-out already is that check (LapSVM
        overrides)."""
        return True

    def _fit_primal(self, X, client, graphs, candidates, Y, labeled, blocks_of) -> dict:
        """The distributed fit at the graph setting, width and ``gamma_I`` of
        :meth:`_primal_choice` (``candidates``: the graph settings, ``(k, p)``); the kernel
        rows of a width are computed on the workers once, for the selection and the fit,
        where a graph candidate needs them (``blocks_of``: the candidate kernel parameters,
        default first, and the kernel among a few rows on the driver, :class:`_Grams`)."""
        from ..kernels.blocks import KernelBlocks

        blocks = to_blocks(X, client, self.n_blocks)
        grams = _Grams(lambda kp: KernelBlocks(blocks, kernel=self.kernel, kernel_params=kp),
                       blocks_of.params, make_block=blocks_of.make_block)
        try:
            (w, j, gamma_I), selection = self._primal_choice(blocks, grams, graphs, candidates,
                                                             Y, labeled)
            grams.close(keep=w)
            setting = candidates[j]
            graph = graphs[setting[0]]
            weight = self._weight(graph, gamma_I)
            res = self._solve_primal(blocks, grams[w], graph, setting[1], Y, labeled, weight,
                                     self.tol)
        finally:
            grams.close()
        return {"dual_coef_": res.alpha, "intercept_": np.asarray(res.intercept, dtype=float),
                "objective_": _squeeze(np.asarray(res.objective, dtype=float)),
                "n_iter_": int(res.n_iter), "history_": res.history,
                "graph_setting": setting, "selection": selection, "gamma_I_": gamma_I,
                "gamma_I_effective_": weight, "kernel_params_": grams.params[w], "gram": None}

    def _primal_choice(self, blocks, grams, graphs, candidates, Y, labeled):
        """``((width index, setting index, gamma_I), selection_)`` on the primal path: the
        given ``gamma_I``, graph setting and width; with "auto", several graph settings or
        the width to choose, the choice of :meth:`_cv_primal`, or the seeds' with too few
        labels to choose. ``gamma_I = 0`` is one candidate per width whatever the graph."""
        gammas = AUTO_GAMMA_I if self.gamma_I == "auto" else (float(self.gamma_I),)
        grid = _candidate_grid(len(grams), len(candidates), gammas)
        if len(grid) == 1:
            return grid[0], []
        if not enough_labels(truth_of(Y[labeled])):
            warn_unchecked(self, self._unchecked(len(candidates), len(grams)))
            return (0, 0, SEED_GAMMA_I if self.gamma_I == "auto" else gammas[0]), []
        return self._cv_primal(blocks, grams, graphs, candidates, Y, labeled, grid)

    @selecting()
    def _cv_primal(self, blocks, grams, graphs, candidates, Y, labeled, grid):
        """``((width index, setting index, gamma_I), selection_)``: the candidates of
        ``grid``, ``(width, graph setting, gamma_I)`` (the widths of ``grams``, the default
        first; the graph settings ``candidates``; ``gamma_I = 0``, the supervised model, first
        where tried), by :data:`CV_FOLDS`-fold cross-validation on the labeled rows, scored by
        this estimator's own loss on the held-out rows and the rule of :mod:`._selection`.

        Two stages, as on the direct path: the width first, among each width's first
        candidate (the supervised one where ``gamma_I = 0`` is tried; the incumbent: the
        supervised model at the default width), then the graph settings and other
        ``gamma_I`` at that width only, against the first stage's pick; the table holds every
        candidate scored. Graph candidates at every width made the selection many fits long:
        their columns share each product, and the slowest to converge set the passes of
        every width.

        The supervised candidate's folds are fitted on the driver over the labeled rows alone
        (:meth:`_supervised_held_out`; up to :data:`DRIVER_SUPERVISED_MAX_LABELS` of them):
        no round trip, and a width the graph candidates do not use never has its kernel rows
        computed on the workers. Otherwise, per stage, width and graph setting every (fold,
        candidate, class column) is a column of one primal solve on that width's kernel rows,
        so an iteration costs the products of one fit. A fold's held-out rows are unlabeled
        rows of its columns: they stay in the graph term, and only their outputs ``K alpha +
        b`` are scored."""
        L = np.flatnonzero(labeled)
        YL = Y[L]
        truth = truth_of(YL)
        fold = fold_of(truth, min(CV_FOLDS, L.size))
        n_folds, n_targets = int(fold.max()) + 1, Y.shape[1]
        outputs = {}

        def score(w, j, gammas):
            """Held-out outputs of ``gamma_I`` in ``gammas`` at width ``w`` on graph setting
            ``j``: the supervised one's on the driver, the others' by one solve on the
            workers."""
            if 0.0 in gammas and L.size <= DRIVER_SUPERVISED_MAX_LABELS:
                outputs[w, j, 0.0] = self._supervised_held_out(grams.block(w, L), YL, fold)
                gammas = [g for g in gammas if g > 0]
            if not gammas:
                return
            (k, p), cases = candidates[j], [(f, g, t) for f in range(n_folds) for g in gammas
                                            for t in range(n_targets)]
            masks = np.zeros((Y.shape[0], len(cases)), dtype=bool)
            for c, (f, _, _) in enumerate(cases):
                masks[L[fold != f], c] = True
            # gamma_I_eff is linear in gamma_I: one normalization for every candidate
            unit = self._weight(graphs[k], 1.0)
            weights = np.array([g * unit for _, g, _ in cases])
            # the folds' fits need only be accurate enough to count their held-out errors
            res = self._solve_primal(blocks, grams[w], graphs[k], p,
                                     Y[:, [t for _, _, t in cases]] * masks, masks, weights,
                                     max(self.tol, CV_TOL))
            for g in gammas:
                held_out = np.empty_like(YL)
                for f in range(n_folds):
                    cols = [c for c, (ff, gg, _) in enumerate(cases) if ff == f and gg == g]
                    held_out[fold == f] = res.decision[np.ix_(L[fold == f], cols)]
                outputs[w, j, g] = held_out

        def scores(cases):
            outs = [outputs[case] for case in cases]
            return (np.array([truth_of(out) != truth for out in outs]),
                    np.array([self._loss_values(out, YL).sum(axis=1) for out in outs]))

        # each width's first candidate: the supervised one where gamma_I = 0 is tried
        base = [case for case in grid if case[1:] == grid[0][1:]]
        if len(base) > 1:
            for w, j, g in base:
                score(w, j, [g])
        width = base[choose(*scores(base), supervised=0)][0] if len(base) > 1 else 0
        for j in range(len(candidates)):
            todo = [g for w, jj, g in grid if w == width and jj == j
                    and (w, jj, g) not in outputs]
            score(width, j, todo)
        cases = [case for case in grid if case in base or case[0] == width]
        wrong, squared = scores(cases)
        # the graph candidates meet the first stage's pick (as on the direct path)
        incumbent = cases.index((width, *grid[0][1:]))
        best = choose(wrong, squared, supervised=incumbent)
        rows = [{**({"gamma": grams.params[w]["gamma"]} if len(grams) > 1 else {}),
                 "n_neighbors": None if g == 0 else candidates[j][0],
                 "p": None if g == 0 else candidates[j][1], "gamma_I": g} for w, j, g in cases]
        selection = [{**row, "criterion": "cv"}
                     for row in table(rows, wrong, squared, best, supervised=incumbent)]
        return cases[best], selection

    def _supervised_held_out(self, K_LL, YL, fold) -> np.ndarray:
        """The supervised model's (graph term 0) outputs on each fold's held-out labeled rows
        (``fold``: the fold of each labeled row), fitted on the other folds by the dense
        solver over the labeled rows alone (``K_LL``: the kernel among them, ``YL`` their
        class columns): without the graph term an unlabeled row's coefficient is 0 (its
        stationarity condition is ``gamma_A l alpha_i = 0``), so the ``l x l`` problem is the
        same fit at a fraction of its cost, with no round trip."""
        out = np.empty_like(YL)
        no_graph = np.zeros_like(K_LL)
        for f in range(int(fold.max()) + 1):
            held = fold == f
            fit = self._solve_dense(K_LL, no_graph, 0.0, YL * ~held[:, None], ~held)
            out[held] = K_LL[held] @ fit["dual_coef_"] + fit["intercept_"]
        return out

    def _solve_primal(self, blocks, K, graph, p, Y, labeled, weight, tol):
        """:func:`~dask_ssl.solvers.primal.solve_primal` on the kernel rows ``K`` with this
        estimator's loss and limits; ``labeled`` and ``weight`` per column or for all."""
        from ..solvers.primal import solve_primal

        return solve_primal(blocks, graph, Y, labeled, kernel_blocks=K, gamma_A=self.gamma_A,
                            gamma_I=weight, loss=self._loss(), normalized=self.normalized, p=p,
                            tol=tol, max_iter=self.max_iter, client=blocks.client,
                            early_stopping=bool(self.early_stopping))

    def _solve_dense(self, K, M, weight, Y, labeled, MK=None) -> dict:
        raise NotImplementedError

    def _dense_attributes(self, sol, K, M, weight, Y, labeled, *, bias_in_graph) -> dict:
        """The fitted attributes of a dense solve (:mod:`dask_ssl.solvers.dense`)."""
        history = sol.history[0] if len(sol.history) == 1 else sol.history
        return {"dual_coef_": sol.alpha, "intercept_": sol.intercept,
                "n_iter_": _squeeze(sol.n_iter), "history_": history,
                "objective_": _squeeze(self._objective(K, M, weight, sol.alpha, sol.intercept,
                                                       Y, labeled, bias_in_graph))}

    def _objective(self, K, M, weight, alpha, b, Y, labeled, bias_in_graph) -> np.ndarray:
        """The objective of each column at ``(alpha, b)``."""
        F = K @ alpha
        out = F + b if bias_in_graph else F
        loss = self._loss_values(F[labeled] + b, Y[labeled]).mean(axis=0)
        ambient = np.einsum("ic,ic->c", alpha, F)
        graph = np.einsum("ic,ic->c", out, M @ out)
        return loss + self.gamma_A * ambient + weight * graph

    # prediction --------------------------------------------------------------------------
    def _scores_train(self, K):
        if K is None:
            return self.decision_function(self.expansion_points_)
        S = K @ self.dual_coef_ + self.intercept_
        return S[:, 0] if S.shape[1] == 1 else S

    def decision_function(self, X):
        """``f(x) = sum_i alpha_i K(x_i, x) + b`` per class column: shape (m,) for two classes
        (positive = ``classes_[1]``), (m, n_classes) otherwise."""
        check_is_fitted(self, "dual_coef_")
        return expansion_scores(self, X, self.expansion_points_)

    # persistence (see artifact.py) --------------------------------------------------------
    def _fitted_info(self) -> dict:
        return {**expansion_info(self), "graph_name_": getattr(self, "graph_name_", None)}

    def _fitted_arrays(self) -> dict:
        self._fitted_info()  # refuses a callable kernel before anything is written
        arrays = {"dual_coef": self.dual_coef_, "intercept": self.intercept_,
                  "classes": self.classes_, **pack_matrix("points", self.expansion_points_)}
        if getattr(self, "landmark_indices_", None) is not None:
            arrays["landmark_indices"] = self.landmark_indices_
        return arrays

    def _restore(self, arrays: dict, doc: dict) -> None:
        self.expansion_points_ = unpack_matrix("points", arrays)
        self.landmark_indices_ = arrays.get("landmark_indices")
        self.dual_coef_ = arrays["dual_coef"]
        self.intercept_ = arrays["intercept"]
        self.classes_ = arrays["classes"]
        restore_expansion_info(self, doc)
        self.graph_name_ = doc.get("graph_name_")
        # models stored before gamma_I was chosen used the gamma_I they were given
        self.gamma_I_ = doc.get("gamma_I_", doc["params"]["gamma_I"])


def _candidate_grid(n_widths: int, n_settings: int, gammas) -> list:
    """The candidates ``(width index, graph setting index, gamma_I)`` of both solvers' choice,
    by width, then setting, then ``gamma_I``: ``gamma_I = 0`` (the supervised model, which no
    graph changes) once per width, on the first setting."""
    return [(w, j, g) for w in range(n_widths) for j in range(n_settings) for g in gammas
            if g > 0 or j == 0]


class _Grams:
    """The kernel of each candidate parameter set (``params``, the default first), made by
    ``make(params)`` when first asked for and kept: the Gram matrix of a width not tried is
    never computed. ``make_block(params, rows)``, where given, makes the kernel among a few
    rows alone on the driver (:meth:`block`). ``make`` returns a Gram matrix (the direct
    solver) or kernel rows on the workers (the primal one); None carries the parameters and
    ``make_block`` to where the workers' kernel rows are made."""

    def __init__(self, make, params: list, made: dict | None = None, make_block=None):
        self.make, self.params, self._made = make, list(params), dict(made or {})
        self.make_block = make_block

    def block(self, w: int, rows):
        """The kernel of width ``w`` among ``rows``: cut from its Gram matrix where that is
        made, else made for those rows alone (a supervised candidate needs no more)."""
        if isinstance(self._made.get(w), np.ndarray) or self.make_block is None:
            return self[w][np.ix_(rows, rows)]
        return self.make_block(self.params[w], rows)

    def __len__(self) -> int:
        return len(self.params)

    def __getitem__(self, w: int):
        if w not in self._made:
            self._made[w] = self.make(self.params[w])
        return self._made[w]

    def first(self) -> "_Grams":
        """The default alone (nothing to choose)."""
        return _Grams(self.make, self.params[:1], {0: self._made[0]} if 0 in self._made else {},
                      self.make_block)

    def close(self, keep: int | None = None) -> None:
        """Release every kernel made but ``keep``'s (those holding worker state)."""
        for w, K in list(self._made.items()):
            if w != keep:
                del self._made[w]
                if hasattr(K, "close"):
                    K.close()


def _check_named_graphs(graphs: dict, n_rows: int) -> None:
    """Candidate graphs given by name: at least one, named by strings, each a Graph on the
    ``n_rows`` rows of the fit."""
    if not graphs:
        raise ValueError("graph is an empty dict; give at least one candidate graph")
    for name, g in graphs.items():
        if not isinstance(name, str):
            raise ValueError(f"candidate graphs are named by strings, got {name!r}")
        if not isinstance(g, Graph):
            raise ValueError(f"graph {name!r} must be a Graph, got {type(g).__name__}")
        if g.n_rows != n_rows:
            raise ValueError(f"graph {name!r} has {g.n_rows} rows but X has {n_rows}")


def _squeeze(values: np.ndarray):
    values = np.asarray(values, dtype=float).ravel()
    return float(values[0]) if values.size == 1 else values


def _loo_outputs(K, MK, weight, Y, labeled, gamma_A) -> np.ndarray:
    """LapRLS's leave-one-out outputs on the labeled rows, all at once: shape (l, n_columns).

    LapRLS is RLS with the deformed kernel ``K~`` (fixed by all rows, no label read) and ridge
    ``gamma_A l``, so its leave-one-out outputs are kernel RLS's (``y - (y - H y) / (1 - diag H)``) with the
    hat matrix ``H = K~_LL (K~_LL + gamma_A l I)^-1`` over the labeled rows ``L``; a row left
    out stays in the graph, as an unlabeled row. ``K~_LL = K_LL - K_L: (I + r M K)^-1 r (M K)_:L``
    with ``r = weight / gamma_A``: ``MK = M K`` is computed once for every weight tried on a
    graph, so a candidate costs one LU. ``weight = 0`` is kernel RLS (``K~ = K``).
    """
    L = np.flatnonzero(labeled)
    n = K.shape[0]
    Kt = K[np.ix_(L, L)]
    if weight > 0:
        r = weight / gamma_A
        A = r * MK
        A[np.diag_indices(n)] += 1.0
        Z = lu_solve(lu_factor(A, overwrite_a=True), r * MK[:, L])
        Kt = Kt - K[L] @ Z
        Kt = (Kt + Kt.T) * 0.5
    return rls_loo_outputs(Kt, Y[L], [gamma_A])[0]


class LapRLS(_ManifoldClassifier):
    """Laplacian regularized least squares (thesis 2.3.1, Eq 2.12), multi-class one-vs-rest.

    ``alpha = (J K + gamma_A l I + gamma_I_eff l M K)^-1 Y`` for all class columns with one LU
    factorization; ``f(x) = sum_i alpha_i K(x_i, x)`` (no bias, as Eq 2.9).

    Parameters
    ----------
    gamma_A : float, default 1e-6
        gamma_A, weight of the ambient norm ``||f||_K^2 = alpha^T K alpha``; the loss is
        ``(1/l) sum`` over labeled rows (the thesis' normalization; RLS's ridge is
        ``gamma_A l``). 1e-6 is the thesis' fixed value (Table 2.6).
    gamma_I : float or "auto", default "auto"
        gamma_I, weight of the graph term ``f^T M f`` before ``graph_normalization``
        (``gamma_I_eff = gamma_I / (u + l)^2`` by default). 0 gives RLS on the labeled rows.
        ``"auto"`` chooses it on the labeled rows among :data:`AUTO_GAMMA_I` (0 included) by
        the rule of :mod:`dask_ssl.models._selection`: a graph candidate replaces the
        supervised model only when its paired gain in held-out residual exceeds its noise (a
        number of standard errors that grows with the candidates, about 1.6 for the direct
        solver's ten alternatives at one width, 1.7 for its twelve where the RBF width is
        chosen too). The direct solver chooses with the "auto" graph settings and the RBF
        width (``kernel_params``), by LapRLS's exact leave-one-out outputs (through the
        deformed kernel; the left-out row stays in the graph) and their squared residuals:
        the width among the supervised candidates first, then the graph candidates at that
        width (each costs an ``n x n`` factorization).
        The primal solver chooses with the same graph settings by ``CV_FOLDS``-fold
        cross-validation (folds stratified by class, each labeled row held out once), scored
        by the estimator's own loss on the held-out rows, in the direct solver's two stages
        (the width among the supervised candidates, fitted on the driver over the labeled
        rows, then the graph candidates at that width); per graph setting every (fold,
        candidate, class) is a column of one distributed solve on that width's kernel rows,
        a fold's held-out rows staying in the graph as unlabeled rows, and the fit at the
        chosen value follows. With fewer than 5 labeled rows in a class it is the
        seeds' 1e4 (with a :class:`~dask_ssl.models._selection.SelectionWarning`): the graph
        term then dominates the ambient one, the classifier follows the graph and the kernel
        extends it. With ``n_components`` the candidates are the linear estimators'
        (:class:`LinearLapRLS`: shares of the graph term, 0 included, reported in the same
        units), scored as they score them (exact leave-one-out up to ``GRAM_MAX_FEATURES``
        features, cross-validation beyond) at each candidate width
        (:mod:`dask_ssl.models._nystrom_width`). The value used is ``gamma_I_``.
    kernel : str or callable, default "rbf"
        Base kernel K by :func:`~sklearn.metrics.pairwise.pairwise_kernels` name or callable.
    kernel_params : dict, optional
        Parameters of the kernel (the RBF width is ``gamma`` there, ``1/(2 sigma^2)`` with the
        seeds' sigma). For ``"rbf"`` without ``gamma`` the width is chosen on the labeled rows
        with ``gamma_I`` and the graph, by the same criterion and rule, among the default
        sigma, twice the mean distance from a row to its 10 nearest rows
        (:func:`default_rbf_gamma`; unlabeled and labeled rows, no labels), and half and
        twice that sigma (:func:`~dask_ssl.models._rbf_width.width_candidates`; the direct
        solver chooses it among the supervised candidates and scores the graph candidates at
        that width only); each width has its supervised candidate (``gamma_I = 0``), and
        the incumbent every other width must beat is the supervised model at the default
        width, the fit a user gets without unlabeled rows and without a choice; the graph
        candidates must then beat the supervised model at the width so chosen. This holds
        whenever something is chosen, ``gamma_I=0`` given included (kernel RLS with its width
        chosen). With ``n_components`` each width is its own Nystrom feature space on the
        same landmarks, with its own Gram matrices factored once per ``gamma_I`` candidate
        (:mod:`dask_ssl.models._nystrom_width`). With too few labels the default width
        stands. The width used is in ``kernel_params_``, each candidate's in the ``gamma``
        column of ``selection_``.
    n_neighbors : int or "auto", default "auto"
        The seeds' nn, k of the kNN graph; at most n - 1 on n rows (with a warning).
        ``"auto"`` (with ``p``): see ``p``.
    metric, weights, t, symmetrize, search_epsilon, random_state
        The kNN graph, as in :class:`~dask_ssl.models.GraphTransduction` (heat weights
        ``exp(-d^2/4t)``, t from the mean edge length by default).
    normalized : bool, default True
        ``L = D^-1/2 (D - W) D^-1/2`` (the seeds' experiments) instead of ``D - W``.
    p : int or "auto", default "auto"
        Power of the Laplacian, ``M = L^p`` (the seeds' p, "degree"). With ``"auto"`` for
        ``n_neighbors`` and/or ``p`` the direct solver fits ``(n_neighbors, p)`` in
        ``AUTO_GRAPHS`` = ((10, 1), (50, 5)) and keeps the one with the fewest leave-one-out
        errors of LapRLS on the labeled rows (exact, through the deformed kernel; ties and
        too few labels to tell keep the first, the most local and smoothest); the primal
        solver scores them with ``gamma_I`` by its cross-validation (see ``gamma_I``). The
        choice is in ``n_neighbors_``, ``p_`` and ``selection_``. Unlabeled rows' labels are
        never read (there are none).
    graph_normalization : {"n2", "edges", "none"}, default "n2"
        gamma_I_eff = gamma_I / (u + l)^2 (thesis ch. 2), gamma_I / sum W_ij (the seeds'
        sparse-graph alternative) or gamma_I (linear paper, ch. 4).
    solver : {"auto", "direct", "primal"}, default "auto"
        ``"direct"``: dense on the driver (n up to a few thousand); ``"primal"``: the
        distributed solver of :mod:`dask_ssl.solvers.primal`; ``"auto"``: direct up to
        ``DIRECT_MAX_ROWS`` rows.
    tol, max_iter
        Tolerance and iteration limit of the iterative solvers.
    early_stopping : bool, default True
        Primal solver: stop a solve once the signs of f on the unlabeled rows stop changing
        (Melacci and Belkin's rule; see :mod:`dask_ssl.solvers.primal`), before ``tol``.
    n_components : int or None, default None
        None: the exact expansion over all ``n`` training rows (the thesis' ``alpha``). An int
        ``m``: Nystrom features ``Z = K(X, landmarks) K_mm^-1/2`` computed on the workers and the
        fit of :class:`LinearLapRLS` (:class:`LinearLapSVM` for LapSVM) on them, with the same
        graph, kernel and kernel parameters, ``gamma_A``, ``gamma_I`` and
        ``graph_normalization`` (the same meanings there; their objective is half of this
        one, :mod:`dask_ssl.models._nystrom_manifold`). The model is the expansion
        ``f(x) = sum_j alpha_j K(z_j, x)`` over the ``m`` landmarks ``z_j``, ``alpha =
        K_mm^-1/2 w``; with every row a landmark it is the exact solution. Nothing ``n x n``
        is formed and the rows stay on the workers, so it runs on hundreds of thousands of
        rows. The graph "auto" settings take the first of ``AUTO_GRAPHS`` (no leave-one-out
        selection); the RBF width candidates are the same, the default computed on the row
        blocks;
        ``solver`` must be "auto" (up to ``GRAM_MAX_FEATURES`` components an exact Cholesky
        solve of the m x m system, CG beyond, ``tol`` and ``max_iter`` its limits).
    landmarks : {"uniform", "kmeans++"}, default "uniform"
        How the ``n_components`` landmarks are drawn from the rows (``random_state`` seeds it).
    unlabeled : scalar, default -1
        Marker of unlabeled rows in ``y``.
    client, n_blocks
        Cluster and row blocks of the kNN search (and of the primal solver).

    Attributes
    ----------
    classes_, dual_coef_ : ndarray of shape (n, n_columns)
        alpha per class column (one column for two classes, positive ``classes_[1]``).
    intercept_ : ndarray of shape (n_columns,)
        Zero for LapRLS.
    expansion_points_ : ndarray or CSR of shape (n, d)
        The training rows x_i of the expansion.
    kernel_params_ : dict
        The kernel parameters used (with the chosen or default RBF width filled in).
    gamma_I_ : float
        The gamma_I used (the choice with "auto").
    gamma_I_effective_ : float
        The coefficient of ``f^T M f`` after normalization.
    n_neighbors_, p_ : int
        The graph used (``n_neighbors_`` None for a graph given to ``fit``).
    graph_name_ : str or None
        The candidate graph chosen when ``fit`` was given a dict of them, else None.
    selection_ : list of dict
        With "auto" settings: per candidate ``gamma`` (the RBF width, where it is chosen),
        ``n_neighbors``, ``p``, ``gamma_I``, its
        held-out ``errors`` (count, rate, standard error), ``squared`` residual and whether
        it was ``chosen`` (:func:`dask_ssl.models._selection.table`). On the direct solver
        they are leave-one-out figures (every width's supervised candidate, the graph
        candidates at the width chosen among those), and LapSVM adds the two rows of its
        confirmation (``criterion="cv"``); on the primal solver every row is a
        cross-validation one (``criterion="cv"``, ``squared`` the estimator's own loss); with
        ``n_components`` the linear estimator's table (``rho``, ``gamma_I``; LapSVM's with the
        two rows of its confirmation, as :class:`LinearLapSVM`'s), per candidate width where
        the width is chosen. Empty when nothing was chosen.
    selection_cost_ : dict or None
        What the selection cost beside the fit at the chosen setting: the ``seconds`` and
        ``round_trips`` to the workers spent choosing, and ``fit_seconds`` and
        ``fit_round_trips`` of the rest of the fit (:mod:`dask_ssl.models._selection_cost`;
        the candidate graphs, built before the choice, count in the fit); None when nothing
        was selected. Stored in ``model.json``.
    landmark_indices_ : ndarray of shape (m,) or None
        With ``n_components``: the training rows that are the landmarks (the expansion points).
    n_components_ : int or None
        With ``n_components``: the Nystrom features kept (the rank of ``K_mm``, at most m).
    transduction_ : ndarray of shape (n,)
    objective_, n_iter_, history_, graph_, diagnostics_, fit_seconds_
    """

    _LOSSES = ("squared",)

    def _loss_values(self, F, Y):
        return (Y - F) ** 2

    def _solve_dense(self, K, M, weight, Y, labeled, MK=None) -> dict:
        sol = laprls_direct(K, M, Y, labeled, gamma_A=self.gamma_A, gamma_I=weight, MK=MK)
        return self._dense_attributes(sol, K, M, weight, Y, labeled, bias_in_graph=False)


class LapSVM(_ManifoldClassifier):
    """Laplacian SVM (thesis 2.3.2, Eq 2.13-2.21), multi-class one-vs-rest.

    ``loss="hinge"``: the dual (Eq 2.20-2.21) is solved by scikit-learn's
    ``SVC(kernel="precomputed")`` on ``2 gamma_A Q`` (the Gram of the deformed kernel on the
    labeled rows) with ``C = 1/(2 gamma_A l)``, i.e. box ``0..1/l`` on the thesis' beta; then
    ``alpha = (2 gamma_A I + 2 gamma_I_eff M K)^-1 J^T Y beta`` (Eq 2.19) with one LU for all
    classes, and the bias b from the KKT conditions (libsvm's). ``loss="squared_hinge"``: the
    primal ``(1/l) sum max(0, 1 - y_i f_i)^2 + gamma_A alpha^T K alpha + gamma_I_eff
    f^T M f`` with ``f = K alpha + b`` by Newton steps on the active set with exact line
    search (one system per class column: each has its own active set).

    Parameters
    ----------
    loss : {"squared_hinge", "hinge"}, default "squared_hinge"
        The seeds' V. The default is the primal LapSVM of Melacci and Belkin (JMLR 2011), the
        loss the distributed primal solver takes, so that ``solver="auto"`` scales past the
        dense solve; its bias is inside the graph term. With the thesis' hinge the bias is
        outside it (Eq 2.15): on the normalized Laplacian, whose null space is ``D^1/2 1``,
        not the constants, a free bias then shifts a graph-smooth ``K alpha`` that follows the
        degrees, and on two moons with one label per class it erred on 4.4% of the rows
        (mean of 20 draws) against 1.2% with the squared hinge.
    gamma_A, gamma_I, kernel, kernel_params, n_neighbors, metric, weights, t, symmetrize,
    normalized, p, graph_normalization, solver, tol, max_iter, unlabeled, client, n_blocks,
    search_epsilon, n_components, landmarks, random_state
        As in :class:`LapRLS` (``tol`` is also libsvm's stopping tolerance; on the direct
        solver the "auto" selection scores candidates by LapRLS's leave-one-out errors, which
        are exact and cheap, as a proxy, and confirms a graph candidate with the SVM's own
        loss; the primal solver's cross-validation scores the squared hinge itself). With
        ``loss="hinge"`` the solver is always direct. With
        ``n_components`` the loss must be the squared hinge, and the bias is that of
        :class:`LinearLapSVM`, a constant feature regularized by ``gamma_A`` (``objective_``
        then holds ``gamma_A b^2`` too; the exact squared-hinge bias is unregularized).

    Attributes
    ----------
    As :class:`LapRLS`; ``intercept_`` holds b.
    """

    _LOSSES = ("squared_hinge", "hinge")

    def __init__(self, *, loss="squared_hinge", gamma_A=1e-6, gamma_I="auto", kernel="rbf",
                 kernel_params=None, n_neighbors="auto", metric="euclidean", weights="heat",
                 t=None, symmetrize="max", normalized=True, p="auto", graph_normalization="n2",
                 solver="auto", tol=1e-6, max_iter=200, early_stopping=True, search_epsilon=0.1,
                 n_components=None, landmarks="uniform", unlabeled=-1, client=None,
                 n_blocks=None, random_state=None):
        super().__init__(gamma_A=gamma_A, gamma_I=gamma_I, kernel=kernel,
                         kernel_params=kernel_params, n_neighbors=n_neighbors, metric=metric,
                         weights=weights, t=t, symmetrize=symmetrize, normalized=normalized,
                         p=p, graph_normalization=graph_normalization, solver=solver, tol=tol,
                         max_iter=max_iter, early_stopping=early_stopping,
                         search_epsilon=search_epsilon, n_components=n_components,
                         landmarks=landmarks, unlabeled=unlabeled, client=client,
                         n_blocks=n_blocks, random_state=random_state)
        self.loss = loss

    _parameter_constraints = constraints(__init__, **_OVERRIDES, loss=[StrOptions(set(_LOSSES))])

    def _loss(self) -> str:
        return self.loss

    def _loss_values(self, F, Y):
        margin = np.maximum(0.0, 1.0 - Y * F)
        return margin if self.loss == "hinge" else margin ** 2

    @selecting()
    def _confirm(self, grams, w_supervised, w, M, MK, weight, Y, labeled, selection) -> bool:
        """LapRLS's leave-one-out chose the graph candidate (width ``w``); whether it beats the
        supervised SVM (the supervised candidate LapRLS's leave-one-out prefers, width
        ``w_supervised``) is decided with the SVM's own loss, by :data:`CV_FOLDS`-fold
        cross-validation on the labeled rows (both fits on the same folds; the squared hinge
        of the held-out rows is the paired residual; :func:`._graph_weight.confirm`, shared
        with :class:`LinearLapSVM`). Both rows join ``selection`` with ``criterion="cv"``.

        The supervised fits are those of :meth:`_supervised_held_out`. The graph fits share
        ``MK``, the chosen graph's ``M K``; with the squared hinge they also share one
        factorization (:func:`~dask_ssl.solvers.dense.lapsvm_newton_subsets`)."""
        L = np.flatnonzero(labeled)
        YL = Y[L]
        fold = fold_of(truth_of(YL), min(CV_FOLDS, L.size))
        n_folds = int(fold.max()) + 1
        K = grams[w]
        held_out = [self._supervised_held_out(grams.block(w_supervised, L), YL, fold),
                    np.empty_like(YL)]
        trains = np.zeros((K.shape[0], n_folds), dtype=bool)
        for f in range(n_folds):
            trains[L[fold != f], f] = True
        if self.loss == "squared_hinge":
            graph_fits = lapsvm_newton_subsets(K, M, Y, trains, gamma_A=self.gamma_A,
                                               gamma_I=weight, tol=self.tol,
                                               max_iter=self.max_iter, MK=MK)
        else:
            graph_fits = [lapsvm_dual(K, M, Y * trains[:, [f]], trains[:, f],
                                      gamma_A=self.gamma_A, gamma_I=weight, tol=self.tol, MK=MK)
                          for f in range(n_folds)]
        for f, sol in enumerate(graph_fits):
            held = fold == f
            held_out[1][held] = K[L[held]] @ sol.alpha + sol.intercept
        graph = chosen_row(selection)
        width = {} if len(grams) == 1 else {"gamma": grams.params[w_supervised]["gamma"]}
        candidates = [{**width, "n_neighbors": None, "p": None, "gamma_I": 0.0},
                      {key: graph[key] for key in ("gamma", "n_neighbors", "p", "gamma_I")
                       if key in graph}]
        return confirm(selection, candidates, held_out, YL, self._loss_values,
                       proxy="loo") == 1

    def _solve_dense(self, K, M, weight, Y, labeled, MK=None) -> dict:
        if self.loss == "hinge":
            sol = lapsvm_dual(K, M, Y, labeled, gamma_A=self.gamma_A, gamma_I=weight,
                              tol=self.tol, MK=MK)
            return self._dense_attributes(sol, K, M, weight, Y, labeled, bias_in_graph=False)
        sol = lapsvm_newton(K, M, Y, labeled, gamma_A=self.gamma_A, gamma_I=weight,
                            tol=self.tol, max_iter=self.max_iter, MK=MK)
        return self._dense_attributes(sol, K, M, weight, Y, labeled, bias_in_graph=True)
