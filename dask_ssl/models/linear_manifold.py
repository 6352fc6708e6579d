"""Linear manifold regularization on row blocks: Laplacian RLS and Laplacian L2-SVM, linear.

Both minimize, over ``w`` (bias last, a regularized constant feature as in :class:`RLS` and
:class:`L2SVM`) with outputs ``o = [X, 1] w`` on all ``n`` rows,

    gamma_A/2 ||w||^2 + 1/(2l) sum_{labeled} c_i V(y_i, o_i) + gamma_I_eff/2 o^T M o,

``M = L^p`` a (normalized) Laplacian of a kNN graph on the same rows, ``V`` the squared loss
(LapRLS) or the squared hinge (LapSVM); ``c_i = 1`` unless a sample weight is given. This is
half the thesis' ch. 2 objective ``(1/l) sum V + gamma_A ||w||^2 + gamma_I_eff o^T M o``, and
``gamma_I_eff`` is the thesis' too: ``gamma_I`` after ``graph_normalization``
(:func:`~dask_ssl.kernels.deformed.graph_term_weight`; by default ``gamma_I / (u + l)^2``), as
in :class:`LapRLS`. The normal equations of the squared loss, multiplied by ``l``, are the
linear paper's Eq 3 with its ``gamma_I`` read as ``gamma_I_eff``,

    (X_l^T X_l + gamma_A l I + gamma_I_eff l X^T M X) w = X_l^T Y

(the paper has no ``1/(u+l)^2`` factor: ``graph_normalization="none"``; ALGORITHMS.md 4.4,
7.1); ``gamma_I = 0`` is :class:`RLS` / :class:`L2SVM` with the same ``gamma_A``. The graph
term acts on the outputs, bias included; for the unnormalized ``L`` (``L 1 = 0``) that is the
paper's ``w^T X^T L X w``.

Small d: ``X^T M X`` is formed once on the workers (:meth:`DataGraph.gram`, ``p + 1`` round
trips) and every system is solved exactly by Cholesky. Large d: conjugate gradients whose
product ``X_l^T C X_l z + gamma_A z + gamma_I_eff X^T M X z`` costs ``p + 1`` round trips
(:meth:`DataGraph.product`). With ``kernel`` set, the rows are first mapped to Nystrom features
(:class:`~dask_ssl.kernels.nystrom.NystromFeatures`) and the graph is built on the input rows:
kernel LapRLS / LapSVM in feature space.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from ..graph.data_graph import DataGraph
from ..graph.laplacian import LaplacianOperator
from ..graph.weights import Graph
from ..linalg.block_cg import LocalSystem, block_cg
from ..solvers.mfn import MFNSolver, RidgeTerm
from ._constraints import KERNELS, constraints
from ._graph_seam import (check_graph_combination, clip_n_neighbors, estimator_graph,
                          graph_term_weight_on)
from ._graph_weight import (SEED_GAMMA_I, confirm, cv_gamma_I, deformed_gram, loo_gamma_I,
                            row_space_deformed_gram, row_space_gamma_I, squared_hinge,
                            svm_held_out, truth_of)
from ._selection import CV_FOLDS, chosen_row, enough_labels, fold_of, warn_unchecked
from ._selection_cost import selecting
from ._input import target_columns
from ._pickle import PicklesWithoutGraph
from .base import GRAM_MAX_FEATURES, LINEAR_SOLVERS, LinearSSLClassifier
from .l2svm import hinge_costs, init_blocks


def _fingerprint(product, R) -> dict:
    """What identifies a system ``A W = R`` for its checkpoint: the right-hand side and ``A``
    times a fixed probe (one more product), i.e. the data, the graph, the labels and costs and
    the parameters of the system."""
    probe = np.random.default_rng(0).standard_normal((R.shape[0], 1))
    return {"rhs": R, "probe": product(probe)}


@dataclass
class _GraphFit:
    """What one fit of a linear graph estimator holds on the workers: the feature rows lined up
    with the graph's (:class:`~dask_ssl.graph.data_graph.DataGraph`) and its Laplacian
    operator; the graph Gram ``H`` on the small-d path; CG counts of the LapSVM solves. A
    caller that formed them already for the fit's labels (:meth:`_LinearManifold.fit_prepared`)
    also hands over the labeled loss's Gram ``G`` and right-hand side ``R``."""

    dg: DataGraph
    op: LaplacianOperator
    trips0: int
    H: np.ndarray | None = None
    G: np.ndarray | None = None
    R: np.ndarray | None = None
    n_cg: list = field(default_factory=list)
    cg_trips: int = 0
    cg_products: int = 0


class _LinearManifold(PicklesWithoutGraph, LinearSSLClassifier):
    """What LinearLapRLS and LinearLapSVM share: parameters, the graph, the lined-up rows."""

    #: With every row labeled the graph term still shapes w: no fallback to the plain L2-SVM.
    _supervised_fallback = False

    def __init__(self, *, gamma_A=1e-3, gamma_I="auto", n_neighbors=10, metric="euclidean",
                 weights="heat", t=None, symmetrize="max", normalized=True, p=1,
                 graph_normalization="n2", partition=None, search_epsilon=0.1, kernel=None,
                 kernel_params=None, n_components=100, landmarks="uniform", tol=1e-6,
                 max_iter=1000, fit_intercept=True, solver="auto", unlabeled=-1, client=None,
                 n_blocks=None, random_state=None, checkpoint=None):
        self.gamma_A = gamma_A
        self.gamma_I = gamma_I
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.weights = weights
        self.t = t
        self.symmetrize = symmetrize
        self.normalized = normalized
        self.p = p
        self.graph_normalization = graph_normalization
        self.partition = partition
        self.search_epsilon = search_epsilon
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_components = n_components
        self.landmarks = landmarks
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.unlabeled = unlabeled
        self.client = client
        self.n_blocks = n_blocks
        self.random_state = random_state
        self.checkpoint = checkpoint

    _parameter_constraints = constraints(
        __init__, solver=[LINEAR_SOLVERS],
        kernel=[KERNELS, callable, None])

    def _check_params(self) -> None:
        super()._check_params()
        check_graph_combination(self)

    def fit(self, X, y=None, *, graph: Graph | None = None, coef_init=None, resume=False):
        """Build the kNN graph on the rows of ``X`` (unless ``graph`` is given) and fit.

        There is no ``sample_weight``. In scikit-learn a weight of m means the row repeated m
        times, and a repeated row here is m nodes of the kNN graph: its copies take each
        other's neighbour slots and those of the rows around them, add edges of length 0 to
        the heat width's mean and to the degrees of the normalized Laplacian, and a row of
        weight 0 still shapes its neighbours' lists. No weight on the labeled loss equals
        that, so the estimator does not claim one (as scikit-learn's own graph estimators,
        ``LabelSpreading`` and ``KNeighborsClassifier``, take none).

        Parameters
        ----------
        X : array, sparse matrix, dask array or RowBlocks, shape (n, d)
        y : array of shape (n,), optional
            Classes, ``unlabeled`` on unlabeled rows; from the blocks' labels when omitted.
        graph : Graph, optional
            A graph built earlier on these rows (e.g. :func:`dask_ssl.graph.io.load_graph`).
            Without it, the graph is built with ``n_neighbors``, at most n - 1 on n rows
            (with a warning).
        coef_init, resume
            As in :meth:`LinearSSLClassifier.fit`.
        """
        self._check_params()
        return self._fit(X, y, graph=graph, coef_init=coef_init, resume=resume)

    def _gram_path(self, blocks) -> bool:
        return self.solver == "gram" or (self.solver == "auto"
                                         and blocks.n_features <= GRAM_MAX_FEATURES)

    @staticmethod
    def _set_targets(dg, codes, targets, costs):
        """Keep the labeled costs ``c`` and the +1/-1 target columns ``Y`` (0 on unlabeled rows)
        beside the data blocks ``dg``; returns ``(c, Y)``."""
        labeled = codes >= 0
        Y = target_columns(codes, targets)
        c = np.where(labeled, costs, 0.0)
        dg.set_rows("c", c)
        dg.set_rows("y", Y)
        return c, Y

    def _graph_weight(self, dg, G=None, H=None) -> float:
        """``gamma_I_eff``: of ``gamma_I``, or with "auto" of its choice (:mod:`._graph_weight`)
        after :meth:`_set_targets`: leave-one-out from the Gram matrices ``G`` (labeled loss)
        and ``H`` (graph term), or without them (CG path) from the rows' kernel where the rows
        are fewer than the features, else cross-validation by block CG. With
        too few labels to tell (:func:`._selection.enough_labels`) "auto" is the seeds'
        :data:`SEED_GAMMA_I`, with a warning. Sets ``gamma_I_`` (in the units of ``gamma_I``),
        ``gamma_I_effective_`` and ``selection_``."""
        self.selection_ = []
        gamma_I = self.gamma_I
        if gamma_I == "auto":
            sparse = G is None
            Xl, cl, Yl = dg.rows_where("c", "y", sparse=sparse)
            if enough_labels(truth_of(Yl)):
                return self._chosen_weight(dg, G, H, Xl, cl, Yl)
            warn_unchecked(self, "gamma_I")
            gamma_I = SEED_GAMMA_I
        self.gamma_I_ = float(gamma_I)
        self.gamma_I_effective_ = graph_term_weight_on(self, self.graph_, self.gamma_I_)
        return self.gamma_I_effective_

    @selecting()
    def _chosen_weight(self, dg, G, H, Xl, cl, Yl) -> float:
        """``gamma_I_eff`` chosen among the shares of :mod:`._graph_weight` on the labeled rows
        ``Xl`` (costs ``cl``, targets ``Yl``): by leave-one-out with the Gram matrices or, with
        fewer rows than features, the ``n x n`` kernel of the rows; by cross-validation
        otherwise (CG path)."""
        gamma_A = float(self.gamma_A)
        local = dg.local_kernel("c") if G is None and dg.blocks.n_rows < dg.dim else None
        if G is not None:
            effective, selection = loo_gamma_I(G, H, Xl, cl, Yl, gamma_A)
            gram, proxy = functools.partial(deformed_gram, Xl, gamma_A, H=H), "loo"
        elif local is not None:
            effective, selection = row_space_gamma_I(*local, cl, Yl, gamma_A)
            gram, proxy = functools.partial(row_space_deformed_gram, *local, gamma_A), "loo"
        else:
            # a few hundred rows: the many-column products run on the driver, not as round trips
            graph_product = dg.local_product() or (lambda P: dg.product(P, gamma_I=1.0))
            seed = self.random_state if isinstance(self.random_state, (int, np.integer)) else 0
            effective, selection = cv_gamma_I(graph_product, Xl, cl, Yl, gamma_A,
                                              maxiter=self.max_iter, seed=int(seed))
            gram = functools.partial(deformed_gram, Xl, gamma_A, graph_product=graph_product,
                                     maxiter=self.max_iter)
            proxy = "cv-squared"
        if effective > 0 and selection[0]["gamma_I"] == 0:
            effective = self._confirm(effective, selection, cl, Yl, gram, proxy)
        # the shares weigh the graph term against the loss whatever the normalization: the
        # choice is the coefficient itself, reported in the units of gamma_I
        unit = graph_term_weight_on(self, self.graph_, 1.0)
        self.gamma_I_ = effective / unit
        self.gamma_I_effective_ = effective
        self.selection_ = [{**row, "gamma_I": row["gamma_I"] / unit} for row in selection]
        return effective

    def _confirm(self, effective, selection, cl, Yl, gram, proxy: str) -> float:
        """``gamma_I_eff`` after LinearLapRLS's choice of the graph share ``effective`` is
        checked with this estimator's own loss; LinearLapRLS's is that loss (LinearLapSVM
        overrides)."""
        return effective

    def fit_prepared(self, prepared: _GraphFit, features, codes, graph: Graph):
        """:meth:`fit` on ``features``, already lined up with ``graph`` in ``prepared`` (its
        DataGraph and Laplacian operator, and on the Gram path ``G``, ``R`` and ``H`` formed
        with the labels ``codes`` at unit sample weights): the fit forms none of them again.
        ``prepared`` is this fit's from then on: freed on the workers when it ends, whatever
        happens. A fit repeated after a lost worker builds its own from ``features`` and
        ``graph``, as :meth:`fit` does."""
        self._check_params()
        self._handed = prepared
        try:
            return self._fit(features, codes, graph=graph)
        finally:
            if self.__dict__.pop("_handed", None) is not None:  # stopped before taking them
                prepared.dg.close()
                prepared.op.close()

    def _prepare(self, blocks, features, client, graph):
        handed = self.__dict__.pop("_handed", None)
        if handed is not None:
            self.graph_seconds_, self.graph_, self.rows_moved_ = 0.0, graph, handed.dg.moved
            handed.trips0 = handed.dg.blocks.round_trips
            return handed.dg.blocks, handed.dg.order, handed
        t0 = time.perf_counter()
        if graph is None:
            k = clip_n_neighbors(self.n_neighbors, blocks.n_rows)
            graph = estimator_graph(self, blocks, k)
        self.graph_seconds_ = time.perf_counter() - t0
        self.graph_ = graph
        op = LaplacianOperator(graph, normalized=self.normalized, p=self.p,
                               partition=self.partition)
        try:
            dg = DataGraph(features, op, bias=self.fit_intercept)
        except BaseException:
            op.close()
            raise
        self.rows_moved_ = dg.moved
        return dg.blocks, dg.order, _GraphFit(dg, op, dg.blocks.round_trips)

    def _release(self, prepared) -> None:
        if prepared is None:
            return
        self.round_trips_ = prepared.dg.blocks.round_trips - prepared.trips0
        prepared.dg.close()
        prepared.op.close()


class LinearLapRLS(_LinearManifold):
    """Linear Laplacian RLS (linear manifold regularization paper, Eq 2-3) on row blocks.

    Minimizes ``gamma_A/2 ||w||^2 + 1/(2l) sum_{labeled} c_i (y_i - o_i)^2 + gamma_I_eff/2
    o^T M o`` with ``o = [X, 1] w``: the solution of Eq 3, ``(X_l^T X_l + gamma_A l I +
    gamma_I_eff l X^T M X) w = X_l^T Y``. All one-vs-rest classes are columns of one solve.

    Parameters
    ----------
    gamma_A : float, default=1e-3
        Ambient regularization gamma_A; equals :class:`RLS`'s ``gamma_A`` (``gamma_I = 0`` is RLS).
    gamma_I : float or "auto", default="auto"
        The thesis' (ch. 2) graph weight gamma_I before ``graph_normalization``, as in
        :class:`LapRLS`: ``gamma_I_eff = gamma_I / (u + l)^2`` by default; the linear paper's
        gamma_I (Eq 2-3) is ``gamma_I_eff``, given as is with ``graph_normalization="none"``.
        "auto": the coefficient ``gamma_I_eff = rho tr(G) / tr(H)``, ``rho`` in
        :data:`~dask_ssl.models._graph_weight.AUTO_RHO` (0 included), with the fewest errors
        of LapRLS on held-out labeled rows: exact leave-one-out on the Gram path and, on the
        CG path, with fewer rows than features (up to 2000 rows, from the rows' ``n x n``
        kernel), 4-fold cross-validation by one block CG otherwise (see
        :mod:`dask_ssl.models._graph_weight`; no unlabeled row's label is read). The shares
        do not depend on the normalization, so neither does the choice. With fewer than 5
        labeled rows in a class it is the seeds' 1e4 (with a
        :class:`~dask_ssl.models._selection.SelectionWarning`). The value used is ``gamma_I_``.
    n_neighbors, metric, weights, t, symmetrize, normalized, p, partition, search_epsilon
        The graph and ``M = L^p``, as in :class:`GraphTransduction` (here ``partition`` defaults
        to None: the data's blocks; ``"metis"`` moves the data rows once to the re-split).
    graph_normalization : {"n2", "edges", "none"}, default="n2"
        ``gamma_I_eff = gamma_I / (u + l)^2`` (thesis ch. 2), ``gamma_I / sum W_ij`` (the
        seeds' sparse-graph alternative) or ``gamma_I`` (the linear paper, thesis ch. 4), as
        in :class:`LapRLS`.
    kernel : str or callable, optional
        Fit on Nystrom features of this kernel (kernel LapRLS in feature space); the graph is
        built on the input rows. None: linear.
    kernel_params : dict, optional
    n_components : int, default=100
        Nystrom landmarks m (with ``kernel``).
    landmarks : {"uniform", "kmeans++"}, default="uniform"
    tol : float, default=1e-6
        Relative residual of CG (large d).
    max_iter : int, default=1000
        CG iterations (large d).
    fit_intercept : bool, default=True
        Append a regularized constant feature (the bias), as :class:`RLS`.
    solver : {'auto', 'gram', 'cg'}, default='auto'
        'gram': form ``X^T M X`` and ``X_l^T C X_l`` on the workers and solve by Cholesky
        (``p + 2`` round trips in all); 'cg': conjugate gradients, ``p + 1`` round trips per
        iteration; 'auto': 'gram' up to ``GRAM_MAX_FEATURES`` features.
    unlabeled, client, n_blocks
        As in :class:`L2SVM`.
    random_state : int or None
        Seeds the kNN indexes and the landmarks.
    checkpoint : str, optional
        Local path or fsspec URL of a directory where the CG solve (large d) saves its state
        (iterate, residual, direction, iteration counts) every ``CG_EVERY`` = 10 iterations and
        when it stops, atomically (:class:`~dask_ssl.loop.CGCheckpoint`). ``fit(...,
        resume=True)`` continues a killed solve from there, along the same iterates; a state
        saved for other data or parameters is refused. The Gram path (one Cholesky) ignores it.

    Attributes
    ----------
    coef_, intercept_, classes_, objective_, n_iter_
        ``objective_`` is the minimized objective above per class; ``n_iter_`` the CG
        iterations (1 on the Gram path: one Cholesky solve).
    gamma_I_ : float
        The gamma_I used (the choice with "auto"), in the units of ``gamma_I``.
    gamma_I_effective_ : float
        ``gamma_I_eff``, the coefficient of ``o^T M o`` above.
    selection_ : list of dict
        With ``gamma_I="auto"``: per candidate its ``rho`` and ``gamma_I`` (in the units of
        ``gamma_I``, as ``gamma_I_``), its held-out
        ``errors`` on the labeled rows (count, rate and standard error), the ``squared``
        residual and whether it was ``chosen`` (:mod:`dask_ssl.models._selection`); empty for
        a given gamma_I or too few labels.
    selection_cost_ : dict or None
        What the selection cost beside the fit at the chosen setting: the ``seconds`` and
        ``round_trips`` to the workers spent choosing, and ``fit_seconds`` and
        ``fit_round_trips`` of the rest of the fit (:mod:`dask_ssl.models._selection_cost`);
        None when nothing was selected. Stored in ``model.json``.
    graph_ : Graph
    graph_seconds_ : float
        Time of the kNN graph build (0 for a given graph), inside ``fit_seconds_``.
    round_trips_ : int
        Round trips of the solve (graph build and setup excluded).
    round_trips_per_iter_ : float or None
        Round trips per CG iteration, measured (``p + 1``); None on the Gram path.
    rows_moved_ : bool
        Whether the data rows moved to line up with the graph's blocks.
    feature_map_ : NystromFeatures or None
    """

    def _cg_checkpoint(self, product, R, resume):
        """The CG state's checkpoint (see :func:`_fingerprint`): one for all the targets,
        solved together."""
        if self.checkpoint is None:
            return None
        from ..loop.cg import CGCheckpoint

        return CGCheckpoint(self.checkpoint, _fingerprint(product, R), resume=resume)

    def _fit_targets(self, blocks, codes, targets, parts, costs, coef_init, client,
                     fit_part, prepared) -> list:
        dg = prepared.dg
        c, Y = self._set_targets(dg, codes, targets, costs)
        gamma_A = float(self.gamma_A)
        self.round_trips_per_iter_ = None
        if self._gram_path(blocks):
            G, R = ((prepared.G, prepared.R) if prepared.G is not None
                    else dg.weighted_gram("c", "y"))
            H = prepared.H if prepared.H is not None else dg.gram()
            gamma_I = self._graph_weight(dg, G, H)
            A = G + gamma_A * np.eye(dg.dim) + gamma_I * H
            W = scipy.linalg.cho_solve(scipy.linalg.cho_factor(A), R)
            AW = A @ W
            # one exact solve: one iteration (as LapRLS's direct solve counts it)
            n_iter, history = [1] * len(targets), [[] for _ in targets]
        else:
            R = dg.rhs("c", "y")
            gamma_I = self._graph_weight(dg)
            products = [0]

            def apply(P):
                return gamma_A * P + dg.product(P, gamma_I=gamma_I, weights=(dg.token, "c"))

            def product(P):
                # a product of converged (zero) directions makes no round trip
                products[0] += bool(np.any(P))
                return apply(P)

            checkpoint = self._cg_checkpoint(apply, R, parts[0].resume)
            system = LocalSystem(product, R, None if coef_init is None else coef_init.T)
            trips = blocks.round_trips
            res = block_cg(system, tol=self.tol, maxiter=self.max_iter, checkpoint=checkpoint)
            # a resumed solve that had already stopped makes no product
            self.round_trips_per_iter_ = ((blocks.round_trips - trips) / products[0]
                                          if products[0] else None)
            W = system.solution()
            AW = product(W)
            n_iter = res.n_iter.tolist()
            history = [[{"cg_iter": k, "residual": float(h[j])} for k, h in enumerate(res.history)]
                       for j in range(len(targets))]
        # 1/2 w^T A w - w^T R + 1/2 sum_l c y^2: the objective without another pass over X
        half_cyy = 0.5 * (c[:, None] * Y * Y).sum(axis=0)
        objective = 0.5 * np.einsum("ij,ij->j", W, AW) - np.einsum("ij,ij->j", W, R) + half_cyy
        return [{"w": W[:, j], "objective": float(objective[j]), "n_iter": int(n_iter[j]),
                 "history": history[j]} for j in range(len(targets))]


class GraphTerm(RidgeTerm):
    """L2-SVM-MFN's regularizer with the graph term ``gamma_I/2 o^T M o``:
    ``1/2 w^T R w``, ``R = gamma_A I + gamma_I [X,1]^T M [X,1]`` (``gamma_I`` here is the
    coefficient itself, the estimator's ``gamma_I_effective_``).

    Every Newton system gets ``gamma_I X^T M X``: the matrix ``H`` on the small-d path, the
    product (fused with the active-set product, ``p + 1`` round trips per CG iteration) on the
    large-d path. The graph term is a quadratic in the step: the exact line search adds
    ``gamma_I (w^T H d + delta d^T H d)`` to phi', with ``H d`` computed once per Newton step
    (on the driver from ``H``, or one graph product) and ``H w`` carried along the steps.
    ``cg_trips`` and ``cg_products`` count the round trips and products of the CG path.
    """

    def __init__(self, data_graph: DataGraph, gamma_I: float, token: str, H=None):
        self.dg, self.gamma_I, self.token, self.H = data_graph, float(gamma_I), token, H
        self._dir = None
        self.cg_trips = self.cg_products = 0

    def _graph(self, v):
        """``[X,1]^T M [X,1] v``."""
        if self.H is not None:
            return self.H @ v
        return self.dg.product(v, gamma_I=1.0)

    def begin(self, w):
        self._gw = self._graph(w) if w.any() else np.zeros_like(w)

    def moved(self, w, delta, direction):
        self._gw = self._gw + delta * self._gd
        return w + delta * direction

    def apply(self, gamma_A, w):
        return gamma_A * w + self.gamma_I * self._gw

    def form(self, gamma_A, w, direction):
        if direction is not self._dir:
            self._dir, self._gd = direction, self._graph(direction)
        g = self.gamma_I
        return (gamma_A * (w @ w) + g * (w @ self._gw),
                gamma_A * (w @ direction) + g * (direction @ self._gw),
                gamma_A * (direction @ direction) + g * (direction @ self._gd))

    def matrix(self, gamma_A, dim):
        return gamma_A * np.eye(dim) + self.gamma_I * self.H

    def normal_product(self, gamma_A, p, solver):
        # the data's active-set product rides in the graph product's round trips
        trips = solver.blocks.round_trips
        out = gamma_A * p + self.dg.product(p, gamma_I=self.gamma_I, weights=(self.token, "a"))
        self.cg_trips += solver.blocks.round_trips - trips
        self.cg_products += bool(np.any(p))
        return out


class LinearLapSVM(_LinearManifold):
    """Linear Laplacian L2-SVM: L2-SVM-MFN with the graph term in every Newton system
    (thesis ch. 6 conclusion; linear paper Eq 2 with the squared hinge).

    Minimizes ``gamma_A/2 ||w||^2 + 1/(2l) sum_{labeled} c_i max(0, 1 - y_i o_i)^2 +
    gamma_I_eff/2 o^T M o``, ``o = [X, 1] w``; ``gamma_I = 0`` is :class:`L2SVM` with
    ``gamma_A = gamma_A``. Each Newton system is ``(gamma_A I + X_j^T C_j X_j + gamma_I_eff
    X^T M X) w = X_j^T C_j Y_j`` (times ``l``: Eq 3 on the active set). One-vs-rest classes
    are fitted in turn, sharing the graph and (small d) ``X^T M X``.

    Parameters
    ----------
    gamma_A, gamma_I, n_neighbors, metric, weights, t, symmetrize, normalized, p,
    graph_normalization, partition, search_epsilon, kernel, kernel_params, n_components,
    landmarks, fit_intercept, solver, unlabeled, client, n_blocks, random_state
        As in :class:`LinearLapRLS`; ``gamma_I="auto"`` starts from LapRLS's choice on the same
        graph and labels (its leave-one-out is exact and cheap; the Newton systems here are
        LapRLS systems on the active set), a proxy: a share above 0 is then checked against the
        supervised L2-SVM with this estimator's own loss, the squared hinge, by 4-fold
        cross-validation on the labeled rows (:meth:`_confirm`, as :class:`LapSVM` confirms
        its own), and stands only where the rule of :mod:`dask_ssl.models._selection` prefers
        it there.
    tol : float, default=1e-6
        tau of the active-set stopping rule and epsilon of CG (as :class:`L2SVM`).
    max_iter : int, default=1000
        Maximum Newton steps.
    checkpoint : str, optional
        Local path or fsspec URL of a directory where each one-vs-rest part (``part-<k>``
        below it with more than two classes) saves its Newton state (``w``, steps and CG
        iterations taken, objective history) after every Newton step and its result when it
        ends, atomically (:class:`~dask_ssl.loop.NewtonCheckpoint`). ``fit(..., resume=True)``
        continues a killed fit from there: finished parts are not solved again, the
        interrupted one goes on from its last step (its outputs recomputed from ``w``). A state
        saved for other data, labels or parameters is refused; it is identified by the
        labeled right-hand side and the system matrix times a fixed probe, ``p + 4`` round
        trips per part.

    Attributes
    ----------
    As :class:`LinearLapRLS`; ``n_iter_`` counts Newton steps, ``n_cg_`` CG iterations. Where
    the proxy chose a share above 0, ``selection_`` ends with the two rows of the check
    (``criterion="cv"``, ``squared`` the held-out squared hinge), one of them ``chosen``; the
    proxy's rows are then marked ``criterion="loo"`` (``"cv-squared"`` on the CG path) and
    none of them chosen.
    """

    def _fit_targets(self, blocks, codes, targets, parts, costs, coef_init, client,
                     fit_part, prepared) -> list:
        fit, dg = prepared, prepared.dg
        if fit.H is None and self._gram_path(blocks):
            fit.H = dg.gram()
        if self.gamma_I == "auto":
            self._set_targets(dg, codes, targets, costs)
        self._graph_weight(dg, None if fit.H is None or self.gamma_I != "auto"
                           else dg.weighted_gram("c", "y")[0], fit.H)
        results = super()._fit_targets(blocks, codes, targets, parts, costs, coef_init, client,
                                       functools.partial(fit_part, fit), prepared)
        self.n_cg_ = fit.n_cg[0] if len(fit.n_cg) == 1 else np.array(fit.n_cg)
        self.round_trips_per_iter_ = (fit.cg_trips / fit.cg_products if fit.cg_products
                                      else None)
        return results

    def _confirm(self, effective, selection, cl, Yl, gram, proxy: str) -> float:
        """LinearLapRLS's leave-one-out (cross-validation on the CG path) chose the graph share
        ``effective``; whether it beats the supervised L2-SVM is decided with the squared
        hinge, by :data:`~dask_ssl.models._selection.CV_FOLDS`-fold cross-validation on the
        labeled rows (both fits on the same folds, a held-out row staying in the graph): the
        kernel L2-SVM of the deformed Gram matrix ``gram(gamma_I_eff)`` over the labeled rows
        (:func:`._graph_weight.svm_held_out`; from ``H`` on the Gram path, from the rows'
        kernel with few rows, by one block CG of the graph products otherwise) and
        :func:`._graph_weight.confirm`, as :class:`~dask_ssl.models.LapSVM` confirms its own.
        The proxy's rows of ``selection`` get ``criterion`` ``proxy`` ("loo", or "cv-squared"
        on the CG path), the two rows of the check "cv". Returns the chosen ``gamma_I_eff``
        (0: the supervised model)."""
        fold = fold_of(truth_of(Yl), min(CV_FOLDS, Yl.shape[0]))
        held_out = [svm_held_out(gram(w), cl, Yl, fold, tol=self.tol, max_iter=self.max_iter)
                    for w in (0.0, effective)]
        pick = chosen_row(selection)
        best = confirm(selection, [{"rho": 0.0, "gamma_I": 0.0},
                                   {"rho": pick["rho"], "gamma_I": effective}],
                       held_out, Yl, squared_hinge, proxy=proxy)
        return effective if best == 1 else 0.0

    def _newton_checkpoint(self, dg, y, costs, part):
        """``part``'s Newton checkpoint, identified (:func:`_fingerprint`) by
        ``X_l^T C y`` and ``(gamma_A I + X_l^T C X_l + gamma_I_eff X^T M X)`` times the probe:
        the data, graph, labels, costs and parameters of this part's problem."""
        url = part.checkpoint
        if url is None:
            return None
        from ..loop.checkpoint import has_checkpoint
        from ..loop.newton import NewtonCheckpoint

        dg.set_rows("c", np.where(y != 0, costs, 0.0))
        dg.set_rows("y", y[:, None])
        gamma_A, gamma_I = float(self.gamma_A), self.gamma_I_effective_
        fingerprint = _fingerprint(
            lambda P: gamma_A * P + dg.product(P, gamma_I=gamma_I, weights=(dg.token, "c")),
            dg.rhs("c", "y"))
        # a fit cut before a later class began left no state for it: that part starts afresh
        resume = part.resume and (part.index == 0 or has_checkpoint(url))
        return NewtonCheckpoint(url, fingerprint, resume=resume)

    def _fit_binary(self, fit, blocks, y, costs, w0, token, part):
        """One class's L2-SVM-MFN with the graph term, with the fit's :class:`_GraphFit`."""
        checkpoint = self._newton_checkpoint(fit.dg, y, costs, part)
        init_blocks(blocks, token, hinge_costs(y, costs))
        term = GraphTerm(fit.dg, self.gamma_I_effective_, token, H=fit.H)
        solver = MFNSolver(blocks, token, bias=self.fit_intercept, gram=fit.H is not None,
                           tol=self.tol, max_newton=self.max_iter, regularizer=term)
        res = solver.solve(w0, self.gamma_A, checkpoint=checkpoint)
        fit.n_cg.append(res.n_cg)
        fit.cg_trips += term.cg_trips
        fit.cg_products += term.cg_products
        return {"w": res.w, "objective": res.objective, "n_iter": res.n_newton,
                "history": [{"newton_step": k, "objective": v} for k, v in enumerate(res.history)]}
