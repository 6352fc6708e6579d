"""svmlight reader: agreement with scikit-learn, block splitting, line-numbered errors."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from dask_ssl.data import read_svmlight

N_ROWS, N_FEATURES = 3000, 200


@pytest.fixture(scope="module")
def svm_file(tmp_path_factory):
    """A file sklearn wrote: labels in {-1, 0, +1} (0 = unlabeled), full-precision values over
    ten decades, a header comment."""
    rng = np.random.default_rng(0)
    X = sp.random(N_ROWS, N_FEATURES, density=0.05, format="csr", random_state=1)
    X.data = rng.normal(size=X.nnz) * 10.0 ** rng.integers(-5, 5, X.nnz)
    y = rng.integers(-1, 2, N_ROWS).astype(float)
    path = tmp_path_factory.mktemp("svm") / "data.svm"
    dump_svmlight_file(X, y, str(path), zero_based=False, comment="made by the test")
    return path, load_svmlight_file(str(path), zero_based=False)


def _assert_same(X, y, X_ref, y_ref):
    assert X.shape == X_ref.shape
    assert (X != X_ref).nnz == 0
    np.testing.assert_array_equal(y, y_ref)


def test_local_read_and_given_width(svm_file):
    path, (X_ref, y_ref) = svm_file
    X, y = read_svmlight(path)
    _assert_same(X, y, X_ref, y_ref)
    X, _ = read_svmlight(path, n_features=N_FEATURES + 5)
    assert X.shape == (N_ROWS, N_FEATURES + 5)


@pytest.mark.parametrize("n_blocks", [1, 3, 7])
def test_blocks_match_sklearn(client, svm_file, n_blocks):
    path, (X_ref, y_ref) = svm_file
    data = read_svmlight(path, client=client, n_blocks=n_blocks)
    assert data.n_blocks == n_blocks and data.sparse
    assert data.n_features == X_ref.shape[1] == N_FEATURES
    X = sp.vstack(client.gather(data.blocks), format="csr")
    _assert_same(X, data.gather_labels(), X_ref, y_ref)
    assert set(np.unique(y_ref)) == {-1.0, 0.0, 1.0}  # unlabeled rows kept with label 0


def test_several_files_keep_order(client, tmp_path):
    X = sp.random(40, 10, density=0.3, format="csr", random_state=2)
    y = np.arange(40, dtype=float) % 3 - 1
    for k, (a, b) in enumerate([(0, 25), (25, 40)]):
        dump_svmlight_file(X[a:b], y[a:b], str(tmp_path / f"part{k}.svm"), zero_based=False)
    data = read_svmlight(str(tmp_path / "part*.svm"), client=client, n_features=10)
    assert list(data.sizes) == [25, 15]
    np.testing.assert_array_equal(data.gather_labels(), y)
    assert abs(sp.vstack(client.gather(data.blocks)) - X).max() < 1e-15


def test_compressed_file_is_one_block(client, svm_file, tmp_path):
    path, (X_ref, y_ref) = svm_file
    packed = tmp_path / "data.svm.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    data = read_svmlight(packed, client=client, n_blocks=4)
    assert data.n_blocks == 1
    _assert_same(client.gather(data.blocks[0]), data.gather_labels(), X_ref, y_ref)


def test_comments_and_blank_lines(tmp_path):
    path = tmp_path / "c.svm"
    path.write_text("# header\n\n1 1:0.5 3:2 # trailing\n  \n0 2:1e-3\n-1\n")
    X, y = read_svmlight(path)
    np.testing.assert_array_equal(y, [1.0, 0.0, -1.0])
    np.testing.assert_array_equal(X.toarray(), [[0.5, 0, 2], [0, 1e-3, 0], [0, 0, 0]])


BAD_LINES = [
    ("1 4:x", "value in '4:x' is not a number"),
    ("1 4:1.5e", "value in '4:1.5e' is not a number"),
    ("1 abc", "'abc' is not of the form <index>:<value>"),
    ("1 0:1.0", "feature index 0"),
    ("1 qid:3 2:1", "qid (query id) tokens are not supported"),
    ("one 1:1", "label 'one' is not a number"),
    ("1 3:1 2:1", "strictly increasing"),
    ("1 -2:1", "not a positive integer"),
]


@pytest.mark.parametrize("bad, message", BAD_LINES)
def test_malformed_line_names_file_and_line(tmp_path, bad, message):
    lines = [f"{k % 2} {k % 7 + 1}:{k}.25 9:1" for k in range(400)]
    lines[236] = bad  # line 237
    path = tmp_path / "bad.svm"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"bad\.svm, line 237: ") as err:
        read_svmlight(path)
    assert message in str(err.value)


def test_error_line_exact_across_blocks(client, tmp_path):
    # The bad line sits in the last of 7 byte ranges: its number adds up the lines before it.
    lines = [f"1 {k % 50 + 1}:1" for k in range(5000)]
    lines[4876] = "1 2:1 qid:1"
    path = tmp_path / "late.svm"
    path.write_text("# comment line\n" + "\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"late\.svm, line 4878: token 'qid:1'"):
        read_svmlight(path, client=client, n_blocks=7)


def test_index_above_given_width_is_an_error(svm_file):
    path, _ = svm_file
    with pytest.raises(ValueError, match=r"data\.svm, line \d+: .*exceeds n_features=10"):
        read_svmlight(path, n_features=10)


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="no file matches"):
        read_svmlight(tmp_path / "missing*.svm")
    with pytest.raises(ValueError, match="n_blocks"):
        read_svmlight(tmp_path / "x.svm", n_blocks=0)
    (tmp_path / "empty.svm").write_text("# nothing but a comment\n\n")
    with pytest.raises(ValueError, match=r"no data lines in .*empty\.svm"):
        read_svmlight(tmp_path / "empty.svm")


def test_every_number_form_reads_as_python_float(tmp_path):
    # The one-pass scan converts plain decimals itself and hands the rest (exponents, long
    # mantissas, signs, specials) to the general parser: both must give float()'s value.
    rng = np.random.default_rng(5)
    forms = ["{i}", "-{i}", "+{i}", "{i}.", ".{f}", "{i}.{f}", "-{i}.{f}", "{i}.{f}e-{e}",
             "{i}E+{e}", "0.{f}{f}{f}", "-0", "0.0"]
    tokens = []
    for k in range(3000):
        i, f = rng.integers(0, 10 ** rng.integers(1, 10)), rng.integers(0, 10 ** rng.integers(1, 10))
        tokens.append(forms[k % len(forms)].format(i=i, f=f, e=rng.integers(0, 30)))
    tokens[5::97] = ["inf", "-NaN", "1e400", "123456789012345678901.5"] * (len(tokens[5::97]) // 4) \
        + ["2.5"] * (len(tokens[5::97]) % 4)
    # repr() of doubles: 17-digit mantissas, divided with the exact residual check
    tokens += [repr(float(v)) for v in rng.random(2000) * 10.0 ** rng.integers(-3, 4, 2000)]
    lines = [f"{k % 3 - 1} " + " ".join(f"{j + 1}:{t}" for j, t in enumerate(tokens[k:k + 10]))
             for k in range(0, len(tokens), 10)]
    path = tmp_path / "numbers.svm"
    path.write_text("\n".join(lines) + "\n")
    X, _ = read_svmlight(path)
    expected = np.array([float(t) for t in tokens])
    assert X.nnz == len(tokens)
    got = X.data  # in token order; stored zeros keep their sign
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    ok = ~np.isnan(expected)
    assert (got[ok] == expected[ok]).all()
    assert (np.signbit(got[ok]) == np.signbit(expected[ok])).all()


@pytest.mark.parametrize("text, where", [
    ("1 1:0.5\n# a comment\n\n-1 1:0.1 2:-inf\n", "line 4: value '-inf'"),
    ("1 1:0.5\nNaN 1:0.1\n", "line 2: label 'NaN'"),
])
def test_finite_reads_name_the_first_nan_or_inf_with_its_line(tmp_path, text, where):
    path = tmp_path / "x.svm"
    path.write_text(text)
    X, y = read_svmlight(path)  # read as numbers by default, as scikit-learn does
    assert not (np.isfinite(X.data).all() and np.isfinite(y).all())
    cache = tmp_path / "cache"
    for _ in range(2):  # parsed, then from the block cache
        with pytest.raises(ValueError, match=rf"x\.svm, {where} is not a finite number"):
            read_svmlight(path, finite=True, cache=str(cache))
    assert list((cache / "blocks").glob("*.npz"))


# The block cache -------------------------------------------------------------------------
def _write(path, rows):
    path.write_text("".join(f"{y} 1:{v} 3:1\n" for y, v in rows))


def test_cache_serves_an_unchanged_file_and_reparses_a_changed_one(tmp_path):
    import os

    cache = tmp_path / "cache"
    path = tmp_path / "d.svm"
    _write(path, [(1, 0.5), (-1, 0.25)])
    X, y = read_svmlight(path, cache=cache)
    assert len(list((cache / "blocks").glob("*.npz"))) == 1
    stat = path.stat()
    # Other bytes, same size and modification time: the entry is used (what the key promises).
    _write(path, [(1, 0.7), (-1, 0.25)])
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    np.testing.assert_array_equal(read_svmlight(path, cache=cache)[0].toarray(), X.toarray())
    # A new modification time: parsed again.
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10 ** 9))
    assert read_svmlight(path, cache=cache)[0][0, 0] == 0.7
    # A new size (the same modification time): parsed again.
    _write(path, [(1, 0.75), (-1, 0.25)])
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10 ** 9))
    X2, y2 = read_svmlight(path, cache=cache)
    assert X2[0, 0] == 0.75 and list(y2) == [1.0, -1.0]
    assert len(list((cache / "blocks").glob("*.npz"))) == 1  # replaced, not piled up


def test_corrupt_cache_entry_is_ignored_with_a_warning_and_rebuilt(client, svm_file, tmp_path):
    path, (X_ref, y_ref) = svm_file
    cache = tmp_path / "cache"
    read_svmlight(path, cache=cache)
    (entry,) = (cache / "blocks").glob("*.npz")
    entry.write_bytes(entry.read_bytes()[:1000])  # a torn write, as after a crash
    with pytest.warns(UserWarning, match="unreadable cache entry"):
        X, y = read_svmlight(path, cache=cache)
    _assert_same(X, y, X_ref, y_ref)
    with np.load(entry) as z:  # rebuilt whole
        assert z["data"].size == X_ref.nnz
    # On the workers too: every block's entry is written, then served.
    data = read_svmlight(path, client=client, n_blocks=3, cache=cache)
    assert len(list((cache / "blocks").glob("*.npz"))) == 4
    again = read_svmlight(path, client=client, n_blocks=3, cache=cache)
    _assert_same(sp.vstack(client.gather(again.blocks), format="csr"), again.gather_labels(),
                 X_ref, y_ref)
    assert list(again.sizes) == list(data.sizes)


def test_cache_can_be_turned_off(tmp_path, monkeypatch):
    from dask_ssl.data.blockcache import cache_dir

    monkeypatch.setenv("DASK_SSL_CACHE", "off")
    assert cache_dir() is None
    monkeypatch.setenv("DASK_SSL_CACHE", str(tmp_path / "c"))
    assert cache_dir() == str(tmp_path / "c")
    monkeypatch.delenv("DASK_SSL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == str(tmp_path / "xdg" / "dask-ssl")
