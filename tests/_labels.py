"""Label draws shared by the selection tests."""

import numpy as np


def labels_per_class(y, per_class, seed):
    """-1 everywhere but ``per_class`` random rows of each class of ``y``."""
    rng = np.random.default_rng(seed)
    out = np.full(np.shape(y), -1)
    for c in np.unique(y):
        out[rng.choice(np.flatnonzero(y == c), per_class, replace=False)] = c
    return out
