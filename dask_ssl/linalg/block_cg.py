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

A *preconditioned* system (a symmetric positive definite ``M^-1`` applied where the vectors
live, e.g. block Jacobi on the workers) also keeps ``z = M^-1 r`` and ``w = M^-1 q``, and a pass
becomes::

    x += alpha p;  r -= alpha q;  z -= alpha w;  p = z + beta p;  q = A p;  w = M^-1 q

with ``alpha = r.z / p.q`` and ``beta`` from ``|r - alpha q|_M^-1^2 = r.z - 2 alpha z.q +
alpha^2 q.w``: ``z`` follows ``r`` by the same recurrence instead of a fresh ``M^-1 r``, so the
next ``p`` (whose halo a distributed product needs) is known before the pass, and the
preconditioner costs no extra round trip. Such a system also returns ``r.z``, ``z.q`` and ``q.w``;
convergence is still judged on the true-norm ``|r| / |b|``.

The recurred ``z`` drifts from ``M^-1 r`` by the rounding of each ``M^-1 q``; with a nearly
singular ``M`` (a block of a graph whose few cut edges weigh ~1e-300) it drifted until ``r.z``
or ``p.q`` lost its sign, 7e-3 short of the tolerance. A column that breaks down like that
makes the driver *restart* the system (``system.restart()``: ``r = b - A x``, ``z = M^-1 r``,
``p = z`` from the current ``x``, one pass), at most :data:`MAX_RESTARTS` times.

A long solve can be made resumable: with a ``checkpoint`` (an object with ``load()`` and
``save(state)``, the storage being the caller's business) the driver hands it its whole state
every ``checkpoint.every`` passes and when it stops, the system's vectors (``system.state()``:
``x``, ``r``, ``p``, ``q``) and its own counters, and on a later call continues from the state
``load()`` returns (``system.restore(arrays)``) instead of starting. The recurrences then run
exactly as they would have without the interruption.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Restarts after a breakdown (see the module docstring) before a column is given up.
MAX_RESTARTS = 5


@dataclass
class Reductions:
    """Per-column sums returned by one pass of a system (each an array of length ``n_cols``).

    ``rz``, ``zq``, ``qw`` (``z = M^-1 r``, ``w = M^-1 q``) come from preconditioned systems;
    None means ``M = I`` (they equal ``rr``, ``rq``, ``qq``).
    """

    rr: np.ndarray
    pq: np.ndarray
    rq: np.ndarray
    qq: np.ndarray
    rz: np.ndarray | None = None
    zq: np.ndarray | None = None
    qw: np.ndarray | None = None

    def preconditioned(self):
        """``(r.z, z.q, q.w)``, the sums the CG scalars come from."""
        if self.rz is None:
            return self.rr, self.rq, self.qq
        return self.rz, self.zq, self.qw


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


def block_cg(system, *, tol: float = 1e-6, maxiter: int = 1000, callback=None,
             checkpoint=None) -> BlockCGResult:
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
    checkpoint : object, optional
        ``load() -> dict | None``, ``save(state: dict)`` and ``every`` (passes between saves):
        see the module docstring. ``maxiter`` counts the passes of the resumed run too.

    Returns
    -------
    BlockCGResult
        The solution stays in ``system`` (``system.solution()``).
    """
    if tol <= 0:
        raise ValueError(f"tol must be positive, got {tol}")
    saved = None if checkpoint is None else checkpoint.load()
    if saved is None:
        red, bb = system.start()
    else:
        red, bb = system.restore(saved["arrays"])
    scale = np.where(bb > 0, bb, 1.0)
    thresh = tol * tol * scale
    rr = red.rr
    rz = red.preconditioned()[0]
    if saved is None:
        active = rr > thresh
        n_iter = np.zeros(rr.shape[0], dtype=np.int64)
        history = [np.sqrt(rr / scale)]
        passes, restarts, start = 1, 0, 0
    else:
        active, n_iter = saved["active"].astype(bool), saved["n_iter"].astype(np.int64)
        history = list(saved["history"])
        passes, restarts, start = saved["passes"], saved["restarts"], saved["k"]

    def save(k):
        checkpoint.save({"k": k, "passes": passes, "restarts": restarts, "active": active,
                         "n_iter": n_iter, "history": np.array(history),
                         "arrays": system.state()})

    for k in range(start, maxiter):
        if checkpoint is not None and k > start and k % checkpoint.every == 0:
            save(k)
        # A non-positive p.q means p = 0 (no progress possible) or A is not positive definite on
        # this column; a non-positive r.z, an indefinite preconditioner. Either can also be the
        # drift of the recurrences: restart from x, and stop the column if that does not help.
        sound = (red.pq > 0) & (rz > 0)
        if (active & ~sound).any() and restarts < MAX_RESTARTS:
            restarts += 1
            red = system.restart()
            passes += 1
            rr = red.rr
            rz = red.preconditioned()[0]
            active = rr > thresh
            history.append(np.sqrt(rr / scale))
            if callback is not None:
                callback(k, history[-1])
            continue
        active &= sound
        if not active.any():
            break
        _, zq, qw = red.preconditioned()
        pq = np.where(active, red.pq, 1.0)
        alpha = np.where(active, rz / pq, 0.0)
        rz_next = np.maximum(rz - 2.0 * alpha * zq + alpha * alpha * qw, 0.0)
        beta = np.where(active, rz_next / np.where(rz > 0, rz, 1.0), 0.0)
        red = system.iterate(alpha, beta, active)
        passes += 1
        n_iter += active
        rr = red.rr
        rz = red.preconditioned()[0]
        active &= rr > thresh
        history.append(np.sqrt(rr / scale))
        if callback is not None:
            callback(k, history[-1])
    else:
        k = maxiter
    if checkpoint is not None:
        save(k)
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
    M_inv : same kinds as ``A``, optional
        A symmetric positive definite preconditioner, applied as ``M_inv @ R``: CG runs on the
        recurrences of the module docstring with ``z = M_inv r``.
    """

    def __init__(self, A, B, X0=None, M_inv=None):
        self._apply = _as_function(A)
        self._precond = None if M_inv is None else _as_function(M_inv)
        B = np.asarray(B, dtype=np.float64)
        self._vector = B.ndim == 1
        self.B = B.reshape(B.shape[0], -1)
        self.X = (np.zeros_like(self.B) if X0 is None
                  else np.array(np.asarray(X0, dtype=np.float64).reshape(self.B.shape)))

    def _solve(self, V):
        if self._precond is None:
            return V
        return np.asarray(self._precond(V)).reshape(self.B.shape)

    def _sums(self):
        return Reductions(_colsum(self.R, self.R), _colsum(self.P, self.Q),
                          _colsum(self.R, self.Q), _colsum(self.Q, self.Q),
                          *((_colsum(self.R, self.Z), _colsum(self.Z, self.Q),
                             _colsum(self.Q, self.Wq)) if self._precond is not None else ()))

    def restart(self) -> Reductions:
        """:meth:`start` again from the current ``X``; returns the sums."""
        return self.start()[0]

    def state(self) -> dict:
        """The vectors a resumed solve needs (see :func:`block_cg`'s ``checkpoint``)."""
        names = ("X", "R", "P", "Q") + (("Z", "Wq") if self._precond is not None else ())
        return {name: getattr(self, name).copy() for name in names}

    def restore(self, arrays: dict):
        """Continue from :meth:`state`: returns what :meth:`start` returns, with no product."""
        for name, value in arrays.items():
            if value.shape != self.B.shape:
                raise ValueError(f"saved CG vector {name} has shape {value.shape}, the system "
                                 f"{self.B.shape}")
            setattr(self, name, np.array(value, dtype=np.float64))
        return self._sums(), _colsum(self.B, self.B)

    def start(self):
        self.R = self.B - np.asarray(self._apply(self.X)).reshape(self.B.shape)
        self.Z = self._solve(self.R)
        self.P = self.Z.copy()
        self.Q = np.asarray(self._apply(self.P)).reshape(self.B.shape)
        self.Wq = self._solve(self.Q)
        return self._sums(), _colsum(self.B, self.B)

    def iterate(self, alpha, beta, active):
        self.X += alpha * self.P
        self.R -= alpha * self.Q
        if self._precond is not None:
            self.Z = self.Z - alpha * self.Wq
        self.P = np.where(active, (self.R if self._precond is None else self.Z) + beta * self.P,
                          0.0)
        self.Q = np.asarray(self._apply(self.P)).reshape(self.B.shape)
        self.Wq = self._solve(self.Q)
        return self._sums()

    def solution(self) -> np.ndarray:
        return self.X[:, 0].copy() if self._vector else self.X.copy()


def _as_function(A):
    return A if callable(A) and not hasattr(A, "shape") else (lambda P: A @ P)


def _colsum(u, v):
    return np.einsum("ij,ij->j", u, v)


def on_moving_columns(apply, V) -> tuple[np.ndarray, int]:
    """``(A V, columns multiplied)`` for a square linear operator ``apply`` (``V -> A V``) and
    an ``n x c`` array (or an ``n`` vector) ``V``, with ``A`` applied to the columns of ``V``
    that are not all zero only: block CG zeroes a column's direction once the column has
    converged, so in a solve of many columns (folds x weights, one column per labeled row)
    the late passes carry mostly zeros, whose product is zero. None left: no product."""
    V = np.asarray(V, dtype=np.float64)
    V2 = V.reshape(V.shape[0], -1)
    moving = np.flatnonzero(np.any(V2 != 0.0, axis=0))
    if moving.size == V2.shape[1]:
        return np.asarray(apply(V2), dtype=np.float64).reshape(V.shape), int(moving.size)
    out = np.zeros_like(V2)
    if moving.size:
        out[:, moving] = np.asarray(apply(V2[:, moving]), dtype=np.float64)
    return out.reshape(V.shape), int(moving.size)
