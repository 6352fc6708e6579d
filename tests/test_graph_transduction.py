"""GraphTransduction: block CG on the workers, LabelSpreading limits, two moons, validation."""

import pickle

import numpy as np
import pytest
from scipy.sparse.csgraph import laplacian
from sklearn.semi_supervised import LabelSpreading

from dask_ssl.data.generators import two_moons
from dask_ssl.graph.laplacian import LaplacianOperator
from dask_ssl.graph.system import GraphSystem
from dask_ssl.graph.weights import knn_graph
from dask_ssl.linalg.block_cg import LocalSystem, block_cg
from dask_ssl.linalg.rowblocks import RowBlocks
from dask_ssl.models.graph_transduction import GraphTransduction, balance_weights

#: The thesis method (ch. 5): no prior, unlabeled rows free (mu = 0), largest score, the
#: seeds' graph; set where a test checks that method rather than the selected default.
THESIS = dict(prior=None, unlabeled_weight=0.0, class_balance=None, metric="euclidean",
              weights="heat", graph_normalization="none")


def system(weight, y):
    """The gamma_I whose system weight (ch. 5's gamma_I, ``l gamma_I_eff``) is ``weight``
    under ``graph_normalization="none"``, for the labels ``y`` (-1 unlabeled)."""
    return weight / np.sum(np.asarray(y) >= 0)


@pytest.fixture(scope="module")
def moons():
    X, y = two_moons(n=400, noise=0.1, seed=0)
    # The generator labels +1/-1; -1 would read as "unlabeled" here.
    return X, (np.asarray(y) > 0).astype(int)


def _one_label_per_class(y, seed=0):
    rng = np.random.default_rng(seed)
    ys = np.full(y.shape, -1)
    for c in np.unique(y):
        i = rng.choice(np.flatnonzero(y == c))
        ys[i] = c
    return ys


def _distributed_solve(graph, normalized, power, gamma, a, B, X0=None, partition=None):
    """Block CG on the workers to tol 1e-9; returns the result and the gathered solution."""
    op = LaplacianOperator(graph, normalized=normalized, p=power, partition=partition)
    system = GraphSystem(op, gamma, a, B, X0=X0)
    try:
        return block_cg(system, tol=1e-9, maxiter=2000), system.solution()
    finally:
        system.close()
        op.close()


@pytest.mark.parametrize("partition", [None, "metis"])
def test_distributed_block_cg_equals_dense_solve(client, moons, partition):
    X, _ = moons
    graph = knn_graph(RowBlocks.from_array(X, client=client, n_blocks=3), 8)
    W = graph.to_scipy().toarray()
    a = np.where(np.arange(400) % 3 == 0, 1.0, 0.05)
    B = np.random.default_rng(1).standard_normal((400, 3)) * (a[:, None] == 1)
    B[:, 2] = 0.0  # a zero right-hand side converges at once and must stay zero
    A = 0.3 * np.linalg.matrix_power(laplacian(W, normed=True), 2) + np.diag(a)
    res, X_cg = _distributed_solve(graph, True, 2, 0.3, a, B, partition=partition)
    assert res.converged.all() and res.n_iter[2] == 0
    np.testing.assert_allclose(X_cg, np.linalg.solve(A, B), atol=1e-7)


@pytest.mark.parametrize("preconditioner", [None, "block"])
def test_columns_with_their_own_weights_and_fidelities(client, moons, preconditioner):
    """A grid of graph weights and per-column fidelities in one block CG: each column equals
    its own dense solve; with a shared preconditioner fidelity too (``a_precond``)."""
    from dask_ssl.solvers.graph import solve_graph_system

    X, _ = moons
    graph = knn_graph(RowBlocks.from_array(X, client=client, n_blocks=3), 8)
    L = laplacian(graph.to_scipy().toarray(), normed=True)
    rng = np.random.default_rng(4)
    gamma = np.array([0.5, 0.5, 10.0, 10.0, 10.0])
    base = np.where(np.arange(400) % 5 == 0, 1.0, 0.2)
    a = np.column_stack([base, base, base, np.where(np.arange(400) % 10 == 0, 0.2, base),
                         np.full(400, 0.05)])
    B = rng.standard_normal((400, 5))
    sol = solve_graph_system(graph, a, B, gamma_I=gamma, preconditioner=preconditioner,
                             tol=1e-10, a_precond=np.column_stack([base] * 4 + [a[:, 4]]))
    assert sol.cg.converged.all()
    for j in range(5):
        dense = np.linalg.solve(gamma[j] * L + np.diag(a[:, j]), B[:, j])
        np.testing.assert_allclose(sol.F[:, j], dense, atol=1e-7)


@pytest.mark.parametrize("power,n_blocks", [(1, 4), (2, 2)])
def test_seeded_distributed_cg_follows_the_dense_recurrence(client, moons, power, n_blocks):
    """Halo values kept on the driver are the workers' own: same residual path as in memory."""
    X, _ = moons
    graph = knn_graph(RowBlocks.from_array(X, client=client, n_blocks=n_blocks), 8)
    W = graph.to_scipy().toarray()
    rng = np.random.default_rng(3)
    a = (rng.random(400) < 0.2).astype(float)
    B = rng.standard_normal((400, 2)) * a[:, None]
    X0 = rng.standard_normal((400, 2))
    A = 0.5 * np.linalg.matrix_power(laplacian(W, normed=False), power) + np.diag(a)
    res, X_cg = _distributed_solve(graph, False, power, 0.5, a, B, X0=X0)
    local = LocalSystem(A, B, X0=X0)
    ref = block_cg(local, tol=1e-9, maxiter=2000)
    # Round-off (another summation order) parts the two paths only late in the run.
    np.testing.assert_allclose(np.array(res.history[:20]), np.array(ref.history[:20]), rtol=1e-6)
    assert res.converged.all() and abs(res.n_passes - ref.n_passes) <= 0.1 * ref.n_passes
    np.testing.assert_allclose(X_cg, local.solution(), rtol=1e-6, atol=1e-9)


def test_matches_label_spreading_fixed_point(client, moons):
    """mu = 1, normalized L, gamma_I = alpha/(1-alpha): LabelSpreading's limit on the same graph."""
    X, y = moons
    rng = np.random.default_rng(2)
    ys = np.full(400, -1)
    lab = rng.choice(400, 40, replace=False)
    ys[lab] = y[lab]
    alpha = 0.9
    gt = GraphTransduction(**{**THESIS, "unlabeled_weight": 1.0},
                           gamma_I=system(alpha / (1 - alpha), ys),
                           tol=1e-10, client=client, n_blocks=2).fit(X, ys)
    W = gt.graph_.to_scipy()
    ls = LabelSpreading(kernel=lambda A, B: W, alpha=alpha, max_iter=5000, tol=1e-12).fit(X, ys)
    np.testing.assert_allclose(gt.label_distributions_, ls.label_distributions_, atol=1e-6)
    np.testing.assert_array_equal(gt.transduction_, ls.transduction_)


def test_beats_label_spreading_with_one_label_per_class(client):
    # The seeds' setting: 200 points, one label per class.
    X, y = two_moons(n=200, noise=0.1, seed=0)
    y = (np.asarray(y) > 0).astype(int)
    ys = _one_label_per_class(y)
    gt = GraphTransduction(**THESIS, gamma_I=system(1.0, ys), n_neighbors=10, tol=1e-4,
                           client=client,
                           random_state=0).fit(X, ys)
    ours = np.mean(gt.transduction_ != y)
    ls = LabelSpreading(kernel="knn", n_neighbors=10).fit(X, ys)
    theirs = np.mean(ls.transduction_ != y)
    assert ours <= 0.02 and ours < theirs, (ours, theirs)
    assert gt.n_iter_ > 0 and set(gt.classes_) == set(np.unique(y))
    Xt, yt = two_moons(n=200, noise=0.1, seed=9)
    yt = (np.asarray(yt) > 0).astype(int)
    assert np.mean(gt.predict(Xt) != yt) <= 0.03
    scores = gt.decision_function(Xt)
    assert scores.shape == (200,)
    np.testing.assert_array_equal(gt.classes_[(scores > 0).astype(int)], gt.predict(Xt))
    proba = gt.predict_proba(Xt)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)

    # Reusing the graph and seeding with the solution: same answer, hardly any work.
    again = GraphTransduction(**THESIS, gamma_I=system(1.0, ys), n_neighbors=10, tol=1e-4,
                              client=client).fit(
        X, ys, graph=gt.graph_, scores_init=gt.scores_)
    assert again.n_iter_ <= 1
    np.testing.assert_allclose(again.scores_, gt.scores_, atol=1e-3)


def _dense_scores(gt, ys):
    labeled = ys >= 0
    W = gt.graph_.to_scipy().toarray()
    return np.linalg.solve(laplacian(W, normed=True) + np.diag(labeled * 1.0),
                           np.eye(2)[np.maximum(ys, 0)] * labeled[:, None])


def test_class_balance_cuts_the_ranking_at_the_labeled_shares(client, moons):
    """With class_balance="labeled" the unlabeled rows are ranked by their score share
    F_i1 / (F_i0 + F_i1) of the dense solution and cut at the labeled rows' class shares; with
    labels in the classes' true shares that beats the largest raw score on the moons."""
    X, y = moons
    raw_errors, balanced_errors = [], []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        ys = np.full(400, -1)
        for c in (0, 1):
            ys[rng.choice(np.flatnonzero(y == c), 2, replace=False)] = c
        gt = GraphTransduction(**{**THESIS, "class_balance": "labeled"},
                               gamma_I=system(1.0, ys),
                               tol=1e-10, client=client, n_blocks=2).fit(X, ys)
        unl = ys < 0
        F = _dense_scores(gt, ys)
        share = F[unl, 1] / F[unl].sum(axis=1)
        expected = np.zeros(unl.sum(), dtype=int)
        expected[np.argsort(share)[unl.sum() // 2:]] = 1
        np.testing.assert_array_equal(gt.transduction_[unl], expected)
        weighted = F * gt.class_weights_
        np.testing.assert_array_equal(gt.transduction_, np.argmax(weighted, axis=1))
        np.testing.assert_allclose(gt.label_distributions_,
                                   weighted / weighted.sum(axis=1, keepdims=True), atol=1e-8)
        raw_errors.append(np.mean(np.argmax(F, axis=1) != y))
        balanced_errors.append(np.mean(gt.transduction_ != y))
        # out of sample: the same weights; predict and decision_function agree
        S = gt.decision_function(X[:50])
        np.testing.assert_array_equal(gt.classes_[(S > 0).astype(int)], gt.predict(X[:50]))
    assert np.mean(balanced_errors) < np.mean(raw_errors), (balanced_errors, raw_errors)

    shares = GraphTransduction(**{**THESIS, "class_balance": [0.3, 0.7]},
                               gamma_I=system(1.0, ys),
                               tol=1e-10, client=client, n_blocks=2).fit(X, ys)
    assert np.sum(shares.transduction_[ys < 0] == 1) == round(0.7 * np.sum(ys < 0))
    off = GraphTransduction(**THESIS, gamma_I=system(1.0, ys), tol=1e-10, client=client,
                            n_blocks=2).fit(X, ys)
    np.testing.assert_array_equal(off.class_weights_, [1.0, 1.0])
    np.testing.assert_array_equal(off.transduction_, np.argmax(off.scores_, axis=1))


def test_balance_weights_give_many_classes_their_shares():
    rng = np.random.default_rng(0)
    F = rng.random((2000, 4)) * np.array([1.0, 3.0, 0.5, 2.0])  # classes unequal in scale
    F[:5] = 0.0  # rows without scores have no say
    target = np.array([0.1, 0.2, 0.3, 0.4])
    w = balance_weights(F, target)
    got = np.bincount(np.argmax(F[5:] * w, axis=1), minlength=4) / 1995
    np.testing.assert_allclose(got, target, atol=0.005)
    assert w.max() == 1.0


@pytest.mark.parametrize("change, message", [
    ({"gamma_I": 0.0}, "gamma_I=0 needs a prior"),
    ({"gamma_I": 0.0, "prior": None}, "gamma_I=0 needs a prior"),
    ({"gamma_I": -1.0}, "'gamma_I' parameter of"),
    ({"prior": "svm"}, "'prior' parameter of"),
    ({"prior": "rls", "unlabeled_weight": 0.0}, "prior='rls' needs unlabeled_weight > 0"),
    ({"metric": "euclidean", "weights": "cosine"}, "needs metric='cosine'"),
    ({"p": 0}, "'p' parameter of"),
    ({"n_neighbors": 2.5}, "n_neighbors"),
    ({"weights": "gauss"}, "weights"),
    ({"metric": "l1"}, "metric"),
    ({"unlabeled_weight": -1.0}, "unlabeled_weight"),
    ({"partition": "spectral"}, "'partition' parameter of"),
    ({"preconditioner": "amg"}, "'preconditioner' parameter of"),
    ({"class_balance": "yes"}, "'class_balance' parameter of"),
    ({"class_balance": [1.0]}, "class_balance must hold 2 positive class shares"),
    ({"class_balance": [0.2, 0.2]}, "summing to 1"),
    ({"class_balance": [1.2, -0.2]}, "positive class shares"),
])
def test_bad_parameters(client, change, message):
    X = np.random.default_rng(0).random((30, 2))
    y = np.r_[0, 1, [-1] * 28]
    with pytest.raises(ValueError, match=message):
        GraphTransduction(client=client, **change).fit(X, y)


def test_fewer_rows_than_neighbors_give_the_graph_they_can_with_one_warning(client):
    X = np.random.default_rng(0).random((30, 2))
    y = np.r_[0, 1, [-1] * 28]
    with pytest.warns(UserWarning) as record:
        gt = GraphTransduction(**THESIS, gamma_I=system(1.0, y), n_neighbors=30,
                               client=client).fit(X, y)
    messages = [str(w.message) for w in record if "n_neighbors" in str(w.message)]
    assert messages == ["n_neighbors=30 needs more than 30 rows; the graph on 30 rows uses "
                        "n_neighbors=29 (every other row a neighbour)"]
    assert gt.n_neighbors_ == 29
    assert gt.graph_.to_scipy().nnz == 30 * 29  # complete
    assert gt.predict_proba(X[:3] + 0.01).shape == (3, 2)


def test_pickled_model_places_new_rows_without_the_fit_workers(client, moons):
    """The graph stays with the workers; a pickle carries the training rows instead, and the
    unpickled model's exact search is the fit's own below build_knn's exact_below."""
    X, y = moons
    # the session client is the default one: a Client given as a parameter would not pickle
    gt = GraphTransduction(**THESIS, gamma_I=system(1.0, [0, 1]), t="local", n_blocks=2).fit(
        X, _one_label_per_class(y))
    back = pickle.loads(pickle.dumps(gt))
    assert not hasattr(back, "graph_")
    Xt = X[:50] + 0.01
    for method in ("predict", "predict_proba", "decision_function"):
        np.testing.assert_array_equal(getattr(back, method)(Xt), getattr(gt, method)(Xt))
    # decision_function is the difference of the label shares: the two rank rows alike
    P = gt.predict_proba(Xt)
    np.testing.assert_allclose(gt.decision_function(Xt), P[:, 1] - P[:, 0])


def test_bad_data(client):
    X = np.random.default_rng(0).random((30, 2))
    y = np.r_[0, 1, [-1] * 28]
    est = GraphTransduction(**THESIS, gamma_I=system(1.0, y), n_neighbors=5, client=client)
    bad = X.copy()
    bad[4, 1] = np.nan
    with pytest.raises(ValueError, match="non-finite value"):
        est.fit(bad, y)
    with pytest.raises(ValueError, match="29 entries but X has 30 rows"):
        est.fit(X, y[:29])
    with pytest.raises(ValueError, match="no labeled rows"):
        est.fit(X, np.full(30, -1))
    with pytest.raises(ValueError, match="only one labeled class.*looks like"):
        est.fit(X, np.r_[1, 1, [-1] * 28])
    with pytest.raises(ValueError, match="not fitted"):
        est.predict(X)


def test_block_preconditioner_is_factored_only_for_columns_plain_cg_leaves(client, moons,
                                                                           monkeypatch):
    """``preconditioner="block"`` runs plain CG for a bounded number of column-passes and
    factors the preconditioner only for the columns still unconverged, continuing from the
    plain iterate; every column equals its dense solve, and a system plain CG solves within
    the budget is never factored."""
    from dask_ssl.solvers import graph as solver

    made = []

    class Recorded(solver.GraphSystem):
        def __init__(self, op, gamma, a, B, **kw):
            made.append((kw.get("preconditioner"), np.asarray(B).shape[1]))
            super().__init__(op, gamma, a, B, **kw)

    monkeypatch.setattr(solver, "GraphSystem", Recorded)
    X, _ = moons
    graph = knn_graph(RowBlocks.from_array(X, client=client, n_blocks=3), 8)
    L = laplacian(graph.to_scipy().toarray(), normed=True)
    gamma = np.array([1e-3, 1e-3, 1e3, 1e3])
    # two columns near the identity (plain CG settles them in a few passes), two ill-conditioned
    sparse_labels = np.where(np.arange(400) % 20 == 0, 1.0, 1e-3)
    a = np.column_stack([np.ones(400), np.ones(400), sparse_labels, sparse_labels])
    B = np.random.default_rng(6).standard_normal((400, 4))

    monkeypatch.setattr(solver, "PLAIN_COLUMN_PASSES", 4 * 10)
    sol = solver.solve_graph_system(graph, a, B, gamma_I=gamma, tol=1e-10)
    # the large weights' columns are left to the preconditioner, the small ones settle plain
    assert made == [(None, 4), ("block", 2)]
    assert sol.cg.converged.all() and sol.cg.n_iter[2] > 10 >= sol.cg.n_iter[0]
    assert len(sol.cg.history) == sol.cg.n_passes
    for j in range(4):
        dense = np.linalg.solve(gamma[j] * L + np.diag(a[:, j]), B[:, j])
        np.testing.assert_allclose(sol.F[:, j], dense, atol=1e-7)

    made.clear()
    monkeypatch.setattr(solver, "PLAIN_COLUMN_PASSES", 10 ** 6)
    plain = solver.solve_graph_system(graph, a, B, gamma_I=gamma, tol=1e-10)
    assert made == [(None, 4)] and plain.cg.converged.all()
    np.testing.assert_allclose(plain.F, sol.F, atol=1e-7)
