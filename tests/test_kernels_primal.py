"""Kernel row blocks on the workers and the distributed primal LapRLS / LapSVM solver, against
dense single-process NumPy / SciPy solutions of the same objectives on small data."""

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from scipy.sparse.csgraph import laplacian
from sklearn.neighbors import kneighbors_graph

from dask_ssl.graph.weights import Graph
from dask_ssl.kernels.base import kernel_matrix
from dask_ssl.kernels.blocks import KernelBlocks
from dask_ssl.solvers.primal import solve_primal
from dask_ssl.linalg.rowblocks import RowBlocks

KP = {"gamma": 0.5}


def _moons(n=240, seed=0, n_classes=2):
    """Noisy interleaved moons (a third class: a blob), a symmetric heat-weighted 8-NN graph,
    5 labels per class."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, np.pi, n)
    cls = np.arange(n) % n_classes
    X = np.column_stack([np.cos(t), np.sin(t)])
    X[cls == 1] = np.column_stack([1 - np.cos(t), 0.5 - np.sin(t)])[cls == 1]
    if n_classes > 2:
        X[cls == 2] = rng.normal([3.0, 1.0], 0.3, size=((cls == 2).sum(), 2))
    X += rng.normal(0, 0.1, X.shape)
    A = kneighbors_graph(X, 8, mode="distance")
    A.data = np.exp(-A.data ** 2 / 0.1)
    W = sp.csr_matrix(A.maximum(A.T))
    labeled = np.zeros(n, bool)
    for k in range(n_classes):
        labeled[np.flatnonzero(cls == k)[:5]] = True
    Y = np.where(cls[:, None] == np.arange(n_classes), 1.0, -1.0) * labeled[:, None]
    return X, W, Y, labeled, cls


def _dense_M(W, normalized, p):
    L = laplacian(W.toarray(), normed=normalized)
    return np.linalg.matrix_power(L, p)


def _dense_laprls(K, M, Y, labeled, gamma_A, gamma_I):
    """Eq 2.12 with the effective gamma_I: (J K + gamma_A l I + gamma_I l M K)^-1 Y."""
    n, l = K.shape[0], labeled.sum()
    J = np.diag(labeled.astype(float))
    return np.linalg.solve(J @ K + gamma_A * l * np.eye(n) + gamma_I * l * M @ K, Y)


def _hinge_objective(K, M, y, labeled, gamma_A, gamma_I, alpha, b):
    f = K @ alpha + b
    l = labeled.sum()
    return (np.sum(np.maximum(0, 1 - y[labeled] * f[labeled]) ** 2) / l
            + gamma_A * alpha @ K @ alpha + gamma_I * f @ M @ f)


def _dense_lapsvm(K, M, y, labeled, gamma_A, gamma_I):
    """Squared-hinge LapSVM with bias: dense Newton over the active set (full steps, from the
    RLS start), each step the stationarity system of the quadratic piece."""
    n, l = K.shape[0], labeled.sum()
    one = np.ones(n)
    alpha, b = np.zeros(n), 0.0
    E = labeled.copy()
    for _ in range(100):
        JE = np.diag(E.astype(float)) / l
        A = np.zeros((n + 1, n + 1))
        A[:n, :n] = JE @ K + gamma_A * np.eye(n) + gamma_I * M @ K
        A[:n, n] = JE @ one + gamma_I * M @ one
        A[n, :n] = one @ (JE @ K + gamma_I * M @ K)
        A[n, n] = one @ (JE @ one + gamma_I * M @ one)
        rhs = np.append(JE @ y, one @ JE @ y)
        sol = np.linalg.solve(A, rhs)
        alpha, b = sol[:n], sol[n]
        E_new = labeled & (y * (K @ alpha + b) < 1)
        if (E_new == E).all():
            return alpha, b
        E = E_new
    raise RuntimeError("dense reference Newton did not settle")


@pytest.fixture(scope="module")
def moons():
    return _moons()


def _blocks(client, X, n_blocks):
    return RowBlocks.from_array(X, client=client, n_blocks=n_blocks)


@pytest.mark.parametrize("n_blocks,n", [(1, 240), (3, 240), (2, 239), (3, 7)])
def test_kernel_block_products_match_dense(client, moons, n_blocks, n):
    """K V from the workers' bands: float64 bands give the dense product; float32 bands give
    the product with the float32-rounded K exactly (accumulated in float64), which is the dense
    one to float32 precision; each pair is kept once (n // 2 + 1 values a row, even and odd n);
    a submatrix comes back in the asked order, from whichever row keeps each pair."""
    X = moons[0][:n]
    K = kernel_matrix(X, kernel="rbf", kernel_params=KP)
    V = np.random.default_rng(1).standard_normal((X.shape[0], 3))
    data = _blocks(client, X, n_blocks)
    k64 = KernelBlocks(data, kernel="rbf", kernel_params=KP, dtype="float64")
    k32 = KernelBlocks(data, kernel="rbf", kernel_params=KP)
    try:
        before = k64.rows.round_trips
        np.testing.assert_allclose(k64.matmat(V), K @ V, rtol=1e-12, atol=1e-12)
        assert k64.rows.round_trips == before + 1
        assert k64.rows.owners() == data.owners()  # the rows live beside the data blocks
        got32 = k32.matmat(V[:, 0])
        np.testing.assert_allclose(got32, K.astype(np.float32).astype(np.float64) @ V[:, 0],
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got32, K @ V[:, 0], rtol=0, atol=1e-6 * np.abs(K @ V[:, 0]).max())
        assert np.abs(got32 - K @ V[:, 0]).max() > 0  # really float32 storage
        assert k32.nbytes.sum() == n * (n // 2 + 1) * 4
        rows = np.array([n - 40, 3, n // 2, n // 2 - 1, 81, n - 1]) % n
        cols = np.array([7, n - 1, 0, n // 2, n // 2 + 1, 3]) % n
        np.testing.assert_allclose(k64.submatrix(rows, cols), K[np.ix_(rows, cols)], rtol=1e-14)
        np.testing.assert_array_equal(k32.submatrix(rows, cols),
                                      K.astype(np.float32)[np.ix_(rows, cols)])
    finally:
        k64.close()
        k32.close()


@pytest.mark.parametrize("n_blocks,normalized,p,gamma_I", [(1, True, 2, 0.05), (3, False, 1, 0.002),
                                                          (2, True, 1, 0.0)])
def test_laprls_equals_dense_eq_2_12(client, moons, n_blocks, normalized, p, gamma_I):
    """The distributed squared-loss solve is Eq 2.12 solved densely (gamma_I = 0: kernel RLS),
    with the graph split into other blocks than the data."""
    X, W, Y, labeled, _ = moons
    Y = Y[:, :1]
    K = kernel_matrix(X, kernel="rbf", kernel_params=KP)
    M = _dense_M(W, normalized, p)
    expected = _dense_laprls(K, M, Y, labeled, 0.01, gamma_I)
    data = _blocks(client, X, n_blocks)
    graph = Graph.from_scipy(W, client=client, n_blocks=2)
    res = solve_primal(data, graph, Y, labeled, kernel="rbf", kernel_params=KP, gamma_A=0.01,
                       gamma_I=gamma_I, loss="squared", normalized=normalized, p=p, tol=1e-11,
                       max_iter=2000, client=client, dtype="float64", early_stopping=False)
    assert res.converged.all()
    np.testing.assert_allclose(res.alpha, expected, rtol=0, atol=1e-6 * np.abs(expected).max())
    np.testing.assert_allclose(res.decision, K @ expected, rtol=0,
                               atol=1e-6 * np.abs(K @ expected).max())
    np.testing.assert_array_equal(res.intercept, 0.0)
    # per PCG iteration: one K product, p Laplacian steps (none without the graph term)
    per_iter = 1 + (p if gamma_I else 0)
    assert res.round_trips <= 6 + (p + 3) + per_iter * (res.n_iter + 2)


def test_columns_together_equal_one_by_one(client):
    """Three one-vs-rest squared-hinge columns (each with its own active set) in one block solve
    give each column's own solve; kernel rows built once serve every solve."""
    X, W, Y, labeled, _ = _moons(n=210, seed=3, n_classes=3)
    data = _blocks(client, X, 2)
    graph = Graph.from_scipy(W, client=client, n_blocks=2)
    K = KernelBlocks(data, kernel="rbf", kernel_params=KP, dtype="float64")
    kw = dict(kernel_blocks=K, gamma_A=1e-3, gamma_I=0.01, normalized=True, p=1, tol=1e-10,
              max_iter=2000, client=client, early_stopping=False, loss="squared_hinge")
    try:
        together = solve_primal(data, graph, Y, labeled, **kw)
        assert together.converged.all()
        for j in range(3):
            alone = solve_primal(data, graph, Y[:, j], labeled, **kw)
            np.testing.assert_allclose(together.decision[:, j], alone.decision[:, 0],
                                       atol=1e-7 * np.abs(alone.decision).max())
            np.testing.assert_allclose(together.intercept[j], alone.intercept[0], atol=1e-7)
            assert together.n_newton[j] == alone.n_newton[0]
    finally:
        K.close()


@pytest.mark.parametrize("loss", ["squared", "squared_hinge"])
def test_columns_with_their_own_labels_and_gamma_I_equal_separate_solves(client, loss):
    """Cross-validation's layout: each column has its own labeled rows (a fold held out: its
    own l, its held-out rows unlabeled) and its own gamma_I (0 among them, kept out of the
    graph products); the joint solve gives each column's separate solve with one mask and
    one gamma_I."""
    X, W, Y, labeled, _ = _moons(n=240, seed=5)
    data = _blocks(client, X, 2)
    graph = Graph.from_scipy(W, client=client, n_blocks=2)
    K = KernelBlocks(data, kernel="rbf", kernel_params=KP, dtype="float64")
    rows = np.flatnonzero(labeled)
    held = [np.isin(np.arange(240), rows[f::2]) for f in range(2)]
    # columns: (labeled rows, gamma_I, target)
    cases = [(labeled, 0.01, 0), (labeled & ~held[0], 0.0, 0), (labeled & ~held[1], 0.05, 1),
             (labeled & ~held[0], 0.01, 1)]
    masks = np.column_stack([m for m, _, _ in cases])
    gammas = np.array([g for _, g, _ in cases])
    Yc = Y[:, [t for _, _, t in cases]] * masks
    kw = dict(kernel_blocks=K, gamma_A=1e-3, normalized=True, p=2, tol=1e-10, max_iter=5000,
              client=client, early_stopping=False, loss=loss)
    try:
        together = solve_primal(data, graph, Yc, masks, gamma_I=gammas, **kw)
        assert together.converged.all()
        for j, (mask, gamma_I, _) in enumerate(cases):
            alone = solve_primal(data, graph, Yc[:, j], mask, gamma_I=gamma_I, **kw)
            scale = np.abs(alone.decision).max()
            np.testing.assert_allclose(together.decision[:, j], alone.decision[:, 0],
                                       atol=1e-7 * scale)
            np.testing.assert_allclose(together.intercept[j], alone.intercept[0], atol=1e-7)
            np.testing.assert_allclose(together.objective[j], alone.objective[0], rtol=1e-8)
            assert together.n_newton[j] == alone.n_newton[0]
        # columns without a graph term never call the graph's blocks
        trips = graph.W.round_trips
        solve_primal(data, graph, Yc, masks, gamma_I=np.zeros(len(cases)), **{**kw, "max_iter": 5})
        assert graph.W.round_trips == trips
    finally:
        K.close()


@pytest.mark.parametrize("n_blocks,normalized", [(1, True), (2, False)])
def test_lapsvm_squared_hinge_equals_dense_newton(client, moons, n_blocks, normalized):
    """Squared-hinge LapSVM with bias: objective, decision values and bias of the dense Newton
    solution; no lower objective from SciPy's L-BFGS on the same function."""
    X, W, Y, labeled, _ = moons
    y = Y[:, 0]
    K = kernel_matrix(X, kernel="rbf", kernel_params=KP)
    M = _dense_M(W, normalized, 1)
    gA, gI = 1e-3, (0.01 if normalized else 0.001)
    alpha, b = _dense_lapsvm(K, M, y, labeled, gA, gI)
    obj = _hinge_objective(K, M, y, labeled, gA, gI, alpha, b)
    data = _blocks(client, X, n_blocks)
    graph = Graph.from_scipy(W, client=client, n_blocks=n_blocks)
    res = solve_primal(data, graph, y, labeled, kernel="rbf", kernel_params=KP, gamma_A=gA,
                       gamma_I=gI, loss="squared_hinge", normalized=normalized, p=1, tol=1e-11,
                       max_iter=3000, client=client, dtype="float64", early_stopping=False)
    assert res.converged.all() and res.n_newton[0] >= 2  # the active set did change
    f = K @ alpha + b
    np.testing.assert_allclose(res.objective[0], obj, rtol=1e-8)
    np.testing.assert_allclose(_hinge_objective(K, M, y, labeled, gA, gI, res.alpha[:, 0],
                                                res.intercept[0]), obj, rtol=1e-8)
    np.testing.assert_allclose(res.decision[:, 0], f, atol=1e-6 * np.abs(f).max())
    np.testing.assert_allclose(res.intercept[0], b, atol=1e-6)
    # an independent optimizer on (alpha, b) does not find a lower objective
    fun = lambda th: _hinge_objective(K, M, y, labeled, gA, gI, th[:-1], th[-1])
    opt = scipy.optimize.minimize(fun, np.zeros(K.shape[0] + 1), method="L-BFGS-B",
                                  options={"maxiter": 200})
    assert obj <= opt.fun + 1e-10


def test_float32_rows_and_early_stopping(client, moons):
    """float32 kernel rows give the float64 solution to float32-level accuracy; early stopping
    ends sooner with the converged solution's predictions on the unlabeled rows."""
    X, W, Y, labeled, cls = moons
    data = _blocks(client, X, 2)
    graph = Graph.from_scipy(W, client=client, n_blocks=2)
    kw = dict(kernel="rbf", kernel_params=KP, gamma_A=1e-3, gamma_I=0.05, normalized=True, p=2,
              loss="squared_hinge", max_iter=3000, client=client)
    exact = solve_primal(data, graph, Y, labeled, tol=1e-10, dtype="float64",
                         early_stopping=False, **kw)
    f32 = solve_primal(data, graph, Y, labeled, tol=1e-6, dtype="float32", early_stopping=False,
                       **kw)
    scale = np.abs(exact.decision).max()
    np.testing.assert_allclose(f32.decision, exact.decision, atol=1e-4 * scale)
    early = solve_primal(data, graph, Y, labeled, tol=1e-10, early_stopping=True, **kw)
    assert early.stopped_early.any() and early.n_iter < exact.n_iter / 2
    unl = ~labeled
    np.testing.assert_array_equal(np.sign(early.decision[unl]), np.sign(exact.decision[unl]))


def test_early_stopping_agrees_with_dense_eq_2_12_on_g50c(client):
    """On the benchmark's problem family at a small size (g50c-like, 50 dimensions, 1% of the
    rows labeled, p = 2, float32 bands), the early-stopped PCG predicts the unlabeled rows as
    the dense solve of Eq 2.12 does, while stopping well before the residual tolerance."""
    from dask_ssl.data.generators import g50c
    from dask_ssl.graph.weights import knn_graph

    n = 1000
    X, y = g50c(n=n, seed=0)
    rng = np.random.default_rng(0)
    labeled = np.zeros(n, bool)
    for c in (-1, 1):
        labeled[rng.choice(np.flatnonzero(y == c), 5, replace=False)] = True
    Y = (y * labeled)[:, None].astype(float)
    kp, gamma_A, gamma_I = {"gamma": 1 / 50}, 1e-6, 100 / n ** 2
    data = _blocks(client, X, 2)
    graph = knn_graph(data, 10, weights="heat", random_state=0)
    K = kernel_matrix(X, kernel="rbf", kernel_params=kp)
    f_dense = K @ _dense_laprls(K, _dense_M(graph.to_scipy(), True, 2), Y, labeled, gamma_A,
                                gamma_I)
    res = solve_primal(data, graph, Y, labeled, kernel="rbf", kernel_params=kp, gamma_A=gamma_A,
                       gamma_I=gamma_I, loss="squared", normalized=True, p=2, tol=1e-9,
                       max_iter=2000, client=client)
    assert res.stopped_early[0] and not res.converged[0]
    unl = ~labeled
    agree = np.mean(np.sign(res.decision[unl, 0]) == np.sign(f_dense[unl, 0]))
    assert agree >= 0.99
    err = [np.mean(np.sign(f[unl, 0]) != y[unl]) for f in (res.decision, f_dense)]
    assert abs(err[0] - err[1]) <= 0.005


def test_bad_input_fails_before_work(client, moons):
    X, W, Y, labeled, _ = moons
    data = _blocks(client, X, 2)
    graph = Graph.from_scipy(W, client=client, n_blocks=2)
    small = Graph.from_scipy(W[:200, :200], client=client, n_blocks=2)
    kw = dict(kernel="rbf", kernel_params=KP, gamma_A=0.01, gamma_I=0.01, loss="squared",
              normalized=True, p=1, tol=1e-6, max_iter=10, client=client)
    trips = data.round_trips, graph.W.round_trips
    cases = [
        (dict(graph=small), "graph has 200 rows but the data has 240"),
        (dict(gamma_A=0.0), "gamma_A must be a positive"),
        (dict(gamma_A=-1.0), "gamma_A must be a positive"),
        (dict(gamma_I=-0.1), "gamma_I must be a non-negative"),
        (dict(kernel="rbff"), "unknown kernel"),
        (dict(loss="hinge"), "loss must be one of"),
        (dict(Y=Y[:100]), "Y must have shape"),
        (dict(Y=np.where(labeled[:, None], 2.0, 0.0)), "Y must be \\+1 or -1 on labeled rows"),
        (dict(labeled=np.zeros(240, bool)), "no labeled rows"),
        (dict(labeled=np.zeros((240, 3), bool)), "labeled must be a boolean array of shape"),
        (dict(labeled=np.column_stack([labeled, np.zeros(240, bool)])),
         "no labeled rows in column 1"),
        (dict(labeled=np.column_stack([labeled, labeled & (np.arange(240) % 2 == 0)])),
         "Y must be 0 on unlabeled rows"),
        (dict(gamma_I=np.array([0.1, -0.1])), "gamma_I must be a non-negative"),
        (dict(gamma_I=np.ones(3)), "gamma_I must be a number or an array of shape"),
        (dict(dtype="float16"), "dtype must be one of"),
    ]
    for change, message in cases:
        args = dict(graph=graph, Y=Y, labeled=labeled, **kw)
        args.update(change)
        with pytest.raises(ValueError, match=message):
            solve_primal(data, args.pop("graph"), args.pop("Y"), args.pop("labeled"), **args)
    assert (data.round_trips, graph.W.round_trips) == trips
