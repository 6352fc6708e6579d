"""Kernel S3VMs (thesis ch. 3): deterministic annealing with a kernel and branch and bound."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.kernel_ridge import KernelRidge

from dask_ssl.data.generators import two_moons
from dask_ssl.kernels import kernel_matrix
from dask_ssl.models import ESTIMATORS, BranchAndBoundS3VM, KernelDAS3VM, NodeLimitError
from dask_ssl.models._kernel_s3vm import s3vm_objective
from dask_ssl.models.artifact import load_model, save_model
from dask_ssl.models.kernel_da import KernelDADriver, SqrStep

RBF = {"gamma": 2.0}


def moons_draw(seed, n=200):
    """Two moons with one labeled row per class (classes 0/1, -1 unlabeled), as in Table 3.4."""
    X, y = two_moons(n=n, noise=0.1, seed=seed)
    rng = np.random.default_rng(1000 + seed)
    yl = np.full(n, -1)
    yl[rng.choice(np.flatnonzero(y > 0))] = 1
    yl[rng.choice(np.flatnonzero(y < 0))] = 0
    return X, (y > 0).astype(int), yl


def small_problem(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.full(n, -1)
    y[:6] = (X[:6, 0] > 0).astype(int)
    y[0], y[1] = 0, 1
    return X, y


def test_sqr_step_is_the_dense_solve_of_eq_3_10():
    X, y = small_problem()
    K = kernel_matrix(X, kernel="rbf", kernel_params={"gamma": 0.3})
    ys = np.where(y < 0, 0.0, np.where(y == 1, 1.0, -1.0))
    lab = ys != 0
    l, u = lab.sum(), (~lab).sum()
    gamma, gamma_u = 0.01, 2.0
    step = SqrStep(K, lab, gamma, gamma_u)
    for p in (np.full(u, 0.3), np.random.default_rng(1).uniform(size=u)):
        Y = ys.copy()
        Y[~lab] = 2 * p - 1
        C = np.diag(np.where(lab, l, u / gamma_u))
        expected = np.linalg.solve(K + gamma * C, Y)
        np.testing.assert_allclose(step.alpha(ys, p), expected, rtol=1e-8, atol=1e-10)


def test_fitted_sqr_model_solves_eq_3_10_at_its_soft_labels():
    X, y = small_problem()
    est = KernelDAS3VM(loss="squared", gamma_A=0.01, gamma_u=2.0, kernel_params={"gamma": 0.3}).fit(X, y)
    K = kernel_matrix(X, kernel="rbf", kernel_params={"gamma": 0.3})
    lab = y >= 0
    Y = np.where(y == 1, 1.0, -1.0)
    Y[~lab] = 2 * est.soft_labels_ - 1
    C = np.diag(np.where(lab, lab.sum(), (~lab).sum() / 2.0))
    np.testing.assert_allclose(est.dual_coef_[:, 0], np.linalg.solve(K + 0.01 * C, Y),
                               rtol=1e-7, atol=1e-9)
    # the monitored objective is that of the returned alpha
    f = K @ est.dual_coef_[:, 0]
    assert est.objective_ == pytest.approx(
        s3vm_objective(est.dual_coef_[:, 0], f, np.where(lab, Y, 0.0), 0.01, 2.0, "squared"), rel=1e-10)
    assert [h["stage"] for h in est.history_] == list(range(len(est.history_)))
    assert est.history_[-1]["entropy"] < (~lab).sum() * 1e-6


def test_gamma_u_zero_is_kernel_rls_on_the_labels():
    X, y = small_problem()
    lab = y >= 0
    est = KernelDAS3VM(loss="squared", gamma_A=0.05, gamma_u=0.0, kernel_params={"gamma": 0.3}).fit(X, y)
    ref = KernelRidge(alpha=0.05 * lab.sum(), kernel="rbf", gamma=0.3).fit(
        X[lab], np.where(y[lab] == 1, 1.0, -1.0))
    Xt = np.random.default_rng(5).normal(size=(30, 3))
    np.testing.assert_allclose(est.decision_function(Xt), ref.predict(Xt), rtol=1e-8, atol=1e-10)
    assert np.all(est.dual_coef_[~lab] == 0)


def test_gamma_u_zero_is_kernel_l2_svm_on_the_labels():
    X, y = small_problem()
    lab = y >= 0
    gamma = 0.05
    est = KernelDAS3VM(loss="squared_hinge", gamma_A=gamma, gamma_u=0.0, kernel_params={"gamma": 0.3},
                       tol=1e-12).fit(X, y)
    Kl = kernel_matrix(X[lab], kernel="rbf", kernel_params={"gamma": 0.3})
    yl = np.where(y[lab] == 1, 1.0, -1.0)

    def objective(a):
        m = np.maximum(0.0, 1.0 - yl * (Kl @ a))
        return 0.5 * gamma * a @ Kl @ a + 0.5 * np.mean(m ** 2), \
            gamma * Kl @ a - Kl @ (yl * m) / yl.size

    ref = minimize(objective, np.zeros(yl.size), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000})
    Xt = np.random.default_rng(5).normal(size=(30, 3))
    Kt = kernel_matrix(Xt, X[lab], kernel="rbf", kernel_params={"gamma": 0.3})
    np.testing.assert_allclose(est.decision_function(Xt), Kt @ ref.x, atol=1e-6)
    assert est.objective_ == pytest.approx(ref.fun, rel=1e-8)


@pytest.mark.parametrize("cls", [KernelDAS3VM, BranchAndBoundS3VM])
@pytest.mark.parametrize("loss", ["squared_hinge", "squared"])
def test_no_unlabeled_rows_fit_the_supervised_kernel_model_with_a_warning(cls, loss):
    # the objective without its unlabeled term: gamma_u = 0 on the same labeled rows
    X, y = small_problem()
    lab = y >= 0
    params = dict(loss=loss, gamma_A=0.05, kernel_params={"gamma": 0.3}, tol=1e-12)
    ref = KernelDAS3VM(gamma_u=0.0, **params).fit(X, y)
    with pytest.warns(UserWarning, match="no unlabeled rows.*supervised kernel "
                      + ("L2-SVM" if loss == "squared_hinge" else "RLS")):
        est = cls(**params).fit(X[lab], y[lab])
    Xt = np.random.default_rng(5).normal(size=(30, 3))
    np.testing.assert_allclose(est.decision_function(Xt), ref.decision_function(Xt), atol=1e-8)
    assert est.objective_ == pytest.approx(ref.objective_, rel=1e-8)
    np.testing.assert_array_equal(est.transduction_, y[lab])


class Interrupt(Exception):
    pass


def test_interrupted_fit_resumes_to_the_same_result(tmp_path, monkeypatch):
    X, _, y = moons_draw(0, n=80)
    params = dict(loss="squared_hinge", gamma_A=0.03, gamma_u=1.0, kernel_params={"gamma": 8.0})
    whole = KernelDAS3VM(**params).fit(X, y)
    run_stage = KernelDADriver.run_stage

    def interrupted(self):
        if self.stage == 4:
            raise Interrupt("stopped at stage 4")
        return run_stage(self)

    ckpt = tmp_path / "ckpt"
    monkeypatch.setattr(KernelDADriver, "run_stage", interrupted)
    with pytest.raises(Interrupt):
        KernelDAS3VM(checkpoint=str(ckpt), **params).fit(X, y)
    monkeypatch.setattr(KernelDADriver, "run_stage", run_stage)
    resumed = KernelDAS3VM(checkpoint=str(ckpt), **params).fit(X, y, resume=True)
    assert len(resumed.history_) == len(whole.history_) > 4
    np.testing.assert_array_equal(resumed.dual_coef_, whole.dual_coef_)
    assert resumed.objective_ == whole.objective_
    with pytest.raises(ValueError, match="not this one"):
        KernelDAS3VM(checkpoint=str(ckpt), **params).fit(X[:60], y[:60], resume=True)


def test_multiclass_one_vs_rest_and_model_store(tmp_path):
    rng = np.random.default_rng(3)
    centers = np.array([[0, 0], [4, 0], [0, 4]])
    truth = np.repeat([0, 1, 2], 30)
    X = centers[truth] + 0.5 * rng.normal(size=(90, 2))
    y = np.full(90, -1)
    y[[0, 1, 30, 31, 60, 61]] = truth[[0, 1, 30, 31, 60, 61]]
    for cls in (KernelDAS3VM, BranchAndBoundS3VM):
        params = dict(gamma_A=0.01, gamma_u=1.0, kernel_params={"gamma": 0.5}, pos_fraction=1 / 3)
        est = cls(**params).fit(X, y)
        assert est.dual_coef_.shape == (90, 3) and len(est.history_) == 3
        np.testing.assert_array_equal(est.transduction_, truth)
        assert cls.__name__ in ESTIMATORS
        loaded = load_model(save_model(est, tmp_path / cls.__name__))
        Xt = rng.normal(size=(10, 2)) * 3
        np.testing.assert_array_equal(loaded.decision_function(Xt), est.decision_function(Xt))
        np.testing.assert_array_equal(loaded.predict(Xt), est.predict(Xt))
    est.kernel = lambda A, B: A @ B.T
    with pytest.raises(ValueError, match="callable kernel cannot be saved"):
        save_model(est, tmp_path / "callable")
    assert not (tmp_path / "callable").exists()


@pytest.mark.parametrize("cls", [KernelDAS3VM, BranchAndBoundS3VM])
@pytest.mark.parametrize("params, data, match", [
    ({"kernel": "gaussian"}, None, "'kernel' parameter of .* Got 'gaussian'"),
    ({"kernel_params": {"sigma": 1.0}}, None, "takes no parameter"),
    ({"kernel": lambda A, B: np.full((len(A), len(B)), np.nan)}, None, "non-finite value"),
    ({"gamma_A": 0.0}, None, "'gamma_A' parameter of"),
    ({"gamma_u": -1.0}, None, "'gamma_u' parameter of"),
    ({"loss": "hinge"}, None, "'loss' parameter of"),
    ({"loss": "l2"}, None, "loss='l2' is now called loss='squared_hinge'"),
    ({"pos_fraction": 1.5}, None, "'pos_fraction' parameter of"),
    ({}, "nan", "non-finite value"),
    ({}, "one class", "only one labeled class"),
])
def test_bad_input_is_refused_before_work(cls, params, data, match, tmp_path):
    X, y = small_problem()
    if data == "nan":
        X[3, 1] = np.nan
    elif data == "one class":
        y = np.where(y >= 0, 1, -1)
    with pytest.raises(ValueError, match=match):
        cls(**params).fit(X, y)


def test_two_moons_da_l2_finds_the_perfect_labeling_in_6_of_10_draws():
    """Table 3.4: DA(l2) perfect on 2moons (200 points, 2 labels) in 6 of 10 draws, the best over
    a grid of settings. Ours: sigma = 0.177 (RBF gamma 16), gamma = 0.01, gamma_u = 0.3, chosen
    on a small grid on these draws (7 of 10); the same setting is perfect in 12 of 20 other
    draws (seeds 10-29)."""
    perfect = 0
    for seed in range(10):
        X, truth, y = moons_draw(seed)
        est = KernelDAS3VM(loss="squared_hinge", gamma_A=0.01, gamma_u=0.3, kernel_params={"gamma": 16.0})
        perfect += bool(np.all(est.fit(X, y).transduction_ == truth))
    assert perfect >= 6


def brute_force(K, y, gamma, gamma_u, loss, n_pos):
    import itertools

    from dask_ssl.models._kernel_s3vm import fit_weighted

    unl = np.flatnonzero(y == 0)
    c = np.where(y != 0, 1.0 / (y != 0).sum(), gamma_u / unl.size)
    best = (np.inf, None)
    for pos in itertools.combinations(unl, n_pos):
        z = np.where(y != 0, y, -1.0)
        z[list(pos)] = 1.0
        obj = fit_weighted(K, np.where(z > 0, c, 0.0), np.where(z < 0, c, 0.0), gamma, loss)[2]
        best = min(best, (obj, tuple(z)))
    return best


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("loss", ["squared_hinge", "squared"])
def test_branch_and_bound_is_the_global_optimum(loss, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(14, 2))
    y = np.full(14, -1)
    y[0], y[1] = 0, 1
    params = dict(loss=loss, gamma_A=0.05, gamma_u=3.0, kernel_params={"gamma": 1.0})
    est = BranchAndBoundS3VM(**params).fit(X, y)
    K = kernel_matrix(X, kernel="rbf", kernel_params={"gamma": 1.0})
    ys = np.where(y < 0, 0.0, np.where(y == 1, 1.0, -1.0))
    obj, labels = brute_force(K, ys, 0.05, 3.0, loss, 6)  # of 924 balanced labelings
    assert est.objective_ == pytest.approx(obj, rel=1e-9)
    np.testing.assert_array_equal(np.where(est.transduction_ == 1, 1.0, -1.0), labels)
    assert est.n_iter_ < 924
    f = K @ est.dual_coef_[:, 0]
    assert s3vm_objective(est.dual_coef_[:, 0], f, ys, 0.05, 3.0, loss, n_pos=6) == pytest.approx(obj)
    # annealing cannot beat the global optimum of the same objective
    da = KernelDAS3VM(**params).fit(X, y)
    a = da.dual_coef_[:, 0]
    assert s3vm_objective(a, K @ a, ys, 0.05, 3.0, loss, n_pos=6) >= obj - 1e-12
    with pytest.raises(NodeLimitError, match="max_nodes=5 nodes without proving"):
        BranchAndBoundS3VM(max_nodes=5, **params).fit(X, y)


@pytest.mark.parametrize("algorithm, estimator", [("kda", "KernelDAS3VM"),
                                                  ("bb", "BranchAndBoundS3VM")])
def test_cli_fit_and_predict(client, tmp_path, algorithm, estimator):
    from sklearn.datasets import dump_svmlight_file

    from dask_ssl.cli import main

    X, truth, y = moons_draw(0, n=40)
    data = tmp_path / "moons.svm"
    dump_svmlight_file(X, np.where(y < 0, 0, np.where(y == 1, 1, -1)), str(data), zero_based=False)
    model = tmp_path / "model"
    with client.as_current():
        assert main(["fit", "--data", str(data), "--algorithm", algorithm, "--gamma-A", "0.05",
                     "--gamma-u", "2", "--model-out", str(model)]) == 0
        assert main(["predict", "--model", str(model), "--data", str(data),
                     "--outputs", str(tmp_path / "out")]) == 0
    loaded = load_model(model)
    assert loaded.model_document_["estimator"] == estimator
    np.testing.assert_allclose(np.loadtxt(tmp_path / "out"), loaded.decision_function(X), rtol=1e-9)
    assert loaded.dual_coef_.shape == (40, 1)


def test_branch_and_bound_on_two_moons_is_perfect_and_beats_da():
    """Table 3.1's setting (sigma = 0.5; Eq 3.1 gamma = 0.1, gamma' = 1, i.e. gamma = 0.1 / l and
    gamma_u = u / l here) on the 200-point draws of the DA test above: the proven global optimum
    labels every row right and DA's objective at the same setting is higher (Table 3.1: 7.81 vs
    46.85). Three of the ten draws: 1-3, as draw 0's tree is the largest (about 4x the
    search time of draw 1 here); benchmarks/bench_kernel_s3vm.py runs and times all ten,
    460-7,900 nodes each."""
    for seed in (1, 2, 3):
        X, truth, y = moons_draw(seed)
        u = int((y < 0).sum())
        setting = dict(gamma_A=0.05, gamma_u=u / 2, kernel_params={"gamma": 2.0})
        bb = BranchAndBoundS3VM(max_nodes=10000, **setting).fit(X, y)
        np.testing.assert_array_equal(bb.transduction_, truth)
        da = KernelDAS3VM(**setting).fit(X, y)
        K = kernel_matrix(X, kernel="rbf", kernel_params={"gamma": 2.0})
        a = da.dual_coef_[:, 0]
        ys = np.where(y < 0, 0.0, np.where(y == 1, 1.0, -1.0))
        assert s3vm_objective(a, K @ a, ys, 0.05, u / 2, "squared_hinge", n_pos=u // 2) > bb.objective_


@pytest.mark.parametrize("T", [1e-14, 6.3e-16, 3e-16])
def test_p_step_keeps_the_balance_below_the_rounding_of_g(T):
    """Late in the annealing T falls below the rounding of ``g`` (about 1e-16 against g near
    1). With most unlabeled rows tied at one output (a kernel matrix near the identity gives
    them all the same), the balance constraint ``mean(p) = r`` must still hold: measured
    from the smallest ``g``, not from ``nu``, whose rounding moved every tied row's logit by
    a tenth (the sum of p off by up to 29 of 190, or no bracket at all on HW digits)."""
    u, l = 1900, 100
    y = np.zeros(u + l)
    y[:10], y[10:l] = 1.0, -1.0
    driver = KernelDADriver(KernelDAS3VM(), np.eye(u + l), y, 0.1, 1.0, {})
    driver.T = T
    for tie in (0.3, -0.27, 0.123456789):
        f_u = np.concatenate([np.full(1650, tie), np.linspace(tie - 0.9, tie - 0.01, u - 1650)])
        p = driver._p_step(f_u)
        assert p.sum() == pytest.approx(190.0, abs=1e-6)
        # the tied rows share the positives the others leave (their outputs are the largest)
        np.testing.assert_allclose(p[:1650], 190.0 / 1650, rtol=1e-9)


def test_default_rbf_width_is_the_rows_own():
    """Features of scale 50: scikit-learn's ``gamma = 1 / n_features`` makes the kernel
    matrix nearly the identity, and the annealing then put every unlabeled row in the larger
    class (20% error). The default width is the rows' scale (``1 / (n_features var(X))``),
    recorded in ``kernel_params_``; the fit separates the classes, and equals the fit given
    that width."""
    from dask_ssl.data import stratified_split

    rng = np.random.default_rng(0)
    y = (rng.random(400) < 0.2).astype(int)
    X = 50.0 * (rng.normal(size=(400, 10)) + 4.0 * y[:, None] * np.eye(10)[0])
    train = stratified_split(y, n_labeled=40, seed=0).y_train(y, marker=-1)
    hidden = train == -1
    est = KernelDAS3VM().fit(X, train)
    assert est.kernel_params_ == {"gamma": pytest.approx(1.0 / (10 * X.var()), rel=1e-12)}
    assert np.mean(est.predict(X)[hidden] != y[hidden]) <= 0.05
    given = KernelDAS3VM(kernel_params=est.kernel_params_).fit(X, train)
    assert given.kernel_params_ == est.kernel_params_
    np.testing.assert_array_equal(est.decision_function(X), given.decision_function(X))
