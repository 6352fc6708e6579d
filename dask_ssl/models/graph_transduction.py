"""Graph transduction (Sindhwani's thesis, ch. 5): smooth label scores over a kNN graph.

Solves ``(gamma_I M + I_L + mu I_U) F = Ybar`` for all classes at once with block CG on the
workers, ``M = L^p`` the (normalized) graph Laplacian, ``Ybar`` the one-hot labels on labeled rows
and 0 elsewhere. With ``mu = 0`` this is the thesis' graph transduction (the f-step of the slack
method with nu = 0, and the first half of the fully decoupled method); with ``mu = 1``,
``M`` the normalized Laplacian and ``gamma_I = alpha / (1 - alpha)`` it is the fixed point of
scikit-learn's ``LabelSpreading(alpha)`` on the same graph, times ``1 / (1 - alpha)``.

Rows of a connected component without any labeled row have ``Ybar = 0``: their scores are 0 for
every ``mu > 0``, and for ``mu = 0`` the system is singular there (any multiple of the
component's null vector solves it) and 0 is its minimum-norm solution. Such rows get fidelity 1
instead of ``mu``, which leaves every other row's scores unchanged (no edge leaves a component),
makes the system nonsingular and keeps a warm start from carrying old values there: their
scores are 0, their ``label_distributions_`` rows zero.

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

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from ..cluster import get_client
from ..graph.diagnostics import graph_diagnostics, warn_graph
from ..graph.knn import DriverRows, query_knn
from ..graph.weights import LOCAL, Graph, edge_weights, query_widths
from ..linalg.recovery import solve_with_restarts
from ..solvers.graph import solve_graph_system
from ._clone import SharesClient
from ._constraints import POSITIVE, constraints, validate
from ._graph_seam import check_graph_combination, clip_n_neighbors, estimator_graph
from ._input import check_finite_local, fit_input, to_blocks


class GraphTransduction(SharesClient, ClassifierMixin, BaseEstimator):
    """Graph transduction with block CG on a distributed kNN graph.

    Parameters
    ----------
    gamma_I : float, default 1.0
        Weight of the graph term: thesis ch. 5 gamma_I in ``gamma_I/2 f^T M f + sum_l 1/2
        (y_i - f_i)^2`` (no 1/(u+l)^2 factor, as in ch. 5).
    n_neighbors : int, default 10
        k of the kNN graph (the seeds' ``nn``); at most n - 1 on n rows (with a warning).
    metric : {"euclidean", "cosine"}, default "euclidean"
    weights : {"heat", "binary", "cosine"}, default "heat"
        Edge weights: heat kernel ``exp(-d^2/4t)``, 1, or cosine similarity.
    t : float or "local", optional
        Heat-kernel width t; default ``mean(edge length^2) / 4``. ``"local"``: a width per row
        from its k-th neighbour's distance, ``exp(-d_ij^2 / (s_i s_j))`` (local scaling;
        :mod:`dask_ssl.graph.weights`).
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
    unlabeled_weight : float, default 0.0
        mu, the pull of unlabeled scores towards 0 (``mu I_U``); 0 is the thesis method, 1
        reproduces LabelSpreading's fixed point. Components without a labeled row use 1 (see
        the module docstring; their scores are 0 either way).
    class_balance : None, "labeled" or array-like of shape (n_classes,), default None
        None: each row's class is its largest score (the thesis method). ``"labeled"``: the
        unlabeled rows are shared among the classes as the labeled rows are; an array: in
        these shares (``classes_`` order, positive, summing to 1; the S3VMs' ``pos_fraction``
        for two classes). Decisions are then by ``class_weights_ * F`` (see the module
        docstring): ``transduction_``, ``label_distributions_`` and everything predicted.
    preconditioner : {"block", None}, default "block"
        ``"block"``: block-Jacobi preconditioned CG, each worker's rows of the system factored
        where they lie (:mod:`dask_ssl.graph.precond`); with METIS blocks that no edge crosses
        it solves the system in one pass. None: plain CG.
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
        Seeds the kNN indexes.

    Attributes
    ----------
    classes_ : ndarray
    scores_ : ndarray of shape (n, n_classes)
        F, the solution of the system, per training row and class.
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
        Block-CG passes until the last class converged.
    history_ : list of ndarray
        Relative residual per class after each pass.
    graph_ : Graph
        Held on the workers of the fit's client, with the kNN indexes that place new rows. A
        pickle leaves it out and carries the training rows instead (gathered when pickling):
        the unpickled model places new rows by an exact search of them on the driver, which
        is the fit's own search below 5000 rows (``build_knn``'s ``exact_below``) and at
        least as near above.
    diagnostics_ : GraphDiagnostics
    """

    def __init__(self, *, gamma_I=1.0, n_neighbors=10, metric="euclidean", weights="heat",
                 t=None, symmetrize="max", normalized=True, p=1, partition="metis",
                 unlabeled_weight=0.0, class_balance=None, preconditioner="block",
                 tol=1e-6, max_iter=2000,
                 search_epsilon=0.1, unlabeled=-1, client=None, n_blocks=None,
                 random_state=None):
        self.gamma_I = gamma_I
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.weights = weights
        self.t = t
        self.symmetrize = symmetrize
        self.normalized = normalized
        self.p = p
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

    _parameter_constraints = constraints(__init__, gamma_I=[POSITIVE])

    def _check_params(self):
        """Every hyperparameter against its declared constraint, then the graph settings
        together. Runs first in ``fit``, before any work."""
        validate(self)
        check_graph_combination(self)

    def fit(self, X, y=None, *, graph: Graph | None = None, scores_init=None):
        """Build the graph (unless given) and solve for all classes.

        Parameters
        ----------
        X : array, sparse matrix, dask array or RowBlocks, shape (n, d)
        y : array of shape (n,), optional
            Classes, ``unlabeled`` on unlabeled rows; from the blocks' labels when omitted.
        graph : Graph, optional
            A graph built earlier on these rows (e.g. :func:`dask_ssl.graph.io.load_graph`),
            reused instead of a new kNN search.
        scores_init : ndarray of shape (n, n_classes), optional
            Seed for block CG (e.g. last night's ``scores_``).
        """
        self._check_params()
        X, labels = fit_input(self, X, y, graph=graph)
        classes, codes = labels.classes, labels.codes
        n_rows = codes.size
        k = clip_n_neighbors(self.n_neighbors, n_rows)
        if scores_init is not None and np.shape(scores_init) != (n_rows, classes.size):
            raise ValueError(f"scores_init must have shape {(n_rows, classes.size)}, "
                             f"got {np.shape(scores_init)}")
        labeled = codes >= 0
        shares = _class_shares(self.class_balance, codes[labeled], classes.size)
        client = get_client(self.client)
        (graph, diag, F, result), self.restarts_ = solve_with_restarts(
            lambda: self._solve(X, client, graph, k, labeled, codes, classes.size, scores_init),
            what=type(self).__name__)
        if not result.converged.all():
            warnings.warn(f"block CG stopped after {self.max_iter} passes with relative "
                          f"residuals {np.round(result.residual, 8).tolist()} > tol={self.tol}",
                          ConvergenceWarning, stacklevel=2)
        self.classes_ = classes
        self.n_features_in_ = int(X.shape[1])
        self.scores_ = F
        self.class_weights_ = (np.ones(classes.size) if shares is None
                               else balance_weights(F[~labeled], shares))
        weighted = F * self.class_weights_
        self.label_distributions_ = _normalize(weighted)
        self.transduction_ = classes[np.argmax(weighted, axis=1)]
        self.n_neighbors_ = k
        self.n_iter_ = int(result.n_iter.max())
        self.history_ = result.history
        self.graph_ = graph
        # an unpickled model refitted: new rows are placed by the new graph
        self.__dict__.pop("_pickled_search", None)
        self.diagnostics_ = diag
        return self

    def _solve(self, X, client, graph, k, labeled, codes, n_classes, scores_init):
        """Graph (unless given), system and block CG: ``(graph, diagnostics, F, result)``.
        Everything here is on the workers, so a lost worker repeats all of it."""
        if graph is None:
            blocks = to_blocks(X, client, self.n_blocks)
            graph = estimator_graph(self, blocks, k)
        diag = graph_diagnostics(graph)
        warn_graph(diag, labeled)

        n_rows = graph.n_rows
        Ybar = np.zeros((n_rows, n_classes))
        Ybar[np.flatnonzero(labeled), codes[labeled]] = 1.0
        fidelity = np.where(labeled, 1.0, float(self.unlabeled_weight))
        has_label = np.bincount(diag.labels, weights=labeled, minlength=diag.n_components) > 0
        fidelity[~has_label[diag.labels]] = 1.0
        sol = solve_graph_system(graph, fidelity, Ybar, gamma_I=self.gamma_I,
                                 normalized=self.normalized, p=self.p, partition=self.partition,
                                 preconditioner=self.preconditioner, tol=self.tol,
                                 max_iter=self.max_iter, X0=scores_init)
        return graph, diag, sol.F, sol.cg

    def __getstate__(self):
        # graph_ is futures of the fit's client, which do not pickle. What placing new rows
        # reads from it travels as arrays instead: the training rows (gathered now) and the
        # edge weighting (see graph_ in the class docstring).
        state = dict(super().__getstate__())
        graph = state.pop("graph_", None)
        if graph is not None and graph.neighbors is not None:
            widths = graph.local_widths() if graph.t == LOCAL else None
            state["_pickled_search"] = (DriverRows.gather(graph.neighbors), graph.weights,
                                        graph.t, widths)
        return state

    def _search(self):
        """``(neighbors, weights, t, widths)`` placing new rows: the fitted graph's, or after
        unpickling the arrays that stood in for it."""
        graph = self.__dict__.get("graph_")
        if graph is None:
            return self._pickled_search
        widths = graph.local_widths() if graph.t == LOCAL else None
        return graph.neighbors, graph.weights, graph.t, widths

    def _neighbor_scores(self, X):
        check_is_fitted(self, "scores_")
        X = validate_data(self, X, reset=False, accept_sparse="csr", dtype=np.float64,
                          ensure_all_finite=False)
        check_finite_local(X)
        neighbors, weights, t, widths = self._search()
        ind, dist = query_knn(neighbors, X, self.n_neighbors_, self.search_epsilon)
        products = None
        if t == LOCAL:
            products = query_widths(widths, dist)[:, None] * widths[np.maximum(ind, 0)]
        w = edge_weights(dist, weights, t, products)
        w = np.where(np.isfinite(dist), w, 0.0)
        # Far from every training row all heat weights underflow: fall back to a plain mean.
        flat = w.sum(axis=1) <= 0
        w[flat] = np.isfinite(dist[flat])
        w /= w.sum(axis=1, keepdims=True)
        return np.einsum("mk,mkc->mc", w, self.scores_[np.maximum(ind, 0)]) * self.class_weights_

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
