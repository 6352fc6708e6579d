"""Block-Jacobi preconditioner of ``gamma L^p + diag(a)``, factored and applied on the workers.

Each worker block ``b`` factors its own diagonal block ``P_b = gamma (L_bb)^p + diag(a_b)`` (``L_bb``
the block's rows and columns of ``L``) once, with SciPy's sparse LU (SuperLU, COLAMD ordering:
on a 25 k-row METIS block of the KDD99 kNN graph it factored in 0.1 s with 3x fill, where the
symmetric minimum-degree orderings took 11 s for the same fill), and applies ``P_b^-1`` inside
the CG pass that already visits the block. Where no edge crosses the blocks (METIS blocks of a
graph whose components pack into the blocks, as on KDD99) ``L`` is block diagonal, ``L^p``'s
blocks are ``(L_bb)^p``, and the preconditioner is the inverse of the system: CG stops after one
pass. Between blocks it is block Jacobi.

``gamma L^p + diag(a)`` is singular on a component with ``a = 0`` on all its rows (graph
transduction's components without a labeled row when ``mu = 0``), and nearly so on a block's
piece of a component whose edges out of the block weigh ~1e-300 (heat weights that underflow).
CG needs a preconditioner that is applied as a symmetric positive definite matrix; the LU of a
nearly singular block is not, to rounding (it pivots, and the normalized weights are formed in
different orders on the two sides of an edge), and on a 5 k-row KDD99 sample in data blocks
with the former default width CG diverged with shifts of 1e-10 and 1e-8 of the largest diagonal
entry. Each factor gets a shift of :data:`SHIFT` times its largest diagonal entry: modes of the
system below that are left to CG (on the same sample, METIS blocks took 5-9 passes instead of
3-7; data blocks converged in 81-166).

The LU's fill follows the graph's separators. A kNN graph of low intrinsic dimension has small
ones (KDD99, 25 k-row data block: 15x fill, 0.5 s); a text kNN graph is close to an expander
(RCV1-like 30 k rows, a 15 k-row block: 467x fill, 118 s; a 100 k-row block would not finish).
So a block factors only when its envelope under reverse Cuthill-McKee ordering, a bound on a
banded factor's fill, is within :data:`FILL_BUDGET` times its entries (KDD99 block above: 157;
the RCV1-like one: 678). Other blocks get one V-cycle of PyAMG's smoothed aggregation with
symmetric smoothing instead, a symmetric positive definite approximate inverse, set up in
O(entries) (0.35 s on that RCV1-like block).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee
from scipy.sparse.linalg import splu

PRECONDITIONERS = (None, "block")
#: Relative diagonal shift of each block's factor (module docstring).
SHIFT = 1e-6
#: Largest (2 x RCM envelope) / entries of a block that is factored exactly (module docstring).
FILL_BUDGET = 200.0


def check_preconditioner(preconditioner) -> None:
    """Raise ``ValueError`` unless ``preconditioner`` is one of :data:`PRECONDITIONERS`."""
    if preconditioner not in PRECONDITIONERS:
        raise ValueError(f"preconditioner must be one of {PRECONDITIONERS}, "
                         f"got {preconditioner!r}")


def block_matrix(A, d, a, gamma: float, p: int) -> sp.csc_matrix:
    """``gamma (L_bb)^p + diag(a)`` of a block whose operator is ``L = diag(d) - A`` (``A`` of
    shape ``n_b x (n_b + halo)``, its first ``n_b`` columns the block's own rows)."""
    n_b = A.shape[0]
    L = (sp.diags(np.asarray(d, np.float64)) - A[:, :n_b]).tocsr()
    Lp = L
    for _ in range(p - 1):
        Lp = Lp @ L
    return (gamma * Lp + sp.diags(np.asarray(a, np.float64).ravel())).tocsc()


def envelope(P) -> int:
    """Entries between each row's first nonzero and its diagonal under reverse Cuthill-McKee
    ordering of the symmetric ``P`` (with its diagonal): a bound on the fill of ``P``'s lower
    factor in that ordering."""
    P = sp.csr_matrix(P)
    order = reverse_cuthill_mckee(P, symmetric_mode=True)
    Q = P[order][:, order].tocsr()
    Q.sort_indices()
    rows = np.arange(Q.shape[0])
    first = np.where(np.diff(Q.indptr) > 0, Q.indices[np.minimum(Q.indptr[:-1], Q.nnz - 1)],
                     rows)
    return int(np.sum(rows - np.minimum(first, rows)))


class _VCycle:
    """One smoothed-aggregation V-cycle as a block's approximate inverse (``.solve(V)``)."""

    def __init__(self, P):
        import pyamg

        self.M = pyamg.smoothed_aggregation_solver(P.tocsr(), symmetry="symmetric") \
            .aspreconditioner(cycle="V")

    def solve(self, V):
        V = np.asarray(V, dtype=np.float64)
        if V.ndim == 1:
            return self.M @ V
        return np.column_stack([self.M @ V[:, j] for j in range(V.shape[1])])


def factor_block(A, d, a, gamma: float, p: int):
    """A block's preconditioner (:func:`block_matrix`, shifted by :data:`SHIFT`): its sparse
    LU, or a multigrid V-cycle past :data:`FILL_BUDGET`; ``.solve(V)`` applies its (approximate)
    inverse to an ``n_b x c`` array."""
    P = block_matrix(A, d, a, gamma, p)
    scale = P.diagonal().max(initial=0.0)
    shift = SHIFT * (scale if scale > 0 else 1.0)
    P = (P + shift * sp.identity(P.shape[0], format="csc")).tocsc()
    if 2 * envelope(P) > FILL_BUDGET * P.nnz:
        return _VCycle(P)
    return splu(P)
