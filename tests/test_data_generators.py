"""Generators: independence from blocking, the g50c Bayes error, rcv1_like's shape and its
semi-supervised difficulty."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import ndtr
from sklearn.svm import LinearSVC

from dask_ssl.data import g50c, rcv1_like, stratified_split, two_moons


def _local(client, data):
    blocks = client.gather(data.blocks)
    X = sp.vstack(blocks, format="csr") if data.sparse else np.concatenate(blocks)
    return X, data.gather_labels()


def _same(A, B):
    if sp.issparse(A):
        return A.shape == B.shape and (A != B).nnz == 0
    return np.array_equal(A, B)


@pytest.mark.parametrize("make, kwargs", [
    (two_moons, {"n": 9000, "noise": 0.2}),
    (g50c, {"n": 5000}),
    (rcv1_like, {"n_rows": 6000, "n_features": 3000, "topic_size": 200}),
])
def test_same_data_for_any_block_count(client, make, kwargs):
    X, y = make(seed=3, **kwargs)
    for n_blocks in (1, 4):
        data = make(seed=3, client=client, n_blocks=n_blocks, **kwargs)
        assert data.n_blocks == n_blocks and data.shape == X.shape
        Xb, yb = _local(client, data)
        assert _same(Xb, X)
        np.testing.assert_array_equal(yb, y)
    X_other, _ = make(seed=4, **kwargs)
    assert not _same(X_other, X)


def test_two_moons_balanced_and_prefix_stable():
    X, y = two_moons(n=201, noise=0.0)
    assert X.shape == (201, 2) and np.sum(y > 0) == 101
    # Without noise the moons are the two unit half circles.
    upper = X[y > 0]
    np.testing.assert_allclose(np.hypot(*upper.T), 1.0)
    X_big, _ = two_moons(n=10000, noise=0.0)
    np.testing.assert_array_equal(X_big[:201], X)


def test_g50c_bayes_error():
    X, y = g50c(n=200000, seed=1)
    assert X.shape == (200000, 50)
    assert np.mean(y > 0) == pytest.approx(0.5, abs=0.005)
    # The optimal rule for unit-covariance Gaussians at +-mu e/|e| is the sign of e @ x.
    assert np.mean(np.sign(X.sum(axis=1)) != y) == pytest.approx(0.05, abs=0.002)
    X, y = g50c(n=100000, n_features=5, bayes_error=0.2, seed=2)
    assert np.mean(np.sign(X.sum(axis=1)) != y) == pytest.approx(ndtr(-0.8416), abs=0.004)


@pytest.fixture(scope="module")
def text():
    return rcv1_like(n_rows=16000, seed=0)


def test_rcv1_like_shape(text):
    X, y = text
    assert X.shape == (16000, 47236)
    assert X.nnz / X.shape[0] == pytest.approx(76, rel=0.06)
    assert np.mean(y > 0) == pytest.approx(0.47, abs=0.015)
    assert X.data.min() > 0
    np.testing.assert_allclose(sp.linalg.norm(X, axis=1), 1.0)
    # Zipf: the most frequent word appears in far more documents than the median word.
    df = np.bincount(X.indices, minlength=X.shape[1])
    assert df.max() > 50 * max(np.median(df[df > 0]), 1)


def test_rcv1_like_few_labels_are_not_enough(text):
    """A linear SVM on 100 labels errs clearly more than on all labels: room for unlabeled
    data to help, while the classes stay (almost) linearly separable."""
    X, y = text
    train, test = slice(0, 12000), slice(12000, None)
    full = LinearSVC().fit(X[train], y[train])
    full_error = np.mean(full.predict(X[test]) != y[test])
    errors = []
    for seed in range(3):
        labeled = stratified_split(y[train], n_labeled=100, seed=seed).labeled
        model = LinearSVC().fit(X[train][labeled], y[train][labeled])
        errors.append(np.mean(model.predict(X[test]) != y[test]))
    assert full_error < 0.04
    assert 0.08 < np.mean(errors) < 0.3


def test_bad_parameters():
    with pytest.raises(ValueError, match="noise"):
        two_moons(noise=-1)
    with pytest.raises(ValueError, match="bayes_error"):
        g50c(bayes_error=0.5)
    with pytest.raises(ValueError, match="n_rows"):
        rcv1_like(n_rows=0)
    with pytest.raises(ValueError, match="pos_fraction"):
        rcv1_like(n_rows=10, pos_fraction=1.0)


@pytest.mark.cluster
def test_rcv1_like_block_lost_with_its_worker_is_made_again(real_cluster):
    """A block whose worker dies is recomputed from its lineage, idf included (a scattered
    idf was forgotten once the blocks were made, and the lost blocks came back cancelled)."""
    from distributed import Client

    cluster = real_cluster(n_workers=2)
    with Client(cluster.address, set_as_default=False) as client:
        data = rcv1_like(n_rows=2000, n_features=2000, topic_size=100, client=client,
                         n_blocks=4)
        before, _ = _local(client, data)
        cluster.kill_worker_at(client, data.owners()[0])
        after, _ = _local(client, data)
    assert _same(before, after)
