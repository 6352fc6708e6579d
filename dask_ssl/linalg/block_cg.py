"""Conjugate gradients for ``A X = B`` with several right-hand sides sharing one pass.

Each column of ``B`` (a class, a hyperparameter value) runs its own CG recurrence, but all
columns share every product with ``A``: one pass over ``A`` (one round trip when ``A`` lives on
the workers) moves all of them. A column whose residual falls below its tolerance stops moving
(its step and direction become zero) while the others go on.

The driver keeps only per-column scalars. Where the vectors live is the *system*'s business: a
:class:`LocalSystem` holds them in NumPy here; :class:`dask_ssl.graph.system.GraphSystem` keeps
them on the workers beside the graph blocks. A system fuses one iteration into one pass::

    x += alpha p;  r -= alpha q;  p = r + beta p (0 where inactive);  q = A p

and returns the column sums ``r.r`` (after the update), ``p.q``, ``r.q`` and ``q.q``. The last
two give the next ``r.r`` by the recurrence
``|r - alpha q|^2 = r.r - 2 alpha r.q + alpha^2 q.q``, so ``beta`` is known before the next pass
and no second reduction per iteration is needed; the true ``r.r`` returned by each pass
re-anchors the recurrence, so its round-off does not accumulate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Reductions:
    """Per-column sums returned by one pass of a system (each an array of length ``n_cols``)."""

    rr: np.ndarray
    pq: np.ndarray
    rq: np.ndarray
    qq: np.ndarray


@dataclass
class BlockCGResult:
    """What :func:`block_cg` returns.

    Attributes
    ----------
    n_iter : ndarray of int
        Iterations each column moved.
    converged : ndarray of bool
        Whether each column reached ``|r| <= tol |b|``.
    residual : ndarray
        Final ``|r| / |b|`` per column (``|r|`` where ``b`` is zero).
    n_passes : int
        Products with ``A`` (each a pass over all columns), the start included.
    history : list of ndarray
        Relative residual per column after each pass.
    """

    n_iter: np.ndarray
    converged: np.ndarray
    residual: np.ndarray
    n_passes: int
    history: list = field(default_factory=list)


def block_cg(system, *, tol: float = 1e-6, maxiter: int = 1000, callback=None) -> BlockCGResult:
    """Solve the symmetric positive definite system held by ``system`` for all its columns.

    Parameters
    ----------
    system : LocalSystem or GraphSystem
        Holds ``A``, ``B`` and the seed ``X0``; see the module docstring for the protocol
        (``start() -> (Reductions, bb)`` and ``iterate(alpha, beta, active) -> Reductions``).
    tol : float
        Relative residual ``|b - A x| / |b|`` at which a column stops, per column.
    maxiter : int
        Passes after the start.
    callback : callable, optional
        ``callback(k, relres)`` after every pass.

    Returns
    -------
    BlockCGResult
        The solution stays in ``system`` (``system.solution()``).
    """
    if tol <= 0:
        raise ValueError(f"tol must be positive, got {tol}")
    red, bb = system.start()
    scale = np.where(bb > 0, bb, 1.0)
    thresh = tol * tol * scale
    rr = red.rr
    active = rr > thresh
    n_iter = np.zeros(rr.shape[0], dtype=np.int64)
    history = [np.sqrt(rr / scale)]
    passes = 1
    for k in range(maxiter):
        # A non-positive p.q means p = 0 (no progress possible) or A is not positive definite on
        # this column: stop it rather than divide by it.
        active &= red.pq > 0
        if not active.any():
            break
        pq = np.where(active, red.pq, 1.0)
        alpha = np.where(active, rr / pq, 0.0)
        rr_next = np.maximum(rr - 2.0 * alpha * red.rq + alpha * alpha * red.qq, 0.0)
        beta = np.where(active, rr_next / np.where(rr > 0, rr, 1.0), 0.0)
        red = system.iterate(alpha, beta, active)
        passes += 1
        n_iter += active
        rr = red.rr
        active &= rr > thresh
        history.append(np.sqrt(rr / scale))
        if callback is not None:
            callback(k, history[-1])
    return BlockCGResult(n_iter, rr <= thresh, np.sqrt(rr / scale), passes, history)


class LocalSystem:
    """``A X = B`` with everything in this process: ``A`` a matrix or a function of an n x c array.

    Parameters
    ----------
    A : ndarray, sparse matrix, LinearOperator or callable
        Symmetric positive definite; ``A @ P`` (or ``A(P)``) for an ``n x c`` array ``P``.
    B : ndarray, shape (n,) or (n, c)
    X0 : ndarray, optional
        Seed (warm start); zero by default.
    """

    def __init__(self, A, B, X0=None):
        self._apply = A if callable(A) and not hasattr(A, "shape") else (lambda P: A @ P)
        B = np.asarray(B, dtype=np.float64)
        self._vector = B.ndim == 1
        self.B = B.reshape(B.shape[0], -1)
        self.X = (np.zeros_like(self.B) if X0 is None
                  else np.array(np.asarray(X0, dtype=np.float64).reshape(self.B.shape)))

    def _sums(self):
        return Reductions(np.einsum("ij,ij->j", self.R, self.R),
                          np.einsum("ij,ij->j", self.P, self.Q),
                          np.einsum("ij,ij->j", self.R, self.Q),
                          np.einsum("ij,ij->j", self.Q, self.Q))

    def start(self):
        self.R = self.B - np.asarray(self._apply(self.X)).reshape(self.B.shape)
        self.P = self.R.copy()
        self.Q = np.asarray(self._apply(self.P)).reshape(self.B.shape)
        return self._sums(), np.einsum("ij,ij->j", self.B, self.B)

    def iterate(self, alpha, beta, active):
        self.X += alpha * self.P
        self.R -= alpha * self.Q
        self.P = np.where(active, self.R + beta * self.P, 0.0)
        self.Q = np.asarray(self._apply(self.P)).reshape(self.B.shape)
        return self._sums()

    def solution(self) -> np.ndarray:
        return self.X[:, 0].copy() if self._vector else self.X.copy()
