"""``gamma_I="auto"`` of the linear manifold estimators: the graph term's weight by leave-one-out
(small d) or cross-validation (large d) on the labeled rows.

The candidates are ``rho * tr(G) / tr(H)`` for ``rho`` in :data:`AUTO_RHO`, ``G = [X_l,1]^T C
[X_l,1]`` the labeled loss's Gram matrix and ``H = [X,1]^T M [X,1]`` the graph term's: ``rho``
is the graph term's share against the loss, which does not change with the number of rows the
graph sums over (a fixed ``gamma_I`` weighs a graph on 500 k rows 50 times more than one on
10 k). ``rho = 0`` (no graph term) is a candidate: where the graph does not help, the labels say
so. LapRLS's leave-one-out outputs on the labeled rows are exact for a linear smoother:
with ``A = G + gamma_A I + gamma_I H`` and ``s_i = c_i x_i^T A^-1 x_i``, removing row ``i``
from the loss gives ``(o_i - s_i y_i) / (1 - s_i)`` (Sherman-Morrison); the graph stays on all
rows. The choice among the candidates is :mod:`._selection`'s rule: a share above 0 replaces
``rho = 0`` only when its leave-one-out errors are fewer by more than their standard error.
Only the labels of labeled rows are read.

With fewer rows than features (at most :data:`~dask_ssl.graph.data_graph.KERNEL_ROWS`: a text
set of a few hundred documents), the same leave-one-out comes from ``n x n`` matrices instead
(:func:`row_space_gamma_I`): with ``K = [X,1] [X,1]^T`` and ``W = C + gamma_I M``,
``[X,1] A^-1 [X,1]^T = K (gamma_A I + W K)^-1``, one LU per share on the driver.

Otherwise large d (the CG path), where ``A^-1`` on every labeled row is out of reach, uses
:data:`CV_FOLDS`-fold cross-validation on the labeled rows instead (:func:`cv_gamma_I`): every
(fold, candidate, target) system is a column of one block CG, so a CG iteration is one graph
product for all of them; ``tr(H)`` is estimated from :data:`TRACE_PROBES` random sign vectors
(Hutchinson), one more product. Held-out rows stay in the graph term (they are unlabeled rows of
that fold's fit), as a left-out row does in the leave-one-out above.

The shares reach far above 1 because the graph term may have to dominate: on text with a graph
whose classes a linear model can follow only through the unlabeled rows (RCV1-like, 30 k rows,
100 labels), the error falls from 18% at ``rho = 0`` to 3% at ``rho`` about 160; on KDD99 (1000
labels) every share above 0 raised it.

LinearLapRLS's leave-one-out (or cross-validation) scores the squared loss; for LinearLapSVM,
whose loss is the squared hinge, that is a proxy. :func:`svm_held_out` checks the proxy's pick
with the SVM's own loss: the L2-SVM with the graph term, restricted to the labeled rows, is the
kernel L2-SVM of the deformed Gram matrix ``K = X_l (gamma_A I + gamma_I H)^-1 X_l^T``
(:func:`deformed_gram`; ``w = (gamma_A I + gamma_I H)^-1 X_l^T alpha`` and
``w^T (gamma_A I + gamma_I H) w = alpha^T K alpha``), so each fold's fit is a finite Newton
solve over the ``l`` labeled rows on the driver, with the graph of every row inside ``K``.
:func:`confirm` records and decides that check, as :class:`~dask_ssl.models.LapSVM` does its
own.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from ._selection import CV_FOLDS, choose, fold_of, table

#: Graph-term shares tried by ``gamma_I="auto"`` (see the module docstring).
AUTO_RHO = (0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0)
#: The seeds' graph weight (thesis Table 2.6 and the JMLR paper's experiments:
#: ``gamma_I / (u + l)^2`` with ``gamma_I = 1e4`` against the loss's ``1/l``), used unchecked
#: where the labels are too few to choose.
SEED_GAMMA_I = 1e4
#: Relative CG residual of the cross-validation fits: enough to count their errors.
CV_TOL = 1e-4
#: Random sign vectors of the ``tr(H)`` estimate on the CG path.
TRACE_PROBES = 8


def loo_gamma_I(G, H, Xl, cl, Yl, gamma_A: float) -> tuple[float, list]:
    """The ``gamma_I`` of :data:`AUTO_RHO` with the fewest LapRLS leave-one-out errors.

    Parameters
    ----------
    G, H : ndarray of shape (dim, dim)
        The labeled loss's and the graph term's Gram matrices (bias column included).
    Xl : ndarray of shape (l, dim)
        The labeled rows of ``[X, 1]``.
    cl : ndarray of shape (l,)
        Their costs ``c_i``.
    Yl : ndarray of shape (l, n_targets)
        Their +1/-1 targets, one column per one-vs-rest target (one column: two classes).

    Returns
    -------
    gamma_I : float
    selection : list of dict
        Per candidate: ``rho``, ``gamma_I`` and the columns of :func:`._selection.table`.
    """
    scale = share_scale(np.trace(G), np.trace(H))
    outputs = loo_weight_outputs(G, H, Xl, cl, Yl, gamma_A, [rho * scale for rho in AUTO_RHO])
    return _select(outputs, Yl, scale)


def share_scale(trace_G: float, trace_H: float) -> float:
    """``tr(G) / tr(H)``, the ``gamma_I_eff`` of the share ``rho = 1``. A graph without edges
    (or constant outputs on it) has no term to weigh: 0, so that every share is the same fit
    and the first (0) is kept."""
    return trace_G / trace_H if trace_H > 1e-12 * trace_G else 0.0


def loo_weight_outputs(G, H, Xl, cl, Yl, gamma_A: float, weights) -> list:
    """LapRLS's exact leave-one-out outputs on the labeled rows for each ``gamma_I_eff`` of
    ``weights`` (arguments as :func:`loo_gamma_I`'s): one Cholesky factorization each."""
    eye = gamma_A * np.eye(G.shape[0])
    outputs = []
    for weight in weights:
        factor = scipy.linalg.cho_factor(G + eye + weight * H)
        outputs.append(loo_outputs(lambda B, f=factor: scipy.linalg.cho_solve(f, B), Xl, Yl, cl))
    return outputs


def loo_outputs(solve, F, Y, costs=None) -> np.ndarray:
    """Exact leave-one-out outputs of a regularized least-squares fit on the labeled rows
    ``F`` (``l x d``): the fit is ``w = A^-1 F^T C Y`` with ``C = diag(costs)`` (ones by
    default) and ``solve(B) = A^-1 B``; without row ``i`` its output is ``(o_i - s_i y_i) /
    (1 - s_i)``, ``s_i = c_i f_i^T A^-1 f_i`` (Sherman-Morrison). Shape ``(l, columns of Y)``."""
    c = np.ones(F.shape[0]) if costs is None else costs
    k = Y.shape[1]
    Z = solve(np.hstack([F.T @ (c[:, None] * Y), F.T]))
    O = F @ Z[:, :k]
    s = c * np.einsum("ij,ji->i", F, Z[:, k:])
    return (O - s[:, None] * Y) / (1.0 - s)[:, None]


def row_space_gamma_I(K, MK, rows, cl, Yl, gamma_A: float) -> tuple[float, list]:
    """:func:`loo_gamma_I` from ``n x n`` matrices over all rows instead of ``dim x dim`` ones:
    few rows, many features.

    Parameters
    ----------
    K, MK : ndarray of shape (n, n)
        ``K = [X,1] [X,1]^T`` over all rows and ``M K``.
    rows : ndarray of shape (l,)
        The labeled rows' positions in ``K``, in the order of ``cl`` and ``Yl``.
    cl, Yl, gamma_A
        As in :func:`loo_gamma_I`.

    Returns
    -------
    gamma_I, selection
        As :func:`loo_gamma_I`'s, equal to it up to rounding (``tr(G) = sum c_i K_ii`` and
        ``tr(H) = tr(M K)``)."""
    scale = share_scale(float(np.sum(cl * K[rows, rows])), float(np.trace(MK)))
    outputs = [row_space_loo_outputs(K, MK, rows, cl, Yl, gamma_A, rho * scale)
               for rho in AUTO_RHO]
    return _select(outputs, Yl, scale)


def row_space_loo_outputs(K, MK, rows, cl, Yl, gamma_A: float, weight: float) -> np.ndarray:
    """:func:`loo_outputs` of the LapRLS fit at ``gamma_I_eff = weight`` (arguments as
    :func:`row_space_gamma_I`'s), from one ``n x n`` LU. With ``W = C + weight M`` the fit's
    ``A = gamma_A I + [X,1]^T W [X,1]`` gives ``[X,1] A^-1 [X,1]^T = K (gamma_A I + W K)^-1``
    (push-through), whose labeled block holds both the outputs ``S C Y`` and the ``s_i = c_i
    S_ii`` of Sherman-Morrison."""
    A = _shifted(MK, weight, gamma_A)
    A[rows] += cl[:, None] * K[rows]
    E = np.zeros((K.shape[0], rows.size))
    E[rows, np.arange(rows.size)] = 1.0
    S = K[rows] @ scipy.linalg.solve(A, E)
    s = cl * np.diag(S)
    return (S @ (cl[:, None] * Yl) - s[:, None] * Yl) / (1.0 - s)[:, None]


def row_space_deformed_gram(K, MK, rows, gamma_A: float, weight: float) -> np.ndarray:
    """:func:`deformed_gram` from the ``n x n`` matrices of :func:`row_space_gamma_I`: by
    Woodbury, ``(gamma_A I + weight H)^-1 = (I - weight [X,1]^T (gamma_A I + weight M K)^-1 M
    [X,1]) / gamma_A``, so the labeled block is ``(K_LL - weight K_L. (gamma_A I + weight M
    K)^-1 (M K)_.L) / gamma_A``: one ``n x n`` LU."""
    D = K[np.ix_(rows, rows)]
    if weight > 0:
        D = D - weight * K[rows] @ scipy.linalg.solve(_shifted(MK, weight, gamma_A),
                                                       MK[:, rows])
    D = D / gamma_A
    return 0.5 * (D + D.T)


def _shifted(MK, weight: float, gamma_A: float) -> np.ndarray:
    """``gamma_A I + weight M K``, a new array (the row-space systems of both functions
    above)."""
    A = weight * MK
    A[np.diag_indices_from(A)] += gamma_A
    return A


def _select(outputs, Yl, scale) -> tuple[float, list]:
    """The rule of :mod:`._selection` over the held-out outputs of each share."""
    wrong, squared = held_out_scores(outputs, Yl)
    best = choose(wrong, squared, supervised=0)
    selection = table([{"rho": rho, "gamma_I": float(rho * scale)} for rho in AUTO_RHO],
                      wrong, squared, best)
    return selection[best]["gamma_I"], selection


def held_out_scores(outputs, Yl) -> tuple:
    """``(wrong, squared)`` of :func:`._selection.choose` from each candidate's held-out
    outputs of LapRLS on the labeled rows (+1/-1 targets ``Yl``): errors and squared residuals."""
    truth = truth_of(Yl)
    wrong = np.array([_guess(out) != truth for out in outputs])
    squared = np.array([np.sum((Yl - out) ** 2, axis=1) for out in outputs])
    return wrong, squared


def _guess(out):
    return out[:, 0] > 0 if out.shape[1] == 1 else np.argmax(out, axis=1)


def truth_of(Yl):
    """The class code of each labeled row from its +1/-1 target columns."""
    return _guess(Yl)


def cv_gamma_I(graph_product, Xl, cl, Yl, gamma_A: float, *, maxiter: int,
               seed: int = 0) -> tuple[float, list]:
    """The ``gamma_I`` of :data:`AUTO_RHO` with the fewest cross-validation errors (large d).

    Parameters
    ----------
    graph_product : callable
        ``P -> H P`` for a ``dim x c`` array (one distributed graph product).
    Xl : ndarray or csr_matrix of shape (l, dim)
        The labeled rows of ``[X, 1]``.
    cl, Yl, gamma_A
        As in :func:`loo_gamma_I`.
    maxiter : int
        CG iterations at most.
    seed : int
        Seeds the trace probes.

    Returns
    -------
    gamma_I, selection
        As :func:`loo_gamma_I`; ``errors`` and ``squared`` are over the held-out rows.
    """
    scale = cv_scale(graph_product, Xl, cl, seed)
    outputs = cv_weight_outputs(graph_product, Xl, cl, Yl, gamma_A,
                                [rho * scale for rho in AUTO_RHO], maxiter=maxiter)
    return _select(outputs, Yl, scale)


def cv_scale(graph_product, Xl, cl, seed: int = 0) -> float:
    """:func:`share_scale` on the CG path: ``tr(G)`` from the labeled rows ``Xl`` and their
    costs ``cl``, ``tr(H)`` estimated from :data:`TRACE_PROBES` random sign vectors (one graph
    product, ``graph_product`` as :func:`cv_gamma_I`'s)."""
    probes = np.random.default_rng(seed).choice([-1.0, 1.0], size=(Xl.shape[1], TRACE_PROBES))
    trace_H = float(np.mean(np.einsum("ij,ij->j", probes, graph_product(probes))))
    row_norms = np.asarray(Xl.multiply(Xl).sum(axis=1)).ravel() if hasattr(Xl, "multiply") \
        else np.einsum("ij,ij->i", Xl, Xl)
    return share_scale(float(np.sum(cl * row_norms)), trace_H)


def cv_weight_outputs(graph_product, Xl, cl, Yl, gamma_A: float, weights, *,
                      maxiter: int) -> list:
    """LapRLS's held-out outputs on the labeled rows by :data:`CV_FOLDS`-fold cross-validation
    for each ``gamma_I_eff`` of ``weights`` (arguments as :func:`cv_gamma_I`'s): every (fold,
    weight, target) system is a column of one block CG."""
    from ..linalg.block_cg import LocalSystem, block_cg

    l, n_targets = Xl.shape[0], Yl.shape[1]
    fold = fold_of(truth_of(Yl), min(CV_FOLDS, l))
    k = int(fold.max()) + 1
    # column (f, r, t): fold f held out, weight r, target t
    cases = [(f, r, t) for f in range(k) for r in range(len(weights)) for t in range(n_targets)]
    costs = np.column_stack([np.where(fold == f, 0.0, cl) / cl[fold != f].sum()
                             for f, _, _ in cases])
    n_weights = len(weights)
    weights = np.array([weights[r] for _, r, _ in cases], dtype=float)
    graph = np.flatnonzero(weights > 0)
    R = Xl.T @ (costs * Yl[:, [t for _, _, t in cases]])

    def product(P):
        out = gamma_A * P + Xl.T @ (costs * (Xl @ P))
        if graph.size:
            out[:, graph] += weights[graph] * graph_product(P[:, graph])
        return out

    system = LocalSystem(product, np.asarray(R))
    block_cg(system, tol=CV_TOL, maxiter=maxiter)
    O = np.asarray(Xl @ system.solution()).reshape(l, len(cases))
    outputs = []
    for r in range(n_weights):
        held_out = np.empty_like(np.asarray(Yl, dtype=float))
        for f in range(k):
            held = fold == f
            cols = [j for j, (ff, rr, _) in enumerate(cases) if ff == f and rr == r]
            held_out[held] = O[np.ix_(held, cols)]
        outputs.append(held_out)
    return outputs


def squared_hinge(F, Y):
    """Squared hinge of outputs ``F`` against +1/-1 targets ``Y``, entry by entry."""
    return np.maximum(0.0, 1.0 - Y * F) ** 2


def confirm(selection: list, candidates: list, held_out: list, Yl, loss, *,
            proxy: str) -> int:
    """Decide between the supervised candidate and a proxy's pick by the estimator's own loss.

    ``held_out`` are the held-out outputs (shape of ``Yl``, +1/-1 targets of the labeled rows)
    of the supervised fit and of the pick's, by :data:`CV_FOLDS`-fold cross-validation on the
    same folds; ``loss(F, Y)`` the estimator's loss entry by entry. The rule of
    :mod:`._selection` chooses (index 0 the supervised, 1 the pick); the proxy's rows of
    ``selection`` are marked ``criterion=proxy`` and none of them ``chosen``, and the two
    ``candidates`` (their settings) join it with ``criterion="cv"``. Returns the index."""
    truth = truth_of(Yl)
    wrong = np.array([truth_of(out) != truth for out in held_out])
    squared = np.array([loss(out, Yl).sum(axis=1) for out in held_out])
    best = choose(wrong, squared, supervised=0)
    for row in selection:
        row.update(criterion=proxy, chosen=False)
    selection.extend({**row, "criterion": "cv"}
                     for row in table(candidates, wrong, squared, best))
    return best


def deformed_gram(Xl, gamma_A: float, weight: float, *, H=None, graph_product=None,
                  maxiter: int = 1000) -> np.ndarray:
    """``X_l (gamma_A I + weight H)^-1 X_l^T`` over the labeled rows ``Xl`` of ``[X, 1]``.

    ``H`` (dim x dim, the Gram path) is factored by Cholesky; without it, ``graph_product``
    (``P -> H P``, distributed) serves a block CG with one column per labeled row, to
    :data:`CV_TOL`. ``weight = 0`` is the linear kernel over ``gamma_A``."""
    from ..linalg.block_cg import LocalSystem, block_cg

    dense = Xl.toarray() if hasattr(Xl, "toarray") else np.asarray(Xl, dtype=float)
    if weight == 0:
        K = dense @ dense.T / gamma_A
    elif H is not None:
        B = weight * H
        B[np.diag_indices_from(B)] += gamma_A
        K = dense @ scipy.linalg.cho_solve(scipy.linalg.cho_factor(B), dense.T)
    else:
        system = LocalSystem(lambda P: gamma_A * P + weight * graph_product(P), dense.T)
        block_cg(system, tol=CV_TOL, maxiter=maxiter)
        K = dense @ system.solution()
    return 0.5 * (K + K.T)


def svm_held_out(K, cl, Yl, fold, *, tol: float, max_iter: int) -> np.ndarray:
    """Held-out outputs of the L2-SVM of the Gram matrix ``K`` over the labeled rows (costs
    ``cl``, +1/-1 targets ``Yl``) by the folds ``fold``: each (fold, target) minimizes
    ``1/2 alpha^T K alpha + 1/2 sum c_i max(0, 1 - y_i f_i)^2`` over the other folds' rows,
    their costs normalized to sum to 1 as in the fit (finite Newton, exact line search:
    :func:`~dask_ssl.models._kernel_s3vm.fit_weighted`)."""
    from ._kernel_s3vm import fit_weighted

    out = np.empty_like(np.asarray(Yl, dtype=float))
    for f in range(int(fold.max()) + 1):
        held = fold == f
        c = np.where(held, 0.0, cl) / cl[~held].sum()
        for t in range(Yl.shape[1]):
            cpos, cneg = np.where(Yl[:, t] > 0, c, 0.0), np.where(Yl[:, t] < 0, c, 0.0)
            _, F, _, _ = fit_weighted(K, cpos, cneg, 1.0, "squared_hinge", tol=tol,
                                      max_iter=max_iter)
            out[held, t] = F[held]
    return out
