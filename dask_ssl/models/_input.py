"""Checking and distributing an estimator's input before any work starts, and the preamble
every fit shares (:func:`fit_input`): the labels, their unlabeled rows and class columns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, column_or_1d

from ..linalg import RowBlocks
from ..linalg.rowblocks import is_dask_array


def _value_text(val: float) -> str:
    # "NaN" and "inf" as scikit-learn spells them, so a caller can match either family
    return "NaN" if np.isnan(val) else ("inf" if val > 0 else "-inf")


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


def _nonfinite_error(row: int, col: int, val: float) -> ValueError:
    return ValueError(f"X contains a non-finite value ({_value_text(val)}) at row {row}, "
                      f"column {col}")


def check_finite_local(X) -> None:
    found = _nonfinite_rows(0, X)
    if found is not None:
        raise _nonfinite_error(*found)


def check_finite_blocks(blocks: RowBlocks) -> None:
    for i, found in enumerate(blocks.call(_nonfinite_rows)):
        if found is not None:
            row, col, val = found
            raise _nonfinite_error(int(blocks.offsets[i]) + row, col, val)


def check_local(X):
    """In-memory X as float64 (a CSR matrix or an array): two-dimensional, non-empty, real,
    finite. Complex, string and ragged input is refused here, not cast."""
    X = check_array(X, accept_sparse="csr", dtype=np.float64, ensure_all_finite=False,
                    input_name="X")
    check_finite_local(X)
    return X


def as_input(X):
    """In-memory X checked by :func:`check_local`; RowBlocks and dask arrays as they are (they
    are checked where they live, by :func:`to_blocks`)."""
    return X if isinstance(X, RowBlocks) or is_dask_array(X) else check_local(X)


def to_blocks(X, client, n_blocks=None) -> RowBlocks:
    """``X`` as :func:`fit_input` returns it, held as row blocks. Rows in memory were checked
    there (:func:`check_local`); RowBlocks and dask arrays are checked here, where they live
    (finite, two-dimensional, non-empty, real)."""
    if isinstance(X, RowBlocks):
        if X.n_rows == 0:
            raise ValueError("X has no rows")
        check_finite_blocks(X)
        return X
    if is_dask_array(X):
        if X.ndim != 2:
            raise ValueError(f"X must be two-dimensional, got shape {X.shape}")
        if X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"X is empty (shape {X.shape})")
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X has dtype {X.dtype}; expected real numbers")
        blocks = RowBlocks.from_dask_array(X, client=client)
        check_finite_blocks(blocks)
        return blocks
    return RowBlocks.from_array(X, client=client, n_blocks=n_blocks)


def n_rows_of(X) -> int:
    """Rows of any X an estimator accepts (RowBlocks, arrays, sparse matrices, lists)."""
    if isinstance(X, RowBlocks):
        return X.n_rows
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None else len(X)


#: Marker of unlabeled rows in labels read with the data (svmlight / svmlin: label 0).
FILE_UNLABELED = 0


def fit_labels(X, y, unlabeled, name: str):
    """The labels to fit and their unlabeled marker: ``(y, unlabeled)`` for a y given, or the
    labels a RowBlocks X carries with the file's marker (:data:`FILE_UNLABELED`), whatever
    ``unlabeled`` says: a file's labels follow svmlin, a y passed in follows the estimator."""
    if y is not None:
        return y, unlabeled
    if not (isinstance(X, RowBlocks) and X.labels is not None):
        raise ValueError(f"{name} requires y to be passed, but the target y is None (it may be "
                         "omitted only for a RowBlocks X that carries labels)")
    return X.gather_labels(), FILE_UNLABELED


def encode_labels(y, n_rows: int, unlabeled) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(classes, codes)``: codes index ``classes`` and are -1 on unlabeled rows.

    ``unlabeled`` is the marker of unlabeled rows (scikit-learn: -1; svmlight/svmlin: 0), or
    None when every row is labeled (supervised estimators given a y). Regression targets are
    refused; a column vector is accepted with scikit-learn's DataConversionWarning.
    """
    y = column_or_1d(y, warn=True)
    if y.shape[0] != n_rows:
        raise ValueError(f"y has {y.shape[0]} entries but X has {n_rows} rows")
    if y.dtype.kind == "c":
        raise ValueError("y is complex; expected class labels")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"y contains a non-finite value at row {int(np.flatnonzero(~np.isfinite(y))[0])}")
    labeled = np.ones(n_rows, dtype=bool) if unlabeled is None else np.asarray(y != unlabeled)
    if not labeled.any():
        raise ValueError(f"no labeled rows: every entry of y is the unlabeled marker {unlabeled!r}")
    check_classification_targets(y[labeled])
    classes, codes = np.unique(y[labeled], return_inverse=True)
    if classes.size < 2:
        hint = ""
        if unlabeled == -1 and classes[0] == 1 and (~labeled).any():
            hint = (" (y looks like +1/-1 labels: -1 is read as 'unlabeled'; pass unlabeled=0 "
                    "or another marker if -1 is a class)")
        raise ValueError(f"only one labeled class ({classes[0]!r}): one class among "
                         f"{int(labeled.sum())} labeled rows; need at least two{hint}")
    out = np.full(n_rows, -1, dtype=np.int64)
    out[labeled] = codes
    return classes, out


@dataclass(frozen=True)
class Labels:
    """A fit's labels: its classes, each row's class index (``codes``, -1 on unlabeled rows)
    and the marker the unlabeled rows had in the y they came from.

    The one-vs-rest targets fitted are ``classes_[1]`` against ``classes_[0]`` for two classes
    (one target, the decision's sign), else each class against the rest.
    """

    classes: np.ndarray
    codes: np.ndarray
    marker: object

    @property
    def labeled(self) -> np.ndarray:
        return self.codes >= 0

    @property
    def targets(self) -> list:
        """The class index of each one-vs-rest target."""
        return [1] if self.classes.size == 2 else list(range(self.classes.size))

    def columns(self) -> np.ndarray:
        """Shape (n, n_targets): +1 where a labeled row is the target's class, -1 where it is
        another, 0 on unlabeled rows."""
        return target_columns(self.codes, self.targets)


def target_columns(codes: np.ndarray, targets) -> np.ndarray:
    """+1 / -1 / 0 (unlabeled) per row and one-vs-rest target, as :meth:`Labels.columns`."""
    return np.column_stack([np.where(codes < 0, 0.0, np.where(codes == t, 1.0, -1.0))
                            for t in targets])


def fit_input(est, X, y, *, graph=None):
    """The preamble of every fit, after the parameter checks: ``(X, labels)``.

    The labels are ``y``, or those a RowBlocks ``X`` carries (read with the file's marker);
    ``X`` is as the estimators take it (:func:`as_input`); the labels are encoded against its
    rows (one class alone, no labeled row, a regression target: each an error naming it); a
    given ``graph`` must be on exactly these rows.
    """
    y, marker = fit_labels(X, y, est.unlabeled, type(est).__name__)
    X = as_input(X)
    n_rows = n_rows_of(X)
    classes, codes = encode_labels(y, n_rows, marker)
    if graph is not None and graph.n_rows != n_rows:
        raise ValueError(f"graph has {graph.n_rows} rows but X has {n_rows}")
    return X, Labels(classes, codes, marker)


def gather_rows(X):
    """All rows of X on the driver (dense float64 or CSR): a kernel expansion's points, or
    rows to search a fitted kNN index with."""
    if isinstance(X, RowBlocks):
        return X.gather_rows()
    if is_dask_array(X):
        X = X.compute()
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or 0 in X.shape:
        raise ValueError(f"X must be a non-empty two-dimensional array, got shape {X.shape}")
    return X
