"""Exact nearest neighbours by brute force, block by block: the yardstick for recall, and the
search for new points when a graph was loaded without its indexes."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import pairwise_distances

# Rows of a block compared with the queries at once: bounds the distance matrix held in memory.
_CHUNK_ROWS = 20000


def exact_block(X, Q, k, metric, offset, exclude=None):
    """The ``k`` nearest rows of block ``X`` (global rows ``offset..``) to each query row.

    Parameters
    ----------
    X, Q : ndarray or CSR matrix
    k : int
    metric : {"euclidean", "cosine"}
    offset : int
        Global row number of ``X``'s first row.
    exclude : ndarray of int, optional
        Per query, a global row number it may not be matched with (the query itself).

    Returns
    -------
    (indices, distances) : int64 and float64 arrays, ``len(Q) x min(k, len(X))``
    """
    n = X.shape[0]
    k = min(k, n)
    best_i = np.empty((Q.shape[0], 0), dtype=np.int64)
    best_d = np.empty((Q.shape[0], 0))
    for start in range(0, n, _CHUNK_ROWS):
        stop = min(start + _CHUNK_ROWS, n)
        D = pairwise_distances(Q, X[start:stop], metric=metric)
        if metric == "cosine":
            # An all-zero row has no direction; sklearn calls it distance 1 from everything.
            np.maximum(D, 0.0, out=D)
        cols = np.arange(start, stop, dtype=np.int64) + offset
        if exclude is not None:
            D[exclude[:, None] == cols[None, :]] = np.inf
        ind = np.hstack([best_i, np.broadcast_to(cols, D.shape)])
        dist = np.hstack([best_d, D])
        order = np.lexsort((ind, dist), axis=-1)[:, :k]
        best_i = np.take_along_axis(ind, order, axis=1)
        best_d = np.take_along_axis(dist, order, axis=1)
    return best_i, best_d
