"""The workflow data sources of multi-view estimators: named views of the same rows, in memory.

A multi-view estimator (:mod:`dask_ssl.multiview`) fits on the driver (its systems are dense
in the training rows), so its views travel through the steps as :class:`ViewRows`: a dict of
named in-memory views and the labels, with what the steps read of row blocks (the labels, a
selection of rows, the counters). Selecting rows (the split) takes the same rows of every view.

Sources (``data.source``):

``multiview_mat``
    A ``.mat`` file (:func:`~dask_ssl.data.read_multiview`); ``views`` keeps some of its views
    (by index), ``classes`` the rows of some classes, ``positive_class`` makes the task that
    class against the rest (+1 / -1). View ``k`` of the file is named ``view{k}``.
``svmlight_views``
    One svmlight file per view (``paths``), the same rows in the same order; the labels are
    the first file's and every other file must hold the same. The views are named by
    ``names``, by default the files' names without their extension.
``multiview_generator``
    :func:`~dask_ssl.data.lines` or :func:`~dask_ssl.data.two_moons_two_lines` (``name``,
    ``params``); view ``k`` is named ``view{k}``.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

#: The ``data.source`` values that give views.
VIEW_SOURCES = ("multiview_mat", "svmlight_views", "multiview_generator")


def view_generators() -> dict:
    """The multi-view data generators by name."""
    from ..data import lines, two_moons_two_lines

    return {"lines": lines, "two_moons_two_lines": two_moons_two_lines}


def is_views_source(data: dict) -> bool:
    return data.get("source") in VIEW_SOURCES


@dataclass
class ViewRows:
    """Named views of the same rows, in memory, and their labels (0 = unlabeled).

    Stands for :class:`~dask_ssl.linalg.RowBlocks` in the workflow steps: nothing moves to or
    from workers, so the round trips and bytes moved stay 0."""

    views: dict
    labels: np.ndarray
    round_trips: int = 0
    bytes_moved: int = 0

    @property
    def n_rows(self) -> int:
        return int(self.labels.shape[0])

    @property
    def n_features(self) -> list:
        return [int(X.shape[1]) for X in self.views.values()]

    @property
    def sparse(self) -> bool:
        return any(sp.issparse(X) for X in self.views.values())

    @property
    def n_blocks(self) -> int:
        return 1

    def gather_labels(self) -> np.ndarray:
        return self.labels

    def take(self, mask: np.ndarray, labels=None) -> ViewRows:
        """The rows where ``mask`` holds, in every view."""
        rows = np.flatnonzero(mask)
        return ViewRows({name: X[rows] for name, X in self.views.items()},
                        self.labels[rows] if labels is None else np.asarray(labels))


def model_input(rows):
    """What an estimator's ``fit`` and ``decision_function`` take of ``rows``: the views by
    name for :class:`ViewRows`, the rows themselves otherwise."""
    return rows.views if isinstance(rows, ViewRows) else rows


def width_of(est):
    """A model's input width, to compare models and to read new data in: the views' widths
    (a tuple) for a multi-view model, else ``n_features_in_``."""
    widths = getattr(est, "view_features_", None)
    return tuple(widths) if widths is not None else est.n_features_in_


# the sources ----------------------------------------------------------------------------------
def load_views(data: dict, *, n_features=None) -> ViewRows:
    """The views a ``data`` section of a :data:`VIEW_SOURCES` source describes.

    ``n_features``: the widths of a model whose views new svmlight files must be read in.
    """
    source = data["source"]
    if source == "multiview_mat":
        return read_mat_views(data["path"], views=data.get("views"),
                              classes=data.get("classes"),
                              positive_class=data.get("positive_class"))
    if source == "svmlight_views":
        return read_svmlight_views(data["paths"], names=data.get("names"),
                                   n_features=data.get("n_features") or n_features)
    if source == "multiview_generator":
        Xs, y = view_generators()[data["name"]](**(data.get("params") or {}))
        return ViewRows({f"view{k}": X for k, X in enumerate(Xs)}, np.asarray(y, dtype=float))
    raise ValueError(f"{source!r} is not a multi-view data source ({', '.join(VIEW_SOURCES)})")


def read_mat_views(path, *, views=None, classes=None, positive_class=None) -> ViewRows:
    """The views of a multi-view ``.mat`` file, named ``view{k}`` by their index in it.

    Parameters
    ----------
    path : str
    views : list of int, optional
        The views to keep (indices into the file's), in that order; all by default.
    classes : list of int, optional
        Keep only the rows of these classes.
    positive_class : int, optional
        That class against the rest (+1 / -1); otherwise the classes as stored (from 1, so
        none reads as unlabeled).
    """
    from ..data import read_multiview

    arrays, y = read_multiview(path)
    keep = list(range(len(arrays))) if views is None else list(views)
    for k in keep:
        if not 0 <= k < len(arrays):
            raise ValueError(f"{path} has {len(arrays)} views (0..{len(arrays) - 1}); "
                             f"data.views names view {k}")
    known = sorted(set(y.tolist()))
    for c in list(classes or []) + ([] if positive_class is None else [positive_class]):
        if c not in known:
            raise ValueError(f"{path}: class {c} is not in the file (classes: {known})")
    rows = np.isin(y, classes) if classes is not None else np.ones(y.shape[0], dtype=bool)
    y = y[rows].astype(float)
    if positive_class is not None:
        y = np.where(y == positive_class, 1.0, -1.0)
    return ViewRows({f"view{k}": arrays[k][rows] for k in keep}, y)


def view_names_of(paths, names=None) -> list:
    """The views' names for ``paths``: ``names`` when given, else the files' names without
    their extension; each must be unique."""
    names = list(names) if names is not None else [Path(str(p)).stem for p in paths]
    if len(names) != len(paths):
        raise ValueError(f"{len(names)} view name(s) for {len(paths)} file(s): one per file")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"view names must be unique; {twice} name more than one file "
                         "(name them, e.g. --view NAME=PATH or data.names)")
    return names


def read_svmlight_views(paths, *, names=None, n_features=None) -> ViewRows:
    """One view per svmlight file, the same rows in each; the labels are the first file's and
    every file must hold the same (the error names the file and the first row that differs).

    ``n_features``: one width per view (a model's), or None for the widths the files show.
    """
    from ..data.svmlight import read_svmlight

    names = view_names_of(paths, names)
    widths = list(n_features) if n_features is not None else [None] * len(paths)
    if len(widths) != len(paths):
        raise ValueError(f"{len(widths)} widths (n_features) for {len(paths)} views")
    views, labels = {}, None
    for name, path, width in zip(names, paths, widths):
        X, y = read_svmlight(path, n_features=width, finite=True)
        if labels is None:
            labels, first = y, path
        elif y.shape != labels.shape:
            raise ValueError(f"{path} has {y.shape[0]} rows but {first} has "
                             f"{labels.shape[0]}: the views must hold the same rows")
        elif not np.array_equal(y, labels):
            row = int(np.flatnonzero(y != labels)[0])
            raise ValueError(f"{path} line {row + 1} has label {y[row]:g} where {first} has "
                             f"{labels[row]:g}: the views must hold the same rows, in order")
        views[name] = X
    return ViewRows(views, labels)


def generator_params(name: str) -> list:
    """The keyword arguments of a multi-view generator a workflow may set."""
    fn = view_generators()[name]
    return [p for p, v in inspect.signature(fn).parameters.items()
            if v.kind is v.KEYWORD_ONLY and p not in ("client", "n_blocks")]


# the command line -----------------------------------------------------------------------------
def parse_view_flags(specs: list) -> tuple[list, list]:
    """``(names, paths)`` of ``--view`` flags, each ``NAME=PATH`` or a bare ``PATH`` (named by
    the file's name without its extension)."""
    names, paths = [], []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if sep and name and path and "/" not in name:
            names.append(name)
            paths.append(path)
        else:
            names.append(None)
            paths.append(spec)
    names = [n if n is not None else Path(p).stem for n, p in zip(names, paths)]
    return view_names_of(paths, names), paths


def check_view_names(given: list, fitted: tuple, *, what: str, extra_allowed=False) -> None:
    """Views named ``given`` for a model fitted on views named ``fitted``: a missing view (and
    unless ``extra_allowed``, an extra one) is an error naming it, before anything is read."""
    missing = [n for n in fitted if n not in given]
    extra = [] if extra_allowed else [n for n in given if n not in fitted]
    if missing or extra:
        raise ValueError(f"{what} gives views {list(given)}; the model was fitted on "
                         f"{list(fitted)}: missing {missing}, extra {extra}")


def predict_views(model, *, view_flags=None, mat=None):
    """The views to score with ``model`` from ``--view`` flags or a ``--views`` .mat file,
    checked against the model's names before any file is read, read in its widths: a dict
    by name (a list, in order, for a model fitted on a list).

    From a ``.mat`` file (a data set holding every view) the model's views are taken by name
    (``view{k}``) and the file's others left; ``--view`` flags must name exactly the model's.
    """
    fitted = model.view_names_
    widths = list(model.view_features_)
    if mat is not None:
        from ..data import read_multiview

        # the names a .mat file gives are view0..view{m-1}: checked once its views are counted
        arrays, _ = read_multiview(mat)
        given = [f"view{k}" for k in range(len(arrays))]
        if fitted is None:
            if len(arrays) != len(widths):
                raise ValueError(f"{mat} holds {len(arrays)} views; the model was fitted on "
                                 f"{len(widths)}")
            return list(arrays)
        check_view_names(given, fitted, what=str(mat), extra_allowed=True)
        return {name: arrays[given.index(name)] for name in fitted}
    names, paths = parse_view_flags(view_flags)
    if fitted is None:
        if len(paths) != len(widths):
            raise ValueError(f"{len(paths)} --view file(s); the model was fitted on "
                             f"{len(widths)} views (a list: give them in order)")
        return list(read_svmlight_views(paths, names=names, n_features=widths).views.values())
    check_view_names(names, fitted, what="--view")
    order = [names.index(n) for n in fitted]
    rows = read_svmlight_views([paths[i] for i in order], names=list(fitted),
                               n_features=widths)
    return rows.views
