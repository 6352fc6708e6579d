"""Multi-switch transductive L2-SVM (thesis 6.3; svmlin ``-A 2``) on row blocks."""

from __future__ import annotations

import time

import numpy as np

from ..linalg import workerstate
from ..solvers.mfn import final_outputs
from ._constraints import AUTO, KERNELS, NON_NEGATIVE, constraints
from ._gamma_u_selection import AUTO_GAMMA_U
from ._s3vm import (UNCHECKPOINTED, LinearS3VM, positive_fraction, s3vm_arrays, tsvm_objective,
                    tsvm_objective_parts, ws_unlabeled_outputs)
from .base import LINEAR_SOLVERS
from .l2svm import init_blocks

#: svmlin's starting gamma' and its growth factor per stage (thesis 6.3.1).
GAMMA_U_START = 1e-5
GAMMA_U_FACTOR = 1.5
#: Switching candidates per list a block sends with its final outputs. Most rounds switch
#: fewer pairs; sending whole lists (up to every unlabeled row inside the margin) made them
#: most of the bytes the driver received. More are fetched when the rule runs past them.
EAGER_CANDIDATES = 2048


# worker side ------------------------------------------------------------------------------

def _set_costs(st, cu):
    """Costs for the current temporary labels ``yt`` and unlabeled cost ``cu = gamma'/u``."""
    yt = st["yt"]
    st["cu"] = cu
    st["cpos"] = np.where(st["ylab"] > 0, st["cl"], 0.0) + np.where(yt > 0, cu, 0.0)
    st["cneg"] = np.where(st["ylab"] < 0, st["cl"], 0.0) + np.where(yt < 0, cu, 0.0)


def pro_set_costs(i, X, st, cu):
    _set_costs(st, cu)


def pro_flip(i, X, st, flips):
    """Switch the temporary labels of the given unlabeled rows (both directions); only their
    costs change (an unlabeled row's are ``cu`` on its label's side and 0 on the other)."""
    yt = st["yt"]
    yt[flips] = -yt[flips]
    st["cpos"][flips] = np.where(yt[flips] > 0, st["cu"], 0.0)
    st["cneg"][flips] = np.where(yt[flips] < 0, st["cu"], 0.0)


def ws_restore(i, X, yt, token, cu):
    st = workerstate.get(token, i)
    st["yt"] = np.asarray(yt, dtype=np.float64).copy()
    _set_costs(st, cu)


def threshold_labels(o_unl, unl, thr, n_ties_pos):
    """Initial temporary labels of a block (0 on labeled rows) from its unlabeled rows'
    outputs: +1 above the threshold and for the first ``n_ties_pos`` ties, else -1."""
    yt = np.zeros(unl.shape[0])
    yt[unl] = np.where(o_unl > thr, 1.0, -1.0)
    yt[np.flatnonzero(unl)[np.flatnonzero(o_unl == thr)[:n_ties_pos]]] = 1.0
    return yt


def ws_threshold(i, X, n_ties_pos, token, thr, cu):
    st = workerstate.get(token, i)
    unl = st["unl"]
    st["yt"] = threshold_labels(final_outputs(st)[unl], unl, thr, n_ties_pos)
    _set_costs(st, cu)


def _first_sorted(keys, idx, limit):
    """``idx`` (increasing) ordered by ``keys``, ties in ``idx`` order, first ``limit`` only:
    a stable sort of the rows at or below the limit-th key instead of the whole list."""
    if keys.size > limit:
        inside = keys <= np.partition(keys, limit - 1)[limit - 1]
        keys, idx = keys[inside], idx[inside]
    return idx[np.argsort(keys, kind="stable")[:limit]]


def _candidates(o, yt, limit):
    """The first ``limit`` switching candidates of each list, sorted (thesis 6.3.2 steps 1-2),
    and each list's full length."""
    pos = np.flatnonzero((yt > 0) & (o < 1.0))
    neg = np.flatnonzero((yt < 0) & (o > -1.0))
    n_pos, n_neg = pos.size, neg.size
    pos = _first_sorted(o[pos], pos, limit)
    neg = _first_sorted(-o[neg], neg, limit)
    return o[pos], pos.astype(np.int64), n_pos, o[neg], neg.astype(np.int64), n_neg


def epi_candidates(i, X, st, limit):
    """This block's first ``limit`` switching candidates and the TSVM objective parts at the
    current outputs."""
    return _candidates(st["o"], st["yt"], limit), tsvm_objective_parts(st)


def ws_candidates(i, X, token, max_pairs):
    """All the switching candidates :func:`merge_switches` may need, at the final outputs."""
    st = workerstate.get(token, i)
    return _candidates(final_outputs(st), st["yt"], max_pairs)


# driver side ------------------------------------------------------------------------------

def threshold_rule(outputs: list, pos_fraction: float):
    """Threshold and per-block tie counts so that ``round(r u)`` unlabeled rows are positive,
    ties broken in row order (the same labels for any partitioning)."""
    allo = np.concatenate(outputs)
    u = allo.size
    n_pos = int(round(pos_fraction * u))
    if n_pos == 0:
        return np.inf, [0] * len(outputs)
    thr = np.partition(allo, u - n_pos)[u - n_pos]
    above = int((allo > thr).sum())
    remaining = n_pos - above
    ties = []
    for o in outputs:
        k = min(remaining, int((o == thr).sum()))
        ties.append(k)
        remaining -= k
    return thr, ties


def merge_switches(cands: list, max_pairs: int):
    """Pick pairs from the tops of the merged lists while output(L+) < output(L-) (6.3.2).

    ``cands``: per block, :func:`_candidates`. Returns ``(flips per block, pairs)``, or None
    when a block's list stops short of the pairs the rule has to compare.
    """
    def merged(col, descending):
        vals = np.concatenate([c[col] for c in cands])
        idx = np.concatenate([c[col + 1] for c in cands])
        blk = np.concatenate([np.full(len(c[col + 1]), b) for b, c in enumerate(cands)])
        # Each block's list is sorted with ties in row order, and the lists are concatenated in
        # block order: a stable sort (a merge of presorted runs) then orders ties by (block,
        # row), the same for any partitioning.
        key = -vals if descending else vals
        order = np.argsort(key, kind="stable")
        # A block that sent fewer than max_pairs of a longer list may still hold entries from
        # its last key on; everything strictly before the smallest such key is complete.
        cut = min((-c[col][-1] if descending else c[col][-1] for c in cands
                   if len(c[col]) < min(c[col + 2], max_pairs)), default=np.inf)
        known = int(np.searchsorted(key[order], cut, side="left"))
        return vals[order], idx[order], blk[order], known, sum(c[col + 2] for c in cands)

    pv, pi, pb, p_known, p_total = merged(0, False)
    nv, ni, nb, n_known, n_total = merged(3, True)
    cap = min(p_total, n_total, max_pairs)
    m = min(cap, p_known, n_known)
    better = pv[:m] < nv[:m]
    if not better.all():
        k = int(np.argmin(better))
    elif m == cap:
        k = cap
    else:
        return None
    flips = [np.concatenate([pi[:k][pb[:k] == b], ni[:k][nb[:k] == b]]) for b in range(len(cands))]
    return flips, k


class TSVM(LinearS3VM):
    """Multi-switch transductive L2-SVM trained by L2-SVM-MFN with seeding (thesis 6.3).

    Minimizes over w and the temporary labels y' of the unlabeled rows
    ``gamma_A/2 ||w||^2 + 1/(2l) sum_l l2(y_i o_i) + gamma_u/(2u) sum_u l2(y'_j o_j)`` subject to a
    fraction ``pos_fraction`` of the unlabeled rows labeled positive.

    Parameters
    ----------
    gamma_A : float, default=1e-3
        Ambient-norm weight (svmlin ``-W``, the thesis' lambda in ch. 6).
    gamma_u : float or "auto", default=1.0
        Weight of the unlabeled loss, gamma' (svmlin ``-U``, lambda_u). Reached by a ramp from
        1e-5 multiplied by 1.5 per stage. 0 is :class:`L2SVM` on the labeled rows. "auto":
        chosen among 0, 0.01, 0.1 and 1 by cross-validation on the labeled rows
        (:mod:`dask_ssl.models._gamma_u_selection`); a weight above 0 replaces the supervised
        0 only when its held-out errors are fewer by more than their standard error. The
        folds' ramps run once, to 1, with a stage at 0.01 and 0.1 forked off where their own
        ramps would end. With fewer than 5 labels in a class: 1, with a ``SelectionWarning``.
    pos_fraction : float, optional
        r, the fraction of unlabeled rows labeled positive (svmlin ``-R``). Default: the positive
        fraction among the labeled rows.
    max_switches : int, optional
        S, pairs switched per inner iteration (svmlin ``-S``): 1 is Joachims' TSVM; the default
        None switches every pair that qualifies (S = u/2).
    tol, max_iter, fit_intercept, solver, client, n_blocks
        As in :class:`L2SVM`; ``max_iter`` bounds each L2-SVM-MFN call.
    unlabeled : scalar, default=-1
        Marker of unlabeled rows in a y passed to ``fit`` (scikit-learn's convention); labels
        read with the data (``y=None``) keep svmlin / SVMlight's 0. With no unlabeled row the
        fit is L2SVM's, with a warning.
    checkpoint : str, optional
        Local path or fsspec URL of a directory to checkpoint to after every stage;
        ``dask-ssl resume`` continues from it.
    max_inner : int, default=10000
        Bound on switch-and-retrain rounds per stage (termination is finite anyway, Prop 6.3.1).
    verbose : bool, default=False
        Print a progress line per stage.
    kernel : str or callable, optional
        Fit on Nystrom features ``K(x, landmarks) K_mm^-1/2`` of this kernel (the seeds'
        kernel S3VM in feature space; :class:`~dask_ssl.kernels.nystrom.NystromFeatures`),
        applied again at prediction. None (default): linear, on the input features.
    kernel_params : dict, optional
        The kernel's parameters, as :func:`sklearn.metrics.pairwise.pairwise_kernels` takes them.
    n_components : int, default=100
        Nystrom landmarks m (with ``kernel``).
    landmarks : {"uniform", "kmeans++"}, default="uniform"
    random_state : int or None
        Seeds the landmark sampling.

    Attributes
    ----------
    gamma_u_ : float
        The gamma_u the fit used (``gamma_u``, or the choice of "auto").
    selection_ : list of dict
        With ``gamma_u="auto"``: per candidate its ``gamma_u``, held-out ``errors``,
        ``error`` rate, ``stderr``, ``squared`` residual and whether it was ``chosen``
        (:mod:`dask_ssl.models._selection`); empty for a given gamma_u or too few labels.
    selection_cost_ : dict or None
        What the selection cost beside the fit at the chosen setting: the ``seconds`` and
        ``round_trips`` to the workers spent choosing, and ``fit_seconds`` and
        ``fit_round_trips`` of the rest of the fit (:mod:`dask_ssl.models._selection_cost`);
        None when nothing was selected, or when a resumed fit read its choice from the
        checkpoint. Stored in ``model.json``.

    Notes
    -----
    ``fit(..., coef_init=W)`` seeds stage 0 with W and skips the gamma' ramp, which protects a
    cold start from poor local minima but is not needed when a retrain starts near its
    answer; a cold start follows the thesis exactly. With ``checkpoint`` and "auto", the
    choice is recorded in the checkpoint directory before the final fit's first stage; a
    resumed fit reads it back instead of choosing again.
    """

    def __init__(self, *, gamma_A=1e-3, gamma_u=1.0, pos_fraction=None, max_switches=None,
                 tol=1e-6, max_iter=100, fit_intercept=True, solver="auto", unlabeled=-1,
                 client=None, n_blocks=None, checkpoint=None, max_inner=10000, verbose=False,
                 kernel=None, kernel_params=None, n_components=100, landmarks="uniform",
                 random_state=None):
        self.gamma_A = gamma_A
        self.gamma_u = gamma_u
        self.pos_fraction = pos_fraction
        self.max_switches = max_switches
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.unlabeled = unlabeled
        self.client = client
        self.n_blocks = n_blocks
        self.checkpoint = checkpoint
        self.max_inner = max_inner
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
        return TSVMDriver

    def _candidate_fits(self, blocks, y, costs, token) -> list:
        """w at each gamma_u of :data:`AUTO_GAMMA_U`: one ramp to the largest, whose stage 0
        is the supervised fit and which forks a last stage at each of the others."""
        driver = TSVMDriver(self, blocks, y, costs, positive_fraction(self, y), token,
                            AUTO_GAMMA_U[-1], forks=AUTO_GAMMA_U[1:-1])
        w = self._run_stages(driver, None, UNCHECKPOINTED)["w"]
        return [driver.reached[g] for g in AUTO_GAMMA_U[:-1]] + [w]


class TSVMDriver:
    """The TSVM outer loop's small state, one stage per gamma' value (stage 0: supervised start).

    Implements the protocol of :class:`dask_ssl.loop.StageLoop`.
    """

    kind = "tsvm"

    def __init__(self, est, blocks, y, costs, r, token, gamma_u, forks=()):
        self.est = est
        self.blocks = blocks
        self.y = y
        self.costs = costs
        self.r = r
        self.token = token
        self.gamma_u = gamma_u
        self.forks = tuple(forks)
        #: w at gamma' = 0 (stage 0) and at each of ``forks``
        self.reached = {}
        self.u = int((y == 0).sum())
        self.max_pairs = est.max_switches or max(1, self.u // 2)
        self.solver = est._solver(blocks, token)
        self.w = None
        self.warm = False
        self.stage = 0
        self.gamma_u_cur = 0.0
        self.history = []
        self.done = False
        self.n_switches = 0
        # the temporary labels per block, as the workers hold them: the driver decides every
        # change (threshold, flips), so snapshots need no round trip to fetch them
        self.unl = [y[s] == 0 for s in blocks.block_slices()]
        self.yt = None

    # protocol ------------------------------------------------------------------------------
    def run_stage(self):
        if self.stage > 0:
            for g in self.forks:
                if g not in self.reached and g <= self.gamma_u_cur:
                    self._fork(g)
        return self._stage()

    def _fork(self, g):
        """The w a ramp to ``g`` ends with, from the current state: a ramp to ``gamma_u``
        passes through every smaller ``g`` (at least :data:`GAMMA_U_START`) with the same
        stages, and its own last stage is the one at ``g``. The state is then restored."""
        doc, arrays = self.snapshot()
        target, self.gamma_u, self.gamma_u_cur = self.gamma_u, g, g
        self._stage()
        self.reached[g] = self.w
        self.restore(doc, arrays)
        self.gamma_u = target

    def _stage(self):
        t0 = time.perf_counter()
        # The Gram matrix carries over from the last stage (a stage rerun after a lost worker
        # starts from a full build instead: the same objective up to round-off).
        est = self.est
        if self.stage == 0:
            res = self.solver.solve(self.w, est.gamma_A)
            outputs = self.blocks.call(ws_unlabeled_outputs, self.token)
            thr, ties = threshold_rule(outputs, self.r)
            # Seeded from an earlier model (a retrain), the ramp that protects a cold start
            # from poor local minima is not needed: start at the final gamma'.
            g = self.gamma_u if self.warm else min(GAMMA_U_START, self.gamma_u)
            self.blocks.call(ws_threshold, self.token, thr, g / self.u,
                            per_block=[(t,) for t in ties])
            self.yt = [threshold_labels(o, unl, thr, t)
                       for o, unl, t in zip(outputs, self.unl, ties)]
            self.w = res.w
            self.reached[0.0] = res.w
            self.gamma_u_cur = g
            record = {"stage": 0, "gamma_u": 0.0, "objective": res.objective, "switches": 0}
        else:
            g = self.gamma_u_cur
            eager = min(self.max_pairs, EAGER_CANDIDATES)
            res = self.solver.solve(self.w, est.gamma_A, epilogue=(epi_candidates, eager),
                                    prologue=[(pro_set_costs, g / self.u)] * self.blocks.n_blocks)
            switches = 0
            retrains = [res.objective]
            for _ in range(est.max_inner):
                picked = merge_switches([e[0] for e in res.extra], self.max_pairs)
                if picked is None:
                    picked = merge_switches(self.blocks.call(ws_candidates, self.token,
                                                             self.max_pairs), self.max_pairs)
                flips, k = picked
                if k == 0:
                    break
                for yt, f in zip(self.yt, flips):
                    yt[f] = -yt[f]
                switches += k
                res = self.solver.solve(res.w, est.gamma_A, prologue=[(pro_flip, f) for f in flips],
                                        epilogue=(epi_candidates, eager))
                retrains.append(res.objective)
            self.w = res.w
            self.n_switches += switches
            objective = tsvm_objective(res.w, est.gamma_A, g, self.u, [e[1] for e in res.extra])
            # retrains: J(w(Y'), Y') after each retrain, which Prop. 6.3.1 says decreases
            record = {"stage": self.stage, "gamma_u": g, "objective": objective,
                      "switches": switches, "retrains": retrains}
            if g >= self.gamma_u:
                self.done = True
            else:
                self.gamma_u_cur = min(g * GAMMA_U_FACTOR, self.gamma_u)
        record["seconds"] = time.perf_counter() - t0
        record["round_trips"] = self.blocks.round_trips
        record["bytes"] = self.blocks.bytes_moved
        self.history.append(record)
        self.stage += 1
        return record

    def snapshot(self) -> tuple[dict, dict]:
        """Small state as JSON, per-row temporary labels as arrays."""
        if self.stage == 0:
            self.warm = self.w is not None
        doc = {"kind": self.kind, "stage": self.stage, "gamma_u_cur": self.gamma_u_cur,
               "warm": self.warm,
               "done": self.done, "history": self.history, "n_switches": self.n_switches,
               "r": self.r}
        arrays = {"w": np.zeros(0) if self.w is None else np.asarray(self.w, dtype=np.float64)}
        if self.stage > 0:
            # int8: u bytes
            arrays["yt"] = np.concatenate(self.yt).astype(np.int8)
        return doc, arrays

    def restore(self, doc: dict, arrays: dict):
        """Rebuild every block's state from a snapshot (after a lost worker, or on resume)."""
        init_blocks(self.blocks, self.token, s3vm_arrays(self.y, self.costs))
        self.solver.reset()
        self.stage = doc["stage"]
        self.gamma_u_cur = doc["gamma_u_cur"]
        self.warm = doc["warm"]
        self.done = doc["done"]
        self.history = list(doc["history"])
        self.n_switches = doc["n_switches"]
        self.w = arrays["w"] if arrays["w"].size else None
        if self.stage > 0:
            yt = arrays["yt"].astype(np.float64)
            self.yt = [yt[s].copy() for s in self.blocks.block_slices()]
            self.blocks.call(ws_restore, self.token, self.gamma_u_cur / self.u,
                            per_block=[(b,) for b in self.yt])

    def result(self) -> dict:
        yt = np.concatenate(self.yt)
        last = self.history[-1]
        return {"w": self.w, "objective": last["objective"], "n_iter": self.stage,
                "history": self.history, "transduction": np.where(self.y != 0, self.y, yt)}
