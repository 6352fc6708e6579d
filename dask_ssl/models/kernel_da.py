"""Deterministic annealing S3VM with a kernel (thesis 3.5, Eqs 3.7-3.11, Table 3.3)."""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import brentq
from scipy.special import entr, expit, logit, rel_entr

from ._constraints import AUTO, NON_NEGATIVE, constraints
from ._gamma_u_selection import AUTO_GAMMA_U, choose_gamma_u, resolve_gamma_u
from ._input import target_columns
from ._kernel_s3vm import (KERNEL_S3VM_LOSSES, KernelExpansionClassifier, fit_weighted, half_loss,
                           s3vm_objective, weighted_alpha, weighted_factor)
from ._s3vm import positive_fraction


class KernelDAS3VM(KernelExpansionClassifier):
    """Deterministic annealing semi-supervised kernel SVM / RLS (thesis 3.5, Table 3.3).

    Minimizes over the expansion coefficients alpha (``f = sum_i alpha_i K(., x_i)`` over the
    l + u training rows, Eq 3.9, no bias) and soft labels p of the unlabeled rows, at a
    temperature T annealed from ``initial_temperature`` by ``1/anneal_factor`` per stage, Eq 3.7:
    ``gamma_A/2 ||f||_K^2 + 1/l sum_l V(y_i f_i) + gamma_u/u sum_u [p_j V(f_j) + (1-p_j) V(-f_j)]
    + T/u sum_u [p_j log p_j + (1-p_j) log(1-p_j)]`` subject to ``mean(p) = pos_fraction``
    (Eq 3.8), alternating an alpha-step at fixed p with the p-step of Eq 3.11, and returns the
    alpha with the lowest S3VM objective seen along the path (as :class:`DAS3VM`).

    The Gram matrix of the training rows and the n x n systems are dense on the driver: this is
    for the sizes the seeds ran (n up to a few thousand; 32 MB per matrix at n = 2,000).

    Parameters
    ----------
    loss : {"squared_hinge", "squared"}, default="squared_hinge"
        V: ``"squared_hinge"`` the half squared hinge ``max(0, 1-t)^2/2`` (DA(l2)), alpha-step
        by finite Newton (index sets i0..i3 of 3.5.1, exact line search); ``"squared"`` the half squared loss
        ``(1-t)^2/2`` (DA(sqr)), alpha-step Eq 3.10 ``alpha = (K + gamma_A C)^-1 Y``,
        ``C = diag(l..l, u/gamma_u..u/gamma_u)``, ``Y = [y, 2p - 1]``, whose matrix does not
        depend on p: it is factored once per fit (for all classes) and each step is a solve.
    gamma_A : float, default=1e-3
        lambda of Eq 3.7 (the linear DA's ``gamma_A``, svmlin ``-W``), on ``||f||_K^2 / 2``.
        Eq 3.1 / Table 3.1's gamma (with unit loss weights) is ``l`` times this.
    gamma_u : float or "auto", default=1.0
        lambda' of Eq 3.7 (gamma', svmlin ``-U``): unlabeled losses weigh ``gamma_u / u``.
        Eq 3.1's gamma' is ``gamma_u l / u``. 0 gives kernel RLS / L2-SVM on the labels alone
        (fitted on the labeled rows' kernel matrix; the unlabeled rows' coefficients are 0).
        "auto": chosen among 0, 0.01, 0.1 and 1 by cross-validation on the labeled rows, as
        :class:`TSVM`'s (one kernel matrix for every fold; each fold's annealing starts from
        its supervised fit; DA(sqr) factors one matrix per fold and candidate).
    pos_fraction : float, optional
        r of Eq 3.8 (svmlin ``-R``); default the positive fraction among the labeled rows
        (per class, one-vs-rest). The constraint uses ``round(r u) / u``, as :class:`DAS3VM`.
    kernel : str or callable, default="rbf"
        By scikit-learn :func:`~sklearn.metrics.pairwise.pairwise_kernels` name, or a callable
        returning the Gram matrix of two row sets.
    kernel_params : dict, optional
        The kernel's parameters (RBF: ``{"gamma": 1 / (2 sigma^2)}``). Without an RBF
        ``gamma`` the width is the rows' global scale, ``1 / (n_features var(X))``
        (scikit-learn's ``SVC(gamma="scale")``; no label read).
    initial_temperature : float, default=10
        Starting temperature T (Table 3.3). Eq 3.7 writes the entropy as ``T/u``, ch. 6 as
        ``T/(2u)`` with a loss twice as large: the same T means the same annealing path.
    anneal_factor : float, default=1.5
        R of Table 3.3: T is divided by it after every stage.
    anneal_tol : float, default=1e-6
        Inner loop ends when KL(p, q) < u anneal_tol; annealing ends when the entropy of p falls
        below u anneal_tol (Table 3.3, as :class:`DAS3VM`). DAS3VM's second rule (the entropy
        changed by less than u anneal_tol over a stage, for identical rows that the balance
        splits) is not used: with the few hundred unlabeled rows of kernel problems the entropy
        changes that little per stage while p is still near r at high T (two moons: annealing
        stopped at T = 4 with every p_j = 0.5 +- 0.01). A split group of identical rows runs
        to ``max_stages`` instead.
    max_stages : int, default=200
    max_inner : int, default=100
        Bounds on temperatures and on alpha-step / p-step alternations per temperature.
    tol : float, default=1e-8
        Margin tolerance of the finite-Newton optimality check (``loss="squared_hinge"``).
    max_iter : int, default=100
        Newton steps per alpha-step (``loss="squared_hinge"``).
    unlabeled : scalar, default=-1
        Marker of unlabeled rows in ``y``.
    checkpoint : str, optional
        Directory (local path or fsspec URL) for a snapshot after every stage; ``fit(...,
        resume=True)`` continues from it (``part-<k>`` subdirectories for one-vs-rest).
    verbose : bool, default=False

    Attributes
    ----------
    classes_, X_fit_ : the classes and the training rows (expansion points)
    kernel_params_ : dict or None
        The kernel parameters used, the RBF width filled in where it was not given.
    dual_coef_ : ndarray of shape (n, 1) or (n, n_classes)
        alpha per one-vs-rest problem.
    soft_labels_ : ndarray of shape (u,) or (u, n_classes)
        The p that the returned alpha was fitted to (unlabeled rows in order); r at
        ``gamma_u_ = 0``.
    gamma_u_, selection_
        As :class:`TSVM`'s, and recorded in the checkpoint alike.
    selection_cost_
        As :class:`TSVM`'s.
    objective_, n_iter_, history_, transduction_
        As :class:`DAS3VM` (``history_`` one record per temperature).
    """

    def __init__(self, *, loss="squared_hinge", gamma_A=1e-3, gamma_u=1.0, pos_fraction=None,
                 kernel="rbf", kernel_params=None, initial_temperature=10.0, anneal_factor=1.5,
                 anneal_tol=1e-6, max_stages=200, max_inner=100, tol=1e-8, max_iter=100,
                 unlabeled=-1, checkpoint=None, verbose=False):
        self.loss = loss
        self.gamma_A = gamma_A
        self.gamma_u = gamma_u
        self.pos_fraction = pos_fraction
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.initial_temperature = initial_temperature
        self.anneal_factor = anneal_factor
        self.anneal_tol = anneal_tol
        self.max_stages = max_stages
        self.max_inner = max_inner
        self.tol = tol
        self.max_iter = max_iter
        self.unlabeled = unlabeled
        self.checkpoint = checkpoint
        self.verbose = verbose

    _parameter_constraints = constraints(__init__, loss=[KERNEL_S3VM_LOSSES],
                                         gamma_u=[NON_NEGATIVE, AUTO])

    def _settle(self, K, codes, targets, resume, supervised) -> None:
        """``gamma_u_`` and ``selection_`` for every one-vs-rest part (see :class:`TSVM`)."""
        if supervised:
            self.gamma_u_ = 0.0 if isinstance(self.gamma_u, str) else float(self.gamma_u)
            self.selection_ = []
            return
        resolve_gamma_u(self, self.checkpoint, resume, lambda: choose_gamma_u(
            self, codes, targets,
            lambda fold_codes, held: self._fold_outputs(K, targets, fold_codes, held)))

    def _fold_outputs(self, K, targets, fold_codes, held) -> np.ndarray:
        """Every candidate's outputs on the rows ``held`` after fitting on the labels
        ``fold_codes``: shape ``(n_candidates, held.size, n_targets)``."""
        out = np.empty((len(AUTO_GAMMA_U), held.size, len(targets)))
        # DA(sqr)'s factors depend on the fold's labeled rows and gamma_u, not on the target
        shared = {}
        for k, t in enumerate(targets):
            y = target_columns(fold_codes, [t])[:, 0]
            for j, alpha in enumerate(self._candidate_fits(K, y, shared)):
                out[j, :, k] = K[held] @ alpha
        return out

    def _candidate_fits(self, K, y, shared) -> list:
        """alpha at each gamma_u of :data:`AUTO_GAMMA_U`; every annealing starts from the
        supervised alpha (its first alpha-step, at p = r, is convex: the start only saves
        Newton steps)."""
        from ..loop import StageLoop

        alphas = [self._fit_labeled(K, y)["alpha"]]
        r = positive_fraction(self, y)
        for g in AUTO_GAMMA_U[1:]:
            driver = KernelDADriver(self, K, y, r, g, shared)
            StageLoop(driver).run(alphas[0])
            alphas.append(driver.result()["alpha"])
        return alphas

    def _fit_labeled(self, K, y) -> dict:
        """gamma_u = 0: the supervised fit on the labeled rows alone (coefficients 0 on the
        unlabeled ones), unlabeled rows transduced by the sign of their outputs."""
        lab = y != 0
        sub = self._fit_supervised(K[np.ix_(lab, lab)], y[lab], None)
        alpha = np.zeros(y.size)
        alpha[lab] = sub["alpha"]
        f = K[:, lab] @ sub["alpha"]
        return {**sub, "alpha": alpha,
                "attrs": {"soft_labels_": np.full(int((~lab).sum()), positive_fraction(self, y))},
                "transduction": np.where(lab, y, np.where(f > 0, 1.0, -1.0))}

    def _fit_binary(self, K, y, part):
        from ..loop import StageLoop

        if self.gamma_u_ == 0:
            return self._fit_labeled(K, y)
        driver = KernelDADriver(self, K, y, positive_fraction(self, y), self.gamma_u_,
                                self._shared)
        StageLoop(driver, checkpoint=part.checkpoint, verbose=self.verbose).run(
            resume=part.resume)
        return driver.result()


class SqrStep:
    """The alpha-step of DA(sqr), Eq 3.10, with its matrix factored once.

    ``(K + gamma_A C) alpha = Y`` is solved in the equivalent symmetric form ``(gamma_A I + S K S)
    S^-1 alpha = S Y``, ``S^2 = C^-1 = diag(1/l, gamma_u/u)``, which also holds at gamma_u = 0
    (where C is infinite and alpha is 0 on the unlabeled rows).
    """

    def __init__(self, K, labeled, gamma_A, gamma_u):
        self.unl = ~labeled
        self.w = np.where(labeled, 1.0 / labeled.sum(), gamma_u / self.unl.sum())
        self.factor = weighted_factor(K, self.w, gamma_A)
        self.K = K
        self.gamma_A = gamma_A

    def alpha(self, y, p) -> np.ndarray:
        """Eq 3.10 for labels y (+1/-1 labeled, 0 unlabeled) and soft labels p."""
        Y = y.copy()
        Y[self.unl] = 2.0 * p - 1.0
        return weighted_alpha(self.K, self.w, self.w * Y, self.gamma_A, factor=self.factor)


class KernelDADriver:
    """Kernel DA's state, one stage per temperature (protocol of :class:`dask_ssl.loop.StageLoop`).

    Everything lives on the driver, so there are no worker blocks to re-place after a loss
    (``blocks = None``); ``w`` is alpha (the loop's name for the current solution).
    """

    kind = "kda"
    blocks = None

    def __init__(self, est, K, y, r, gamma_u, shared):
        self.est = est
        self.gamma_u = gamma_u
        self.K = K
        self.y = y
        self.lab = y != 0
        self.unl = ~self.lab
        self.u = int(self.unl.sum())
        # a whole number of positives, as in DAS3VM: else one p_j stays fractional as T -> 0
        self.r = round(r * self.u) / self.u
        if not 0.0 < self.r < 1.0:
            raise ValueError(f"pos_fraction {r} gives {round(r * self.u)} of {self.u} unlabeled "
                             "rows positive; both classes need at least one")
        cl = 1.0 / self.lab.sum()
        self.cpos_l = np.where(y > 0, cl, 0.0)
        self.cneg_l = np.where(y < 0, cl, 0.0)
        self.cu = gamma_u / self.u
        if est.loss == "squared":
            # the factor depends on K, the labeled rows, gamma_A and gamma_u only: ``shared``
            # (per fit, or per selection fold) keeps it for every one-vs-rest part
            if ("squared", gamma_u) not in shared:
                shared["squared", gamma_u] = SqrStep(K, self.lab, est.gamma_A, gamma_u)
            self.sqr = shared["squared", gamma_u]
        self.w = None
        self.p = np.full(self.u, self.r)
        self.stage = 0
        self.T = float(est.initial_temperature)
        self.nu = 0.0
        self.best = (np.inf, None, None)
        self.history = []
        self.done = False

    def _alpha_step(self):
        est = self.est
        if est.loss == "squared":
            alpha = self.sqr.alpha(self.y, self.p)
            return alpha, self.K @ alpha
        cpos, cneg = self.cpos_l.copy(), self.cneg_l.copy()
        cpos[self.unl] = self.cu * self.p
        cneg[self.unl] = self.cu * (1.0 - self.p)
        alpha, f, _, _ = fit_weighted(self.K, cpos, cneg, est.gamma_A, "squared_hinge", self.w,
                                      tol=est.tol,
                                      max_iter=est.max_iter)
        return alpha, f

    def _p_step(self, f_u):
        """Eq 3.11 at the balance root: ``p_j = 1/(1 + exp((g_j - nu)/T))``,
        ``g_j = gamma_u [V(f_j) - V(-f_j)]``, nu with ``mean(p) = r``.

        The root is sought as ``tau = (nu - min g) / T`` against ``d_j = (g_j - min g) / T``,
        ``p_j = expit(tau - d_j)``: late in the annealing T is below the rounding of ``g``
        (1e-16 against g near 1), and ``(nu - g_j) / T`` formed from ``nu`` itself lost the
        bracket (the rows tied at ``min g`` all got one rounding error, 0.1 of their logit)."""
        est = self.est
        g = self.gamma_u * (half_loss(f_u, est.loss) - half_loss(-f_u, est.loss))
        target = self.r * self.u
        d = (g - g.min()) / self.T
        # at tau = logit(r) every p_j <= r, at logit(r) + max d every p_j >= r
        lo = logit(self.r)
        hi = lo + d.max()

        def excess(tau):
            return expit(tau - d).sum() - target

        if excess(lo) >= 0.0:
            tau = lo
        elif excess(hi) <= 0.0:
            tau = hi
        else:
            tau = brentq(excess, lo, hi, xtol=1e-12, maxiter=500)
        self.nu = float(g.min() + self.T * tau)
        return expit(tau - d)

    def run_stage(self):
        t0 = time.perf_counter()
        est = self.est
        inner = 0
        while True:
            alpha, f = self._alpha_step()
            self.w = alpha
            objective = s3vm_objective(alpha, f, self.y, est.gamma_A, self.gamma_u, est.loss)
            if objective < self.best[0]:
                self.best = (objective, alpha.copy(), self.p.copy())
            q = self.p
            self.p = self._p_step(f[self.unl])
            kl = float(rel_entr(self.p, q).sum() + rel_entr(1.0 - self.p, 1.0 - q).sum())
            entropy = float(entr(self.p).sum() + entr(1.0 - self.p).sum())
            inner += 1
            if kl < self.u * est.anneal_tol or inner >= est.max_inner:
                break
        record = {"stage": self.stage, "T": self.T, "objective": objective, "entropy": entropy,
                  "kl": kl, "inner": inner, "mean_p": float(self.p.mean()),
                  "seconds": time.perf_counter() - t0, "round_trips": 0}
        self.history.append(record)
        self.stage += 1
        if entropy < self.u * est.anneal_tol or self.stage >= est.max_stages:
            self.done = True
        else:
            self.T /= est.anneal_factor
        return record

    def snapshot(self) -> tuple[dict, dict]:
        doc = {"kind": self.kind, "stage": self.stage, "T": self.T, "nu": self.nu,
               "done": self.done, "best_objective": self.best[0], "history": self.history,
               "r": self.r}
        empty = np.zeros(0)
        arrays = {"w": empty if self.w is None else self.w, "p": self.p,
                  "w_best": empty if self.best[1] is None else self.best[1],
                  "p_best": empty if self.best[2] is None else self.best[2]}
        return doc, arrays

    def restore(self, doc: dict, arrays: dict):
        if arrays["p"].shape != (self.u,) or arrays["w"].size not in (0, self.K.shape[0]):
            raise ValueError(f"the checkpoint is of a problem with {arrays['p'].size} unlabeled "
                             f"rows, not this one ({self.u})")
        self.stage = doc["stage"]
        self.T = doc["T"]
        self.nu = doc["nu"]
        self.done = doc["done"]
        self.r = doc["r"]
        self.history = list(doc["history"])
        self.w = arrays["w"].copy() if arrays["w"].size else None
        self.p = arrays["p"].copy()
        best = (arrays["w_best"].copy(), arrays["p_best"].copy())
        self.best = (doc["best_objective"],) + (best if best[0].size else (None, None))

    def result(self) -> dict:
        objective, alpha, p = self.best
        f = self.K @ alpha
        return {"alpha": alpha, "objective": objective, "n_iter": self.stage,
                "history": self.history, "attrs": {"soft_labels_": p},
                "transduction": np.where(self.y != 0, self.y, np.where(f > 0, 1.0, -1.0))}
