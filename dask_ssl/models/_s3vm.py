"""Worker-side pieces shared by the linear S3VMs: labeled/unlabeled costs and the TSVM objective.

Block state (see :mod:`dask_ssl.linalg.workerstate`) of an S3VM run holds, per row:
``ylab`` (+1/-1 on labeled rows, 0 on unlabeled), ``cl`` (labeled cost, 1/l times the sample
weight), ``unl`` (unlabeled mask) beside the solver's ``cpos``/``cneg``/``o``.
"""

from __future__ import annotations

import numba
import numpy as np

from ..linalg import workerstate
from ..solvers.mfn import final_outputs


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

