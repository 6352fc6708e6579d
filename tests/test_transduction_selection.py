"""GraphTransduction's supervised prior and the selection of its "auto" settings on the labeled
rows: folds, the supervised candidate on labels the graph cannot help with, a graph candidate
on the moons, the gamma_I -> 0 limit, too few labels."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from dask_ssl.data.generators import two_moons
from dask_ssl.models import RLS
from dask_ssl.models import _transduction_selection as auto
from dask_ssl.models._selection import SelectionWarning
from dask_ssl.models.graph_transduction import GraphTransduction

from ._labels import labels_per_class


def test_folds_partition_the_labeled_rows_by_class():
    codes = np.r_[[0] * 7, [-1] * 5, [1] * 9, [2] * 5, [-1] * 3]
    fold = auto.folds(codes, 4)
    np.testing.assert_array_equal(fold[codes < 0], -1)
    assert set(fold[codes >= 0]) == {0, 1, 2, 3}
    for f in range(4):  # every fold holds every class
        assert set(codes[fold == f]) == {0, 1, 2}


def test_cross_validation_hides_each_label_once_and_scores_only_labeled_rows():
    """Each (weight, fold) block of the one solve targets a held-out row with the fold's prior,
    never with its label, in exactly one fold; the errors depend on the labeled rows' scores
    alone."""
    rng = np.random.default_rng(0)
    n, l = 60, 24
    codes = np.full(n, -1)
    codes[:l] = np.arange(l) % 2
    fold = auto.folds(codes)
    priors = [rng.random((n, 2)) for _ in range(auto.CV_FOLDS)]
    seen = {}

    def solve(gamma, a, B, a_precond):
        seen.update(gamma=gamma, a=a, B=B)
        return np.random.default_rng(1).random(B.shape)

    def run(priors):
        return auto.select(solve, codes, lambda mu: np.where(codes >= 0, 1.0, mu), fold,
                           priors, lambda F, cb, c: np.ones(2), gammas=(0.0, 1.0, 10.0),
                           mus=(1.0, 0.1), balances=(None,))

    chosen, selection = run(priors)
    B, a = seen["B"], seen["a"]
    assert B.shape[1] == 2 * 2 * auto.CV_FOLDS * 2  # (mu, gamma, fold, class)
    hidden = np.zeros(l, dtype=int)
    for block in range(B.shape[1] // 2):
        f = block % auto.CV_FOLDS
        cols = slice(2 * block, 2 * block + 2)
        held = fold == f
        np.testing.assert_allclose(B[held, cols], a[held, cols] * priors[f][held])
        np.testing.assert_array_equal(B[codes >= 0][~held[codes >= 0], cols],
                                      np.eye(2)[codes[(codes >= 0) & ~held]])
        hidden += held[:l]
    np.testing.assert_array_equal(hidden, 4)  # once per (mu, gamma) pair
    assert all(row["errors"] <= l for row in selection)
    assert sum(row["chosen"] for row in selection) == 1
    # other scores on the unlabeled rows: the same errors
    changed = [p.copy() for p in priors]
    for p in changed:
        p[l:] = rng.random((n - l, 2))
    assert run(changed)[1] == selection


@pytest.fixture(scope="module")
def linear_labels():
    """Labels that ignore any cluster: a random linear rule over isotropic Gaussian rows."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((600, 10))
    y = (X @ rng.standard_normal(10) > 0).astype(int)
    return X, y, labels_per_class(y, 30, 7)


def test_labels_the_graph_cannot_help_with_select_the_supervised_model(client, linear_labels):
    X, y, ys = linear_labels
    gt = GraphTransduction(client=client, random_state=0).fit(X, ys)
    assert gt.gamma_I_ == 0.0 and gt.class_balance_ is None
    chosen = [row for row in gt.selection_ if row["chosen"]]
    assert chosen == [gt.selection_[0]] and len(gt.selection_) > 1
    labeled = ys >= 0
    rls = RLS(client=client).fit(X[labeled], ys[labeled])
    np.testing.assert_array_equal(gt.predict(X), rls.predict(X))
    np.testing.assert_array_equal(gt.transduction_[~labeled], rls.predict(X[~labeled]))
    np.testing.assert_array_equal(gt.transduction_[labeled], ys[labeled])


def test_the_zero_graph_weight_limit_is_the_supervised_model(client, linear_labels):
    X, y, ys = linear_labels
    labeled = ys >= 0
    rls = RLS(client=client).fit(X[labeled], ys[labeled])
    expected = rls.predict(X[~labeled])
    for gamma in (0.0, 1e-9):
        gt = GraphTransduction(gamma_I=gamma, prior="rls", unlabeled_weight=1.0,
                               class_balance=None, client=client, random_state=0).fit(X, ys)
        assert gt.selection_ is None
        np.testing.assert_array_equal(gt.transduction_[~labeled], expected)
    # and new rows too: the blend of neighbours and prior is the prior alone
    np.testing.assert_array_equal(gt.predict(X[:40] + 0.01), rls.predict(X[:40] + 0.01))


@pytest.mark.parametrize("seed", [0, 1])
def test_moons_with_five_labels_per_class_select_the_graph(client, seed):
    X, y = two_moons(n=600, noise=0.1, seed=seed)
    y = (np.asarray(y) > 0).astype(int)
    ys = labels_per_class(y, 5, seed)
    gt = GraphTransduction(client=client, random_state=0).fit(X, ys)
    assert gt.gamma_I_ > 0, gt.selection_
    unlabeled = ys < 0
    assert np.mean(gt.transduction_[unlabeled] != y[unlabeled]) <= 0.01
    assert gt.metric_ == "euclidean" and gt.weights_ == "heat"


def test_too_few_labels_keep_the_thesis_method_and_warn(client):
    X, y = two_moons(n=300, noise=0.1, seed=3)
    y = (np.asarray(y) > 0).astype(int)
    ys = labels_per_class(y, 2, 3)
    with pytest.warns(SelectionWarning, match="gamma_I and unlabeled_weight and class_balance"):
        gt = GraphTransduction(client=client, random_state=0).fit(X, ys)
    assert (gt.unlabeled_weight_, gt.class_balance_) == (0.0, None)
    # the seeds' system weight 1 (ch. 5's gamma_I), l gamma_I_eff with gamma_I / (u + l)^2
    assert gt.gamma_I_effective_ * gt.n_labeled_ == pytest.approx(1.0)
    assert gt.gamma_I_ == pytest.approx(300 ** 2 / 4)
    assert gt.prior_ is None and gt.selection_ is None
    with warnings.catch_warnings():
        warnings.simplefilter("error", SelectionWarning)
        thesis = GraphTransduction(gamma_I=300 ** 2 / 4, prior=None, unlabeled_weight=0.0,
                                   class_balance=None, client=client, random_state=0,
                                   ).fit(X, ys, graph=gt.graph_)
    np.testing.assert_allclose(gt.scores_, thesis.scores_, atol=1e-8)


def test_sparse_non_negative_rows_get_the_cosine_graph():
    counts = sp.random(50, 30, density=0.2, format="csr", random_state=1)
    assert auto.graph_metric(counts) == "cosine"
    assert auto.graph_metric(counts.toarray()) == "euclidean"
    signed = counts.copy()
    signed.data -= 0.5
    assert auto.graph_metric(signed) == "euclidean"


def test_a_model_with_its_prior_pickles(client, linear_labels):
    import pickle

    X, _, ys = linear_labels
    # the session client is the default one: a Client given as a parameter would not pickle
    gt = GraphTransduction(gamma_I=10.0, unlabeled_weight=0.01, class_balance=None,
                           random_state=0).fit(X, ys)
    back = pickle.loads(pickle.dumps(gt))
    assert back.prior_ is not None
    np.testing.assert_array_equal(back.predict_proba(X[:30] + 0.01),
                                  gt.predict_proba(X[:30] + 0.01))


def test_the_selection_sample_keeps_every_labeled_row():
    codes = np.full(1000, -1)
    codes[::25] = np.arange(40) % 2
    assert auto.selection_sample(codes, 0, size=1000) is None  # not above the size: all rows
    rows = auto.selection_sample(codes, 0, size=300)
    assert rows.size == 300 and np.all(np.diff(rows) > 0)
    np.testing.assert_array_equal(rows[codes[rows] >= 0], np.flatnonzero(codes >= 0))
    np.testing.assert_array_equal(rows, auto.selection_sample(codes, 0, size=300))
    assert not np.array_equal(rows, auto.selection_sample(codes, 1, size=300))
    # many labels still leave the sample half its rows unlabeled
    assert np.sum(codes[auto.selection_sample(codes, 0, size=60)] < 0) == 30


@pytest.fixture
def sampled(monkeypatch):
    """Selections scored on a sample of 300 rows."""
    monkeypatch.setattr(auto, "SELECTION_ROWS", 300)


def test_labels_the_graph_cannot_help_with_keep_the_supervised_model_on_a_sample(
        client, linear_labels, sampled):
    X, y, ys = linear_labels
    gt = GraphTransduction(client=client, random_state=0).fit(X, ys)
    assert gt.selection_rows_ == 300 and gt.graph_.n_rows == X.shape[0]
    assert gt.gamma_I_ == 0.0 and gt.selection_[0]["chosen"] and len(gt.selection_) > 1
    labeled = ys >= 0
    rls = RLS(client=client).fit(X[labeled], ys[labeled])
    np.testing.assert_array_equal(gt.predict(X), rls.predict(X))


def test_moons_select_the_graph_on_a_sample_and_solve_it_on_every_row(client, sampled):
    X, y = two_moons(n=600, noise=0.1, seed=0)
    y = (np.asarray(y) > 0).astype(int)
    ys = labels_per_class(y, 5, 0)
    gt = GraphTransduction(client=client, random_state=0).fit(X, ys)
    assert gt.selection_rows_ == 300 and gt.gamma_I_ > 0, gt.selection_
    assert gt.scores_.shape == (600, 2) and gt.graph_.n_rows == 600
    # the sample's pick met the supervised model again on the full graph, and won there
    *sampled_rows, supervised, pick = gt.selection_
    assert {r["graph_rows"] for r in sampled_rows} == {300}
    assert not any(r["chosen"] for r in sampled_rows)
    assert supervised["graph_rows"] == pick["graph_rows"] == 600
    assert supervised["gamma_I"] == 0 and pick["chosen"] and pick["errors"] < supervised["errors"]
    assert {k: pick[k] for k in ("gamma_I", "unlabeled_weight", "class_balance")} in [
        {k: r[k] for k in ("gamma_I", "unlabeled_weight", "class_balance")} for r in sampled_rows]
    unlabeled = ys < 0
    assert np.mean(gt.transduction_[unlabeled] != y[unlabeled]) <= 0.01
    # the chosen setting given: the same fit on the full graph, nothing selected
    row = next(r for r in gt.selection_ if r["chosen"])
    fixed = GraphTransduction(client=client, random_state=0, **{
        k: row[k] for k in ("gamma_I", "unlabeled_weight", "class_balance")}).fit(X, ys)
    assert fixed.selection_ is None and fixed.selection_rows_ is None
    np.testing.assert_allclose(gt.scores_, fixed.scores_, rtol=1e-6, atol=1e-9)


def test_each_graph_gets_one_operator_for_all_its_solves(client, sampled, monkeypatch):
    """The sample's pick is checked on the full graph and then solved there: both solves share
    one Laplacian operator of the full graph (building one costs seconds on a large graph),
    the sample's solves one of the sample's graph, and every operator is closed by the end of
    the fit."""
    from dask_ssl.graph import laplacian

    built, closed = [], []
    init, close = laplacian.LaplacianOperator.__init__, laplacian.LaplacianOperator.close

    def counted_init(self, graph, **kwargs):
        built.append(graph.n_rows)
        init(self, graph, **kwargs)

    def counted_close(self):
        closed.append(self)
        close(self)

    monkeypatch.setattr(laplacian.LaplacianOperator, "__init__", counted_init)
    monkeypatch.setattr(laplacian.LaplacianOperator, "close", counted_close)
    X, y = two_moons(n=600, noise=0.1, seed=0)
    ys = labels_per_class((np.asarray(y) > 0).astype(int), 5, 0)
    gt = GraphTransduction(client=client, random_state=0).fit(X, ys)
    assert gt.gamma_I_ > 0 and [r["graph_rows"] for r in gt.selection_[-2:]] == [600, 600]
    assert sorted(built) == [300, 600] and len(closed) == 2


def test_up_to_the_sample_size_every_row_is_scored(client, linear_labels, monkeypatch):
    """A selection on exactly SELECTION_ROWS rows is the one on all rows: the same table,
    the same scores."""
    X, _, ys = linear_labels
    full = GraphTransduction(client=client, random_state=0).fit(X, ys)
    monkeypatch.setattr(auto, "SELECTION_ROWS", X.shape[0])
    at = GraphTransduction(client=client, random_state=0).fit(X, ys)
    assert full.selection_rows_ == at.selection_rows_ == X.shape[0]
    assert at.selection_ == full.selection_
    np.testing.assert_array_equal(at.scores_, full.scores_)


def test_a_stored_model_keeps_the_rows_its_selection_scored(client, linear_labels, sampled,
                                                             tmp_path):
    import json

    from dask_ssl.models.artifact import load_model, save_model

    X, _, ys = linear_labels
    gt = GraphTransduction(random_state=0).fit(X, ys)
    path = save_model(gt, tmp_path / "m")
    assert load_model(path).selection_rows_ == 300
    # a directory written before the selection could sample: it scored every row
    doc = json.loads((path / "model.json").read_text())
    doc.pop("selection_rows_")
    (path / "model.json").write_text(json.dumps(doc))
    assert load_model(path).selection_rows_ == X.shape[0]


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("shape", [(40, 5), (12, 30)], ids=["rows>features", "rows<features"])
def test_fold_priors_in_closed_form_are_the_rls_fits(client, shape, sparse, n_classes):
    """The fold priors' closed form (the d x d system, or the l x l one with fewer rows than
    features) gives the weights of RLS fitted on the same rows on the workers."""
    rng = np.random.default_rng(n_classes)
    X = rng.normal(size=shape)
    if sparse:
        X = sp.csr_matrix(np.where(rng.random(shape) < 0.5, X, 0.0))
    codes = np.arange(shape[0]) % n_classes
    rls = RLS(gamma_A=1e-2, client=client).fit(X, codes)
    np.testing.assert_allclose(auto.fold_rls_weights(X, codes, 1e-2), rls.coef_with_bias().T,
                               rtol=1e-7, atol=1e-9)
