"""GraphTransduction's supervised prior and its ``"auto"`` settings, chosen on the labeled rows.

The prior is RLS (:class:`~dask_ssl.models.RLS`) fitted on the labeled rows, its one-vs-rest
scores ``o`` mapped to the system's target scale (``Ybar`` is one-hot 0/1): ``(1 + o) / 2`` per
class, ``[(1 - o) / 2, (1 + o) / 2]`` for two classes, so that the largest column is RLS's own
decision. The unlabeled rows are pulled towards it with the weight ``mu``
(``unlabeled_weight``): ``(gamma_I M + I_L + mu I_U) F = Ybar + mu S_U``. ``gamma_I = 0`` is the
supervised candidate: ``F_U = S_U``, RLS's labels.

The candidates are the supervised one and, for each ``gamma_I`` of :data:`AUTO_GAMMA_I` above 0
and ``mu`` of :data:`AUTO_MU`, ``class_balance`` None or ``"labeled"`` (the supervised candidate
keeps None: it predicts as RLS does). ``mu`` matters because a prior score weighs as much as a
label at ``mu = 1``: five labels per class among hundreds of prior scores hardly move them,
and the graph then only smooths the prior (on two moons the error stays near 2% where the
thesis method, ``mu = 0``, reaches 0.2%). The cost is the columns: one per (``gamma_I``,
``mu``, fold, class), each pass of the solve a product of all of them.

They are scored by :data:`CV_FOLDS`-fold cross-validation on the labeled rows (:func:`folds`:
stratified, each labeled row held out once; an unlabeled row is never scored). The prior of
fold ``f`` is RLS fitted on the labels outside fold ``f``, and the held-out rows are unlabeled
rows of that fold's fit (fidelity ``mu``, target the fold's prior). Every (``gamma_I``, ``mu``,
fold, class) system is a column of one block CG on the one graph
(:func:`dask_ssl.solvers.graph.solve_graph_system` with weights and fidelities per column).
The block preconditioner factors each block once per (``gamma_I``, ``mu``), with the held-out
rows' fidelity as in the full fit (1), and leaves their few rows' difference to CG. A block
whose factor would fill more than :data:`CV_FILL_BUDGET` times its entries is preconditioned by
its diagonal instead: a pass applies the factor to every column, at about its fill in graph
products each, so with dozens of columns arithmetic, not round trips, bounds the solve. The
graphs that fill (text, close to expanders) are the ones plain CG solves in few passes; those
that need the factor (chains of clusters, KDD99) fill 2-3 times and factor in a fraction of a
second, so a factor per (``gamma_I``, ``mu``) costs little where one is made.
``class_balance`` only reweighs the solved scores, so its candidates cost no solve. The choice
is :func:`._selection.choose` with the supervised candidate first: a graph candidate replaces
it only when it errs less by more than one standard error.

On more than :data:`SELECTION_ROWS` rows the candidates are scored on a graph of that many
(:func:`selection_sample`): every labeled row, so the folds and the held-out rows are those of
the full data, and unlabeled rows drawn at random. Scored on the full graph, the columns
(one per ``gamma_I``, ``mu``, fold and class: 48 for two classes) cost many times the fit's own
few; on the sample they cost about as much as the sample's rows, and only the chosen setting
is solved on the full graph. A graph candidate chosen on the sample replaces the supervised
one only after it wins again, under the same rule and folds, on the full graph: the sample
holds the labels far more densely than the full graph, where a graph term spreads each label
over many more rows (two candidates of one weight cost a few columns and one preconditioner,
what the fit's own solve needs). What is chosen is meant to hold on the full graph: the candidate
weights are the system's, against a normalized Laplacian whose spectrum lies in [0, 2] at any
size, the default heat width is set from each graph's own edge lengths, the class shares are
the labeled rows', and the fold priors are the same RLS fits.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.utils import check_random_state

from ..linalg import RowBlocks
from ..linalg.rowblocks import is_dask_array
from ._gamma_s_selection import kernel_rls
from ._input import target_columns
from ._selection import choose, table
from .base import _block_scores

#: Graph weights tried against the prior; 0 is the supervised candidate. The normalized
#: Laplacian's eigenvalues lie in [0, 2]: a weight of 1 already propagates the labels along
#: the graph (the seeds' value), 100 smooths the scores over all but the slowest modes.
AUTO_GAMMA_I = (0.0, 1.0, 10.0, 100.0)
#: Weights of the prior tried (``unlabeled_weight="auto"``): 0.01 lets the labels lead and
#: the prior settle what they leave open; 0 drops the prior (the thesis method). ``mu = 1``
#: (a prior score weighs as a label) is not tried: a few labels among many prior scores then
#: hardly move them (module docstring), and each value tried adds a column per fold and class.
AUTO_MU = (0.01, 0.0)
#: The seeds' graph weight (thesis ch. 5), kept where the labels are too few to choose.
SEED_GAMMA_I = 1.0
#: Folds of the labeled rows.
CV_FOLDS = 4
#: Relative residual of the cross-validation columns: enough to count their errors.
CV_TOL = 1e-4
#: Largest fill of a block the cross-validation's preconditioner factors (module docstring).
CV_FILL_BUDGET = 5.0
#: Rows above which the candidates are scored on a sample of this many rows (module docstring).
SELECTION_ROWS = 20_000


def graph_metric(X) -> str:
    """The graph distance that suits ``X``: ``"cosine"`` for sparse rows with no negative
    entry (term counts, tf-idf: the direction carries the class, the length the document's
    size), else ``"euclidean"``."""
    if isinstance(X, RowBlocks):
        return "cosine" if all(X.call(_sparse_non_negative)) else "euclidean"
    if is_dask_array(X):
        X = X._meta
        return "cosine" if sp.issparse(X) else "euclidean"
    return "cosine" if _sparse_non_negative(0, X) else "euclidean"


def _sparse_non_negative(i, X) -> bool:
    return bool(sp.issparse(X) and (X.data.size == 0 or X.data.min() >= 0))


def folds(codes, k: int = CV_FOLDS) -> np.ndarray:
    """Fold of each row, -1 on unlabeled rows (``codes < 0``): each class's labeled rows are
    dealt to the ``k`` folds in turn, so every fold holds every class."""
    codes = np.asarray(codes)
    fold = np.full(codes.shape[0], -1, dtype=np.int64)
    for cls in np.unique(codes[codes >= 0]):
        rows = np.flatnonzero(codes == cls)
        fold[rows] = np.arange(rows.size) % k
    return fold


def selection_sample(codes, random_state=None, size: int | None = None) -> np.ndarray | None:
    """The rows (sorted indices) of the graph the candidates are scored on: None (all of them)
    up to ``size`` rows (default :data:`SELECTION_ROWS`); above it every labeled row
    (``codes >= 0``) and ``size - l`` unlabeled rows drawn without replacement (at least half
    of ``size``: many labels still leave the graph unlabeled rows to carry them)."""
    size = SELECTION_ROWS if size is None else size
    codes = np.asarray(codes)
    if codes.size <= size:
        return None
    labeled = np.flatnonzero(codes >= 0)
    unlabeled = np.flatnonzero(codes < 0)
    keep = min(unlabeled.size, max(size - labeled.size, size // 2))
    drawn = check_random_state(random_state).choice(unlabeled.size, keep, replace=False)
    return np.sort(np.concatenate([labeled, unlabeled[drawn]]))


def labeled_rows(X, rows) -> np.ndarray | sp.csr_matrix:
    """The rows ``rows`` (sorted indices) of any X the estimators take, in memory."""
    if isinstance(X, RowBlocks):
        offsets = np.asarray(X.offsets)
        parts = X.call(_take_rows, per_block=[
            (rows[(rows >= offsets[b]) & (rows < offsets[b + 1])] - offsets[b],)
            for b in range(X.n_blocks)])
        return sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.vstack(parts)
    if is_dask_array(X):
        return X[rows].compute()
    return X[rows]


def _take_rows(i, X, rows):
    return X[rows]


def fold_rls_weights(Xl, codes, gamma_A: float) -> np.ndarray:
    """The weights of ``RLS(gamma_A=gamma_A)`` fitted on the labeled rows ``Xl`` with class
    codes ``codes`` (every class present), as ``RLS.coef_with_bias().T``, solved here in closed
    form: ``(gamma_A I + Z^T Z / l) w = Z^T Y / l`` with ``Z = [Xl, 1]`` (the bias regularized
    like a feature, as L2-SVM-MFN's) and the targets +1 / -1 of :meth:`Labels.columns`; where
    the rows are fewer than the features, ``w = Z^T alpha`` with ``alpha`` the kernel RLS of
    ``Z Z^T`` (:func:`._gamma_s_selection.kernel_rls`). The fold priors are fits on a few
    hundred rows at most: a fit on the workers cost twelve round trips each, most of a small
    GraphTransduction fit."""
    n_classes = int(codes.max()) + 1
    Y = target_columns(codes, [1] if n_classes == 2 else range(n_classes))
    ones = np.ones((Xl.shape[0], 1))
    Z = sp.hstack([Xl, ones], format="csr") if sp.issparse(Xl) else np.hstack([Xl, ones])
    l, dim = Z.shape
    if dim <= l:
        A = np.asarray((Z.T @ Z).todense() if sp.issparse(Z) else Z.T @ Z) / l
        A[np.diag_indices_from(A)] += gamma_A
        return scipy.linalg.solve(A, np.asarray(Z.T @ Y) / l, assume_a="pos")
    K = np.asarray((Z @ Z.T).todense() if sp.issparse(Z) else Z @ Z.T)
    return np.asarray(Z.T @ kernel_rls(K, Y, gamma_A))


def prior_scores(weights, X) -> list:
    """The scores of each RLS weight matrix of ``weights`` (``coef_with_bias().T``) on every row
    of ``X`` on the 0/1 target scale (module docstring), in one pass over the rows for all."""
    d = weights[0].shape[0] - 1
    W = np.hstack(weights)
    if isinstance(X, RowBlocks):
        out = np.concatenate(X.call(_block_scores, W, d))
    elif is_dask_array(X):
        out = np.asarray((X @ W[:d] + W[d]).compute())
    else:
        out = np.asarray(X @ W[:d]) + W[d]
    widths = np.cumsum([0] + [w.shape[1] for w in weights])
    return [target_scale(out[:, lo:hi]) for lo, hi in zip(widths[:-1], widths[1:])]


def target_scale(o) -> np.ndarray:
    """One-vs-rest scores ``o`` (one column for two classes) as 0/1 class scores."""
    o = np.asarray(o, dtype=np.float64)
    if o.ndim == 1 or o.shape[1] == 1:
        o = o.reshape(-1)
        return np.column_stack([(1.0 - o) / 2.0, (1.0 + o) / 2.0])
    return (1.0 + o) / 2.0


def targets(codes, train, fidelity, prior) -> np.ndarray:
    """``Ybar + a S`` of a fit on the labels of the rows ``train``: one-hot there, the prior
    times the fidelity elsewhere."""
    B = fidelity[:, None] * prior
    rows = np.flatnonzero(train)
    B[rows] = 0.0
    B[rows, codes[rows]] = 1.0
    return B


def select(solve, codes, fidelity, fold, priors, balance, gammas=AUTO_GAMMA_I, mus=AUTO_MU,
           balances=(None, "labeled")) -> tuple[dict, list]:
    """The chosen candidate and the selection table (module docstring).

    Parameters
    ----------
    solve : callable
        ``(gamma_I, a, B, a_precond) -> F``: one block CG on the graph, ``gamma_I`` and ``a``
        per column, ``a_precond`` the fidelities its preconditioner factors.
    codes : ndarray of shape (n,)
        Class index per row, -1 unlabeled.
    fidelity : callable
        ``mu -> a`` of the fit on all labels: 1 on labeled rows, ``mu`` on unlabeled ones (1
        on label-free components).
    fold : ndarray of shape (n,)
        :func:`folds`.
    priors : list of ndarray of shape (n, n_classes)
        Per fold, the prior fitted without its labels.
    balance : callable
        ``(F of the fold's unlabeled rows, class_balance, the fold's labeled codes) -> class
        weights``.
    gammas, mus : sequence of float
        The graph weights (0: the supervised candidate) and prior weights tried.
    balances : sequence
        The ``class_balance`` values tried with each weight above 0.

    Returns
    -------
    chosen : dict
        ``gamma_I``, ``unlabeled_weight`` and ``class_balance`` of the chosen candidate.
    selection : list of dict
        :func:`._selection.table` over the candidates.
    """
    n_classes = priors[0].shape[1]
    k = len(priors)
    labeled = codes >= 0
    truth = codes[labeled]
    onehot = np.eye(n_classes)[truth]
    pairs = [(float(g), float(mu)) for mu in mus for g in gammas if g > 0]
    if pairs:
        gamma, a, a_precond, B = [], [], [], []
        for g, mu in pairs:
            base = fidelity(mu)
            for f in range(k):
                held = fold == f
                # held-out rows are unlabeled rows of this fold's fit
                a_f = np.where(held, mu, base)
                B.append(targets(codes, labeled & ~held, a_f, priors[f]))
                gamma += [g] * n_classes
                a += [a_f] * n_classes
                # one factor per block and (gamma_I, mu) (module docstring)
                a_precond += [base] * n_classes
        F = solve(np.array(gamma), np.column_stack(a), np.hstack(B), np.column_stack(a_precond))

    # per candidate and fold: the scores and the class weights its decisions apply
    candidates, held_out = [], []
    if 0 in gammas:
        candidates.append({"gamma_I": 0.0, "unlabeled_weight": float(max(mus)),
                           "class_balance": None})
        held_out.append([(S, 1.0) for S in priors])
    for j, (g, mu) in enumerate(pairs):
        Fg = [F[:, (j * k + f) * n_classes:(j * k + f + 1) * n_classes] for f in range(k)]
        for class_balance in balances:
            candidates.append({"gamma_I": g, "unlabeled_weight": mu,
                               "class_balance": class_balance})
            held_out.append([(Fg[f], balance(Fg[f][~(labeled & (fold != f))], class_balance,
                                             codes[labeled & (fold != f)]))
                             for f in range(k)])
    wrong, squared = [], []
    at = np.flatnonzero(labeled)
    for per_fold in held_out:
        shares = np.empty((at.size, n_classes))
        for f, (scores, weights) in enumerate(per_fold):
            held = fold[at] == f
            shares[held] = _shares(scores[at[held]] * weights, n_classes)
        wrong.append(np.argmax(shares, axis=1) != truth)
        # the held-out loss of the rule is the misclassification itself, then the residual of
        # the class shares as the tie-break: F's scale shrinks with the distance to the labels
        # and with mu, and on a text graph every row's shares sit in a narrow band around the
        # class mix (the module docstring of graph_transduction), so no residual of F or of
        # the shares measures what the balanced cut decides. Where neither the prior nor a
        # candidate errs on a held-out row, the rule's loss test reads this residual alone:
        # every held-out row is then on its side, and shares nearer their targets are the
        # only evidence left
        squared.append(wrong[-1] + 1e-6 * np.sum((onehot - shares) ** 2, axis=1))
    best = choose(wrong, squared, supervised=0)
    return candidates[best], table(candidates, wrong, squared, best)


def _shares(F, n_classes):
    """Each row's weighted scores as shares summing to 1 (equal shares where all are 0)."""
    F = np.maximum(F, 0.0)
    total = F.sum(axis=1, keepdims=True)
    return np.where(total > 0, F / np.where(total > 0, total, 1.0), 1.0 / n_classes)
