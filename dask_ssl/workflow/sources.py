"""From a workflow's ``data`` section to row blocks with labels on the workers.

The one reader of every command: ``dask-ssl run`` reads its workflow's section, ``dask-ssl fit``
and ``dask-ssl predict`` the section :func:`file_section` makes of their ``--data`` and
``--format`` flags.
"""

from __future__ import annotations

import inspect
from pathlib import Path

from ..linalg import RowBlocks

#: ``--format`` of the commands that read one file: a reader by name, or chosen by the name.
FILE_FORMATS = ("auto", "svmlight", "kdd99")


def generators() -> dict:
    """Data generators by name (the entries of :data:`dask_ssl.data.DATASETS` that read no
    file)."""
    from ..data import DATASETS

    return {name: d.loader for name, d in DATASETS.items()
            if not {"path", "paths"} & set(inspect.signature(d.loader).parameters)}


def file_section(path: str, fmt: str) -> dict:
    """The ``data`` section of a file named on the command line (``--data``, ``--format``).

    ``auto`` reads a file whose name holds ``kddcup`` as KDD99 CSV, any other as svmlight.
    """
    if fmt == "auto":
        fmt = "kdd99" if "kddcup" in Path(path).name else "svmlight"
    if fmt not in FILE_FORMATS:
        raise ValueError(f"unknown data format {fmt!r}")
    return {"source": fmt, "path": path}


def load(data: dict, path: str | None, client, *, n_features: int | None = None,
         encoding: dict | None = None) -> tuple[RowBlocks, dict | None]:
    """Read or generate the data a ``data`` section describes.

    Parameters
    ----------
    data : dict
        The validated section (``source`` and its keys).
    path : str or None
        ``data.path`` with its ``{date}`` template filled in.
    client : distributed.Client
    n_features : int, optional
        Columns to read svmlight files with (a retrain reads new files in its model's width,
        whatever the largest index present in them; a prediction, in its model's).
    encoding : dict, optional
        The KDD99 column encoding (categories, maxima) a model was trained with, which a later
        file must be read with to land in the same columns.

    Returns
    -------
    blocks : RowBlocks
        Rows and labels (0 = unlabeled) on the workers.
    encoding : dict or None
        For KDD99 CSV the encoding the rows were read with (for ``model.json``); else None.
    """
    from .views import is_views_source, load_views

    source = data["source"]
    if is_views_source(data):
        # named views in memory, for the multi-view estimators (n_features: a model's widths)
        # (``path``: data.path with its {date} filled in; the views' files are data.paths)
        given = {**data, "path": path} if isinstance(path, str) else data
        return load_views(given, n_features=n_features), None
    options = data.get("storage_options")
    if source == "svmlight":
        from ..data.svmlight import read_svmlight

        # Parsed blocks are cached (see dask_ssl.data.blockcache): a second command on an
        # unchanged file skips parsing.
        return read_svmlight(path, client=client, n_features=data.get("n_features") or n_features,
                             n_blocks=data.get("n_blocks"), storage_options=options,
                             cache=True, finite=True), None
    if source == "kdd99":
        from ..data.kdd99 import KDD99Encoding, read_kdd99

        keys = ("n_rows", "replicate", "jitter", "seed")
        given = None if encoding is None else KDD99Encoding.from_dict(encoding)
        blocks, used = read_kdd99(path, client=client, storage_options=options, encoding=given,
                                  return_encoding=True, **{k: data[k] for k in keys if k in data})
        return blocks, used.to_dict()
    if source == "mat":
        return _mat(path, client, data.get("view", 0), data.get("positive_class")), None
    return generators()[data["name"]](client=client, **(data.get("params") or {})), None


def _mat(path: str, client, view: int, positive_class) -> RowBlocks:
    """One view of a multi-view ``.mat`` file; ``positive_class`` vs the rest as +1 / -1, or
    every class kept (one-vs-rest in the estimator)."""
    import numpy as np

    from ..data import read_multiview

    views, y = read_multiview(path)
    if not 0 <= view < len(views):
        raise ValueError(f"{path} has {len(views)} views; data.view={view} does not exist")
    if positive_class is not None:
        if positive_class not in y:
            raise ValueError(f"{path}: data.positive_class={positive_class} is not a class "
                             f"(classes: {sorted(set(y.tolist()))})")
        y = np.where(y == positive_class, 1, -1)
    return RowBlocks.from_array(views[view], client=client, y=y)
