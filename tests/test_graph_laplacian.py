"""Edge weights, symmetrization, diagnostics, halo-exchange Laplacians and graph save/load."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, laplacian

from dask_ssl.graph.diagnostics import GraphWarning, graph_diagnostics, warn_graph
from dask_ssl.graph.io import load_graph, save_graph
from dask_ssl.graph.knn import build_knn
from dask_ssl.graph.laplacian import LaplacianOperator
from dask_ssl.graph.weights import Graph, build_graph, knn_graph
from dask_ssl.linalg.rowblocks import RowBlocks


def _random_graph(n, rng, isolated=()):
    A = sp.random(n, n, density=4.0 / n, random_state=rng, format="csr")
    W = sp.triu(A, k=1)
    keep = np.ones(n)
    keep[list(isolated)] = 0
    K = sp.diags(keep)
    W = (K @ (W + W.T) @ K).tocsr()
    W.eliminate_zeros()
    return W


@pytest.mark.parametrize("c", [1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 35])
def test_block_kernels_match_dense(c):
    """A block's product and fused CG finish, on every kernel path: a generated kernel of each
    width (compiled with SLP vectorization) and slices of 16 columns beyond."""
    from dask_ssl.graph._products import apply_finish, apply_rows

    rng = np.random.default_rng(c)
    n_b, n_halo = 60, 25
    A = sp.random(n_b, n_b + n_halo, density=0.1, random_state=rng, format="csr")
    d = rng.random(n_b) + 1.0
    x = rng.standard_normal((n_b, c))
    pieces = [rng.standard_normal((10, c)), rng.standard_normal((15, c))]
    expected = d[:, None] * x - A.toarray() @ np.vstack([x, *pieces])
    np.testing.assert_allclose(apply_rows(A, d, x, pieces), expected, rtol=1e-12, atol=1e-12)
    a = rng.random((n_b, 1))
    pv, r, q = (rng.standard_normal((n_b, c)) for _ in range(3))
    sums = apply_finish(A, d, x, pieces, 0.7, a, pv, r, q)
    q_expected = 0.7 * expected + a * pv
    np.testing.assert_allclose(q, q_expected, rtol=1e-12, atol=1e-12)
    for got, u in zip(sums, (pv, r, q_expected)):
        np.testing.assert_allclose(got, np.sum(u * q_expected, axis=0), rtol=1e-12)


def test_products_fill_the_halo_in_place():
    """A product's result has room for the halo: feeding it back (``L^2``), new halo values
    through the same buffer and results written over earlier ones give the dense results."""
    from dask_ssl.graph._products import apply_rows, with_room

    rng = np.random.default_rng(3)
    n_b, n_halo, c = 50, 20, 3
    A = sp.random(n_b, n_b + n_halo, density=0.1, random_state=rng, format="csr")
    d = rng.random(n_b) + 1.0
    x = rng.standard_normal((n_b, c))
    h1, h2, h3 = (rng.standard_normal((n_halo, c)) for _ in range(3))
    dense = A.toarray()

    def product(u, halo):
        return d[:, None] * u - dense @ np.vstack([u, halo])

    y = apply_rows(A, d, x, [h1])
    assert with_room(A, y) is y
    z = apply_rows(A, d, y, [h2[:5], h2[5:]])
    np.testing.assert_allclose(z, product(product(x, h1), h2), rtol=1e-12, atol=1e-12)
    # the halo rows are scratch: new values replace the previous product's; a previous
    # result is overwritten when given as out, unless it is the input
    again = apply_rows(A, d, y, [h3], out=z)
    assert again is z
    np.testing.assert_allclose(z, product(product(x, h1), h3), rtol=1e-12, atol=1e-12)
    fresh = apply_rows(A, d, y, [h1], out=y)
    assert not np.may_share_memory(fresh, y)
    np.testing.assert_allclose(fresh, product(product(x, h1), h1), rtol=1e-12, atol=1e-12)
    kept = with_room(A, x)
    assert kept is not x and with_room(A, kept) is kept
    np.testing.assert_array_equal(kept, x)
    with pytest.raises(ValueError, match="halo pieces hold 5 rows"):
        apply_rows(A, d, y, [h1[:5]])


@pytest.mark.parametrize("n_blocks", [1, 2, 3])
def test_laplacian_powers_match_scipy(client, n_blocks):
    rng = np.random.default_rng(n_blocks)
    W = _random_graph(90, rng, isolated=(5, 40))
    graph = Graph.from_scipy(W, client=client, n_blocks=n_blocks)
    V = rng.standard_normal((90, 3))
    for normalized in (False, True):
        L = laplacian(W.toarray(), normed=normalized)
        for p in (1, 2, 3):
            op = LaplacianOperator(graph, normalized=normalized, p=p)
            try:
                got = op.matmat(V)
            finally:
                op.close()
            np.testing.assert_allclose(got, np.linalg.matrix_power(L, p) @ V, atol=1e-10)


def test_quadratic_form_identity(client):
    rng = np.random.default_rng(7)
    W = _random_graph(120, rng)
    graph = Graph.from_scipy(W, client=client, n_blocks=3)
    coo = sp.triu(W).tocoo()
    d = np.asarray(W.sum(axis=1)).ravel()
    for normalized in (False, True):
        op = LaplacianOperator(graph, normalized=normalized)
        f = rng.standard_normal(120)
        g = f / np.sqrt(np.where(d > 0, d, 1.0)) if normalized else f
        expected = np.sum(coo.data * (g[coo.row] - g[coo.col]) ** 2)
        assert f @ op.matmat(f) == pytest.approx(expected, rel=1e-10)
        op.close()


def test_halo_exchange_moves_less_than_broadcast_on_local_graphs(client):
    # A path graph in row order: each block needs one entry from each neighbouring block.
    n = 300
    W = sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")
    graph = Graph.from_scipy(W, client=client, n_blocks=3)
    op = LaplacianOperator(graph, normalized=False, p=2)
    halo, broadcast = op.bytes_per_product(n_cols=4)
    assert list(op.halo_sizes) == [1, 2, 1]
    assert halo == 4 * 4 * 8 * 2 and broadcast == 2 * n * 4 * 8 * 2
    np.testing.assert_allclose(op.matmat(np.arange(n, dtype=float)),
                               laplacian(W.toarray()) @ laplacian(W.toarray()) @ np.arange(n))
    op.close()


def _own_bandwidth(i, W, token):
    from dask_ssl.linalg import workerstate

    A = workerstate.get(token, i)["A"].tocoo()
    own = A.col < A.shape[0]
    return int(np.abs(A.row[own] - A.col[own]).max())


def test_blocks_keep_rows_in_a_bandwidth_reducing_order(client):
    """A path graph whose rows are shuffled: inside each block the operator puts the path's
    pieces back in order (bandwidth 1), and products still match the dense Laplacian."""
    n = 400
    perm = np.random.default_rng(3).permutation(n)
    path = sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")
    W = path[perm][:, perm].tocsr()
    graph = Graph.from_scipy(W, client=client, n_blocks=2)
    op = LaplacianOperator(graph, normalized=False)
    try:
        assert graph.W.call(_own_bandwidth, op.token) == [1, 1]
        V = np.random.default_rng(4).standard_normal((n, 2))
        np.testing.assert_allclose(op.matmat(V), laplacian(W.toarray()) @ V, atol=1e-12)
    finally:
        op.close()


def test_metis_blocks_separate_interleaved_components(client):
    """Two components whose rows alternate: blocks in row order exchange half the vector per
    product; re-split by METIS they exchange nothing, and products are unchanged."""
    rng = np.random.default_rng(5)
    half = _random_graph(150, rng)
    W = sp.block_diag([half, _random_graph(150, rng)]).tocsr()
    alternate = np.argsort(np.r_[np.arange(0, 300, 2), np.arange(1, 300, 2)])
    W = W[alternate][:, alternate].tocsr()
    graph = Graph.from_scipy(W, client=client, n_blocks=2)
    plain = LaplacianOperator(graph, normalized=True)
    split = LaplacianOperator(graph, normalized=True, p=2, partition="metis")
    try:
        assert plain.halo_sizes.min() > 50
        assert list(split.halo_sizes) == [0, 0]
        assert sorted(split.order) == list(range(300)) and list(split.W.sizes) == [150, 150]
        V = rng.standard_normal((300, 3))
        L = laplacian(W.toarray(), normed=True)
        np.testing.assert_allclose(split.matmat(V), L @ L @ V, atol=1e-10)
    finally:
        plain.close()
        split.close()


def _directed_knn(X, k):
    from sklearn.neighbors import NearestNeighbors

    dist, ind = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X)
    n = X.shape[0]
    return sp.csr_matrix((dist[:, 1:].ravel(), (np.repeat(np.arange(n), k), ind[:, 1:].ravel())),
                         shape=(n, n))


def test_weights_and_symmetrization(client):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 4))
    D = _directed_knn(X, 6)
    neigh = build_knn(RowBlocks.from_array(X, client=client, n_blocks=3), 6)
    t = np.mean(D.data ** 2) / 4
    heat = D.copy()
    heat.data = np.exp(-heat.data ** 2 / (4 * t))
    binary = (D > 0).astype(float)
    expected = {"max": lambda A: A.maximum(A.T), "mean": lambda A: (A + A.T) / 2,
                "mutual": lambda A: A.minimum(A.T)}
    for mode, sym in expected.items():
        g = build_graph(neigh, weights="heat", symmetrize=mode)
        assert g.t == pytest.approx(t, rel=1e-5)
        np.testing.assert_allclose(g.to_scipy().toarray(), sym(heat).toarray(), atol=1e-6)
        gb = build_graph(neigh, weights="binary", symmetrize=mode)
        np.testing.assert_array_equal(gb.to_scipy().toarray(), sym(binary).toarray())
    cos = knn_graph(RowBlocks.from_array(X, client=client, n_blocks=2), 6, metric="cosine",
                    weights="cosine")
    Wc = cos.to_scipy()
    i, j = Wc.nonzero()
    sim = np.einsum("ij,ij->i", X[i], X[j]) / np.linalg.norm(X[i], axis=1) / np.linalg.norm(X[j], axis=1)
    np.testing.assert_allclose(Wc.data, np.clip(sim, 0, None), atol=1e-6)
    with pytest.raises(ValueError, match="needs metric='cosine'"):
        build_graph(neigh, weights="cosine")
    with pytest.raises(ValueError, match="symmetrize"):
        build_graph(neigh, symmetrize="min")


def test_diagnostics_find_components_and_isolated_rows(client):
    rng = np.random.default_rng(5)
    W = _random_graph(150, rng, isolated=(3, 77))
    graph = Graph.from_scipy(W, client=client, n_blocks=3)
    diag = graph_diagnostics(graph)
    n_comp, labels = connected_components(W, directed=False)
    assert diag.n_components == n_comp
    deg = np.asarray(W.sum(axis=1)).ravel()
    assert diag.n_isolated == (deg == 0).sum() >= 2
    # Same partition of rows into components (labels may be numbered differently).
    pairs = set(zip(diag.labels.tolist(), labels.tolist()))
    assert len(pairs) == n_comp
    assert diag.degree_max == pytest.approx(deg.max()) and diag.degree_min == 0
    with pytest.warns(GraphWarning) as rec:
        warn_graph(diag, labeled=np.arange(150) < 10)
    text = " ".join(str(r.message) for r in rec)
    assert "isolated" in text and "connected components" in text and "no labeled row" in text
    connected = Graph.from_scipy(sp.diags([np.ones(9), np.ones(9)], [-1, 1]), client=client)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_graph(graph_diagnostics(connected), labeled=np.arange(10) < 1)


def test_save_and_load_roundtrip(client, tmp_path):
    X = np.random.default_rng(6).standard_normal((150, 3))
    data = RowBlocks.from_array(X, client=client, n_blocks=2)
    g = knn_graph(data, 5, weights="heat", symmetrize="mean")
    save_graph(g, tmp_path / "g")
    back = load_graph(tmp_path / "g", data)
    assert (back.to_scipy() != g.to_scipy()).nnz == 0
    assert (back.t, back.weights, back.symmetrize) == (g.t, "heat", "mean")
    np.testing.assert_array_equal(back.neighbors.gather()[0], g.neighbors.gather()[0])
    other = RowBlocks.from_array(X, client=client, n_blocks=3)
    with pytest.raises(ValueError, match="blocks"):
        load_graph(tmp_path / "g", other)
    npz = sorted((tmp_path / "g").glob("*.npz"))[0]
    npz.write_bytes(npz.read_bytes()[:-3] + b"xyz")
    with pytest.raises(ValueError, match="checksum"):
        load_graph(tmp_path / "g", data)


@pytest.mark.parametrize("normalized", [True, False])
def test_graphs_built_together_and_the_sparse_power_equal_the_dense_ones(client, normalized):
    """build_graphs' graphs (one wait, the heat width a task) are build_graph's, one at a time,
    to the bit; LaplacianPower's products are the dense L^p's, and direct_regularizer takes
    the sparse form for few neighbours and the dense one where its products cost less."""
    from dask_ssl.graph.dense import (LaplacianPower, direct_regularizer, laplacian_matrix,
                                      regularizer_matrix)
    from dask_ssl.graph.weights import build_graphs

    rng = np.random.default_rng(4)
    n = 600
    X = rng.standard_normal((n, 5))
    neigh = build_knn(RowBlocks.from_array(X, client=client, n_blocks=3), 40)
    together = build_graphs(neigh, [4, 40])
    for k, graph in together.items():
        alone = build_graph(neigh.nearest(k))
        assert graph.t == alone.t and graph.neighbors.n_neighbors == k
        assert (graph.to_scipy() != alone.to_scipy()).nnz == 0
    K = rng.standard_normal((n, 7))
    for k, p in [(4, 1), (4, 5), (40, 5)]:
        M = regularizer_matrix(together[k], normalized=normalized, p=p)
        L = laplacian_matrix(together[k].to_scipy(), normalized=normalized, sparse=True)
        power = LaplacianPower(L, p)
        scale = np.abs(M).max()
        np.testing.assert_allclose(power @ K, M @ K, rtol=0, atol=1e-12 * scale * n)
        np.testing.assert_allclose(power.sum(axis=1), M.sum(axis=1), rtol=0,
                                   atol=1e-12 * scale * n)
        chosen = direct_regularizer(together[k], normalized=normalized, p=p)
        if k == 4:
            assert isinstance(chosen, LaplacianPower) and chosen.p == p
        else:  # 40 neighbours and p = 5: the dense L^5 costs less
            np.testing.assert_array_equal(chosen, M)
