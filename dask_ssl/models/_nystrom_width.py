"""LapRLS / LapSVM with ``n_components``: the RBF width chosen with ``gamma_I`` on the labeled rows.

Each candidate width (:func:`._rbf_width.width_candidates`) is a Nystrom feature space of its
own, ``Z_w = K_w(X, landmarks) K_w,mm^-1/2``, on landmarks drawn once and shared by every
width: only the ``m x m`` normalization is formed per width on the driver
(:meth:`~dask_ssl.kernels.nystrom.NystromFeatures.on_landmarks`), and the ``n x m`` features on
the workers, block by block. In each space the candidates are those of the linear estimators'
``gamma_I`` (:mod:`._graph_weight`): the shares ``rho`` of the graph term (0, the supervised
model, included) with ``gamma_I="auto"``, the given ``gamma_I`` otherwise. They are scored as
the linear estimators score them: up to ``GRAM_MAX_FEATURES`` features by LapRLS's exact
leave-one-out from the width's Gram matrices ``G_w`` (labeled loss) and ``H_w`` (graph term),
formed once per width and factored once per candidate; beyond, by cross-validation with every
(fold, candidate, class) a column of one block CG per width. The graph and its Laplacian
operator are built once and shared by every width (its heat weights have their own width).

All widths' candidates are then one table, chosen by the rule of :mod:`._selection` with the
supervised model at the default width as the incumbent (the fit a user gets without unlabeled
rows and without a choice), as the direct and primal solvers choose. LapSVM checks a graph
candidate against the best supervised one with its own loss, the squared hinge, by
cross-validation (:func:`._graph_weight.confirm`), as :class:`LinearLapSVM` does.

What the chosen width formed is the fit's that follows (:func:`._nystrom_manifold.fit_nystrom`):
its feature blocks, lined up with the graph on the workers beside the labels, the shared
Laplacian operator and (Gram path) ``G``, the right-hand side and ``H``, so that fit forms
nothing again; the other widths' are dropped.
"""

from __future__ import annotations

import numpy as np

from ..graph.data_graph import DataGraph
from ..graph.laplacian import LaplacianOperator
from ..kernels.nystrom import NystromFeatures
from ..linalg.blas import single_blas_thread
from ._graph_seam import graph_term_weight_on
from ._graph_weight import (AUTO_RHO, confirm, cv_scale, cv_weight_outputs, deformed_gram,
                            held_out_scores, loo_weight_outputs, share_scale, squared_hinge,
                            svm_held_out, truth_of)
from ._selection import CV_FOLDS, choose, fold_of, table
from ._selection_cost import selecting
from .base import GRAM_MAX_FEATURES


class _Width:
    """One candidate width's feature space: its map, feature blocks, lined-up data and graph,
    labeled rows and (Gram path) the Gram matrix ``G`` and right-hand side ``R`` of the
    labeled loss and the Gram matrix ``H`` of the graph term."""

    def __init__(self, fm, features, dg, Xl, cl, Yl, G=None, R=None, H=None):
        self.fm, self.features, self.dg = fm, features, dg
        self.Xl, self.cl, self.Yl, self.G, self.R, self.H = Xl, cl, Yl, G, R, H

    def graph_product(self, P):
        return self.dg.product(P, gamma_I=1.0)


def choose_width(est, blocks, labels, graph, p, candidates, *, bias: bool) -> dict:
    """The width and ``gamma_I`` of LapRLS / LapSVM ``est`` (``n_components`` set) on the
    labeled rows (module docstring).

    Parameters
    ----------
    est : LapRLS or LapSVM
    blocks : RowBlocks
        The input rows.
    labels : Labels
        The fit's labels (at least :data:`._selection.MIN_PER_CLASS` per class).
    graph : Graph
        The graph on the rows, shared by every width.
    p : int
        The Laplacian's power.
    candidates : list of dict
        The kernel parameters of each width, the default first.
    bias : bool
        Whether the linear model has a constant feature (LapSVM's).

    Returns
    -------
    dict
        ``width`` (index into ``candidates``), ``feature_map`` (its fitted map),
        ``features`` (its feature blocks), ``prepared`` (what the width formed on the
        workers, for :meth:`~.linear_manifold.LinearLapRLS.fit_prepared`, which frees it),
        ``gamma_I`` (in ``est``'s units) and ``selection``.
    """
    from .linear_manifold import _GraphFit

    fm = NystromFeatures(kernel=est.kernel, kernel_params=candidates[0],
                         n_components=est.n_components, landmarks=est.landmarks,
                         random_state=est.random_state).fit(blocks)
    gamma_A = float(est.gamma_A)
    unit = graph_term_weight_on(est, graph, 1.0)
    op = LaplacianOperator(graph, normalized=est.normalized, p=p)
    widths, outputs, rows, effective = [], [], [], []
    prepared = None
    try:
        with selecting():
            for w, params in enumerate(candidates):
                space = _space(fm if w == 0 else fm.on_landmarks(params), blocks, op, labels,
                               bias, graph_term=est.gamma_I != 0)
                widths.append(space)
                if est.gamma_I == "auto":
                    shares, scale = AUTO_RHO, _scale(est, space)
                    weights = [rho * scale for rho in shares]
                else:
                    shares, weights = (None,), [float(est.gamma_I) * unit]
                # The candidates' factorizations run on the driver between round trips, as
                # the linear fits' solves do (models.base): a threaded BLAS there competes
                # with the workers for the same cores and slowed them several times over.
                with single_blas_thread():
                    if space.H is not None:
                        outputs += loo_weight_outputs(space.G, space.H, space.Xl, space.cl,
                                                      space.Yl, gamma_A, weights)
                    else:
                        outputs += cv_weight_outputs(space.graph_product, space.Xl, space.cl,
                                                     space.Yl, gamma_A, weights,
                                                     maxiter=est.max_iter)
                rows += [{"gamma": params["gamma"], **({} if rho is None else {"rho": rho}),
                          "gamma_I": float(weight / unit)}
                         for rho, weight in zip(shares, weights)]
                effective += [(w, weight) for weight in weights]
            Yl = widths[0].Yl
            wrong, squared = held_out_scores(outputs, Yl)
            best = choose(wrong, squared, supervised=0)
            selection = table(rows, wrong, squared, best)
            w, weight = effective[best]
            if est._loss() == "squared_hinge" and weight > 0 and rows[0]["gamma_I"] == 0:
                supervised = [j for j, row in enumerate(rows) if row["gamma_I"] == 0]
                fallback = supervised[choose(wrong[supervised], squared[supervised],
                                             supervised=0)]
                with single_blas_thread():
                    confirmed = _confirmed(est, widths, effective[fallback][0], w, weight,
                                           selection, [rows[fallback], rows[best]])
                if not confirmed:
                    w, weight = effective[fallback]
        space = widths[w]
        prepared = _GraphFit(space.dg, op, 0, H=space.H, G=space.G, R=space.R)
        return {"width": w, "feature_map": space.fm, "features": space.features,
                "prepared": prepared, "gamma_I": float(weight / unit), "selection": selection}
    finally:
        for space in widths:
            if prepared is None or space.dg is not prepared.dg:
                space.dg.close()
        if prepared is None:
            op.close()


def _scale(est, space) -> float:
    """The ``gamma_I_eff`` of the share ``rho = 1`` in the feature space ``space``, as the
    linear estimators compute it on their Gram or CG path."""
    if space.H is not None:
        return share_scale(np.trace(space.G), np.trace(space.H))
    seed = est.random_state if isinstance(est.random_state, (int, np.integer)) else 0
    return cv_scale(space.graph_product, space.Xl, space.cl, int(seed))


def _space(fm, blocks, op, labels, bias, *, graph_term: bool) -> _Width:
    """The feature blocks of ``fm`` on ``blocks``, lined up with the graph, with the labels
    beside them (costs ``1/l`` on the labeled rows, as the linear estimators' fit sets them),
    and on the Gram path the width's ``G``, ``R`` and ``H`` (zero without a ``graph_term``:
    with ``gamma_I=0`` given only the supervised candidates are scored, and ``H``, the
    costliest product, is not formed; the fit at ``gamma_I=0`` multiplies it by 0)."""
    from .linear_manifold import LinearLapRLS

    features = fm.transform(blocks)
    dg = DataGraph(features, op, bias=bias)
    try:
        codes = labels.codes if dg.order is None else labels.codes[dg.order]
        labeled = codes >= 0
        LinearLapRLS._set_targets(dg, codes, labels.targets, labeled / labeled.sum())
        Xl, cl, Yl = dg.rows_where("c", "y")
        if features.n_features > GRAM_MAX_FEATURES:
            return _Width(fm, features, dg, Xl, cl, Yl)
        G, R = dg.weighted_gram("c", "y")
        return _Width(fm, features, dg, Xl, cl, Yl, G, R,
                      dg.gram() if graph_term else np.zeros_like(G))
    except BaseException:
        dg.close()
        raise


def _confirmed(est, widths, w_supervised, w, weight, selection, candidates) -> bool:
    """Whether LapRLS's pick (width ``w``, graph coefficient ``weight``) beats the supervised
    L2-SVM of width ``w_supervised`` with the squared hinge, by :data:`CV_FOLDS`-fold
    cross-validation on the labeled rows: the kernel L2-SVM of each one's deformed Gram matrix
    over the labeled rows (:func:`._graph_weight.svm_held_out`) and the rule of
    :func:`._graph_weight.confirm`, whose two rows (``candidates``' settings) join
    ``selection``."""
    gamma_A = float(est.gamma_A)
    sup, pick = widths[w_supervised], widths[w]
    fold = fold_of(truth_of(pick.Yl), min(CV_FOLDS, pick.Yl.shape[0]))
    grams = (deformed_gram(sup.Xl, gamma_A, 0.0),
             deformed_gram(pick.Xl, gamma_A, weight, H=pick.H,
                           graph_product=None if pick.H is not None else pick.graph_product,
                           maxiter=est.max_iter))
    held_out = [svm_held_out(K, pick.cl, pick.Yl, fold, tol=est.tol, max_iter=est.max_iter)
                for K in grams]
    settings = [{key: row[key] for key in ("gamma", "rho", "gamma_I") if key in row}
                for row in candidates]
    return confirm(selection, settings, held_out, pick.Yl, squared_hinge,
                   proxy="loo" if pick.H is not None else "cv-squared") == 1
