"""CoLapRLS / CoLapSVM: one LapRLS / LapSVM per view with the multi-view graph, against the
single-view estimators and a dense solve with the thesis' combination of Laplacians."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import laplacian
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.neighbors import kneighbors_graph

from dask_ssl.graph import Graph
from dask_ssl.models import LapRLS, LapSVM
from dask_ssl.models._selection import SelectionWarning
from dask_ssl.multiview import CoLapRLS, CoLapSVM
from dask_ssl.multiview import colap as colap_module

from ._labels import four_blob_views

KPS = [{"gamma": 0.5}, {"gamma": 1.0}]


def problem(client, n=60, n_labeled=10, seed=0):
    """Two views of the same rows and each view's kNN graph (weights 1)."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, np.pi, n)
    side = rng.integers(0, 2, n)
    X1 = np.column_stack([np.cos(t) + side, np.sin(t) * (1 - 2 * side)]) \
        + 0.1 * rng.normal(size=(n, 2))
    X2 = np.column_stack([side + 0.2 * rng.normal(size=n), rng.normal(size=n)])
    y = np.full(n, -1)
    lab = rng.choice(n, n_labeled, replace=False)
    y[lab] = side[lab]
    y[lab[:2]] = [0, 1]
    Ws = []
    for X in (X1, X2):
        W = kneighbors_graph(X, 6, mode="connectivity", include_self=False)
        Ws.append(sp.csr_matrix(W.maximum(W.T)))
    graphs = [Graph.from_scipy(W, client=client, n_blocks=2) for W in Ws]
    return [X1, X2], y, Ws, graphs, side


def test_one_view_and_identical_graphs_are_laprls_with_that_graph(client):
    Xs, y, _, graphs, _ = problem(client)
    settings = dict(gamma_A=1e-3, gamma_I=50.0, p=2, client=client)
    one = CoLapRLS(kernel_params=KPS[0], **settings).fit(Xs[:1], y, graphs=graphs[:1])
    single = LapRLS(kernel_params=KPS[0], **settings).fit(Xs[0], y, graph=graphs[0])
    np.testing.assert_allclose(one.estimators_[0].dual_coef_, single.dual_coef_)
    np.testing.assert_array_equal(one.transduction_, single.transduction_)
    both = CoLapRLS(kernel_params=KPS, view_weights=[0.3, 0.7], **settings).fit(
        Xs, y, graphs=[graphs[0], graphs[0]])
    other = LapRLS(kernel_params=KPS[1], **settings).fit(Xs[1], y, graph=graphs[0])
    np.testing.assert_allclose(both.estimators_[0].dual_coef_, single.dual_coef_)
    np.testing.assert_allclose(both.estimators_[1].dual_coef_, other.dual_coef_)
    new = [X[:5] + 0.05 for X in Xs]
    np.testing.assert_allclose(both.decision_function(new), 0.5 * (
        single.decision_function(new[0]) + other.decision_function(new[1])))


def test_pickle_leaves_out_the_graphs_and_the_client(client):
    Xs, y, _, graphs, _ = problem(client)
    est = CoLapRLS(gamma_I=10.0, p=1, kernel_params=KPS, client=client).fit(Xs, y,
                                                                           graphs=graphs)
    est.client = None  # a Client does not pickle
    back = pickle.loads(pickle.dumps(est))
    assert not hasattr(back, "graph_") and not hasattr(back.estimators_[0], "graph_")
    assert est.estimators_[0].client is client  # the fitted estimator keeps its learners'
    new = [X[:6] + 0.05 for X in Xs]
    np.testing.assert_array_equal(back.decision_function(new), est.decision_function(new))


def test_convex_combination_of_the_views_laplacians(client):
    """normalized=False, p=1: each view solves Eq 2.12 with L = 0.3 L1 + 0.7 L2 (L1961)."""
    Xs, y, Ws, graphs, _ = problem(client)
    gA, gI = [1e-3, 1e-2], [20.0, 5.0]
    est = CoLapRLS(gamma_A=gA, gamma_I=gI, view_weights=[0.3, 0.7], kernel_params=KPS,
                   normalized=False, p=1, client=client).fit(Xs, y, graphs=graphs)
    L = 0.3 * laplacian(Ws[0].toarray()) + 0.7 * laplacian(Ws[1].toarray())
    n, lab = y.size, y >= 0
    l = lab.sum()
    Y = np.where(~lab, 0.0, np.where(y == 1, 1.0, -1.0))[:, None]
    for s, X in enumerate(Xs):
        K = rbf_kernel(X, gamma=KPS[s]["gamma"])
        A = np.diag(lab.astype(float)) @ K + gA[s] * l * np.eye(n) + gI[s] * l / n ** 2 * L @ K
        np.testing.assert_allclose(est.estimators_[s].dual_coef_, np.linalg.solve(A, Y),
                                   rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(est.view_weights_, [0.3, 0.7])
    np.testing.assert_allclose(est.gamma_I_, gI)


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_colapsvm_views_are_lapsvm_with_the_mean_graph(client, loss):
    Xs, y, Ws, graphs, _ = problem(client)
    est = CoLapSVM(loss=loss, gamma_A=1e-3, gamma_I=30.0, p=1, kernel_params=KPS, combine=1,
                   client=client).fit({"shape": Xs[0], "side": Xs[1]}, y,
                                      graphs={"side": graphs[1], "shape": graphs[0]})
    mean = Graph.from_scipy(0.5 * (Ws[0] + Ws[1]), client=client, n_blocks=2)
    svm = LapSVM(loss=loss, gamma_A=1e-3, gamma_I=30.0, p=1, kernel_params=KPS[1],
                 client=client).fit(Xs[1], y, graph=mean)
    np.testing.assert_allclose(est.estimators_[1].dual_coef_, svm.dual_coef_, rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(est.estimators_[1].intercept_, svm.intercept_, rtol=1e-6,
                               atol=1e-8)
    new = {"side": Xs[1][:4], "shape": Xs[0][:4]}
    np.testing.assert_allclose(est.decision_function(new), svm.decision_function(Xs[1][:4]))


def test_primal_solver_reaches_the_direct_fit(client):
    Xs, y, _, graphs, _ = problem(client, n=50)
    settings = dict(gamma_A=1e-3, gamma_I=10.0, p=1, kernel_params=KPS, client=client)
    direct = CoLapRLS(solver="direct", **settings).fit(Xs, y, graphs=graphs)
    primal = CoLapRLS(solver="primal", tol=1e-8, max_iter=500, early_stopping=False,
                      **settings).fit(Xs, y, graphs=graphs)
    for d, p in zip(direct.estimators_, primal.estimators_):
        np.testing.assert_allclose(p.decision_function(p.expansion_points_),
                                   d.decision_function(d.expansion_points_), rtol=1e-4,
                                   atol=1e-5)
        assert p.n_iter_ > 1  # the iterative solver ran


def test_laprls_chooses_among_named_candidate_graphs(client):
    """The learner's side of the selection: a dict of graphs is a set of candidates."""
    Xs, y, _, graphs, _ = problem(client, n_labeled=14)
    settings = dict(kernel_params=KPS[0], p=1, client=client)
    one = LapRLS(gamma_I=20.0, **settings).fit(Xs[0], y, graph={"only": graphs[0]})
    plain = LapRLS(gamma_I=20.0, **settings).fit(Xs[0], y, graph=graphs[0])
    np.testing.assert_allclose(one.dual_coef_, plain.dual_coef_)
    assert one.graph_name_ == "only" and plain.graph_name_ is None
    two = LapRLS(**settings).fit(Xs[0], y, graph={"first": graphs[0], "second": graphs[1]})
    assert {r["graph"] for r in two.selection_} == {None, "first", "second"}
    assert two.graph_ is graphs[0 if two.graph_name_ == "first" else 1]
    with pytest.raises(ValueError, match="graph 'b' has 30 rows but X has 60"):
        LapRLS(**settings).fit(Xs[0], y, graph={
            "a": graphs[0], "b": Graph.from_scipy(Ws_small(), client=client)})


def test_auto_gamma_I_chooses_between_the_multiview_and_the_own_graph(client):
    Xs, y, Ws, _, side = problem(client, n=60, n_labeled=14)
    est = CoLapRLS(kernel_params=KPS, n_neighbors=6, p=1, n_blocks=2, random_state=0,
                   client=client).fit(Xs, y)
    # the multi-view graph is the mean of the views' 6-NN graphs
    W = est.graph_.to_scipy().toarray()
    assert np.allclose(W, W.T) and (W >= 0).all()
    for X in Xs:
        A = kneighbors_graph(X, 6, include_self=False).toarray()
        assert (W[(A + A.T) > 0] > 0).all()
    for s, X in enumerate(Xs):
        rows = est.selection_[s]
        assert rows[0]["gamma_I"] == 0.0 and rows[0]["graph"] is None  # the supervised model
        assert {r["graph"] for r in rows[1:]} == {"multiview", "own"}  # and the single-view one
        chosen = [r for r in rows if r["chosen"]]
        assert len(chosen) == 1 and chosen[0]["gamma_I"] == est.gamma_I_[s]
        assert est.graph_names_[s] == (chosen[0]["graph"] or "multiview")
        # the view's model is LapRLS at the chosen setting on the chosen graph
        used = est.estimators_[s].graph_
        assert (used is est.graph_) == (est.graph_names_[s] == "multiview")
        fixed = LapRLS(kernel_params=KPS[s], gamma_I=est.gamma_I_[s], p=1, client=client).fit(
            X, y, graph=used)
        np.testing.assert_allclose(est.estimators_[s].dual_coef_, fixed.dual_coef_)
    assert est.score(Xs, side) == np.mean(est.transduction_ == side)


@pytest.mark.parametrize("params, fit_args, match", [
    ({"view_weights": [1.0, -0.5]}, {}, "view_weights"),
    ({"view_weights": [1.0]}, {}, "view_weights has 1 value"),
    ({"gamma_I": [1.0, -2.0]}, {}, "view 1: .*gamma_I"),
    ({"gamma_A": [1e-3, 1e-3, 1e-3]}, {}, "one per view"),
    ({"combine": 3}, {}, "combine=3"),
    ({"solver": "primal", "loss": "hinge"}, {}, None),
    ({}, {"y": "one class"}, "only one labeled class"),
    ({}, {"y": "none"}, "no labeled rows"),
    ({}, {"Xs": "rows"}, "view 0 has 60 rows but view 1 has 59"),
    ({}, {"Xs": "nan"}, "view 1: .*NaN"),
    ({}, {"graphs": "short"}, "graphs holds 1 graph"),
    ({"class_balance": "yes"}, {}, "class_balance"),
    ({"class_balance": [0.2, 0.2]}, {}, "summing to 1"),
    ({"class_balance": [0.2, 0.3, 0.5]}, {}, "2 positive class shares"),
])
def test_bad_input_is_refused_before_any_work(client, monkeypatch, params, fit_args, match):
    Xs, y, _, graphs, _ = problem(client)
    monkeypatch.setattr(colap_module, "estimator_graph", _no_work)
    monkeypatch.setattr(colap_module, "multiview_graph", _no_work)
    if fit_args.get("y") == "one class":
        y = np.where(y == 1, 0, y)
    elif fit_args.get("y") == "none":
        y = np.full(y.size, -1)
    if fit_args.get("Xs") == "rows":
        Xs = [Xs[0], Xs[1][:-1]]
    elif fit_args.get("Xs") == "nan":
        Xs = [Xs[0], np.where(Xs[1] > 1.0, np.nan, Xs[1])]
    given = graphs[:1] if fit_args.get("graphs") == "short" else None
    if "loss" in params:
        est, match = CoLapSVM(client=client, **params), "view 0: the primal solver takes"
    else:
        est = CoLapRLS(client=client, **params)
    with pytest.raises(ValueError, match=match):
        est.fit(Xs, y, graphs=given)


def Ws_small():
    W = kneighbors_graph(np.arange(30.0)[:, None], 2, include_self=False)
    return W.maximum(W.T)


def _no_work(*args, **kwargs):
    raise AssertionError("a graph was built before the input was checked")


def test_class_balance_undoes_the_collapse_onto_one_class(client):
    """2 labels a class (the seeds' gamma_I unchecked in every view): the largest combined
    score leaves a blob out, the scores cut at the labeled shares by one offset per class
    recover the blobs; "auto" cuts here but not the supervised models (gamma_I = 0) nor a
    gamma_I the labels chose (5 a class); predict keeps the cut."""
    Xs, y, yl = four_blob_views(2)
    u = yl < 0
    settings = dict(n_neighbors=10, client=client, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SelectionWarning)
        raw = CoLapRLS(class_balance=None, **settings).fit(Xs, yl)
        auto = CoLapRLS(**settings).fit(Xs, yl)
        supervised = CoLapRLS(gamma_I=0.0, **settings).fit(Xs, yl)  # its RBF width unchecked
    assert np.mean(raw.transduction_[u] != y[u]) >= 0.2
    assert np.mean(auto.transduction_[u] != y[u]) <= 0.05
    assert auto.class_balance_ == "labeled" and raw.class_balance_ is None
    np.testing.assert_array_equal(raw.intercept_, 0.0)
    # the views' learners are the same; the offsets act on their combined scores
    np.testing.assert_allclose(auto.view_decision_functions(Xs),
                               raw.view_decision_functions(Xs))
    new = [V[u] + 0.01 for V in Xs]
    np.testing.assert_allclose(auto.decision_function(new),
                               raw.decision_function(new) + auto.intercept_)
    np.testing.assert_array_equal(auto.predict([V[u] for V in Xs]), auto.transduction_[u])
    assert supervised.class_balance_ is None
    np.testing.assert_array_equal(supervised.intercept_, 0.0)
    Xs, y, yl = four_blob_views(5)
    chosen = CoLapRLS(**settings).fit(Xs, yl)
    assert chosen.class_balance_ is None and chosen.selection_[0]
    np.testing.assert_array_equal(chosen.intercept_, 0.0)
