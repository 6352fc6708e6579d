"""SparseLapRLS (thesis ch. 5): greedy matching pursuit, the slack method and the decoupled
method against dense solves, LapRLS and GraphTransduction."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from dask_ssl.cli import main
from dask_ssl.data.generators import g50c, two_moons
from dask_ssl.graph.dense import laplacian_matrix, regularizer_matrix
from dask_ssl.graph.weights import Graph
from dask_ssl.linalg import RowBlocks
from dask_ssl.models import ESTIMATORS, GraphTransduction, LapRLS, SparseLapRLS
from dask_ssl.models import sparse as sparse_module
from dask_ssl.models._selection import SelectionWarning, eligible
from dask_ssl.models.artifact import load_model, save_model
from dask_ssl.models.manifold import AUTO_GAMMA_I
from dask_ssl.solvers import sparse as solve
from dask_ssl.solvers.greedy_state import BlockState
from dask_ssl.solvers.laplacian_power import LaplacianPower
from dask_ssl.workflow.runner import store_for

from ._labels import labels_per_class
from .test_cli import write_problem
from .test_manifold import small_problem
from .test_workflow_run import run_shipped

KP = {"gamma": 4.0}


def problem(client, n=40, n_labeled=6, seed=0, n_classes=2, noise=0.1):
    X, y, _, graph = small_problem(client, n, n_labeled, seed, n_classes, noise=noise)
    return X, y, graph


@pytest.mark.parametrize("method", ["laprls", "slack", "decoupled", "sigmoid"])
def test_without_the_graph_term_the_basis_is_the_labeled_rows_and_the_fit_the_full_one(
        client, method):
    # gamma_I = 0: every method's objective sees the labeled outputs only, so (representer
    # theorem) the full model lies in the labeled rows' span; a basis of at least l functions
    # is those rows, unchecked, and scores as the full LapRLS (kernel RLS) does; the slack
    # method's f shrinks the labels by nu / (1 + nu) there, its gamma_A in effect
    # gamma_A (1 + nu) / nu
    X, y, graph = problem(client, n_classes=3, n_labeled=9)
    params = dict(gamma_A=1e-2, gamma_I=0.0, kernel_params=KP)
    nu = 1.0
    full = LapRLS(**{**params, "gamma_A": 1e-2 * ((1 + nu) / nu if method == "slack" else 1)}
                  ).fit(X, y, graph=graph)
    est = SparseLapRLS(method=method, n_basis=12, nu=nu, random_state=0, **params).fit(
        X, y, graph=graph)
    assert sorted(est.basis_) == list(np.flatnonzero(y >= 0))
    assert est.basis_selection_ == []
    new = X[:7] + 0.03
    np.testing.assert_allclose(est.decision_function(new), full.decision_function(new),
                               rtol=1e-7, atol=1e-9)
    # fewer functions than labeled rows: the greedy, as with a graph term
    fewer = SparseLapRLS(method=method, n_basis=5, basis="greedy", random_state=0,
                         **params).fit(X, y, graph=graph)
    assert fewer.n_basis_ == 5


def test_greedy_with_every_row_is_full_laprls(client):
    X, y, graph = problem(client, n_classes=3, n_labeled=9)
    params = dict(gamma_A=1e-2, gamma_I=30.0, kernel_params=KP, p=2)
    full = LapRLS(n_neighbors=6, **params).fit(X, y, graph=graph)
    est = SparseLapRLS(method="laprls", n_basis=1.0, kappa=7, random_state=0,
                       **params).fit(X, y, graph=graph)
    assert sorted(est.basis_) == list(range(X.shape[0]))
    alpha = np.empty_like(est.dual_coef_)
    alpha[est.basis_] = est.dual_coef_
    np.testing.assert_allclose(alpha, full.dual_coef_, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(est.decision_function(X[:7] + 0.03),
                               full.decision_function(X[:7] + 0.03), rtol=1e-8, atol=1e-8)
    # the same objective, in the same units
    np.testing.assert_allclose(est.objective_, full.objective_, rtol=1e-8)
    # the greedy trace only goes down
    assert np.all(np.diff(est.history_) <= 1e-12)


def _setup(client, nu=None):
    X, y, graph = problem(client)
    lab = y >= 0
    Ybar = np.where(lab, np.where(y == 1, 1.0, -1.0), 0.0)[:, None]
    M = regularizer_matrix(graph, normalized=True, p=1, sparse=True)
    a, g = 0.05, 2.0
    cols = solve.KernelColumns(X, "rbf", KP)
    if nu is None:
        return solve.laprls_quadratic(M, lab, Ybar, a, g), cols, (M, lab, Ybar, a, g)
    fsys = solve.FSystem(M, lab + nu, g)
    return solve.slack_quadratic(fsys, Ybar, a, nu, M, lab), cols, (M, lab, Ybar, a, g)


def test_candidate_score_is_the_one_dimensional_decrease(client):
    quad, cols, _ = _setup(client)
    J = np.array([3, 11, 25])
    fit = solve.fit_on_basis(quad, cols, J)
    cand = np.array([0, 7, 30])
    score, grad, h = solve.candidate_scores(quad, cols(cand), cand, fit.KNJ, fit.beta, J)
    for i, j in enumerate(cand):
        Jj = np.append(J, j)
        KNJ = cols(Jj)
        before = quad.objective(fit.KNJ, fit.KNJ[J], fit.beta)
        step = -grad[i] / h[i]
        beta = np.vstack([fit.beta, step])
        after = quad.objective(KNJ, KNJ[Jj], beta)
        # post-backfitting: beta_J held, the new coefficient at its best; g^2/h is twice the
        # decrease of the thesis' objective (Eq 5.2 with its 1/2 factors)
        np.testing.assert_allclose(before - after, score[i] / 2, rtol=1e-9)
        for eps in (-1e-3, 1e-3):
            moved = np.vstack([fit.beta, step + eps])
            assert quad.objective(KNJ, KNJ[Jj], moved) > after


def test_slack_candidate_curvature_is_exact_when_factored_else_an_upper_bound(client):
    # the slack greedy scores candidates by k^T Q k (Q = phi(P), P = g M + I_L,
    # phi(q) = nu q / (q + nu)): exact where the f-system is factored; where it is solved by
    # CG a bound that needs no f-solve, at least the exact form, at most both the f-held
    # curvature nu ||k||^2 and k^T P k, and exact on an eigenvector of P; a score is then at
    # most the exact score
    nu = 0.3
    quad, cols, (M, lab, Ybar, a, g) = _setup(client, nu)
    power = LaplacianPower(M, 1)
    by_cg = solve.slack_quadratic(solve.FSystem(power, lab + nu, g), Ybar, a, nu, power, lab)
    cand = np.array([0, 7, 30, 38])
    Kc = cols(cand)
    exact = np.einsum("im,im->m", Kc, quad.Q(Kc))
    np.testing.assert_allclose(quad.curvature(Kc), exact, rtol=1e-12)
    np.testing.assert_allclose(by_cg.Q(Kc), quad.Q(Kc), rtol=1e-6, atol=1e-10)
    bound = by_cg.curvature(Kc)
    P = g * M.toarray() + np.diag(lab.astype(float))
    assert np.all(bound >= exact * (1 - 1e-9))
    assert np.all(bound <= np.minimum(nu * np.sum(Kc ** 2, axis=0),
                                      np.einsum("im,im->m", Kc, P @ Kc)) * (1 + 1e-12))
    assert np.all(bound > exact * 1.01)   # a bound, not the exact form, on kernel columns
    V = np.linalg.eigh(P)[1][:, [0, 5, 30]]
    np.testing.assert_allclose(by_cg.curvature(V), np.einsum("im,im->m", V, quad.Q(V)),
                               rtol=1e-7)
    J = np.array([3, 11, 25])
    fit = solve.fit_on_basis(quad, cols, J)
    score, grad, h = solve.candidate_scores(by_cg, Kc, cand, fit.KNJ, fit.beta, J)
    h_exact = quad.a * Kc[cand, np.arange(cand.size)] + exact
    np.testing.assert_allclose(h, quad.a * Kc[cand, np.arange(cand.size)] + bound, rtol=1e-12)
    assert np.all(score <= np.sum(grad ** 2, axis=1) / h_exact)


@pytest.mark.parametrize("nu", [None, 0.3], ids=["laprls", "slack"])
def test_greedy_scored_on_the_workers_equals_the_driver(client, nu):
    # the same candidates drawn, scored from block-held state (3 row blocks, the kernel
    # columns computed beside each block) or from the driver's: the same basis and minimizer
    quad, cols, _ = _setup(client, nu)
    X = cols.X
    blocks = RowBlocks.from_array(X, client=client, n_blocks=3)
    driver = solve.greedy_basis(quad, cols, 12, 5, np.random.default_rng(4))
    state = BlockState(blocks, "rbf", KP, quad.r, 12)
    try:
        workers = solve.greedy_basis(quad, None, 12, 5, np.random.default_rng(4), state=state)
    finally:
        state.close()
    np.testing.assert_array_equal(workers.basis, driver.basis)
    np.testing.assert_allclose(workers.beta, driver.beta, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(workers.KNJ, driver.KNJ, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(workers.history, driver.history, rtol=1e-8)
    np.testing.assert_allclose(state.rows([7, 2, 31]), X[[7, 2, 31]])


def test_fit_on_row_blocks_scores_greedy_candidates_on_the_workers(client, monkeypatch):
    # above DENSE_MAX_ROWS the estimator scores on the workers and never gathers the rows,
    # and with p > 1 applies L^p as p products with L and solves the f-systems by CG
    X, y, graph = problem(client)
    params = dict(method="slack", gamma_A=1e-3, gamma_I=30.0, nu=0.5, kernel_params=KP,
                  n_basis=6, kappa=8, random_state=2, p=2, tol=1e-13)
    driver = SparseLapRLS(**params).fit(X, y, graph=graph)
    monkeypatch.setattr(solve, "DENSE_MAX_ROWS", 10)
    monkeypatch.setattr(sparse_module, "gather_rows", None)
    blocks = RowBlocks.from_array(X, client=client, n_blocks=2)
    workers = SparseLapRLS(client=client, **params).fit(blocks, y, graph=graph)
    np.testing.assert_array_equal(workers.basis_, driver.basis_)
    np.testing.assert_allclose(workers.dual_coef_, driver.dual_coef_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(workers.basis_points_, X[driver.basis_])
    np.testing.assert_allclose(workers.graph_scores_, driver.graph_scores_, rtol=1e-8,
                               atol=1e-10)


def test_laplacian_power_system_equals_the_formed_matrix(client):
    X, y, graph = problem(client)
    lab = (y >= 0).astype(float)
    L = laplacian_matrix(graph.to_scipy(), normalized=True, sparse=True)
    B = np.random.default_rng(1).normal(size=(X.shape[0], 3))
    for p in (1, 3):
        M = regularizer_matrix(graph, normalized=True, p=p, sparse=True)
        power = LaplacianPower(L, p)
        np.testing.assert_allclose(power @ B, M @ B, rtol=1e-12, atol=1e-12)
        exact = np.linalg.solve((2.0 * M + sp.diags(lab + 0.1)).toarray(), B)
        F = solve.FSystem(power, lab + 0.1, 2.0, tol=1e-12).solve(B)
        np.testing.assert_allclose(F, exact, rtol=1e-9, atol=1e-10)


def test_slack_objective_with_f_eliminated_is_eq_5_7(client):
    quad, cols, (M, lab, Ybar, a, g) = _setup(client, nu=0.3)
    J = np.array([3, 11, 25, 30])
    fit = solve.fit_on_basis(quad, cols, J)
    fsys = solve.FSystem(M, lab + 0.3, g)
    f = fsys.solve(Ybar + 0.3 * fit.KNJ @ fit.beta)
    direct = solve.slack_objective(M, lab, Ybar, a, g, 0.3, fit.KNJ, fit.KNJ[J], fit.beta, f)
    np.testing.assert_allclose(fit.objective.sum(), direct, rtol=1e-10)
    # and the thesis' alternation (Eq 5.8 / 5.9) converges to the same minimizer
    alt = solve.slack_alternate(fsys, M, lab, Ybar, a, g, 0.3, fit.KNJ, fit.KNJ[J],
                                np.zeros_like(fit.beta), tol=1e-14, max_iter=3000)
    assert np.all(np.diff(alt.history) <= 1e-12)
    np.testing.assert_allclose(alt.history[-1], direct, rtol=1e-8)


def test_slack_with_large_nu_approaches_restricted_laprls(client):
    X, y, graph = problem(client)
    J = np.array([1, 5, 9, 14, 20, 33])
    params = dict(gamma_A=1e-3, gamma_I=30.0, kernel_params=KP, basis=J)
    restricted = SparseLapRLS(method="laprls", **params).fit(X, y, graph=graph).dual_coef_
    gaps = [np.abs(SparseLapRLS(method="slack", nu=nu, **params).fit(X, y, graph=graph)
                   .dual_coef_ - restricted).max() / np.abs(restricted).max()
            for nu in (1e1, 1e3, 1e5)]
    assert gaps[0] > gaps[1] > gaps[2]
    assert gaps[2] < 1e-3


def test_slack_on_the_workers_matches_the_direct_solve(client):
    X, y, graph = problem(client)
    params = dict(gamma_A=1e-3, gamma_I=30.0, kernel_params=KP, basis=[2, 8, 17, 26, 35],
                  nu=3.0, method="slack", tol=1e-10, max_iter=400)
    direct = SparseLapRLS(**params).fit(X, y, graph=graph)
    workers = SparseLapRLS(solver="graph", **params).fit(X, y, graph=graph)
    assert workers.n_iter_ > 1 and np.all(np.diff(workers.history_) <= 1e-9)
    np.testing.assert_allclose(workers.dual_coef_, direct.dual_coef_, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(workers.graph_scores_, direct.graph_scores_, atol=1e-5)


def test_graph_products_on_the_workers_match_the_driver(client):
    # restricted LapRLS with solver="graph": every M product (the greedy candidates' Q K_Nc,
    # the Gram of the final basis) is a halo exchange on the workers, M never gathered
    X, y, graph = problem(client, n_classes=3, n_labeled=9)
    params = dict(method="laprls", gamma_A=1e-3, gamma_I=30.0, kernel_params=KP, p=2,
                  n_basis=8, kappa=10, random_state=1)
    direct = SparseLapRLS(**params).fit(X, y, graph=graph)
    workers = SparseLapRLS(solver="graph", **params).fit(X, y, graph=graph)
    np.testing.assert_array_equal(workers.basis_, direct.basis_)
    np.testing.assert_allclose(workers.dual_coef_, direct.dual_coef_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(workers.objective_, direct.objective_, rtol=1e-10)
    M = regularizer_matrix(graph, normalized=True, p=2, sparse=True)
    held = solve.WorkerRegularizer(graph, normalized=True, p=2)
    try:
        V = np.random.default_rng(0).normal(size=(X.shape[0], 3))
        np.testing.assert_allclose(held @ V, M @ V, rtol=1e-12, atol=1e-12)
        assert held.products == 3
    finally:
        held.close()


@pytest.mark.parametrize("solver, p, dense_max", [("direct", 1, None), ("graph", 1, None),
                                                   ("direct", 2, 10)])
def test_decoupled_f_step_is_graph_transduction(client, monkeypatch, solver, p, dense_max):
    # beyond DENSE_MAX_ROWS with p > 1 the decoupled system (no nu I) goes to the workers'
    # preconditioned solver, as solver="graph" sends it
    if dense_max is not None:
        monkeypatch.setattr(solve, "DENSE_MAX_ROWS", dense_max)
    X, y, graph = problem(client, n=60)
    gamma_I = 40.0
    gt = GraphTransduction(gamma_I=gamma_I, prior=None, unlabeled_weight=0.0, p=p,
                           class_balance=None, partition=None, tol=1e-12,
                           client=client).fit(X, y, graph=graph)
    est = SparseLapRLS(method="decoupled", gamma_I=gamma_I, n_basis=12, kernel_params=KP,
                       solver=solver, p=p, tol=1e-12, random_state=0).fit(X, y, graph=graph)
    # GraphTransduction scores 0/1 one-hot columns; the +1/-1 target is their difference.
    # Both weigh the graph by l gamma_I_eff (the thesis' ch. 5 gamma_I).
    np.testing.assert_allclose(est.graph_scores_[:, 0], gt.scores_[:, 1] - gt.scores_[:, 0],
                               atol=1e-8)
    assert est.gamma_I_effective_ == pytest.approx(gt.gamma_I_effective_)


def _label_draws(truth, n_labels, draws):
    for draw in range(draws):
        rng = np.random.default_rng(draw)
        first = [rng.choice(np.flatnonzero(truth == c)) for c in (-1, 1)]
        rest = rng.choice(np.setdiff1d(np.arange(truth.size), first), n_labels - 2,
                          replace=False)
        y = np.full(truth.size, -1)
        lab = np.concatenate([first, rest]).astype(int)
        y[lab] = (truth[lab] > 0).astype(int)
        yield draw, y


def test_two_moons_greedy_slack_at_a_tenth_of_the_rows(client):
    # a small run of the thesis' Table 5.5 setting (one label a class, d = 0.1 n) at the
    # setting benchmarks/bench_sparse.py chose for GREEDY+SLACK on its validation rows
    X, truth = two_moons(n=300, noise=0.05, seed=1)
    errors = []
    for draw, y in _label_draws(truth, 2, 3):
        est = SparseLapRLS(n_basis=0.1, gamma_A=1e-6, gamma_I=1e4, nu=1e-3,
                           random_state=draw, client=client).fit(X, y)
        unl = y < 0
        errors.append(np.mean(est.transduction_[unl] != (truth[unl] > 0)))
        assert est.n_basis_ == 30 and est.dual_coef_.shape == (30, 1)
    assert np.mean(errors) <= 0.015


def test_g50c_greedy_slack_at_a_tenth_of_the_rows(client):
    # g50c's Table 5.1 size (412 training rows, 21 labels, d = 41) at the graph and setting
    # benchmarks/bench_sparse.py chose on its validation rows
    X, truth = g50c(n=412, seed=3)
    est = SparseLapRLS(n_basis=0.1, gamma_A=1e-6, gamma_I=1e2, nu=1e-3, n_neighbors=50, p=5,
                       random_state=0, client=client)
    errors = []
    for draw, y in _label_draws(truth, 21, 2):
        est.set_params(random_state=draw).fit(X, y, graph=getattr(est, "graph_", None))
        unl = y < 0
        errors.append(np.mean(est.transduction_[unl] != (truth[unl] > 0)))
    assert est.n_basis_ == 41
    assert np.mean(errors) <= 0.11


def test_bases_and_multiclass(client):
    X, y, graph = problem(client, n_classes=3, n_labeled=12)
    for basis in ("random", "lasso", "lars"):
        est = SparseLapRLS(basis=basis, n_basis=8, method="laprls", kernel_params=KP,
                           random_state=0).fit(X, y, graph=graph)
        assert est.basis_.size == 8 and np.unique(est.basis_).size == 8
        assert est.decision_function(X[:4]).shape == (4, 3)
        np.testing.assert_array_equal(est.basis_points_, X[est.basis_])
        if basis != "random":
            assert len(est.gamma_S_) == 3 and min(est.gamma_S_) > 0
    new = X[:5] + 0.01
    K = np.exp(-4.0 * ((new[:, None, :] - est.basis_points_[None]) ** 2).sum(-1))
    np.testing.assert_allclose(est.decision_function(new), K @ est.dual_coef_, rtol=1e-10)


def test_save_and_load(client, tmp_path):
    X, y, graph = problem(client)
    est = SparseLapRLS(n_basis=6, kernel_params=KP, random_state=0).fit(X, y, graph=graph)
    assert ESTIMATORS["SparseLapRLS"] is SparseLapRLS
    save_model(est, tmp_path / "m")
    back = load_model(tmp_path / "m")
    np.testing.assert_array_equal(back.basis_, est.basis_)
    np.testing.assert_allclose(back.decision_function(X), est.decision_function(X))
    given = SparseLapRLS(basis=np.array([1, 4, 9]), kernel_params=KP).fit(X, y, graph=graph)
    save_model(given, tmp_path / "g")
    np.testing.assert_allclose(load_model(tmp_path / "g").predict(X), given.predict(X))


@pytest.mark.parametrize("change, message", [
    (dict(X_nan=True), "non-finite"),
    (dict(y="one"), "only one labeled class"),
    (dict(y="none"), "no labeled rows"),
    (dict(n_basis=41), "n_basis=41 is out of range"),
    (dict(n_basis=0), "n_basis"),
    (dict(n_basis=1.5), "n_basis"),
    (dict(basis=[0, 40]), "basis index 40"),
    (dict(basis=[-1, 3]), "basis index -1"),
    (dict(basis=[3, 3]), "repeats"),
    (dict(basis=[0.5, 2]), "integer row indices"),
])
def test_bad_input_is_refused_before_any_work(client, monkeypatch, change, message):
    X, y, _ = problem(client)
    X = X.copy()
    if change.pop("X_nan", False):
        X[7, 1] = np.nan
    labels = change.pop("y", None)
    if labels == "one":
        y = np.where(y == 1, -1, y)
    elif labels == "none":
        y = np.full_like(y, -1)

    def no_work(*args, **kwargs):
        raise AssertionError("a graph was built before the input was checked")

    monkeypatch.setattr(sparse_module, "estimator_graphs", no_work)
    with pytest.raises(ValueError, match=message):
        SparseLapRLS(kernel_params=KP, **change).fit(X, y)


@pytest.mark.parametrize("method, criterion", [("slack", "loo"), ("decoupled", "cv")])
def test_gamma_I_auto_keeps_the_supervised_candidate_and_the_shared_rule(client, method,
                                                                         criterion):
    X, y, graph = problem(client, n=60, n_labeled=24)
    est = SparseLapRLS(n_basis=10, method=method, kernel_params=KP,
                       random_state=0).fit(X, y, graph=graph)
    rows = est.selection_
    assert rows[0]["gamma_I"] == 0.0 and [r["gamma_I"] for r in rows] == list(AUTO_GAMMA_I)
    assert sum(r["chosen"] for r in rows) == 1
    assert est.gamma_I_ == next(r["gamma_I"] for r in rows if r["chosen"])
    assert all(r["criterion"] == criterion for r in rows)
    few = problem(client, n=60, n_labeled=4)[1]
    with pytest.warns(SelectionWarning):
        lone = SparseLapRLS(n_basis=10, method=method, kernel_params=KP,
                            random_state=0).fit(X, few, graph=graph)
    assert lone.gamma_I_ == 1e4 and lone.selection_ == []


def test_cli_fit_stores_the_basis_and_predict_scores_on_the_workers(client, tmp_path):
    data = tmp_path / "train.svm"
    X, y = write_problem(data, n=150, unlabeled_every=3)
    model = tmp_path / "model"
    with client.as_current():
        assert main(["fit", "--data", str(data), "--algorithm", "sparselaprls", "--n-basis",
                     "0.1", "--basis", "greedy", "--method", "slack", "--nu", "0.5",
                     "--gamma-I", "100", "--kernel-params", '{"gamma": 0.1}',
                     "--n-neighbors", "8", "--model-out", str(model),
                     "--outputs", str(tmp_path / "fit.out")]) == 0
        assert main(["predict", "--model", str(model), "--data", str(data),
                     "--outputs", str(tmp_path / "pred.out")]) == 0
    doc = json.loads((model / "model.json").read_text())
    assert doc["estimator"] == "SparseLapRLS" and doc["n_basis_"] == 15
    assert doc["params"]["n_basis"] == 0.1 and doc["params"]["nu"] == 0.5
    # the model keeps its 15 basis rows (CSR, as read), nothing of the 150 training rows
    with np.load(model / "arrays.npz") as arrays:
        assert all(arrays[k].size < 15 * X.shape[1] + 16 for k in arrays.files)
    est = load_model(model)
    assert est.basis_points_.shape == (15, X.shape[1])
    points = est.basis_points_.toarray()
    np.testing.assert_allclose(points, X[est.basis_], rtol=1e-14)  # as the file wrote them
    # predict read the file as row blocks and scored them on the workers: n_basis kernel
    # evaluations a row
    K = np.exp(-0.1 * ((X[:, None, :] - points[None]) ** 2).sum(-1))
    np.testing.assert_allclose(np.loadtxt(tmp_path / "pred.out"), K @ est.dual_coef_[:, 0],
                               rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(np.loadtxt(tmp_path / "fit.out"),
                               np.loadtxt(tmp_path / "pred.out"), rtol=1e-9, atol=1e-12)
    truth = write_problem(tmp_path / "full.svm", n=150)[1]
    hidden = y == 0
    assert np.mean(np.sign(np.loadtxt(tmp_path / "pred.out"))[hidden] == truth[hidden]) > 0.8


@pytest.mark.parametrize("flags, message", [
    (["--algorithm", "sparselaprls", "--method", "sigmoidal"],
     "'method' parameter of SparseLapRLS"),
    (["--algorithm", "sparselaprls", "--n-basis", "0"], "'n_basis' parameter of SparseLapRLS"),
    (["--algorithm", "sparselaprls", "--basis", "best"], "'basis' parameter of SparseLapRLS"),
    (["--algorithm", "sparselaprls", "--rho", "-1"], "'rho' parameter of SparseLapRLS"),
    (["--algorithm", "laprls", "--n-basis", "10"], "does not apply"),
])
def test_cli_refuses_bad_sparse_flags_before_reading(tmp_path, capsys, flags, message):
    model = tmp_path / "model"
    rc = main(["fit", "--data", str(tmp_path / "missing.svm"), "--model-out", str(model),
               *flags])
    assert rc == 2
    assert message in capsys.readouterr().err
    assert not model.exists()


def test_cli_n_basis_is_a_count_or_a_share(capsys):
    from dask_ssl.cli import build_parser

    parse = build_parser().parse_args
    base = ["fit", "--data", "x.svm", "--model-out", "m", "--algorithm", "sparselaprls"]
    assert parse(base + ["--n-basis", "500"]).n_basis == 500
    assert isinstance(parse(base + ["--n-basis", "500"]).n_basis, int)
    assert parse(base + ["--n-basis", "0.05"]).n_basis == 0.05
    with pytest.raises(SystemExit):
        parse(base + ["--n-basis", "five"])
    assert "expected a row count (500) or a share" in capsys.readouterr().err


def test_shipped_sparse_workflow(client, tmp_path):
    """workflows/sparse-moons.yaml as shipped: GREEDY+SLACK on two moons, one label a class,
    labels the held-out rows right and stores a model of its 30 basis rows."""
    report = run_shipped("sparse-moons.yaml", tmp_path, client)
    assert report["split"]["n_labeled"] == 2 and report["split"]["n_test"] == 100
    assert report["metrics"]["error"] <= 0.02 and report["metrics"]["error_unlabeled"] <= 0.02
    model = store_for(report["parameters"]).load()
    assert type(model).__name__ == "SparseLapRLS" and model.n_basis_ == 30
    assert model.basis_points_.shape == (30, 2) and model.dual_coef_.shape == (30, 1)


def test_sigmoid_method_is_a_stationary_point_of_eq_5_5(client):
    # Eq 5.5 written out densely here (M dense, the sigmoid explicit), its gradient by central
    # differences: the fit is a stationary point below its supervised start
    X, y, graph = problem(client)
    J = np.array([1, 5, 9, 14, 20, 33])
    est = SparseLapRLS(method="sigmoid", basis=J, gamma_A=1e-3, gamma_I=30.0, rho=2.0,
                       kernel_params=KP, tol=1e-9, max_iter=5000).fit(X, y, graph=graph)
    lab = y >= 0
    l = int(lab.sum())
    Y = np.where(y == 1, 1.0, -1.0)[lab]
    a, g = l * 1e-3, l * est.gamma_I_effective_
    M = regularizer_matrix(graph, normalized=True, p=1)
    KNJ = np.exp(-4.0 * ((X[:, None, :] - X[J][None]) ** 2).sum(-1))

    def R(b):
        s = 1.0 / (1.0 + np.exp(-2.0 * (KNJ @ b)))
        return (0.5 * a * b @ KNJ[J] @ b + 0.5 * g * s @ M @ s
                + 0.5 * np.sum((Y - KNJ[lab] @ b) ** 2))

    def grad(b, h=1e-6):
        return np.array([(R(b + h * e) - R(b - h * e)) / (2 * h) for e in np.eye(b.size)])

    beta = est.dual_coef_[:, 0]
    b0 = np.linalg.solve(a * KNJ[J] + KNJ[lab].T @ KNJ[lab], KNJ[lab].T @ Y)
    np.testing.assert_allclose(est.objective_, 2.0 / l * R(beta), rtol=1e-10)
    assert R(beta) < R(b0) - 1e-3 * abs(R(b0))
    assert np.linalg.norm(grad(beta)) <= 1e-4 * np.linalg.norm(grad(b0))
    # the solver's analytic gradient is the derivative of Eq 5.5
    b = np.random.default_rng(0).normal(size=J.size)
    value, analytic = solve.sigmoid_objective(b, M, lab.astype(float),
                                              np.where(lab, y * 2.0 - 1, 0), a, g, 2.0, KNJ,
                                              KNJ[J])
    assert value == pytest.approx(R(b), rel=1e-12)
    np.testing.assert_allclose(analytic, grad(b), rtol=1e-5, atol=1e-7)


def test_laprls_leave_one_out_on_the_basis_equals_refits_without_each_row(client):
    from dask_ssl.models._sparse_selection import loo_outputs

    X, y, graph = problem(client, n=40, n_labeled=10)
    M = regularizer_matrix(graph, normalized=True, p=1, sparse=True)
    K = np.exp(-4.0 * ((X[:, None, :] - X[None]) ** 2).sum(-1))
    J = np.array([1, 5, 9, 14, 22, 30, 37])
    lab = y >= 0
    Ybar = np.where(lab, np.where(y == 1, 1.0, -1.0), 0.0)[:, None]
    L = np.flatnonzero(lab)
    KNJ = K[:, J]
    for a, g in ((1e-3, 0.0), (1e-2, 3.0)):
        loo = loo_outputs(KNJ[L], KNJ[J], KNJ.T @ (M @ KNJ), Ybar[L], a, g)
        for pos, i in enumerate(L):
            keep = lab.copy()
            keep[i] = False
            quad = solve.laprls_quadratic(M, keep, Ybar * keep[:, None], a, g)
            beta = solve.fit_on_basis(quad, lambda idx: KNJ, J).beta
            np.testing.assert_allclose(loo[pos], KNJ[i] @ beta, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("g", [0.0, 3.0])
def test_slack_leave_one_out_on_the_basis_equals_refits_without_each_row(client, g):
    from dask_ssl.models._sparse_selection import slack_loo_outputs

    X, y, graph = problem(client, n=40, n_labeled=10, n_classes=3)
    M = regularizer_matrix(graph, normalized=True, p=1, sparse=True)
    K = np.exp(-4.0 * ((X[:, None, :] - X[None]) ** 2).sum(-1))
    J = np.array([1, 5, 9, 14, 22, 30, 37])
    lab = y >= 0
    Ybar = np.where(lab[:, None], np.where(y[:, None] == np.arange(3), 1.0, -1.0), 0.0)
    L = np.flatnonzero(lab)
    KNJ, nu = K[:, J], 0.7
    fsys = solve.FSystem(M, lab + nu, g) if g > 0 else None
    loo = slack_loo_outputs(KNJ, J, lab, Ybar, fsys, M, nu, [1e-3, 1e-1])
    for a, held_out in zip((1e-3, 1e-1), loo):
        for pos, i in enumerate(L):
            keep = lab.copy()
            keep[i] = False
            quad = solve.slack_quadratic(solve.FSystem(M, keep + nu, g), Ybar * keep[:, None],
                                         a, nu, M, keep)
            beta = solve.fit_on_basis(quad, lambda idx: KNJ, J).beta
            np.testing.assert_allclose(held_out[pos], KNJ[i] @ beta, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("method", ["laprls", "slack"])
def test_auto_keeps_the_supervised_fit_where_labels_ignore_the_clusters(client, method):
    # a random linear label over isotropic noise: no cluster for the graph to follow
    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 5))
    truth = (X @ rng.standard_normal(5) > 0).astype(int)
    y = np.full(200, -1)
    y[:40] = truth[:40]
    est = SparseLapRLS(method=method, gamma_A="auto", n_basis=20, random_state=0,
                       client=client).fit(X, y)
    chosen = next(r for r in est.selection_ if r["chosen"])
    assert est.gamma_I_ == 0.0 == chosen["gamma_I"] and est.gamma_A_ == chosen["gamma_A"]
    assert {r["criterion"] for r in est.selection_} == {"loo"}
    assert len(est.selection_) == 7 * len(AUTO_GAMMA_I)
    # the fit is the supervised sparse model on the same basis at the chosen gamma_A
    sup = SparseLapRLS(method=method, basis=est.basis_, gamma_A=est.gamma_A_, gamma_I=0.0,
                       client=client).fit(X, y, graph=est.graph_)
    np.testing.assert_allclose(est.dual_coef_, sup.dual_coef_, rtol=1e-8, atol=1e-10)
    assert est.selection_cost_["seconds"] > 0


@pytest.mark.parametrize("method", ["laprls", "slack", "decoupled"])
def test_auto_on_two_moons_with_five_labels_a_class(client, method):
    # LapRLS's own check (tests/test_manifold_selection.py) at a twentieth of the rows
    X, y = two_moons(n=1000, noise=0.1, seed=0)
    y = (y > 0).astype(int)
    train = labels_per_class(y, 5, seed=1)
    est = SparseLapRLS(method=method, gamma_A="auto" if method != "decoupled" else 1e-6,
                       n_basis=0.05, random_state=0, client=client).fit(X, train)
    assert est.gamma_I_ > 0 and est.n_basis_ == 50
    hidden = train == -1
    assert np.mean(est.transduction_[hidden] != y[hidden]) <= 0.01
    # the chosen row is the fit: the same setting given by hand on the same basis
    fixed = SparseLapRLS(method=method, basis=est.basis_, gamma_A=est.gamma_A_,
                         gamma_I=est.gamma_I_, client=client).fit(X, train, graph=est.graph_)
    np.testing.assert_allclose(est.dual_coef_, fixed.dual_coef_, rtol=1e-8, atol=1e-10)


def test_auto_gamma_A_is_stored_and_refused_for_other_methods(client, tmp_path):
    X, y, graph = problem(client, n=60, n_labeled=24)
    est = SparseLapRLS(method="laprls", gamma_A="auto", n_basis=10, kernel_params=KP,
                       random_state=0).fit(X, y, graph=graph)
    save_model(est, tmp_path / "m")
    doc = json.loads((tmp_path / "m" / "model.json").read_text())
    back = load_model(tmp_path / "m")
    assert back.gamma_A_ == est.gamma_A_ and back.selection_ == est.selection_
    assert doc["selection_cost_"]["round_trips"] >= 0
    # a model stored before gamma_A_ existed loads with the given gamma_A
    given = SparseLapRLS(method="laprls", gamma_A=1e-3, gamma_I=0.0, n_basis=10,
                         kernel_params=KP, random_state=0).fit(X, y, graph=graph)
    save_model(given, tmp_path / "old")
    doc = json.loads((tmp_path / "old" / "model.json").read_text())
    del doc["gamma_A_"]
    (tmp_path / "old" / "model.json").write_text(json.dumps(doc))
    assert load_model(tmp_path / "old").gamma_A_ == 1e-3
    for method in ("decoupled", "sigmoid"):
        with pytest.raises(ValueError, match="gamma_A='auto'"):
            SparseLapRLS(gamma_A="auto", method=method, kernel_params=KP).fit(X, y,
                                                                              graph=graph)
    few = problem(client, n=60, n_labeled=4)[1]
    with pytest.warns(SelectionWarning, match="gamma_A and gamma_I"):
        lone = SparseLapRLS(method="laprls", gamma_A="auto", n_basis=10, kernel_params=KP,
                            random_state=0).fit(X, few, graph=graph)
    assert (lone.gamma_A_, lone.gamma_I_, lone.selection_) == (1e-6, 1e4, [])


def test_cli_gamma_A_auto_selects_on_the_basis(client, tmp_path):
    data = tmp_path / "train.svm"
    write_problem(data, n=150, unlabeled_every=3)
    model = tmp_path / "model"
    with client.as_current():
        assert main(["fit", "--data", str(data), "--algorithm", "sparselaprls", "--n-basis",
                     "0.1", "--method", "laprls", "--gamma-A", "auto",
                     "--kernel-params", '{"gamma": 0.1}', "--n-neighbors", "8",
                     "--model-out", str(model)]) == 0
    doc = json.loads((model / "model.json").read_text())
    assert doc["params"]["gamma_A"] == "auto"
    chosen = next(r for r in doc["selection_"] if r["chosen"])
    assert (doc["gamma_A_"], doc["gamma_I_"]) == (chosen["gamma_A"], chosen["gamma_I"])
    assert doc["selection_cost_"]["seconds"] > 0


@pytest.mark.parametrize("nu", [None, 0.3], ids=["laprls", "slack"])
def test_greedy_prefix_coefficients_are_the_minimizer_on_the_prefix(client, nu):
    # basis="auto" scores the greedy's prefixes from its Cholesky factor: each must be the
    # exact minimizer on those functions, as a fresh dense solve on the prefix gives it
    quad, cols, _ = _setup(client, nu)
    fit = solve.greedy_basis(quad, cols, 12, 6, np.random.default_rng(1))
    for k in (1, 5, 12):
        alone = solve.fit_on_basis(quad, cols, fit.basis[:k])
        np.testing.assert_allclose(solve.prefix_coefs(fit, k), alone.beta, rtol=1e-8,
                                   atol=1e-10)
    np.testing.assert_allclose(solve.prefix_coefs(fit, 12), fit.beta, rtol=1e-10)


def _hidden_fold_errors(est, X, y, graph, fold_rows, **params):
    """Errors on ``fold_rows`` of SparseLapRLS(**params) fitted with those labels hidden."""
    hidden = y.copy()
    hidden[fold_rows] = -1
    other = SparseLapRLS(**params).fit(X, hidden, graph=graph)
    return int(np.sum(other.predict(X[fold_rows]) != y[fold_rows]))


def test_auto_basis_is_checked_on_labels_its_basis_never_saw(client):
    # the greedy basis is regrown without each fold's labels: the held-out errors in
    # basis_selection_ are those of whole refits with that fold hidden, so a basis grown on
    # the labels it is scored on (whose leave-one-out is optimistic) cannot pass itself off
    from dask_ssl.models._graph_weight import truth_of
    from dask_ssl.models._selection import fold_of

    X, y, graph = problem(client, n=60, n_labeled=24)
    params = dict(method="slack", gamma_A=1e-3, gamma_I=30.0, nu=0.5, kernel_params=KP,
                  n_basis=12, kappa=8, random_state=2)
    est = SparseLapRLS(**params).fit(X, y, graph=graph)
    sel = est.basis_selection_
    assert [(r["basis"], r["n_basis"]) for r in sel] == [
        ("greedy", 3), ("greedy", 6), ("greedy", 9), ("greedy", 12), ("random", 12)]
    assert {r["criterion"] for r in sel} == {"cv"} and sum(r["chosen"] for r in sel) == 1
    L = np.flatnonzero(y >= 0)
    fold = fold_of(truth_of(np.where(y[L] == 1, 1.0, -1.0)[:, None]), 4)
    for row in (sel[1], sel[3], sel[4]):
        given = dict(params, basis=row["basis"], n_basis=row["n_basis"])
        assert row["errors"] == sum(_hidden_fold_errors(est, X, y, graph, L[fold == f], **given)
                                    for f in range(4))
    # the fit is the chosen candidate's, on all the labels
    chosen = next(r for r in sel if r["chosen"])
    again = SparseLapRLS(**dict(params, basis=chosen["basis"],
                                n_basis=chosen["n_basis"])).fit(X, y, graph=graph)
    np.testing.assert_array_equal(est.basis_, again.basis_)
    np.testing.assert_allclose(est.dual_coef_, again.dual_coef_, rtol=1e-8, atol=1e-10)
    # the whole greedy basis is kept unless a candidate errs less beyond the noise
    default = sel[3]
    assert chosen is default or eligible(chosen["errors"], default["errors"], chosen["passed"])


def stored_before(est, field, tmp_path):
    """``est`` stored: ``field`` round-trips through ``model.json``; then the model loaded
    from a ``model.json`` without it, as one stored before ``field`` existed."""
    save_model(est, tmp_path / "m")
    assert getattr(load_model(tmp_path / "m"), field) == getattr(est, field)
    doc = json.loads((tmp_path / "m" / "model.json").read_text())
    del doc[field]
    (tmp_path / "m" / "model.json").write_text(json.dumps(doc))
    return load_model(tmp_path / "m")


def test_auto_basis_is_stored_and_warns_with_too_few_labels(client, tmp_path):
    X, y, graph = problem(client, n=60, n_labeled=24)
    est = SparseLapRLS(method="slack", n_basis=10, kernel_params=KP, random_state=0).fit(
        X, y, graph=graph)
    assert len(est.basis_selection_) == 5
    # a model stored before basis="auto" existed loads with no basis selection
    assert stored_before(est, "basis_selection_", tmp_path).basis_selection_ == []
    few = problem(client, n=60, n_labeled=4)[1]
    with pytest.warns(SelectionWarning, match="greedy basis is used unchecked"):
        lone = SparseLapRLS(method="slack", n_basis=10, gamma_I=30.0, kernel_params=KP,
                            random_state=0).fit(X, few, graph=graph)
    greedy = SparseLapRLS(method="slack", n_basis=10, gamma_I=30.0, kernel_params=KP,
                          basis="greedy", random_state=0).fit(X, few, graph=graph)
    assert lone.basis_selection_ == []
    np.testing.assert_array_equal(lone.basis_, greedy.basis_)


def test_held_out_transduction_equals_refits_without_each_fold(client):
    # every fold refitted by a dense solve: its labels hidden (fidelity 0 unless the row's
    # component then holds no label), its rows scored; a component without labels is held
    # at 0 rather than left singular. The driver's factors and the workers' block CG (a
    # graph beyond DENSE_MAX_ROWS) give those outputs.
    from dask_ssl.graph.diagnostics import graph_diagnostics
    from dask_ssl.models._graph_weight import truth_of
    from dask_ssl.models._selection import CV_FOLDS, fold_of
    from dask_ssl.models._sparse_graph import driver_solve, held_out_transduction

    X, y, W, _ = small_problem(client, n=60, n_labeled=16, n_classes=3)
    W = sp.csr_matrix(sp.block_diag([W, sp.csr_matrix([[0.0, 1.0], [1.0, 0.0]])]))
    graph = Graph.from_scipy(W, client=client, n_blocks=2)
    y = np.concatenate([y, [-1, -1]])
    labeled = y >= 0
    Ybar = np.column_stack([np.where(~labeled, 0.0, np.where(y == c, 1.0, -1.0))
                            for c in range(3)])
    truth = truth_of(Ybar[labeled])
    weights = [0.7, 30.0]
    L = np.flatnonzero(labeled)
    fold = fold_of(truth, CV_FOLDS)
    expected = []
    for p in (1, 2):
        M = np.linalg.matrix_power(laplacian_matrix(W, normalized=True), p)
        for g in weights:
            out = np.empty((L.size, 3))
            for f in range(CV_FOLDS):
                train = labeled.copy()
                train[L[fold == f]] = False
                fidelity = train.astype(float)
                fidelity[60:] = 1.0   # the two-row component holds no label
                F = np.linalg.solve(g * M + np.diag(fidelity), Ybar * train[:, None])
                out[fold == f] = F[L[fold == f]]
            expected.append(out)
    diag = graph_diagnostics(graph)
    M = laplacian_matrix(W, normalized=True)
    on_driver = held_out_transduction(driver_solve(lambda a, g: solve.FSystem(M, a, g)), Ybar,
                                      labeled, truth, diag, weights)
    for got, want in zip(on_driver, expected[:2]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    est = SparseLapRLS(solver="graph")
    on_workers = held_out_transduction(est._scoring_solve(graph, 2, 62), Ybar, labeled, truth,
                                       diag, weights)
    for got, want in zip(on_workers, expected[2:]):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


def test_auto_graph_is_where_graph_transduction_errs_least_and_is_the_graph_fitted(client):
    X, _ = two_moons(n=240, noise=0.12, seed=3)
    truth = (X[:, 1] > 0.25).astype(int)
    y = labels_per_class(truth, 8, seed=3)
    est = SparseLapRLS(method="decoupled", n_basis=24, kernel_params=KP, random_state=0,
                       client=client).fit(X, y)
    sel = est.graph_selection_
    assert len(sel) == 2 * (len(AUTO_GAMMA_I) - 1)
    assert {(r["n_neighbors"], r["p"]) for r in sel} == {(10, 1), (50, 5)}
    assert {r["gamma_I"] for r in sel} == set(AUTO_GAMMA_I[1:])
    chosen = [r for r in sel if r["chosen"]]
    assert len(chosen) == 1
    assert (chosen[0]["errors"], chosen[0]["squared"]) == min((r["errors"], r["squared"])
                                                              for r in sel)
    assert (est.n_neighbors_, est.p_) == (chosen[0]["n_neighbors"], chosen[0]["p"])
    # the fit is the one on the chosen graph, given outright
    given = SparseLapRLS(method="decoupled", n_basis=24, kernel_params=KP, random_state=0,
                         n_neighbors=est.n_neighbors_, p=est.p_, client=client).fit(X, y)
    assert given.graph_selection_ == []
    np.testing.assert_allclose(est.decision_function(X), given.decision_function(X),
                               rtol=1e-8, atol=1e-10)
    # p alone "auto" on a given graph: only the power is chosen
    on_graph = SparseLapRLS(method="decoupled", n_basis=24, kernel_params=KP, random_state=0,
                            client=client).fit(X, y, graph=est.graph_)
    assert {(r["n_neighbors"], r["p"]) for r in on_graph.graph_selection_} == {(None, 1),
                                                                              (None, 5)}
    assert on_graph.n_neighbors_ is None


def test_auto_graph_is_not_scored_without_a_graph_term_or_with_too_few_labels(client,
                                                                             tmp_path):
    X, _ = two_moons(n=120, noise=0.1, seed=1)
    truth = (X[:, 1] > 0.25).astype(int)
    sup = SparseLapRLS(method="decoupled", gamma_I=0.0, n_basis=12, kernel_params=KP,
                       client=client).fit(X, labels_per_class(truth, 6, seed=1))
    assert (sup.graph_selection_, sup.n_neighbors_, sup.p_) == ([], 10, 1)
    with pytest.warns(SelectionWarning, match=r"the graph \(n_neighbors, p\)"):
        few = SparseLapRLS(method="decoupled", gamma_I=1e2, n_basis=12, kernel_params=KP,
                           client=client).fit(X, labels_per_class(truth, 2, seed=1))
    assert (few.graph_selection_, few.n_neighbors_, few.p_) == ([], 10, 1)
    # stored with the model; a model stored before the graph was chosen loads without it
    est = SparseLapRLS(method="decoupled", gamma_I=1e2, n_basis=12, kernel_params=KP,
                       client=client).fit(X, labels_per_class(truth, 6, seed=1))
    assert len(est.graph_selection_) == 2
    back = stored_before(est, "graph_selection_", tmp_path)
    assert back.graph_selection_ == []
    np.testing.assert_allclose(back.decision_function(X), est.decision_function(X))


def test_decoupled_auto_scores_zero_as_the_supervised_fit_and_keeps_it_on_noise(client):
    # the gamma_I = 0 candidate's held-out outputs are those of the decoupled method's own
    # supervised fit (a basis holding the labeled rows) refitted on each fold's labels
    from dask_ssl.models._graph_weight import truth_of
    from dask_ssl.models._selection import CV_FOLDS, fold_of
    from dask_ssl.models._sparse_graph import held_out_rls
    from sklearn.metrics.pairwise import rbf_kernel

    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 5))
    truth = (X @ rng.standard_normal(5) > 0).astype(int)
    y = np.full(200, -1)
    y[:40] = truth[:40]
    Yl = np.where(truth[:40] == 1, 1.0, -1.0)[:, None]
    fold = fold_of(truth_of(Yl), CV_FOLDS)
    K = rbf_kernel(X[:40], gamma=KP["gamma"])
    out = held_out_rls(K, Yl, fold, 1e-3)
    for f in range(CV_FOLDS):
        yf = y.copy()
        yf[np.flatnonzero(fold == f)] = -1
        sup = SparseLapRLS(method="decoupled", gamma_I=0.0, gamma_A=1e-3, n_basis=40,
                           kernel_params=KP, client=client).fit(X, yf)
        np.testing.assert_allclose(out[fold == f, 0],
                                   sup.decision_function(X[:40][fold == f]), rtol=1e-7,
                                   atol=1e-9)
    # a random linear label over isotropic noise and a linear kernel (as LapRLS's own check:
    # with an RBF kernel at gamma_A = 1e-6 kernel RLS nearly interpolates and a graph term
    # rightly wins as a smoother): the supervised candidate stays, and the fit is it
    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 10))
    y = labels_per_class((X @ rng.normal(size=10) > 0).astype(int), 40, seed=4)
    kw = dict(method="decoupled", kernel="linear", n_basis=80, client=client)
    est = SparseLapRLS(random_state=0, **kw).fit(X, y)
    assert est.gamma_I_ == 0.0 and est.selection_[0]["chosen"]
    assert {r["criterion"] for r in est.selection_} == {"cv"}
    sup = SparseLapRLS(gamma_I=0.0, **kw).fit(X, y)
    np.testing.assert_allclose(est.decision_function(X), sup.decision_function(X),
                               rtol=1e-8, atol=1e-10)


def test_auto_basis_without_the_graph_term_when_a_fold_holds_at_most_d_labels(client):
    # 12 labels, d = 10: the basis is checked (more labels than functions), but a fold's
    # training labels (9) fit in d, where a fit would take the labeled rows as its basis;
    # the check grows and cuts the greedy basis there too
    X, y, graph = problem(client, n=60, n_labeled=12)
    est = SparseLapRLS(method="decoupled", gamma_I=0.0, n_basis=10, kernel_params=KP,
                       random_state=0).fit(X, y, graph=graph)
    assert len(est.basis_selection_) == 5 and est.n_basis_ <= 10


def test_run_report_plots_the_graph_selection(client, tmp_path):
    # the shipped sparse workflow with enough labels to choose its graph and gamma_I: the
    # report carries the graph candidates and plots them beside the gamma_I ones, and the
    # greedy's objective trace (plain numbers) as its history
    report = run_shipped("sparse-moons.yaml", tmp_path, client,
                         ["split.labeled_per_class=6", "estimator.params.gamma_I=auto",
                          "estimator.params.method=decoupled", "outputs.plots=true"])
    rows = report["graph_selection"]
    assert {(r["n_neighbors"], r["p"]) for r in rows} == {(10, 1), (50, 5)}
    assert sum(r["chosen"] for r in rows) == 1
    assert report["files"]["graph_selection"] == "graph-selection.png"
    assert report["files"]["history"] == "history.png"
    (run_dir,) = (tmp_path / "runs" / "sparse-moons").iterdir()
    assert (run_dir / "graph-selection.png").stat().st_size > 0


def test_decoupled_with_a_graph_term_takes_the_greedy_basis_unchecked(client):
    # its basis fits the transduction's scores on every row: "auto" is the greedy basis, no
    # fold regrown; without the graph term (the supervised fit on the labels) it is checked
    X, y, graph = problem(client, n=60, n_labeled=24)
    kw = dict(method="decoupled", n_basis=10, kernel_params=KP, random_state=0)
    auto = SparseLapRLS(gamma_I=30.0, **kw).fit(X, y, graph=graph)
    greedy = SparseLapRLS(gamma_I=30.0, basis="greedy", **kw).fit(X, y, graph=graph)
    assert auto.basis_selection_ == []
    np.testing.assert_array_equal(auto.basis_, greedy.basis_)
    np.testing.assert_allclose(auto.dual_coef_, greedy.dual_coef_, rtol=1e-12)
    supervised = SparseLapRLS(gamma_I=0.0, **kw).fit(X, y, graph=graph)
    assert len(supervised.basis_selection_) == 5
