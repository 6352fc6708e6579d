"""What the linear S3VMs (TSVM, DAS3VM) share: labeled/unlabeled costs and the TSVM objective on
the workers, and the estimator base that settles gamma_u (given, or ``"auto"``:
:mod:`._gamma_u_selection`) before the one-vs-rest fits.

Block state (see :mod:`dask_ssl.linalg.workerstate`) of an S3VM run holds, per row:
``ylab`` (+1/-1 on labeled rows, 0 on unlabeled), ``cl`` (labeled cost, 1/l times the sample
weight), ``unl`` (unlabeled mask) beside the solver's ``cpos``/``cneg``/``o``.
"""

from __future__ import annotations

import uuid

import numba
import numpy as np

from ..linalg import workerstate
from ..linalg.kernels import matvec
from ..solvers.mfn import final_outputs
from ._gamma_u_selection import AUTO_GAMMA_U, choose_gamma_u, fold_costs, resolve_gamma_u
from ._input import target_columns
from ._part import Part
from .base import LinearSSLClassifier

#: Where the fold fits of the selection run: their stages are not checkpointed.
UNCHECKPOINTED = Part(0, 1, False, None)


def positive_fraction(est, y: np.ndarray) -> float:
    """r: the estimator's ``pos_fraction``, else the positive share of the labeled rows."""
    r = est.pos_fraction if est.pos_fraction is not None else float(np.mean(y[y != 0] > 0))
    if not 0.0 < r < 1.0:
        raise ValueError(f"the positive fraction r = {r} must be in (0, 1)")
    return r


def s3vm_arrays(y: np.ndarray, costs: np.ndarray) -> dict:
    """Per-row arrays every S3VM block starts from (labeled hinge costs; no unlabeled cost)."""
    return {"ylab": y, "cl": np.where(y != 0, costs, 0.0), "unl": y == 0,
            "cpos": np.where(y > 0, costs, 0.0), "cneg": np.where(y < 0, costs, 0.0)}


def tsvm_objective_parts(st) -> tuple[float, float]:
    """Labeled squared-hinge loss (with its 1/2) and ``sum_u max(0, 1 - |o_j|)^2`` of a block."""
    return _objective_parts(st["o"], st["unl"], st["cl"], st["ylab"])


@numba.njit(cache=True, nogil=True)
def _objective_parts(o, unl, cl, ylab):
    # one pass: this runs in the last round trip of every solve
    labeled = 0.0
    unlabeled = 0.0
    for i in range(o.shape[0]):
        if unl[i]:
            unlabeled += max(0.0, 1.0 - abs(o[i])) ** 2
        else:
            labeled += cl[i] * max(0.0, 1.0 - ylab[i] * o[i]) ** 2
    return 0.5 * labeled, unlabeled


def tsvm_objective(w: np.ndarray, gamma_A: float, gamma_u: float, n_unlabeled: int, parts) -> float:
    """``gamma_A/2 ||w||^2 + 1/(2l) sum l2(y_i o_i) + gamma'/(2u) sum max(0, 1 - |o_j|)^2``."""
    labeled = sum(p[0] for p in parts)
    unlabeled = sum(p[1] for p in parts)
    return float(0.5 * gamma_A * (w @ w) + labeled + 0.5 * gamma_u / n_unlabeled * unlabeled)


def ws_unlabeled_outputs(i, X, token):
    st = workerstate.get(token, i)
    return final_outputs(st)[st["unl"]]



def block_outputs(i, X, w, bias):
    """``[X, 1] w`` on a block."""
    return matvec(X, w, bias)


def _rows_outputs(i, X, rows, W, bias):
    """``[X, 1] W`` on the block's rows ``rows`` (one column per column of W)."""
    return np.column_stack([matvec(X, w, bias)[rows] for w in W.T])


class LinearS3VM(LinearSSLClassifier):
    """Base of TSVM and DAS3VM: ``gamma_u_`` and ``selection_`` are settled once for all the
    one-vs-rest targets, before their fits; at ``gamma_u_ = 0`` the fit is L2SVM's.

    A subclass implements ``_candidate_fits(blocks, y, costs, token) -> list of w``: its fit at
    each gamma_u of :data:`AUTO_GAMMA_U` (``y`` +1/-1 labeled, 0 unlabeled), and ``_driver()``:
    the class of its stage driver (TSVM's ramp, DA's annealing).
    """

    def _fit_targets(self, blocks, codes, targets, parts, costs, coef_init, client,
                     fit_part, prepared) -> list:
        if fit_part == self._fit_supervised:
            # no unlabeled rows: the supervised fit, which is what gamma_u = 0 gives
            self.gamma_u_ = 0.0 if isinstance(self.gamma_u, str) else float(self.gamma_u)
            self.selection_ = []
        else:
            resolve_gamma_u(self, self.checkpoint, parts[0].resume, lambda: choose_gamma_u(
                self, codes, targets,
                lambda fold_codes, held: self._fold_outputs(blocks, costs, client, targets,
                                                            fold_codes, held)))
        return super()._fit_targets(blocks, codes, targets, parts, costs, coef_init, client,
                                    fit_part, prepared)

    def _fit_binary(self, blocks, y, costs, w0, token, part):
        if self.gamma_u_ == 0:
            return self._fit_supervised(blocks, y, costs, w0, token, part)
        driver = self._driver()(self, blocks, y, costs, positive_fraction(self, y), token,
                                self.gamma_u_)
        return self._run_stages(driver, w0, part)

    def _fold_outputs(self, blocks, costs, client, targets, fold_codes, held) -> np.ndarray:
        """Every candidate's outputs on the held-out rows ``held`` after fitting on the labels
        ``fold_codes``: shape ``(n_candidates, held.size, n_targets)``. The row blocks stay
        on the workers; the outputs of all candidates and targets come back in one round
        trip."""
        c = fold_costs(costs, fold_codes)
        W = []
        for t in targets:
            token = f"{type(self).__name__}-cv-{uuid.uuid4().hex[:12]}"
            try:
                W += self._candidate_fits(blocks, target_columns(fold_codes, [t])[:, 0], c,
                                          token)
            finally:
                client.run(workerstate.drop, token)
        rows = [held[(held >= s.start) & (held < s.stop)] - s.start
                for s in blocks.block_slices()]
        out = np.vstack(blocks.call(_rows_outputs, np.column_stack(W), self.fit_intercept,
                                    per_block=[(r,) for r in rows]))
        return out.reshape(held.size, len(targets), len(AUTO_GAMMA_U)).transpose(2, 0, 1)

    def _fit_supervised(self, blocks, y, costs, w0, token, part) -> dict:
        """L2SVM's fit on the labeled rows; unlabeled rows (at ``gamma_u_ = 0``) are transduced
        by the sign of their outputs."""
        out = super()._fit_supervised(blocks, y, costs, w0, token, part)
        if (y == 0).any():
            scores = np.concatenate(blocks.call(block_outputs, out["w"], self.fit_intercept))
            out["transduction"] = np.where(y != 0, y, np.where(scores > 0, 1.0, -1.0))
        return out
