"""LapRLS / LapSVM choose gamma_I and the graph on the labeled rows (issue: unlabeled data that
never hurts): exact leave-one-out, the supervised candidate, the seeds' setting with too few
labels, the record of the choice."""

import json

import numpy as np
import pytest
from scipy.sparse.csgraph import laplacian
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.neighbors import kneighbors_graph

from dask_ssl.data.generators import two_moons
from dask_ssl.graph.dense import regularizer_matrix
from dask_ssl.models import LapRLS, LapSVM
from dask_ssl.models._selection import CV_FOLDS, SelectionWarning, choose, chosen_row, fold_of
from dask_ssl.models.artifact import load_model, save_model
from dask_ssl.models._rbf_width import default_rbf_gamma, width_candidates
from dask_ssl.models._graph_seam import AUTO_GRAPHS
from dask_ssl.models.manifold import AUTO_GAMMA_I, _loo_outputs

from ._labels import labels_per_class


@pytest.mark.parametrize("weight", [0.0, 1e-4, 1e-1])
def test_leave_one_out_outputs_equal_refits_without_each_labeled_row(weight):
    """Each labeled row's output from the fit without its loss term (it stays in the graph as
    an unlabeled row; the loss keeps its 1/l, as the smoother's leave-one-out does)."""
    X, _ = two_moons(n=60, noise=0.1, seed=2)
    rng = np.random.default_rng(2)
    labeled = np.zeros(60, dtype=bool)
    labeled[rng.choice(60, 12, replace=False)] = True
    Y = np.zeros((60, 3))
    Y[labeled] = np.where(rng.integers(0, 3, (12, 1)) == np.arange(3), 1.0, -1.0)
    K = rbf_kernel(X, gamma=0.5)
    W = kneighbors_graph(X, 6, include_self=False)
    M = laplacian(W.maximum(W.T).toarray(), normed=True)
    gamma_A, l = 1e-3, 12
    loo = _loo_outputs(K, M @ K, weight, Y, labeled, gamma_A)
    for j, i in enumerate(np.flatnonzero(labeled)):
        keep = labeled.copy()
        keep[i] = False
        A = (np.diag(keep.astype(float)) + weight * l * M) @ K + gamma_A * l * np.eye(60)
        alpha = np.linalg.solve(A, np.where(keep[:, None], Y, 0.0))
        np.testing.assert_allclose(loo[j], K[i] @ alpha, rtol=1e-8, atol=1e-10)


def test_width_candidates_leave_one_out_equals_refits_without_each_labeled_row(client):
    """The direct path's table: per candidate width (the default first, then the others of
    ``width_candidates``) the supervised model, and each gamma_I on the graph at the width
    the rule chooses among the supervised rows alone; each row's held-out errors and squared
    residual equal those of dense refits without each labeled row (it stays in the graph as
    an unlabeled row) at that width."""
    X, y = two_moons(n=60, noise=0.15, seed=7)
    y = (y > 0).astype(int)
    train = labels_per_class(y, 6, seed=7)
    labeled = train != -1
    # gamma_A above the seeds' 1e-6 keeps the brute-force solves accurate to 1e-8
    est = LapRLS(gamma_A=1e-3, n_neighbors=6, p=1, client=client, random_state=0).fit(X, train)
    widths = width_candidates(default_rbf_gamma(X))
    supervised = [row for row in est.selection_ if row["gamma_I"] == 0]
    graph = [row for row in est.selection_ if row["gamma_I"] > 0]
    assert [row["gamma"] for row in supervised] == widths
    assert [row["gamma_I"] for row in graph] == [g for g in AUTO_GAMMA_I if g > 0]
    assert len({row["gamma"] for row in graph}) == 1
    M = regularizer_matrix(est.graph_, normalized=True, p=1)
    Y = np.where(train == 1, 1.0, -1.0)
    gamma_A, l = est.gamma_A, int(labeled.sum())
    wrong, squared = {}, {}
    for row in est.selection_:
        K = rbf_kernel(X, gamma=row["gamma"])
        weight = row["gamma_I"] / 60 ** 2  # graph_normalization="n2"
        out = []
        for i in np.flatnonzero(labeled):
            keep = labeled.copy()
            keep[i] = False
            A = (np.diag(keep.astype(float)) + weight * l * M) @ K + gamma_A * l * np.eye(60)
            out.append(K[i] @ np.linalg.solve(A, np.where(keep, Y, 0.0)))
        out = np.array(out)
        assert row["errors"] == int(np.sum((out > 0) != (Y[labeled] > 0)))
        assert row["squared"] == pytest.approx(np.sum((Y[labeled] - out) ** 2), rel=1e-8)
        key = (row["gamma"], row["gamma_I"])
        wrong[key], squared[key] = (out > 0) != (Y[labeled] > 0), (Y[labeled] - out) ** 2
    # the graph rows are at the width the rule prefers among the supervised rows
    keys = [(g, 0.0) for g in widths]
    width = keys[choose([wrong[k] for k in keys], [squared[k] for k in keys])][0]
    assert graph[0]["gamma"] == width
    chosen = chosen_row(est.selection_)
    assert est.kernel_params_ == {"gamma": chosen["gamma"]} and est.gamma_I_ == chosen["gamma_I"]


@pytest.mark.parametrize("cls", [LapRLS, LapSVM])
def test_rbf_labels_that_ignore_the_clusters_keep_kernel_rls_at_the_chosen_width(client, cls):
    """The default RBF kernel, its width chosen: on a random linear label over isotropic noise
    the graph candidates do not replace the supervised one, and the fit is the supervised
    model (gamma_I = 0) at the chosen width, given by hand. gamma_A = 1e-2: with the seeds'
    1e-6 kernel RLS nearly interpolates its 80 labels, and a graph term rightly wins there as
    a smoother (see the linear-kernel test above)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 10))
    y = (X @ rng.normal(size=10) > 0).astype(int)
    train = labels_per_class(y, 40, seed=4)
    auto = cls(gamma_A=1e-2, client=client, random_state=0).fit(X, train)
    row = chosen_row(auto.selection_)
    assert auto.gamma_I_ == 0.0 and row["gamma_I"] == 0.0
    assert auto.kernel_params_ == {"gamma": row["gamma"]}
    assert row["gamma"] in width_candidates(default_rbf_gamma(X))
    rls = cls(gamma_A=1e-2, gamma_I=0.0, kernel_params=auto.kernel_params_, client=client,
              random_state=0).fit(X, train)
    assert rls.selection_ == []
    np.testing.assert_array_equal(auto.predict(X), rls.predict(X))
    np.testing.assert_allclose(auto.decision_function(X), rls.decision_function(X),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("solver", ["direct", "primal"])
def test_a_given_width_is_kept(client, solver):
    X, y = two_moons(n=200, noise=0.1, seed=1)
    train = labels_per_class((y > 0).astype(int), 6, seed=1)
    est = LapRLS(kernel_params={"gamma": 0.7}, n_neighbors=10, p=1, solver=solver,
                 client=client, random_state=0).fit(X, train)
    assert est.kernel_params_ == {"gamma": 0.7}
    assert est.selection_ and all("gamma" not in row for row in est.selection_)
    # nothing left to choose: the supervised model given whole is not checked against itself
    rls = LapRLS(gamma_I=0.0, kernel_params={"gamma": 0.7}, solver=solver, client=client,
                 random_state=0).fit(X, train)
    assert rls.selection_ == [] and rls.selection_cost_ is None


@pytest.mark.parametrize("cls", [LapRLS, LapSVM])
@pytest.mark.parametrize("solver, n_rows", [("direct", 600), ("primal", 400)])
def test_labels_that_ignore_the_clusters_select_the_supervised_model(client, cls, solver,
                                                                     n_rows):
    """A random linear label over isotropic noise, a linear kernel: the graph has nothing to
    add, the default keeps gamma_I = 0 (by leave-one-out on the direct solver, by
    cross-validation on the primal one) and predicts exactly as the supervised model
    (gamma_I=0, the same solver) on every row. (With the RBF kernel and the seeds' gamma_A =
    1e-6 kernel RLS nearly interpolates, and the graph term rightly wins there as a
    smoother.)"""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(n_rows, 10))
    y = (X @ rng.normal(size=10) > 0).astype(int)
    train = labels_per_class(y, 40, seed=4)
    kw = dict(kernel="linear", solver=solver, client=client, random_state=0)
    auto = cls(**kw).fit(X, train)
    assert auto.gamma_I_ == 0.0 and chosen_row(auto.selection_)["gamma_I"] == 0.0
    if solver == "direct":
        # every (graph, gamma_I) candidate, gamma_I = 0 once; LapSVM adds the two rows of its
        # confirmation where LapRLS's leave-one-out prefers a graph
        assert len(auto.selection_) - 1 - 2 * (len(AUTO_GAMMA_I) - 1) in (0, 2)
    supervised = cls(gamma_I=0.0, **kw).fit(X, train)
    np.testing.assert_array_equal(auto.predict(X), supervised.predict(X))
    np.testing.assert_allclose(auto.decision_function(X), supervised.decision_function(X),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cls", [LapRLS, LapSVM])
def test_two_moons_with_five_labels_a_class_select_the_graph(client, cls):
    X, y = two_moons(n=1000, noise=0.1, seed=0)
    y = (y > 0).astype(int)
    train = labels_per_class(y, 5, seed=1)
    est = cls(client=client, random_state=0).fit(X, train)
    assert est.gamma_I_ > 0
    hidden = train == -1
    assert np.mean(est.transduction_[hidden] != y[hidden]) <= 0.01
    # the chosen row is the fit: the same settings given by hand fit the same model
    row = chosen_row(est.selection_)
    assert est.kernel_params_ == {"gamma": row["gamma"]}
    fixed = cls(gamma_I=row["gamma_I"], n_neighbors=row["n_neighbors"], p=row["p"],
                kernel_params=est.kernel_params_, client=client, random_state=0).fit(X, train)
    assert fixed.selection_ == []
    np.testing.assert_allclose(est.dual_coef_, fixed.dual_coef_, rtol=1e-9, atol=1e-12)


def test_too_few_labels_keep_the_seeds_setting_and_warn(client):
    X, y = two_moons(n=200, noise=0.1, seed=0)
    train = labels_per_class((y > 0).astype(int), 3, seed=0)
    with pytest.warns(SelectionWarning, match="LapRLS: fewer than 5 labeled rows"):
        est = LapRLS(client=client, random_state=0).fit(X, train)
    assert est.gamma_I_ == 1e4 and est.selection_ == []
    assert est.kernel_params_ == {"gamma": default_rbf_gamma(X)}  # the default width, unchecked
    seeds = LapRLS(gamma_I=1e4, n_neighbors=10, p=1, client=client, random_state=0)
    np.testing.assert_allclose(est.dual_coef_, seeds.fit(X, train).dual_coef_, rtol=1e-12)


def test_the_choice_is_stored_with_the_model(client, tmp_path):
    X, y = two_moons(n=300, noise=0.1, seed=3)
    train = labels_per_class((y > 0).astype(int), 6, seed=3)
    est = LapRLS(client=client, random_state=0).fit(X, train)
    save_model(est, tmp_path / "m")
    back = load_model(tmp_path / "m")
    assert back.gamma_I_ == est.gamma_I_ and back.selection_ == est.selection_
    # the chosen width is the stored kernel's, each candidate's in the table
    chosen = chosen_row(est.selection_)
    assert back.kernel_params_ == est.kernel_params_ == {"gamma": chosen["gamma"]}
    assert sum(row["chosen"] for row in back.selection_) == 1
    # the exact leave-one-out is driver work: no round trip; the cost is stored with the table
    assert est.selection_cost_["round_trips"] == 0 and est.selection_cost_["seconds"] > 0
    assert back.selection_cost_ == est.selection_cost_
    # a model saved before the cost was recorded still loads, without one
    doc_path = tmp_path / "m" / "model.json"
    doc = json.loads(doc_path.read_text())
    del doc["selection_cost_"]
    for row in doc["selection_"]:  # nor the width column of models stored before it was chosen
        del row["gamma"]
    doc_path.write_text(json.dumps(doc))
    old = load_model(tmp_path / "m")
    assert old.selection_cost_ is None and len(old.selection_) == len(est.selection_)
    np.testing.assert_array_equal(old.predict(X), est.predict(X))


@pytest.mark.parametrize("cls", [LapRLS, LapSVM])
def test_nystrom_path_chooses_through_the_linear_estimator(client, monkeypatch, cls):
    """With n_components the gamma_I candidates are the linear estimators' (shares of the graph
    term), reported in this estimator's gamma_I units, at each candidate width. The fit at the
    choice runs on what the choice formed (each width's Gram matrices are formed once, the
    chosen one's not again) and equals the fit given the chosen gamma_I and width by hand."""
    from dask_ssl.graph.data_graph import DataGraph

    X, y = two_moons(n=400, noise=0.1, seed=5)
    train = labels_per_class((y > 0).astype(int), 10, seed=5)
    formed = {"gram": 0, "weighted_gram": 0}
    for name in formed:
        def counted(self, *args, _name=name, _method=getattr(DataGraph, name)):
            formed[_name] += 1
            return _method(self, *args)
        monkeypatch.setattr(DataGraph, name, counted)
    est = cls(n_components=60, client=client, random_state=0).fit(X, train)
    monkeypatch.undo()
    assert formed == {key: len(width_candidates(1.0)) for key in formed}
    row = chosen_row(est.selection_)
    assert est.gamma_I_ > 0 and row["gamma_I"] == pytest.approx(est.gamma_I_, rel=1e-12)
    assert est.gamma_I_effective_ == pytest.approx(est.gamma_I_ / 400 ** 2, rel=1e-12)
    assert est.kernel_params_ == {"gamma": row["gamma"]}
    fixed = cls(gamma_I=est.gamma_I_, kernel_params=est.kernel_params_, n_components=60,
                client=client, random_state=0).fit(X, train, graph=est.graph_)
    assert fixed.selection_ == []
    np.testing.assert_allclose(est.decision_function(X), fixed.decision_function(X),
                               rtol=1e-10, atol=1e-10)
    assert est.objective_ == pytest.approx(fixed.objective_, rel=1e-10)


def test_nystrom_lost_worker_in_the_width_choice_repeats_the_fit(client, monkeypatch):
    """A worker lost while the width is chosen repeats the fit from its inputs, as on the
    other paths (counted in restarts_), to the fit of an uninterrupted run."""
    from dask_ssl.linalg.workerstate import StateLost
    from dask_ssl.models import _nystrom_width

    X, y = two_moons(n=300, noise=0.1, seed=2)
    train = labels_per_class((y > 0).astype(int), 8, seed=2)
    kw = dict(n_components=40, client=client, random_state=0)
    clean = LapRLS(**kw).fit(X, train)
    space, calls = _nystrom_width._space, []

    def losing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # the second width, mid-choice
            raise StateLost("block 0 of dg-test is not in this process")
        return space(*args, **kwargs)

    monkeypatch.setattr(_nystrom_width, "_space", losing)
    est = LapRLS(**kw).fit(X, train, graph=clean.graph_)
    assert est.restarts_ == 1 and len(calls) == 2 + len(width_candidates(1.0))
    assert est.selection_ == clean.selection_
    np.testing.assert_allclose(est.decision_function(X), clean.decision_function(X),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("gamma_I", [0.0, 10.0])
def test_nystrom_with_every_row_a_landmark_chooses_the_width_as_the_exact_path(client, gamma_I):
    """Every row a landmark: each width's features are K^1/2, so each candidate's leave-one-out
    is the exact path's (same graph, same gamma_I; 0: kernel RLS with its width chosen) and
    the same width is chosen."""
    X, y = two_moons(n=60, noise=0.15, seed=7)
    train = labels_per_class((y > 0).astype(int), 8, seed=7)
    kw = dict(gamma_A=1e-3, gamma_I=gamma_I, n_neighbors=6, p=1, client=client, random_state=0)
    exact = LapRLS(**kw).fit(X, train)
    nys = LapRLS(n_components=60, **kw).fit(X, train, graph=exact.graph_)
    assert sorted(nys.landmark_indices_) == list(range(60))
    assert len(nys.selection_) == len(exact.selection_) == len(width_candidates(1.0))
    for a, b in zip(nys.selection_, exact.selection_):
        assert a["gamma"] == pytest.approx(b["gamma"], rel=1e-10)
        assert a["gamma_I"] == b["gamma_I"] == gamma_I
        assert (a["errors"], a["chosen"]) == (b["errors"], b["chosen"])
        assert a["squared"] == pytest.approx(b["squared"], rel=1e-8)
    assert nys.kernel_params_["gamma"] == pytest.approx(exact.kernel_params_["gamma"], rel=1e-10)


def test_nystrom_given_width_is_kept(client):
    X, y = two_moons(n=200, noise=0.1, seed=1)
    train = labels_per_class((y > 0).astype(int), 6, seed=1)
    est = LapRLS(kernel_params={"gamma": 0.7}, n_components=40, client=client,
                 random_state=0).fit(X, train)
    assert est.kernel_params_ == {"gamma": 0.7}
    assert est.selection_ and all("gamma" not in row for row in est.selection_)


def test_nystrom_too_few_labels_keep_the_default_width_and_warn_once(client):
    import warnings

    X, y = two_moons(n=200, noise=0.1, seed=0)
    train = labels_per_class((y > 0).astype(int), 3, seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = LapRLS(n_components=30, client=client, random_state=0).fit(X, train)
    said = [str(w.message) for w in caught if issubclass(w.category, SelectionWarning)]
    assert len(said) == 1 and "gamma_I and the RBF width" in said[0]
    assert est.gamma_I_ == 1e4 and est.selection_ == [] and est.selection_cost_ is None
    assert est.kernel_params_["gamma"] == pytest.approx(default_rbf_gamma(X), rel=1e-10)


@pytest.mark.parametrize("cls", [LapRLS, LapSVM])
def test_nystrom_labels_that_ignore_the_clusters_keep_the_supervised_model(client, cls):
    """A random linear label over isotropic noise, n_components set and the width chosen: no
    graph candidate replaces the supervised one, and the fit is the supervised model (gamma_I
    = 0) at the chosen width given by hand, on the same landmarks."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 10))
    y = (X @ rng.normal(size=10) > 0).astype(int)
    train = labels_per_class(y, 40, seed=4)
    kw = dict(gamma_A=1e-2, n_components=80, client=client, random_state=0)
    auto = cls(**kw).fit(X, train)
    row = chosen_row(auto.selection_)
    assert auto.gamma_I_ == 0.0 and row["gamma_I"] == 0.0
    assert auto.kernel_params_ == {"gamma": row["gamma"]}
    widths = width_candidates(auto.selection_[0]["gamma"])
    assert {r["gamma"] for r in auto.selection_} == set(widths)
    rls = cls(gamma_I=0.0, kernel_params=auto.kernel_params_, **kw).fit(X, train)
    assert rls.selection_ == []
    np.testing.assert_array_equal(auto.landmark_indices_, rls.landmark_indices_)
    np.testing.assert_array_equal(auto.predict(X), rls.predict(X))
    np.testing.assert_allclose(auto.decision_function(X), rls.decision_function(X),
                               rtol=1e-8, atol=1e-10)


def test_nystrom_cg_path_cross_validates_each_width(client, monkeypatch):
    """Beyond GRAM_MAX_FEATURES the Nystrom candidates are scored by cross-validation: each
    width's held-out errors and squared residuals are those of dense refits on that width's
    features (the same landmarks) without each fold's labels (its rows stay in the graph)."""
    from dask_ssl.kernels.nystrom import NystromFeatures
    from dask_ssl.models import _graph_weight, _nystrom_width, linear_manifold
    from dask_ssl.models._selection import fold_of

    monkeypatch.setattr(_nystrom_width, "GRAM_MAX_FEATURES", 10)
    monkeypatch.setattr(linear_manifold, "GRAM_MAX_FEATURES", 10)
    # the folds' CG solved to the brute force's accuracy (the fit's own tolerance counts
    # errors, not residuals to 8 digits)
    monkeypatch.setattr(_graph_weight, "CV_TOL", 1e-12)
    X, y = two_moons(n=120, noise=0.15, seed=3)
    y = (y > 0).astype(int)
    train = labels_per_class(y, 8, seed=3)
    est = LapRLS(gamma_A=1e-3, gamma_I=10.0, n_neighbors=6, p=1, n_components=30,
                 client=client, random_state=0).fit(X, train)
    assert [row["gamma"] for row in est.selection_] == width_candidates(
        est.selection_[0]["gamma"])
    fm = NystromFeatures(kernel_params={"gamma": est.selection_[0]["gamma"]}, n_components=30,
                         random_state=0).fit(X)
    np.testing.assert_array_equal(fm.component_indices_, est.landmark_indices_)
    M = regularizer_matrix(est.graph_, normalized=True, p=1)
    L = np.flatnonzero(train != -1)
    YL = np.where(train[L] == 1, 1.0, -1.0)
    fold = fold_of(train[L], 4)
    weight = 10.0 / 120 ** 2
    for row in est.selection_:
        Z = fm.on_landmarks({"gamma": row["gamma"]}).transform(X)
        held_out = np.empty(L.size)
        for f in range(4):
            keep = L[fold != f]
            A = (Z[keep].T @ Z[keep] / keep.size + 1e-3 * np.eye(Z.shape[1])
                 + weight * Z.T @ M @ Z)
            w = np.linalg.solve(A, Z[keep].T @ YL[fold != f] / keep.size)
            held_out[fold == f] = Z[L[fold == f]] @ w
        assert row["errors"] == int(np.sum((held_out > 0) != (YL > 0)))
        assert row["squared"] == pytest.approx(np.sum((YL - held_out) ** 2), rel=1e-8)
    assert est.kernel_params_ == {"gamma": chosen_row(est.selection_)["gamma"]}


# the primal solver: gamma_I by cross-validation, every fold and candidate a column -------------
def test_primal_folds_partition_the_labeled_rows_and_score_no_unlabeled_row(client, monkeypatch):
    """A cross-validation solve has one column per (fold, candidate): its held-out rows are
    labeled rows, the folds partition the labeled rows (stratified by class), and only a
    column's held-out outputs are scored (every other output of that solve is made NaN here,
    and no NaN reaches the table). The fit at the choice follows with all labels."""
    from dask_ssl.solvers import primal

    X, y = two_moons(n=300, noise=0.1, seed=3)
    y = (y > 0).astype(int)
    train = labels_per_class(y, 6, seed=3)
    labeled = train != -1
    masks = []
    solve = primal.solve_primal

    def spy(blocks, graph, Y, mask, **kw):
        res = solve(blocks, graph, Y, mask, **kw)
        masks.append(np.asarray(mask))
        if np.ndim(mask) == 2:
            res.decision[mask | ~labeled[:, None]] = np.nan
        return res

    monkeypatch.setattr(primal, "solve_primal", spy)
    est = LapRLS(solver="primal", client=client, random_state=0).fit(X, train)
    *solves, final = masks
    widths = len(width_candidates(1.0))
    # the width among the supervised candidates (on the driver), then the graph candidates at
    # the chosen width: one solve on the workers per graph setting before the fit
    assert [cv.shape for cv in solves] == [(300, CV_FOLDS * (len(AUTO_GAMMA_I) - 1))] * len(
        AUTO_GRAPHS)
    assert final.shape == (300,)
    np.testing.assert_array_equal(final, labeled)
    cv = np.concatenate(solves, axis=1)
    held = labeled[:, None] & ~cv
    assert not (cv & ~labeled[:, None]).any()  # a column's labels are labeled rows
    folds = np.unique(held.T, axis=0)
    assert len(folds) == CV_FOLDS
    np.testing.assert_array_equal(folds.sum(axis=0), labeled)  # each held out exactly once
    for fold in folds:
        assert np.ptp(np.bincount(y[fold], minlength=2)) <= 1
        assert abs(fold.sum() - labeled.sum() / CV_FOLDS) < 1 + 1e-9
    assert len(est.selection_) == widths + len(AUTO_GRAPHS) * (len(AUTO_GAMMA_I) - 1)
    assert {(row["n_neighbors"], row["p"]) for row in est.selection_
            if row["gamma_I"] > 0} == set(AUTO_GRAPHS)
    assert all(np.isfinite(row["squared"]) and row["criterion"] == "cv"
               for row in est.selection_)
    assert sum(row["chosen"] for row in est.selection_) == 1


def test_primal_supervised_rows_are_kernel_rls_on_the_other_folds(client):
    """The primal table's supervised rows (one per width, fitted on the driver over the
    labeled rows alone) hold the held-out errors and squared residuals of kernel RLS fitted on
    the other folds' labeled rows, ``(K_TT + gamma_A l_T I) alpha = y_T``."""
    X, y = two_moons(n=300, noise=0.15, seed=4)
    y = (y > 0).astype(int)
    train = labels_per_class(y, 8, seed=4)
    L = np.flatnonzero(train != -1)
    YL = np.where(train[L] == 1, 1.0, -1.0)
    fold = fold_of(train[L], CV_FOLDS)
    gamma_A = 1e-3
    est = LapRLS(gamma_A=gamma_A, solver="primal", client=client, random_state=0).fit(X, train)
    supervised = [row for row in est.selection_ if row["gamma_I"] == 0]
    assert len(supervised) == len(width_candidates(1.0))
    for row in supervised:
        K = rbf_kernel(X[L], gamma=row["gamma"])
        held_out = np.empty(L.size)
        for f in range(CV_FOLDS):
            T, H = fold != f, fold == f
            alpha = np.linalg.solve(K[np.ix_(T, T)] + gamma_A * T.sum() * np.eye(T.sum()),
                                    YL[T])
            held_out[H] = K[np.ix_(H, T)] @ alpha
        assert row["errors"] == int(np.sum((held_out > 0) != (YL > 0)))
        assert row["squared"] == pytest.approx(np.sum((YL - held_out) ** 2), rel=1e-8)


@pytest.mark.parametrize("cls", [LapRLS, LapSVM])
def test_primal_supervised_rows_past_the_driver_bound_come_from_the_workers(client, cls,
                                                                           monkeypatch):
    """Past :data:`DRIVER_SUPERVISED_MAX_LABELS` the supervised candidate is a column of the
    solve on the workers: the same held-out errors as the driver's dense fits, and squared
    losses as close as the solve's tolerance allows (at each width: ``gamma_I=0`` given
    chooses the width alone)."""
    from dask_ssl.models import manifold

    X, y = two_moons(n=300, noise=0.15, seed=5)
    y = (y > 0).astype(int)
    train = labels_per_class(y, 8, seed=5)

    def supervised_rows():
        est = cls(solver="primal", gamma_I=0.0, gamma_A=1e-3, client=client,
                  random_state=0).fit(X, train)
        return [row for row in est.selection_ if row["gamma_I"] == 0]

    driver = supervised_rows()
    monkeypatch.setattr(manifold, "DRIVER_SUPERVISED_MAX_LABELS", 0)
    workers = supervised_rows()
    assert len(driver) == len(workers) == len(width_candidates(1.0))
    assert [row["errors"] for row in driver] == [row["errors"] for row in workers]
    for a, b in zip(driver, workers):
        assert b["squared"] == pytest.approx(a["squared"], rel=1e-3)


@pytest.mark.parametrize("cls", [LapRLS, LapSVM])
def test_primal_two_moons_with_five_labels_a_class_select_the_graph(client, cls):
    X, y = two_moons(n=400, noise=0.1, seed=0)
    y = (y > 0).astype(int)
    train = labels_per_class(y, 5, seed=1)
    est = cls(solver="primal", client=client, random_state=0).fit(X, train)
    assert est.gamma_I_ > 0
    hidden = train == -1
    assert np.mean(est.transduction_[hidden] != y[hidden]) <= 0.01
    # the chosen row is the fit: the same settings given by hand fit the same model
    row = chosen_row(est.selection_)
    assert est.kernel_params_ == {"gamma": row["gamma"]}
    fixed = cls(gamma_I=row["gamma_I"], n_neighbors=row["n_neighbors"], p=row["p"],
                kernel_params=est.kernel_params_, solver="primal", client=client,
                random_state=0).fit(X, train)
    np.testing.assert_allclose(est.dual_coef_, fixed.dual_coef_, rtol=1e-9, atol=1e-12)


def test_primal_too_few_labels_keep_the_seeds_setting_and_warn(client):
    X, y = two_moons(n=200, noise=0.1, seed=0)
    train = labels_per_class((y > 0).astype(int), 3, seed=0)
    with pytest.warns(SelectionWarning, match="LapRLS: fewer than 5 labeled rows"):
        est = LapRLS(solver="primal", client=client, random_state=0).fit(X, train)
    assert est.gamma_I_ == 1e4 and est.selection_ == []
