"""How good an approximate kNN graph is, measured on a sample of rows against exact search.

Recall counts an approximate neighbour as found when it is one of the exact ``k`` or lies no
farther than the exact ``k``-th (duplicates and ties make the exact set ambiguous). On sparse
text under cosine distance recall is a poor measure (distances crowd into a narrow band), so
the class agreement of the neighbours is reported beside it, for both neighbour sets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..linalg.rowblocks import RowBlocks
from .exact import exact_block
from .knn import Neighbors, merge_candidates

# Slack for distances that float32 search and float64 exact search compute differently.
_RTOL, _ATOL = 2e-5, 1e-6


@dataclass
class KNNQuality:
    """Recall and class agreement of approximate neighbours on ``n_samples`` rows.

    Attributes
    ----------
    recall : float
        Fraction of approximate neighbours that are true k-nearest (ties counted as found).
    agreement : float or None
        Fraction of approximate neighbours with the row's class (None without labels).
    exact_agreement : float or None
        The same for the exact neighbours.
    n_samples : int
    """

    recall: float
    agreement: float | None
    exact_agreement: float | None
    n_samples: int


def _pick(i, X, local):
    return X[local]


def take_rows(data: RowBlocks, rows) -> np.ndarray | sp.csr_matrix:
    """Rows ``rows`` (global numbers, any order) of ``data``, fetched to the driver."""
    rows = np.asarray(rows, dtype=np.int64)
    block = np.searchsorted(data.offsets, rows, side="right") - 1
    futs, where = [], []
    for b in np.unique(block):
        sel = np.flatnonzero(block == b)
        futs.append(data.client.submit(_pick, int(b), data.blocks[b], rows[sel] - data.offsets[b],
                                       workers=[data.owners()[b]], allow_other_workers=True,
                                       pure=False))
        where.append(sel)
    got = data.client.gather(futs)
    order = np.argsort(np.concatenate(where), kind="stable")
    stack = sp.vstack(got, format="csr") if data.sparse else np.vstack(got)
    return stack[order]


def _rowdot(A, B):
    if sp.issparse(A):
        return np.asarray(A.multiply(B).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", A, B)


def paired_distances(A, B, metric: str) -> np.ndarray:
    """Distance between row ``i`` of ``A`` and row ``i`` of ``B`` (dense or CSR), in float64."""
    aa, bb, ab = _rowdot(A, A), _rowdot(B, B), _rowdot(A, B)
    if metric == "euclidean":
        return np.sqrt(np.maximum(aa + bb - 2.0 * ab, 0.0))
    norms = np.sqrt(aa * bb)
    # sklearn's convention: a zero row is at distance 1 from everything.
    return np.where(norms > 0, 1.0 - ab / np.where(norms > 0, norms, 1.0), 1.0)


def _exact(i, X, offset, Q, rows, k, metric):
    return exact_block(X, Q, k, metric, offset, exclude=rows)


def exact_neighbors(data: RowBlocks, rows, k: int, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``k`` nearest neighbours (not the row itself) of rows ``rows``, searched on the
    workers block by block and merged here."""
    rows = np.asarray(rows, dtype=np.int64)
    Q = take_rows(data, rows)
    [q] = data.client.scatter([Q], broadcast=True, hash=False)
    parts = data.map(_exact, q, rows, k, metric, per_block=[(int(o),) for o in data.offsets[:-1]])
    return merge_candidates(k, *parts)


def _approx_rows(i, part, local):
    return part[0][local], part[1][local]


def knn_quality(neigh: Neighbors, *, n_samples: int = 1000, labels=None,
                random_state=0) -> KNNQuality:
    """Measure ``neigh`` against exact search on a random sample of rows.

    Parameters
    ----------
    neigh : Neighbors
    n_samples : int
        Rows to check (all rows when there are fewer).
    labels : array-like of shape (n_rows,), optional
        Classes for the agreement figures; default the labels carried by ``neigh.data``.
    random_state : int or None
    """
    data = neigh.data
    rows = sample_rows(data.n_rows, n_samples, random_state)
    block = np.searchsorted(data.offsets, rows, side="right") - 1
    got = data.client.gather([
        data.client.submit(_approx_rows, int(b), neigh.parts[b],
                           rows[block == b] - data.offsets[b], pure=False)
        for b in np.unique(block)])
    approx_ind = np.vstack([g[0] for g in got])
    return score_neighbors(data, rows, approx_ind, neigh.metric, labels=labels)


def sample_rows(n_rows: int, n_samples: int, random_state=0) -> np.ndarray:
    """The sorted sample of rows :func:`knn_quality` checks."""
    rng = np.random.default_rng(random_state)
    return np.sort(rng.choice(n_rows, size=min(n_samples, n_rows), replace=False))


def score_neighbors(data: RowBlocks, rows, approx_ind, metric: str, *, labels=None,
                    exact=None) -> KNNQuality:
    """Recall and agreement of neighbour lists ``approx_ind`` (``len(rows) x k``, global row
    numbers, from any search) of rows ``rows`` of ``data``.

    ``exact`` may pass a precomputed ``exact_neighbors(data, rows, k, metric)``, to score several
    searches against one exact search.
    """
    rows = np.asarray(rows, dtype=np.int64)
    k = approx_ind.shape[1]
    exact_ind, exact_dist = exact if exact is not None else exact_neighbors(data, rows, k, metric)
    # Distances recomputed here rather than trusted from the search.
    Q = take_rows(data, rows)
    N = take_rows(data, approx_ind.ravel())
    approx_dist = paired_distances(Q[np.repeat(np.arange(len(rows)), k)], N,
                                   metric).reshape(len(rows), k)
    kth = exact_dist[:, -1:]
    hit = (approx_ind[:, :, None] == exact_ind[:, None, :]).any(axis=2)
    hit |= approx_dist <= kth * (1 + _RTOL) + _ATOL
    hit &= approx_ind != rows[:, None]
    recall = float(hit.mean())
    if labels is None and data.labels is not None:
        labels = data.gather_labels()
    agree = exact_agree = None
    if labels is not None:
        labels = np.asarray(labels)
        own = labels[rows][:, None]
        agree = float((labels[approx_ind] == own).mean())
        exact_agree = float((labels[exact_ind] == own).mean())
    return KNNQuality(recall, agree, exact_agree, len(rows))
