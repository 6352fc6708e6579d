"""Regularized spectral clustering (thesis 2.8.1) and class-dependent Laplacian RLS (Eq 2.29)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from sklearn.kernel_ridge import KernelRidge
from sklearn.neighbors import kneighbors_graph

from dask_ssl.graph.weights import Graph
from dask_ssl.kernels import kernel_matrix
from dask_ssl.models._graph_kernel import graph_regularizer
from dask_ssl.models.spectral import ClassDependentLapRLS, RegularizedSpectralClustering


def blobs(n=60, seed=0, gap=10.0):
    rng = np.random.default_rng(seed)
    truth = np.arange(n) % 2
    return rng.normal(size=(n, 2)) + gap * truth[:, None] * np.array([1.0, 0.5]), truth


def given_graph(X, client, k=5):
    W = kneighbors_graph(X, k, mode="connectivity")
    W = W.maximum(W.T)
    return Graph.from_scipy(W, client=client), W.toarray()


@pytest.mark.parametrize("graph_normalization", ["n2", "edges", "none"])
def test_solution_satisfies_the_generalized_eigenproblem(client, graph_normalization):
    X, _ = blobs(40)
    graph, W = given_graph(X, client)
    gamma = 0.05
    # gamma = gamma_A / gamma_I_eff: the same problem under each normalization
    gamma_I = {"n2": len(X) ** 2, "edges": W.sum(), "none": 1.0}[graph_normalization]
    est = RegularizedSpectralClustering(gamma_A=gamma, gamma_I=gamma_I, n_components=2,
                                        graph_normalization=graph_normalization,
                                        kernel_params={"gamma": 5.0}, normalized=False,
                                        eig_tol=1e-14).fit(X, graph=graph)
    K = kernel_matrix(X, kernel="rbf", kernel_params={"gamma": 5.0})
    L = np.diag(W.sum(1)) - W
    k1 = K @ np.ones(len(X))
    P = np.eye(len(X)) - np.outer(k1, k1) / (k1 @ k1)
    A = P @ (gamma * K + K @ L @ K) @ P
    B = P @ K @ K @ P
    for alpha, lam in zip(est.dual_coef_.T, est.eigenvalues_):
        np.testing.assert_allclose(A @ alpha, lam * (B @ alpha), atol=1e-8 * np.abs(A @ alpha).max())
        f = K @ alpha
        assert abs(f.sum()) < 1e-8 and f @ f == pytest.approx(1.0)
    # the smallest: a direct generalized solve on the complement of K 1 (K is well conditioned)
    Q = scipy.linalg.null_space(k1[None, :])
    direct = scipy.linalg.eigh(Q.T @ A @ Q, Q.T @ B @ Q, eigvals_only=True)
    np.testing.assert_allclose(est.eigenvalues_, direct[:2], rtol=1e-7)
    np.testing.assert_allclose(est.embedding_, K @ est.dual_coef_, atol=1e-10)


def test_two_separated_clusters_are_split_and_extend_to_new_rows(client):
    X, truth = blobs(80)
    est = RegularizedSpectralClustering(gamma_A=0.1, kernel_params={"gamma": 0.1}, n_neighbors=6,
                                        client=client, random_state=0).fit(X)
    agree = np.mean(est.labels_ == truth)
    assert agree in (0.0, 1.0)
    Xt, tt = blobs(40, seed=1)
    np.testing.assert_array_equal(est.predict(Xt) == tt, np.full(40, agree == 1.0))


def test_class_dependent_rls_solves_eq_2_29(client):
    X, truth = blobs(60, gap=2.5)
    params = dict(gamma_A=1e-3, kernel_params={"gamma": 0.5}, n_neighbors=5, client=client,
                  random_state=0)
    est = ClassDependentLapRLS(gamma_I_pos=2.0, gamma_I_neg=0.5, **params).fit(X, truth)
    n = len(X)
    K = kernel_matrix(X, kernel="rbf", kernel_params={"gamma": 0.5})
    C = np.zeros((n, n))
    for side, weight in ((truth == 1, 2.0), (truth == 0, 0.5)):
        rows = np.flatnonzero(side)
        C[np.ix_(rows, rows)] = weight * graph_regularizer(est, X[rows])[0]
    y = np.where(truth == 1, 1.0, -1.0)
    # normal equations of 1/n ||y - K a||^2 + gamma_A a'K a + 1/n^2 (K a)' C (K a)
    H = K @ K / n + 1e-3 * K + K @ C @ K / n ** 2
    alpha = est.dual_coef_[:, 0]
    np.testing.assert_allclose(H @ alpha, K @ y / n, atol=1e-9)
    assert np.mean(est.predict(X) == truth) > 0.9
    plain = ClassDependentLapRLS(gamma_I_pos=0.0, gamma_I_neg=0.0, **params).fit(X, truth)
    ref = KernelRidge(alpha=1e-3 * n, kernel="rbf", gamma=0.5).fit(X, y)
    np.testing.assert_allclose(plain.decision_function(X), ref.predict(X), atol=1e-8)
    # the weights as the coefficients themselves: the same fit without the 1/n^2
    none = ClassDependentLapRLS(gamma_I_pos=2.0 / n ** 2, gamma_I_neg=0.5 / n ** 2,
                                graph_normalization="none", **params).fit(X, truth)
    np.testing.assert_allclose(none.dual_coef_, est.dual_coef_, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("make, match", [
    (lambda: RegularizedSpectralClustering(gamma_A=0.0), "'gamma_A' parameter of"),
    (lambda: RegularizedSpectralClustering(kernel="nope"), "'kernel' parameter of"),
    (lambda: RegularizedSpectralClustering(n_neighbors=0), "'n_neighbors' parameter of"),
    (lambda: ClassDependentLapRLS(gamma_I_pos=-1.0), "'gamma_I_pos' parameter of"),
    (lambda: ClassDependentLapRLS(n_neighbors=2.5), "'n_neighbors' parameter of"),
])
def test_bad_input_is_refused_before_work(make, match):
    X, truth = blobs(60)
    with pytest.raises(ValueError, match=match):
        make().fit(X, truth)


def _clip_messages(record):
    return [str(w.message) for w in record if "n_neighbors" in str(w.message)]


def test_fewer_rows_than_neighbors_give_the_graph_they_can_with_one_warning(client):
    X, truth = blobs(60)
    with pytest.warns(UserWarning) as record:
        RegularizedSpectralClustering(n_neighbors=100, client=client).fit(X)
    assert _clip_messages(record) == [
        "n_neighbors=100 needs more than 100 rows; the graph on 60 rows uses n_neighbors=59 "
        "(every other row a neighbour)"]
    # a class of one row: its side's graph has no edges, so its term is that of weight 0
    y = np.r_[1, np.zeros(59, dtype=int)]
    params = dict(kernel_params={"gamma": 0.5}, n_neighbors=35, client=client, random_state=0)
    with pytest.warns(UserWarning) as record:
        one = ClassDependentLapRLS(**params).fit(X, y)
    assert _clip_messages(record) == [
        "n_neighbors=35 needs more than 35 rows; the graphs on [1, 59] rows use "
        "n_neighbors=[0, 35] (every other row a neighbour)"]
    without = ClassDependentLapRLS(gamma_I_pos=0.0, **params).fit(X, y)
    np.testing.assert_array_equal(one.dual_coef_, without.dual_coef_)


def test_graph_of_another_size_is_refused(client):
    X, _ = blobs(40)
    graph, _ = given_graph(X[:30], client)
    with pytest.raises(ValueError, match="graph has 30 rows but X has 40"):
        RegularizedSpectralClustering().fit(X, graph=graph)


def test_spectral_clustering_declares_itself_a_transformer():
    # It has transform(); without TransformerMixin scikit-learn's checks refuse to run on it
    # ("seems to be a Transformer, but the transformer_tags tag is not set").
    tags = RegularizedSpectralClustering().__sklearn_tags__()
    assert tags.transformer_tags is not None
    assert hasattr(RegularizedSpectralClustering, "fit_transform")
