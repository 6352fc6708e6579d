"""Seeded, stratified splits of a data set into labeled, unlabeled and test rows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Split:
    """Disjoint, sorted row indices whose union is every row.

    Attributes
    ----------
    labeled, unlabeled, test : ndarray of int64
    """

    labeled: np.ndarray
    unlabeled: np.ndarray
    test: np.ndarray

    @property
    def n_rows(self) -> int:
        return len(self.labeled) + len(self.unlabeled) + len(self.test)

    @property
    def train(self) -> np.ndarray:
        """Labeled and unlabeled rows, sorted."""
        return np.union1d(self.labeled, self.unlabeled)

    def y_train(self, y, *, marker=0):
        """``y`` with every row outside ``labeled`` (unlabeled and test rows) set to ``marker``.

        The default ``0`` is the svmlin / SVMlight unlabeled label, safe for +1 / -1 classes;
        pass ``marker=-1`` for scikit-learn's convention when the classes are not -1.

        Raises
        ------
        ValueError
            If ``marker`` is one of the classes of the labeled rows, or ``y`` has the wrong size.
        """
        y = np.asarray(y)
        if y.shape != (self.n_rows,):
            raise ValueError(f"y has shape {y.shape}, the split covers {self.n_rows} rows")
        if np.any(y[self.labeled] == marker):
            raise ValueError(f"marker={marker!r} is also a class of the labeled rows; pick "
                             "another unlabeled marker")
        out = np.full(y.shape, marker, dtype=np.result_type(y.dtype, np.asarray(marker).dtype))
        out[self.labeled] = y[self.labeled]
        return out


def _allocate(counts, total):
    """Split ``total`` over classes in proportion to ``counts``, at least 1 each (largest
    remainders get the leftovers, ties to the smaller class index)."""
    share = counts * total / counts.sum()
    out = np.maximum(1, np.floor(share).astype(np.int64))
    order = np.argsort(-(share - np.floor(share)), kind="stable")
    for k in order[:max(0, total - out.sum())]:
        out[k] += 1
    while out.sum() > total:  # the at-least-one rule took more than the total
        k = int(np.argmax(out))
        out[k] -= 1
    return out


def stratified_split(y, *, n_labeled=None, labels_per_class=None, test_fraction=0.0, seed=0):
    """Pick labeled, unlabeled and test rows with class proportions kept in each part.

    Parameters
    ----------
    y : array-like of shape (n,)
        True classes of all rows (any values; each distinct value is a class).
    n_labeled : int, optional
        Labeled rows in total, spread over the classes in proportion to their sizes in the
        training part, at least one per class.
    labels_per_class : int, optional
        Labeled rows per class instead. Exactly one of ``n_labeled`` and ``labels_per_class``.
    test_fraction : float in [0, 1), default 0
        Share of each class held out as test rows (rounded per class).
    seed : int, default 0
        The same ``y``, parameters and seed give the same split.

    Returns
    -------
    Split

    Raises
    ------
    ValueError
        If a class has too few training rows for its labeled count, or the parameters conflict.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
    if (n_labeled is None) == (labels_per_class is None):
        raise ValueError("give exactly one of n_labeled and labels_per_class")
    if not 0 <= test_fraction < 1:
        raise ValueError(f"test_fraction must lie in [0, 1), got {test_fraction!r}")
    classes, codes = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"y holds {len(classes)} class(es); a split needs at least two")
    count = n_labeled if n_labeled is not None else labels_per_class
    name = "n_labeled" if n_labeled is not None else "labels_per_class"
    if int(count) != count or count < 1:
        raise ValueError(f"{name} must be a positive integer, got {count!r}")
    if n_labeled is not None and n_labeled < len(classes):
        raise ValueError(f"n_labeled={n_labeled} is below the number of classes ({len(classes)})")

    rng = np.random.default_rng(seed)
    members = [rng.permutation(np.flatnonzero(codes == k)) for k in range(len(classes))]
    n_test = [int(round(test_fraction * len(m))) for m in members]
    n_train = np.array([len(m) - t for m, t in zip(members, n_test)])
    wanted = (_allocate(n_train, int(n_labeled)) if n_labeled is not None
              else np.full(len(classes), int(labels_per_class)))
    short = np.flatnonzero(wanted > n_train)
    if len(short):
        k = short[0]
        raise ValueError(f"class {classes[k].item()!r} has {n_train[k]} training rows, fewer "
                         f"than the {wanted[k]} labeled rows asked for")
    parts = [(m[:t], m[t:t + w], m[t + w:]) for m, t, w in zip(members, n_test, wanted)]
    test, labeled, unlabeled = (np.sort(np.concatenate([p[i] for p in parts])).astype(np.int64)
                                for i in range(3))
    return Split(labeled=labeled, unlabeled=unlabeled, test=test)
