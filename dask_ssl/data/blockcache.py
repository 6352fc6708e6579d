"""A disk cache of parsed row blocks, so that a second read of an unchanged file skips parsing.

Where: ``$DASK_SSL_CACHE`` when set (``off`` or empty turns the cache off), else
``$XDG_CACHE_HOME/dask-ssl``, else ``~/.cache/dask-ssl``; entries under ``blocks/``. Delete the
directory at any time to reclaim the space.

One entry per byte range of a local file (``.npz``, loaded without pickle), named by a hash of
the file's absolute path, the range and the reader settings, and holding the file's size and
modification time (nanoseconds) when it was parsed. An entry is used only while both still
match, so a changed file is parsed again and its entry replaced. Entries are written to a
temporary file and renamed into place: concurrent readers see a whole entry or none, and two
runs writing the same entry both succeed. An entry that cannot be read is reported with a
warning, ignored and rebuilt.
"""

from __future__ import annotations

import hashlib
import os
import uuid
import warnings
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..cachedir import cache_dir  # noqa: F401 (where entries go; imported from here too)

#: Bumped when the parser's output changes, so older entries are not used (2: where the first
#: non-finite label or value is).
FORMAT = 2


def _entry(root: str, path: str, start, end, n_features: int) -> Path:
    key = f"{path}\0{start}\0{end}\0{n_features}\0{FORMAT}".encode()
    return Path(root) / "blocks" / (hashlib.sha256(key).hexdigest()[:32] + ".npz")


def stamp_of(path: str) -> np.ndarray:
    """Size and modification time (ns) of ``path``: what an entry is checked against."""
    st = os.stat(path)
    return np.array([st.st_size, st.st_mtime_ns], dtype=np.int64)


def load(root: str, path: str, start, end, n_features: int):
    """The cached parse of ``path[start:end]`` as the reader returns it, or None (no entry, a
    stale one, or a corrupt one, which is reported)."""
    entry = _entry(root, path, start, end, n_features)
    try:
        with np.load(entry, allow_pickle=False) as z:
            if not np.array_equal(z["stamp"], stamp_of(path)):
                return None
            n_lines, n_rows, n_cols = (int(v) for v in z["shape"])
            X = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=(n_rows, n_cols))
            line = int(z["nonfinite_line"])
            nonfinite = None if line < 0 else (line, str(z["nonfinite_message"]))
            return {"X": X, "y": z["y"], "n_lines": n_lines, "error": None,
                    "nonfinite": nonfinite}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        warnings.warn(f"dask-ssl: ignoring the unreadable cache entry {entry} "
                      f"({type(exc).__name__}: {exc}); parsing {path} again", stacklevel=2)
        return None


def store(root: str, path: str, start, end, n_features: int, part: dict, stamp) -> None:
    """Write the parse ``part`` of ``path[start:end]``, taken when the file had ``stamp``
    (from :func:`stamp_of`, read before parsing: a file changed while it was parsed gets an
    entry that is already stale). A cache that cannot be written is skipped: it only saves
    time."""
    entry = _entry(root, path, start, end, n_features)
    X = part["X"]
    tmp = entry.with_name(f".{entry.stem}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            line, message = part["nonfinite"] or (-1, "")
            np.savez(f, stamp=stamp, shape=np.array([part["n_lines"], *X.shape], dtype=np.int64),
                     data=X.data, indices=X.indices, indptr=X.indptr, y=part["y"],
                     nonfinite_line=np.int64(line), nonfinite_message=np.str_(message))
        os.replace(tmp, entry)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        warnings.warn(f"dask-ssl: could not write the cache entry {entry}: {exc}", stacklevel=2)
