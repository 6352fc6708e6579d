"""Label draws (and the small labeled sets built on them) shared by the selection tests."""

import numpy as np


def labels_per_class(y, per_class, seed):
    """-1 everywhere but ``per_class`` random rows of each class of ``y``."""
    rng = np.random.default_rng(seed)
    out = np.full(np.shape(y), -1)
    for c in np.unique(y):
        out[rng.choice(np.flatnonzero(y == c), per_class, replace=False)] = c
    return out


def four_blob_views(labels_per_class):
    """Four blobs of different spreads in 8 features split into two views of 4, 40 rows a
    blob, ``labels_per_class`` labels a blob: the class-balance cut's collapse case."""
    rng = np.random.default_rng(2)
    centers = rng.normal(size=(4, 8)) * 3
    X = np.vstack([centers[c] + s * rng.normal(size=(40, 8))
                   for c, s in enumerate((0.6, 1.0, 1.4, 2.0))])
    y = np.repeat(np.arange(4), 40)
    yl = np.full(y.size, -1)
    for c in range(4):
        yl[rng.choice(np.flatnonzero(y == c), labels_per_class, replace=False)] = c
    return [X[:, :4], X[:, 4:]], y, yl
