"""Deterministic annealing semi-supervised L2-SVM (thesis 6.4; svmlin ``-A 3``) on row blocks."""

from __future__ import annotations

import time

import numba
import numpy as np
from scipy.special import logit

from ..linalg import workerstate
from ._constraints import AUTO, KERNELS, NON_NEGATIVE, constraints
from ._gamma_u_selection import AUTO_GAMMA_U
from ._s3vm import (UNCHECKPOINTED, LinearS3VM, block_outputs, positive_fraction, s3vm_arrays,
                    tsvm_objective, tsvm_objective_parts)
from .base import LINEAR_SOLVERS, hinge_costs
from .l2svm import init_blocks

#: Each further round trip of the balance root evaluates an even grid over the bracket plus
#: Newton's guess and points at these multiples of its last step around it (the guess is
#: usually within a small fraction of that step, so the bracket collapses onto it).
ROOT_GRID = 5
ROOT_PROBES = np.array([-4.0, -1.0, -0.25, -1 / 64, 0.0, 1 / 64, 0.25, 1.0, 4.0])


# worker side ------------------------------------------------------------------------------

def _set_costs(st, cu):
    """Eq 6.11 in two-term form: an unlabeled row carries cost cu p for its +1 copy and
    cu (1 - p) for its -1 copy; the solver keeps whichever copies are inside their margins."""
    unl = st["unl"]
    st["cpos"] = np.where(st["ylab"] > 0, st["cl"], 0.0) + np.where(unl, cu * st["p"], 0.0)
    st["cneg"] = np.where(st["ylab"] < 0, st["cl"], 0.0) + np.where(unl, cu * (1.0 - st["p"]), 0.0)


def ws_install_p(i, X, p, token, cu):
    """Install a block's p (from a snapshot or the initial r) and the costs it implies."""
    st = workerstate.get(token, i)
    st["p"] = np.asarray(p, dtype=np.float64).copy()
    _set_costs(st, cu)


def epi_gaps(i, X, st, gamma_u, nus, T):
    """After a w-step: ``g_j = gamma' [l2(o_j) - l2(-o_j)]`` (Eq 6.12) on unlabeled rows, their
    range (to bracket the balance root), the balance sums at the driver's first candidates for
    nu (around the previous root) and the TSVM objective parts."""
    g = _gaps(st["o"], st["unl"], gamma_u)
    st["g"] = g
    st["g_levels"] = _levels(g)
    lo, hi = (float(g.min()), float(g.max())) if g.size else (np.inf, -np.inf)
    return lo, hi, _balance(st["g_levels"], nus, T), tsvm_objective_parts(st)


@numba.njit(cache=True, nogil=True)
def _gaps(o, unl, gamma_u):
    g = np.empty(np.count_nonzero(unl))
    k = 0
    for i in range(o.shape[0]):
        if unl[i]:
            g[k] = gamma_u * (max(0.0, 1.0 - o[i]) ** 2 - max(0.0, 1.0 + o[i]) ** 2)
            k += 1
    return g


def _levels(g):
    """Distinct values of g, ascending, with the number of rows below each: identical rows
    (KDD99 has groups of thousands) then cost one exponential per group, not per row."""
    values, counts = np.unique(g, return_counts=True)
    return values, counts.astype(np.float64), np.concatenate([[0], np.cumsum(counts)])


#: |2 nu - g| / T beyond which p_j is 0 or 1 to within 5e-22 (expit(-48)).
SATURATED = 48.0


def _balance(levels, nus, T):
    """``sum_j p_j(nu)`` and its nu-derivative at each candidate; only the rows whose p is not
    saturated (a window of the sorted g, narrow once T is small) pay for an exponential."""
    values, counts, below_count = levels
    below = np.searchsorted(values, 2.0 * nus - SATURATED * T, side="left")
    above = np.searchsorted(values, 2.0 * nus + SATURATED * T, side="right")
    return _balance_windows(values, counts, below_count, np.asarray(nus, dtype=np.float64),
                            below, above, T)


@numba.njit(cache=True, nogil=True)
def _balance_windows(values, counts, below_count, nus, below, above, T):
    sums = np.empty(nus.shape[0])
    slopes = np.empty(nus.shape[0])
    for k in range(nus.shape[0]):
        s = 0.0
        ds = 0.0
        for j in range(below[k], above[k]):
            p = 1.0 / (1.0 + np.exp((values[j] - 2.0 * nus[k]) / T))
            s += counts[j] * p
            ds += counts[j] * p * (1.0 - p)
        sums[k] = below_count[below[k]] + s
        slopes[k] = (2.0 / T) * ds
    return sums, slopes


def ws_set_unlabeled_cost(i, X, token, cu):
    """Costs of a block's rows at the unlabeled cost ``cu`` of a new stage (p unchanged)."""
    _set_costs(workerstate.get(token, i), cu)


def ws_balance(i, X, token, nus, T):
    """``sum_j p_j(nu)`` and its derivative in nu at each candidate nu."""
    return _balance(workerstate.get(token, i)["g_levels"], nus, T)


def ws_p_step(i, X, token, nu, T, cu):
    """Set p at the balance root; return KL(p, q) against the previous p, the entropy, sum p."""
    st = workerstate.get(token, i)
    p_u, kl, h = _p_update(st["g"], st["p"][st["unl"]], nu, T)
    st["p"] = np.zeros_like(st["p"])
    st["p"][st["unl"]] = p_u
    _set_costs(st, cu)
    return kl, h, float(p_u.sum())


# numpy error model: x log(x / 0) is inf, as scipy's rel_entr gives, not an exception
@numba.njit(cache=True, nogil=True, error_model="numpy")
def _xlogy_ratio(x, y):
    return x * np.log(x / y) if x > 0.0 else 0.0


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _p_update(g, q, nu, T):
    """p at the balance root (Eq 6.12), KL(p, q) to the previous p and the entropy of p."""
    p = np.empty(g.shape[0])
    kl = 0.0
    h = 0.0
    for j in range(g.shape[0]):
        pj = 1.0 / (1.0 + np.exp((g[j] - 2.0 * nu) / T))
        p[j] = pj
        kl += _xlogy_ratio(pj, q[j]) + _xlogy_ratio(1.0 - pj, 1.0 - q[j])
        h -= _xlogy_ratio(pj, 1.0) + _xlogy_ratio(1.0 - pj, 1.0)
    return p, kl, h


def ws_get_p(i, X, token):
    return workerstate.get(token, i)["p"]


# driver side ------------------------------------------------------------------------------

#: First candidates for nu, in units of T around the previous root (p_j(nu) has width ~T).
NU_OFFSETS = np.concatenate([-np.geomspace(1e-6, 100.0, 7)[::-1], [0.0], np.geomspace(1e-6, 100.0, 7)])


def balance_root(blocks, token, lo_g: float, hi_g: float, T: float, r: float, u: int,
                 tol: float, first) -> tuple[float, int]:
    """nu with ``sum_j p_j(nu) = r u`` (Eq 6.12), by batched bracketing + Newton.

    ``first`` is ``(nus, sums, derivatives)`` already evaluated (in the w-step's last round
    trip). Each further round trip evaluates a grid spanning the current bracket plus a Newton
    guess, so the bracket shrinks ~30x per trip and the guess converges quadratically.
    Returns the root and the number of extra round trips.
    """
    # at 2 nu = min g + T logit(r) every p_j <= r, at max g + T logit(r) every p_j >= r
    target = r * u
    shift = T * logit(r)
    a, b = 0.5 * (lo_g + shift), 0.5 * (hi_g + shift)
    nus, sums, dsums = first
    trips = 0
    while True:
        f = sums - target
        k = int(np.argmin(np.abs(f)))
        if abs(f[k]) <= tol or trips >= 60:
            return float(nus[k]), trips
        below, above = nus[f < 0], nus[f > 0]
        a = max(a, below.max()) if below.size else a
        b = min(b, above.min()) if above.size else b
        guess = nus[k] - f[k] / dsums[k] if dsums[k] > 0 else 0.5 * (a + b)
        if not a <= guess <= b:
            guess = 0.5 * (a + b)
        probes = np.clip(guess + abs(guess - nus[k]) * ROOT_PROBES, a, b)
        nus = np.unique(np.concatenate([np.linspace(a, b, ROOT_GRID), probes]))
        parts = blocks.call(ws_balance, token, nus, T)
        trips += 1
        sums = np.sum([p[0] for p in parts], axis=0)
        dsums = np.sum([p[1] for p in parts], axis=0)


class DAS3VM(LinearS3VM):
    """Deterministic annealing semi-supervised L2-SVM (thesis 6.4, Eqs 6.9-6.12).

    Minimizes over w and soft labels p of the unlabeled rows, at a temperature T annealed
    from ``initial_temperature`` by ``1/anneal_factor`` per stage,
    ``gamma_A/2 ||w||^2 + 1/(2l) sum l2(y_i o_i) + gamma_u/(2u) sum [p_j l2(o_j) + (1-p_j) l2(-o_j)]
    + T/(2u) sum [p_j log p_j + (1-p_j) log(1-p_j)]`` subject to ``mean(p) = pos_fraction``,
    and returns the w with the lowest TSVM objective seen along the path.

    gamma' is raised to ``gamma_u`` along the annealing, as TSVM raises it (thesis 6.3): stage
    k runs at ``min(gamma_u, initial_gamma_u * anneal_factor**k)``, and annealing ends only
    once it has reached ``gamma_u``. Why: while T is high, p stays near r and the unlabeled
    term is about ``gamma_u/(2u) sum (1 + o_j^2)``, a ridge on the unlabeled outputs. At the
    full gamma_u it outweighs the labels and turns w away from the directions in which the
    unlabeled rows spread most, which on cluster data are the ones that separate the classes;
    p then hardens around that w, a poor local minimum (g50c: a higher TSVM objective and a
    higher error than TSVM's, or than the L2-SVM on the labels alone). With a small gamma'
    while p hardens, w starts from the labels' direction and p from the clusters' sides.
    ``initial_gamma_u=None`` runs the seeds' schedule (gamma' fixed at ``gamma_u``).

    With ``cold_start`` a second annealing follows from the seeds' relative temperature,
    ``T = initial_temperature * gamma'_0 / gamma_u`` (the seeds start at ten times the loss
    gaps ``g``, which scale with gamma'), and the w with the lowest TSVM objective over both
    paths is returned. Why: the first annealing's long soft phase holds every p near r, so
    its unlabeled term pulls every output towards ``2r - 1``; the ridge this puts on the
    outputs grows with the rows' scale, not with gamma' alone, and on raw features of large
    scale (hundreds) it turns w away from the labels before p hardens. The cold start
    hardens p around the labels' direction within a few stages, as TSVM's ramp does. Both
    paths minimize the same objective, so the lower one is kept whichever start found it.

    Parameters
    ----------
    gamma_A : float, default=1e-3
        Ambient-norm weight (svmlin ``-W``, the thesis' lambda in ch. 6).
    gamma_u : float or "auto", default=1.0
        gamma' (svmlin ``-U``), fixed during annealing. 0 is :class:`L2SVM` on the labeled
        rows. "auto": chosen among 0, 0.01, 0.1 and 1 by cross-validation on the labeled rows,
        as :class:`TSVM`'s (each fold's annealing runs warm-started from its supervised fit).
    pos_fraction : float, optional
        r (svmlin ``-R``); default: the positive fraction among the labeled rows. The balance
        constraint uses ``round(r u) / u`` so that the entropy stopping rule can be met.
    initial_temperature : float, default=10
        Starting temperature.
    initial_gamma_u : float or None, default=1e-5
        gamma' of the first stage (TSVM's gamma'_0), multiplied by ``anneal_factor`` per stage
        up to ``gamma_u``; None: ``gamma_u`` from the first stage (the seeds' DA, svmlin
        ``-A 3``).
    cold_start : bool, default=True
        Also anneal from ``initial_temperature * gamma'_0 / gamma_u`` and keep the path with
        the lower TSVM objective (see above). Without a gamma' schedule
        (``initial_gamma_u=None`` or at least ``gamma_u``) the two starts are one.
    anneal_factor : float, default=1.5
        R: T is divided by it after every stage.
    anneal_tol : float, default=1e-6
        Inner loop ends when KL(p, q) < u anneal_tol; annealing ends when the entropy of p
        falls below u anneal_tol (6.4.3), or when it changes by less than u anneal_tol over a stage:
        identical unlabeled rows share one p, and where the balance splits such a group its
        p stays fractional at any T (KDD99 has thousands of duplicate records).
    max_stages : int, default=200
        Bound on temperatures per annealing (svmlin also bounds its loops). gamma' reaches
        ``gamma_u`` at stage ``ceil(log(gamma_u / initial_gamma_u) / log(anneal_factor))``
        (29 at the defaults); a bound at or below that ends the fit before it does.
    max_inner : int, default=100
        Bound on w-step / p-step alternations per temperature.
    tol, max_iter, fit_intercept, solver, unlabeled, client, n_blocks, checkpoint, verbose
        As in :class:`TSVM`.
    kernel, kernel_params, n_components, landmarks, random_state
        Nystrom features before the linear fit, as in :class:`TSVM` (None: linear).

    Attributes
    ----------
    gamma_u_, selection_
        As :class:`TSVM`'s, and recorded in the checkpoint alike.
    selection_cost_
        As :class:`TSVM`'s.
    """

    def __init__(self, *, gamma_A=1e-3, gamma_u=1.0, pos_fraction=None, initial_temperature=10.0,
                 initial_gamma_u=1e-5, cold_start=True, anneal_factor=1.5, anneal_tol=1e-6,
                 max_stages=200, max_inner=100, tol=1e-6, max_iter=100, fit_intercept=True,
                 solver="auto", unlabeled=-1, client=None, n_blocks=None, checkpoint=None,
                 verbose=False, kernel=None, kernel_params=None, n_components=100,
                 landmarks="uniform", random_state=None):
        self.gamma_A = gamma_A
        self.gamma_u = gamma_u
        self.pos_fraction = pos_fraction
        self.initial_temperature = initial_temperature
        self.initial_gamma_u = initial_gamma_u
        self.cold_start = cold_start
        self.anneal_factor = anneal_factor
        self.anneal_tol = anneal_tol
        self.max_stages = max_stages
        self.max_inner = max_inner
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.unlabeled = unlabeled
        self.client = client
        self.n_blocks = n_blocks
        self.checkpoint = checkpoint
        self.verbose = verbose
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_components = n_components
        self.landmarks = landmarks
        self.random_state = random_state

    _parameter_constraints = constraints(__init__, solver=[LINEAR_SOLVERS],
                                         kernel=[KERNELS, callable, None],
                                         gamma_u=[NON_NEGATIVE, AUTO])

    @staticmethod
    def _driver():
        return DADriver

    def _candidate_fits(self, blocks, y, costs, token) -> list:
        """w at each gamma_u of :data:`AUTO_GAMMA_U`. Every annealing starts from the
        supervised w: its first w-step is a convex problem (p fixed at r), whose answer
        does not depend on the start, so the warm start only saves Newton steps."""
        init_blocks(blocks, token, hinge_costs(y, costs))
        ws = [self._solve_mfn(blocks, token, None)["w"]]
        r = positive_fraction(self, y)
        for g in AUTO_GAMMA_U[1:]:
            driver = DADriver(self, blocks, y, costs, r, token, g)
            ws.append(self._run_stages(driver, ws[0], UNCHECKPOINTED)["w"])
        return ws


class DADriver:
    """DA's small state, one stage per temperature (protocol of :class:`dask_ssl.loop.StageLoop`)."""

    kind = "da"

    def __init__(self, est, blocks, y, costs, r, token, gamma_u):
        self.est = est
        self.blocks = blocks
        self.y = y
        self.costs = costs
        self.token = token
        self.gamma_u = gamma_u
        self.u = int((y == 0).sum())
        # The balance target is a whole number of positives: with r u fractional one p_j stays
        # fractional as T -> 0 and the entropy criterion (6.4.3) could never be met.
        self.r = round(r * self.u) / self.u
        if not 0.0 < self.r < 1.0:
            raise ValueError(f"pos_fraction {r} gives {round(r * self.u)} of {self.u} unlabeled "
                             "rows positive; both classes need at least one")
        self.target = gamma_u
        self.solver = est._solver(blocks, token)
        self.w = None
        self.stage = 0
        self.T = float(est.initial_temperature)
        self.nu = 0.0
        self.best = (np.inf, None)
        self.history = []
        self.done = False
        self._stage_weight()
        # the cold start (see DAS3VM), where a gamma' schedule makes it differ from the first
        cold = est.initial_temperature * self.gamma_u / self.target
        self.starts = [self.T] + ([cold] if est.cold_start and cold < self.T else [])
        self.start = 0

    def _stage_weight(self):
        """gamma' of the current stage (see :class:`DAS3VM`) and the unlabeled cost it gives."""
        start = self.est.initial_gamma_u
        g = self.target
        if start is not None:
            g = min(g, start * self.est.anneal_factor ** self.stage)
        self.gamma_u = g
        self.cu = g / self.u

    def run_stage(self):
        t0 = time.perf_counter()
        # The Gram matrix carries over from the last stage (a stage rerun after a lost worker
        # starts from a full build instead: the same objective up to round-off).
        est = self.est
        previous = self.cu
        self._stage_weight()
        if self.cu != previous:
            self.blocks.call(ws_set_unlabeled_cost, self.token, self.cu)
        inner = 0
        while True:
            nus = self.nu + self.T * NU_OFFSETS
            res = self.solver.solve(self.w, est.gamma_A,
                                    epilogue=(epi_gaps, self.gamma_u, nus, self.T))
            self.w = res.w
            # the objective the path is judged by is the one at the full gamma_u
            objective = tsvm_objective(res.w, est.gamma_A, self.target, self.u,
                                       [e[3] for e in res.extra])
            if objective < self.best[0]:
                self.best = (objective, res.w.copy())
            lo = min(e[0] for e in res.extra)
            hi = max(e[1] for e in res.extra)
            first = (nus, np.sum([e[2][0] for e in res.extra], axis=0),
                     np.sum([e[2][1] for e in res.extra], axis=0))
            self.nu, _ = balance_root(self.blocks, self.token, lo, hi, self.T, self.r, self.u,
                                      1e-12 * self.u, first)
            nu = self.nu
            parts = self.blocks.call(ws_p_step, self.token, nu, self.T, self.cu)
            kl = sum(p[0] for p in parts)
            entropy = sum(p[1] for p in parts)
            inner += 1
            if kl < self.u * est.anneal_tol or inner >= est.max_inner:
                break
        record = {"start": self.start, "stage": self.stage, "gamma_u": self.gamma_u, "T": self.T,
                  "objective": objective, "entropy": entropy, "kl": kl, "inner": inner,
                  "mean_p": sum(p[2] for p in parts) / self.u, "seconds": time.perf_counter() - t0,
                  "round_trips": self.blocks.round_trips, "bytes": self.blocks.bytes_moved}
        stalled = self.stage > 0 and (abs(self.history[-1]["entropy"] - entropy)
                                      < self.u * est.anneal_tol)
        self.history.append(record)
        self.stage += 1
        hardened = self.gamma_u >= self.target and (entropy < self.u * est.anneal_tol or stalled)
        if not (hardened or self.stage >= est.max_stages):
            self.T /= est.anneal_factor
        elif self.start + 1 < len(self.starts):
            self._next_start()
        else:
            self.done = True
        return record

    def _next_start(self):
        """The next annealing: its first temperature and gamma', p back at r."""
        self.start += 1
        self.stage = 0
        self.T = self.starts[self.start]
        self.nu = 0.0
        self._stage_weight()
        self._install_p(None)

    def _install_p(self, p):
        """p on the workers (None: every unlabeled row at r) and the costs it implies."""
        if p is None:
            p = np.where(self.y == 0, self.r, 0.0)
        self.blocks.call(ws_install_p, self.token, self.cu,
                         per_block=[(p[s],) for s in self.blocks.block_slices()])

    def snapshot(self) -> tuple[dict, dict]:
        doc = {"kind": self.kind, "start": self.start, "stage": self.stage, "T": self.T,
               "nu": self.nu, "done": self.done,
               "best_objective": self.best[0], "history": self.history, "r": self.r}
        empty = np.zeros(0)
        arrays = {"w": empty if self.w is None else np.asarray(self.w, dtype=np.float64),
                  "w_best": empty if self.best[1] is None else self.best[1]}
        if self.stage > 0:
            arrays["p"] = np.concatenate(self.blocks.call(ws_get_p, self.token))
        return doc, arrays

    def restore(self, doc: dict, arrays: dict):
        init_blocks(self.blocks, self.token, s3vm_arrays(self.y, self.costs))
        self.solver.reset()
        # a checkpoint written before the cold start existed is in the first annealing
        self.start = doc.get("start", 0)
        self.stage = doc["stage"]
        self.T = doc["T"]
        self.nu = doc["nu"]
        self.done = doc["done"]
        self.history = list(doc["history"])
        self._stage_weight()
        self.w = arrays["w"] if arrays["w"].size else None
        self.best = (doc["best_objective"], arrays["w_best"] if arrays["w_best"].size else None)
        self._install_p(arrays.get("p"))

    def result(self) -> dict:
        objective, w = self.best
        scores = np.concatenate(self.blocks.call(block_outputs, w, self.est.fit_intercept))
        return {"w": w, "objective": objective, "n_iter": len(self.history),
                "history": self.history,
                "transduction": np.where(self.y != 0, self.y, np.where(scores > 0, 1.0, -1.0))}
