"""Re-split a graph's rows into blocks with few edges between them.

A Laplacian product moves each block's *halo* (its rows' neighbours in other blocks) through the
driver, so blocks cut along the data's row order make every CG pass carry much of the vector: on
the KDD99 kNN graph in 2 blocks, 56% and 32% of the blocks' rows. A k-way minimum edge cut
(METIS, through ``pymetis``) of the same graph cuts no edge at all (its 1930 components pack into
two sides). The same library orders a block's rows for its factorization
(:func:`nested_dissection`, used by :mod:`dask_ssl.graph.precond`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..linalg.rowblocks import RowBlocks

PARTITIONS = (None, "metis")


def check_partition(partition) -> None:
    """Raise ``ValueError`` unless ``partition`` is one of :data:`PARTITIONS`."""
    if partition not in PARTITIONS:
        raise ValueError(f"partition must be one of {PARTITIONS}, got {partition!r}")


def min_cut_order(W: sp.csr_matrix, n_parts: int, seed: int = 0):
    """Rows of ``W`` grouped by a METIS k-way min-cut partition into ``n_parts`` parts.

    Returns ``(order, sizes)``: ``order[k]`` is the row placed at position ``k`` (each part's
    rows ascending, parts in turn) and ``sizes`` the rows per part; None when there is nothing to
    split or METIS leaves a part empty (tiny graphs), so the caller keeps its blocks.
    """
    import pymetis

    n = W.shape[0]
    if n_parts < 2 or n < 2 * n_parts:
        return None
    _, parts = pymetis.part_graph(n_parts, adjacency=_adjacency(W),
                                  options=pymetis.Options(seed=seed))
    parts = np.asarray(parts)
    sizes = np.bincount(parts, minlength=n_parts)
    if (sizes == 0).any():
        return None
    return np.argsort(parts, kind="stable"), sizes


def nested_dissection(P) -> np.ndarray:
    """METIS's fill-reducing order of the symmetric ``P``'s rows (``P[order][:, order]``)."""
    import pymetis

    S = sp.csr_matrix(P, copy=True)
    S.setdiag(0)
    S.eliminate_zeros()
    if S.nnz == 0:
        return np.arange(S.shape[0])
    order, _ = pymetis.nested_dissection(adjacency=_adjacency(S))
    return np.asarray(order, dtype=np.int64)


def _adjacency(W: sp.csr_matrix):
    """``W``'s pattern as METIS's graph."""
    import pymetis

    return pymetis.CSRAdjacency(W.indptr.astype(np.int64), W.indices.astype(np.int64))


def reblock(W: sp.csr_matrix, order: np.ndarray, sizes, client) -> RowBlocks:
    """``W`` with rows and columns in ``order``, as row blocks of ``sizes`` on the workers."""
    return RowBlocks.from_array(W[order][:, order].tocsr(), client=client, sizes=sizes)
