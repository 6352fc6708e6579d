"""Reading svmlight / libsvm files in parallel byte ranges on the Dask workers.

Format, one example a line: ``<label> <index>:<value> <index>:<value> ... # comment`` with
1-based, strictly increasing feature indices. Label ``0`` marks an unlabeled example (the
svmlin / SVMlight convention); labels are kept as read, as floats, so callers decide how to map
them. ``qid:`` (ranking) tokens are rejected: this library trains classifiers, and silently
dropping query ids would hide a data mix-up.

A file is cut into byte ranges whose boundaries are moved to line starts; each range is parsed
on a worker into a CSR block. The driver only reads a few bytes around each boundary, so line
numbers in error messages stay exact: every range reports how many lines it holds and the
driver adds those of the ranges before it.

``client=None`` parses in the calling process and returns ``(X, y)`` (SciPy CSR, NumPy): the
path for small files and for prediction. With a client the result is a
:class:`~dask_ssl.linalg.RowBlocks` with per-block label futures.
"""

from __future__ import annotations

from pathlib import Path

import fsspec
from fsspec.utils import infer_compression
import numpy as np
import scipy.sparse as sp
from numba import njit

from ..linalg.rowblocks import RowBlocks, default_block_count
from . import blockcache
from ._numbers import EXACT, MAX_EXACT, POW10, INVALID, convert_flagged, parse_number

_DEFAULT_BLOCK_BYTES = 64 * 2 ** 20
_WINDOW = 2 ** 16  # bytes read at a time when moving a boundary to the next line start
#: Longest line read (a row with millions of nonzeros is tens of MB); a longer one is refused
#: with its file and line before the rest of it is read into memory.
MAX_LINE_BYTES = 256 << 20
_CHUNK = 16 << 20  # bytes read at a time by a parsing task

(_OK, _BAD_LABEL, _BAD_TOKEN, _QID, _BAD_INDEX, _INDEX_ZERO, _UNSORTED, _BAD_VALUE,
 _TOO_LARGE) = range(9)

_MESSAGES = {
    _BAD_LABEL: "label {token!r} is not a number",
    _BAD_TOKEN: "token {token!r} is not of the form <index>:<value>",
    _QID: "token {token!r}: qid (query id) tokens are not supported; remove them, this reader "
          "loads classification data only",
    _BAD_INDEX: "feature index in {token!r} is not a positive integer below 2**31",
    _INDEX_ZERO: "feature index 0 in {token!r}: indices are 1-based",
    _UNSORTED: "feature index in {token!r} is not larger than the one before it (indices must "
               "be strictly increasing)",
    _BAD_VALUE: "value in {token!r} is not a number",
    _TOO_LARGE: "feature index in {token!r} exceeds n_features={n_features}",
}


@njit(cache=True, nogil=True)
def _is_space(c):
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


@njit(cache=True, nogil=True)
def _is_break(c):
    """Ends a token: white space, a newline or a comment."""
    return _is_space(c) or c == 10 or c == 35


@njit(cache=True, nogil=True)
def _flag(flags, n_flag, pos, s, e):
    """Record a flagged number (see :func:`_scan`); returns ``flags``, grown when full."""
    if 3 * n_flag == flags.shape[0]:
        # Grown by an explicit loop: a slice assignment costs seconds of compiling.
        bigger = np.empty(2 * flags.shape[0], np.int64)
        for k in range(flags.shape[0]):
            bigger[k] = flags[k]
        flags = bigger
    flags[3 * n_flag], flags[3 * n_flag + 1], flags[3 * n_flag + 2] = pos, s, e
    return flags


@njit(cache=True, nogil=True)
def _token_number(buf, s, n):
    """The number token from ``s`` to the next break, by :func:`parse_number`:
    ``(end, status, value)``."""
    p = s
    while p < n and not _is_break(buf[p]):
        p += 1
    status, value = parse_number(buf, s, p)
    return p, status, value


@njit(cache=True, nogil=True)
def _scan(buf, max_rows, max_nnz, n_features):
    """Parse valid svmlight text in one pass over ``buf``; ``n_features=0`` means no limit.

    Each byte is read about once: lines, comments, tokens, indices and values are recognized
    as the scan meets them, and a plain decimal value (``[-]digits[.digits]`` with a mantissa
    below 2**53) is converted on the spot (exact: one rounding, as in :mod:`._numbers`). Other
    values go through :func:`parse_number`; those it flags are recorded in ``flags`` as
    triples (position: the entry in ``data``, or ``-1 - row`` for a label; token start; token
    end) and converted afterwards. At the first thing that is not valid the scan stops with
    ``ok=False``; :func:`_find_error` then names the problem.

    Returns the arrays, their used lengths, the flags, the number of lines (newlines) seen,
    the largest index and ``ok``.
    """
    labels = np.empty(max_rows)
    indptr = np.zeros(max_rows + 1, np.int64)
    indices = np.empty(max_nnz, np.int32)
    data = np.empty(max_nnz)
    flags = np.empty(3 * 64, np.int64)
    n = buf.shape[0]
    p = row = nnz = n_flag = line = max_index = 0
    ok = True
    while p < n and ok:
        c = buf[p]
        if c == 10:
            line += 1
            p += 1
            continue
        if _is_space(c):
            p += 1
            continue
        if c == 35:  # a comment line
            while p < n and buf[p] != 10:
                p += 1
            continue
        s = p
        p, status, value = _token_number(buf, s, n)
        if status == INVALID:
            ok = False
            break
        labels[row] = value
        if status != EXACT:
            flags = _flag(flags, n_flag, -1 - row, s, p)
            n_flag += 1
        last = 0
        while True:
            while p < n and _is_space(buf[p]):
                p += 1
            if p >= n or buf[p] == 10 or buf[p] == 35:
                break
            s = p
            index = 0
            while p < n and 48 <= buf[p] <= 57 and p - s < 11:
                index = index * 10 + (buf[p] - 48)
                p += 1
            if (p == s or p >= n or buf[p] != 58 or index == 0 or index >= 2 ** 31
                    or index <= last or (n_features > 0 and index > n_features)):
                ok = False
                break
            p += 1
            s = p
            neg = p < n and buf[p] == 45
            if neg:
                p += 1
            mant = n_digits = n_frac = 0
            while p < n and 48 <= buf[p] <= 57 and n_digits < 18:
                mant = mant * 10 + (buf[p] - 48)
                n_digits += 1
                p += 1
            if p < n and buf[p] == 46:
                p += 1
                while p < n and 48 <= buf[p] <= 57 and n_digits < 18:
                    mant = mant * 10 + (buf[p] - 48)
                    n_digits += 1
                    n_frac += 1
                    p += 1
            if n_digits > 0 and mant <= MAX_EXACT and n_frac <= 22 and (p >= n or _is_break(buf[p])):
                value = mant / POW10[n_frac]
                status = EXACT
                if neg:
                    value = -value
            else:  # exponents, long mantissas, nan / inf, or not a number at all
                p, status, value = _token_number(buf, s, n)
                if status == INVALID:
                    ok = False
                    break
                if status != EXACT:
                    flags = _flag(flags, n_flag, nnz, s, p)
                    n_flag += 1
            last = index
            if index > max_index:
                max_index = index
            indices[nnz] = index - 1
            data[nnz] = value
            nnz += 1
        if not ok:
            break
        row += 1
        indptr[row] = nnz
        if p < n and buf[p] == 35:  # a comment after the data
            while p < n and buf[p] != 10:
                p += 1
    return (labels, indptr, indices, data, row, nnz, flags[:3 * n_flag].reshape(n_flag, 3).T,
            line, max_index, ok)


@njit(cache=True, nogil=True)
def _find_error(buf, n_features):
    """The first malformed token in ``buf``, token by token as the format defines it.

    Returns ``(lines before it, code, token start, token end)``; ``code == _OK`` when there is
    none. Runs only after :func:`_scan` found something wrong, to say what.
    """
    n = buf.shape[0]
    line = 0
    p = 0
    while p < n:
        q = p
        while q < n and buf[q] != 10:
            q += 1
        end = p
        while end < q and buf[end] != 35:  # '#' starts a comment
            end += 1
        t = p
        first = True
        last = 0
        while True:
            while t < end and _is_space(buf[t]):
                t += 1
            if t >= end:
                break
            s = t
            while t < end and not _is_space(buf[t]):
                t += 1
            if first:
                if parse_number(buf, s, t)[0] == INVALID:
                    return line, _BAD_LABEL, s, t
                first = False
                continue
            c = s
            while c < t and buf[c] != 58:  # ':'
                c += 1
            if c == t:
                return line, _BAD_TOKEN, s, t
            if c - s == 3 and buf[s] == 113 and buf[s + 1] == 105 and buf[s + 2] == 100:
                return line, _QID, s, t
            index = 0
            for k in range(s, c):
                if not 48 <= buf[k] <= 57 or index >= 2 ** 31:
                    return line, _BAD_INDEX, s, t
                index = index * 10 + (buf[k] - 48)
            if c == s or index >= 2 ** 31:
                return line, _BAD_INDEX, s, t
            if index == 0:
                return line, _INDEX_ZERO, s, t
            if index <= last:
                return line, _UNSORTED, s, t
            if n_features > 0 and index > n_features:
                return line, _TOO_LARGE, s, t
            if parse_number(buf, c + 1, t)[0] == INVALID:
                return line, _BAD_VALUE, s, t
            last = index
        line += 1
        p = q + 1
    return line, _OK, 0, 0


def _parse_range(url, start, end, n_features, storage_options, cache=None):
    """Parse bytes ``[start, end)`` of ``url`` (a whole number of lines); ``end=None``: the
    whole file, decompressed if its name says it is compressed. ``cache``: a directory of
    :mod:`.blockcache` entries, used for local files.

    Returns a dict: ``X`` (CSR, ``max_index`` columns), ``y``, ``n_lines`` (newlines in the
    range) and ``error`` (None, or ``(local line, message)``), so the driver can place the
    error at its line in the whole file.
    """
    fs, local = fsspec.core.url_to_fs(url, **storage_options)
    if cache is None or "file" not in fs.protocol:
        return _parse_bytes(url, start, end, n_features, storage_options)
    part = blockcache.load(cache, local, start, end, n_features)
    if part is None:
        stamp = blockcache.stamp_of(local)
        part = _parse_bytes(url, start, end, n_features, storage_options)
        if part["error"] is None:
            blockcache.store(cache, local, start, end, n_features, part, stamp)
    return part


def _read_bounded(f, n):
    """Up to ``n`` bytes of ``f`` (None: to its end), read in chunks; or ``(line, length)``
    when a line (0-based in what was read) runs past MAX_LINE_BYTES, found after reading at
    most MAX_LINE_BYTES + one chunk of it, not the whole line."""
    limit = MAX_LINE_BYTES
    step = min(_CHUNK, limit)
    parts, got, run = [], 0, 0
    while n is None or got < n:
        chunk = f.read(step if n is None else min(step, n - got))
        if not chunk:
            break
        last = chunk.rfind(b"\n")
        if last < 0:
            run += len(chunk)
        else:
            # lines inside one chunk are shorter than a chunk; only a line carried across
            # chunk boundaries can be too long, and it ends at this chunk's first newline
            first = chunk.find(b"\n")
            if run + first > limit:
                return None, (_newlines(parts), run + first)
            run = len(chunk) - last - 1
        if run > limit:
            return None, (_newlines(parts + [chunk]), run)
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts), None


def _newlines(chunks) -> int:
    """Lines ended in ``chunks``: counted only to place an error, off the reading path
    (``bytes.count`` holds the GIL, which worker threads share)."""
    return sum(c.count(b"\n") for c in chunks)


@njit(cache=True, nogil=True)
def _count_lines_and_colons(buf):
    """Newlines and colons in ``buf`` in one pass without the GIL: upper bounds on the rows
    and the non-zeros, to size the parse's arrays."""
    lines = colons = 0
    for c in buf:
        if c == 10:
            lines += 1
        elif c == 58:
            colons += 1
    return lines, colons


def _parse_bytes(url, start, end, n_features, storage_options):
    """:func:`_parse_range` without the cache."""
    if end is None:
        with fsspec.open(url, "rb", compression="infer", **storage_options) as f:
            raw, long_line = _read_bounded(f, None)
    else:
        with fsspec.open(url, "rb", **storage_options) as f:
            f.seek(start)
            raw, long_line = _read_bounded(f, end - start)
    if long_line is not None:
        line, length = long_line
        return {"error": (line, f"the line is longer than {MAX_LINE_BYTES} bytes (read "
                                f"{length} without a line end): svmlight holds one row per "
                                f"line; is this an svmlight file?"), "n_lines": line}
    buf = np.frombuffer(raw, dtype=np.uint8)
    lines, colons = _count_lines_and_colons(buf)
    (labels, indptr, indices, data, n_rows, nnz, (flag_pos, flag_s, flag_e), n_lines, max_index,
     ok) = _scan(buf, lines + 1, max(colons, 1), n_features)
    if not ok:
        n_lines, err, err_s, err_e = _find_error(buf, n_features)
        token = raw[err_s:err_e].decode("utf-8", "replace")
        return {"error": (n_lines, _MESSAGES[err].format(token=token, n_features=n_features)),
                "n_lines": n_lines}
    values = convert_flagged(buf, flag_s, flag_e)
    nonfinite = None
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        # nan and inf are numbers to the format, but no estimator takes them: where the first
        # one is, for a caller that refuses them (read_svmlight's finite=True)
        k = int(bad[0])
        token = raw[flag_s[k]:flag_e[k]].decode("utf-8", "replace")
        nonfinite = (int(np.count_nonzero(buf[:flag_s[k]] == 10)),
                     f"{'label' if flag_pos[k] < 0 else 'value'} {token!r} is not a finite "
                     "number")
    in_data = flag_pos >= 0
    data[flag_pos[in_data]] = values[in_data]
    labels[-1 - flag_pos[~in_data]] = values[~in_data]
    X = sp.csr_matrix((_used(data, nnz), _used(indices, nnz), _used(indptr, n_rows + 1)),
                      shape=(n_rows, max_index))
    return {"X": X, "y": _used(labels, n_rows), "n_lines": n_lines, "error": None,
            "nonfinite": nonfinite}


def _used(a, k):
    """``a[:k]``: a view when that is nearly all of ``a`` (the usual case, as the arrays are
    sized by counting newlines and colons), else a copy, so that a block does not keep a much
    larger buffer alive."""
    return a[:k] if k >= 0.9 * len(a) else a[:k].copy()


def _meta(part):
    """What the driver needs of a parsed range: small, unlike the range itself."""
    meta = {"n_lines": part["n_lines"], "error": part["error"],
            "nonfinite": part.get("nonfinite")}
    if part["error"] is None:
        meta["n_rows"], meta["n_cols"] = part["X"].shape
    return meta


def _block(part, n_features):
    X = part["X"]
    if X.shape[1] != n_features:
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
    return X


def _labels(part):
    return part["y"]


def _expand(paths, storage_options):
    """Files to read, in order (globs expanded and sorted), with their sizes in bytes."""
    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        paths = [paths]
    files = []
    for path in paths:
        fs, _, found = fsspec.get_fs_token_paths(str(path), storage_options=storage_options)
        if not found:
            raise ValueError(f"no file matches {path!s}")
        files += [(fs.unstrip_protocol(p), fs.size(p)) for p in sorted(found)]
    return files


def _next_line_start(f, pos, size):
    """Smallest line start >= pos (``size`` when none), reading from ``pos - 1``."""
    if pos <= 0:
        return 0
    f.seek(pos - 1)
    at = pos - 1
    # past MAX_LINE_BYTES without a newline the block ends with the file: its parser then
    # refuses the over-long line (and reads no more than the limit of it)
    while at < min(size, pos + MAX_LINE_BYTES):
        chunk = f.read(_WINDOW)
        if not chunk:
            break
        k = chunk.find(b"\n")
        if k >= 0:
            return at + k + 1
        at += len(chunk)
    return size


def _ranges(files, n_blocks, storage_options):
    """Split the files into ``(url, start, end)`` ranges of whole lines, about ``n_blocks``.

    A compressed file (``.gz``, ``.bz2``, ...) cannot be cut by byte offsets: it is one range,
    ``(url, 0, None)``, decompressed by the worker that parses it.
    """
    total = sum(size for _, size in files) or 1
    out = []
    for url, size in files:
        if infer_compression(url) is not None:
            out.append((url, 0, None))
            continue
        k = max(1, round(n_blocks * size / total))
        with fsspec.open(url, "rb", **storage_options) as f:
            cuts = sorted({_next_line_start(f, size * i // k, size) for i in range(k)} | {size})
        out += [(url, a, b) for a, b in zip(cuts[:-1], cuts[1:])] or [(url, 0, 0)]
    return out


def _raise_first_error(ranges, metas, finite=False):
    """The first malformed line of the ranges (and with ``finite``, the first non-finite
    label or value) as a ValueError naming its file and line."""
    lines_before = {}
    for (url, _, _), meta in zip(ranges, metas):
        offset = lines_before.get(url, 0)
        problem = meta["error"] or (meta.get("nonfinite") if finite else None)
        if problem is not None:
            local, message = problem
            raise ValueError(f"{url}, line {offset + local + 1}: {message}")
        lines_before[url] = offset + meta["n_lines"]


def read_svmlight(paths, *, client=None, n_features=None, n_blocks=None, storage_options=None,
                  cache=False, finite=False):
    """Read svmlight / libsvm files into CSR row blocks, parsed in parallel on the workers.

    Parameters
    ----------
    paths : str, path-like or list of them
        Local paths or fsspec URLs; glob patterns are expanded (matches sorted). Rows keep the
        order of the files, then of the lines. Compressed files (by name: ``.gz``, ``.bz2``,
        ...) are read whole, one block each.
    client : distributed.Client or None
        Where to parse. ``None`` parses in this process and returns in-memory arrays.
    n_features : int, optional
        Number of columns. By default the largest feature index in the data. An index above a
        given ``n_features`` is an error.
    n_blocks : int, optional
        Target number of row blocks (ignored without a client). Default: one per worker thread,
        or one per 64 MiB when that is more. Files get blocks in proportion to their size, at
        least one each; ranges without data lines are dropped.
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoints).
    cache : bool or str, default False
        Keep the parsed blocks of local files on disk, so that reading an unchanged file again
        (same path, size and modification time, same blocks) skips parsing. ``True``: the
        directory :func:`~dask_ssl.data.blockcache.cache_dir` names (``$DASK_SSL_CACHE``, else
        ``~/.cache/dask-ssl``; ``DASK_SSL_CACHE=off`` turns it off); a string: that directory.
        It must be reachable from the workers (it is on a LocalCluster).
    finite : bool, default False
        Refuse a label or value that is NaN or infinite, naming its file and line (what the
        commands do: no estimator takes them). By default they are read as numbers, as
        scikit-learn's ``load_svmlight_file`` reads them, and refused by the estimators.

    Returns
    -------
    RowBlocks or (scipy.sparse.csr_matrix, numpy.ndarray)
        With a client, a :class:`~dask_ssl.linalg.RowBlocks` (``sparse=True``, float64) whose
        ``labels`` hold the labels as read (float64; ``0`` = unlabeled). Without one, ``(X, y)``.

    Raises
    ------
    ValueError
        Naming the file and the 1-based line for a malformed line: a label or value that is not
        a number, a token without ``:``, a ``qid:`` token, an index that is 0, not an integer,
        not increasing, or above ``n_features``. Also when no file matches a path.
    """
    storage_options = dict(storage_options or {})
    if n_features is not None and (int(n_features) != n_features or n_features < 1):
        raise ValueError(f"n_features must be a positive integer, got {n_features!r}")
    if n_blocks is not None and (int(n_blocks) != n_blocks or n_blocks < 1):
        raise ValueError(f"n_blocks must be a positive integer, got {n_blocks!r}")
    files = _expand(paths, storage_options)
    limit = int(n_features or 0)
    if cache is True:
        cache = blockcache.cache_dir()
    elif cache:
        cache = str(Path(cache).expanduser().resolve())
    cache = cache or None
    if client is None:
        ranges = [(url, 0, None) for url, _ in files]
        parts = [_parse_range(*r, limit, storage_options, cache) for r in ranges]
        _raise_first_error(ranges, parts, finite)
        if not any(p["X"].shape[0] for p in parts):
            raise ValueError(f"no data lines in {', '.join(url for url, _ in files)}")
        width = int(n_features or max(p["X"].shape[1] for p in parts))
        return (sp.vstack([_block(p, width) for p in parts], format="csr"),
                np.concatenate([p["y"] for p in parts]))

    if n_blocks is None:
        total = sum(size for _, size in files)
        n_blocks = default_block_count(client, total / _DEFAULT_BLOCK_BYTES)
    ranges = _ranges(files, n_blocks, storage_options)
    workers = list(client.nthreads())
    # Round-robin preference: equal shares of blocks per worker, as the solvers' speed
    # needs; loose, so a block lost with its worker is rebuilt on another.
    parts = [client.submit(_parse_range, *r, limit, storage_options, cache,
                           workers=[workers[i % len(workers)]], allow_other_workers=True,
                           pure=False)
             for i, r in enumerate(ranges)]
    metas = client.gather([client.submit(_meta, p) for p in parts])
    _raise_first_error(ranges, metas, finite)
    kept = [(p, m) for p, m in zip(parts, metas) if m["n_rows"] > 0]
    if not kept:
        raise ValueError(f"no data lines in {', '.join(url for url, _ in files)}")
    width = int(n_features or max(m["n_cols"] for _, m in kept))
    blocks = [client.submit(_block, p, width) for p, _ in kept]
    labels = [client.submit(_labels, p) for p, _ in kept]
    return RowBlocks(client, blocks, [m["n_rows"] for _, m in kept], width, True, labels)
