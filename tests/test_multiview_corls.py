"""CoRLS against dense solves of the thesis' printed system and of each formulation's objective,
its exact leave-one-out against refits, and its input checks (all before any work)."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import rbf_kernel

from dask_ssl.models._selection import SelectionWarning
from dask_ssl.multiview import CoRLS
from dask_ssl.multiview import corls as corls_module
from dask_ssl.multiview.corls import (AUTO_COUPLING, UNCHECKED_COUPLING, corls_loo_outputs,
                                      corls_system)

KPS = [{"gamma": 0.4}, {"gamma": 0.8}, {"gamma": 0.2}]


def problem(n=36, n_labeled=12, n_views=2, n_classes=2, seed=0):
    """Views of the same rows (view s: a noisy copy of a few columns), labels by a class rule."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n, 4))
    Xs = [base[:, : 2 + s % 3] + 0.3 * rng.normal(size=(n, 2 + s % 3)) for s in range(n_views)]
    truth = np.digitize(base[:, 0], np.quantile(base[:, 0], np.linspace(0, 1, n_classes + 1)[1:-1]))
    y = np.full(n, -1)
    lab = rng.choice(n, n_labeled, replace=False)
    y[lab] = truth[lab]
    y[lab[:n_classes]] = np.arange(n_classes)
    return Xs, y, truth


def kernels_of(Xs):
    return [rbf_kernel(X, gamma=KPS[s]["gamma"]) for s, X in enumerate(Xs)]


def targets(y, classes):
    cols = [classes[1]] if len(classes) == 2 else classes
    return np.column_stack([np.where(y < 0, 0.0, np.where(y == c, 1.0, -1.0)) for c in cols])


@pytest.mark.parametrize("formulation, n_classes", [("coupled", 3), ("averaged", 2)])
def test_gamma_C_zero_is_one_kernel_rls_per_view(formulation, n_classes):
    Xs, y, _ = problem(n_classes=n_classes, n_labeled=15)
    gammas, mu = [1e-2, 3e-2], 2.5
    est = CoRLS(gamma_A=gammas, gamma_C=0.0, mu=mu, formulation=formulation,
                kernel_params=KPS[:2]).fit(Xs, y)
    L = np.flatnonzero(y >= 0)
    l = L.size
    Y = targets(y, list(range(n_classes)))
    c = [1.0, mu]
    Z = 1.0 if formulation == "coupled" else sum(c)
    for s, K in enumerate(kernels_of(Xs)):
        # kernel RLS on the labeled rows of view s: (K_LL + ridge I) alpha_L = Y_L
        alpha_L = np.linalg.solve(K[np.ix_(L, L)] + gammas[s] * l * Z / c[s] * np.eye(l), Y[L])
        expected = np.zeros_like(Y)
        expected[L] = alpha_L
        np.testing.assert_allclose(est.dual_coef_[s], expected, rtol=1e-8, atol=1e-10)
    assert est.selection_ == [] and est.gamma_C_ == 0.0


def test_coupled_system_is_the_printed_one_and_unlabeled_coefficients_balance():
    Xs, y, _ = problem()
    g1, g2, gC, mu = 1e-2, 4e-2, 3.0, 0.6
    est = CoRLS(gamma_A=[g1, g2], gamma_C=gC, mu=mu, kernel_params=KPS[:2]).fit(Xs, y)
    K1, K2 = kernels_of(Xs)
    n = y.size
    l = int((y >= 0).sum())
    J = np.diag((y >= 0).astype(float))
    Y = targets(y, [0, 1])
    I = np.eye(n)
    # thesis L1944-1945, written out block by block
    A = np.block([[J @ K1 / l + g1 * I + gC / n * K1, -gC / n * K2],
                  [-gC / n * K1, mu / l * J @ K2 + g2 * I + gC / n * K2]])
    z = np.linalg.solve(A, np.vstack([Y / l, mu / l * Y]))
    np.testing.assert_allclose(est.dual_coef_[0], z[:n], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(est.dual_coef_[1], z[n:], rtol=1e-8, atol=1e-10)
    U = y < 0
    alpha, beta = est.dual_coef_[0][U, 0], est.dual_coef_[1][U, 0]
    assert np.abs(alpha).max() > 1e-3  # the identity below is not 0 = 0
    np.testing.assert_allclose(g1 * alpha, -g2 * beta, rtol=0, atol=1e-8)


def test_unlabeled_coefficients_balance_for_any_number_of_views():
    """The coupling terms cancel in the sum over the views: sum_s gamma_s alpha_s = 0 on every
    unlabeled row (L1949 for two views), in both formulations."""
    Xs, y, _ = problem(n_views=3, n_classes=3, n_labeled=15)
    gammas = np.array([1e-2, 4e-2, 2e-2])
    U = y < 0
    for formulation in ("coupled", "averaged"):
        est = CoRLS(gamma_A=gammas, gamma_C=0.5, mu=[0.5, 2.0], formulation=formulation,
                    kernel_params=KPS).fit(Xs, y)
        weighted = np.einsum("s,sic->ic", gammas, est.dual_coef_)
        assert np.abs(est.dual_coef_[:, U]).max() > 1e-3
        np.testing.assert_allclose(weighted[U], 0.0, rtol=0, atol=1e-8)


@pytest.mark.parametrize("formulation, n_views", [("averaged", 2), ("averaged", 3),
                                                  ("coupled", 3)])
def test_each_formulation_minimizes_its_own_objective(formulation, n_views):
    """Stationarity of the objective written in the coefficients (the Hessian system, not
    divided by K_s as the estimator's is): the same outputs on the rows."""
    Xs, y, _ = problem(n_views=n_views, n=30)
    gammas, gC, mu = [2e-2, 1e-2, 5e-2][:n_views], 5.0, [1.0, 1.5][: n_views - 1]
    est = CoRLS(gamma_A=gammas, gamma_C=gC, mu=mu, formulation=formulation,
                kernel_params=KPS[:n_views]).fit(Xs, y)
    Ks = kernels_of(Xs)
    n, lab = y.size, (y >= 0).astype(float)
    l = lab.sum()
    c = np.array([1.0, *mu])
    Z = 1.0 if formulation == "coupled" else c.sum()
    D = np.ones(n) if formulation == "coupled" else 1.0 - lab
    g = gC / n
    Y = targets(y, [0, 1])[:, 0]
    # objective: sum_s c_s/(lZ) ||J(K_s a_s - y)||^2 + gamma_s a_s'K_s a_s
    #            + g sum_{s<t} ||D^1/2 (K_s a_s - K_t a_t)||^2
    P = np.zeros((n_views * n, n_views * n))
    q = np.zeros(n_views * n)
    for s in range(n_views):
        bs = slice(s * n, (s + 1) * n)
        P[bs, bs] = c[s] / (l * Z) * Ks[s] @ (lab[:, None] * Ks[s]) + gammas[s] * Ks[s]
        q[bs] = c[s] / (l * Z) * Ks[s] @ (lab * Y)
        for t in range(n_views):
            if t != s:
                bt = slice(t * n, (t + 1) * n)
                P[bs, bs] += g * Ks[s] @ (D[:, None] * Ks[s])
                P[bs, bt] = -g * Ks[s] @ (D[:, None] * Ks[t])
    z = np.linalg.solve(P, q).reshape(n_views, n)
    for s in range(n_views):
        np.testing.assert_allclose(Ks[s] @ est.dual_coef_[s][:, 0], Ks[s] @ z[s], rtol=1e-6,
                                   atol=1e-8)


@pytest.mark.parametrize("formulation, combine", [("coupled", "mean"), ("coupled", 1),
                                                  ("averaged", "mean")])
def test_leave_one_out_outputs_are_refits_without_the_row(formulation, combine):
    Xs, y, _ = problem(n=30, n_classes=3, n_labeled=12)
    Ks = kernels_of(Xs)
    Y, labeled = targets(y, [0, 1, 2]), y >= 0
    params = dict(gamma_A=[1e-2, 3e-2], gamma_C=2.0, mu=0.7, formulation=formulation)
    out = corls_loo_outputs(Ks, Y, labeled, combine=combine, **params)
    L = np.flatnonzero(labeled)
    for k, i in enumerate(L):
        held = labeled.copy()
        held[i] = False
        A, B = corls_system(Ks, Y * held[:, None], held, n_labeled=L.size, **params)
        z = np.linalg.solve(A, B).reshape(2, y.size, 3)
        f = [Ks[s][i] @ z[s] for s in range(2)]
        np.testing.assert_allclose(out[k], np.mean(f, axis=0) if combine == "mean"
                                   else f[combine], rtol=1e-8, atol=1e-10)


def test_auto_gamma_C_keeps_the_supervised_candidate_and_refits_at_the_choice():
    Xs, y, _ = problem(n=40, n_labeled=16)
    est = CoRLS(gamma_A=[1e-3, 3e-3], kernel_params=KPS[:2]).fit(Xs, y)
    # the candidates follow the views' mean gamma_A; 0, the supervised model, comes first
    assert [row["gamma_C"] for row in est.selection_] == [rho * 2e-3 for rho in AUTO_COUPLING]
    assert AUTO_COUPLING[0] == 0.0
    chosen = [row for row in est.selection_ if row["chosen"]]
    assert len(chosen) == 1 and chosen[0]["gamma_C"] == est.gamma_C_
    assert all(0 <= row["errors"] <= 16 for row in est.selection_)
    fixed = CoRLS(gamma_A=[1e-3, 3e-3], gamma_C=est.gamma_C_, kernel_params=KPS[:2]).fit(Xs, y)
    np.testing.assert_allclose(est.dual_coef_, fixed.dual_coef_)


def test_too_few_labels_keep_the_default_coupling_and_warn():
    Xs, y, _ = problem(n_labeled=6)
    with pytest.warns(SelectionWarning, match="gamma_C"):
        est = CoRLS(gamma_A=0.02, kernel_params=KPS[:2]).fit(Xs, y)
    assert est.gamma_C_ == pytest.approx(UNCHECKED_COUPLING * 0.02) and est.selection_ == []


def test_named_views_predict_by_name_and_combine_picks_a_view():
    Xs, y, truth = problem(n=40, n_labeled=16)
    named = {"a": Xs[0], "b": sp.csr_matrix(Xs[1])}
    est = CoRLS(gamma_C=1.0, combine="b", kernel_params=KPS[:2]).fit(named, y)
    new = {"b": Xs[1][:7] + 0.1, "a": Xs[0][:7] - 0.1}  # another order: matched by name
    per_view = est.view_decision_functions(new)
    np.testing.assert_allclose(est.decision_function(new), per_view[1])
    np.testing.assert_allclose(
        per_view[0], rbf_kernel(new["a"], Xs[0], gamma=0.4) @ est.dual_coef_[0][:, 0])
    mean = CoRLS(gamma_C=1.0, kernel_params=KPS[:2]).fit(named, y)
    np.testing.assert_allclose(mean.decision_function(new),
                               np.mean(mean.view_decision_functions(new), axis=0))
    assert set(mean.predict(new)) <= {0, 1}
    assert mean.score(named, truth) == np.mean(mean.transduction_ == truth)
    with pytest.raises(ValueError, match="pass a dict"):
        est.predict([Xs[0], Xs[1]])
    with pytest.raises(ValueError, match=r"missing \['b'\]"):
        est.predict({"a": Xs[0]})
    with pytest.raises(ValueError, match=r"extra \['c'\]"):
        est.predict({**named, "c": Xs[0]})


def test_rbf_width_default_is_filled_per_view():
    Xs, y, _ = problem()
    est = CoRLS(gamma_C=1.0, kernel=["rbf", "linear"]).fit([Xs[0], 10 * Xs[1]], y)
    assert "gamma" in est.kernel_params_[0] and est.kernel_params_[1] == {}


@pytest.mark.parametrize("change, match", [
    (lambda Xs, y: ([Xs[0], Xs[1][:-1]], y), "view 0 has 36 rows but view 1 has 35"),
    (lambda Xs, y: ([Xs[0], np.where(Xs[1] > 1.5, np.nan, Xs[1])], y), "view 1: .*NaN"),
    (lambda Xs, y: ([Xs[0]], y), "1 view"),
    (lambda Xs, y: (Xs, np.where(y == 1, 0, y)), "only one labeled class"),
    (lambda Xs, y: (Xs, np.full(y.size, -1)), "no labeled rows"),
    (lambda Xs, y: (Xs, y[:-1]), "y has 35 entries"),
    (lambda Xs, y: ([np.zeros((10001, 1))] * 2, np.zeros(10001)), "dense system of 2 views"),
])
def test_bad_input_is_refused_before_any_work(monkeypatch, change, match):
    monkeypatch.setattr(corls_module, "kernel_matrix", _no_work)
    Xs, y, _ = problem()
    with pytest.raises(ValueError, match=match):
        CoRLS().fit(*change(Xs, y))


@pytest.mark.parametrize("params, match", [
    ({"gamma_A": -1.0}, "gamma_A"),
    ({"gamma_A": [1e-3, 0.0]}, r"gamma_A\[1\]"),
    ({"gamma_A": [1e-3] * 3}, "one per view"),
    ({"gamma_C": -0.5}, "gamma_C"),
    ({"mu": 0.0}, "mu"),
    ({"formulation": "sum"}, "formulation"),
    ({"combine": 2}, "combine=2 is not a view index"),
    ({"combine": "best"}, "combine='best'"),
    ({"formulation": "averaged", "combine": 0}, "combine must be 'mean'"),
    ({"kernel": "nope"}, "kernel"),
    ({"kernel_params": [{"gamma": 1.0}]}, "kernel_params has 1 value"),
    ({"kernel": "linear", "kernel_params": {"gamma": 1.0}}, "view 0: kernel 'linear'"),
])
def test_out_of_range_parameters_are_refused_before_any_work(monkeypatch, params, match):
    monkeypatch.setattr(corls_module, "kernel_matrix", _no_work)
    Xs, y, _ = problem()
    with pytest.raises(ValueError, match=match):
        CoRLS(**params).fit(Xs, y)


def _no_work(*args, **kwargs):
    raise AssertionError("a kernel was computed before the input was checked")


def test_views_read_from_a_mat_file_fit_as_they_come(tmp_path):
    """The reader's views (one of them sparse) go straight in: the file's class ids, -1 on the
    rows left unlabeled, give the fit of the same views in memory."""
    import scipy.io

    from dask_ssl.data.multiview import read_multiview

    Xs, y, truth = problem(n=30)
    cells = np.empty((1, 2), dtype=object)
    cells[0, 0], cells[0, 1] = Xs[0], sp.csc_matrix(Xs[1])
    scipy.io.savemat(tmp_path / "views.mat", {"X": cells, "Y": (truth + 1)[:, None]})
    views, ids = read_multiview(tmp_path / "views.mat")
    assert sp.issparse(views[1])
    labels = np.where(y >= 0, ids, -1)
    est = CoRLS(gamma_C=1.0, kernel_params=KPS[:2]).fit(views, labels)
    dense = CoRLS(gamma_C=1.0, kernel_params=KPS[:2]).fit(Xs, np.where(y >= 0, truth + 1, -1))
    np.testing.assert_allclose(est.dual_coef_, dense.dual_coef_, rtol=1e-10)
    assert set(est.classes_) == {1, 2}
