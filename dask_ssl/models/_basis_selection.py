"""``basis="auto"`` of :class:`~dask_ssl.models.SparseLapRLS`: the greedy basis, checked on
held-out labels against its own prefixes and a random basis of the same size.

The greedy (thesis 5.1.1) adds the function that lowers the training objective most, and that
objective holds the labels. With many more basis functions than labeled rows and a weak graph
term, the later functions can serve to interpolate the labels rather than to follow the data,
and the model gets worse as the basis grows; a leave-one-out on that basis cannot see it, since
the basis was chosen with the held-out label. So the check rebuilds the basis without the labels
it scores: the labeled rows are dealt to :data:`~._selection.CV_FOLDS` folds (:func:`fold_of`),
and in each fold the basis is grown again on the other folds' labels (the held-out rows stay in
the graph, unlabeled) and the held-out rows are scored by

- every prefix of :data:`PREFIXES` of the greedy basis (a prefix's minimizer comes from the
  leading block of the greedy's Cholesky factor, :func:`~dask_ssl.solvers.sparse.prefix_coefs`,
  at no extra solve), the whole basis among them;
- a basis of the same size drawn uniformly, which does not look at the labels.

The whole greedy basis is the default (the thesis' method); another candidate replaces it only
under the shared rule of :mod:`._selection` (fewer held-out errors, beyond the noise), so the
final basis holds at most ``n_basis`` functions and is the greedy's unless the labels show it
worse.
"""

from __future__ import annotations

import numpy as np

from ..solvers.sparse import prefix_coefs
from ._graph_weight import truth_of
from ._selection import CV_FOLDS, choose, fold_of, table

#: Shares of ``n_basis`` at which the greedy's prefixes are scored; the last is the whole basis.
PREFIXES = (0.25, 0.5, 0.75, 1.0)


def candidates_for(d: int) -> list:
    """``(kind, size)`` of each candidate for a basis of ``d`` functions: the greedy's distinct
    prefix sizes (the whole basis last among them), then the random basis."""
    sizes = sorted({max(1, int(round(share * d))) for share in PREFIXES})
    return [("greedy", k) for k in sizes] + [("random", d)]


def choose_basis(grow, labeled, Ybar, d: int):
    """``((kind, size), selection)``: the basis chosen by cross-validation over the labeled
    rows (module docstring).

    Parameters
    ----------
    grow : callable
        ``grow(kind, train)`` returns the :class:`~dask_ssl.solvers.sparse.BasisFit` of the
        estimator's objective on the labels of the rows ``train`` only, its basis grown
        greedily (``kind="greedy"``, with the factor of its prefixes) or drawn at random.
    labeled : ndarray of bool
    Ybar : ndarray of shape (n, n_columns)
        +1/-1 targets on labeled rows, 0 elsewhere.
    d : int
        n_basis, the size of the whole greedy basis and of the random one.

    Returns
    -------
    (kind, size) : tuple
        ``("greedy", k)`` for the greedy basis cut to ``k`` functions, ``("random", d)``.
    selection : list of dict
        Per candidate its ``basis`` and ``n_basis`` and the columns of
        :func:`~._selection.table`, with ``criterion`` ``"cv"``.
    """
    L = np.flatnonzero(labeled)
    YL = Ybar[L]
    truth = truth_of(YL)
    fold = fold_of(truth, min(CV_FOLDS, L.size))
    cases = candidates_for(d)
    held = np.zeros((len(cases),) + YL.shape)
    for f in range(int(fold.max()) + 1):
        out = fold == f
        train = labeled.copy()
        train[L[out]] = False
        rows = L[out]
        greedy = grow("greedy", train)
        reached = greedy.basis.size
        for j, (kind, k) in enumerate(cases):
            if kind == "greedy":
                k = min(k, reached)
                held[j, out] = greedy.KNJ[rows, :k] @ prefix_coefs(greedy, k)
        drawn = grow("random", train)
        held[len(cases) - 1, out] = drawn.KNJ[rows] @ drawn.beta
    wrong = np.array([truth_of(h) != truth for h in held])
    squared = np.array([np.sum((YL - h) ** 2, axis=1) for h in held])
    default = cases.index(("greedy", max(k for kind, k in cases if kind == "greedy")))
    best = choose(wrong, squared, supervised=default)
    rows = [{"basis": kind, "n_basis": k} for kind, k in cases]
    selection = [{**row, "criterion": "cv"}
                 for row in table(rows, wrong, squared, best, supervised=default)]
    return cases[best], selection
