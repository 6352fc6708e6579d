"""``gamma_u="auto"`` of TSVM, DAS3VM and KernelDAS3VM: cross-validation on the labeled rows
(:mod:`dask_ssl.models._gamma_u_selection`), the supervised candidate's identity with L2SVM, the
fallback with too few labels, persistence and resume."""

from types import SimpleNamespace

import numpy as np
import pytest

from dask_ssl.data.generators import g50c
from dask_ssl.linalg import RowBlocks
from dask_ssl.models import DAS3VM, L2SVM, TSVM, KernelDAS3VM
from dask_ssl.models import _gamma_u_selection as sel
from dask_ssl.models._selection import SelectionWarning, fold_of
from dask_ssl.models.artifact import load_model, save_model

from ._labels import labels_per_class


def linear_noise(n=600, d=10, n_labeled=80, seed=0):
    """A random linear label over isotropic Gaussian rows: no cluster for the unlabeled rows
    to reveal."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=d) > 0).astype(int)
    return X, labels_per_class(y, n_labeled // 2, seed), y


@pytest.fixture(scope="module")
def noise():
    return linear_noise()


@pytest.fixture(scope="module")
def clusters():
    """g50c (two Gaussians, Bayes error 5%, 50 features), 8 labels per class: few enough that
    the supervised model errs often on the held-out labels, so the gain of following the
    clusters exceeds the noise of a 16-row estimate (with 20 a class it does not)."""
    X, y = g50c(n=600, bayes_error=0.05, seed=1)
    y = (y > 0).astype(int)
    return X, labels_per_class(y, 8, 1), y


def unlabeled_error(model, X, yl, y):
    u = yl < 0
    return float(np.mean(model.predict(X)[u] != y[u]))


# the fold loop ---------------------------------------------------------------------------

def test_folds_deal_each_class_to_every_fold():
    truth = np.array([0] * 9 + [1] * 6 + [2] * 5)
    fold = fold_of(truth, 4)
    for cls in range(3):
        counts = np.bincount(fold[truth == cls], minlength=4)
        assert counts.min() >= 1 and counts.max() - counts.min() <= 1


def test_every_labeled_row_is_held_out_once_and_no_unlabeled_row_is_scored():
    rng = np.random.default_rng(0)
    codes = np.full(50, -1)
    codes[rng.choice(50, 24, replace=False)] = np.repeat([0, 1, 2], 8)
    targets = [0, 1, 2]
    seen = []

    def fold_outputs(fold_codes, held):
        seen.append((fold_codes.copy(), held.copy()))
        # candidate 2 (gamma_u = 0.1) outputs the truth, the others a wrong class
        truth = codes[held]
        right = np.eye(3)[truth] * 2 - 1
        out = np.stack([np.roll(right, 1, axis=1)] * len(sel.AUTO_GAMMA_U))
        out[2] = right
        return out

    gamma_u, selection = sel.choose_gamma_u(SimpleNamespace(gamma_u="auto"), codes, targets,
                                            fold_outputs)
    held = np.concatenate([h for _, h in seen])
    labeled = np.flatnonzero(codes >= 0)
    assert len(seen) == sel.CV_FOLDS
    assert np.array_equal(np.sort(held), labeled)          # each labeled row exactly once
    for fold_codes, h in seen:
        assert (fold_codes[h] == -1).all()                 # held out = unlabeled in that fit
        rest = np.setdiff1d(np.arange(50), h)
        assert np.array_equal(fold_codes[rest], codes[rest])
    # scored on the 24 labeled rows and nowhere else
    assert [row["errors"] for row in selection] == [24, 24, 0, 24]
    assert gamma_u == 0.1 and selection[2]["chosen"]


# the supervised candidate ----------------------------------------------------------------

def test_tsvm_on_labels_that_ignore_the_clusters_is_l2svm(client, noise, monkeypatch):
    X, yl, _ = noise
    calls = []
    original = TSVM._fold_outputs

    def spy(self, blocks, costs, client_, targets, fold_codes, held):
        calls.append((fold_codes.copy(), held.copy()))
        return original(self, blocks, costs, client_, targets, fold_codes, held)

    monkeypatch.setattr(TSVM, "_fold_outputs", spy)
    auto = TSVM(gamma_u="auto", client=client, n_blocks=2).fit(X, yl)
    sup = L2SVM(unlabeled=-1, client=client, n_blocks=2).fit(X, yl)
    assert auto.gamma_u_ == 0.0
    assert [row["gamma_u"] for row in auto.selection_] == list(sel.AUTO_GAMMA_U)
    assert auto.selection_[0]["chosen"]
    np.testing.assert_array_equal(auto.predict(X), sup.predict(X))
    np.testing.assert_array_equal(auto.coef_, sup.coef_)
    # the fold fits are distributed: the selection's round trips are counted beside the fit's
    assert auto.selection_cost_["round_trips"] > 0 and auto.selection_cost_["fit_round_trips"] > 0
    assert not hasattr(sup, "selection_cost_")
    # the real fit's folds: held-out rows are labeled ones, unlabeled rows stay unlabeled
    held = np.concatenate([h for _, h in calls])
    assert np.array_equal(np.sort(held), np.flatnonzero(yl >= 0))
    for fold_codes, h in calls:
        assert (fold_codes[yl < 0] == -1).all() and (fold_codes[h] == -1).all()


def test_das3vm_on_labels_that_ignore_the_clusters_is_l2svm(client):
    X, yl, _ = linear_noise(seed=6)
    auto = DAS3VM(gamma_u="auto", anneal_tol=1e-2, client=client, n_blocks=2).fit(X, yl)
    sup = L2SVM(unlabeled=-1, client=client, n_blocks=2).fit(X, yl)
    assert auto.gamma_u_ == 0.0
    np.testing.assert_array_equal(auto.predict(X), sup.predict(X))
    np.testing.assert_array_equal(auto.coef_, sup.coef_)


def test_kernel_das3vm_on_labels_that_ignore_the_clusters_is_the_supervised_kernel_svm(noise):
    X, yl, _ = (a[:300] for a in noise)
    auto = KernelDAS3VM(gamma_u="auto", kernel="linear").fit(X, yl)
    lab = yl >= 0
    with pytest.warns(UserWarning, match="no unlabeled rows"):
        sup = KernelDAS3VM(kernel="linear").fit(X[lab], yl[lab])
    assert auto.gamma_u_ == 0.0 and auto.selection_[0]["chosen"]
    np.testing.assert_array_equal(auto.predict(X), sup.predict(X))
    np.testing.assert_allclose(auto.decision_function(X), sup.decision_function(X),
                               rtol=1e-9, atol=1e-12)
    assert (auto.dual_coef_[~lab] == 0).all()


def test_tsvm_fold_ramp_forks_reach_what_separate_fits_reach(client, noise):
    X, yl, _ = (a[:240] for a in noise)
    y = np.where(yl < 0, 0.0, np.where(yl == 1, 1.0, -1.0))
    costs = np.where(y != 0, 1.0 / (y != 0).sum(), 0.0)
    blocks = RowBlocks.from_array(X, client=client, n_blocks=2)
    est = TSVM(client=client)
    est.restarts_ = 0
    ws = est._candidate_fits(blocks, y, costs, "test-forks")
    sup = L2SVM(unlabeled=-1, client=client, n_blocks=2).fit(X, yl)
    np.testing.assert_allclose(ws[0], sup.coef_with_bias()[0], rtol=1e-12, atol=1e-14)
    for g, w in zip(sel.AUTO_GAMMA_U[1:], ws[1:]):
        alone = TSVM(gamma_u=g, client=client, n_blocks=2).fit(X, yl)
        np.testing.assert_allclose(w, alone.coef_with_bias()[0], rtol=1e-6, atol=1e-9)


# where the cluster assumption holds ------------------------------------------------------

@pytest.fixture(scope="module")
def clusters_tsvm(client, clusters, tmp_path_factory):
    X, yl, _ = clusters
    ckpt = tmp_path_factory.mktemp("gamma-u-ckpt")
    return TSVM(gamma_u="auto", client=client, checkpoint=str(ckpt)).fit(X, yl), ckpt


def test_tsvm_chooses_unlabeled_weight_where_clusters_hold(client, clusters, clusters_tsvm):
    X, yl, y = clusters
    auto, _ = clusters_tsvm
    sup = L2SVM(unlabeled=-1, client=client).fit(X, yl)
    assert auto.gamma_u_ > 0
    assert unlabeled_error(auto, X, yl, y) < unlabeled_error(sup, X, yl, y) - 0.03


def test_kernel_das3vm_chooses_unlabeled_weight_where_clusters_hold(clusters):
    # the labeled rows and the first unlabeled ones, 400 in all: the dense kernel fits of the
    # choice (3 weights x 5 folds, an annealing each) cost about a fifth of the whole set's
    X, yl, y = clusters
    keep = (yl >= 0) | (np.cumsum(yl < 0) <= 400 - np.count_nonzero(yl >= 0))
    X, yl, y = X[keep], yl[keep], y[keep]
    params = dict(kernel="rbf", kernel_params={"gamma": 0.005})
    auto = KernelDAS3VM(gamma_u="auto", **params).fit(X, yl)
    lab = yl >= 0
    with pytest.warns(UserWarning, match="no unlabeled rows"):
        sup = KernelDAS3VM(**params).fit(X[lab], yl[lab])
    assert auto.gamma_u_ > 0
    assert unlabeled_error(auto, X, yl, y) < unlabeled_error(sup, X, yl, y) - 0.03


def test_resume_continues_with_the_recorded_choice(client, clusters, clusters_tsvm,
                                                   monkeypatch):
    X, yl, _ = clusters
    auto, ckpt = clusters_tsvm
    assert (ckpt / sel.CHOICE_FILE).is_file()

    def not_again(*args):
        raise AssertionError("a resumed fit chose again")

    monkeypatch.setattr("dask_ssl.models._s3vm.choose_gamma_u", not_again)
    resumed = TSVM(gamma_u="auto", client=client, checkpoint=str(ckpt)).fit(X, yl, resume=True)
    assert resumed.gamma_u_ == auto.gamma_u_ and resumed.selection_ == auto.selection_
    np.testing.assert_allclose(resumed.coef_, auto.coef_, rtol=1e-10, atol=1e-12)


def test_kernel_resume_continues_with_the_recorded_choice(clusters, tmp_path, monkeypatch):
    X, yl, _ = (a[:350] for a in clusters)
    params = dict(gamma_u="auto", loss="squared", kernel_params={"gamma": 0.01},
                  checkpoint=str(tmp_path))
    auto = KernelDAS3VM(**params).fit(X, yl)
    record = tmp_path / sel.CHOICE_FILE
    assert record.is_file() and auto.gamma_u_ > 0  # a stage checkpoint to resume from

    def not_again(*args):
        raise AssertionError("a resumed fit chose again")

    monkeypatch.setattr("dask_ssl.models.kernel_da.choose_gamma_u", not_again)
    resumed = KernelDAS3VM(**params).fit(X, yl, resume=True)
    assert resumed.gamma_u_ == auto.gamma_u_ and resumed.selection_ == auto.selection_
    np.testing.assert_allclose(resumed.dual_coef_, auto.dual_coef_)
    # a fit afresh removes the record before it chooses
    with pytest.raises(AssertionError, match="chose again"):
        KernelDAS3VM(**params).fit(X, yl)
    assert not record.exists()


def test_model_json_keeps_the_choice(clusters_tsvm, tmp_path):
    auto, _ = clusters_tsvm
    loaded = load_model(save_model(auto, tmp_path / "model"))
    assert loaded.gamma_u_ == auto.gamma_u_
    assert loaded.selection_ == auto.selection_ and len(loaded.selection_) == 4


def test_kernel_model_json_keeps_the_choice(noise, tmp_path):
    X, yl, _ = (a[:200] for a in noise)
    auto = KernelDAS3VM(gamma_u="auto", loss="squared", kernel="linear").fit(X, yl)
    loaded = load_model(save_model(auto, tmp_path / "model"))
    assert len(auto.selection_) == 4
    assert loaded.gamma_u_ == auto.gamma_u_ and loaded.selection_ == auto.selection_
    np.testing.assert_allclose(loaded.decision_function(X), auto.decision_function(X))


# too few labels, given values ------------------------------------------------------------

def test_too_few_labels_keep_the_seeds_weight_with_a_warning(client, noise):
    X, y = noise[0][:200], noise[2][:200]
    yl = labels_per_class(y, 4, 0)
    with pytest.warns(SelectionWarning, match="gamma_u"):
        auto = TSVM(gamma_u="auto", client=client, n_blocks=2).fit(X, yl)
    seeds = TSVM(gamma_u=1.0, client=client, n_blocks=2).fit(X, yl)
    assert auto.gamma_u_ == 1.0 and auto.selection_ == []
    np.testing.assert_allclose(auto.coef_, seeds.coef_, rtol=1e-10, atol=1e-12)
    with pytest.warns(SelectionWarning, match="gamma_u"):
        kernel = KernelDAS3VM(gamma_u="auto", kernel="linear").fit(X, yl)
    assert kernel.gamma_u_ == 1.0 and kernel.selection_ == []


def test_a_given_weight_is_recorded_without_a_selection(noise):
    X, yl, _ = (a[:120] for a in noise)
    model = KernelDAS3VM(gamma_u=0.5, loss="squared", kernel="linear").fit(X, yl)
    assert model.gamma_u_ == 0.5 and model.selection_ == []
