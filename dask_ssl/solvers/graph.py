"""The graph transduction system on the workers (thesis ch. 5): block CG on a kNN graph.

Solves ``(gamma_I M + diag(a)) F = B`` for every column of ``B`` at once, ``M = L^p`` the
(normalized) Laplacian of the graph, ``a`` the per-row fidelity weights: the operator holds the
graph's rows on the workers (halo exchange, :class:`~dask_ssl.graph.laplacian.LaplacianOperator`),
the system its block-Jacobi preconditioner (:class:`~dask_ssl.graph.system.GraphSystem`), and
block CG (:func:`~dask_ssl.linalg.block_cg.block_cg`) one round trip a pass for all columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph.laplacian import LaplacianOperator
from ..graph.system import GraphSystem
from ..graph.weights import Graph
from ..linalg.block_cg import BlockCGResult, block_cg


@dataclass
class GraphSolution:
    """``F`` (n, n_columns), the solution, and block CG's record (passes, residuals,
    convergence per column)."""

    F: np.ndarray
    cg: BlockCGResult


def solve_graph_system(graph: Graph, a, B, *, gamma_I, normalized: bool = True,
                       p: int = 1, partition="metis", preconditioner="block", tol: float = 1e-6,
                       max_iter: int = 2000, X0=None, a_precond=None,
                       fill_budget: float | None = None,
                       op: LaplacianOperator | None = None) -> GraphSolution:
    """``F`` with ``(gamma_I L^p + diag(a)) F = B`` (``a > 0`` wherever a component of the
    graph needs it to be nonsingular), started from ``X0``; the workers' operator and system
    are released whatever happens. ``gamma_I`` (a float or one per column of ``B``) and ``a``
    (``(n,)`` or ``(n, n_columns)``) may differ by column: a grid of weights, folds and classes
    solved as the columns of one block CG. ``a_precond``: the fidelities the block
    preconditioner factors; ``fill_budget``: the largest fill of a block it factors (see
    :class:`~dask_ssl.graph.system.GraphSystem`). ``op``: an operator of ``graph`` the caller
    holds open across many solves (then ``normalized``, ``p`` and ``partition`` are its own,
    and it stays open)."""
    owned = op is None
    if owned:
        op = LaplacianOperator(graph, normalized=normalized, p=p, partition=partition)
    try:
        system = GraphSystem(op, gamma_I, a, B, X0=X0, preconditioner=preconditioner,
                             a_precond=a_precond, fill_budget=fill_budget)
        try:
            result = block_cg(system, tol=tol, maxiter=max_iter)
            return GraphSolution(system.solution(), result)
        finally:
            system.close()
    finally:
        if owned:
            op.close()
