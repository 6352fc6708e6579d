"""dask_ssl.model_selection: folds over the labeled rows only, scorers of labeled rows only, and
both inside scikit-learn's GridSearchCV / cross_val_score with LabelSpreading and a dask-ssl
estimator."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.metrics import accuracy_score
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.semi_supervised import LabelSpreading

from dask_ssl.data import two_moons
from dask_ssl.model_selection import LabeledStratifiedKFold, labeled_scorer
from dask_ssl.models import LapRLS


def semi_labels(n=300, counts=(7, 12, 30), marker=-1, seed=0):
    """Classes 10, 20, 30 with ``counts`` labeled rows each, scattered among unlabeled rows."""
    rng = np.random.default_rng(seed)
    y = np.full(n, marker)
    rows = rng.permutation(n)[:sum(counts)]
    y[rows] = np.repeat(10 * np.arange(1, len(counts) + 1), counts)
    return np.zeros((n, 1)), y


def moons(n=100, per_class=6, seed=0):
    """Two moons as classes 0 / 1 (two_moons' +1 / -1 would collide with the -1 marker), with
    ``per_class`` labeled rows of each: (X, true classes, y with -1 on unlabeled rows)."""
    X, t = two_moons(n=n, noise=0.1, seed=seed)
    t = (t > 0).astype(int)
    rng = np.random.default_rng(seed)
    lab = np.concatenate([rng.choice(np.flatnonzero(t == k), per_class, replace=False)
                          for k in (0, 1)])
    y = np.full(n, -1)
    y[lab] = t[lab]
    return X, t, y


@pytest.mark.parametrize("marker", [-1, 0])
def test_folds_partition_the_labeled_rows_stratified(marker):
    X, y = semi_labels(marker=marker)
    cv = LabeledStratifiedKFold(n_splits=5, unlabeled=marker, random_state=0)
    folds = list(cv.split(X, y))
    assert len(folds) == cv.get_n_splits() == 5
    labeled, unlabeled = np.flatnonzero(y != marker), np.flatnonzero(y == marker)
    tests = np.concatenate([test for _, test in folds])
    np.testing.assert_array_equal(np.sort(tests), labeled)  # each labeled row once
    for train, test in folds:
        assert np.all(y[test] != marker)
        assert np.isin(unlabeled, train).all()
        np.testing.assert_array_equal(np.union1d(train, test), np.arange(len(y)))
        assert np.intersect1d(train, test).size == 0
    for c, count in zip((10, 20, 30), (7, 12, 30)):
        per_fold = [int(np.sum(y[test] == c)) for _, test in folds]
        assert sum(per_fold) == count and max(per_fold) - min(per_fold) <= 1, (c, per_fold)


def test_random_state_reproduces_the_folds_and_shuffle_false_keeps_row_order():
    X, y = semi_labels()

    def held_out(**kw):
        return [test.tolist() for _, test in LabeledStratifiedKFold(n_splits=3, **kw).split(X, y)]

    assert held_out(random_state=1) == held_out(random_state=1)
    assert held_out(random_state=1) != held_out(random_state=2)
    # unshuffled, each class's labeled rows are cut into consecutive runs, in row order
    labeled = np.flatnonzero(y != -1)
    first = np.asarray(held_out(shuffle=False)[0])
    for c in (10, 20, 30):
        rows = labeled[y[labeled] == c]
        np.testing.assert_array_equal(first[y[first] == c], rows[:len(first[y[first] == c])])


@pytest.mark.parametrize("kwargs, y, message", [
    ({}, None, "requires y"),
    ({}, np.full(20, -1), "no labeled row: all 20 entries"),
    ({"n_splits": 8}, "semi", r"labeled rows of class 10: 7$"),
    ({"n_splits": 13}, "semi", "class 10: 7, class 20: 12"),
    ({"n_splits": 1}, "semi", "n_splits=2 or more"),
    ({"shuffle": False, "random_state": 0}, "semi", "no effect since shuffle is False"),
])
def test_bad_input_fails_when_split_is_called(kwargs, y, message):
    X, semi = semi_labels()
    y = semi if isinstance(y, str) else y
    X = X[:20] if y is not None and len(y) == 20 else X
    cv = LabeledStratifiedKFold(**kwargs)
    with pytest.raises(ValueError, match=message):
        cv.split(X, y)  # not iterated: the check comes before any fold is drawn


def test_groups_are_ignored_with_a_warning():
    X, y = semi_labels()
    cv = LabeledStratifiedKFold(n_splits=3, random_state=0)
    with pytest.warns(UserWarning, match="groups parameter is ignored"):
        folds = list(cv.split(X, y, groups=np.arange(len(y))))
    assert [t.tolist() for _, t in folds] == [t.tolist() for _, t in cv.split(X, y)]


class FirstColumn(ClassifierMixin, BaseEstimator):
    """Predicts column 0 of X and records the rows it was asked to predict."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        self.predicted_rows_ = len(X)
        return X[:, 0]


def test_scorer_scores_the_labeled_rows_only():
    y = np.array([1, -1, 0, 1, -1, 0, 1, -1])
    pred = np.array([1, 0, 0, 0, 1, 1, 1, 1])  # right on labeled rows 0, 2, 6; wrong on 3, 5
    X = np.c_[pred, np.arange(8)]
    est = FirstColumn().fit(X, y)
    labeled = y != -1
    assert labeled_scorer()(est, X, y) == accuracy_score(y[labeled], pred[labeled]) == 3 / 5
    assert est.predicted_rows_ == 5  # unlabeled rows are not even predicted
    assert labeled_scorer("error")(est, X, y) == pytest.approx(-2 / 5)
    assert labeled_scorer("balanced_accuracy")(est, X, y) == pytest.approx((2 / 3 + 1 / 2) / 2)
    # another marker: 0 is then the unlabeled rows' label, -1 a class
    assert labeled_scorer(unlabeled=0)(est, X, y) == accuracy_score(y[y != 0], pred[y != 0])


def test_scorer_with_a_plain_kfold_matches_accuracy_by_hand():
    X, t, y = moons()
    est = LabelSpreading(gamma=20.0, max_iter=100)
    folds = list(KFold(4, shuffle=True, random_state=0).split(X, y))
    scores = cross_val_score(est, X, y, cv=folds, scoring=labeled_scorer(), error_score="raise")
    for score, (train, test) in zip(scores, folds):
        fitted = LabelSpreading(gamma=20.0, max_iter=100).fit(X[train], y[train])
        keep = test[y[test] != -1]
        assert score == accuracy_score(y[keep], fitted.predict(X[keep]))


def test_scorer_errs_on_rows_without_a_label_and_on_unknown_metrics():
    est = FirstColumn().fit(np.zeros((2, 1)), [0, 1])
    with pytest.raises(ValueError, match="no labeled row.*nothing to score"):
        labeled_scorer()(est, np.zeros((3, 1)), np.full(3, -1))
    with pytest.raises(ValueError, match="unknown metric 'eror'"):
        labeled_scorer("eror")


def test_grid_search_tunes_label_spreading():
    X, t, y = moons()
    grid = {"gamma": [0.01, 20.0]}  # 0.01: one wide blob that ignores the moons
    search = GridSearchCV(LabelSpreading(max_iter=100), grid, error_score="raise",
                          cv=LabeledStratifiedKFold(n_splits=3, random_state=0),
                          scoring=labeled_scorer()).fit(X, y)
    assert search.best_params_ == {"gamma": 20.0}
    truth = {g: accuracy_score(t, LabelSpreading(gamma=g, max_iter=100).fit(X, y).transduction_)
             for g in grid["gamma"]}
    assert truth[20.0] > truth[0.01] + 0.05, truth


@pytest.mark.parametrize("given_client", [False, True])
def test_grid_search_and_cross_val_score_tune_a_dask_ssl_estimator(client, given_client):
    # client= or the default client: a search clones the estimator, and the clone shares the
    # client (a connection, which a deep copy would not survive). The seeds' gamma_I is given:
    # the search tunes the graph a fixed graph term follows
    # (gamma_I="auto" would check it against the supervised model itself)
    X, t, y = moons()
    grid = {"n_neighbors": [5, 60]}  # 60 of 100 rows: the graph joins the two moons
    cv = LabeledStratifiedKFold(n_splits=3, random_state=0)
    est = LapRLS(p=1, gamma_I=1e4, client=client) if given_client else LapRLS(p=1, gamma_I=1e4)
    search = GridSearchCV(est, grid, cv=cv, scoring=labeled_scorer("error"),
                          error_score="raise").fit(X, y)
    assert search.best_estimator_.client is (client if given_client else None)
    assert search.best_params_ == {"n_neighbors": 5}
    scores = search.cv_results_["mean_test_score"]
    assert np.all(scores <= 0) and scores[0] > scores[1]
    truth = {k: accuracy_score(t, LapRLS(p=1, gamma_I=1e4, n_neighbors=k).fit(X, y).transduction_)
             for k in grid["n_neighbors"]}
    assert truth[5] > truth[60] + 0.2, truth
    folds = cross_val_score(LapRLS(p=1, gamma_I=1e4, n_neighbors=5), X, y, cv=cv,
                            scoring=labeled_scorer(), error_score="raise")
    np.testing.assert_allclose(folds.mean(), 1 + scores[0])


def test_clone_shares_the_client_and_clones_the_rest(client):
    est = LapRLS(p=1, kernel_params={"gamma": 0.5}, client=client)
    twin = clone(est)
    assert twin is not est and twin.client is client
    assert twin.kernel_params == est.kernel_params and twin.kernel_params is not est.kernel_params
    assert est.client is client  # the original keeps its client
