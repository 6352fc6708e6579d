"""The exact line search of the finite Newton methods (L2-SVM-MFN, the kernel S3VMs, LapSVM):
along a Newton direction the objective is piecewise quadratic, so its derivative phi' is
piecewise linear and increasing, and the step is its root."""

from __future__ import annotations

import numpy as np


def exact_root(lo: float, der_lo: float, slope_lo: float, positions: np.ndarray,
               changes: np.ndarray, hi: float) -> float:
    """Root of a continuous, increasing, piecewise-linear phi' on [lo, hi].

    ``der_lo`` and ``slope_lo`` are phi'(lo) and the right-hand slope there; ``positions`` are
    the breakpoints in (lo, hi] and ``changes`` the slope change at each.
    """
    order = np.argsort(positions, kind="stable")
    cur, der, slope = lo, der_lo, slope_lo
    for bp, ch in zip(positions[order], changes[order]):
        at_bp = der + slope * (bp - cur)
        if at_bp >= 0.0:
            break
        cur, der, slope = bp, at_bp, slope + ch
    return min(cur - der / slope, hi) if slope > 0 else cur
