"""SparseLapRLS's ``n_neighbors="auto"`` / ``p="auto"``: the graph the labels spread on best.

LapRLS chooses ``(n_neighbors, p)`` among :data:`~dask_ssl.models._graph_seam.AUTO_GRAPHS` by the
full model's leave-one-out error. A sparse model would need a basis grown per candidate graph
and ``gamma_I`` (each a greedy fit); what a graph contributes to every method of
:class:`~dask_ssl.models.SparseLapRLS` (the graph term of the f-system ``(gamma_I M + I_L) f``)
is instead scored alone: graph transduction on it, by :data:`CV_FOLDS`-fold cross-validation
on the labeled rows (stratified; a fold's held-out rows stay in the graph unlabeled and only
labeled rows are scored). Every graph is scored at each ``gamma_I`` above 0 the method would
try; the candidate with the fewest held-out errors, then the smallest squared residual, then
the earlier graph, gives the graph. Whether a graph term is used at all is decided afterwards,
on the chosen graph, by the method's own ``gamma_I`` selection, where 0 (the supervised model)
is a candidate.

Rows of a graph component holding no label are held at 0 (fidelity 1, target 0), as
GraphTransduction holds them; otherwise the system on that component is singular.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from ._graph_weight import truth_of
from ._selection import CV_FOLDS, fold_of


def transduction_fidelity(labeled, diag) -> np.ndarray:
    """The fidelity of graph transduction on a graph with components ``diag.labels``: 1 on
    labeled rows and on the rows of components without a label, 0 elsewhere."""
    has_label = np.bincount(diag.labels, weights=labeled, minlength=diag.n_components) > 0
    return np.where(labeled | ~has_label[diag.labels], 1.0, 0.0)


def held_out_transduction(solve, Ybar, labeled, truth, diag, weights) -> list:
    """Held-out graph transduction outputs on the labeled rows, one ``(l, n_columns)`` array
    per graph-term weight ``g`` of ``weights``.

    Every (weight, fold, class column) system ``(g M + diag(a)) F = B`` is a column of one
    call ``solve(g, A, B, A_full)``, with ``g`` per column, ``A`` the columns' fidelities and
    ``A_full`` those of the fit on every label (what a preconditioner may factor, as in
    :mod:`._transduction_selection`). ``Ybar`` holds the +1/-1 targets (0 on unlabeled
    rows), ``truth`` the labeled rows' class codes."""
    L = np.flatnonzero(labeled)
    fold = fold_of(truth, min(CV_FOLDS, L.size))
    k, c = int(fold.max()) + 1, Ybar.shape[1]
    full = transduction_fidelity(labeled, diag)
    trains = []
    for f in range(k):
        train = labeled.copy()
        train[L[fold == f]] = False
        trains.append(train)
    fidelities = [transduction_fidelity(train, diag) for train in trains]
    g = np.repeat(np.asarray(weights, dtype=float), k * c)
    A = np.column_stack([a for _ in weights for a in fidelities for _ in range(c)])
    B = np.hstack([Ybar * train[:, None] for _ in weights for train in trains])
    F = solve(g, A, B, np.repeat(full[:, None], A.shape[1], axis=1))
    outputs = []
    for j in range(len(weights)):
        out = np.empty((L.size, c))
        for f in range(k):
            at = (j * k + f) * c
            out[fold == f] = F[L[fold == f], at:at + c]
        outputs.append(out)
    return outputs


def driver_solve(fsystem):
    """``solve`` of :func:`held_out_transduction` by factored systems on the driver, one per
    run of columns sharing their weight and fidelities; ``fsystem(a, g)`` returns the
    :class:`~dask_ssl.solvers.sparse.FSystem` of ``(g M + diag(a))``."""
    def solve(g, A, B, _):
        F = np.empty_like(B)
        start = 0
        while start < B.shape[1]:
            stop = start + 1
            while (stop < B.shape[1] and g[stop] == g[start]
                   and np.array_equal(A[:, stop], A[:, start])):
                stop += 1
            F[:, start:stop] = fsystem(A[:, start], g[start]).solve(B[:, start:stop])
            start = stop
        return F
    return solve


def choose_graph(candidates: list, outputs: list, YL, truth) -> tuple[int, list]:
    """``(index, graph_selection_)``: the candidate (a dict of its ``n_neighbors``, ``p``,
    ``gamma_I``) whose held-out ``outputs`` err least, then have the smallest squared residual
    against ``YL``; earlier candidates win ties. The table holds per candidate its settings,
    held-out ``errors``, ``error`` rate and its standard ``stderr``, ``squared`` residual,
    ``criterion`` ``"cv"`` and whether it was ``chosen``."""
    errors = [int(np.sum(truth_of(out) != truth)) for out in outputs]
    squared = [float(np.sum((YL - out) ** 2)) for out in outputs]
    best = min(range(len(candidates)), key=lambda j: (errors[j], squared[j], j))
    n = max(truth.size, 1)
    rows = [{**c, "errors": errors[j], "error": errors[j] / n,
             "stderr": float(np.sqrt(errors[j] / n * (1 - errors[j] / n) / max(n - 1, 1))),
             "squared": squared[j], "criterion": "cv", "chosen": j == best}
            for j, c in enumerate(candidates)]
    return best, rows


def held_out_rls(KLL, YL, fold, gamma_A: float) -> np.ndarray:
    """Held-out outputs of kernel RLS on the labeled rows by ``fold``: in fold ``f``,
    ``beta = (K_TT + l_T gamma_A I)^-1 Y_T`` on the other folds' rows ``T`` (LapRLS's units,
    the supervised fit at ``gamma_I = 0`` whose basis holds those rows), scored on the fold's
    rows. ``KLL``: the labeled rows' kernel matrix; ``YL``: their +1/-1 targets."""
    out = np.empty_like(YL, dtype=float)
    for f in range(int(fold.max()) + 1):
        held, T = fold == f, fold != f
        A = KLL[np.ix_(T, T)] + T.sum() * gamma_A * np.eye(int(T.sum()))
        out[held] = KLL[np.ix_(held, T)] @ scipy.linalg.solve(A, YL[T], assume_a="pos")
    return out
