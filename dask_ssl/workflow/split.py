"""Cutting labeled data into held-out test rows, labeled training rows and unlabeled rows.

The choice is made on the driver from the label vector (n-sized, fine up to ~1e8 rows); the rows
themselves stay on the workers and are selected there, block by block, where they lie.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..linalg import RowBlocks

#: Label of an unlabeled row in the training labels the runner hands to estimators.
UNLABELED = 0


@dataclass
class Split:
    """Row masks over the data as read, and the label vectors that go with them."""

    test: np.ndarray
    labeled: np.ndarray
    y: np.ndarray

    @property
    def train(self) -> np.ndarray:
        return ~self.test

    def train_labels(self) -> np.ndarray:
        """Training labels in training-row order: true label where labeled, 0 elsewhere."""
        return np.where(self.labeled, self.y, UNLABELED)[self.train]

    def counts(self) -> dict:
        train_unlabeled = self.train & ~self.labeled
        return {"n_train": int(self.train.sum()), "n_labeled": int(self.labeled.sum()),
                "n_unlabeled": int(train_unlabeled.sum()), "n_test": int(self.test.sum()),
                "labeled_per_class": {str(c): int(((self.y == c) & self.labeled).sum())
                                      for c in np.unique(self.y[self.labeled])}}


def choose(y, *, test_fraction: float, seed: int, labeled=None, labeled_per_class=None) -> Split:
    """Pick test rows and labeled training rows, stratified by class, reproducibly.

    Rows whose label is 0 (unlabeled in the file) are never test or labeled rows; the others go
    through :func:`dask_ssl.data.stratified_split`, so splits with more labels per class
    contain those with fewer (same seed).

    Parameters
    ----------
    y : array of shape (n,)
        Labels as read; 0 marks rows without a label.
    test_fraction : float
        Fraction of each class's labeled rows held out for evaluation; 0 holds out none (the
        split of ``dask-ssl fit``, which trains on every row).
    seed : int
    labeled : int or 'all', optional
        Labeled training rows in total, spread over the classes in proportion to their size
        (at least one each). 'all' (the default) keeps every label that is not a test row.
    labeled_per_class : int, optional
        Labeled training rows per class; exclusive with ``labeled``.
    """
    from ..data import stratified_split

    y = np.asarray(y)
    known = np.flatnonzero(y != UNLABELED)
    y_known = y[known]
    test = np.zeros(y.shape[0], dtype=bool)
    lab = np.zeros(y.shape[0], dtype=bool)
    every_label = labeled_per_class is None and labeled in (None, "all")
    if every_label and test_fraction == 0:
        # Nothing to choose: the estimator sees the file's labels as they are (and names the
        # problem itself when they cannot be learned from: none, or a single class).
        lab[known] = True
        return Split(test=test, labeled=lab, y=y)
    if labeled_per_class is not None:
        counts = {"labels_per_class": labeled_per_class}
    elif every_label:
        _, sizes = np.unique(y_known, return_counts=True)
        counts = {"n_labeled": max(1, int(sum(n - round(test_fraction * n) for n in sizes)))}
    else:
        counts = {"n_labeled": labeled}
    parts = stratified_split(y_known, test_fraction=test_fraction, seed=seed, **counts)
    if test_fraction > 0 and len(parts.test) == 0:
        raise ValueError(f"test_fraction={test_fraction} leaves no test rows; raise it")
    test[known[parts.test]] = True
    lab[known[parts.labeled]] = True
    return Split(test=test, labeled=lab, y=y)


def _take(i, X, mask):
    return X[mask]


def take(blocks: RowBlocks, mask: np.ndarray, labels=None) -> RowBlocks:
    """The rows of ``blocks`` where ``mask`` holds, selected on the workers that hold them.

    ``labels`` (one per selected row) are attached to the result when given.
    """
    from .views import ViewRows

    if isinstance(blocks, ViewRows):  # views in memory: the same rows of every view
        return blocks.take(mask, labels)
    local = [(mask[s],) for s in blocks.block_slices()]
    futs = blocks.submit(_take, per_block=local, key="take-rows")
    sizes = np.array([int(m.sum()) for (m,) in local])
    keep = [i for i, size in enumerate(sizes) if size > 0]
    out = RowBlocks(blocks.client, [futs[i] for i in keep], sizes[keep], blocks.n_features,
                    blocks.sparse)
    if labels is not None:
        out.persist_labels(labels)
    return out
