"""Checking and distributing an estimator's input before any work starts."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..linalg import RowBlocks


def _nonfinite_rows(i, X):
    data = X.data if sp.issparse(X) else X
    bad = ~np.isfinite(data)
    if not bad.any():
        return None
    if sp.issparse(X):
        pos = int(np.flatnonzero(bad)[0])
        row = int(np.searchsorted(X.indptr, pos, side="right") - 1)
        return row, int(X.indices[pos]), float(X.data[pos])
    row, col = np.argwhere(bad)[0]
    return int(row), int(col), float(X[row, col])


def check_finite_local(X) -> None:
    found = _nonfinite_rows(0, X)
    if found is not None:
        row, col, val = found
        raise ValueError(f"X contains a non-finite value ({val}) at row {row}, column {col}")


def check_finite_blocks(blocks: RowBlocks) -> None:
    for i, found in enumerate(blocks.call(_nonfinite_rows)):
        if found is not None:
            row, col, val = found
            raise ValueError(f"X contains a non-finite value ({val}) at row "
                             f"{int(blocks.offsets[i]) + row}, column {col}")


def to_blocks(X, client, n_blocks=None) -> RowBlocks:
    """Validate ``X`` (finite, two-dimensional, non-empty) and hold it as row blocks."""
    if isinstance(X, RowBlocks):
        if X.n_rows == 0:
            raise ValueError("X has no rows")
        check_finite_blocks(X)
        return X
    import dask.array as da

    if not (sp.issparse(X) or isinstance(X, da.Array)):
        X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be two-dimensional, got shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X is empty (shape {X.shape})")
    if isinstance(X, da.Array):
        blocks = RowBlocks.from_dask_array(X, client=client)
        check_finite_blocks(blocks)
        return blocks
    check_finite_local(X)
    return RowBlocks.from_array(X, client=client, n_blocks=n_blocks)


def encode_labels(y, n_rows: int, unlabeled) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(classes, codes)``: codes index ``classes`` and are -1 on unlabeled rows.

    ``unlabeled`` is the marker of unlabeled rows (scikit-learn: -1; svmlight/svmlin: 0).
    """
    y = np.asarray(y).ravel()
    if y.shape[0] != n_rows:
        raise ValueError(f"y has {y.shape[0]} entries but X has {n_rows} rows")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"y contains a non-finite value at row {int(np.flatnonzero(~np.isfinite(y))[0])}")
    labeled = y != unlabeled
    if not labeled.any():
        raise ValueError(f"no labeled rows: every entry of y is the unlabeled marker {unlabeled!r}")
    classes, codes = np.unique(y[labeled], return_inverse=True)
    if classes.size < 2:
        hint = ""
        if unlabeled == -1 and classes[0] == 1 and (~labeled).any():
            hint = (" (y looks like +1/-1 labels: -1 is read as 'unlabeled'; pass unlabeled=0 "
                    "or another marker if -1 is a class)")
        raise ValueError(f"only one labeled class ({classes[0]!r}); need at least two{hint}")
    out = np.full(n_rows, -1, dtype=np.int64)
    out[labeled] = codes
    return classes, out
