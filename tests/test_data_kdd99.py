"""KDD Cup 99 reader on the real 10% file (read once per module), replication, encoding reuse;
and the multi-view .mat reader, which also reads shared data."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
import scipy.sparse as sp

from dask_ssl.data import DATASETS, KDD99Encoding, read_kdd99, read_multiview
from dask_ssl.data.kdd99 import COLUMNS


@pytest.fixture(scope="module")
def head(kdd99_path):
    """The first 1500 records read in this process (which also compiles the parser here once
    and caches it for the workers, instead of each worker compiling it)."""
    return read_kdd99(kdd99_path, n_rows=1500)


@pytest.fixture(scope="module")
def kdd(client, kdd99_path, head):
    data, encoding = read_kdd99(kdd99_path, client=client, return_encoding=True)
    return data, encoding, sp.vstack(client.gather(data.blocks), format="csr")


def test_full_file_shape_and_statistics(kdd):
    data, encoding, X = kdd
    assert data.shape == (494021, 116) == X.shape
    # 38 numeric columns less 2 all-zero ones, 3 + 66 + 11 one-hot columns.
    assert [len(v) for v in encoding.vocabularies] == [3, 66, 11]
    assert len(encoding.kept) == 36 and len(encoding.feature_names) == 116
    dropped = set(COLUMNS) - {name.split("=")[0] for name in encoding.feature_names}
    assert dropped == {"num_outbound_cmds", "is_host_login"}  # zero in every record
    assert X.nnz / X.shape[0] == pytest.approx(12.51, abs=0.01)
    y = data.gather_labels()
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert np.mean(y > 0) == pytest.approx(0.803, abs=5e-4)
    assert X.data.min() > 0 and X.data.max() == 1.0
    assert np.all(X.max(axis=0).toarray() == 1.0)  # every kept column reaches its maximum
    onehot = [j for j, name in enumerate(encoding.feature_names) if "=" in name]
    np.testing.assert_array_equal(X[:, onehot].sum(axis=1).A1, 3.0)


def test_local_subset_matches_blocks_and_reused_encoding(client, kdd99_path, kdd, head):
    _, encoding, X_full = kdd
    X, y = read_kdd99(kdd99_path, n_rows=1500, encoding=encoding)
    assert (X != X_full[:1500]).nnz == 0
    data = read_kdd99(kdd99_path, client=client, n_rows=1500, n_blocks=3)
    X_local, y_local = head
    assert list(data.sizes) == [500, 500, 500]
    assert (sp.vstack(client.gather(data.blocks)) != X_local).nnz == 0
    np.testing.assert_array_equal(data.gather_labels(), y_local)
    np.testing.assert_array_equal(y, y_local)


def test_replicas_are_jittered_copies(client, kdd99_path):
    data = read_kdd99(kdd99_path, client=client, n_rows=4000, replicate=3, seed=5, n_blocks=3)
    assert data.shape[0] == 12000 and data.n_blocks == 9
    blocks = client.gather(data.blocks)
    X0 = sp.vstack(blocks[:3], format="csr")
    X2 = sp.vstack(blocks[6:], format="csr")
    assert np.array_equal(X0.indices, X2.indices) and np.array_equal(X0.indptr, X2.indptr)
    ratio = X2.data / X0.data
    onehot = X0.data == 1.0
    assert np.all(ratio[onehot & (X2.data == 1.0)] == 1.0)
    moved = ratio[X0.data < 0.99]
    assert 0.0 < np.std(moved) < 0.02 and np.all(np.abs(moved - 1) < 0.2)
    assert X0.data.max() <= 1.0 and X2.data.max() <= 1.0
    np.testing.assert_array_equal(data.gather_labels(), np.tile(data.gather_labels()[:4000], 3))
    # The noise is a function of (seed, copy, row, column): the same copies for any blocking.
    again, _ = read_kdd99(kdd99_path, n_rows=4000, replicate=3, seed=5)
    other, _ = read_kdd99(kdd99_path, n_rows=4000, replicate=3, seed=6)
    assert (again != sp.vstack(blocks)).nnz == 0
    assert (other[8000:] != X2).nnz > 0


def test_malformed_record_names_file_and_line(tmp_path, kdd99_path):
    with gzip.open(kdd99_path, "rt") as f:
        lines = [next(f) for _ in range(50)]
    lines[31] = lines[31].rstrip("\n") + ",extra\n"
    lines[40] = lines[40].replace(",0.00,", ",abc,", 1)
    path = tmp_path / "bad.csv"
    path.write_text("".join(lines))
    with pytest.raises(ValueError, match=r"bad\.csv, line 32: expected 42 comma-separated"):
        read_kdd99(path)
    lines[31] = lines[30]
    path.write_text("".join(lines))
    with pytest.raises(ValueError, match=r"bad\.csv, line 41: field \d+: 'abc' is not"):
        read_kdd99(path)


def test_encoding_round_trip_and_arguments(kdd99_path):
    X, _, enc = read_kdd99(kdd99_path, n_rows=300, return_encoding=True)
    back = KDD99Encoding.from_dict(enc.to_dict())
    assert back.vocabularies == enc.vocabularies and np.array_equal(back.maxima, enc.maxima)
    assert X.shape[1] == enc.n_features
    with pytest.raises(ValueError, match="replicate"):
        read_kdd99(kdd99_path, replicate=0)


def test_multiview_views_and_classes(shared_data):
    views, y = read_multiview(shared_data / "multiview" / "HW.mat")
    assert [v.shape[1] for v in views] == [216, 76, 64, 6, 240, 47]
    assert all(v.shape[0] == 2000 for v in views)
    np.testing.assert_array_equal(np.bincount(y), [0] + [200] * 10)
    views, y = read_multiview(shared_data / "multiview" / "BBC.mat")
    assert len(views) == 4 and all(sp.isspmatrix_csr(v) for v in views) and y.max() == 5
    assert set(DATASETS) == {"svmlight", "kdd99", "two_moons", "g50c", "rcv1_like", "multiview"}
