"""TSVM and DA against single-process NumPy references, and their stated properties."""

import logging

import numpy as np
import pytest
from distributed import Client, LocalCluster

from dask_ssl.data.generators import g50c
from dask_ssl.models import DAS3VM, L2SVM, RLS, TSVM

from . import _reference as ref
from ._labels import labels_per_class


def clusters(n=300, d=5, n_labeled=8, seed=0, r=0.4):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < r, 1.0, -1.0)
    X = rng.normal(size=(n, d))
    X[:, 0] += 1.8 * y
    X[:, 1] += 0.8 * y
    yl = np.zeros(n)
    for cls in (1.0, -1.0):
        idx = rng.choice(np.flatnonzero(y == cls), n_labeled // 2, replace=False)
        yl[idx] = cls
    return X, yl, y


@pytest.fixture(scope="module")
def data():
    return clusters()


# Fits that several tests check, made once per module (each costs hundreds of round trips).
@pytest.fixture(scope="module")
def tsvm_half(client, data):
    """TSVM at gamma' = 0.5 on 3 blocks (reference path, block and worker counts, warm start)."""
    X, yl, _ = data
    return TSVM(gamma_A=1e-2, gamma_u=0.5, pos_fraction=0.4, unlabeled=0, client=client,
                n_blocks=3).fit(X, yl)


@pytest.fixture(scope="module")
def tsvm_one(client, data):
    """TSVM at gamma' = 1 with as many switches as qualify (switching tests)."""
    X, yl, _ = data
    return TSVM(gamma_A=1e-2, gamma_u=1.0, pos_fraction=0.4, unlabeled=0, client=client).fit(X, yl)


def whole_fraction(yl, r=0.4):
    """r rounded to a whole number of positives among the unlabeled rows (DA balances to that:
    mean(p) = r is then reachable exactly)."""
    u = int((yl == 0).sum())
    return round(r * u) / u


@pytest.fixture(scope="module")
def da_half(client, data):
    """The seeds' DA (gamma' = 0.5 from the first stage) on 3 blocks (the reference path,
    balance and entropy, worker counts)."""
    X, yl, _ = data
    return DAS3VM(gamma_A=1e-2, gamma_u=0.5, pos_fraction=whole_fraction(yl), unlabeled=0,
                  initial_gamma_u=None, client=client, n_blocks=3).fit(X, yl)


def test_tsvm_objective_path_matches_numpy_reference(tsvm_half, data):
    X, yl, _ = data
    m = tsvm_half
    path, w = ref.tsvm(X, yl, 1e-2, 0.5, 0.4, S=len(yl))
    ours = [h["objective"] for h in m.history_[1:]]
    assert len(ours) == len(path)
    np.testing.assert_allclose(ours, path, rtol=1e-7)
    np.testing.assert_allclose(np.r_[m.coef_[0], m.intercept_], w, rtol=1e-6, atol=1e-8)
    assert m.objective_ == pytest.approx(path[-1], rel=1e-7)


def test_switching_strictly_decreases_objective(tsvm_one):
    m = tsvm_one
    switched = [h for h in m.history_[1:] if h["switches"] > 0]
    assert switched, "the test problem should need label switches"
    for h in switched:
        assert np.all(np.diff(h["retrains"]) < 0), h


def test_single_and_max_switching_agree(client, data, tsvm_one):
    X, yl, _ = data
    common = dict(gamma_A=1e-2, gamma_u=1.0, pos_fraction=0.4, unlabeled=0, client=client)
    one = TSVM(max_switches=1, **common).fit(X, yl)
    many = tsvm_one
    assert abs(one.objective_ - many.objective_) <= 0.01 * many.objective_
    assert sum(h["switches"] for h in one.history_) >= sum(h["switches"] for h in many.history_)


def test_da_objective_path_matches_numpy_reference(da_half, data):
    X, yl, _ = data
    m = da_half
    path, (best, w) = ref.da(X, yl, 1e-2, 0.5, whole_fraction(yl))
    ours = [h["objective"] for h in m.history_]
    assert len(ours) == len(path)
    np.testing.assert_allclose(ours, path, rtol=1e-6)
    assert m.objective_ == pytest.approx(best, rel=1e-7)
    np.testing.assert_allclose(np.r_[m.coef_[0], m.intercept_], w, rtol=1e-5, atol=1e-7)


def test_da_balance_and_final_entropy(da_half, data):
    X, yl, _ = data
    u = int((yl == 0).sum())
    r = whole_fraction(yl)
    m = da_half
    for h in m.history_:
        assert abs(h["mean_p"] - r) < 1e-9
    assert m.history_[-1]["entropy"] < u * 1e-6
    assert m.history_[0]["entropy"] > u * 1e-6


def test_tsvm_beats_supervised_svm_on_clusters(client):
    X, yl, y = clusters(n=1000, n_labeled=6, seed=3)
    svm = L2SVM(gamma_A=1e-2, unlabeled=0, client=client).fit(X, yl)
    tsvm = TSVM(gamma_A=1e-2, gamma_u=1.0, pos_fraction=0.4, unlabeled=0, client=client).fit(X, yl)
    err_svm = np.mean(svm.predict(X) != y)
    err_tsvm = np.mean(tsvm.predict(X) != y)
    assert err_tsvm < 0.5 * err_svm, (err_svm, err_tsvm)
    unl = yl == 0
    assert np.mean(tsvm.transduction_[unl] != y[unl]) <= err_svm
    assert np.mean(tsvm.transduction_[unl] > 0) == pytest.approx(0.4, abs=1 / unl.sum())


@pytest.mark.parametrize("n_blocks", [1, 5])
def test_block_count_does_not_change_result(client, data, tsvm_half, n_blocks):
    X, yl, _ = data
    common = dict(gamma_A=1e-2, gamma_u=0.5, pos_fraction=0.4, unlabeled=0, client=client)
    ref_t = tsvm_half  # 3 blocks
    t = TSVM(n_blocks=n_blocks, **common).fit(X, yl)
    assert t.objective_ == pytest.approx(ref_t.objective_, rel=1e-9)
    np.testing.assert_array_equal(t.transduction_, ref_t.transduction_)


@pytest.mark.parametrize("max_pairs", [1, 7, 1000])
def test_switches_from_short_candidate_lists_equal_full_lists(max_pairs):
    """Blocks send only the tops of their candidate lists: the pairs picked from them are
    those of the whole lists, or the merge says it needs more (never a different answer)."""
    from dask_ssl.models.tsvm import _candidates, merge_switches

    rng = np.random.default_rng(3)
    outcomes = []
    for trial in range(200):
        # outputs on a coarse grid: many ties, within and across blocks
        blocks = [(np.round(rng.normal(scale=0.8, size=n) * 4) / 4,
                   np.where(rng.random(n) < 0.5, 1.0, -1.0)) for n in rng.integers(0, 40, 4)]
        full = merge_switches([_candidates(o, yt, max_pairs) for o, yt in blocks], max_pairs)
        assert full is not None
        for limit in (1, 3, 10):
            short = merge_switches([_candidates(o, yt, min(limit, max_pairs))
                                    for o, yt in blocks], max_pairs)
            outcomes.append(short is not None)
            if short is not None:
                assert short[1] == full[1]
                for a, b in zip(short[0], full[0]):
                    np.testing.assert_array_equal(a, b)
    assert any(outcomes)
    # a list cut at max_pairs is never short; otherwise both outcomes occur
    assert all(outcomes) if max_pairs == 1 else not all(outcomes)


def test_candidate_fetch_trip_keeps_the_result(client, data, tsvm_half, monkeypatch):
    """With two eager candidates per block most switching rounds need the extra trip that
    fetches the lists; the fit is the same."""
    from dask_ssl.models import tsvm

    monkeypatch.setattr(tsvm, "EAGER_CANDIDATES", 2)
    X, yl, _ = data
    t = TSVM(gamma_A=1e-2, gamma_u=0.5, pos_fraction=0.4, unlabeled=0, client=client,
             n_blocks=3).fit(X, yl)
    assert t.objective_ == pytest.approx(tsvm_half.objective_, rel=1e-12)
    np.testing.assert_array_equal(t.transduction_, tsvm_half.transduction_)
    assert (t.history_[-1]["round_trips"] - t.history_[0]["round_trips"]
            > tsvm_half.history_[-1]["round_trips"] - tsvm_half.history_[0]["round_trips"])


def test_stage_records_count_trips_and_bytes(tsvm_half, da_half):
    for est in (tsvm_half, da_half):
        trips = [r["round_trips"] for r in est.history_]
        moved = [r["bytes"] for r in est.history_]
        # running totals: every stage makes trips, and each trip moves at least a vector
        assert all(b > a for a, b in zip(trips, trips[1:]))
        assert all(b > a for a, b in zip(moved, moved[1:]))
        assert moved[-1] >= 8 * trips[-1]


def test_worker_count_does_not_change_result(data, tsvm_half, da_half):
    X, yl, _ = data
    common = dict(gamma_A=1e-2, gamma_u=0.5, unlabeled=0)
    # 2 workers: the session cluster's fits, on 3 blocks as the others below
    expected_t = tsvm_half.objective_
    expected_d = da_half.objective_
    for n_workers in (1, 3):
        with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=False,
                          dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
                Client(cluster, set_as_default=False) as other:
            assert TSVM(client=other, n_blocks=3, pos_fraction=0.4, **common).fit(X, yl) \
                .objective_ == pytest.approx(expected_t, rel=1e-9)
            assert DAS3VM(client=other, n_blocks=3, pos_fraction=whole_fraction(yl),
                          initial_gamma_u=None, **common).fit(X, yl).objective_ \
                == pytest.approx(expected_d, rel=1e-8)


@pytest.mark.parametrize("cls", [TSVM, DAS3VM])
@pytest.mark.parametrize("params, message", [
    ({"pos_fraction": 0.0}, "pos_fraction"),
    ({"pos_fraction": 1.2}, "pos_fraction"),
    ({"gamma_u": -1.0}, "gamma_u"),
    ({"gamma_A": 0.0}, "gamma_A"),
])
def test_bad_parameters(client, data, cls, params, message):
    X, yl, _ = data
    with pytest.raises(ValueError, match=message):
        cls(unlabeled=0, client=client, **params).fit(X, yl)


@pytest.mark.parametrize("cls", [TSVM, DAS3VM])
def test_all_or_no_rows_labeled(client, data, cls):
    X, yl, y = data
    with pytest.warns(UserWarning, match="no unlabeled rows"):
        est = cls(unlabeled=0, client=client).fit(X, y)
    svm = L2SVM(client=client).fit(X, y)
    np.testing.assert_allclose(est.coef_, svm.coef_, rtol=1e-12)
    assert est.objective_ == pytest.approx(svm.objective_, rel=1e-12)
    np.testing.assert_array_equal(est.transduction_, y)
    with pytest.raises(ValueError, match="no labeled rows"):
        cls(unlabeled=0, client=client).fit(X, np.zeros_like(y))


def test_warm_started_tsvm_skips_the_ramp(client, data, tsvm_half):
    X, yl, _ = data
    common = dict(gamma_A=1e-2, gamma_u=0.5, pos_fraction=0.4, unlabeled=0, client=client)
    cold = tsvm_half
    warm = TSVM(**common).fit(X, yl, coef_init=cold.coef_with_bias())
    assert [h["gamma_u"] for h in warm.history_[1:]] == [0.5]
    assert warm.objective_ <= cold.objective_ * (1 + 1e-9)


def test_first_sorted_is_a_stable_sort_cut_at_the_limit():
    from dask_ssl.models.tsvm import _first_sorted

    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(0, 60))
        keys = np.round(rng.normal(size=n) * 3) / 3  # many ties
        idx = np.sort(rng.choice(1000, n, replace=False))
        for limit in (1, 2, 5, 100):
            want = idx[np.argsort(keys, kind="stable")[:limit]]
            np.testing.assert_array_equal(_first_sorted(keys, idx, limit), want)


@pytest.mark.parametrize("cls", [TSVM, DAS3VM, RLS])
def test_blocks_of_repeated_rows_give_the_plain_result(client, cls):
    """Repeated rows (compressed to distinct rows on the workers, where the solver sums the
    copies' costs, and RLS's squared terms around their cost-weighted target) give the
    result of the same blocks held row by row."""
    from dask_ssl.linalg import distinct

    X, yl, _ = clusters(n=120, seed=4)
    X, yl = np.repeat(X, 3, axis=0), np.repeat(yl, 3)
    yl[1::3] = 0  # copies differ in label: their costs differ
    params = dict(gamma_A=1e-2, unlabeled=0, client=client, n_blocks=2)
    if cls is not RLS:
        params.update(gamma_u=0.5, pos_fraction=0.4)
    if cls is DAS3VM:
        params.update(initial_temperature=0.4, initial_gamma_u=None)
    weights = np.random.default_rng(1).uniform(0.5, 2.0, X.shape[0])  # copies' costs differ
    fit = {"sample_weight": weights} if cls is RLS else {}
    if cls is RLS:
        yl[2::3] = -yl[2::3]  # copies with opposite targets: the loss keeps their spread
    compressed = cls(**params).fit(X, yl, **fit)

    def set_share(share):
        previous = distinct.MAX_DISTINCT_SHARE
        distinct.MAX_DISTINCT_SHARE = share
        return previous

    previous = client.run(set_share, -1.0)  # no block is compressed
    try:
        plain = cls(**params).fit(X, yl, **fit)
    finally:
        client.run(set_share, next(iter(previous.values())))
    assert compressed.objective_ == pytest.approx(plain.objective_, rel=1e-9)
    np.testing.assert_allclose(compressed.coef_, plain.coef_, rtol=1e-7, atol=1e-10)
    if cls is not RLS:
        np.testing.assert_array_equal(compressed.transduction_, plain.transduction_)


def test_da_raising_gamma_u_escapes_the_fixed_weights_minimum(client):
    """g50c, where the seeds' DA (gamma' = 1 from the first stage) hardens p around a w turned
    away from the clusters: raising gamma' along the annealing from 1e-5 reaches a lower
    TSVM objective at the same gamma' and errs less than the L2-SVM on the same labels."""
    X, y = g50c(n=600, bayes_error=0.05, seed=1)
    y = (y > 0).astype(int)
    yl = labels_per_class(y, 20, 1)
    unl = yl < 0
    ramped = DAS3VM(initial_gamma_u=1e-5, cold_start=False, client=client).fit(X, yl)
    fixed = DAS3VM(initial_gamma_u=None, client=client).fit(X, yl)
    svm = L2SVM(unlabeled=-1, client=client).fit(X, yl)
    assert ramped.objective_ < fixed.objective_
    assert np.mean(ramped.predict(X)[unl] != y[unl]) < np.mean(svm.predict(X)[unl] != y[unl])
    # the schedule: 1e-5 times 1.5 per stage up to 1, which the last stages run at
    weights = [h["gamma_u"] for h in ramped.history_]
    np.testing.assert_allclose(weights, np.minimum(1.0, 1e-5 * 1.5 ** np.arange(len(weights))))
    assert weights[-1] == 1.0
    assert ramped.history_[-1]["entropy"] < unl.sum() * 1e-6
    assert all(h["gamma_u"] == 1.0 for h in fixed.history_)


def test_da_cold_start_is_a_second_annealing(client, data, da_half):
    """The cold start anneals again from ``initial_temperature * gamma'_0 / gamma_u`` with
    gamma' raised from ``initial_gamma_u`` anew and p back at r; the first annealing is the
    one ``cold_start=False`` runs, and the w kept is the lowest objective of both paths.
    Without a gamma' schedule the two starts are one."""
    X, yl, _ = data
    u = int((yl == 0).sum())
    params = dict(gamma_A=1e-2, gamma_u=0.5, pos_fraction=whole_fraction(yl), unlabeled=0,
                  client=client)
    both = DAS3VM(**params).fit(X, yl)
    hot = DAS3VM(cold_start=False, **params).fit(X, yl)
    starts = [h["start"] for h in both.history_]
    first = starts.index(1)
    assert starts == [0] * first + [1] * (len(starts) - first)
    assert [h["objective"] for h in both.history_[:first]] == [h["objective"]
                                                                for h in hot.history_]
    cold = both.history_[first:]
    assert cold[0]["T"] == pytest.approx(10.0 * 1e-5 / 0.5, rel=1e-12)
    np.testing.assert_allclose([h["gamma_u"] for h in cold],
                               np.minimum(0.5, 1e-5 * 1.5 ** np.arange(len(cold))))
    assert cold[-1]["entropy"] < u * 1e-6 and cold[-1]["gamma_u"] == 0.5
    assert both.n_iter_ == len(both.history_)
    assert both.objective_ == min(h["objective"] for h in both.history_)
    assert both.objective_ <= hot.objective_
    assert {h["start"] for h in da_half.history_} == {0}  # initial_gamma_u=None


def test_da_resumes_inside_the_cold_start(client, data, tmp_path, monkeypatch):
    """A fit stopped in its second annealing resumes there (its checkpoint records which
    annealing it was in) and ends where the uninterrupted fit does."""
    from dask_ssl.models import da

    X, yl, _ = data
    params = dict(gamma_A=1e-2, gamma_u=0.5, pos_fraction=whole_fraction(yl), unlabeled=0,
                  client=client)
    clean = DAS3VM(**params).fit(X, yl)
    run_stage = da.DADriver.run_stage

    def stop_in_the_cold_start(driver):
        if driver.start == 1 and driver.stage == 3:
            raise KeyboardInterrupt
        return run_stage(driver)

    est = DAS3VM(checkpoint=str(tmp_path / "ckpt"), **params)
    monkeypatch.setattr(da.DADriver, "run_stage", stop_in_the_cold_start)
    with pytest.raises(KeyboardInterrupt):
        est.fit(X, yl)
    monkeypatch.setattr(da.DADriver, "run_stage", run_stage)
    est.fit(X, yl, resume=True)
    assert [h["start"] for h in est.history_] == [h["start"] for h in clean.history_]
    assert est.objective_ == pytest.approx(clean.objective_, rel=1e-9)
    np.testing.assert_allclose(est.coef_, clean.coef_, rtol=1e-7, atol=1e-10)


def test_da_cold_start_keeps_the_labels_on_large_raw_features(client, shared_data):
    """HW's Zernike view (47 raw moments, scale ~100), digit 0 against the rest, 100 labels:
    the first annealing's soft phase turns w from the labels and errs several times the
    L2-SVM on the same labels; the cold start reaches a far lower TSVM objective, which the
    default keeps, and errs less than the L2-SVM."""
    from dask_ssl.data import read_multiview, stratified_split

    path = shared_data / "multiview" / "HW.mat"
    if not path.is_file():
        pytest.skip(f"{path} is missing")
    views, classes = read_multiview(path)
    X, y = views[5], (classes == 1).astype(int)
    split = stratified_split(y, n_labeled=100, seed=3)
    train = split.y_train(y, marker=-1)
    hidden = split.unlabeled

    def error(m):
        return np.mean(m.predict(X)[hidden] != y[hidden])

    svm = L2SVM(unlabeled=-1, client=client).fit(X, train)
    hot = DAS3VM(cold_start=False, client=client).fit(X, train)
    both = DAS3VM(client=client).fit(X, train)
    assert error(hot) > 2 * error(svm)
    assert both.objective_ < 0.1 * hot.objective_
    assert error(both) < error(svm)
