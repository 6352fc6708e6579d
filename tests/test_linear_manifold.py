"""Linear LapRLS / LapSVM and Nystrom features against dense NumPy/SciPy solutions on small data."""

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp

from dask_ssl.graph import data_graph
from dask_ssl.kernels import NystromFeatures, kernel_matrix
from dask_ssl.models import L2SVM, RLS, TSVM, LinearLapRLS, LinearLapSVM
from dask_ssl.models.artifact import load_model, save_model
from dask_ssl.models._selection import chosen_row

from ._labels import labels_per_class as _labels_per_class


def dense_M(W, normalized, p):
    """``L^p`` of a weight matrix; the normalized L leaves isolated rows at zero."""
    W = W.toarray()
    deg = W.sum(axis=1)
    if normalized:
        inv = np.where(deg > 0, 1.0 / np.sqrt(np.where(deg > 0, deg, 1.0)), 0.0)
        L = np.diag((deg > 0).astype(float)) - inv[:, None] * W * inv[None, :]
    else:
        L = np.diag(deg) - W
    return np.linalg.matrix_power(L, p)


# d = 15 (16 columns with the bias) and one-column CG systems: the Laplacian product kernels are
# compiled per column count on each worker, and these two counts serve every test here.
def problem(seed=0, n=150, d=15, n_labeled=24, n_classes=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    truth = np.digitize(X[:, 0] + 0.5 * X[:, 1], np.quantile(X[:, 0] + 0.5 * X[:, 1],
                                                             np.linspace(0, 1, n_classes + 1)[1:-1]))
    y = np.full(n, -1)
    lab = rng.choice(n, n_labeled, replace=False)
    y[lab] = truth[lab]
    y[lab[:n_classes]] = np.arange(n_classes)
    return X, y


def eq3(X, y, M, gamma_A, gamma_I, classes):
    """Linear paper Eq 3 with the bias as a constant feature: one column per class."""
    Xa = np.column_stack([X, np.ones(X.shape[0])])
    lab = np.flatnonzero(y != -1)
    l = lab.size
    A = Xa[lab].T @ Xa[lab] + gamma_A * l * np.eye(Xa.shape[1]) + gamma_I * l * Xa.T @ M @ Xa
    Y = np.column_stack([np.where(y[lab] == c, 1.0, -1.0) for c in classes])
    return np.linalg.solve(A, Xa[lab].T @ Y).T


@pytest.mark.parametrize("solver,n_blocks", [("gram", 1), ("gram", 2), ("gram", 3),
                                             ("cg", 1), ("cg", 3)])
def test_laprls_solves_eq3(client, solver, n_blocks):
    X, y = problem(n_classes=3 if solver == "gram" else 2)
    X = sp.csr_matrix(X) if solver == "cg" else X
    m = LinearLapRLS(gamma_A=0.01, gamma_I=0.3, graph_normalization="none", p=2, solver=solver,
                     tol=1e-13, client=client, n_blocks=n_blocks).fit(X, y)
    Xd = X.toarray() if sp.issparse(X) else X
    # two classes: one column, positive = classes_[1] (as every linear estimator here)
    targets = m.classes_ if m.classes_.size > 2 else m.classes_[1:]
    W = eq3(Xd, y, dense_M(m.graph_.to_scipy(), True, 2), 0.01, 0.3, targets)
    got = np.column_stack([m.coef_, m.intercept_])
    np.testing.assert_allclose(got, W, rtol=1e-8, atol=1e-8 * np.abs(W).max())
    if solver == "cg":
        assert m.round_trips_per_iter_ == 3  # p + 1
        assert np.all(m.n_iter_ > 0)


@pytest.mark.parametrize("graph_normalization", ["n2", "edges", "none"])
def test_gamma_I_is_the_thesis_weight_after_the_normalization(client, graph_normalization):
    """Eq 3's coefficient is gamma_I_eff: gamma_I / n^2 by default, gamma_I / sum W_ij, or
    gamma_I as given (the linear paper's gamma_I, what these estimators took before they had
    graph_normalization)."""
    X, y = problem(seed=8, n_classes=2)
    n, g = X.shape[0], 0.3
    graph = LinearLapRLS(gamma_I=0.0, client=client, random_state=0).fit(X, y).graph_
    W = graph.to_scipy()
    gamma_I = {"n2": g * n ** 2, "edges": g * W.sum(), "none": g}[graph_normalization]
    m = LinearLapRLS(gamma_A=0.01, gamma_I=gamma_I, graph_normalization=graph_normalization,
                     client=client).fit(X, y, graph=graph)
    assert m.gamma_I_ == gamma_I
    assert m.gamma_I_effective_ == pytest.approx(g, rel=1e-12)
    W3 = eq3(X, y, dense_M(W, True, 1), 0.01, g, m.classes_[1:])
    np.testing.assert_allclose(np.column_stack([m.coef_, m.intercept_]), W3, rtol=1e-9,
                               atol=1e-9 * np.abs(W3).max())


def test_auto_chooses_the_same_share_under_every_normalization(client):
    """The candidates are shares of the objective: the chosen coefficient and the fit do not
    depend on graph_normalization; gamma_I_ and the table are in each one's units."""
    X, y = problem(seed=5, n_labeled=60)
    graph = LinearLapRLS(gamma_I=0.0, client=client, random_state=0).fit(X, y).graph_
    n, total = X.shape[0], graph.to_scipy().sum()
    fits = {norm: LinearLapRLS(gamma_A=1e-3, graph_normalization=norm, client=client)
            .fit(X, y, graph=graph) for norm in ("n2", "edges", "none")}
    ref = fits["none"]
    assert ref.gamma_I_ == ref.gamma_I_effective_ > 0
    for norm, unit in (("n2", 1.0 / n ** 2), ("edges", 1.0 / total)):
        m = fits[norm]
        assert m.gamma_I_effective_ == ref.gamma_I_effective_
        assert m.gamma_I_ == pytest.approx(ref.gamma_I_ / unit, rel=1e-12)
        assert [r["rho"] for r in m.selection_] == [r["rho"] for r in ref.selection_]
        assert [r["chosen"] for r in m.selection_] == [r["chosen"] for r in ref.selection_]
        for row, base in zip(m.selection_, ref.selection_):
            assert row["gamma_I"] == pytest.approx(base["gamma_I"] / unit, rel=1e-12)
        np.testing.assert_array_equal(m.coef_, ref.coef_)


def test_too_few_labels_take_the_seeds_gamma_I(client):
    from dask_ssl.models._graph_weight import SEED_GAMMA_I
    from dask_ssl.models._selection import SelectionWarning

    X, y = problem(seed=9, n_labeled=4, n_classes=2)
    with pytest.warns(SelectionWarning):
        m = LinearLapRLS(client=client).fit(X, y)
    assert m.gamma_I_ == SEED_GAMMA_I and m.selection_ == []
    assert m.gamma_I_effective_ == SEED_GAMMA_I / X.shape[0] ** 2


def test_laprls_without_graph_term_is_rls(client):
    X, y = problem(seed=1, n_classes=2)
    m = LinearLapRLS(gamma_A=0.02, gamma_I=0.0, client=client).fit(X, y)
    r = RLS(gamma_A=0.02, unlabeled=-1, client=client).fit(X, y)
    np.testing.assert_allclose(m.coef_, r.coef_, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(m.intercept_, r.intercept_, rtol=1e-8, atol=1e-12)
    assert m.objective_ == pytest.approx(r.objective_, rel=1e-9)


@pytest.mark.parametrize("solver", ["gram", "cg"])
def test_lapsvm_without_graph_term_is_l2svm(client, solver):
    X, y = problem(seed=2, n_classes=2)
    m = LinearLapSVM(gamma_A=0.01, gamma_I=0.0, solver=solver, client=client).fit(X, y)
    r = L2SVM(gamma_A=0.01, solver=solver, unlabeled=-1, client=client).fit(X, y)
    assert m.objective_ == pytest.approx(r.objective_, rel=1e-9)


def lapsvm_objective(X, y, M, w, gamma_A, gamma_I):
    Xa = np.column_stack([X, np.ones(X.shape[0])])
    o = Xa @ w
    lab = y != 0
    hinge = np.maximum(0.0, 1.0 - y[lab] * o[lab])
    return 0.5 * gamma_A * w @ w + 0.5 / lab.sum() * hinge @ hinge + 0.5 * gamma_I * o @ M @ o


@pytest.mark.parametrize("solver,n_blocks", [("gram", 2), ("cg", 1), ("cg", 3)])
def test_lapsvm_reaches_dense_optimum(client, solver, n_blocks):
    X, labels = problem(seed=3, n_classes=2)
    y = np.where(labels == -1, 0, np.where(labels == 1, 1, -1))
    gamma_A, gamma_I = 0.01, 0.05
    m = LinearLapSVM(gamma_A=gamma_A, gamma_I=gamma_I, graph_normalization="none",
                     solver=solver, unlabeled=0, client=client, n_blocks=n_blocks).fit(X, y)
    M = dense_M(m.graph_.to_scipy(), True, 1)
    w = np.r_[m.coef_[0], m.intercept_]
    assert lapsvm_objective(X, y, M, w, gamma_A, gamma_I) == pytest.approx(m.objective_, rel=1e-10)
    ref = scipy.optimize.minimize(lambda v: lapsvm_objective(X, y, M, v, gamma_A, gamma_I),
                                  np.zeros(X.shape[1] + 1), method="L-BFGS-B",
                                  options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000}).fun
    assert m.objective_ == pytest.approx(ref, rel=1e-8)
    assert m.objective_ <= ref * (1 + 1e-9)
    if solver == "cg":
        assert m.round_trips_per_iter_ == 2  # p + 1


def test_nystrom_with_every_row_a_landmark_is_exact_laprls(client):
    """Eq 2.12 (thesis ch. 2): alpha = (J K + gamma_A l I + gamma_I l/(u+l)^2 L K)^-1 Y, whose
    objective is twice the feature-space one with the same gamma_A and gamma_I."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(70, 2))
    Xt = rng.normal(size=(9, 2))
    y = np.full(70, -1)
    y[:12] = (X[:12, 0] > 0).astype(int)
    y[:2] = [0, 1]
    gamma_A, gamma_I, n = 0.01, 0.2, 70
    params = {"gamma": 0.5}
    m = LinearLapRLS(gamma_A=gamma_A, gamma_I=gamma_I, kernel="rbf",
                     kernel_params=params, n_components=n, fit_intercept=False, client=client,
                     n_blocks=2).fit(X, y)
    assert m.feature_map_.n_features_out_ == n
    K = kernel_matrix(X, kernel="rbf", kernel_params=params)
    L = dense_M(m.graph_.to_scipy(), True, 1)
    J = np.diag((y != -1).astype(float))
    Y = np.where(y == -1, 0.0, np.where(y == 1, 1.0, -1.0))
    l = 12
    alpha = np.linalg.solve(J @ K + gamma_A * l * np.eye(n) + gamma_I * l / n ** 2 * L @ K, Y)
    np.testing.assert_allclose(m.decision_function(X), K @ alpha, rtol=1e-8,
                               atol=1e-8 * np.abs(K @ alpha).max())
    Kt = kernel_matrix(Xt, X, kernel="rbf", kernel_params=params)
    np.testing.assert_allclose(m.decision_function(Xt), Kt @ alpha, rtol=1e-8,
                               atol=1e-8 * np.abs(Kt @ alpha).max())


def test_nystrom_map_on_blocks_sends_its_landmarks_once_per_worker(client):
    """K_mm^-1/2 of m = 1200 is 11.5 MB: embedded in each block's task it made Dask warn of a
    large graph; scattered, the blocks' features still equal the in-memory map's."""
    import warnings

    from dask_ssl.linalg.rowblocks import RowBlocks

    X = np.random.default_rng(7).normal(size=(1300, 30))
    fm = NystromFeatures(n_components=1200, random_state=0).fit(X)
    assert fm.normalization_.nbytes > 10e6
    blocks = RowBlocks.from_array(X, client=client, n_blocks=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Z = fm.transform(blocks)
    np.testing.assert_allclose(np.vstack(Z.gather(Z.blocks)), fm.transform(X), atol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_nystrom_rbf_default_width_is_scale_of_the_sampled_rows(sparse):
    """Without ``gamma`` the RBF width is scikit-learn's "scale", 1 / (d Var), of the uniform
    sample the landmarks are (features in [0, 1]: far narrower than pairwise_kernels' 1 / d)."""
    rng = np.random.default_rng(6)
    X = rng.random((80, 12)) * (rng.random((80, 12)) < 0.3)
    Xin = sp.csr_matrix(X) if sparse else X
    fm = NystromFeatures(kernel="rbf", n_components=20, random_state=0).fit(Xin)
    rows = X[fm.component_indices_]
    gamma = 1.0 / (12 * rows.var())
    assert fm.kernel_params_ == {"gamma": pytest.approx(gamma, rel=1e-12)}
    assert gamma > 3.0 / 12
    ref = NystromFeatures(kernel="rbf", kernel_params=dict(fm.kernel_params_), n_components=20,
                          random_state=0).fit(Xin)
    np.testing.assert_array_equal(fm.transform(Xin), ref.transform(Xin))
    # a given width is kept as given
    assert NystromFeatures(kernel="rbf", kernel_params={"gamma": 0.7}, n_components=5,
                           random_state=0).fit(Xin).kernel_params_ == {"gamma": 0.7}


def test_a_saved_nystrom_model_keeps_its_fitted_width(client, tmp_path):
    X, y = problem(seed=7, n=60, d=15, n_classes=2)
    m = LinearLapRLS(gamma_I=1e-3, kernel="rbf", n_components=12, n_neighbors=5, client=client,
                     random_state=0).fit(X * 3.0, y)
    loaded = load_model(save_model(m, tmp_path / "model"))
    assert loaded.feature_map_.kernel_params_ == m.feature_map_.kernel_params_
    np.testing.assert_array_equal(loaded.decision_function(X * 3.0), m.decision_function(X * 3.0))


def test_tsvm_with_a_feature_map_fits_and_predicts_in_feature_space(client, tmp_path):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(100, 3))
    y = np.full(100, -1)
    y[:16] = (np.linalg.norm(X[:16], axis=1) > 1.5).astype(int)
    y[:2] = [0, 1]
    kw = dict(kernel="rbf", kernel_params={"gamma": 0.3}, n_components=15,
              landmarks="kmeans++", random_state=0)
    m = TSVM(gamma_A=0.01, gamma_u=1e-4, client=client, **kw).fit(X, y)
    Z = NystromFeatures(**kw).fit(X).transform(X)
    ref = TSVM(gamma_A=0.01, gamma_u=1e-4, client=client).fit(Z, y)
    np.testing.assert_allclose(m.coef_, ref.coef_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(m.decision_function(X), ref.decision_function(Z), rtol=1e-8,
                               atol=1e-10)
    loaded = load_model(save_model(m, tmp_path / "model"))
    np.testing.assert_array_equal(loaded.decision_function(X), m.decision_function(X))


@pytest.mark.parametrize("params,message", [
    ({"gamma_I": -1.0}, "gamma_I"),
    ({"kernel": "nope"}, "'kernel' parameter of"),
    ({"kernel": "rbf", "n_components": 0}, "n_components"),
    ({"p": 0}, "'p' parameter of"),
    ({"n_neighbors": 0}, "'n_neighbors' parameter of"),
    ({"metric": "manhattan"}, "'metric' parameter of"),
    ({"solver": "lu"}, "solver"),
])
def test_bad_parameters_are_refused_before_work(client, params, message):
    X, y = problem(seed=6)
    with pytest.raises(ValueError, match=message):
        LinearLapRLS(client=client, **params).fit(X, y)


def test_fewer_rows_than_neighbors_give_the_graph_they_can_with_one_warning(client):
    X, _ = problem(seed=6)
    with pytest.warns(UserWarning) as record:
        m = LinearLapSVM(n_neighbors=20, client=client).fit(X[:12], np.r_[0, 1, 2, [-1] * 9])
    messages = [str(w.message) for w in record if "n_neighbors" in str(w.message)]
    assert messages == ["n_neighbors=20 needs more than 20 rows; the graph on 12 rows uses "
                        "n_neighbors=11 (every other row a neighbour)"]
    assert m.graph_.to_scipy().nnz == 12 * 11  # complete


def test_sample_weight_is_not_taken(client):
    # a weight would mean a repeated row, which is another node of the graph (see fit)
    X, y = problem(seed=6)
    with pytest.raises(TypeError, match="sample_weight"):
        LinearLapRLS(client=client).fit(X, y, sample_weight=np.ones(len(y)))


def test_a_graph_on_other_rows_is_refused(client):
    X, y = problem(seed=7)
    g = LinearLapRLS(client=client).fit(X, y).graph_
    with pytest.raises(ValueError, match="graph has 150 rows"):
        LinearLapSVM(client=client).fit(X[:100], y[:100], graph=g)


def test_laprls_cg_killed_mid_solve_resumes_from_its_checkpoint(client, tmp_path, monkeypatch):
    """A solve killed after its first save resumes there and reaches the uninterrupted solution
    along the same iterates; a state saved for another system is refused."""
    import json

    from dask_ssl.loop import cg

    X, y = problem(seed=3, n_classes=2)
    kw = dict(gamma_A=1e-3, gamma_I=0.3, p=2, solver="cg", tol=1e-13, client=client, n_blocks=2)
    full = LinearLapRLS(**kw).fit(X, y)
    monkeypatch.setattr(cg, "CG_EVERY", 4)
    assert full.n_iter_ > 2 * cg.CG_EVERY
    ck = tmp_path / "ck"
    original = cg.CGCheckpoint.save

    def dies_on_second_save(self, state):
        if (ck / "state.json").exists():
            raise RuntimeError("killed")
        original(self, state)

    monkeypatch.setattr(cg.CGCheckpoint, "save", dies_on_second_save)
    with pytest.raises(RuntimeError, match="killed"):
        LinearLapRLS(checkpoint=str(ck), **kw).fit(X, y)
    monkeypatch.setattr(cg.CGCheckpoint, "save", original)
    assert json.loads((ck / "state.json").read_text())["k"] == cg.CG_EVERY
    resumed = LinearLapRLS(checkpoint=str(ck), **kw).fit(X, y, resume=True)
    np.testing.assert_allclose(resumed.coef_, full.coef_, rtol=1e-8, atol=0)
    np.testing.assert_allclose(resumed.intercept_, full.intercept_, rtol=1e-8)
    assert resumed.n_iter_ == full.n_iter_
    np.testing.assert_allclose([h["residual"] for h in resumed.history_],
                               [h["residual"] for h in full.history_], rtol=1e-6)
    # another system: other labels, another gamma_I (same shapes, so only the fingerprint tells)
    y2 = y.copy()
    y2[np.flatnonzero(y >= 0)[-1]] = 1 - y2[np.flatnonzero(y >= 0)[-1]]
    for est, labels in ((LinearLapRLS(checkpoint=str(ck), **kw), y2),
                        (LinearLapRLS(checkpoint=str(ck), **{**kw, "gamma_I": 0.31}), y)):
        with pytest.raises(ValueError, match="another system"):
            est.fit(X, labels, resume=True)
    with pytest.raises(ValueError, match="holds no checkpoint"):
        LinearLapRLS(checkpoint=str(tmp_path / "none"), **kw).fit(X, y, resume=True)


def _files(d):
    return sorted(p.name for p in d.iterdir())


def _count_line_searches(monkeypatch):
    """Line searches (one per Newton step but the last) made from now on."""
    from dask_ssl.solvers.mfn import MFNSolver

    calls = []
    search = MFNSolver._line_search
    monkeypatch.setattr(MFNSolver, "_line_search",
                        lambda self, *a: calls.append(1) or search(self, *a))
    return calls


def test_lapsvm_killed_after_a_newton_step_resumes_to_the_same_solution(client, tmp_path,
                                                                      monkeypatch):
    """Three classes (one part each): killed after the second Newton step of the last part,
    the fit resumes with the finished parts as saved and the last one from its step 2, to the
    uninterrupted solution; each part's directory holds one state and its arrays, nothing else."""
    import json

    from dask_ssl.loop import NewtonCheckpoint

    X, y = problem(seed=3, n_labeled=100)
    kw = dict(gamma_A=1e-3, gamma_I=1e-3, p=1, solver="gram", tol=1e-10, client=client,
              n_blocks=2)
    full = LinearLapSVM(**kw).fit(X, y)
    assert full.n_iter_[2] >= 3
    ck = tmp_path / "ck"
    original = NewtonCheckpoint.save

    def killed_after_step_2_of_part_2(self, state):
        original(self, state)
        if self.url.endswith("part-2") and state["steps"] == 2 and "objective" not in state:
            raise RuntimeError("killed")

    monkeypatch.setattr(NewtonCheckpoint, "save", killed_after_step_2_of_part_2)
    with pytest.raises(RuntimeError, match="killed"):
        LinearLapSVM(checkpoint=str(ck), **kw).fit(X, y)
    monkeypatch.setattr(NewtonCheckpoint, "save", original)
    states = [json.loads((ck / f"part-{k}" / "state.json").read_text()) for k in range(3)]
    assert [s["done"] for s in states] == [True, True, False] and states[2]["steps"] == 2
    for k in range(3):
        assert _files(ck / f"part-{k}") == sorted(["state.json", states[k]["arrays"]])
    searches = _count_line_searches(monkeypatch)
    resumed = LinearLapSVM(checkpoint=str(ck), **kw).fit(X, y, resume=True)
    assert len(searches) == full.n_iter_[2] - 1 - 2  # only the rest of the last part
    np.testing.assert_allclose(resumed.coef_, full.coef_, rtol=1e-8, atol=0)
    np.testing.assert_allclose(resumed.intercept_, full.intercept_, rtol=1e-8)
    np.testing.assert_array_equal(resumed.n_iter_, full.n_iter_)
    np.testing.assert_allclose(resumed.objective_, full.objective_, rtol=1e-10)
    # the finished parts were not saved again; the last one ended with its result
    for k in range(2):
        assert json.loads((ck / f"part-{k}" / "state.json").read_text()) == states[k]
    assert json.loads((ck / "part-2" / "state.json").read_text())["done"]


def test_lapsvm_crash_mid_write_keeps_the_previous_state(client, tmp_path, monkeypatch):
    """CG path, two classes: a save that fails while writing its state.json leaves the step
    before in force and no file of its own; resuming from there reaches the same solution."""
    import json

    from dask_ssl.loop import checkpoint

    X, y = problem(seed=3, n_classes=2, n_labeled=100)
    X = sp.csr_matrix(X)
    kw = dict(gamma_A=1e-3, gamma_I=1e-3, p=1, solver="cg", tol=1e-10, client=client,
              n_blocks=2)
    full = LinearLapSVM(**kw).fit(X, y)
    assert full.n_iter_ >= 3
    ck = tmp_path / "ck"
    dump = json.dump

    def dies_writing_step_2(doc, f, **kwargs):
        if doc["steps"] == 2:
            f.write('{"kind": "new')
            raise RuntimeError("killed")
        dump(doc, f, **kwargs)

    monkeypatch.setattr(checkpoint.json, "dump", dies_writing_step_2)
    with pytest.raises(RuntimeError, match="killed"):
        LinearLapSVM(checkpoint=str(ck), **kw).fit(X, y)
    monkeypatch.setattr(checkpoint.json, "dump", dump)
    state = json.loads((ck / "state.json").read_text())
    assert state["steps"] == 1 and _files(ck) == sorted(["state.json", state["arrays"]])
    searches = _count_line_searches(monkeypatch)
    resumed = LinearLapSVM(checkpoint=str(ck), **kw).fit(X, y, resume=True)
    assert len(searches) == full.n_iter_ - 1 - 1
    np.testing.assert_allclose(resumed.coef_, full.coef_, rtol=1e-8, atol=0)
    np.testing.assert_allclose(resumed.intercept_, full.intercept_, rtol=1e-8)
    assert resumed.n_iter_ == full.n_iter_
    np.testing.assert_allclose([h["objective"] for h in resumed.history_],
                               [h["objective"] for h in full.history_], rtol=1e-10)
    state = json.loads((ck / "state.json").read_text())
    assert state["done"] and _files(ck) == sorted(["state.json", state["arrays"]])


def test_lapsvm_refuses_a_checkpoint_of_another_system(client, tmp_path):
    X, y = problem(seed=3, n_classes=2, n_labeled=100)
    kw = dict(gamma_A=1e-3, gamma_I=1e-3, p=1, tol=1e-10, client=client, n_blocks=2)
    ck, rls = str(tmp_path / "ck"), str(tmp_path / "rls")
    LinearLapSVM(checkpoint=ck, **kw).fit(X, y)
    LinearLapRLS(checkpoint=rls, solver="cg", **kw).fit(X, y)
    y2 = y.copy()
    y2[np.flatnonzero(y >= 0)[-1]] = 1 - y2[np.flatnonzero(y >= 0)[-1]]
    for est, labels, message in (
            (LinearLapSVM(checkpoint=ck, **kw), y2, "Newton state of another system"),
            (LinearLapSVM(checkpoint=ck, **{**kw, "gamma_I": 0.002}), y, "another system"),
            (LinearLapSVM(checkpoint=ck, **{**kw, "gamma_A": 0.002}), y, "another system"),
            (LinearLapSVM(checkpoint=rls, **kw), y, "'cg' checkpoint, not a Newton solve"),
            (LinearLapRLS(checkpoint=ck, solver="cg", **kw), y, "not a CG solve"),
            (LinearLapSVM(checkpoint=str(tmp_path / "none"), **kw), y, "holds no checkpoint")):
        with pytest.raises(ValueError, match=message):
            est.fit(X, labels, resume=True)
    with pytest.raises(ValueError, match="'checkpoint' parameter of"):
        LinearLapSVM(checkpoint=1, **kw).fit(X, y)


def graph_term_problem(seed, n, d):
    """``[X, 1]`` of random rows and the graph term ``H = [X, 1]^T L [X, 1]`` of a random
    symmetric graph on them (unnormalized L)."""
    rng = np.random.default_rng(seed)
    Xa = np.column_stack([rng.normal(size=(n, d)), np.ones(n)])
    W = sp.random(n, n, density=0.1, random_state=seed + 1)
    W = (W + W.T).toarray()
    return rng, Xa, Xa.T @ (np.diag(W.sum(axis=1)) - W) @ Xa


def test_auto_graph_weight_leave_one_out_is_exact():
    """The leave-one-out residuals of every candidate equal refits without each labeled row
    (the graph stays on all rows, the other rows' costs unchanged)."""
    from dask_ssl.models._graph_weight import AUTO_RHO, loo_gamma_I

    rng, Xa, H = graph_term_problem(seed=0, n=60, d=5)
    d, l = 5, 20
    Xl, cl = Xa[:l], np.full(l, 1.0 / l)
    Yl = np.column_stack([np.where(Xl[:, 0] + 0.3 * rng.normal(size=l) > 0, 1.0, -1.0)])
    G = Xl.T @ (cl[:, None] * Xl)
    gamma_I, selection = loo_gamma_I(G, H, Xl, cl, Yl, 1e-2)
    assert [r["rho"] for r in selection] == list(AUTO_RHO)
    for r in selection:
        loo = np.empty(l)
        for i in range(l):
            keep = np.arange(l) != i
            A = (Xl[keep].T @ (cl[keep, None] * Xl[keep]) + 1e-2 * np.eye(d + 1)
                 + r["gamma_I"] * H)
            loo[i] = Xl[i] @ np.linalg.solve(A, Xl[keep].T @ (cl[keep] * Yl[keep, 0]))
        assert r["squared"] == pytest.approx(np.sum((Yl[:, 0] - loo) ** 2), rel=1e-9)
        assert r["errors"] == np.sum(np.sign(loo) != Yl[:, 0])
    assert gamma_I == chosen_row(selection)["gamma_I"]
    assert selection[2]["gamma_I"] == pytest.approx(1e-3 * np.trace(G) / np.trace(H))


def test_row_space_leave_one_out_and_deformed_gram_equal_the_feature_space_ones():
    """With fewer rows than features the choice is made from ``K = [X,1][X,1]^T`` and ``M K``
    (n x n): every candidate's leave-one-out outputs and squared residual equal the Gram
    path's (dim x dim) and refits without each labeled row, the shares are the same, and the
    SVM check's deformed Gram matrix is the one ``H`` gives. The labeled rows sit anywhere."""
    from dask_ssl.models._graph_weight import (AUTO_RHO, deformed_gram, loo_gamma_I,
                                               row_space_deformed_gram, row_space_gamma_I,
                                               row_space_loo_outputs)

    rng = np.random.default_rng(4)
    n, d, l, gamma_A = 40, 70, 12, 1e-2
    Xa = np.column_stack([rng.normal(size=(n, d)), np.ones(n)])
    W = sp.random(n, n, density=0.15, random_state=5)
    W = (W + W.T).toarray()
    L = np.diag(W.sum(axis=1)) - W
    M = L @ L
    rows = np.sort(rng.choice(n, l, replace=False))
    Xl, cl = Xa[rows], rng.uniform(0.5, 1.5, l)
    cl /= cl.sum()
    Yl = np.column_stack([np.where(Xl[:, 0] + 0.3 * rng.normal(size=l) > 0, 1.0, -1.0),
                          np.where(Xl[:, 1] > 0, 1.0, -1.0)])
    H, K = Xa.T @ M @ Xa, Xa @ Xa.T
    G = Xl.T @ (cl[:, None] * Xl)
    dense_choice, dense = loo_gamma_I(G, H, Xl, cl, Yl, gamma_A)
    choice, selection = row_space_gamma_I(K, M @ K, rows, cl, Yl, gamma_A)
    assert choice == pytest.approx(dense_choice, rel=1e-9)
    assert [r["rho"] for r in selection] == list(AUTO_RHO)
    for a, b in zip(selection, dense):
        assert a["gamma_I"] == pytest.approx(b["gamma_I"], rel=1e-9)
        assert a["errors"] == b["errors"] and a["chosen"] == b["chosen"]
        assert a["squared"] == pytest.approx(b["squared"], rel=1e-8)
    weight = selection[4]["gamma_I"]
    out = row_space_loo_outputs(K, M @ K, rows, cl, Yl, gamma_A, weight)
    for i in range(l):
        keep = np.arange(l) != i
        A = (Xl[keep].T @ (cl[keep, None] * Xl[keep]) + gamma_A * np.eye(d + 1) + weight * H)
        refit = Xl[i] @ np.linalg.solve(A, Xl[keep].T @ (cl[keep, None] * Yl[keep]))
        np.testing.assert_allclose(out[i], refit, rtol=1e-8, atol=1e-10)
    for w in (0.0, weight):
        np.testing.assert_allclose(row_space_deformed_gram(K, M @ K, rows, gamma_A, w),
                                   deformed_gram(Xl, gamma_A, w, H=H), rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("cls", [LinearLapRLS, LinearLapSVM])
def test_auto_graph_weight_is_the_fit_with_that_weight(client, cls, monkeypatch):
    X, y = problem(seed=5, n_labeled=60)
    auto = cls(gamma_A=1e-3, p=1, client=client, n_blocks=2).fit(X, y)
    assert auto.gamma_I_ in [r["gamma_I"] for r in auto.selection_]
    fixed = cls(gamma_A=1e-3, gamma_I=auto.gamma_I_, p=1, client=client, n_blocks=2).fit(X, y)
    assert fixed.selection_ == [] and fixed.selection_cost_ is None
    np.testing.assert_allclose(auto.coef_, fixed.coef_, rtol=1e-9, atol=1e-12)
    # the Gram path's leave-one-out (and LinearLapSVM's check, from H) runs on the driver
    cost = auto.selection_cost_
    assert cost["round_trips"] == 0 and cost["fit_round_trips"] > 0
    assert cost["seconds"] > 0
    assert cost["seconds"] + cost["fit_seconds"] == pytest.approx(auto.fit_seconds_, abs=0.25)
    # the CG path chooses by cross-validation, and fits with what it chose
    cg = cls(gamma_A=1e-3, p=1, solver="cg", client=client, n_blocks=2, random_state=0,
             tol=1e-10).fit(X, y)
    assert cg.gamma_I_ in [r["gamma_I"] for r in cg.selection_]
    # its folds' block CG makes its graph products on the driver for so few rows (two round
    # trips count the entries), on the workers above the budget, with the same outcome
    assert cg.selection_cost_["round_trips"] == 2
    monkeypatch.setattr(data_graph, "LOCAL_ENTRIES", 0)
    remote = cls(gamma_A=1e-3, p=1, solver="cg", client=client, n_blocks=2, random_state=0,
                 tol=1e-10).fit(X, y)
    assert remote.selection_cost_["round_trips"] > 10
    assert [(r["errors"], r["chosen"]) for r in remote.selection_] == \
        [(r["errors"], r["chosen"]) for r in cg.selection_]
    for a, b in zip(remote.selection_, cg.selection_):
        assert a["squared"] == pytest.approx(b["squared"], rel=1e-6)
    fixed = cls(gamma_A=1e-3, gamma_I=cg.gamma_I_, p=1, solver="cg", client=client, n_blocks=2,
                tol=1e-10).fit(X, y)
    np.testing.assert_allclose(cg.coef_, fixed.coef_, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("cls", [LinearLapRLS, LinearLapSVM])
def test_fewer_rows_than_features_choose_by_leave_one_out_from_the_rows_kernel(client, cls,
                                                                               monkeypatch):
    """The CG path with fewer rows than features chooses as the Gram path does (exact
    leave-one-out, the same table), from the rows' n x n kernel on the driver: three round
    trips (two count the entries, one reads the labeled positions). Above KERNEL_ROWS it
    cross-validates by block CG again."""
    rng = np.random.default_rng(11)
    n, d = 70, 90
    centers = 3.0 * rng.normal(size=(2, d))
    truth = rng.integers(0, 2, n)
    X = sp.csr_matrix(np.where(rng.uniform(size=(n, d)) < 0.3,
                               centers[truth] + rng.normal(size=(n, d)), 0.0))
    y = _labels_per_class(truth, 8, seed=11)
    kw = dict(gamma_A=1e-3, p=1, client=client, n_blocks=2, random_state=0, tol=1e-10)
    rows = cls(solver="cg", **kw).fit(X, y)
    gram = cls(solver="gram", **kw).fit(X, y, graph=rows.graph_)
    assert rows.selection_cost_["round_trips"] == 3
    assert {r.get("criterion", "loo") for r in rows.selection_} <= {"loo", "cv"}
    assert [(r["rho"], r["errors"], r["chosen"]) for r in rows.selection_] == \
        [(r["rho"], r["errors"], r["chosen"]) for r in gram.selection_]
    for a, b in zip(rows.selection_, gram.selection_):
        assert a["gamma_I"] == pytest.approx(b["gamma_I"], rel=1e-8)
        assert a["squared"] == pytest.approx(b["squared"], rel=1e-6)
    assert rows.gamma_I_ == pytest.approx(gram.gamma_I_, rel=1e-8)
    monkeypatch.setattr(data_graph, "KERNEL_ROWS", n - 1)
    cv = cls(solver="cg", **kw).fit(X, y, graph=rows.graph_)
    assert cv.selection_cost_["round_trips"] == 2


@pytest.mark.parametrize("n_targets", [1, 3])
def test_auto_graph_weight_cross_validation_matches_dense_refits(n_targets, monkeypatch):
    """Every candidate's held-out errors and squared residual equal dense refits without each
    fold (the graph on all rows, the fold's costs renormalized over the kept rows); tr(H) is
    the Hutchinson estimate of its probes. (CG solved tightly here; the default stops at
    CV_TOL, enough to count errors.)"""
    from dask_ssl.models import _graph_weight
    from dask_ssl.models._graph_weight import (AUTO_RHO, CV_FOLDS, TRACE_PROBES, cv_gamma_I,
                                               fold_of, truth_of)

    monkeypatch.setattr(_graph_weight, "CV_TOL", 1e-12)

    rng, Xa, H = graph_term_problem(seed=1, n=80, d=6)
    d, l = 6, 24
    Xl, cl = sp.csr_matrix(Xa[:l]), rng.uniform(0.5, 1.5, l)
    cl /= cl.sum()
    codes = np.digitize(Xa[:l, 0] + 0.3 * rng.normal(size=l), [-0.4, 0.4]) if n_targets == 3 \
        else (Xa[:l, 0] > 0).astype(int) + 1
    Yl = np.column_stack([np.where(codes == t, 1.0, -1.0)
                          for t in (range(3) if n_targets == 3 else [2])])
    gamma_I, selection = cv_gamma_I(lambda P: H @ P, Xl, cl, Yl, 1e-2, maxiter=5000, seed=3)
    probes = np.random.default_rng(3).choice([-1.0, 1.0], size=(d + 1, TRACE_PROBES))
    trace_H = np.mean(np.einsum("ij,ij->j", probes, H @ probes))
    fold = fold_of(truth_of(Yl), CV_FOLDS)
    dense = Xl.toarray()
    for r, rho in zip(selection, AUTO_RHO):
        assert r["gamma_I"] == pytest.approx(rho * np.sum(cl * np.sum(dense ** 2, axis=1))
                                             / trace_H, rel=1e-12)
        out = np.empty_like(Yl)
        for f in range(CV_FOLDS):
            keep = fold != f
            c = np.where(keep, cl, 0.0) / cl[keep].sum()
            A = dense.T @ (c[:, None] * dense) + 1e-2 * np.eye(d + 1) + r["gamma_I"] * H
            out[~keep] = dense[~keep] @ np.linalg.solve(A, dense.T @ (c[:, None] * Yl))
        guess = out[:, 0] > 0 if n_targets == 1 else np.argmax(out, axis=1)
        truth = Yl[:, 0] > 0 if n_targets == 1 else np.argmax(Yl, axis=1)
        assert r["errors"] == np.sum(guess != truth)
        assert r["squared"] == pytest.approx(np.sum((Yl - out) ** 2), rel=1e-8)
    assert gamma_I == chosen_row(selection)["gamma_I"]
    # each class's rows are spread over the folds
    for t in range(Yl.shape[1]):
        counts = np.bincount(fold[Yl[:, t] > 0], minlength=CV_FOLDS)
        assert counts.max() - counts.min() <= 1


@pytest.mark.parametrize("path", ["gram", "cg"])
def test_svm_confirmation_folds_equal_dense_refits(path):
    """LinearLapSVM's own-loss check: each fold's held-out outputs, from the L2-SVM of the
    deformed Gram matrix over the labeled rows, equal the minimizer of the primal objective
    ``gamma_A/2 |w|^2 + weight/2 w^T H w + 1/2 sum c_i max(0, 1 - y_i x_i^T w)^2`` over the
    other folds' rows (costs renormalized; the graph on all rows), on the Gram path (H
    factored) and the CG path (products of H)."""
    from dask_ssl.models._graph_weight import deformed_gram, fold_of, svm_held_out, truth_of

    rng, Xa, H = graph_term_problem(seed=2, n=70, d=5)
    l, gamma_A, weight = 24, 1e-2, 0.05
    Xl, cl = Xa[:l], rng.uniform(0.5, 1.5, l)
    cl /= cl.sum()
    Yl = np.column_stack([np.where(Xl[:, 0] + 0.5 * rng.normal(size=l) > 0, 1.0, -1.0)])
    fold = fold_of(truth_of(Yl), 4)
    given = dict(H=H) if path == "gram" else dict(graph_product=lambda P: H @ P)
    K = deformed_gram(Xl, gamma_A, weight, **given)
    out = svm_held_out(K, cl, Yl, fold, tol=1e-10, max_iter=100)
    R = gamma_A * np.eye(Xl.shape[1]) + weight * H
    for f in range(4):
        c = np.where(fold == f, 0.0, cl) / cl[fold != f].sum()

        def objective(w):
            slack = np.maximum(0.0, 1.0 - Yl[:, 0] * (Xl @ w))
            return 0.5 * w @ R @ w + 0.5 * c @ slack ** 2, R @ w - Xl.T @ (c * Yl[:, 0] * slack)

        w = scipy.optimize.minimize(objective, np.zeros(Xl.shape[1]), jac=True,
                                    method="L-BFGS-B", options={"gtol": 1e-12}).x
        np.testing.assert_allclose(out[fold == f, 0], Xl[fold == f] @ w, rtol=1e-5, atol=1e-6)


def test_labels_across_the_clusters_keep_the_supervised_svm(client):
    """Four well-separated clusters and a random linear label that cuts through them: the
    clusters say nothing about the label. On this draw LinearLapRLS's leave-one-out (the
    squared-loss proxy) picks a graph share, with which the L2-SVM errs more on the unlabeled
    rows; the check with the squared hinge finds it errs on more held-out labeled rows too and
    keeps the supervised L2-SVM, prediction for prediction. (Of 40 draws of this recipe the
    proxy picked a share in 10 and the check kept the supervised model in 5; this is one of
    the two of those where the share errs more on the labeled folds as well.)"""
    rng = np.random.default_rng(36)
    centers = 6.0 * rng.normal(size=(4, 15))
    X = centers[rng.integers(0, 4, 300)] + rng.normal(size=(300, 15))
    score = X @ rng.normal(size=15)
    y = (score > np.median(score)).astype(int)
    train = _labels_per_class(y, 20, seed=36)
    hidden = train == -1
    auto = LinearLapSVM(client=client, random_state=0).fit(X, train)
    proxy = [r for r in auto.selection_ if r.get("criterion") == "loo"]
    supervised, graph = [r for r in auto.selection_ if r.get("criterion") == "cv"]
    assert len(proxy) == len(auto.selection_) - 2 and not any(r["chosen"] for r in proxy)
    assert graph["rho"] > 0 and graph["gamma_I"] > 0  # the proxy's pick
    assert supervised["gamma_I"] == 0 and supervised["chosen"] and not graph["chosen"]
    assert supervised["errors"] < graph["errors"]
    assert auto.gamma_I_ == auto.gamma_I_effective_ == 0.0
    fixed = LinearLapSVM(gamma_I=0.0, client=client).fit(X, train, graph=auto.graph_)
    np.testing.assert_array_equal(auto.predict(X), fixed.predict(X))
    np.testing.assert_allclose(auto.decision_function(X), fixed.decision_function(X),
                               rtol=1e-9, atol=1e-9)
    share = LinearLapSVM(gamma_I=graph["gamma_I"], client=client).fit(X, train,
                                                                      graph=auto.graph_)
    assert (np.mean(share.predict(X)[hidden] != y[hidden])
            > np.mean(auto.predict(X)[hidden] != y[hidden]))


@pytest.mark.parametrize("view, draw, keeps_graph", [(4, 1, False), (2, 4, True)])
def test_hw_digits_svm_confirms_the_graph_with_its_own_loss(client, shared_data, view, draw,
                                                           keeps_graph):
    """HW digits, digit 0 against the rest, 100 labels (the safety benchmark's rows). Pixel
    view: LinearLapRLS's leave-one-out picks a graph share, with which the L2-SVM erred more
    than without (issue 30); the SVM's own cross-validation keeps the supervised model.
    Karhunen-Loeve view: the digit's cluster is clear in the graph and the check keeps the
    share, which errs less than the L2-SVM on the unlabeled rows."""
    from dask_ssl.data import read_multiview, stratified_split

    path = shared_data / "multiview" / "HW.mat"
    if not path.is_file():
        pytest.skip(f"{path} is missing")
    views, classes = read_multiview(path)
    X, y = views[view], (classes == 1).astype(int)
    split = stratified_split(y, n_labeled=100, seed=draw)
    train = split.y_train(y, marker=-1)
    auto = LinearLapSVM(client=client, random_state=0).fit(X, train)
    supervised, graph = [r for r in auto.selection_ if r.get("criterion") == "cv"]
    assert graph["rho"] > 0 and graph["chosen"] is keeps_graph
    sup = L2SVM(gamma_A=auto.gamma_A, unlabeled=-1, client=client).fit(X, train)
    hidden = split.unlabeled
    if keeps_graph:
        assert auto.gamma_I_ == graph["gamma_I"] > 0
        assert (np.mean(auto.predict(X)[hidden] != y[hidden])
                < np.mean(sup.predict(X)[hidden] != y[hidden]))
    else:
        assert auto.gamma_I_ == 0.0
        np.testing.assert_array_equal(auto.predict(X), sup.predict(X))


@pytest.mark.parametrize("cls", [LinearLapRLS, LinearLapSVM])
def test_metis_resplit_keeps_labels_with_their_rows(client, cls):
    # partition="metis" moves the data rows to the graph's re-split once; the labels and
    # costs must move with them (they were permuted a second time, scrambling the fit)
    X, y = problem(seed=3, n=160, n_classes=2)
    common = dict(gamma_A=0.01, gamma_I=0.3, tol=1e-13, client=client, n_blocks=3)
    plain = cls(**common).fit(X, y)
    moved = cls(partition="metis", **common).fit(X, y, graph=plain.graph_)
    assert moved.rows_moved_
    np.testing.assert_allclose(moved.decision_function(X), plain.decision_function(X),
                               rtol=1e-7, atol=1e-9)
