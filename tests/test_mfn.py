"""L2-SVM-MFN and RLS on row blocks against dense NumPy/SciPy solutions on small data."""

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp

from dask_ssl.linalg.line_search import exact_root
from dask_ssl.models import L2SVM, RLS


def svm_objective(X, y, w, gamma):
    """Thesis Eq 6.2 with labeled cost 1/l and the bias as a regularized constant feature."""
    Xa = np.column_stack([X.toarray() if sp.issparse(X) else X, np.ones(X.shape[0])])
    lab = y != 0
    o = Xa[lab] @ w
    return 0.5 * gamma * w @ w + 0.5 / lab.sum() * np.sum(np.maximum(0, 1 - y[lab] * o) ** 2)


def dense_svm(X, y, gamma):
    res = scipy.optimize.minimize(lambda w: svm_objective(X, y, w, gamma),
                                  np.zeros(X.shape[1] + 1), method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-15,
                                                               "maxiter": 10000})
    return res.fun


def problem(sparse, seed=0, n=240, d=8):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.6)
    y = np.sign(X @ rng.normal(size=d) + 0.7 * rng.normal(size=n) + 0.3)
    y[y == 0] = 1
    return (sp.csr_matrix(X) if sparse else X), y


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("solver", ["gram", "cg"])
def test_l2svm_matches_dense_optimum(client, sparse, solver):
    X, y = problem(sparse)
    gamma = 0.01
    m = L2SVM(gamma_A=gamma, solver=solver, unlabeled=0, client=client, n_blocks=3).fit(X, y)
    w = np.r_[m.coef_[0], m.intercept_]
    reference = dense_svm(X, y, gamma)
    assert svm_objective(X, y, w, gamma) == pytest.approx(m.objective_, rel=1e-10)
    assert m.objective_ == pytest.approx(reference, rel=1e-8)
    assert m.objective_ <= reference * (1 + 1e-9)


def test_unlabeled_rows_are_ignored_by_supervised_svm(client):
    X, y = problem(False, seed=1)
    y_partial = y.copy()
    y_partial[::3] = 0
    m = L2SVM(gamma_A=0.05, unlabeled=0, client=client).fit(X, y_partial)
    keep = y_partial != 0
    m2 = L2SVM(gamma_A=0.05, unlabeled=0, client=client).fit(X[keep], y[keep])
    np.testing.assert_allclose(m.coef_, m2.coef_, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("n_blocks", [1, 3, 7])
def test_result_independent_of_block_count(client, n_blocks):
    X, y = problem(True, seed=2, n=301)
    ref = L2SVM(gamma_A=0.003, unlabeled=0, client=client, n_blocks=2).fit(X, y)
    m = L2SVM(gamma_A=0.003, unlabeled=0, client=client, n_blocks=n_blocks).fit(X, y)
    assert m.objective_ == pytest.approx(ref.objective_, rel=1e-10)
    np.testing.assert_allclose(m.coef_, ref.coef_, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_rmatvec_pair_is_two_rmatvecs_to_the_bit(sparse, bias):
    from dask_ssl.linalg import kernels

    rng = np.random.default_rng(5)
    X, _ = problem(sparse, seed=5, n=400, d=30)
    # rows where one, both or neither weight is zero
    u = rng.normal(size=400) * (rng.random(400) < 0.5)
    v = rng.normal(size=400) * (rng.random(400) < 0.3)
    got_u, got_v = kernels.rmatvec_pair(X, u, v, bias)
    assert np.array_equal(got_u, kernels.rmatvec(X, u, bias))
    assert np.array_equal(got_v, kernels.rmatvec(X, v, bias))


def test_dask_array_input_gives_the_numpy_model(client):
    import dask.array as da

    X, y = problem(False, seed=4, n=300)
    ref = L2SVM(gamma_A=0.01, unlabeled=0, client=client).fit(X, y)
    m = L2SVM(gamma_A=0.01, unlabeled=0, client=client).fit(da.from_array(X, chunks=(100, 8)), y)
    np.testing.assert_allclose(m.coef_, ref.coef_, rtol=1e-9, atol=1e-12)
    scores = m.decision_function(da.from_array(X, chunks=(100, 8)))
    assert isinstance(scores, da.Array)
    np.testing.assert_allclose(scores.compute(), ref.decision_function(X), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("solver", ["gram", "cg"])
def test_rls_equals_closed_form(client, solver):
    X, y = problem(True, seed=3)
    gamma = 0.02
    m = RLS(gamma_A=gamma, solver=solver, unlabeled=0, client=client, n_blocks=4, tol=1e-12).fit(X, y)
    Xa = np.column_stack([X.toarray(), np.ones(X.shape[0])])
    l = X.shape[0]
    # thesis: w = (X^T X + gamma l I)^-1 X^T y
    w = np.linalg.solve(Xa.T @ Xa + gamma * l * np.eye(Xa.shape[1]), Xa.T @ y)
    np.testing.assert_allclose(np.r_[m.coef_[0], m.intercept_], w, rtol=1e-8, atol=1e-10)
    assert m.n_iter_ == 1


def test_multiclass_one_vs_rest(client):
    rng = np.random.default_rng(4)
    centers = np.array([[0, 4], [4, 0], [-4, -4]])
    labels = rng.integers(0, 3, size=300)
    X = centers[labels] + rng.normal(size=(300, 2))
    y = np.array(["a", "b", "c"])[labels].astype(object)
    y[::2] = "?"
    m = L2SVM(gamma_A=0.01, unlabeled="?", client=client).fit(X, y)
    assert list(m.classes_) == ["a", "b", "c"]
    assert m.coef_.shape == (3, 2)
    assert np.mean(m.predict(X) == np.array(["a", "b", "c"])[labels]) > 0.95
    for k, cls in enumerate(m.classes_):
        yk = np.where(y == "?", 0.0, np.where(y == cls, 1.0, -1.0))
        w = np.r_[m.coef_[k], m.intercept_[k]]
        assert svm_objective(X, yk, w, 0.01) == pytest.approx(dense_svm(X, yk, 0.01), rel=1e-8)


def test_warm_start_reaches_same_optimum_in_fewer_steps(client):
    X, y = problem(True, seed=5, n=400)
    cold = L2SVM(gamma_A=1e-3, unlabeled=0, client=client).fit(X, y)
    warm = L2SVM(gamma_A=1e-3, unlabeled=0, client=client).fit(X, y, coef_init=cold.coef_with_bias())
    assert warm.objective_ == pytest.approx(cold.objective_, rel=1e-10)
    assert warm.n_iter_ < cold.n_iter_


def brute_root(lo, der_lo, slope_lo, positions, changes, hi):
    grid = np.linspace(lo, hi, 200001)
    der = np.full_like(grid, der_lo)
    slope_at = np.full_like(grid, slope_lo)
    for p, c in zip(positions, changes):
        slope_at = slope_at + np.where(grid > p, c, 0.0)
    # integrate the piecewise-constant slope
    der = der_lo + np.concatenate([[0], np.cumsum(slope_at[:-1] * np.diff(grid))])
    return grid[np.argmin(np.abs(der))]


def test_exact_root_of_piecewise_linear_derivative():
    rng = np.random.default_rng(6)
    positions = np.sort(rng.uniform(0, 1, size=12))
    changes = rng.uniform(-0.3, 1.0, size=12)
    slope_lo = 1.0 + np.abs(changes).sum()
    root = exact_root(0.0, -1.5, slope_lo, positions, changes, 1.0 + 10)
    # phi' evaluated exactly at the returned root is zero
    der = -1.5 + slope_lo * root + sum(c * max(0.0, root - p) for p, c in zip(positions, changes))
    assert abs(der) < 1e-12
    assert root == pytest.approx(brute_root(0.0, -1.5, slope_lo, positions, changes, 11.0), abs=1e-3)


def test_line_search_lands_on_exact_minimizer(client):
    """The first Newton step from w = 0: the step length minimizes phi along the direction."""
    from dask_ssl.solvers.mfn import MFNSolver
    from dask_ssl.models.l2svm import hinge_costs, init_blocks
    from dask_ssl.linalg import RowBlocks

    X, y = problem(False, seed=7, n=200, d=5)
    X = X * 3.0
    gamma = 0.05
    blocks = RowBlocks.from_array(X, client=client, n_blocks=3)
    init_blocks(blocks, "ls-test", hinge_costs(y, np.full(len(y), 1 / len(y))))
    solver = MFNSolver(blocks, "ls-test", max_newton=1)
    res = solver.solve(None, gamma)
    # w after one step = delta * wbar with wbar the Newton point of the full active set
    Xa = np.column_stack([X, np.ones(len(y))])
    wbar = np.linalg.solve(Xa.T @ Xa / len(y) + gamma * np.eye(6), Xa.T @ y / len(y))
    phi = lambda d: svm_objective(X, y, d * wbar, gamma)
    best = scipy.optimize.minimize_scalar(phi, bounds=(0, 2), method="bounded",
                                          options={"xatol": 1e-12})
    delta = res.w @ wbar / (wbar @ wbar)
    np.testing.assert_allclose(res.w, delta * wbar, rtol=1e-9, atol=1e-12)
    assert delta == pytest.approx(best.x, abs=1e-6)
    assert res.objective == pytest.approx(phi(delta), rel=1e-12)


def test_direct_call_combines_block_results_per_worker(client):
    from dask_ssl.linalg import RowBlocks

    X, _ = problem(True, n=300)
    blocks = RowBlocks.from_array(X, client=client, n_blocks=5)
    col_sums = lambda i, Xi: np.asarray(Xi.sum(axis=0)).ravel()  # noqa: E731
    per_block = blocks.call(col_sums)
    per_worker = blocks.call(col_sums, combine=sum)
    assert len(per_block) == 5 and len(per_worker) == len(set(blocks.owners()))
    np.testing.assert_allclose(sum(per_worker), np.asarray(X.sum(axis=0)).ravel())
    np.testing.assert_allclose(sum(per_worker), sum(per_block))


def test_blocks_of_given_sizes(client):
    from dask_ssl.linalg import RowBlocks

    X, _ = problem(True, n=300)
    blocks = RowBlocks.from_array(X, client=client, sizes=[50, 200, 50])
    assert list(blocks.sizes) == [50, 200, 50]
    got = blocks.call(lambda i, Xi: Xi.shape[0])
    assert got == [50, 200, 50]
    for sizes in ([100, 100], [300, 0], [350, -50]):
        with pytest.raises(ValueError, match="do not split 300 rows"):
            RowBlocks.from_array(X, client=client, sizes=sizes)
