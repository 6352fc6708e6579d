"""Globally optimal S3VM by branch and bound over the unlabeled labels (thesis 3.2)."""

from __future__ import annotations

import numpy as np

from ._kernel_s3vm import KernelExpansionClassifier, check_count, fit_weighted
from ._s3vm import positive_fraction
from .base import check_positive


class NodeLimitError(RuntimeError):
    """Branch and bound evaluated ``max_nodes`` nodes without proving a labeling optimal."""


class BranchAndBoundS3VM(KernelExpansionClassifier):
    """The globally optimal kernel S3VM for small problems, by branch and bound (thesis 3.2).

    Minimizes, over f and the labels y_j of the u unlabeled rows with exactly ``round(r u)`` of
    them positive (the balance constraint Eq 3.2), the S3VM objective in the normalization of
    :class:`KernelDAS3VM` (Eq 3.7 at T = 0):
    ``gamma/2 ||f||_K^2 + 1/l sum_l V(y_i f_i) + gamma_u/u sum_u V(y_j f_j)``, so that the two
    objectives compare directly (Eq 3.1 with unit loss weights has gamma_3.1 = l gamma and
    gamma'_3.1 = l gamma_u / u).

    The search tree branches on one unlabeled row's label per level (Fig 3.2). A node's lower
    bound is the objective of the SVM trained on the labeled rows and the rows labeled so far,
    the others dropped: their loss terms are >= 0, so no completion can do better, and the
    bound grows down the tree to the objective itself at a leaf (3.2.2). It is raised by the
    least increase that labeling any one more row must cost (from the regularizer's strong
    convexity), which prunes more of the tree near its leaves. A node that cannot meet
    the balance is dropped; once one class has all its rows the rest is forced. The tree is
    explored depth first; at each node the branch goes on the unlabeled row the node's SVM is
    most confident about (largest ``|f_j|``), its predicted label first (the thesis' labeling-
    confidence heuristic), so the first leaf is a self-training labeling and later ones are
    pruned against it. Each node's SVM starts from its parent's coefficients.

    Exponential in the worst case: for small u (tens to a few hundred rows where the clusters
    are well separated and gamma, gamma_u and the kernel width suit them, 3.3). Past
    ``max_nodes`` evaluated nodes, :class:`NodeLimitError` is raised: never a labeling that is
    not proven optimal.

    Parameters
    ----------
    loss : {"l2", "sqr"}, default="l2"
        V as in :class:`KernelDAS3VM`: half squared hinge or half squared loss.
    gamma, gamma_u, pos_fraction, kernel, kernel_params, unlabeled
        As in :class:`KernelDAS3VM` (lambda, lambda', r of Eq 3.7-3.8).
    max_nodes : int, default=100000
        Nodes (SVM trainings) allowed per one-vs-rest problem.
    tol : float, default=1e-8
        Margin tolerance of each node's finite-Newton solve (``loss="l2"``).
    max_iter : int, default=100
        Newton steps per node.

    Attributes
    ----------
    classes_, X_fit_, dual_coef_, transduction_ : as :class:`KernelDAS3VM`
    objective_ : float or ndarray
        The global minimum of the objective (per one-vs-rest problem).
    n_iter_ : int or ndarray
        Nodes evaluated.
    history_ : list of dict
        One record per improvement of the best labeling: ``node``, ``depth`` (rows labeled)
        and ``objective``.
    """

    def __init__(self, *, loss="l2", gamma=1e-3, gamma_u=1.0, pos_fraction=None, kernel="rbf",
                 kernel_params=None, max_nodes=100000, tol=1e-8, max_iter=100, unlabeled=None):
        self.loss = loss
        self.gamma = gamma
        self.gamma_u = gamma_u
        self.pos_fraction = pos_fraction
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.max_nodes = max_nodes
        self.tol = tol
        self.max_iter = max_iter
        self.unlabeled = unlabeled

    def _check_params(self) -> None:
        self._check_common()
        check_count("max_nodes", self.max_nodes)
        check_count("max_iter", self.max_iter)
        check_positive("tol", self.tol)

    def _fit_binary(self, K, y):
        u = int((y == 0).sum())
        n_pos = round(positive_fraction(self, y) * u)
        if not 0 < n_pos < u:
            raise ValueError(f"pos_fraction gives {n_pos} of {u} unlabeled rows positive; "
                             "both classes need at least one")
        search = _Search(self, K, y, n_pos)
        search.run()
        labels, alpha = search.best_labels, search.best_alpha
        return {"alpha": alpha, "objective": search.best, "n_iter": search.nodes,
                "history": search.history, "transduction": labels}


class _Search:
    """Depth-first branch and bound over the unlabeled labels of one binary problem."""

    def __init__(self, est, K, y, n_pos):
        self.est = est
        self.K = K
        self.y = y
        self.lab = y != 0
        self.unl = np.flatnonzero(~self.lab)
        self.n_pos = n_pos
        self.n_neg = self.unl.size - n_pos
        self.cost = np.where(self.lab, 1.0 / self.lab.sum(), est.gamma_u / self.unl.size)
        self.best = np.inf
        self.best_labels = None
        self.best_alpha = None
        self.nodes = 0
        self.history = []

    def bound(self, z, alpha_warm):
        """The SVM on the rows labeled in z (0 = not yet): objective, alpha on all rows."""
        self.nodes += 1
        if self.nodes > self.est.max_nodes:
            raise NodeLimitError(
                f"branch and bound evaluated max_nodes={self.est.max_nodes} nodes without "
                f"proving a labeling optimal (best objective so far {self.best:.6g}); raise "
                "max_nodes, or use fewer unlabeled rows or better separated settings")
        P = np.flatnonzero(z != 0)
        c = self.cost[P]
        alpha_P, _, obj, _ = fit_weighted(self.K[np.ix_(P, P)], np.where(z[P] > 0, c, 0.0),
                                          np.where(z[P] < 0, c, 0.0), self.est.gamma,
                                          self.est.loss, alpha_warm[P], tol=self.est.tol,
                                          max_iter=self.est.max_iter)
        alpha = np.zeros(z.size)
        alpha[P] = alpha_P
        return obj, alpha

    def one_more(self, f, free) -> float:
        """What labeling one more free row must add to the node's objective, at least.

        The node's objective is gamma-strongly convex in the RKHS norm, so any f has
        ``J_P(f) >= J_P(f*) + gamma/2 ||f - f*||^2``; a completion adds ``c V(y_j f(x_j))`` for
        every free row, and moving ``f(x_j)`` by t costs at least ``t^2 / K_jj`` in squared
        norm. For one row with ``a = 1 - |f*(x_j)|`` (its better label) the least increase is
        ``c a^2 gamma / (2 (gamma + c K_jj))``; every completion adds at least the largest.
        """
        c = self.cost[free]
        a = np.maximum(0.0, 1.0 - np.abs(f)) if self.est.loss == "l2" else 1.0 - np.abs(f)
        gamma = self.est.gamma
        return float(np.max(0.5 * c * a ** 2 * gamma / (gamma + c * self.K[free, free])))

    def child(self, z, j, label):
        """z with row j labeled, the rest forced once a class is full; None if unbalanced."""
        z = z.copy()
        z[j] = label
        zu = z[self.unl]
        pos, neg = int((zu > 0).sum()), int((zu < 0).sum())
        if pos > self.n_pos or neg > self.n_neg:
            return None
        free = self.unl[zu == 0]
        if pos == self.n_pos:
            z[free] = -1.0
        elif neg == self.n_neg:
            z[free] = 1.0
        return z

    def run(self):
        z0 = np.where(self.lab, self.y, 0.0)
        # stack of (labels, parent's alpha, parent's bound): a child's bound is at least its
        # parent's, so a child is pruned by that before its own SVM is trained
        stack = [(z0, np.zeros(z0.size), -np.inf)]
        while stack:
            z, warm, parent_bound = stack.pop()
            if parent_bound >= self.best:
                continue
            obj, alpha = self.bound(z, warm)
            if obj >= self.best:
                continue
            free = self.unl[z[self.unl] == 0]
            if free.size == 0:
                self.best, self.best_labels, self.best_alpha = obj, z, alpha
                self.history.append({"node": self.nodes, "depth": int((z != 0).sum()),
                                     "objective": obj})
                continue
            f = self.K[free] @ alpha
            obj += self.one_more(f, free)
            if obj >= self.best:
                continue
            k = int(np.argmax(np.abs(f)))
            first = 1.0 if f[k] >= 0 else -1.0
            for label in (-first, first):  # pushed second-first: the predicted label is popped first
                zc = self.child(z, free[k], label)
                if zc is not None:
                    stack.append((zc, alpha, obj))
