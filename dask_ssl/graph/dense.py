"""The graph regularizer ``M = L^p`` on the driver, for the direct solvers: as one dense matrix,
or as ``p`` products with the sparse Laplacian (:class:`LaplacianPower`).

The distributed :class:`~dask_ssl.graph.laplacian.LaplacianOperator` only multiplies; the direct
(``O(n^3)``) manifold-regularization solvers and the deformed kernel need ``M`` on the driver.
Its row blocks are gathered once and the Laplacian is formed with the same conventions as the
operator: ``L = D - W``, or ``D^-1/2 L D^-1/2`` with isolated rows left at zero.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .weights import Graph


def laplacian_matrix(W, *, normalized: bool, sparse: bool = False):
    """``L = D - W`` or ``D^-1/2 (D - W) D^-1/2`` of a symmetric weight matrix ``W``: dense, or
    CSR with ``sparse=True`` (the same entries)."""
    W = sp.csr_matrix(W, dtype=np.float64)
    deg = np.asarray(W.sum(axis=1)).ravel()
    if normalized:
        inv = np.zeros_like(deg)
        np.divide(1.0, np.sqrt(deg), out=inv, where=deg > 0)
        A = sp.diags(inv) @ W @ sp.diags(inv)
        # as the operator: an isolated row is 0, not 1, on the diagonal
        D = (deg > 0).astype(np.float64)
    else:
        A, D = W, deg
    if sparse:
        return sp.csr_matrix(sp.diags(D) - A)
    return np.diag(D) - A.toarray()


def regularizer_matrix(graph: Graph, *, normalized: bool, p: int, sparse: bool = False):
    """``M = L^p`` of ``graph`` (gathered from its row blocks), symmetrized exactly: dense, or
    CSR with ``sparse=True`` (for the sparse models' products and factorizations; ``L^p`` of
    a kNN graph has about ``k^p`` entries a row)."""
    L = laplacian_matrix(graph.to_scipy(), normalized=normalized, sparse=sparse)
    if sparse:
        M = sp.identity(L.shape[0], format="csr")
        for _ in range(int(p)):
            M = M @ L
        return sp.csr_matrix((M + M.T) * 0.5)
    return _dense_power(L, p)


def _dense_power(L: np.ndarray, p: int) -> np.ndarray:
    M = np.linalg.matrix_power(L, int(p))
    return (M + M.T) * 0.5


class LaplacianPower:
    """``M = L^p`` of a graph, applied as ``p`` products with its sparse Laplacian.

    What the direct solvers ask of ``M`` is products: ``M K`` (``n x n``), ``M f`` and ``M 1``.
    Each costs ``p nnz(L)`` a column here against ``n`` with the dense ``M``, whose forming
    takes ``p - 1`` dense ``n x n`` products more; a kNN Laplacian has about ``2k`` entries a
    row. Mathematically the same ``M`` as :func:`regularizer_matrix` (rounding aside).
    """

    def __init__(self, L, p: int):
        self.L = sp.csr_matrix(L, dtype=np.float64)
        self.p = int(p)
        self.shape = self.L.shape

    def __matmul__(self, X):
        X = np.asarray(X, dtype=np.float64)
        for _ in range(self.p):
            X = self.L @ X
        return X

    def sum(self, axis: int) -> np.ndarray:
        """Row sums ``M 1`` (``axis=1``; ``M`` is symmetric, so also the column sums)."""
        if axis not in (0, 1):
            raise ValueError(f"axis must be 0 or 1, got {axis!r}")
        return self @ np.ones(self.shape[0])


#: What a multiply-add of a sparse product costs in dense ones (BLAS on two cores): about 30,
#: measured with n = 2000 rows, 10 and 50 neighbours, p = 5.
SPARSE_COST = 30


def direct_regularizer(graph: Graph, *, normalized: bool, p: int):
    """``M = L^p`` of ``graph`` for the direct solvers, in the form whose ``M K`` costs less:
    :class:`LaplacianPower` (``p`` sparse products of ``nnz(L) n`` multiply-adds, each
    :data:`SPARSE_COST` dense ones) or the dense matrix of :func:`regularizer_matrix` (its
    ``p - 1`` or fewer squarings and products, then ``M K``: ``n^3`` each). With 10
    neighbours the sparse form wins at any p; with 50 and ``p = 5`` the dense one."""
    L = laplacian_matrix(graph.to_scipy(), normalized=normalized, sparse=True)
    n, p = L.shape[0], int(p)
    products = p.bit_length() - 1 + bin(p).count("1") - 1  # matrix_power's
    if SPARSE_COST * p * L.nnz < (products + 1) * n * n:
        return LaplacianPower(L, p)
    return _dense_power(L.toarray(), p)
