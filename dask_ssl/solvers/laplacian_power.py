"""``M = L^p`` on the driver as ``p`` products with the sparse Laplacian, never formed.

``L^p`` of a kNN graph has up to ``k^p`` entries a row; on a small-world graph (text: hub
documents join every neighbourhood within a few hops) ``L^3`` is already dense, so the CSR
``L^p`` costs ``n^2`` memory, its build ``O(n^2 k)`` sparse products, and a sparse LU of
``g L^p + D`` is a dense factorization done at sparse-code speed, with every later solve
``O(n^2)`` per column; on such a graph the LU of ``L`` itself (``p = 1``) fills in the same
way, as nested dissection finds no small separators. Applying ``L`` ``p`` times costs ``p nnz(L)`` per column, and the
f-systems ``(g L^p + D) F = B`` (``D`` positive) are then solved by block CG
(:func:`~dask_ssl.linalg.block_cg.block_cg`, all columns in one pass per iteration).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..linalg.block_cg import LocalSystem, block_cg, on_moving_columns


class LaplacianPower:
    """``M = L^p`` as far as ``M @ V`` goes, for a symmetric sparse ``L``."""

    def __init__(self, L, p: int):
        self.L = sp.csr_matrix(L, dtype=np.float64)
        self.p = int(p)
        self.shape = self.L.shape
        self.products = 0   # columns multiplied

    def __matmul__(self, V):
        def apply(V2):
            for _ in range(self.p):
                V2 = self.L @ V2
            return V2

        out, columns = on_moving_columns(apply, V)
        self.products += columns
        return out

    def quadratic_form(self, V) -> np.ndarray:
        """``v^T L^p v`` per column of ``V``: ``||L^(p/2) v||^2`` for even ``p``, else
        ``u^T L u`` with ``u = L^((p-1)/2) v`` (``L`` symmetric), in ``ceil(p/2)`` products
        instead of ``p``."""
        V = np.asarray(V, dtype=np.float64)
        self.products += 1 if V.ndim == 1 else V.shape[1]
        half, odd = divmod(self.p, 2)
        for _ in range(half):
            V = self.L @ V
        return np.einsum("i...,i...->...", V, self.L @ V if odd else V)


def solve_power_system(M: LaplacianPower, g: float, diagonal, B, *, X0=None, tol=1e-8,
                       max_iter=2000):
    """``F`` with ``(g M + diag(diagonal)) F = B`` (``diagonal >= 0``, the sum positive
    definite) by block CG, started
    from ``X0``; returns ``(F, passes)``. A column that has not converged after ``max_iter``
    passes raises ``RuntimeError`` rather than return an inexact solve silently."""
    diagonal = np.asarray(diagonal, dtype=np.float64)[:, None]
    system = LocalSystem(lambda V: g * (M @ V) + diagonal * V, B, X0=X0)
    result = block_cg(system, tol=tol, maxiter=max_iter)
    if not np.all(result.converged):
        raise RuntimeError(f"block CG on g L^{M.p} + D stopped at relative residual "
                           f"{float(np.max(result.residual)):.2e} after {result.n_passes} "
                           f"passes (tol {tol:g}); raise max_iter")
    return system.solution(), result.n_passes
