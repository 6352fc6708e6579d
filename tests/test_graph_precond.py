"""Block-Jacobi preconditioned block CG on the workers (dask_ssl.graph.precond, GraphSystem)."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import laplacian
from scipy.sparse.linalg import spsolve

from dask_ssl.graph.laplacian import LaplacianOperator
from dask_ssl.graph import precond
from dask_ssl.graph.precond import (SHIFT, _factor_entries, block_matrix, check_preconditioner,
                                    factor_block)
from dask_ssl.graph.system import GraphSystem
from dask_ssl.graph.weights import Graph
from dask_ssl.linalg.block_cg import LocalSystem, block_cg


def _chain_clusters(n_clusters, size, rng, bridge=1e-6):
    """Dense-ish random clusters in a chain, each joined to the next by one weak edge: the
    normalized Laplacian has eigenvalues near ``bridge``, so plain CG needs many passes."""
    parts = []
    for _ in range(n_clusters):
        A = sp.random(size, size, density=0.3, random_state=rng)
        A = sp.triu(A, 1)
        parts.append(A + A.T + sp.diags(np.ones(size - 1), 1) + sp.diags(np.ones(size - 1), -1))
    W = sp.block_diag(parts).tolil()
    for c in range(n_clusters - 1):
        i, j = c * size + size - 1, (c + 1) * size
        W[i, j] = W[j, i] = bridge
    W = W.tocsr()
    W.setdiag(0)
    W.eliminate_zeros()
    return W


def _expander(n, rng, degree=8):
    """A union of random permutations: its powers of the Laplacian are dense, like a text kNN
    graph's."""
    W = sum(sp.coo_matrix((np.ones(n), (np.arange(n), rng.permutation(n))), (n, n))
            for _ in range(degree // 2))
    W = (W + W.T).tocsr()
    W.setdiag(0)
    W.eliminate_zeros()
    return W


def _scrambled(W, rng):
    perm = rng.permutation(W.shape[0])
    return W[perm][:, perm].tocsr(), perm


def _solve(graph, gamma, a, B, *, p=1, partition=None, preconditioner="block", X0=None,
           tol=1e-12, maxiter=3000):
    op = LaplacianOperator(graph, normalized=True, p=p, partition=partition)
    system = GraphSystem(op, gamma, a, B, X0=X0, preconditioner=preconditioner)
    try:
        return block_cg(system, tol=tol, maxiter=maxiter), system.solution()
    finally:
        system.close()
        op.close()


@pytest.mark.parametrize("n_blocks,partition", [(1, None), (2, None), (4, None),
                                                (2, "metis"), (4, "metis")])
@pytest.mark.parametrize("p", [1, 2])
def test_preconditioned_solve_equals_dense_solve(client, n_blocks, partition, p):
    rng = np.random.default_rng(n_blocks + 10 * p)
    W, _ = _scrambled(_chain_clusters(4, 30, rng, bridge=1e-3), rng)
    n = W.shape[0]
    labeled = rng.random(n) < 0.1
    labeled[:2] = True
    a = np.where(labeled, 1.0, 0.05)
    B = np.zeros((n, 3))
    B[labeled, np.arange(labeled.sum()) % 3] = 1.0  # every class labeled
    B[:, 2] += 0.01 * rng.standard_normal(n)  # a dense column too
    L = laplacian(W.toarray(), normed=True)
    A = 0.7 * np.linalg.matrix_power(L, p) + np.diag(a)
    exact = np.linalg.solve(A, B)
    graph = Graph.from_scipy(W, client=client, n_blocks=n_blocks)
    res, X = _solve(graph, 0.7, a, B, p=p, partition=partition)
    assert res.converged.all()
    np.testing.assert_allclose(X, exact, rtol=0, atol=1e-8 * np.abs(exact).max())
    # The residual the driver reports is the true one, |b - A x| / |b|.
    true = np.linalg.norm(B - A @ X, axis=0) / np.linalg.norm(B, axis=0)
    np.testing.assert_allclose(res.residual, true, rtol=1e-3, atol=1e-14)
    if n_blocks == 1:
        # One block: the preconditioner is the inverse of the system up to its shift (1e-6
        # relative: each pass gains ~6 digits), for p = 1 and for L^p alike.
        assert res.n_passes <= 4


@pytest.fixture
def diagonal_blocks(client):
    """Every block is preconditioned by its diagonal instead of its LU (the workers are
    processes)."""
    def set_budget(value):
        before = precond.FILL_BUDGET
        precond.FILL_BUDGET = value
        return before

    before = client.run(set_budget, 0.0)
    yield
    client.run(set_budget, next(iter(before.values())))


@pytest.mark.parametrize("n_blocks,partition", [(1, None), (2, None), (2, "metis")])
@pytest.mark.parametrize("p", [1, 2])
def test_diagonal_preconditioned_solve_equals_dense_solve(client, diagonal_blocks, n_blocks,
                                                          partition, p):
    rng = np.random.default_rng(5 + n_blocks + 10 * p)
    W, _ = _scrambled(_chain_clusters(4, 30, rng, bridge=1e-3), rng)
    n = W.shape[0]
    a = np.where(rng.random(n) < 0.1, 1.0, 0.05)
    B = rng.standard_normal((n, 2))
    A = 0.7 * np.linalg.matrix_power(laplacian(W.toarray(), normed=True), p) + np.diag(a)
    exact = np.linalg.solve(A, B)
    graph = Graph.from_scipy(W, client=client, n_blocks=n_blocks)
    res, X = _solve(graph, 0.7, a, B, p=p, partition=partition)
    assert res.converged.all()
    np.testing.assert_allclose(X, exact, rtol=0, atol=1e-8 * np.abs(exact).max())
    # not the exact inverse of a block: one block needs more than the LU's few passes
    assert res.n_passes > 4


def test_blocks_with_large_fill_get_their_diagonal():
    """A union of random permutations (an expander, like a text kNN graph) would fill its LU; a
    chain of small clusters (like KDD99's kNN graph) factors exactly."""
    rng = np.random.default_rng(2)
    expander = _expander(3000, rng)
    chain = _chain_clusters(100, 30, rng, bridge=0.1)
    for W, exact in ((expander, False), (chain, True)):
        d = np.asarray(W.sum(axis=1)).ravel()
        a = np.where(rng.random(W.shape[0]) < 0.05, 1.0, 0.01)
        factor = factor_block(W, d, a, 1.0, 1)
        assert isinstance(factor, precond._Diagonal) != exact
        P = block_matrix(W, d, a, 1.0, 1)
        v = rng.standard_normal(W.shape[0])
        z = factor.solve(np.c_[v])[:, 0]
        shifted = P + precond.SHIFT * P.diagonal().max() * sp.identity(P.shape[0])
        expected = spsolve(shifted.tocsc(), v) if exact else v / shifted.diagonal()
        np.testing.assert_allclose(z, expected, rtol=1e-8)


def test_factor_entries_count_the_cholesky_pattern():
    rng = np.random.default_rng(4)
    A = sp.random(80, 80, density=0.04, random_state=rng)
    A = abs(A + A.T).tocsr()
    M = (A + sp.diags(np.asarray(A.sum(axis=1)).ravel() + 1.0)).tocsr()  # SPD, A's pattern
    expected = np.count_nonzero(np.linalg.cholesky(M.toarray()))
    indptr, indices = M.indptr.astype(np.int64), M.indices.astype(np.int64)
    assert _factor_entries(indptr, indices, 10**9) == expected
    # past the budget it stops counting: a count above it, below the whole
    stopped = _factor_entries(indptr, indices, expected // 2)
    assert expected // 2 < stopped < expected


def test_warm_start_with_preconditioner(client):
    rng = np.random.default_rng(3)
    W, _ = _scrambled(_chain_clusters(3, 25, rng), rng)
    n = W.shape[0]
    a = np.where(rng.random(n) < 0.2, 1.0, 0.0)
    a[0] = 1.0
    B = np.zeros((n, 2))
    B[a > 0, rng.integers(0, 2, int((a > 0).sum()))] = 1.0
    A = laplacian(W.toarray(), normed=True) + np.diag(a + 1e-3)
    exact = np.linalg.solve(A, B)
    graph = Graph.from_scipy(W, client=client, n_blocks=2)
    res, X = _solve(graph, 1.0, a + 1e-3, B, X0=exact + 1e-3 * rng.standard_normal(B.shape))
    assert res.converged.all()
    np.testing.assert_allclose(X, exact, atol=1e-8 * np.abs(exact).max())


def test_preconditioner_cuts_passes_on_a_badly_conditioned_graph(client):
    """A long chain of small clusters with labels near its ends: the Laplacian's eigenvalues
    spread down to ~1/length^2 and plain CG needs passes in proportion to the length. Three data
    blocks cut the chain twice, so block Jacobi is not exact, but what is left between the blocks
    is a 3-block problem that CG finishes in a few passes."""
    rng = np.random.default_rng(7)
    W = _chain_clusters(60, 6, rng, bridge=0.1)
    n = W.shape[0]
    labeled = np.zeros(n, bool)
    labeled[[3, 17, n - 20, n - 2]] = True
    a = np.where(labeled, 1.0, 0.0)
    B = np.zeros((n, 2))
    B[labeled, [0, 1, 1, 0]] = 1.0
    graph = Graph.from_scipy(W, client=client, n_blocks=3)
    plain, _ = _solve(graph, 1.0, a, B, preconditioner=None, tol=1e-8, maxiter=2000)
    block, X_block = _solve(graph, 1.0, a, B, tol=1e-8, maxiter=2000)
    assert block.converged.all()
    assert block.n_passes * 10 <= plain.n_passes, (block.n_passes, plain.n_passes)
    A = laplacian(W.toarray(), normed=True) + np.diag(a)
    exact = np.linalg.solve(A, B)
    np.testing.assert_allclose(X_block, exact, atol=1e-6 * np.abs(exact).max())


def test_singular_component_with_zero_right_hand_side(client):
    """A component with a = 0 everywhere (no labeled row, mu = 0) makes the system singular; with
    B = 0 there the preconditioned solve converges and leaves the component at its seed, 0."""
    rng = np.random.default_rng(11)
    W = _chain_clusters(2, 30, rng, bridge=1.0)
    n = W.shape[0]
    W = sp.block_diag([W, _chain_clusters(1, 20, rng)]).tocsr()
    a = np.zeros(W.shape[0])
    a[rng.choice(n, 5, replace=False)] = 1.0
    B = np.zeros((W.shape[0], 2))
    B[a > 0, [0, 1, 0, 1, 1]] = 1.0
    graph = Graph.from_scipy(W, client=client, n_blocks=2)
    res, X = _solve(graph, 1.0, a, B, partition="metis")
    assert res.converged.all()
    np.testing.assert_array_equal(X[n:], 0.0)
    A = laplacian(W[:n, :n].toarray(), normed=True) + np.diag(a[:n])
    np.testing.assert_allclose(X[:n], np.linalg.solve(A, B[:n]), atol=1e-8)


def test_local_system_preconditioned_matches_plain():
    rng = np.random.default_rng(4)
    Q, _ = np.linalg.qr(rng.standard_normal((80, 80)))
    scales = np.geomspace(1.0, 1e4, 80)
    A = (Q * np.geomspace(1.0, 1e2, 80)) @ Q.T
    A = A * np.sqrt(scales)[:, None] * np.sqrt(scales)[None, :]  # badly scaled rows
    B = rng.standard_normal((80, 3))
    plain = block_cg(LocalSystem(A, B), tol=1e-10, maxiter=2000)
    system = LocalSystem(A, B, M_inv=np.diag(1.0 / np.diag(A)))
    jacobi = block_cg(system, tol=1e-10, maxiter=2000)
    assert jacobi.converged.all() and jacobi.n_passes < plain.n_passes
    np.testing.assert_allclose(system.solution(), np.linalg.solve(A, B), rtol=1e-6)


def test_block_matrix_of_a_power_and_bad_name():
    rng = np.random.default_rng(2)
    W = _chain_clusters(2, 10, rng, bridge=0.5)
    L = sp.csr_matrix(laplacian(W.toarray()))
    d = L.diagonal()
    off = sp.diags(d) - L
    a = rng.random(20)
    got = block_matrix(off[:12].tocsr(), d[:12], a[:12], 2.0, 2).toarray()
    Lbb = L[:12, :12].toarray()
    np.testing.assert_allclose(got, 2.0 * Lbb @ Lbb + np.diag(a[:12]), atol=1e-12)
    with pytest.raises(ValueError, match="preconditioner"):
        check_preconditioner("jacobi")


@pytest.mark.parametrize("budget", [None, 1e-3])
def test_columns_of_several_weights_share_the_power_yet_factor_each(budget):
    # one power per block serves every (weight, fidelity) pair; each pair's preconditioner
    # is still its own (an LU within the budget, else its diagonal)
    from dask_ssl.graph.precond import factor_columns

    rng = np.random.default_rng(5)
    W = _chain_clusters(3, 12, rng, bridge=0.5)
    L = sp.csr_matrix(laplacian(W.toarray()))
    d = L.diagonal()
    off = (sp.diags(d) - L).tocsr()
    gammas = np.array([0.5, 0.5, 3.0, 40.0])
    a = np.column_stack([rng.random(36) > 0.5 for _ in range(4)]).astype(float)
    a[:, 1] = a[:, 0] + 1.0
    V = rng.standard_normal((36, 4))
    got = factor_columns(off, d, a, gammas, 3, budget).solve(V)
    for j in range(4):
        alone = factor_block(off, d, a[:, j], float(gammas[j]), 3, budget)
        np.testing.assert_allclose(got[:, j], alone.solve(V[:, [j]])[:, 0], rtol=1e-10,
                                   atol=1e-12)
    if budget is None:   # within the budget the factor is exact: it inverts the matrix
        P = block_matrix(off, d, a[:, 2], 3.0, 3).toarray()
        P += np.eye(36) * (np.diag(P).max() * SHIFT)
        np.testing.assert_allclose(P @ got[:, 2], V[:, 2], rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("mu", [0.0, 0.1])
def test_transduction_gives_unlabeled_components_zero(client, mu, monkeypatch):
    """Two moons with labels plus a far blob without any: the blob's scores are 0 (module
    docstring of graph_transduction), the moons' equal the dense solve on their own subgraph,
    and plain CG agrees. The block preconditioner is made to act from the first pass (plain
    CG alone would solve this small system within its column-pass budget)."""
    from dask_ssl.data.generators import two_moons
    from dask_ssl.models.graph_transduction import GraphTransduction
    from dask_ssl.solvers import graph as solver

    monkeypatch.setattr(solver, "PLAIN_COLUMN_PASSES", 1)

    X, y = two_moons(n=160, noise=0.08, seed=1)
    y = (np.asarray(y) > 0).astype(int)
    blob = np.random.default_rng(0).normal(100.0, 0.3, size=(40, 2))
    X = np.vstack([X, blob])
    ys = np.full(200, -1)
    ys[[np.flatnonzero(y == 0)[0], np.flatnonzero(y == 1)[0]]] = [0, 1]
    # system weight 1 (l gamma_I_eff with l = 2 labels, gamma_I as given)
    est = GraphTransduction(gamma_I=0.5, graph_normalization="none", prior=None,
                            unlabeled_weight=mu, class_balance=None, n_neighbors=6, tol=1e-10,
                            client=client, n_blocks=2, random_state=0)
    gt = est.fit(X, ys)
    W = gt.graph_.to_scipy()
    moons = np.arange(160)
    assert W[moons][:, 160:].nnz == 0  # the blob is its own component(s)
    np.testing.assert_array_equal(gt.scores_[160:], 0.0)
    np.testing.assert_array_equal(gt.label_distributions_[160:], 0.0)
    Ybar = np.zeros((160, 2))
    Ybar[ys[:160] >= 0, ys[ys >= 0]] = 1.0
    L = laplacian(W[:160, :160].toarray(), normed=True)
    exact = np.linalg.solve(L + np.diag(np.where(ys[:160] >= 0, 1.0, mu)), Ybar)
    np.testing.assert_allclose(gt.scores_[:160], exact, atol=1e-8)
    plain = GraphTransduction(gamma_I=0.5, graph_normalization="none", prior=None,
                              unlabeled_weight=mu, class_balance=None, n_neighbors=6, tol=1e-10,
                              client=client,
                              preconditioner=None).fit(X, ys, graph=gt.graph_)
    np.testing.assert_allclose(plain.scores_, gt.scores_, atol=1e-7)
    assert gt.n_iter_ < plain.n_iter_


def test_local_scaling_weights(client):
    """t="local": w_ij = exp(-d_ij^2 / (s_i s_j)), s_i the distance to row i's k-th neighbour
    (the mean positive width where that is 0); symmetrized like heat weights; predictions use the
    same rule for new rows."""
    from sklearn.neighbors import NearestNeighbors

    from dask_ssl.graph.knn import build_knn
    from dask_ssl.graph.weights import build_graph
    from dask_ssl.linalg.rowblocks import RowBlocks
    from dask_ssl.models.graph_transduction import GraphTransduction

    rng = np.random.default_rng(5)
    X = np.vstack([rng.standard_normal((150, 3)), 5.0 + 0.01 * rng.standard_normal((50, 3))])
    X[190:] = X[189]  # 11 identical rows: their 6th neighbours are at distance 0
    k = 6
    neigh = build_knn(RowBlocks.from_array(X, client=client, n_blocks=3), k)
    g = build_graph(neigh, t="local")
    ind, dist = neigh.gather()
    s = dist.max(axis=1).astype(float)
    assert (s[189:] == 0).all()
    s = np.where(s > 0, s, s[s > 0].mean())
    np.testing.assert_allclose(g.local_widths(), s)
    rows = np.repeat(np.arange(200), k)
    D = sp.csr_matrix((np.exp(-dist.ravel().astype(float) ** 2 / (s[rows] * s[ind.ravel()])),
                       (rows, ind.ravel())), shape=(200, 200))
    np.testing.assert_allclose(g.to_scipy().toarray(), D.maximum(D.T).toarray(), atol=1e-6)
    # Exact 6-NN distances (a duplicate's listed neighbours may be any of its copies).
    exact = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X[:150])[0][:, -1]
    np.testing.assert_allclose(s[:150], exact, rtol=1e-5)
    with pytest.raises(ValueError, match="t must be"):
        build_graph(neigh, t="wide")

    ys = np.full(200, -1)
    ys[[0, 160]] = [0, 1]
    gt = GraphTransduction(gamma_I=1.0, prior=None, unlabeled_weight=0.0, class_balance=None,
                           n_neighbors=k, t="local", client=client, n_blocks=2).fit(X, ys)
    assert gt.graph_.t == "local"
    np.testing.assert_array_equal(gt.predict(X[[5, 170]] + 1e-3), [0, 1])


@pytest.mark.parametrize("preconditioner", [None, "block"])
def test_restart_recomputes_the_true_residual(client, preconditioner):
    """A restart (after a breakdown) seeds from the current x, whose halo the driver keeps on
    the send rows: its r.r is |B - A X|^2 for the X gathered, and CG goes on to the solution."""
    rng = np.random.default_rng(9)
    W, _ = _scrambled(_chain_clusters(5, 20, rng, bridge=0.01), rng)
    n = W.shape[0]
    a = np.where(rng.random(n) < 0.1, 1.0, 0.01)
    B = rng.standard_normal((n, 2))
    A = laplacian(W.toarray(), normed=True) + np.diag(a)
    op = LaplacianOperator(Graph.from_scipy(W, client=client, n_blocks=3), normalized=True)
    system = GraphSystem(op, 1.0, a, B, preconditioner=preconditioner)
    try:
        block_cg(system, tol=1e-12, maxiter=4)
        X = system.solution()
        red = system.restart()
        np.testing.assert_allclose(red.rr, ((B - A @ X) ** 2).sum(axis=0), rtol=1e-10)
        assert block_cg(system, tol=1e-10, maxiter=500).converged.all()
        np.testing.assert_allclose(system.solution(), np.linalg.solve(A, B), atol=1e-8)
    finally:
        system.close()
        op.close()


def test_a_dense_power_is_held_dense_and_factored_by_cholesky():
    rng = np.random.default_rng(7)
    n = precond.DENSE_MIN_ROWS + 100
    W = _expander(n, rng)
    L = sp.csr_matrix(laplacian(W.toarray(), normed=True))
    d = L.diagonal()
    off = (sp.diags(d) - L).tocsr()
    power = precond.block_power(off, d, 4)
    assert isinstance(power, np.ndarray)   # L^4 of this graph has every entry
    np.testing.assert_allclose(power, np.linalg.matrix_power(L.toarray(), 4), atol=1e-12)
    a = np.where(rng.random(n) < 0.05, 1.0, 0.0)
    factor = factor_block(off, d, a, 2.0, 4)
    assert isinstance(factor, precond._DenseCholesky)
    P = 2.0 * power + np.diag(a)
    P += np.eye(n) * (np.diag(P).max() * SHIFT)
    V = rng.standard_normal((n, 3))
    np.testing.assert_allclose(factor.solve(V), np.linalg.solve(P, V), rtol=1e-8, atol=1e-10)
    # a sparse power stays sparse, and so does its factor: the first power has 9 entries a row
    assert sp.issparse(precond.block_power(off, d, 1))
    assert isinstance(factor_block(off, d, a, 2.0, 1), precond._OrderedLU)


def test_preconditioned_solve_with_dense_blocks_equals_dense_solve(client):
    # two blocks whose L^3 blocks are dense: the Cholesky path inside the workers' CG
    rng = np.random.default_rng(8)
    n = 2 * (precond.DENSE_MIN_ROWS + 50)
    W = _expander(n, rng, degree=16)
    half = (sp.diags(W.sum(axis=1).A1) - W)[: n // 2, : n // 2]
    assert (abs(half) ** 3).nnz >= precond.DENSE_FRACTION * (n // 2) ** 2   # held dense
    a = np.where(rng.random(n) < 0.05, 1.0, 0.01)
    B = rng.standard_normal((n, 2))
    A = 0.3 * np.linalg.matrix_power(laplacian(W.toarray(), normed=True), 3) + np.diag(a)
    exact = np.linalg.solve(A, B)
    graph = Graph.from_scipy(W, client=client, n_blocks=2)
    res, X = _solve(graph, 0.3, a, B, p=3)
    assert res.converged.all()
    np.testing.assert_allclose(X, exact, rtol=0, atol=1e-8 * np.abs(exact).max())
