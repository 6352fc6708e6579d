"""The default RBF width of the kernel estimators, from the rows alone (no label read).

``gamma = 1 / (2 sigma^2)`` with ``sigma`` ``WIDTH_FACTOR`` times the mean distance from a row to
its ``WIDTH_NEIGHBORS`` nearest rows, over up to ``WIDTH_SAMPLE`` evenly spaced rows: a local
length scale. :func:`default_rbf_gamma` computes it on rows in memory, :func:`blocks_rbf_gamma`
on row blocks without moving them.

Where the width is not given, LapRLS and LapSVM choose it on the labeled rows among
:func:`width_candidates`: the default ``sigma`` and ``sigma`` times each of
:data:`SELECTION_FACTORS`. The default is a heuristic (a local length scale times a constant
that no data set fixed); one octave below and above it brackets the scale of the rows' nearest
neighbours (``sigma`` near their mean distance, where the kernel starts to see only the
nearest rows) and that of a neighbourhood several times wider, with the default in the middle,
so a width the data prefer nearby is within a factor of 1.4 of a candidate. Coarser or wider
grids cost one more candidate family each in the selection for widths the default's
local-scale reasoning already rules out.
"""

from __future__ import annotations

import numpy as np
from sklearn.neighbors import NearestNeighbors

from ..graph.exact import exact_block
from ..kernels.nystrom import NystromFeatures
from ..linalg import RowBlocks

WIDTH_NEIGHBORS = 10
WIDTH_FACTOR = 2.0
WIDTH_SAMPLE = 1000
#: Multiples of the default ``sigma`` tried besides it where the width is chosen.
SELECTION_FACTORS = (0.5, 2.0)


def _sample_rows(n: int, sample: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, sample)).astype(np.int64))


def _gamma(mean_distance: float, factor: float) -> float:
    sigma = factor * mean_distance if mean_distance > 0 else 1.0
    return 1.0 / (2.0 * sigma * sigma)


def default_rbf_gamma(X) -> float:
    """The default RBF ``gamma`` of the rows ``X`` (dense or CSR, in memory)."""
    n = X.shape[0]
    k = min(WIDTH_NEIGHBORS, n - 1)
    if k < 1:
        return 1.0
    rows = _sample_rows(n, WIDTH_SAMPLE)
    dist, _ = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X[rows])
    return _gamma(float(dist[:, 1:].mean()), WIDTH_FACTOR)


def _nearest_distances(i, X, offset, k, Q, rows):
    _, dist = exact_block(X, Q, k, "euclidean", offset, exclude=rows)
    return dist


def blocks_rbf_gamma(blocks: RowBlocks, n_neighbors: int = WIDTH_NEIGHBORS,
                     factor: float = WIDTH_FACTOR, sample: int = WIDTH_SAMPLE) -> float:
    """:func:`default_rbf_gamma` computed on the row blocks: the evenly spaced query rows are
    fetched (one round trip) and each block returns their ``n_neighbors`` nearest distances
    among its rows (the query row itself excluded), so no block leaves its worker."""
    n = blocks.n_rows
    k = min(n_neighbors, n - 1)
    if k < 1:
        return 1.0
    rows = _sample_rows(n, sample)
    Q = NystromFeatures._fetch(blocks, rows)
    parts = blocks.call(_nearest_distances, Q, rows,
                        per_block=[(int(off), k) for off in blocks.offsets[:-1]])
    dist = np.sort(np.hstack(parts), axis=1)[:, :k]
    return _gamma(float(dist.mean()), factor)


def width_candidates(gamma: float) -> list[float]:
    """The RBF ``gamma`` values a selection tries around the default ``gamma``: the default
    first (the incumbent), then ``sigma`` times each of :data:`SELECTION_FACTORS`
    (``gamma / factor^2``)."""
    return [float(gamma)] + [float(gamma) / (f * f) for f in SELECTION_FACTORS]
