"""CoRLS at scale: the coupled system in the views' feature weights, its products summed over row
blocks on the workers (nothing ``n x n``).

With features ``Z_s`` per view (the rows themselves for ``kernel="linear"``, or Nystrom features
``Z_s = K_s(X_s, landmarks) K_s,mm^-1/2``, :class:`~dask_ssl.kernels.nystrom.NystromFeatures`),
``f_s = Z_s w_s`` and ``||f_s||_K = ||w_s||`` (exact for the linear kernel, and for Nystrom with
every row a landmark; on the landmarks' span otherwise). :mod:`dask_ssl.multiview.corls`'s
objective,

    (1 / (l Z)) sum_s c_s ||J (Y - Z_s w_s)||^2 + sum_s gamma_s ||w_s||^2
        + g sum_{s < t} ||D^1/2 (Z_s w_s - Z_t w_t)||^2,        g = gamma_C / (l + u),

(``J`` the labeled rows, ``D`` every row for ``"coupled"``, the unlabeled ones for
``"averaged"``) has the stationarity, for every view ``s``,

    [ c_s/(lZ) Z_s^T J Z_s + gamma_s I + g (m-1) Z_s^T D Z_s ] w_s
        - g sum_{t != s} Z_s^T D Z_t w_t = c_s/(lZ) Z_s^T J Y,

one symmetric positive definite system of size ``sum_s d_s`` (the coupling is the Laplacian of
the complete graph on the views, ``m I - 1 1^T``, a PSD factor). It is the thesis' block system
(L1944-1945) times ``Z_s^T`` with ``w_s = Z_s^T alpha_s``: the same minimizer. Its matrix is
made of two Gram matrices of the stacked features ``F = [Z_1 .. Z_m]``, ``F^T J F`` and
``F^T D F``: one round trip over the views' co-located blocks
(:meth:`MultiViewBlocks.joined <dask_ssl.multiview.blocks.MultiViewBlocks.joined>`), then a
Cholesky on the driver (``"gram"``). For wide sparse views (``kernel="linear"`` on text) the
product with a stacked ``w`` is one round trip too, and conjugate gradients solve it (``"cg"``).

Leave-one-out (``gamma_C="auto"``, Gram path). Leaving labeled row ``i`` out removes its loss
terms (and, ``"averaged"``, adds its coupling term): ``A`` changes by ``U_i W_i U_i^T``, ``U_i``
the ``m`` columns that put row ``i``'s features of view ``s`` in view ``s``'s slot, ``W_i = -C
(+ g (m I - 1 1^T))``, ``C = diag(c_s/(lZ))``; its right-hand side by ``-U_i C 1 y_i``. With
``S_i = U_i^T A^-1 U_i`` and the full fit's outputs ``o_i`` of the views at row ``i``, the
push-through identity gives the left-out outputs in closed form,

    o_(-i) = (I + S_i W_i)^-1 (o_i - S_i C 1 y_i),

an ``m x m`` solve per labeled row after ``m l`` solves with the Cholesky factor: the pattern of
:func:`dask_ssl.models._graph_weight.loo_gamma_I` (there ``m = 1``) and the primal form of
:func:`dask_ssl.multiview.corls.corls_loo_outputs`.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ..kernels.nystrom import NystromFeatures
from ..linalg.block_cg import LocalSystem, block_cg
from ..models._rbf_width import blocks_rbf_gamma
from .blocks import MultiViewBlocks
from .corls import loss_weights


# worker side ------------------------------------------------------------------------------

def _stacked(views):
    """``F = [Z_1 .. Z_m]`` of a block: CSR if a view is sparse, else dense."""
    if any(sp.issparse(Z) for Z in views):
        return sp.hstack([sp.csr_matrix(Z) for Z in views], format="csr")
    return np.hstack(views)


def _dense(M):
    return M.toarray() if sp.issparse(M) else np.asarray(M)


def _grams(i, views, rows, averaged):
    """``(F^T D F, F_L)`` of the block: ``D`` every row (or, ``averaged``, the rows other than
    ``rows``, the block's labeled rows); ``F_L`` the labeled rows, dense."""
    F = _stacked(views)
    FL = _dense(F[rows])
    G = _dense(F.T @ F)
    if averaged:
        G = G - FL.T @ FL
    return G, FL


def _labeled_rows(i, views, rows):
    """Each view's labeled rows of the block (sparse views stay sparse)."""
    return [Z[rows] for Z in views]


def _product(i, views, rows, keep, V, splits, weights, g, averaged):
    """The block's share of ``A V`` without the ridge: per view ``Z_s^T (c_s/(lZ) J o_s +
    g D (m o_s - sum_t o_t))``, ``o_s = Z_s V_s``, column by column: ``g`` holds each column's
    coupling, ``keep`` (labeled rows x columns) 1 where a labeled row is in that column's
    loss (0: held out, an unlabeled row of that fit)."""
    m = len(views)
    outs = [np.asarray(Z @ V[splits[s]:splits[s + 1]]) for s, Z in enumerate(views)]
    total = sum(outs)
    parts = []
    for s, (Z, o) in enumerate(zip(views, outs)):
        a = g * (m * o - total)
        if averaged:
            a[rows] *= 1.0 - keep
        a[rows] += weights[s] * keep * o[rows]
        parts.append(np.asarray(Z.T @ a))
    return np.vstack(parts)


def _scores(i, views, W, splits):
    """Each view's outputs ``Z_s W_s`` on the block, shape (m, n_b, c)."""
    return np.stack([np.asarray(Z @ W[splits[s]:splits[s + 1]]) for s, Z in enumerate(views)])


# driver side ------------------------------------------------------------------------------

def view_features(mv: MultiViewBlocks, kernels, kernel_params, n_components, landmarks,
                  random_state):
    """``(features, maps, kernel_params)``: the views' features as a MultiViewBlocks on the same
    workers (the rows themselves for ``n_components=None``: linear kernels), the fitted
    :class:`NystromFeatures` per view (or None) and each view's kernel parameters used (the
    RBF width from the view's rows as :class:`~dask_ssl.models.LapRLS` takes it)."""
    if n_components is None:
        return mv, [None] * mv.n_views, [dict(kp or {}) for kp in kernel_params]
    rng = np.random.default_rng(random_state)
    maps, feats, used = [], [], []
    for view, kernel, kp in zip(mv.views, kernels, kernel_params):
        kp = dict(kp or {})
        if kernel == "rbf" and "gamma" not in kp:
            kp["gamma"] = blocks_rbf_gamma(view)
        fmap = NystromFeatures(kernel=kernel, kernel_params=kp, n_components=int(n_components),
                               landmarks=landmarks,
                               random_state=int(rng.integers(2**31 - 1))).fit(view)
        maps.append(fmap)
        feats.append(fmap.transform(view))  # on the blocks' workers: co-located as the views
        used.append(kp)
    return MultiViewBlocks(feats, mv.names, mv.labels, mv.unlabeled), maps, used


class PrimalCoRLS:
    """The system of the module docstring on co-located feature blocks.

    Parameters
    ----------
    features : MultiViewBlocks
        ``Z_s`` per view.
    Y : ndarray of shape (n, n_columns)
        +1/-1 on labeled rows, 0 elsewhere.
    labeled : ndarray of bool, shape (n,)
    gamma_A, mu, formulation
        As :func:`dask_ssl.multiview.corls.corls_system`.
    gram : bool
        Form ``F^T D F`` (one round trip) and solve by Cholesky; else conjugate gradients.
    """

    def __init__(self, features: MultiViewBlocks, Y, labeled, *, gamma_A, mu=1.0,
                 formulation="coupled", gram=True, tol=1e-6, max_iter=1000):
        self.blocks = features.joined()
        self.m = features.n_views
        self.dims = np.array(features.n_features)
        self.splits = np.concatenate([[0], np.cumsum(self.dims)])
        self.n = features.n_rows
        labeled = np.asarray(labeled, dtype=bool)
        self.L = np.flatnonzero(labeled)
        self.l = self.L.size
        c = loss_weights(mu, self.m)
        Z = 1.0 if formulation == "coupled" else float(c.sum())
        self.C = c / (self.l * Z)
        self.gammas = np.broadcast_to(np.asarray(gamma_A, dtype=float), (self.m,)).copy()
        self.averaged = formulation == "averaged"
        self.YL = np.asarray(Y, dtype=float)[self.L]
        self.tol, self.max_iter = tol, max_iter
        off = self.blocks.offsets
        self.rows = [(self.L[(self.L >= off[b]) & (self.L < off[b + 1])] - off[b],)
                     for b in range(self.blocks.n_blocks)]
        trips = self.blocks.round_trips
        if gram:
            parts = self.blocks.call(_grams, self.averaged, per_block=self.rows)
            self.GD = sum(G for G, _ in parts)
            self.FL = np.vstack([FL for _, FL in parts])
        else:
            self.GD = None
            parts = self.blocks.call(_labeled_rows, per_block=self.rows)
            self.ZL = [_vstack([p[s] for p in parts]) for s in range(self.m)]
        self.setup_round_trips = self.blocks.round_trips - trips
        self.ridge = np.repeat(self.gammas, self.dims)

    # the system ---------------------------------------------------------------------------
    def _view_rows(self, s):
        return self.FL[:, self.splits[s]:self.splits[s + 1]] if self.GD is not None \
            else self.ZL[s]

    def rhs(self) -> np.ndarray:
        return np.vstack([self.C[s] * np.asarray(self._view_rows(s).T @ self.YL)
                          for s in range(self.m)])

    def matrix(self, gamma_C: float) -> np.ndarray:
        """``A`` (Gram path): ``C``-weighted labeled Grams, the ridge, the coupling."""
        g = float(gamma_C) / self.n
        A = -g * self.GD
        for s in range(self.m):
            sl = slice(self.splits[s], self.splits[s + 1])
            Zs = self.FL[:, sl]
            A[sl, sl] += self.C[s] * (Zs.T @ Zs) + g * self.m * self.GD[sl, sl]
        A[np.diag_indices_from(A)] += self.ridge
        return 0.5 * (A + A.T)

    def solve(self, gamma_C: float):
        """``(W, info)``: the stacked weights (sum d_s, n_columns) and the solve's record."""
        R = self.rhs()
        if self.GD is not None:
            W = scipy.linalg.cho_solve(scipy.linalg.cho_factor(self.matrix(gamma_C)), R)
            return W, {"n_iter": 1, "round_trips_per_iter": None}
        keep = np.ones((self.l, R.shape[1]))
        W, n_iter, per_iter = self._cg(R, np.full(R.shape[1], float(gamma_C)), keep, self.tol)
        return W, {"n_iter": n_iter, "round_trips_per_iter": per_iter}

    def _cg(self, R, gamma_C, keep, tol):
        """Block CG for the columns of ``R`` (CG path): ``gamma_C`` per column, ``keep`` the
        labeled rows in each column's loss. Returns ``(W, iterations, round trips a
        product)``."""
        g = np.asarray(gamma_C, dtype=float) / self.n
        off = np.concatenate([[0], np.cumsum([r[0].size for r in self.rows])])
        per_block = [(rows, keep[off[b]:off[b + 1]]) for b, (rows,) in enumerate(self.rows)]
        products = [0]

        def product(P):
            products[0] += 1
            return self.ridge[:, None] * P + sum(self.blocks.call(
                _product, P, self.splits, self.C, g, self.averaged, per_block=per_block,
                combine=sum))

        trips = self.blocks.round_trips
        system = LocalSystem(product, R)
        res = block_cg(system, tol=tol, maxiter=self.max_iter)
        return (system.solution(), int(np.max(res.n_iter)),
                (self.blocks.round_trips - trips) / max(products[0], 1))

    def held_out_outputs(self, gammas, combine) -> tuple[list, str]:
        """Held-out outputs of the prediction on the labeled rows for each coupling in
        ``gammas``, and the criterion: exact leave-one-out on the Gram path
        (:meth:`loo_outputs`), else :data:`~dask_ssl.models._selection.CV_FOLDS`-fold
        cross-validation by one block CG whose columns are every (fold, coupling, target)
        (a held-out row an unlabeled row of its fold's fit, ``l`` kept, as in the
        leave-one-out; to :data:`~dask_ssl.models._graph_weight.CV_TOL`)."""
        if self.GD is not None:
            return [self.loo_outputs(g, combine) for g in gammas], "loo"
        from ..models._graph_weight import CV_TOL, truth_of
        from ..models._selection import CV_FOLDS, fold_of

        fold = fold_of(truth_of(self.YL), min(CV_FOLDS, self.l))
        k, c = int(fold.max()) + 1, self.YL.shape[1]
        cases = [(f, r, t) for f in range(k) for r in range(len(gammas)) for t in range(c)]
        keep = np.column_stack([fold != f for f, _, _ in cases]).astype(float)
        targets = self.YL[:, [t for _, _, t in cases]] * keep
        R = np.vstack([self.C[s] * np.asarray(self.ZL[s].T @ targets) for s in range(self.m)])
        W, self.cv_iterations, _ = self._cg(R, [gammas[r] for _, r, _ in cases], keep, CV_TOL)
        views = np.stack([np.asarray(self.ZL[s] @ Ws) for s, Ws in enumerate(self.split(W))])
        scores = views.mean(axis=0) if combine == "mean" else views[combine]
        outputs = []
        for r in range(len(gammas)):
            out = np.empty_like(self.YL)
            for f in range(k):
                cols = [j for j, (ff, rr, _) in enumerate(cases) if ff == f and rr == r]
                out[fold == f] = scores[np.ix_(fold == f, cols)]
            outputs.append(out)
        return outputs, "cv"

    def loo_outputs(self, gamma_C: float, combine) -> np.ndarray:
        """Exact leave-one-out outputs of the prediction (``combine``: "mean" or a view's
        index) on the labeled rows, shape (l, n_columns) (module docstring; Gram path)."""
        m, l = self.m, self.l
        g = float(gamma_C) / self.n
        factor = scipy.linalg.cho_factor(self.matrix(gamma_C))
        W = scipy.linalg.cho_solve(factor, self.rhs())
        # U: for every labeled row and view, that view's features in its slot (D x m l)
        U = np.zeros((self.splits[-1], m * l))
        for s in range(m):
            sl = slice(self.splits[s], self.splits[s + 1])
            U[sl, s * l:(s + 1) * l] = self.FL[:, sl].T
        AU = scipy.linalg.cho_solve(factor, U)
        # S[i, s, t] = u_(s,i)^T A^-1 u_(t,i)
        S = np.einsum("dsi,dti->ist", U.reshape(-1, m, l), AU.reshape(-1, m, l))
        O = np.einsum("dsi,dc->isc", U.reshape(-1, m, l), W)     # views' outputs, (l, m, c)
        Wi = -np.diag(self.C)
        if self.averaged:
            Wi = Wi + g * (m * np.eye(m) - np.ones((m, m)))
        rhs = O - np.einsum("ist,t,ic->isc", S, self.C, self.YL)
        out = np.linalg.solve(np.eye(m)[None] + S @ Wi[None], rhs)
        return out.mean(axis=1) if combine == "mean" else out[:, combine]

    def view_scores(self, W) -> list:
        """Each view's outputs on the training rows, one (n, n_columns) array per view: one
        round trip returning n-sized columns."""
        parts = self.blocks.call(_scores, W, self.splits)
        return list(np.concatenate(parts, axis=1))

    def split(self, W) -> list:
        return [W[self.splits[s]:self.splits[s + 1]] for s in range(self.m)]


def _vstack(parts):
    return sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.vstack(parts)
