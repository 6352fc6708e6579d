"""From a workflow's ``data`` section to row blocks with labels on the workers."""

from __future__ import annotations

import inspect

from ..linalg import RowBlocks


def generators() -> dict:
    """Data generators by name (the entries of :data:`dask_ssl.data.DATASETS` that read no
    file)."""
    from ..data import DATASETS

    return {name: d.loader for name, d in DATASETS.items()
            if not {"path", "paths"} & set(inspect.signature(d.loader).parameters)}


def load(data: dict, path: str | None, client, *, n_features: int | None = None) -> RowBlocks:
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
        whatever the largest index present in them).
    """
    source = data["source"]
    options = data.get("storage_options")
    if source == "svmlight":
        from ..data.svmlight import read_svmlight

        return read_svmlight(path, client=client, n_features=data.get("n_features") or n_features,
                             n_blocks=data.get("n_blocks"), storage_options=options)
    if source == "kdd99":
        from ..data.kdd99 import read_kdd99

        keys = ("n_rows", "replicate", "jitter", "seed")
        return read_kdd99(path, client=client, storage_options=options,
                          **{k: data[k] for k in keys if k in data})
    if source == "mat":
        return _mat(path, client, data.get("view", 0), data.get("positive_class"))
    return generators()[data["name"]](client=client, **(data.get("params") or {}))


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
