"""Distinct-row compression of a block: same products as the plain block, collisions safe."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dask_ssl.linalg import kernels
from dask_ssl.linalg.distinct import DistinctRows, _assign_groups, distinct_rows


def repeated(sparse: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(40, 7)) * (rng.random((40, 7)) < 0.4)
    X = base[rng.integers(0, 40, size=300)]
    return sp.csr_matrix(X) if sparse else X


@pytest.mark.parametrize("sparse", [True, False])
def test_products_equal_the_plain_block(sparse):
    X = repeated(sparse)
    view = distinct_rows(X)
    assert isinstance(view, DistinctRows)
    dense = X.toarray() if sparse else X
    assert view.U.shape[0] == np.unique(dense, axis=0).shape[0]
    np.testing.assert_array_equal((view.U.toarray() if sparse else view.U)[view.group], dense)
    rng = np.random.default_rng(1)
    w, v, a = rng.normal(size=8), rng.normal(size=300), rng.random(300)
    rows = np.flatnonzero(rng.random(300) < 0.5)
    np.testing.assert_allclose(kernels.matvec(view, w, True), kernels.matvec(X, w, True), rtol=1e-12)
    np.testing.assert_allclose(kernels.rmatvec(view, v, True), kernels.rmatvec(X, v, True), rtol=1e-12)
    np.testing.assert_allclose(kernels.gram_rows(view, rows, a[rows], True),
                               kernels.gram_rows(X, rows, a[rows], True), rtol=1e-12, atol=1e-12)


def test_hash_collisions_never_merge_different_rows():
    X = sp.csr_matrix(np.array([[1.0, 0, 2], [1.0, 0, 2], [0, 3.0, 0], [1.0, 0, 2.5], [0, 3.0, 0]]))
    order = np.arange(5)
    same_hash = np.zeros(5, dtype=np.uint64)  # every row in one bucket
    group, reps = _assign_groups(order, same_hash, X.indptr, X.indices.astype(np.int64), X.data)
    assert list(group) == [0, 0, 1, 2, 1]
    assert list(reps) == [0, 2, 3]


def test_blocks_without_repeats_stay_as_they_are():
    X = np.random.default_rng(2).normal(size=(100, 5))
    assert distinct_rows(X) is X
    assert distinct_rows(X) is X  # cached answer, same object
