"""The graph regularizer ``M = L^p`` as one dense matrix on the driver, for the direct solvers.

The distributed :class:`~dask_ssl.graph.laplacian.LaplacianOperator` only multiplies; the direct
(``O(n^3)``) manifold-regularization solvers and the deformed kernel need ``M`` itself. Its row
blocks are gathered once and the Laplacian is formed with the same conventions as the operator:
``L = D - W``, or ``D^-1/2 L D^-1/2`` with isolated rows left at zero.
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
    M = np.linalg.matrix_power(L, int(p))
    return (M + M.T) * 0.5
