"""Block-Jacobi preconditioner of ``gamma L^p + diag(a)``, factored and applied on the workers.

Each worker block ``b`` factors its own diagonal block ``P_b = gamma (L_bb)^p + diag(a_b)``
(``L_bb`` the block's rows and columns of ``L``) once, and applies ``P_b^-1`` inside the CG pass
that already visits the block. Where no edge crosses the blocks (METIS blocks of a graph whose
components pack into the blocks, as on KDD99) ``L`` is block diagonal, ``L^p``'s blocks are
``(L_bb)^p``, and the preconditioner is the inverse of the system: CG stops after one pass.
Between blocks it is block Jacobi.

``gamma L^p + diag(a)`` is singular on a component with ``a = 0`` on all its rows (graph
transduction's components without a labeled row when ``mu = 0``), and nearly so on a block's
piece of a component whose edges out of the block weigh ~1e-300 (heat weights that underflow).
CG needs a preconditioner that is applied as a symmetric positive definite matrix; the LU of a
nearly singular block is not, to rounding (the normalized weights are formed in
different orders on the two sides of an edge), and on a 5 k-row KDD99 sample in data blocks
with the former default width CG diverged with shifts of 1e-10 and 1e-8 of the largest diagonal
entry. Each factor gets a shift of :data:`SHIFT` times its largest diagonal entry: modes of the
system below that are left to CG (on the same sample, METIS blocks took 5-9 passes instead of
3-7; data blocks converged in 81-166).

The factor is SciPy's sparse LU (SuperLU) of the block in METIS nested dissection order, without
pivoting (``P_b`` is symmetric positive definite). SuperLU's own COLAMD ordering, made for
unsymmetric matrices, fills far more on these graphs: on a 25 k-row KDD99 data block 15x the
block's entries (0.5 s) against 5.6x (0.17 s); on a 247 k-row one 17x (15 s) against 4.1x (2.4
s); on a 15 k-row block of the RCV1-like text graph (30 k rows) 467x (118 s) against 41x (0.9 s).
A text kNN graph is close to an expander, whose separators grow in proportion to its rows, so
even that order fills without bound as blocks grow (a 100 k-row block of the RCV1-like graph at
200 k rows: 154x, 127 s, 3 GB). Before factoring, each block therefore counts the entries of
its Cholesky factor in that order (a symbolic factorization: elimination tree, then each row's
subtree), stopping once the count passes :data:`FILL_BUDGET` times the block's entries (that
block: 77x; the 15 k-row one 21x; KDD99's blocks 2-3x). A block past the budget is
preconditioned by its diagonal alone. The graphs that fill are the ones that need no more: an
expander's Laplacian has a wide spectral gap, and plain CG solved graph transduction on that
RCV1-like graph in 37 passes and 2.7 s, while a smoothed-aggregation V-cycle per block (PyAMG)
cut the passes to 12 but took 28 s in all. Poorly conditioned graphs (chains of clusters, many
components: KDD99) have small separators and factor cheaply.

A power ``(L_bb)^p`` of a text graph is dense: with the 50-NN graph and ``p = 5`` every entry
of a 5000-row block of the RCV1-like graph is non-zero. Such a block (at least
:data:`DENSE_FRACTION` of its entries, between :data:`DENSE_MIN_ROWS` and
:data:`DENSE_MAX_ROWS` rows) is held as a dense array and factored by LAPACK's Cholesky, which
reads one triangle, so the preconditioner is exactly symmetric. On that block the power took
7.9 s as sparse products and the sparse LU 6.9 s; the dense power's last products are
sparse-times-dense and the Cholesky took 0.83 s, its solves a third of the LU's.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from numba import njit
from scipy.sparse.linalg import splu

from .partition import nested_dissection

PRECONDITIONERS = (None, "block")
#: Relative diagonal shift of each block's factor (module docstring).
SHIFT = 1e-6
#: Largest Cholesky fill (entries of the factor over the block's entries, under nested
#: dissection) of a block that is factored exactly (module docstring).
FILL_BUDGET = 50.0
#: Share of non-zero entries from which a block is held dense (module docstring): its dense
#: array then takes at most the memory of its sparse one, 12 bytes an entry.
DENSE_FRACTION = 0.5
#: Rows of the smallest block held dense: below it a sparse factor costs little either way.
DENSE_MIN_ROWS = 500
#: Rows of the largest block held dense (2 GB of float64).
DENSE_MAX_ROWS = 16384


def _held_dense(n_b: int, nnz: int) -> bool:
    """Whether a block of ``n_b`` rows with ``nnz`` entries is held as a dense array."""
    return DENSE_MIN_ROWS <= n_b <= DENSE_MAX_ROWS and nnz >= DENSE_FRACTION * n_b * n_b


def check_preconditioner(preconditioner) -> None:
    """Raise ``ValueError`` unless ``preconditioner`` is one of :data:`PRECONDITIONERS`."""
    if preconditioner not in PRECONDITIONERS:
        raise ValueError(f"preconditioner must be one of {PRECONDITIONERS}, "
                         f"got {preconditioner!r}")


def block_power(A, d, p: int):
    """``(L_bb)^p`` of a block whose operator is ``L = diag(d) - A`` (``A`` of shape
    ``n_b x (n_b + halo)``, its first ``n_b`` columns the block's own rows): CSR, or a dense
    array once the power is dense enough to be held so (:func:`_held_dense`)."""
    n_b = A.shape[0]
    L = (sp.diags(np.asarray(d, np.float64)) - A[:, :n_b]).tocsr()
    Lp = L
    for _ in range(p - 1):
        # powers of L commute, so L @ Lp is the next one; with Lp dense it is one
        # sparse-times-dense product
        Lp = L @ Lp
        if sp.issparse(Lp) and _held_dense(n_b, Lp.nnz):
            Lp = Lp.toarray()
    return Lp


def block_matrix(A, d, a, gamma: float, p: int, power=None):
    """``gamma (L_bb)^p + diag(a)`` of a block (:func:`block_power`; ``power``, that power
    when already formed): CSC, or a dense array where the power is one."""
    Lp = block_power(A, d, p) if power is None else power
    a = np.asarray(a, np.float64).ravel()
    if not sp.issparse(Lp):
        P = gamma * Lp
        P[np.diag_indices_from(P)] += a
        return P
    return (gamma * Lp + sp.diags(a)).tocsc()


@njit(cache=True, nogil=True)
def _factor_entries(indptr, indices, budget):
    """Entries of the lower Cholesky factor of a symmetric pattern (CSR, any diagonal), counted
    row by row until they pass ``budget``: Liu's elimination tree, then each row's structure
    as the union of the tree paths from its entries left of the diagonal."""
    n = len(indptr) - 1
    parent = np.full(n, -1, np.int64)
    ancestor = np.full(n, -1, np.int64)
    for i in range(n):
        for e in range(indptr[i], indptr[i + 1]):
            r = indices[e]
            if r >= i:
                continue
            while ancestor[r] != -1 and ancestor[r] != i:
                t = ancestor[r]
                ancestor[r] = i
                r = t
            if ancestor[r] == -1:
                ancestor[r] = i
                parent[r] = i
    mark = np.full(n, -1, np.int64)
    count = n
    for i in range(n):
        mark[i] = i
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            if j >= i:
                continue
            while mark[j] != i:
                mark[j] = i
                count += 1
                j = parent[j]
            if count > budget:
                return count
    return count


class _OrderedLU:
    """The LU of ``P[order][:, order]`` without pivoting; ``.solve(V)`` in ``P``'s order."""

    def __init__(self, Q, order):
        self.order = order
        self.lu = splu(Q.tocsc(), permc_spec="NATURAL", diag_pivot_thresh=0.0,
                       options={"SymmetricMode": True})

    def solve(self, V):
        V = np.asarray(V, dtype=np.float64)
        out = np.empty_like(V)
        out[self.order] = self.lu.solve(V[self.order])
        return out


class _DenseCholesky:
    """The Cholesky factor of a dense block (its lower triangle read); ``.solve(V)``."""

    def __init__(self, P):
        self.factor = scipy.linalg.cho_factor(P, lower=True, overwrite_a=True,
                                              check_finite=False)

    def solve(self, V):
        return scipy.linalg.cho_solve(self.factor, np.asarray(V, dtype=np.float64),
                                      check_finite=False)


class _Diagonal:
    """A block's diagonal as its preconditioner (``.solve(V)``)."""

    def __init__(self, P):
        self.inverse = 1.0 / P.diagonal()

    def solve(self, V):
        V = np.asarray(V, dtype=np.float64)
        return V * (self.inverse if V.ndim == 1 else self.inverse[:, None])


def factor_block(A, d, a, gamma: float, p: int, fill_budget: float | None = None, *,
                 power=None):
    """A block's preconditioner (:func:`block_matrix`, shifted by :data:`SHIFT`): a dense
    block's Cholesky factor, else its sparse LU in nested dissection order, or its diagonal
    past ``fill_budget`` (None: :data:`FILL_BUDGET`, read when called); ``.solve(V)`` applies
    its (approximate) inverse to an ``n_b x c`` array. ``power``: ``(L_bb)^p``, when already
    formed."""
    P = block_matrix(A, d, a, gamma, p, power)
    scale = P.diagonal().max(initial=0.0)
    shift = SHIFT * (scale if scale > 0 else 1.0)
    if sp.issparse(P) and _held_dense(P.shape[0], P.nnz):
        P = P.toarray()
    if not sp.issparse(P):
        P[np.diag_indices_from(P)] += shift
        diagonal = P.diagonal().copy()
        try:
            return _DenseCholesky(P)
        except np.linalg.LinAlgError:
            # not positive definite to rounding: the diagonal, as past the fill budget
            return _Diagonal(sp.diags(diagonal))
    P = (P + shift * sp.identity(P.shape[0], format="csc")).tocsr()
    order = nested_dissection(P)
    Q = P[order][:, order].tocsr()
    budget = (FILL_BUDGET if fill_budget is None else fill_budget) * P.nnz
    if _factor_entries(Q.indptr.astype(np.int64), Q.indices.astype(np.int64),
                       int(min(budget, 2**62))) > budget:
        return _Diagonal(P)
    return _OrderedLU(Q, order)


class _ColumnGroups:
    """Block preconditioners of columns solved with different graph weights or fidelities:
    one factor per distinct pair, each applied to its own columns (``.solve(V)``)."""

    def __init__(self, factors, groups):
        self.factors, self.groups = factors, groups

    def solve(self, V):
        V = np.asarray(V, dtype=np.float64)
        out = np.empty_like(V)
        for factor, cols in zip(self.factors, self.groups):
            out[:, cols] = factor.solve(V[:, cols])
        return out


def factor_columns(A, d, a, gamma, p: int, fill_budget: float | None = None):
    """:func:`factor_block` for a system whose columns may carry different graph weights and
    fidelities (``gamma`` a float or one per column, ``a`` of shape ``n_b x 1`` or one column
    per column): one factor per distinct pair on this block (``fill_budget`` as in
    :func:`factor_block`)."""
    a = np.asarray(a, np.float64).reshape(np.shape(a)[0], -1)
    gamma = np.atleast_1d(np.asarray(gamma, np.float64))
    n_cols = max(gamma.size, a.shape[1])
    keys = np.vstack([np.broadcast_to(gamma, (n_cols,)),
                      np.broadcast_to(a, (a.shape[0], n_cols))]).T
    values, which = np.unique(keys, axis=0, return_inverse=True)
    which = np.ravel(which)
    if len(values) == 1:
        return factor_block(A, d, values[0, 1:], float(values[0, 0]), p, fill_budget)
    # the power is the same for every pair (beyond p = 1 forming it dominates the setup)
    power = block_power(A, d, p)
    return _ColumnGroups([factor_block(A, d, v[1:], float(v[0]), p, fill_budget, power=power)
                          for v in values],
                         [np.flatnonzero(which == j) for j in range(len(values))])
