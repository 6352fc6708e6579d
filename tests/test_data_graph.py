"""DataGraph's distributed product ``[X,1]^T (gamma_I M) [X,1] Z`` against a dense NumPy one,
and its skipping of zero columns (the converged directions of a many-column block CG)."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import laplacian

from dask_ssl.graph.data_graph import DataGraph
from dask_ssl.graph.laplacian import LaplacianOperator
from dask_ssl.graph.weights import Graph
from dask_ssl.linalg.rowblocks import RowBlocks


@pytest.fixture
def data_graph(client):
    rng = np.random.default_rng(3)
    n, d = 60, 5
    X = rng.standard_normal((n, d))
    W = sp.random(n, n, density=0.1, random_state=4)
    W = sp.csr_matrix(W + W.T)
    W.setdiag(0.0)
    W.eliminate_zeros()
    op = LaplacianOperator(Graph.from_scipy(W, client=client, n_blocks=3), normalized=True, p=2)
    dg = DataGraph(RowBlocks.from_array(X, client=client, n_blocks=3), op, bias=True)
    L = laplacian(W.toarray(), normed=True)
    X1 = np.column_stack([X, np.ones(n)])
    yield dg, X1.T @ (L @ L) @ X1
    dg.close()
    op.close()


def test_product_with_zero_columns_equals_the_dense_product(data_graph):
    dg, H = data_graph
    Z = np.random.default_rng(5).standard_normal((H.shape[0], 5))
    Z[:, [1, 3]] = 0.0
    trips = dg.blocks.round_trips
    got = dg.product(Z, gamma_I=2.0)
    moved_trips = dg.blocks.round_trips - trips
    np.testing.assert_allclose(got, 2.0 * H @ Z, rtol=1e-10, atol=1e-12)
    assert np.all(got[:, [1, 3]] == 0.0)
    # the zero columns make no extra pass: as many round trips as all-moving columns take
    trips = dg.blocks.round_trips
    dg.product(Z[:, [0, 2, 4]], gamma_I=2.0)
    assert moved_trips == dg.blocks.round_trips - trips > 0


def test_product_of_only_zero_columns_makes_no_round_trip(data_graph):
    dg, H = data_graph
    trips = dg.blocks.round_trips
    got = dg.product(np.zeros((H.shape[0], 3)))
    assert got.shape == (H.shape[0], 3) and not got.any()
    assert dg.blocks.round_trips == trips
    vector = dg.product(np.zeros(H.shape[0]))
    assert vector.shape == (H.shape[0],) and not vector.any()


@pytest.mark.parametrize("partition", [None, "metis"])
def test_local_product_equals_the_distributed_one(client, partition):
    """The driver's copy (sparse rows, a graph of two components so that METIS re-splits it
    and the blocks hold the rows out of order) multiplies as the workers do; above its budget
    there is none."""
    rng = np.random.default_rng(7)
    n, d = 80, 30
    X = sp.random(n, d, density=0.2, random_state=8, format="csr")
    W = sp.block_diag([sp.random(40, 40, density=0.15, random_state=s) for s in (9, 10)])
    W = sp.csr_matrix(W + W.T)
    W.setdiag(0.0)
    W.eliminate_zeros()
    order = rng.permutation(n)  # the blocks cut across both components
    W = sp.csr_matrix(W[order][:, order])
    X = X[order]
    op = LaplacianOperator(Graph.from_scipy(W, client=client, n_blocks=4), normalized=True, p=2,
                           partition=partition)
    dg = DataGraph(RowBlocks.from_array(X, client=client, n_blocks=4), op, bias=True)
    try:
        assert (dg.order is not None) == (partition == "metis")
        Z = rng.standard_normal((d + 1, 6))
        local = dg.local_product()
        np.testing.assert_allclose(local(Z), dg.product(Z), rtol=1e-10, atol=1e-12)
        L = laplacian(W.toarray(), normed=True)
        X1 = np.column_stack([X.toarray(), np.ones(n)])
        np.testing.assert_allclose(local(Z), X1.T @ (L @ L) @ X1 @ Z, rtol=1e-10, atol=1e-12)
        assert dg.local_product(budget=X.nnz) is None
        # the rows' kernel and M times it, in the blocks' order, and where "c" is nonzero
        c = np.zeros(n)
        c[rng.choice(n, 9, replace=False)] = rng.uniform(0.5, 1.5, 9)
        dg.set_rows("c", c)
        K, MK, rows = dg.local_kernel("c")
        at = np.arange(n) if dg.order is None else dg.order  # graph row at each position
        Xb = X1[at]
        np.testing.assert_allclose(K, Xb @ Xb.T, rtol=1e-12, atol=1e-12)
        Lb = L[np.ix_(at, at)]
        np.testing.assert_allclose(MK, Lb @ Lb @ Xb @ Xb.T, rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(rows, np.flatnonzero(c))
        np.testing.assert_array_equal(dg.rows_where("c")[0], Xb[rows])
        assert dg.local_kernel("c", max_rows=n - 1) is None
        assert dg.local_kernel("c", budget=X.nnz) is None
    finally:
        dg.close()
        op.close()
