"""The toy data of Sinha and Belkin's sparse eigenfunction bases (their section 4.1), and the
label draws of their protocol, shared by the tests and the benchmark of
:class:`~dask_ssl.models.SparseEigenfunctionClassifier`."""

from __future__ import annotations

import numpy as np


def eigenfunction_mixture(n: int, seed: int):
    """``(X, truth)``: class 1 from N((0,0), 2I) (weight 0.4), class 0 from N((5,5),
    [[2,1],[1,2]]) (0.3) and N((7,7), 1.5I) (0.3); in memory."""
    rng = np.random.default_rng(seed)
    part = rng.choice(3, size=n, p=[0.4, 0.3, 0.3])
    means = [(0.0, 0.0), (5.0, 5.0), (7.0, 7.0)]
    covs = [2.0 * np.eye(2), np.array([[2.0, 1.0], [1.0, 2.0]]), 1.5 * np.eye(2)]
    X = np.empty((n, 2))
    for k in range(3):
        X[part == k] = rng.multivariate_normal(means[k], covs[k], size=int((part == k).sum()))
    return X, (part == 0).astype(int)


def label_draws(truth, n_labeled: int, n_draws: int) -> list:
    """Labeled row sets of ``n_labeled`` rows with both classes of ``truth``, one per draw
    (seeded by the draw number, so every method gets the same labels)."""
    draws = []
    for k in range(n_draws):
        rng = np.random.default_rng(k)
        while True:
            rows = rng.choice(truth.size, n_labeled, replace=False)
            if np.unique(truth[rows]).size == 2:
                draws.append(rows)
                break
    return draws
