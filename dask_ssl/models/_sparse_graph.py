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

from ._graph_weight import truth_of
from ._selection import CV_FOLDS, fold_of


def transduction_fidelity(labeled, diag) -> np.ndarray:
    """The fidelity of graph transduction on a graph with components ``diag.labels``: 1 on
    labeled rows and on the rows of components without a label, 0 elsewhere."""
    has_label = np.bincount(diag.labels, weights=labeled, minlength=diag.n_components) > 0
    return np.where(labeled | ~has_label[diag.labels], 1.0, 0.0)


def held_out_transduction(solve, Ybar, labeled, truth, diag) -> np.ndarray:
    """Held-out graph transduction outputs on the labeled rows, shape ``(l, n_columns)``.

    ``solve(fidelity, B)`` returns ``F`` of ``(g M + diag(fidelity)) F = B``; ``Ybar`` holds
    the +1/-1 targets (0 on unlabeled rows), ``truth`` the labeled rows' class codes."""
    L = np.flatnonzero(labeled)
    fold = fold_of(truth, min(CV_FOLDS, L.size))
    out = np.empty((L.size, Ybar.shape[1]))
    for f in range(int(fold.max()) + 1):
        train = labeled.copy()
        train[L[fold == f]] = False
        F = solve(transduction_fidelity(train, diag), Ybar * train[:, None])
        out[fold == f] = F[L[fold == f]]
    return out


def choose_graph(candidates: list, outputs: list, YL, truth) -> tuple[int, list]:
    """``(index, graph_selection_)``: the candidate (a dict of its ``n_neighbors``, ``p``,
    ``gamma_I``) whose held-out ``outputs`` err least, then have the smallest squared residual
    against ``YL``; earlier candidates win ties. The table holds per candidate its settings,
    held-out ``errors``, ``error`` rate, ``squared`` residual, ``criterion`` ``"cv"`` and
    whether it was ``chosen``."""
    errors = [int(np.sum(truth_of(out) != truth)) for out in outputs]
    squared = [float(np.sum((YL - out) ** 2)) for out in outputs]
    best = min(range(len(candidates)), key=lambda j: (errors[j], squared[j], j))
    rows = [{**c, "errors": errors[j], "error": errors[j] / max(truth.size, 1),
             "squared": squared[j], "criterion": "cv", "chosen": j == best}
            for j, c in enumerate(candidates)]
    return best, rows
