import numpy as np
import pytest

from dask_ssl.linalg.block_cg import LocalSystem, block_cg


def _spd(n, rng, cond=100.0):
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (Q * np.geomspace(1.0, cond, n)) @ Q.T


def test_each_column_equals_dense_solve():
    rng = np.random.default_rng(0)
    A = _spd(60, rng)
    B = rng.standard_normal((60, 4))
    system = LocalSystem(A, B)
    res = block_cg(system, tol=1e-10, maxiter=500)
    X = system.solution()
    assert res.converged.all()
    for j in range(B.shape[1]):
        np.testing.assert_allclose(X[:, j], np.linalg.solve(A, B[:, j]), rtol=1e-7, atol=1e-9)


def test_converged_column_stops_moving():
    rng = np.random.default_rng(1)
    A = _spd(80, rng, cond=1e3)
    # Column 0 is an eigenvector, so CG finishes it in one step; column 1 needs many.
    w, V = np.linalg.eigh(A)
    B = np.column_stack([V[:, 5], rng.standard_normal(80)])
    snapshots = []
    system = LocalSystem(A, B)
    res = block_cg(system, tol=1e-8, maxiter=500,
                   callback=lambda k, rel: snapshots.append(system.X.copy()))
    assert res.converged.all()
    assert res.n_iter[0] == 1 and res.n_iter[1] > 20
    stop = res.n_iter[0]
    for snap in snapshots[stop:]:
        np.testing.assert_array_equal(snap[:, 0], snapshots[stop - 1][:, 0])
    np.testing.assert_allclose(system.solution()[:, 0], np.linalg.solve(A, B[:, 0]), atol=1e-7)


def test_seed_at_solution_needs_no_iteration_and_warm_start_saves_work():
    rng = np.random.default_rng(2)
    A = _spd(50, rng, cond=1e3)
    B = rng.standard_normal((50, 2))
    exact = np.linalg.solve(A, B)
    res = block_cg(LocalSystem(A, B, X0=exact), tol=1e-8)
    assert (res.n_iter == 0).all() and res.converged.all()
    cold = block_cg(LocalSystem(A, B), tol=1e-8)
    warm = block_cg(LocalSystem(A, B, X0=exact + 1e-4 * rng.standard_normal(exact.shape)), tol=1e-8)
    assert (warm.n_iter < cold.n_iter).all()


def test_zero_column_and_vector_rhs():
    A = _spd(20, np.random.default_rng(3))
    system = LocalSystem(A, np.zeros(20))
    res = block_cg(system)
    assert res.n_iter[0] == 0
    np.testing.assert_array_equal(system.solution(), np.zeros(20))


def test_bad_tol():
    with pytest.raises(ValueError, match="tol"):
        block_cg(LocalSystem(np.eye(3), np.ones(3)), tol=0)


def test_products_skip_the_columns_converged_to_zero_directions():
    """A many-column solve through ``on_moving_columns`` multiplies only the columns still
    moving, and solves as the plain product does."""
    from dask_ssl.linalg.block_cg import on_moving_columns

    rng = np.random.default_rng(2)
    A = _spd(80, rng, cond=1e3)
    w, V = np.linalg.eigh(A)
    # column 0 an eigenvector (done in one step), the others need many
    B = np.column_stack([V[:, 5], rng.standard_normal((80, 3))])
    carried = []

    def counted(P):
        out, columns = on_moving_columns(lambda Q: A @ Q, P)
        carried.append(columns)
        return out

    system = LocalSystem(counted, B)
    res = block_cg(system, tol=1e-10, maxiter=500)
    assert res.converged.all() and res.n_iter[0] == 1
    np.testing.assert_allclose(system.solution(), np.linalg.solve(A, B), rtol=1e-7, atol=1e-9)
    # the zero seed's product (r = b - A 0) multiplies nothing; then all four, then three
    assert carried[:2] == [0, 4] and max(carried[3:]) == 3 and min(carried[1:]) >= 1

    vector, columns = on_moving_columns(lambda Q: A @ Q, np.zeros(80))
    assert vector.shape == (80,) and not vector.any() and columns == 0
