"""Multi-view learning at scale: the views' co-located row blocks (MultiViewBlocks), CoRLS in the
views' feature weights against the dense block system, CoLapRLS with the views as row blocks."""

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

from dask_ssl.multiview import CoLapRLS, CoLapSVM, CoRLS
from dask_ssl.multiview.blocks import MultiViewBlocks
from dask_ssl.models._graph_weight import truth_of
from dask_ssl.models._selection import CV_FOLDS, fold_of
from dask_ssl.multiview.corls import AUTO_COUPLING, corls_direct
from dask_ssl.multiview.corls_primal import PrimalCoRLS

from .test_multiview_colap import problem as colap_problem
from .test_multiview_corls import problem

KPS = [{"gamma": 0.4}, {"gamma": 0.8}, {"gamma": 0.2}]


def _rows(i, X):
    return X.toarray() if sp.issparse(X) else X


def _check_colocated(mv, Xs):
    owners = mv.owners()
    for view, X in zip(mv.views, Xs):
        assert view.owners() == owners and np.array_equal(view.sizes, mv.sizes)
        got = np.vstack([_rows(0, b) for b in view.client.gather(view.blocks)])
        # (svmlight text keeps 17 significant digits: equal to the last bit or so)
        np.testing.assert_allclose(got, X.toarray() if sp.issparse(X) else X, rtol=1e-14)
    assert mv.joined().owners() == owners


def test_views_from_arrays_share_blocks_and_workers(client):
    Xs, y, _ = problem(n=37, n_views=3)
    Xs[1] = sp.csr_matrix(Xs[1])
    mv = MultiViewBlocks.from_arrays(Xs, client=client, y=y, n_blocks=5)
    assert mv.n_views == 3 and mv.n_rows == 37 and len(mv.sizes) == 5
    assert len(set(mv.owners())) == 2  # both workers hold blocks
    _check_colocated(mv, Xs)
    np.testing.assert_array_equal(mv.gather_labels(), y)


def test_views_from_one_svmlight_file_per_view_are_lined_up(client, tmp_path):
    rng = np.random.default_rng(1)
    n = 120
    # a narrow view and one whose rows grow longer: their byte ranges split the rows apart
    wide = np.zeros((n, 40))
    for i in range(n):
        wide[i, : 1 + i // 3] = rng.uniform(0.5, 1.0, 1 + i // 3)
    Xs = [sp.random(n, 3, density=0.9, random_state=2, format="csr"), sp.csr_matrix(wide)]
    y = rng.choice([-1.0, 0.0, 1.0], n)
    paths = {}
    for name, X in zip(("a", "b"), Xs):
        paths[name] = str(tmp_path / f"{name}.svm")
        dump_svmlight_file(X, y, paths[name], zero_based=False)
    from dask_ssl.data import read_svmlight
    raw = [read_svmlight(p, client=client, n_blocks=4) for p in paths.values()]
    assert not np.array_equal(raw[0].sizes, raw[1].sizes)
    mv = MultiViewBlocks.from_svmlight(paths, client=client, n_blocks=4,
                                       n_features=[3, 40])
    assert mv.names == ("a", "b") and mv.unlabeled == 0
    _check_colocated(mv, Xs)
    np.testing.assert_array_equal(mv.gather_labels(), y)
    # labels that disagree between the views' files are refused, naming the row
    y2 = y.copy()
    y2[7] = 5.0
    dump_svmlight_file(Xs[1], y2, str(tmp_path / "c.svm"), zero_based=False)
    with pytest.raises(ValueError, match="row 7"):
        MultiViewBlocks.from_svmlight([paths["a"], str(tmp_path / "c.svm")], client=client)


def test_views_from_a_mat_file(client, tmp_path):
    Xs, _, truth = problem(n=20)
    cell = np.empty((1, 2), dtype=object)
    cell[0, 0], cell[0, 1] = Xs[0], sp.csc_matrix(Xs[1])
    path = tmp_path / "two.mat"
    scipy.io.savemat(path, {"X": cell, "Y": (truth + 1)[:, None]})
    mv = MultiViewBlocks.from_mat(path, client=client, n_blocks=3)
    _check_colocated(mv, Xs)
    np.testing.assert_array_equal(mv.gather_labels(), truth + 1)


@pytest.mark.parametrize("formulation, n_classes, combine",
                         [("coupled", 3, "mean"), ("coupled", 2, 1), ("averaged", 2, "mean")])
def test_nystrom_with_every_row_a_landmark_is_the_exact_corls(client, formulation, n_classes,
                                                              combine):
    Xs, y, _ = problem(n=40, n_labeled=16, n_classes=n_classes)
    settings = dict(gamma_A=[1e-2, 3e-2], mu=2.0, formulation=formulation, combine=combine,
                    kernel_params=KPS[:2])
    exact = CoRLS(**settings).fit(Xs, y)
    nystrom = CoRLS(n_components=40, client=client, **settings).fit(Xs, y)
    assert exact.solver_ == "direct" and nystrom.solver_ == "gram"
    assert nystrom.n_features_out_ == (40, 40)
    np.testing.assert_allclose(nystrom.decision_function(Xs), exact.decision_function(Xs),
                               atol=1e-6)
    # the primal leave-one-out is the dense one: the same table, the same choice
    assert nystrom.gamma_C_ == exact.gamma_C_
    np.testing.assert_allclose([r["squared"] for r in nystrom.selection_],
                               [r["squared"] for r in exact.selection_], rtol=1e-6)
    assert [r["rho"] for r in nystrom.selection_] == list(AUTO_COUPLING)
    np.testing.assert_array_equal(nystrom.transduction_, exact.transduction_)


@pytest.mark.parametrize("formulation", ["coupled", "averaged"])
def test_linear_primal_corls_is_the_dense_one_with_linear_kernels(client, formulation):
    Xs, y, _ = problem(n=36, n_labeled=12, n_views=3)
    settings = dict(gamma_A=[1e-2, 2e-2, 5e-2], mu=[2.0, 0.5], gamma_C=0.7,
                    formulation=formulation, kernel="linear")
    exact = CoRLS(**settings).fit(Xs, y)
    new = [X[:7] + 0.1 for X in Xs]
    for solver in ("gram", "cg"):
        primal = CoRLS(solver=solver, tol=1e-12, client=client, **settings).fit(Xs, y)
        assert primal.dual_coef_ is None and [w.shape for w in primal.coef_] == \
            [(X.shape[1], 1) for X in Xs]
        np.testing.assert_allclose(primal.decision_function(new), exact.decision_function(new),
                                   atol=1e-8)
        for a, b in zip(primal.view_decision_functions(Xs), exact.view_decision_functions(Xs)):
            np.testing.assert_allclose(a, b, atol=1e-8)
    assert primal.round_trips_per_iter_ == 1.0  # a CG product is one round trip


@pytest.mark.parametrize("formulation", ["coupled", "averaged"])
def test_cg_path_cross_validation_is_the_dense_refit_without_each_fold(client, formulation):
    Xs, y, _ = problem(n=40, n_labeled=20, n_classes=3)
    mv = MultiViewBlocks.from_arrays(Xs, client=client, n_blocks=3)
    labeled = y >= 0
    Y = np.column_stack([np.where(~labeled, 0.0, np.where(y == c, 1.0, -1.0))
                         for c in range(3)])
    settings = dict(gamma_A=[1e-2, 3e-2], mu=2.0, formulation=formulation)
    system = PrimalCoRLS(mv, Y, labeled, gram=False, **settings)
    gammas = [0.0, 0.3, 3.0]
    outputs, criterion = system.held_out_outputs(gammas, 1)
    assert criterion == "cv"
    L = np.flatnonzero(labeled)
    fold = fold_of(truth_of(Y[L]), min(CV_FOLDS, L.size))
    Ks = [X @ X.T for X in Xs]
    for g, out in zip(gammas, outputs):
        for f in range(fold.max() + 1):
            # the fold's rows become unlabeled rows of the refit; l stays the full count
            kept = labeled.copy()
            kept[L[fold == f]] = False
            alpha = corls_direct(Ks, Y * kept[:, None], kept, gamma_C=g, n_labeled=L.size,
                                 **settings)
            np.testing.assert_allclose(out[fold == f], (Ks[1] @ alpha[1])[L[fold == f]],
                                       rtol=1e-3, atol=1e-4)
    Xs, y, _ = problem(n=40, n_labeled=20, n_classes=2)
    est = CoRLS(kernel="linear", solver="cg", client=client, **settings).fit(Xs, y)
    assert {r["criterion"] for r in est.selection_} == {"cv"}
    assert est.gamma_C_ in [r["gamma_C"] for r in est.selection_ if r["chosen"]]


def test_gamma_C_zero_is_one_primal_rls_per_view(client):
    Xs, y, _ = problem(n=50, n_labeled=14, n_classes=3)
    gammas, mu = [1e-2, 3e-2], 2.5
    est = CoRLS(gamma_A=gammas, gamma_C=0.0, mu=mu, kernel="linear", solver="gram",
                client=client).fit(Xs, y)
    L = np.flatnonzero(y >= 0)
    Y = np.column_stack([np.where(y[L] == c, 1.0, -1.0) for c in range(3)])
    for s, (X, c) in enumerate(zip(Xs, [1.0, mu])):
        XL = X[L]
        w = np.linalg.solve(XL.T @ XL + gammas[s] * L.size / c * np.eye(X.shape[1]), XL.T @ Y)
        np.testing.assert_allclose(est.coef_[s], w, rtol=1e-10, atol=1e-12)


def test_views_as_blocks_with_their_labels_fit_and_predict_on_the_workers(client):
    Xs, y, _ = problem(n=60, n_labeled=16)
    y0 = np.where(y < 0, 0, np.where(y == 1, 1, -1))  # svmlight's convention: 0 unlabeled
    mv = MultiViewBlocks.from_arrays(Xs, client=client, y=y0, unlabeled=0, n_blocks=4)
    est = CoRLS(n_components=25, kernel_params=KPS[:2], random_state=0, client=client).fit(mv)
    assert list(est.classes_) == [-1, 1] and est.n_labeled_ == 16
    np.testing.assert_allclose(est.decision_function(mv), est.decision_function(Xs),
                               atol=1e-10)
    np.testing.assert_array_equal(est.transduction_, est.predict(Xs))
    assert est.round_trips_ == 2  # the Gram matrices, then the outputs


@pytest.mark.parametrize("params, match", [
    (dict(), "n_components"),                       # RBF kernels at scale need features
    (dict(kernel="linear", solver="direct"), "row blocks"),
    (dict(n_components=99), "exceeds"),
])
def test_at_scale_settings_are_refused_before_any_work(client, params, match):
    Xs, y, _ = problem(n=30)
    mv = MultiViewBlocks.from_arrays(Xs, client=client, y=y, n_blocks=2)
    with pytest.raises(ValueError, match=match):
        CoRLS(client=client, **params).fit(mv)


def test_colaprls_on_blocks_is_the_in_memory_fit(client):
    Xs, y, _, graphs, _ = colap_problem(client)
    mv = MultiViewBlocks.from_arrays(Xs, client=client, y=y, n_blocks=2)
    settings = dict(gamma_A=1e-3, gamma_I=30.0, p=1, client=client)
    # Nystrom features per view: the in-memory fit goes through the same machinery
    nys = dict(n_components=20, kernel_params=KPS[:2], random_state=0, **settings)
    blocks = CoLapRLS(**nys).fit(mv, graphs=graphs)
    memory = CoLapRLS(**nys).fit(Xs, y, graphs=graphs)
    np.testing.assert_allclose(blocks.decision_function(mv), memory.decision_function(Xs),
                               atol=1e-8)
    # linear views at scale: LinearLapRLS per view, LapRLS's model with the linear kernel
    linear = CoLapRLS(kernel="linear", **settings).fit(mv, graphs=graphs)
    assert type(linear.estimators_[0]).__name__ == "LinearLapRLS"
    exact = CoLapRLS(kernel="linear", solver="direct", **settings).fit(Xs, y, graphs=graphs)
    np.testing.assert_allclose(linear.decision_function(Xs), exact.decision_function(Xs),
                               atol=1e-6)
    svm = CoLapSVM(kernel="linear", **settings).fit(mv, graphs=graphs)
    assert type(svm.estimators_[1]).__name__ == "LinearLapSVM"
    np.testing.assert_array_equal(svm.transduction_, svm.predict(Xs))
