"""Co-Laplacian RLS and SVM (thesis 4.3, L1953-1983): one LapRLS / LapSVM per view, all with the
multi-view graph.

Per view ``s`` (its own kernel ``K_s``, ``gamma_A^(s)``, ``gamma_I^(s)``):

    f_s = argmin (1/l) sum_{labeled} V(y_i, f_s(x_i)) + gamma_A^(s) ||f_s||_{K_s}^2
          + gamma_I^(s) f_s^T M f_s,

with ``M`` the regularizer of the multi-view graph ``W = sum_s a_s W_s``, the views' kNN graphs
combined with weights ``a_s`` (``view_weights``: a convex combination, or the mean). The
Laplacian ``D - W`` is linear in ``W``, so with ``normalized=False, p=1`` ``M`` is the thesis'
``L = (1 - a) L1 + a L2`` (or the mean of the views' Laplacians) exactly; otherwise it is the
normalized Laplacian (to the power ``p``) of the combined graph. The views meet only through
``M``: each view's fit is :class:`~dask_ssl.models.LapRLS` (:class:`~dask_ssl.models.LapSVM`)
on that view's rows with the combined graph given, so the deformed kernel with
``M = (gamma_I_eff / gamma_A) L^p``, both of its solvers (direct and primal) and its
``gamma_I="auto"`` selection (``gamma_I = 0``, the supervised model, a candidate) apply as they
are.

Class cut. The prediction is the views' combined one-vs-rest scores plus one offset per class
(``intercept_``, from ``class_balance``, :mod:`dask_ssl.multiview._balance`): by default only
where a view's graph term stands at the seeds' setting because the labels were too few to choose
it, the case in which the largest score can name one class for most rows (as for
:class:`~dask_ssl.multiview.CoMR`); the views' learners are left as fitted.

Selection. A view whose ``gamma_I`` is ``"auto"`` chooses on the labeled rows among the
multi-view graph and its own graph alone (the single-view LapRLS / LapSVM, the thesis' ``alpha =
0`` for view 1), each with every ``gamma_I`` candidate, ``gamma_I = 0`` (the supervised model)
first: LapRLS's exact leave-one-out (the primal solver's cross-validation on that solver) and
the rule of :mod:`dask_ssl.models._selection`, the learner given both graphs by name
(:meth:`LapRLS.fit <dask_ssl.models.LapRLS.fit>`). The multi-view graph comes first, so it
stands where the labels are too few to choose.

At scale. The views given as row blocks (:class:`~dask_ssl.multiview.blocks.MultiViewBlocks`,
or a list of RowBlocks), each view's kNN graph is built on the workers and nothing ``n x n`` is
formed where each view's learner works in feature space: with ``n_components`` the LapRLS /
LapSVM of that view fits on Nystrom features (:mod:`dask_ssl.models._nystrom_manifold`), and a
view with ``kernel="linear"`` and no ``n_components`` is fitted by
:class:`~dask_ssl.models.LinearLapRLS` (:class:`~dask_ssl.models.LinearLapSVM`) on its rows,
without a bias (LapRLS's model, Eq 2.9; ``gamma_A``, ``gamma_I`` and ``graph_normalization``
mean the same there), its Gram or CG path chosen by the view's width. Such a learner chooses
``gamma_I`` on the multi-view graph alone (the ``"own"`` graph is not a candidate).
"""

from __future__ import annotations

import copy
import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import InvalidParameterError, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..cluster import get_client
from ..graph.weights import Graph
from ..models._clone import SharesClient
from ..models._constraints import AUTO, COUNT, NON_NEGATIVE, SHARED, constraints, validate
from ..models._graph_seam import clip_n_neighbors, estimator_graph
from ..models._input import encode_labels, to_blocks
from ..models._pickle import PicklesWithoutGraph
from ..models._selection import enough_labels
from ..models._selection_cost import measured_fit
from ..models.graph_transduction import _class_shares, _is_auto
from ..models.linear_manifold import LinearLapRLS, LinearLapSVM
from ..models.manifold import SOLVERS, LapRLS, LapSVM
from . import _serving
from ._balance import balance_offsets
from ._per_view import (PER_VIEW, CombinedViews, check_combine, combined, fit_labels,
                        labels_of, per_view, squeeze_columns)
from .blocks import as_multiview
from .views import Views, check_views, views_at_predict

#: Where the Co-Laplacian estimators widen the shared constraints: per-view values (gamma_A,
#: gamma_I, the kernel), LapRLS's "auto" power and its solvers, CoMR's "auto" class cut.
_OVERRIDES = dict(PER_VIEW, gamma_I=[NON_NEGATIVE, AUTO, "array-like"], p=[COUNT, AUTO],
                  solver=[StrOptions(set(SOLVERS))], n_components=[COUNT, None],
                  class_balance=[*SHARED["class_balance"], AUTO])
#: Names of a view's candidate graphs (``graph_names_``).
MULTIVIEW, OWN = "multiview", "own"
#: The parameters handed to each view's learner as they are.
_SHARED_WITH_LEARNER = ("metric", "weights", "t", "symmetrize", "normalized", "p",
                        "graph_normalization", "solver", "tol", "max_iter", "early_stopping",
                        "search_epsilon", "unlabeled", "client", "n_blocks", "random_state",
                        "n_components", "landmarks")
#: What a linear learner (a view at scale with ``kernel="linear"``) takes of the same.
_SHARED_WITH_LINEAR = ("metric", "weights", "t", "symmetrize", "normalized",
                       "graph_normalization", "search_epsilon", "tol", "max_iter",
                       "unlabeled", "client", "n_blocks", "random_state")


def view_weights_of(view_weights, n_views: int) -> np.ndarray:
    """The views' graph weights ``a_s``: the mean for None, else non-negative weights, one per
    view, scaled to sum to 1 (a convex combination)."""
    if view_weights is None:
        return np.full(n_views, 1.0 / n_views)
    a = np.asarray(view_weights, dtype=float).ravel() if not np.isscalar(view_weights) \
        else np.array([view_weights], dtype=float)
    if a.size != n_views:
        raise InvalidParameterError(f"view_weights has {a.size} value(s); one per view is "
                                    f"needed: the fit has {n_views} view(s)")
    if not np.all(np.isfinite(a)) or (a < 0).any() or not a.sum() > 0:
        raise InvalidParameterError(f"view_weights must be finite, >= 0 and not all 0, got "
                                    f"{a.tolist()}")
    return a / a.sum()


def multiview_graph(graphs: list, weights, *, client, n_blocks=None) -> Graph:
    """The graph ``W = sum_s a_s W_s`` of the views' graphs (on the same rows). A single view
    with weight (or the same graph for every view) is returned as it is."""
    used = [(a, g) for a, g in zip(weights, graphs) if a > 0]
    if len({id(g) for _, g in used}) == 1:
        return used[0][1]
    W = sum(a * g.to_scipy() for a, g in used)
    W = sp.csr_matrix((W + W.T) * 0.5)  # exactly symmetric: the sum may differ in the last bit
    return Graph.from_scipy(W, client=client, n_blocks=n_blocks)


class _CoLaplacian(SharesClient, PicklesWithoutGraph, CombinedViews, ClassifierMixin,
                   BaseEstimator):
    """Shared fit / predict of CoLapRLS and CoLapSVM (see the subclasses)."""

    _LEARNER = LapRLS
    _LINEAR = LinearLapRLS

    def __init__(self, *, gamma_A=1e-6, gamma_I="auto", view_weights=None, kernel="rbf",
                 kernel_params=None, n_neighbors=10, metric="euclidean", weights="heat", t=None,
                 symmetrize="max", normalized=True, p="auto", graph_normalization="n2",
                 solver="auto", tol=1e-6, max_iter=200, early_stopping=True,
                 search_epsilon=0.1, combine="mean", class_balance="auto", n_components=None,
                 landmarks="uniform", unlabeled=-1, client=None, n_blocks=None,
                 random_state=None):
        self.gamma_A = gamma_A
        self.gamma_I = gamma_I
        self.view_weights = view_weights
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
        self.combine = combine
        self.class_balance = class_balance
        self.n_components = n_components
        self.landmarks = landmarks
        self.unlabeled = unlabeled
        self.client = client
        self.n_blocks = n_blocks
        self.random_state = random_state

    _parameter_constraints = constraints(__init__, **_OVERRIDES)

    def __getstate__(self):
        # the views' learners were given this estimator's client: a pickle leaves it out of
        # them (as it leaves out their graphs), so that ``est.client = None`` is all a caller
        # does before pickling, as for LapRLS
        state = super().__getstate__()
        if "estimators_" in state:
            state["estimators_"] = [copy.copy(est) for est in state["estimators_"]]
            for est in state["estimators_"]:
                est.client = None
        return state

    def _learner_params(self) -> dict:
        return {name: getattr(self, name) for name in _SHARED_WITH_LEARNER}

    def _linear_learner(self, gamma_A, gamma_I):
        """A view's learner at scale with the linear kernel (module docstring)."""
        return self._LINEAR(gamma_A=gamma_A, gamma_I=gamma_I, n_neighbors=self.n_neighbors,
                            p=1 if self.p == "auto" else self.p, fit_intercept=False,
                            **{name: getattr(self, name) for name in _SHARED_WITH_LINEAR})

    def _learners(self, n_views: int, at_scale: bool = False) -> list:
        """One unfitted learner per view, its parameters checked (before any work)."""
        values = {name: per_view(getattr(self, name), n_views, name)
                  for name in ("gamma_A", "gamma_I", "kernel", "kernel_params")}
        learners = []
        for s in range(n_views):
            if at_scale and values["kernel"][s] == "linear" and self.n_components is None:
                learner = self._linear_learner(values["gamma_A"][s], values["gamma_I"][s])
                try:
                    learner._check_params()
                except ValueError as exc:
                    raise type(exc)(f"view {s}: {exc}") from None
                learners.append(learner)
                continue
            learner = self._LEARNER(n_neighbors=self.n_neighbors, **self._learner_params(),
                                    **{name: v[s] for name, v in values.items()})
            try:
                learner._check_params()
            except ValueError as exc:
                raise type(exc)(f"view {s}: {exc}") from None
            learners.append(learner)
        return learners

    def _check(self, Xs, y, graphs):
        validate(self)
        mv = as_multiview(Xs)
        views = check_views(Xs, min_views=1) if mv is None else Views(list(mv.views), mv.names)
        m = len(views.arrays)
        learners = self._learners(m, at_scale=mv is not None)
        weights = view_weights_of(self.view_weights, m)
        combine = check_combine(self.combine, views.names, m)
        if y is None and mv is not None and mv.labels is not None:
            # the blocks' own labels and marker (0 for svmlight files): the learners get the
            # class codes, -1 unlabeled, in the same order as the classes
            labels = encode_labels(mv.gather_labels(), views.n_rows, mv.unlabeled)
        else:
            labels = fit_labels(self, y, views.n_rows)
        if not _is_auto(self.class_balance):  # the shares asked for, against the classes
            classes, codes = labels
            _class_shares(self.class_balance, codes[codes >= 0], classes.size)
        if graphs is not None:
            if isinstance(graphs, dict):
                if views.names is None or set(graphs) != set(views.names):
                    raise ValueError(f"graphs by name need views by the same names; got "
                                     f"{list(graphs)} for views {views.names}")
                graphs = [graphs[name] for name in views.names]
            graphs = list(graphs)
            if len(graphs) != m:
                raise ValueError(f"graphs holds {len(graphs)} graph(s); one per view is "
                                 f"needed ({m})")
            for s, g in enumerate(graphs):
                if not isinstance(g, Graph):
                    raise ValueError(f"graphs[{s}] must be a Graph, got {type(g).__name__}")
                if g.n_rows != views.n_rows:
                    raise ValueError(f"graphs[{s}] has {g.n_rows} rows but the views have "
                                     f"{views.n_rows}")
        return views, learners, weights, combine, labels, graphs

    @measured_fit
    def fit(self, Xs, y=None, *, graphs=None):
        """Fit one learner per view with the multi-view graph.

        Parameters
        ----------
        Xs : list or dict of arrays or sparse matrices (each of shape (n, d_s)), MultiViewBlocks, or list or dict of RowBlocks
            The views of the same rows (one view is manifold regularization alone); row
            blocks keep them on the workers (module docstring, "At scale").
        y : array of shape (n,), optional
            Classes, ``unlabeled`` on unlabeled rows; for a MultiViewBlocks carrying labels it
            may be omitted (their own marker then: 0 for svmlight files).
        graphs : list (or dict by view name) of Graph, optional
            Each view's graph on these rows, used instead of a kNN search in that view.
        """
        t0 = time.perf_counter()
        views, learners, weights, combine, (classes, codes), graphs = self._check(Xs, y, graphs)
        if y is None:  # the blocks' labels: their codes, -1 unlabeled (see _check)
            y = codes
            for learner in learners:
                learner.set_params(unlabeled=-1)
        client = get_client(self.client)
        if graphs is None:
            k = clip_n_neighbors(self.n_neighbors, views.n_rows)
            graphs = [estimator_graph(self, to_blocks(X, client, self.n_blocks), k)
                      if a > 0 or learner.gamma_I == "auto" else None
                      for X, a, learner in zip(views.arrays, weights, learners)]
        graph = multiview_graph(graphs, weights, client=client, n_blocks=self.n_blocks)
        for learner, X, own in zip(learners, views.arrays, graphs):
            if isinstance(learner, LinearLapRLS | LinearLapSVM):
                learner.fit(X, y, graph=graph)
            elif learner.gamma_I == "auto" and own is not graph:
                learner.fit(X, y, graph={MULTIVIEW: graph, OWN: own})
            else:
                learner.fit(X, y, graph=graph)
        self.estimators_ = learners
        self.graph_ = graph
        self.graph_names_ = [getattr(est, "graph_name_", None) or MULTIVIEW for est in learners]
        self.view_weights_ = weights
        self.gamma_I_ = np.array([est.gamma_I_ for est in learners])
        self.selection_ = [est.selection_ for est in learners]
        self.p_ = [getattr(est, "p_", getattr(est, "p", None)) for est in learners]
        self.classes_ = classes
        self.combine_ = combine
        self.view_names_ = views.names
        self.view_features_ = views.n_features
        labeled = codes >= 0
        self.n_labeled_ = int(labeled.sum())
        F = combined([est.decision_function(X) for est, X in zip(learners, views.arrays)],
                     combine)
        # "auto": the cut only where an unchecked graph term shapes the scores (see the
        # class_balance docstring)
        self.class_balance_ = (
            ("labeled" if self._unchecked_graph_term(codes[labeled]) else None)
            if _is_auto(self.class_balance) else self.class_balance)
        shares = _class_shares(self.class_balance_, codes[labeled], classes.size)
        F = np.asarray(F, dtype=float).reshape(len(codes), -1)
        self.intercept_ = (np.zeros(F.shape[1]) if shares is None
                           else -balance_offsets(F[~labeled], shares))
        self.transduction_ = labels_of(classes, squeeze_columns(F + self.intercept_))
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _unchecked_graph_term(self, labeled_codes) -> bool:
        """Whether a view the prediction reads has a graph term (``gamma_I_ > 0``) whose
        setting was to be chosen (``gamma_I`` or ``p`` "auto") and the labels
        (``labeled_codes``) were too few to check: the seeds' setting stands with a
        :class:`~dask_ssl.models._selection.SelectionWarning`."""
        if enough_labels(labeled_codes):
            return False
        read = self.estimators_ if self.combine_ == "mean" else [self.estimators_[self.combine_]]
        return any(est.gamma_I_ > 0 and (_is_auto(est.gamma_I) or _is_auto(est.p))
                   for est in read)

    def decision_function(self, Xs):
        """The prediction's scores: the views' combined (``combine``) plus the class offsets
        ``intercept_`` of ``class_balance``; shape (m,) for two classes (positive
        ``classes_[1]``), (m, n_classes) otherwise."""
        S = super().decision_function(Xs)
        return S + (self.intercept_[0] if np.ndim(S) == 1 else self.intercept_)

    def view_decision_functions(self, Xs) -> list:
        """Each view's ``f_s(x)`` on new rows (views as at fit: a list in order, or a dict by
        name): one array per view, shape (m,) for two classes, (m, n_classes) otherwise."""
        check_is_fitted(self, "estimators_")
        mv = as_multiview(Xs)
        if mv is not None:
            if mv.n_features != tuple(self.view_features_):
                raise ValueError(f"the views have {mv.n_features} features; the model was "
                                 f"fitted with {tuple(self.view_features_)}")
            arrays = mv.views
        else:
            arrays = views_at_predict(Xs, self.view_names_, self.view_features_).arrays
        return [est.decision_function(X) for est, X in zip(self.estimators_, arrays)]

    # checks before any data, and the model directory (see dask_ssl.multiview._serving) -----
    def _check_params(self) -> None:
        """The parameters alone, before any data: their constraints, and each view's learner
        (as many views as a per-view list gives, else one)."""
        validate(self)
        lists = [len(getattr(self, name)) for name in ("gamma_A", "gamma_I", "kernel",
                                                       "kernel_params")
                 if isinstance(getattr(self, name), (list, tuple))]
        self._learners(lists[0] if lists else 1)

    def _fitted_info(self) -> dict:
        return _serving.colap_info(self)

    def _fitted_arrays(self) -> dict:
        return _serving.colap_arrays(self)

    def _restore(self, arrays: dict, doc: dict) -> None:
        _serving.colap_restore(self, arrays, doc)


_PARAMETERS = """
    gamma_A : float or list of float, default 1e-6
        gamma_A^(s), each view's ambient-norm weight ``||f_s||_{K_s}^2`` (thesis L1965), one
        value for every view or a list with one per view; as in :class:`LapRLS`.
    gamma_I : float, "auto" or list, default "auto"
        gamma_I^(s), each view's weight of the multi-view graph term ``f_s^T M f_s`` before
        ``graph_normalization``, for every view or one per view; as in :class:`LapRLS`.
        ``"auto"`` chooses it per view on the labeled rows together with the graph: the
        multi-view one or the view's own (the single-view model), ``gamma_I = 0`` (the
        supervised model) always a candidate (:mod:`dask_ssl.multiview.colap`); the table is
        in ``selection_[s]``.
    view_weights : array-like or None, default None
        a_s, the views' weights in the multi-view graph ``W = sum_s a_s W_s`` (scaled to sum
        to 1: the thesis' convex combination ``(1 - alpha, alpha)``); None: the mean of the
        views' graphs (the thesis' Co-LapRLS2). ``(1, 0)`` fits view 1 with its own graph alone.
    kernel, kernel_params
        K^(s) per view: one value for every view or a list with one per view; as in
        :class:`LapRLS` (the default RBF width from each view's rows).
    n_neighbors : int, default 10
        nn, k of each view's kNN graph (in that view's features).
    metric, weights, t, symmetrize, search_epsilon, random_state
        Each view's kNN graph, as in :class:`LapRLS`.
    normalized, p, graph_normalization
        The regularizer ``M`` of the multi-view graph (``L^p``, normalized or ``D - W``), as in
        :class:`LapRLS`; with ``normalized=False, p=1`` ``M`` is the weighted sum of the views'
        Laplacians.
    solver, tol, max_iter, early_stopping
        Each view's solver, as in :class:`LapRLS`: ``"direct"`` (the deformed kernel's dense
        solve) or ``"primal"`` (on the workers). A linear learner at scale takes ``tol`` and
        ``max_iter`` as :class:`LinearLapRLS` (:class:`LinearLapSVM`) does.
    n_components, landmarks
        Nystrom landmarks per view and how they are drawn, as in :class:`LapRLS`: each view's
        learner fits in Nystrom feature space (at scale, :mod:`dask_ssl.multiview.colap`).
        None: the exact expansion, or for views held as row blocks with ``kernel="linear"``
        :class:`LinearLapRLS` on the rows.
    combine : "mean", int or str, default "mean"
        The prediction: the mean of the views' outputs, or one view's (index, or name for
        views given as a dict).
    class_balance : "auto", "labeled", None or array-like of shape (n_classes,), default "auto"
        Shares the unlabeled rows are cut to, as in :class:`~dask_ssl.multiview.CoMR`: class
        offsets ``b`` (``intercept_``) on the combined scores, set so that ``argmax_c
        f_c - b_c`` (the sign with two classes) gives the unlabeled training rows the classes
        in these shares (``"labeled"``: the labeled rows' shares; an array: in ``classes_``
        order, positive, summing to 1; :func:`dask_ssl.multiview._balance.balance_offsets`).
        Why: with few labels a view's graph term at the seeds' ``gamma_I`` puts most of each
        one-vs-rest column's outputs along the graph's smoothest vector with a coefficient set
        by where the labeled rows sit, not by the class, and the largest score can name one
        class for most rows; the cut keeps the columns' differences between rows, which carry
        the class. None: no offset. ``"auto"``: ``"labeled"`` when a view the prediction reads
        has a graph term whose setting (``gamma_I`` or ``p`` "auto") the labels were too few
        to check (it stands with a ``SelectionWarning``), else None: the supervised models
        have no such common part, and a setting the selection chose already decides well on
        the labeled rows, where the labeled shares (equal when labels are drawn per class)
        would be forced on unbalanced classes. The value used is ``class_balance_``.
    unlabeled : scalar, default -1
        Marker of unlabeled rows in ``y``.
    client, n_blocks
        Cluster and row blocks of the kNN searches and the primal solver.

    Attributes
    ----------
    estimators_ : list
        The fitted learner of each view (its ``dual_coef_``, ``expansion_points_``,
        ``kernel_params_``, ``gamma_I_``, ``selection_``; a :class:`LinearLapRLS`'s
        ``coef_`` for a linear view at scale).
    classes_ : ndarray
    graph_ : Graph
        The multi-view graph.
    graph_names_ : list of str
        Per view, the graph its learner used: ``"multiview"``, or ``"own"`` where the
        selection chose the view's own graph (its learner's ``graph_``).
    view_weights_ : ndarray of shape (n_views,)
        The a_s used (summing to 1).
    gamma_I_ : ndarray of shape (n_views,)
        Each view's gamma_I used.
    p_ : list of int
        Each view's Laplacian power used.
    selection_ : list of list of dict
        Each view's selection table (empty where nothing was chosen).
    selection_cost_ : dict or None
        As :class:`~dask_ssl.models.LapRLS`'s, summed over the views' selections.
    class_balance_ : "labeled", None or array-like
        The ``class_balance`` used (``"auto"`` resolved).
    intercept_ : ndarray of shape (n_columns,)
        ``-b``, the class offsets of ``class_balance`` added to the combined scores (zero with
        None; one column for two classes).
    combine_, view_names_, view_features_, n_labeled_, transduction_, fit_seconds_
        As in :class:`~dask_ssl.multiview.CoRLS`.
"""


class CoLapRLS(_CoLaplacian):
    __doc__ = """Co-Laplacian RLS (thesis 4.3, L1953-1983): a :class:`~dask_ssl.models.LapRLS`
    per view with the multi-view graph (:mod:`dask_ssl.multiview.colap`), multi-class
    one-vs-rest.

    Parameters
    ----------""" + _PARAMETERS

    _LEARNER = LapRLS


class CoLapSVM(_CoLaplacian):
    __doc__ = """Co-Laplacian SVM (thesis 4.3, L1953-1983): a :class:`~dask_ssl.models.LapSVM`
    per view with the multi-view graph (:mod:`dask_ssl.multiview.colap`), multi-class
    one-vs-rest.

    Parameters
    ----------
    loss : {"squared_hinge", "hinge"}, default "squared_hinge"
        The seeds' V, as in :class:`~dask_ssl.models.LapSVM` (the hinge: direct solver
        only).""" + _PARAMETERS

    _LEARNER = LapSVM
    _LINEAR = LinearLapSVM

    def __init__(self, *, loss="squared_hinge", gamma_A=1e-6, gamma_I="auto",
                 view_weights=None, kernel="rbf", kernel_params=None, n_neighbors=10,
                 metric="euclidean", weights="heat", t=None, symmetrize="max", normalized=True,
                 p="auto", graph_normalization="n2", solver="auto", tol=1e-6, max_iter=200,
                 early_stopping=True, search_epsilon=0.1, combine="mean", class_balance="auto",
                 n_components=None, landmarks="uniform", unlabeled=-1, client=None,
                 n_blocks=None, random_state=None):
        super().__init__(gamma_A=gamma_A, gamma_I=gamma_I, view_weights=view_weights,
                         kernel=kernel, kernel_params=kernel_params, n_neighbors=n_neighbors,
                         metric=metric, weights=weights, t=t, symmetrize=symmetrize,
                         normalized=normalized, p=p, graph_normalization=graph_normalization,
                         solver=solver, tol=tol, max_iter=max_iter,
                         early_stopping=early_stopping, search_epsilon=search_epsilon,
                         combine=combine, class_balance=class_balance,
                         n_components=n_components, landmarks=landmarks,
                         unlabeled=unlabeled, client=client, n_blocks=n_blocks,
                         random_state=random_state)
        self.loss = loss

    _parameter_constraints = constraints(__init__, **_OVERRIDES,
                                         loss=[StrOptions(set(LapSVM._LOSSES))])

    def _learner_params(self) -> dict:
        return {**super()._learner_params(), "loss": self.loss}
