"""Stratified labeled / unlabeled / test splits."""

from __future__ import annotations

import numpy as np
import pytest

from dask_ssl.data import stratified_split

Y = np.r_[np.ones(700), -np.ones(250), np.full(50, 2.0)]


def test_parts_are_disjoint_cover_and_stratified():
    s = stratified_split(Y, n_labeled=40, test_fraction=0.2, seed=0)
    everything = np.concatenate([s.labeled, s.unlabeled, s.test])
    np.testing.assert_array_equal(np.sort(everything), np.arange(len(Y)))
    assert len(s.labeled) == 40 and len(s.test) == 200 and s.n_rows == 1000
    counts = {c: int(np.sum(Y[s.labeled] == c)) for c in (1.0, -1.0, 2.0)}
    assert counts == {1.0: 28, -1.0: 10, 2.0: 2}
    assert {c: int(np.sum(Y[s.test] == c)) for c in (1.0, -1.0, 2.0)} == {1.0: 140, -1.0: 50,
                                                                          2.0: 10}
    np.testing.assert_array_equal(s.train, np.sort(np.r_[s.labeled, s.unlabeled]))


def test_deterministic_for_a_seed():
    a = stratified_split(Y, n_labeled=30, test_fraction=0.1, seed=7)
    b = stratified_split(Y, n_labeled=30, test_fraction=0.1, seed=7)
    c = stratified_split(Y, n_labeled=30, test_fraction=0.1, seed=8)
    for part in ("labeled", "unlabeled", "test"):
        np.testing.assert_array_equal(getattr(a, part), getattr(b, part))
    assert not np.array_equal(a.labeled, c.labeled)


def test_at_least_one_per_class_and_per_class_counts():
    s = stratified_split(Y, n_labeled=3, seed=1)
    assert sorted(Y[s.labeled]) == [-1.0, 1.0, 2.0]
    s = stratified_split(Y, labels_per_class=5, seed=1)
    assert all(np.sum(Y[s.labeled] == c) == 5 for c in (1.0, -1.0, 2.0))
    assert len(s.test) == 0


def test_y_train_marks_the_rest():
    y = np.where(Y > 0, 1.0, -1.0)
    s = stratified_split(y, n_labeled=20, test_fraction=0.5, seed=2)
    y_train = s.y_train(y)
    assert np.all(y_train[s.labeled] == y[s.labeled])
    assert np.all(y_train[s.unlabeled] == 0) and np.all(y_train[s.test] == 0)
    with pytest.raises(ValueError, match="marker=-1 is also a class"):
        s.y_train(y, marker=-1)
    with pytest.raises(ValueError, match="shape"):
        s.y_train(y[:10])


@pytest.mark.parametrize("kwargs, message", [
    ({"n_labeled": 2}, "below the number of classes"),
    ({"n_labeled": 10, "labels_per_class": 2}, "exactly one"),
    ({"labels_per_class": 60}, "class 2.0 has 50 training rows"),
    ({"n_labeled": 10, "test_fraction": 1.0}, "test_fraction"),
    ({"n_labeled": 1.5}, "positive integer"),
])
def test_bad_requests(kwargs, message):
    with pytest.raises(ValueError, match=message):
        stratified_split(Y, **kwargs)
