"""Multi-view kernels (Rosenberg Thm 3.2.1, thesis Eq 4.3) and the co-regularization bound
(Rosenberg Thm 2.4.3): each checked against an independent form of the same quantity."""

import numpy as np
import pytest

from dask_ssl.kernels import DeformedKernel, kernel_matrix
from dask_ssl.models import KernelDAS3VM
from dask_ssl.multiview import (CoRegularizationKernel, MultiViewKernel,
                                coregularization_complexity, coregularization_factor)

KERNELS = ["rbf", "linear"]
PARAMS = [{"gamma": 0.3}, None]


def _views(n, seed=0, widths=(3, 2)):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, d)) for d in widths]


def _laplacian(n, seed=0):
    rng = np.random.default_rng(seed)
    W = np.abs(rng.normal(size=(n, n))) * (rng.random((n, n)) < 0.2)
    W = np.triu(W, 1)
    W = W + W.T
    return np.diag(W.sum(axis=1)) - W


def test_one_view_with_the_laplacian_is_the_deformed_kernel():
    (X,), (Z,) = _views(30, 0, (3,)), _views(7, 1, (3,))
    L = _laplacian(30)
    params = {"kernel": "rbf", "kernel_params": {"gamma": 0.5}}
    # Thm 3.2.1 with m = 1: k~ = (1/g) [K - k^T (I + (lam/g) L K)^-1 (lam/g) L k]
    lam, g = 0.7, 2.5
    mvk = MultiViewKernel([X], M=L, gamma_C=lam, gamma_A=g, **params)
    dk = DeformedKernel(X, (lam / g) * L, **params)
    for A, B in ((Z, X), (Z, Z), (X, X)):
        np.testing.assert_allclose(mvk(A, B), dk.gram(A, B) / g, rtol=0, atol=1e-12)
    # the plain kernel is deformed: the check is not vacuous
    assert np.abs(mvk(Z, X) - kernel_matrix(Z, X, **params) / g).max() > 1e-3


def test_coregularization_m_gives_thm_2_4_3_trace_term():
    X1, X2 = _views(50, 2)
    y = np.full(50, -1)
    y[:8] = np.arange(8) % 2
    L, U = np.arange(8), np.arange(8, 50)
    g, lam = (0.5, 2.0), 0.8
    K1 = kernel_matrix(X1, kernel="rbf", kernel_params=PARAMS[0]) / g[0]
    K2 = X2 @ X2.T / g[1]
    Jp = K1[np.ix_(U, L)] - K2[np.ix_(U, L)]
    S = K1[np.ix_(U, U)] + K2[np.ix_(U, U)]
    U2 = (np.trace(K1[np.ix_(L, L)]) + np.trace(K2[np.ix_(L, L)])
          - lam * np.trace(Jp.T @ np.linalg.solve(np.eye(U.size) + lam * S, Jp)))
    # the cloud is the unlabeled rows; Rosenberg's lambda sum_U (f1 - f2)^2 is half the
    # ordered-sum M^coreg, so gamma_C = lambda / 2; a = (1, 1) scales (f1 + f2)/2 by 2
    mvk = MultiViewKernel([X1[U], X2[U]], D=coregularization_factor(U.size, 2),
                          gamma_C=lam / 2, gamma_A=g, kernel=KERNELS, kernel_params=PARAMS)
    trace = np.trace(mvk(mvk.stack([X1[L], X2[L]])))
    np.testing.assert_allclose(trace, U2, rtol=1e-10)
    bound = coregularization_complexity([X1, X2], y, gamma_C=lam, gamma_A=g, kernel=KERNELS,
                                        kernel_params=PARAMS)
    np.testing.assert_allclose(bound.U ** 2, U2, rtol=1e-10)
    np.testing.assert_allclose([bound.lower, bound.upper],
                               [np.sqrt(U2) / (8 * np.sqrt(2)), np.sqrt(U2) / 8], rtol=1e-10)
    assert bound.reduction > 0.05 * bound.supervised


def test_the_bound_shrinks_with_the_coupling_to_its_limit():
    X1, X2 = _views(40, 3)
    y = np.full(40, -1)
    y[:6] = np.arange(6) % 2
    lams = np.array([0.0, 0.01, 0.1, 1.0, 10.0, 1e3, 1e7, np.inf])
    b = coregularization_complexity([X1, X2], y, gamma_C=lams, kernel=KERNELS,
                                    kernel_params=PARAMS)
    assert b.reduction[0] == 0 and b.shrinkage[0] == pytest.approx(1.0)
    assert np.all(np.diff(b.reduction) >= -1e-9) and b.reduction[-2] > b.reduction[1]
    assert b.reduction[-1] == pytest.approx(b.limit) and b.reduction[-2] == pytest.approx(
        b.limit, rel=1e-4)
    assert np.all(b.U <= np.sqrt(b.supervised) + 1e-12)


@pytest.mark.parametrize("n_views", [2, 3])
def test_low_rank_shortcut_equals_the_full_inverse(n_views):
    widths = (3, 2, 4)[:n_views]
    Xs, Zs = _views(40, 4, widths), _views(6, 5, widths)
    rows = np.arange(10, 40)  # the views agree on the "unlabeled" rows only
    D = coregularization_factor(40, n_views, rows)
    M = (D @ D.T).toarray()
    # the ordered sum: diagonal blocks 2(m-1) I, off-diagonal -2 I on the coupled rows
    assert M[10, 10] == pytest.approx(2 * (n_views - 1)) and M[10, 40 + 10] == pytest.approx(-2)
    assert M[0, 0] == 0 and np.linalg.eigvalsh(M).min() > -1e-9
    kw = dict(gamma_C=0.9, gamma_A=[1.0, 2.0, 0.5][:n_views],
              view_weights=[0.5, 1.0, 0.25][:n_views],
              kernel=["rbf", "linear", "poly"][:n_views],
              kernel_params=[{"gamma": 0.3}, None, {"degree": 2}][:n_views])
    full, low = MultiViewKernel(Xs, M=M, **kw), MultiViewKernel(Xs, D=D, **kw)
    A, B = full.stack(Zs), full.stack(Xs)
    assert np.abs(full(A, B) - low(A, B)).max() < 1e-8
    assert np.abs(full(B) - low(B)).max() < 1e-8
    # a dense random factor too (M = D D^T of rank 5)
    R = np.random.default_rng(6).normal(size=(40 * n_views, 5))
    full, low = MultiViewKernel(Xs, M=R @ R.T, **kw), MultiViewKernel(Xs, D=R, **kw)
    assert np.abs(full(A, B) - low(A, B)).max() < 1e-8


def test_eq_4_3_is_the_point_cloud_kernel_at_half_the_coupling():
    Xs, Zs = _views(35, 7), _views(5, 8)
    mu, nu = 1.3, 2.0
    coreg = CoRegularizationKernel(Xs, gamma_C=mu, gamma_A=(1.0, nu), kernel=KERNELS,
                                   kernel_params=PARAMS)
    kw = dict(gamma_A=(1.0, nu), kernel=KERNELS, kernel_params=PARAMS)
    cloud = MultiViewKernel.from_coregularization(Xs, gamma_C=mu / 2, **kw)
    A, B = coreg.stack(Zs), coreg.stack(Xs)
    np.testing.assert_allclose(coreg(A, B), cloud(A, B), rtol=0, atol=1e-10)
    # ALGORITHMS §7.4: reading Rosenberg's printed M^coreg as the ordered sum at gamma_C = mu
    # doubles the coupling; the factor matters
    doubled = MultiViewKernel.from_coregularization(Xs, gamma_C=mu, **kw)
    assert np.abs(coreg(A, B) - doubled(A, B)).max() > 1e-3


def test_a_kernel_estimator_fits_and_predicts_out_of_sample_with_it():
    Xs, Zs = _views(60, 9), _views(10, 10)
    y = np.full(60, -1)
    y[:10] = np.arange(10) % 2
    mvk = MultiViewKernel.from_coregularization(Xs, gamma_C=0.5, kernel=KERNELS,
                                                kernel_params=PARAMS)
    gamma_A = 0.1
    est = KernelDAS3VM(loss="squared", gamma_u=0.0, gamma_A=gamma_A, kernel=mvk)
    est.fit(mvk.stack(Xs), y)
    # kernel RLS on the labeled rows: (1/2l) sum (y - f)^2 + gamma_A/2 ||f||~^2
    L = np.arange(10)
    XL = [X[L] for X in Xs]
    KL = mvk.gram_views(XL)
    alpha = np.linalg.solve(KL + gamma_A * L.size * np.eye(L.size), np.where(y[L] == 1, 1., -1.))
    expected = mvk.gram_views(Zs, XL) @ alpha
    np.testing.assert_allclose(est.decision_function(mvk.stack(Zs)), expected, atol=1e-8)
    # scikit-learn's per-pair call: two 1-D rows, one value
    A = mvk.stack(Zs)
    assert mvk(A[0], A[1]) == pytest.approx(mvk(A[:1], A[1:2])[0, 0])


def test_named_views_are_stacked_by_name():
    X1, X2 = _views(20, 11)
    mvk = MultiViewKernel.from_coregularization({"a": X1, "b": X2}, kernel=KERNELS,
                                                kernel_params=PARAMS)
    assert mvk.n_features_ == (3, 2) and mvk.names_ == ("a", "b")
    np.testing.assert_array_equal(mvk.stack({"b": X2, "a": X1}), np.hstack([X1, X2]))
    with pytest.raises(ValueError, match="named views"):
        mvk.stack([X1, X2])


@pytest.mark.parametrize("make, match", [
    (lambda Xs: MultiViewKernel(Xs, M=np.eye(3)), r"M has shape \(3, 3\)"),
    (lambda Xs: MultiViewKernel(Xs, M=np.eye(40), D=np.ones((40, 1))), "not both"),
    (lambda Xs: MultiViewKernel(Xs, D=np.ones((39, 2))), r"D has shape"),
    (lambda Xs: MultiViewKernel(Xs, M=np.triu(np.ones((40, 40)))), "symmetric"),
    (lambda Xs: MultiViewKernel(Xs, gamma_C=-1.0), "gamma_C"),
    (lambda Xs: MultiViewKernel(Xs, gamma_A=[1.0, 0.0]), "view 1 has 0.0"),
    (lambda Xs: MultiViewKernel(Xs, kernel=["rbf"]), "kernel has 1 entries for 2"),
    (lambda Xs: MultiViewKernel(Xs, kernel="nope"), "unknown kernel"),
    (lambda Xs: CoRegularizationKernel(Xs + Xs[:1]), "two views"),
    (lambda Xs: MultiViewKernel(Xs)(np.ones((2, 4))), "4 columns"),
    (lambda Xs: coregularization_complexity(Xs, np.zeros(19)), "19 entries"),
])
def test_bad_input_is_a_clear_error(make, match):
    with pytest.raises(ValueError, match=match):
        make(_views(20, 12))
