"""LapRLS / LapSVM with ``n_components``: the RBF width, the graph and ``gamma_I`` chosen on the
labeled rows.

Each candidate width (:func:`._rbf_width.width_candidates`) is a Nystrom feature space of its
own, ``Z_w = K_w(X, landmarks) K_w,mm^-1/2``, on landmarks drawn once and shared by every
width: only the ``m x m`` normalization is formed per width on the driver
(:meth:`~dask_ssl.kernels.nystrom.NystromFeatures.on_landmarks`). The candidates of the graph
term are those of the linear estimators' ``gamma_I`` (:mod:`._graph_weight`): the shares
``rho`` of the graph term (0, the supervised model, included) with ``gamma_I="auto"``, the
given ``gamma_I`` otherwise; on each graph setting ``(n_neighbors, p)`` of the estimator's
(:meth:`LapRLS._graph_candidates`). They are scored as the linear estimators score them: up
to ``GRAM_MAX_FEATURES`` features by LapRLS's exact leave-one-out from the Gram matrices ``G_w``
(labeled loss) and ``H_w,s`` (graph term of setting ``s``), factored once per candidate;
beyond, by cross-validation with every (fold, candidate, class) a column of one block CG.

Two stages, as the exact solvers choose (:meth:`LapRLS._select_direct`). The width first,
among each width's supervised candidate, whose incumbent is the supervised model at the
default width (the fit a user gets without unlabeled rows and without a choice): it needs the
features of the labeled rows alone, formed on the driver, so a width not chosen never has its
``n x m`` features computed. Then the graph candidates at that width only: its features are
formed on the workers once, lined up with each setting's graph, and ``H`` formed once per
setting. They must beat the first stage's pick under the rule of :mod:`._selection` (the rule
over more alternatives is stricter, and must not hand the choice back to a width the first
stage rejected). The table holds every candidate scored. LapSVM checks a graph pick against
the supervised one with its own loss, the squared hinge, by cross-validation
(:func:`._graph_weight.confirm`), as :class:`LinearLapSVM` does.

The labeled rows are in ascending row order everywhere here, whichever order a graph's
operator keeps its blocks in, so every candidate is scored on the same folds. What the chosen
setting formed is the fit's that follows (:func:`._nystrom_manifold.fit_nystrom`): its feature
blocks lined up with the graph on the workers beside the labels, the Laplacian operator and
(Gram path) ``G``, the right-hand side and ``H``, so that fit forms nothing again; the other
settings' are dropped.
"""

from __future__ import annotations

import numpy as np

from ..graph.data_graph import DataGraph
from ..graph.laplacian import LaplacianOperator
from ..graph.quality import take_rows
from ..kernels.nystrom import NystromFeatures
from ..linalg.blas import single_blas_thread
from ._graph_seam import graph_term_weight_on
from ._graph_weight import (AUTO_RHO, confirm, cv_scale, cv_weight_outputs, deformed_gram,
                            held_out_scores, loo_weight_outputs, share_scale, squared_hinge,
                            svm_held_out, truth_of)
from ._selection import CV_FOLDS, candidate_grid, choose, fold_of, table
from ._selection_cost import selecting
from .base import GRAM_MAX_FEATURES


class _Width:
    """One candidate width on the labeled rows: its feature map, the rows of ``[Z, 1]`` (or
    ``Z`` without a bias) and, on the Gram path, the labeled loss's Gram matrix ``G`` and
    right-hand side ``R``."""

    def __init__(self, fm, Xl, cl, Yl, gram: bool):
        self.fm, self.Xl = fm, Xl
        self.G = (Xl.T * cl) @ Xl if gram else None
        self.R = Xl.T @ (cl[:, None] * Yl) if gram else None


class _Space:
    """The chosen width's features lined up with one graph setting's operator (``dg``) and,
    on the Gram path, the graph term's Gram matrix ``H``."""

    def __init__(self, dg, H=None):
        self.dg, self.H = dg, H

    def graph_product(self, P):
        return self.dg.product(P, gamma_I=1.0)


def choose_nystrom(est, blocks, labels, graphs, candidates, *, bias: bool) -> dict:
    """The width, graph setting and ``gamma_I`` of LapRLS / LapSVM ``est`` (``n_components``
    set) on the labeled rows (module docstring).

    Parameters
    ----------
    est : LapRLS or LapSVM
    blocks : RowBlocks
        The input rows.
    labels : Labels
        The fit's labels (at least :data:`._selection.MIN_PER_CLASS` per class).
    graphs : list of (setting, Graph)
        The graph settings ``(n_neighbors or name, p)`` to choose among, each with its graph
        on the rows (shared by every width: its heat weights have their own width).
    candidates : list of dict
        The kernel parameters of each width, the default first.
    bias : bool
        Whether the linear model has a constant feature (LapSVM's).

    Returns
    -------
    dict
        ``width`` (index into ``candidates``), ``setting`` (index into ``graphs``),
        ``feature_map`` (its fitted map), ``features`` (its feature blocks), ``prepared``
        (what the setting formed on the workers, for
        :meth:`~.linear_manifold.LinearLapRLS.fit_prepared`, which frees it), ``gamma_I`` (in
        ``est``'s units) and ``selection``.
    """
    from .linear_manifold import LinearLapRLS, _GraphFit

    fm0 = NystromFeatures(kernel=est.kernel, kernel_params=candidates[0],
                          n_components=est.n_components, landmarks=est.landmarks,
                          random_state=est.random_state).fit(blocks)
    gram = fm0.n_features_out_ <= GRAM_MAX_FEATURES
    gamma_A = float(est.gamma_A)
    auto = est.gamma_I == "auto"
    values = AUTO_RHO if auto else (float(est.gamma_I),)
    grid = candidate_grid(len(candidates), len(graphs), values)
    L = np.flatnonzero(labels.labeled)
    XL = take_rows(blocks, L)
    cl = np.full(L.size, 1.0 / L.size)
    Yl = labels.columns()[L]
    units = [graph_term_weight_on(est, graph, 1.0) for _, graph in graphs]
    widths, features, ops, spaces, scales, outputs = {}, {}, {}, {}, {}, {}

    def width(w) -> _Width:
        if w not in widths:
            fm = fm0 if w == 0 else fm0.on_landmarks(candidates[w])
            Xl = fm.transform(XL)
            widths[w] = _Width(fm, np.hstack([Xl, np.ones((L.size, 1))]) if bias else Xl,
                               cl, Yl, gram)
        return widths[w]

    def space(w, j, *, graph_term: bool = True) -> _Space:
        """Width ``w``'s features lined up with setting ``j``'s graph; ``H`` is not formed
        where no graph candidate is scored on them (the fit at a graph term 0 multiplies it
        by 0)."""
        if (w, j) not in spaces:
            if w not in features:
                features[w] = width(w).fm.transform(blocks)
            if j not in ops:
                ops[j] = LaplacianOperator(graphs[j][1], normalized=est.normalized,
                                           p=graphs[j][0][1])
            dg = DataGraph(features[w], ops[j], bias=bias)
            try:
                codes = labels.codes if dg.order is None else labels.codes[dg.order]
                labeled = codes >= 0
                LinearLapRLS._set_targets(dg, codes, labels.targets, labeled / labeled.sum())
                H = None
                if gram:
                    H = dg.gram() if graph_term else np.zeros_like(width(w).G)
                spaces[w, j] = _Space(dg, H)
            except BaseException:
                dg.close()
                raise
        return spaces[w, j]

    def weight(w, j, v) -> float:
        """``gamma_I_eff`` of the candidate value ``v`` (a share with "auto") on setting ``j``."""
        if v == 0:
            return 0.0
        if not auto:
            return v * units[j]
        if (w, j) not in scales:
            s, part = space(w, j), width(w)
            scales[w, j] = (share_scale(np.trace(part.G), np.trace(s.H)) if gram else
                            cv_scale(s.graph_product, part.Xl, cl, _seed(est)))
        return v * scales[w, j]

    def score(w, j, vs):
        part = width(w)
        weights = [weight(w, j, v) for v in vs]
        graph_term = any(x > 0 for x in weights)
        # The candidates' factorizations run on the driver between round trips, as the
        # linear fits' solves do (models.base): a threaded BLAS there competes with the
        # workers for the same cores and slowed them several times over.
        with single_blas_thread():
            if gram:
                H = space(w, j).H if graph_term else 0.0
                outs = loo_weight_outputs(part.G, H, part.Xl, cl, Yl, gamma_A, weights)
            else:
                product = space(w, j).graph_product if graph_term else None
                outs = cv_weight_outputs(product, part.Xl, cl, Yl, gamma_A, weights,
                                         maxiter=est.max_iter)
        outputs.update(((w, j, v), out) for v, out in zip(vs, outs))

    def scores(cases):
        return held_out_scores([outputs[case] for case in cases], Yl)

    prepared = None
    try:
        with selecting():
            # each width's first candidate: the supervised one where it is tried
            base = [case for case in grid if case[1:] == grid[0][1:]]
            for w, j, v in base:
                score(w, j, [v])
            chosen_width = base[choose(*scores(base), supervised=0)][0]
            for j in range(len(graphs)):
                todo = [v for w, jj, v in grid if w == chosen_width and jj == j
                        and (w, jj, v) not in outputs]
                if todo:
                    score(chosen_width, j, todo)
            cases = [case for case in grid if case in outputs]
            wrong, squared = scores(cases)
            incumbent = cases.index((chosen_width, *grid[0][1:]))
            best = choose(wrong, squared, supervised=incumbent)
            rows = [_row(candidates, graphs, units, w, j, v, weight(w, j, v), auto)
                    for w, j, v in cases]
            selection = table(rows, wrong, squared, best, supervised=incumbent)
            w, j, v = cases[best]
            if est._loss() == "squared_hinge" and v > 0 and values[0] == 0:
                with single_blas_thread():
                    confirmed = _confirmed(est, width(w).Xl, cl, Yl, space(w, j),
                                           weight(w, j, v), selection,
                                           [rows[incumbent], rows[best]])
                if not confirmed:
                    w, j, v = cases[incumbent]
        chosen = space(w, j, graph_term=False)
        prepared = _GraphFit(chosen.dg, ops[j], 0, H=chosen.H, G=width(w).G, R=width(w).R)
        return {"width": w, "setting": j, "feature_map": width(w).fm, "features": features[w],
                "prepared": prepared, "gamma_I": float(weight(w, j, v) / units[j]),
                "selection": selection}
    finally:
        for s in spaces.values():
            if prepared is None or s.dg is not prepared.dg:
                s.dg.close()
        for op in ops.values():
            if prepared is None or op is not prepared.op:
                op.close()


def _seed(est) -> int:
    return int(est.random_state) if isinstance(est.random_state, (int, np.integer)) else 0


def _row(candidates, graphs, units, w, j, v, weight, auto) -> dict:
    """A candidate's settings in ``selection_``: its width (where several are tried), graph
    setting (none for the supervised model), share ``rho`` (with "auto") and ``gamma_I``."""
    return {**({"gamma": candidates[w]["gamma"]} if len(candidates) > 1 else {}),
            "n_neighbors": None if v == 0 else graphs[j][0][0],
            "p": None if v == 0 else graphs[j][0][1],
            **({"rho": v} if auto else {}), "gamma_I": float(weight / units[j])}


def _confirmed(est, Xl, cl, Yl, pick, weight, selection, candidates) -> bool:
    """Whether LapRLS's pick (graph coefficient ``weight`` on the space ``pick``) beats the
    supervised L2-SVM of the same width with the squared hinge, by :data:`CV_FOLDS`-fold
    cross-validation on the labeled rows ``Xl``: the kernel L2-SVM of each one's deformed Gram
    matrix over them (:func:`._graph_weight.svm_held_out`) and the rule of
    :func:`._graph_weight.confirm`, whose two rows (``candidates``' settings) join
    ``selection``."""
    gamma_A = float(est.gamma_A)
    fold = fold_of(truth_of(Yl), min(CV_FOLDS, Yl.shape[0]))
    grams = (deformed_gram(Xl, gamma_A, 0.0),
             deformed_gram(Xl, gamma_A, weight, H=pick.H,
                           graph_product=None if pick.H is not None else pick.graph_product,
                           maxiter=est.max_iter))
    held_out = [svm_held_out(K, cl, Yl, fold, tol=est.tol, max_iter=est.max_iter)
                for K in grams]
    keys = ("gamma", "n_neighbors", "p", "rho", "gamma_I")
    settings = [{key: row[key] for key in keys if key in row} for row in candidates]
    return confirm(selection, settings, held_out, Yl, squared_hinge,
                   proxy="loo" if pick.H is not None else "cv-squared") == 1
