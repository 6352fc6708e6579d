"""Cross-validation on semi-supervised labels, for tuning with scikit-learn's own tools.

A semi-supervised ``y`` marks its unlabeled rows (``-1`` by default). scikit-learn's splitters
treat the marker as one more class: they hold unlabeled rows out of training, where a
semi-supervised estimator needs every one of them, and put them in test folds, where they have
no label to be scored against. :class:`LabeledStratifiedKFold` holds out labeled rows only
(stratified by class) and keeps every unlabeled row in every training fold;
:func:`labeled_scorer` scores the labeled rows of a test fold only. Together they let
``GridSearchCV``, ``cross_val_score`` and the like tune any estimator that reads the marker,
dask-ssl's or scikit-learn's ``LabelSpreading``.

Examples
--------
>>> from sklearn.model_selection import GridSearchCV
>>> from dask_ssl.models import LapRLS
>>> from dask_ssl.model_selection import LabeledStratifiedKFold, labeled_scorer
>>> search = GridSearchCV(LapRLS(p=1), {"n_neighbors": [5, 10, 20]},   # doctest: +SKIP
...                       cv=LabeledStratifiedKFold(n_splits=3, random_state=0),
...                       scoring=labeled_scorer("accuracy"))
>>> search.fit(X, y).best_params_                    # y: -1 on unlabeled rows  # doctest: +SKIP
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.metrics import get_scorer, get_scorer_names, make_scorer, zero_one_loss
from sklearn.model_selection import BaseCrossValidator, StratifiedKFold
from sklearn.utils import _safe_indexing, indexable
from sklearn.utils.validation import column_or_1d

__all__ = ["LabeledStratifiedKFold", "labeled_scorer"]


class LabeledStratifiedKFold(BaseCrossValidator):
    """Stratified k-fold over the labeled rows; every unlabeled row in every training fold.

    The test folds partition the labeled rows, each class spread over the folds as evenly as
    scikit-learn's ``StratifiedKFold`` spreads it (the fold sizes of a class differ by at most
    one). A training fold is every other row: the remaining labeled rows and all unlabeled
    rows, which a semi-supervised estimator learns from and which have no label to test.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, at least 2. Every class needs at least ``n_splits`` labeled rows, so
        that each test fold holds each class and each training fold keeps it.
    unlabeled : object, default=-1
        Marker of unlabeled rows in ``y``.
    shuffle : bool, default=True
        Shuffle each class's labeled rows before cutting them into folds. Labeled rows often
        come sorted or grouped (the first rows of a file, a class at a time); unshuffled folds
        would then inherit that order.
    random_state : int, RandomState instance or None, default=None
        Seed of the shuffle; an int gives the same folds on every call. Must be None when
        ``shuffle=False`` (as in ``StratifiedKFold``).

    See Also
    --------
    labeled_scorer : scores the labeled rows of a test fold only.
    sklearn.model_selection.StratifiedKFold : the stratification used on the labeled rows.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([0, 1, -1, -1, 0, 1, -1, 0, 1])
    >>> cv = LabeledStratifiedKFold(n_splits=3, random_state=0)
    >>> for train, test in cv.split(np.zeros((9, 1)), y):
    ...     assert set(np.flatnonzero(y == -1)) <= set(train) and (y[test] != -1).all()
    """

    def __init__(self, *, n_splits=5, unlabeled=-1, shuffle=True, random_state=None):
        self.n_splits = n_splits
        self.unlabeled = unlabeled
        self.shuffle = shuffle
        self.random_state = random_state

    def split(self, X, y=None, groups=None):
        """Generate ``(train, test)`` row indices, one pair per fold.

        The input is checked and the folds are drawn when this is called, so a bad ``y`` or
        parameter fails here, before any estimator is fitted.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows (only their number is read).
        y : array-like of shape (n_samples,)
            Classes of the labeled rows, ``unlabeled`` on the others. Required.
        groups : None
            Ignored (with a warning if given); present for scikit-learn's interface.

        Yields
        ------
        train : ndarray of int
            Sorted indices of the training rows: every unlabeled row and the labeled rows
            outside the test fold.
        test : ndarray of int
            Sorted indices of the fold's held-out labeled rows.

        Raises
        ------
        ValueError
            If ``y`` is missing or has no labeled row, ``n_splits`` is below 2, or a class has
            fewer labeled rows than ``n_splits``.
        """
        if y is None:
            raise ValueError(f"{type(self).__name__}.split requires y: the folds are drawn "
                             "from its labeled rows")
        if groups is not None:
            warnings.warn(f"the groups parameter is ignored by {type(self).__name__}",
                          UserWarning, stacklevel=2)
        X, y = indexable(X, y)
        y = column_or_1d(y)
        # StratifiedKFold checks n_splits (an int, at least 2), shuffle and random_state
        folds = StratifiedKFold(self.n_splits, shuffle=self.shuffle,
                                random_state=self.random_state)
        labeled = np.flatnonzero(y != self.unlabeled)
        if labeled.size == 0:
            raise ValueError(f"y has no labeled row: all {y.size} entries are the unlabeled "
                             f"marker {self.unlabeled!r}")
        classes, counts = np.unique(y[labeled], return_counts=True)
        short = np.flatnonzero(counts < self.n_splits)
        if short.size:
            listed = ", ".join(f"class {classes[k].item()!r}: {counts[k]}" for k in short)
            raise ValueError(f"n_splits={self.n_splits} needs at least {self.n_splits} labeled "
                             f"rows of every class; labeled rows of {listed}")
        # labeled is sorted and StratifiedKFold's test indices are, so each test fold is sorted
        tests = [labeled[test] for _, test in folds.split(labeled, y[labeled])]
        return self._folds(y.size, tests)

    @staticmethod
    def _folds(n_rows, tests):
        for test in tests:
            train = np.ones(n_rows, dtype=bool)
            train[test] = False
            yield np.flatnonzero(train), test

    def get_n_splits(self, X=None, y=None, groups=None):
        """Number of folds, ``n_splits``. The arguments are ignored.

        Returns
        -------
        int
        """
        return self.n_splits


class _LabeledScorer:
    """A scikit-learn scorer applied to the labeled rows of ``(X, y)`` only."""

    def __init__(self, metric, scorer, unlabeled):
        self.metric = metric
        self.scorer = scorer
        self.unlabeled = unlabeled

    def __call__(self, estimator, X, y):
        y = column_or_1d(y)
        labeled = np.flatnonzero(y != self.unlabeled)
        if labeled.size == 0:
            raise ValueError(f"the test rows hold no labeled row (all {y.size} are the "
                             f"unlabeled marker {self.unlabeled!r}): nothing to score; draw "
                             "folds from the labeled rows (LabeledStratifiedKFold)")
        return self.scorer(estimator, _safe_indexing(X, labeled), y[labeled])

    def __repr__(self):
        return f"labeled_scorer({self.metric!r}, unlabeled={self.unlabeled!r})"


def labeled_scorer(metric="accuracy", *, unlabeled=-1):
    """A scorer that scores the labeled rows of the test rows only, for ``scoring=``.

    Rows whose ``y`` is the ``unlabeled`` marker are dropped before the estimator predicts, so
    the score is right with any splitter, also one (a plain ``KFold``) whose test folds hold
    unlabeled rows: an unlabeled row has no label to be scored against, and scikit-learn's
    default ``estimator.score`` would count the marker as a wrong class.

    Parameters
    ----------
    metric : str, default="accuracy"
        ``"error"``: the share of misclassified labeled rows, returned negated (``-error``),
        since scikit-learn's searches maximize a score (as its ``neg_*`` scorers do); the best
        setting has the score closest to 0. Otherwise a scikit-learn scorer name
        (``sklearn.metrics.get_scorer_names()``), such as ``"accuracy"`` or
        ``"balanced_accuracy"``, with that scorer's sign.
    unlabeled : object, default=-1
        Marker of unlabeled rows in ``y``.

    Returns
    -------
    callable
        ``scorer(estimator, X, y) -> float``.

    Raises
    ------
    ValueError
        Here, if ``metric`` is not a known name; when called, if the rows hold no labeled row.

    Examples
    --------
    >>> from sklearn.model_selection import cross_val_score
    >>> cross_val_score(model, X, y, cv=LabeledStratifiedKFold(),  # doctest: +SKIP
    ...                 scoring=labeled_scorer("error")).mean()    # -(mean error)
    """
    if metric == "error":
        scorer = make_scorer(zero_one_loss, greater_is_better=False)
    elif metric in get_scorer_names():
        scorer = get_scorer(metric)
    else:
        raise ValueError(f"unknown metric {metric!r}: 'error' or a scikit-learn scorer name "
                         "(sklearn.metrics.get_scorer_names())")
    return _LabeledScorer(metric, scorer, unlabeled)
