"""The graph transduction system on the workers (thesis ch. 5): block CG on a kNN graph.

Solves ``(gamma_I M + diag(a)) F = B`` for every column of ``B`` at once, ``M = L^p`` the
(normalized) Laplacian of the graph, ``a`` the per-row fidelity weights: the operator holds the
graph's rows on the workers (halo exchange, :class:`~dask_ssl.graph.laplacian.LaplacianOperator`),
the system its block-Jacobi preconditioner (:class:`~dask_ssl.graph.system.GraphSystem`), and
block CG (:func:`~dask_ssl.linalg.block_cg.block_cg`) one round trip a pass for all columns.

The block preconditioner is factored only when plain CG proves slow. Factoring a block costs
as much as thousands of passes of one column over it (measured: 2000-3700 column-passes on
KDD99's 494 k rows and on RCV1-like text at 20 k and 60 k rows), while many systems converge
in tens of plain passes (KDD99's held-out-fold check and its fit: 61 and 101; text: 28). So a
solve runs plain CG for :data:`PLAIN_COLUMN_PASSES` column-passes first, and factors the
preconditioner for the columns still unconverged only then, continuing from the plain
iterate: a system that needed the preconditioner loses less than half a factorization, one
that did not saves a whole one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph.laplacian import LaplacianOperator
from ..graph.precond import check_preconditioner
from ..graph.system import GraphSystem
from ..graph.weights import Graph
from ..linalg.block_cg import BlockCGResult, block_cg

#: Passes times columns of plain CG before a solve with ``preconditioner="block"`` factors its
#: preconditioner (module docstring): a few hundred passes for a fit's one or two class
#: columns, a few dozen for the selection's dozens of fold columns.
PLAIN_COLUMN_PASSES = 1000


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
    solved as the columns of one block CG. ``preconditioner="block"``: plain CG first, the
    block preconditioner for the columns it leaves unconverged (module docstring);
    ``a_precond``: the fidelities the block preconditioner factors; ``fill_budget``: the
    largest fill of a block it factors (see :class:`~dask_ssl.graph.system.GraphSystem`).
    ``op``: an operator of ``graph`` the caller holds open across many solves (then
    ``normalized``, ``p`` and ``partition`` are its own, and it stays open)."""
    check_preconditioner(preconditioner)
    owned = op is None
    if owned:
        op = LaplacianOperator(graph, normalized=normalized, p=p, partition=partition)
    try:
        if preconditioner is None:
            return _solve(op, gamma_I, a, B, X0, tol=tol, maxiter=max_iter)
        B = np.asarray(B, dtype=np.float64)
        n_cols = B.reshape(B.shape[0], -1).shape[1]
        plain = _solve(op, gamma_I, a, B, X0, tol=tol,
                       maxiter=min(max_iter, max(1, PLAIN_COLUMN_PASSES // n_cols)))
        left = np.flatnonzero(~plain.cg.converged)
        if left.size == 0 or plain.cg.n_passes >= max_iter:
            return plain
        F = plain.F.reshape(B.shape[0], -1)
        rest = _solve(op, _columns(gamma_I, left, n_cols, per_row=False),
                      _columns(a, left, n_cols), B.reshape(B.shape[0], -1)[:, left], F[:, left],
                      tol=tol, maxiter=max_iter - plain.cg.n_passes,
                      preconditioner=preconditioner,
                      a_precond=None if a_precond is None else _columns(a_precond, left, n_cols),
                      fill_budget=fill_budget)
        F = F.copy()
        F[:, left] = rest.F.reshape(B.shape[0], -1)
        return GraphSolution(F.reshape(plain.F.shape), _joined(plain.cg, rest.cg, left))
    finally:
        if owned:
            op.close()


def _solve(op, gamma_I, a, B, X0, *, tol, maxiter, preconditioner=None, a_precond=None,
           fill_budget=None) -> GraphSolution:
    """One block CG on ``op``'s workers, the system released whatever happens."""
    system = GraphSystem(op, gamma_I, a, B, X0=X0, preconditioner=preconditioner,
                         a_precond=a_precond, fill_budget=fill_budget)
    try:
        result = block_cg(system, tol=tol, maxiter=maxiter)
        return GraphSolution(system.solution(), result)
    finally:
        system.close()


def _columns(value, cols, n_cols: int, *, per_row: bool = True):
    """The columns ``cols`` of a per-column argument: ``a`` of shape (n, n_cols) (``per_row``),
    ``gamma_I`` of shape (n_cols,); a value shared by every column as it is."""
    value = np.asarray(value, dtype=np.float64)
    if per_row:
        return value[:, cols] if value.ndim == 2 and value.shape[1] == n_cols else value
    return value[cols] if value.ndim == 1 else value


def _joined(plain: BlockCGResult, rest: BlockCGResult, left) -> BlockCGResult:
    """The record of a plain solve continued, on the columns ``left``, by a preconditioned one:
    passes and iterations add up, and each later pass's residuals hold the plain solve's
    final ones on the columns it had settled."""
    n_iter = plain.n_iter.copy()
    n_iter[left] += rest.n_iter
    converged, residual = plain.converged.copy(), plain.residual.copy()
    converged[left], residual[left] = rest.converged, rest.residual
    history = list(plain.history)
    for row in rest.history:
        full = plain.residual.copy()
        full[left] = row
        history.append(full)
    return BlockCGResult(n_iter, converged, residual, plain.n_passes + rest.n_passes, history)
