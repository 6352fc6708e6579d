"""KDD Cup 99 network-intrusion records as a sparse binary task: attack (+1) vs normal (-1).

Encoding (as in the seeds' experiments): the three categorical columns (protocol_type, service,
flag) one-hot over their sorted vocabularies; every numeric column ``log1p`` then divided by its
maximum over the data read, so values lie in [0, 1]; numeric columns that are zero everywhere
are dropped; zeros are not stored. Columns keep the file's order, a categorical column expanding
in place. The 10% file gives 116 columns: 3 + 66 + 11 one-hot and 36 numeric (two numeric
columns, num_outbound_cmds and is_host_login, are zero everywhere in it).

gzip cannot be split by byte ranges, and decompressing the 10% file takes about 0.2 s, so one
worker decompresses it once and cuts the text into line-aligned parts; the other workers parse
their parts in parallel. Two passes follow: each part reports its vocabularies and column maxima,
the driver merges them, then every part (and its replicas) is encoded where it lies.

``replicate=k`` builds the "kdd99-scale" data: each part produces ``k`` blocks on its worker,
the first the part itself and the others copies whose non-zero numeric values are multiplied by
``exp(jitter * z)``, ``z ~ N(0, 1)`` hashed from (seed, copy, row, column), so the copies do not
depend on how the records were cut into parts. The maxima of the first pass already include
the copies, so every column still lies in [0, 1].
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import fsspec
import numpy as np
import scipy.sparse as sp
from numba import njit

from ..linalg.rowblocks import RowBlocks
from ._numbers import FLAGGED, INVALID, parse_number

#: The 41 feature columns, in file order (the 42nd column is the connection type).
COLUMNS = (
    "duration", "protocol_type", "service", "flag", "src_bytes", "dst_bytes", "land",
    "wrong_fragment", "urgent", "hot", "num_failed_logins", "logged_in", "num_compromised",
    "root_shell", "su_attempted", "num_root", "num_file_creations", "num_shells",
    "num_access_files", "num_outbound_cmds", "is_host_login", "is_guest_login", "count",
    "srv_count", "serror_rate", "srv_serror_rate", "rerror_rate", "srv_rerror_rate",
    "same_srv_rate", "diff_srv_rate", "srv_diff_host_rate", "dst_host_count",
    "dst_host_srv_count", "dst_host_same_srv_rate", "dst_host_diff_srv_rate",
    "dst_host_same_src_port_rate", "dst_host_srv_diff_host_rate", "dst_host_serror_rate",
    "dst_host_srv_serror_rate", "dst_host_rerror_rate", "dst_host_srv_rerror_rate",
)
N_COLUMNS = len(COLUMNS) + 1
CATEGORICAL = (1, 2, 3)
NUMERIC = tuple(c for c in range(41) if c not in CATEGORICAL)
_WIDTH = 32  # longest categorical value kept, bytes
_READ = 4 * 2 ** 20
_NORMAL = np.frombuffer(b"normal.", np.uint8)


@dataclass
class KDD99Encoding:
    """What maps raw records to columns: learned from one data set, reusable on another.

    Attributes
    ----------
    vocabularies : list of 3 lists of str
        Sorted values of protocol_type, service and flag.
    maxima : ndarray of shape (38,)
        ``max(log1p(value))`` per numeric column; columns with maximum 0 are dropped.
    """

    vocabularies: list
    maxima: np.ndarray

    @property
    def kept(self) -> np.ndarray:
        """Numeric columns (positions in ``NUMERIC``) that are not zero everywhere."""
        return np.flatnonzero(self.maxima > 0)

    @property
    def n_features(self) -> int:
        return sum(len(v) for v in self.vocabularies) + len(self.kept)

    @property
    def feature_names(self) -> list[str]:
        """Column names: ``src_bytes``, ``service=http``, ..."""
        kept = set(NUMERIC[k] for k in self.kept)
        out = []
        for col, name in enumerate(COLUMNS):
            if col in CATEGORICAL:
                out += [f"{name}={v}" for v in self.vocabularies[col - 1]]
            elif col in kept:
                out.append(name)
        return out

    def to_dict(self) -> dict:
        """JSON-ready form (for model artifacts)."""
        return {"vocabularies": self.vocabularies, "maxima": self.maxima.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> "KDD99Encoding":
        return cls([list(v) for v in d["vocabularies"]], np.asarray(d["maxima"], dtype=float))


def _decompress_split(url, n_parts, n_rows, storage_options):
    """Read (and decompress) the first ``n_rows`` lines, cut them into ``n_parts`` parts of
    nearly equal line counts. Returns ``[(text, index of its first line), ...]``."""
    chunks, lines = [], 0
    with fsspec.open(url, "rb", compression="infer", **storage_options) as f:
        while n_rows is None or lines < n_rows:
            chunk = f.read(_READ)
            if not chunk:
                break
            chunks.append(chunk)
            lines += chunk.count(b"\n")
    text = b"".join(chunks)
    if text and not text.endswith(b"\n"):
        text += b"\n"
    ends = np.flatnonzero(np.frombuffer(text, np.uint8) == 10) + 1
    if n_rows is not None:
        ends = ends[:n_rows]
    cuts = np.linspace(0, len(ends), n_parts + 1).astype(int)
    starts = np.concatenate([[0], ends])
    return [(text[starts[a]:starts[b]], int(a)) for a, b in zip(cuts[:-1], cuts[1:])]


@njit(cache=True, nogil=True)
def _parse(buf, n_lines):
    numeric = np.zeros((n_lines, len(NUMERIC)))
    cats = np.zeros((n_lines, 3, _WIDTH), np.uint8)
    y = np.empty(n_lines)
    row = field = 0
    s = 0
    for p in range(buf.shape[0] + 1):
        c = buf[p] if p < buf.shape[0] else 10
        if c != 44 and c != 10:  # ','  '\n'
            continue
        e = p
        if e > s and buf[e - 1] == 13:
            e -= 1
        if c == 10 and field == 0 and e == s:  # blank line
            s = p + 1
            continue
        if field >= N_COLUMNS or (c == 10 and field != N_COLUMNS - 1):
            return numeric, cats, y, row, 1, field, s, e
        if field == N_COLUMNS - 1:
            normal = e - s == _NORMAL.shape[0]
            if normal:
                for k in range(e - s):
                    normal = normal and buf[s + k] == _NORMAL[k]
            y[row] = -1.0 if normal else 1.0
        elif 1 <= field <= 3:
            if e - s > _WIDTH or e == s:
                return numeric, cats, y, row, 2, field, s, e
            for k in range(e - s):
                cats[row, field - 1, k] = buf[s + k]
        else:
            status, value = parse_number(buf, s, e)
            # KDD values are short decimals: a long one, nan or inf is refused, not converted.
            if status == INVALID or status == FLAGGED or value < 0:
                return numeric, cats, y, row, 3, field, s, e
            numeric[row, field if field == 0 else field - 3] = value
        s = p + 1
        field += 1
        if c == 10:
            row += 1
            field = 0
    return numeric, cats, y, row, 0, 0, 0, 0


def _parse_part(part, url):
    """Parse one part into numeric values (n x 38), categorical values (n x 3, bytes), labels."""
    text, first_line = part
    buf = np.frombuffer(text, np.uint8)
    numeric, cats, y, row, err, field, s, e = _parse(buf, text.count(b"\n"))
    if err:
        token = text[s:e].decode("utf-8", "replace")
        problem = {1: f"expected {N_COLUMNS} comma-separated fields",
                   2: f"field {field + 1}: categorical value {token!r} is empty or longer than "
                      f"{_WIDTH} bytes",
                   3: f"field {field + 1}: {token!r} is not a non-negative decimal number with "
                      "at most 15 significant digits"}[err]
        raise ValueError(f"{url}, line {first_line + row + 1}: {problem}")
    return {"numeric": numeric, "cats": cats.view(f"S{_WIDTH}")[:, :, 0], "y": y,
            "first_row": first_line}


@njit(cache=True, nogil=True)
def _mix(x):
    # splitmix64 finalizer; every constant is uint64 so numba keeps integer arithmetic.
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True, nogil=True)
def _factor(jitter, seed, copy, row, col):
    """``exp(jitter * z)``, ``z ~ N(0, 1)`` hashed from (seed, copy, row in the file, column).

    A hash rather than a generator stream: the noise of a value then does not depend on how
    the records were cut into parts, so every ``n_blocks`` (and ``client=None``) gives the
    same copies. Copy 0 is the data itself.
    """
    if copy == 0:
        return 1.0
    key = np.uint64(((row * 64 + col) * 4096 + copy) * 2 + 1)
    h1 = _mix(np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + key)
    h2 = _mix(h1 + np.uint64(0x9E3779B97F4A7C15))
    u1 = ((h1 >> np.uint64(11)) + np.uint64(1)) * 2.0 ** -53  # (0, 1]: log is finite
    u2 = (h2 >> np.uint64(11)) * 2.0 ** -53
    return np.exp(jitter * np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2))


@njit(cache=True, nogil=True)
def _column_max(numeric, jitter, seed, copy, first_row):
    out = np.zeros(numeric.shape[1])
    for i in range(numeric.shape[0]):
        for j in range(numeric.shape[1]):
            v = numeric[i, j]
            if v != 0:
                out[j] = max(out[j], v * _factor(jitter, seed, copy, first_row + i, j))
    # log1p here, not in NumPy: the same implementation as in _csr, so maxima map to exactly 1.
    return np.log1p(out)


def _stats(parsed, replicate, jitter, seed):
    """First pass: the part's vocabularies and ``max log1p`` per numeric column over its copies."""
    maxima = np.zeros(len(NUMERIC))
    for copy in range(replicate):
        maxima = np.maximum(maxima, _column_max(parsed["numeric"], jitter, seed, copy,
                                                parsed["first_row"]))
    vocab = [np.unique(parsed["cats"][:, k]) for k in range(3)]
    return {"vocabularies": [[v.decode() for v in col] for col in vocab], "maxima": maxima}


def _merge(stats) -> KDD99Encoding:
    vocab = [sorted(set().union(*(s["vocabularies"][k] for s in stats))) for k in range(3)]
    return KDD99Encoding(vocab, np.max([s["maxima"] for s in stats], axis=0))


@njit(cache=True, nogil=True)
def _csr(numeric, jitter, seed, copy, first_row, codes, cat_base, num_target, maxima):
    """Rows in output column order: duration, the three one-hots, the other numerics.

    ``num_target[j]`` is the output column of numeric column ``j`` (-1: dropped), ``codes`` the
    vocabulary positions (-1: unknown value), ``cat_base`` each one-hot's first column.
    """
    n, m = numeric.shape
    nnz = 0
    for i in range(n):
        for j in range(m):
            nnz += numeric[i, j] != 0 and num_target[j] >= 0
        for k in range(3):
            nnz += codes[i, k] >= 0
    indptr = np.zeros(n + 1, np.int64)
    indices = np.empty(nnz, np.int32)
    data = np.empty(nnz)
    pos = 0
    for i in range(n):
        for j in range(m):
            if j == 1:
                for k in range(3):
                    if codes[i, k] >= 0:
                        indices[pos] = cat_base[k] + codes[i, k]
                        data[pos] = 1.0
                        pos += 1
            v = numeric[i, j]
            if v != 0:
                v *= _factor(jitter, seed, copy, first_row + i, j)
                if num_target[j] >= 0:
                    indices[pos] = num_target[j]
                    data[pos] = np.log1p(v) / maxima[j]  # division: the maximum maps to exactly 1
                    pos += 1
        indptr[i + 1] = pos
    return data, indices, indptr


def _layout(encoding):
    """Output columns of the numerics and of each one-hot's first value."""
    sizes = [len(v) for v in encoding.vocabularies]
    num_target = np.full(len(NUMERIC), -1, np.int64)
    first = encoding.maxima[0] > 0  # duration, the only numeric before the categoricals
    num_target[encoding.kept] = np.arange(len(encoding.kept)) + np.where(
        encoding.kept == 0, 0, sum(sizes))
    cat_base = int(first) + np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return num_target, cat_base.astype(np.int64)


def _encode(parsed, copy, jitter, seed, encoding):
    """Second pass: one CSR block (copy ``copy`` of the part) in the encoding's columns."""
    codes = np.empty((len(parsed["y"]), 3), np.int64)
    for k, vocab in enumerate(encoding.vocabularies):
        words = np.array([v.encode() for v in vocab] or [b""], dtype=f"S{_WIDTH}")
        at = np.searchsorted(words, parsed["cats"][:, k]).clip(0, len(words) - 1)
        codes[:, k] = np.where(words[at] == parsed["cats"][:, k], at, -1)
    num_target, cat_base = _layout(encoding)
    # Values above the maximum (data read with another data set's encoding) stay above 1.
    data, indices, indptr = _csr(parsed["numeric"], jitter, seed, copy, parsed["first_row"],
                                 codes, cat_base, num_target, encoding.maxima)
    return sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, encoding.n_features))


def _labels(parsed):
    return parsed["y"]


def read_kdd99(path, *, client=None, n_rows=None, replicate=1, jitter=0.01, seed=0,
               n_blocks=None, encoding=None, return_encoding=False, storage_options=None):
    """Read KDD Cup 99 records (CSV, optionally gzip) as attack (+1) vs normal (-1).

    Parameters
    ----------
    path : str or path-like
        Local path or fsspec URL; compression inferred from the name (``.gz``).
    client : distributed.Client or None
        Where to read. ``None`` reads in this process and returns in-memory arrays.
    n_rows : int, optional
        Read only the first ``n_rows`` records (before replication).
    replicate : int, default 1
        Copies of every record ("kdd99-scale": ``replicate=10`` on the 10% file gives 4.9 M
        rows), made on the workers. Rows are ordered copy by copy; copy 0 is the data read.
    jitter : float, default 0.01
        Standard deviation of the log of the multiplicative noise on numeric values of copies.
    seed : int, default 0
        Seeds the jitter.
    n_blocks : int, optional
        Parts the records are cut into (default: one per worker thread); the result has
        ``n_blocks * replicate`` blocks. Ignored without a client.
    encoding : KDD99Encoding, optional
        Vocabularies and maxima to use instead of learning them from this data (to encode new
        records like the training ones). Unknown categorical values give all-zero one-hots.
    return_encoding : bool, default False
        Also return the :class:`KDD99Encoding` used.
    storage_options : dict, optional
        Passed to fsspec.

    Returns
    -------
    RowBlocks or (scipy.sparse.csr_matrix, numpy.ndarray)
        With a client a sparse :class:`~dask_ssl.linalg.RowBlocks` with labels (+1 / -1);
        without one ``(X, y)``. Followed by the encoding when ``return_encoding``.

    Raises
    ------
    ValueError
        For bad parameters, and naming the file and line of a malformed record.
    """
    storage_options = dict(storage_options or {})
    for name, value, low in (("n_rows", n_rows, 1), ("replicate", replicate, 1),
                             ("n_blocks", n_blocks, 1)):
        if value is not None and (int(value) != value or value < low):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not jitter >= 0:
        raise ValueError(f"jitter must be >= 0, got {jitter!r}")
    url = str(path)
    args = (jitter, seed)

    if client is None:
        (part,) = _decompress_split(url, 1, n_rows, storage_options)
        parsed = _parse_part(part, url)
        enc = encoding or _merge([_stats(parsed, replicate, *args)])
        X = sp.vstack([_encode(parsed, r, *args, enc) for r in range(replicate)], format="csr")
        out = (X, np.tile(parsed["y"], replicate))
        return (*out, enc) if return_encoding else out

    workers = sorted(client.nthreads())
    n_blocks = int(n_blocks or sum(client.nthreads().values()))
    parts = client.submit(_decompress_split, url, n_blocks, n_rows, storage_options, pure=False)
    # Round-robin preference (equal shares per worker); loose, so a block lost with its
    # worker is rebuilt on another.
    where = [dict(workers=[workers[i % len(workers)]], allow_other_workers=True, pure=False)
             for i in range(n_blocks)]
    parsed = [client.submit(operator.getitem, parts, i, **where[i]) for i in range(n_blocks)]
    parsed = [client.submit(_parse_part, p, url, **where[i]) for i, p in enumerate(parsed)]
    labels = [client.submit(_labels, p, **where[i]) for i, p in enumerate(parsed)]
    sizes = [len(y) for y in client.gather(labels)]
    if encoding is None:
        encoding = _merge(client.gather([client.submit(_stats, p, replicate, *args, **where[i])
                                         for i, p in enumerate(parsed)]))
    keep = [i for i in range(n_blocks) if sizes[i] > 0]
    blocks = [client.submit(_encode, parsed[i], r, *args, encoding, **where[i])
              for r in range(replicate) for i in keep]
    # Copies share their part's label vector: one future, no extra memory.
    data = RowBlocks(client, blocks, [sizes[i] for r in range(replicate) for i in keep],
                     encoding.n_features, True, [labels[i] for r in range(replicate) for i in keep])
    return (data, encoding) if return_encoding else data
