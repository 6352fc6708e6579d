"""From a workflow's ``data`` section to row blocks with labels on the workers."""

from __future__ import annotations

import inspect

from ..linalg import RowBlocks


def generators() -> dict:
    """Data generators by name: the public functions of :mod:`dask_ssl.data.generators` that
    build row blocks on a client."""
    from ..data import generators as module

    return {name: fn for name, fn in inspect.getmembers(module, inspect.isfunction)
            if not name.startswith("_") and fn.__module__ == module.__name__
            and "client" in inspect.signature(fn).parameters}


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
        from ..data.multiview import read_mat

        return read_mat(path, client=client, view=data.get("view", 0),
                        positive_class=data.get("positive_class"), storage_options=options)
    return generators()[data["name"]](client=client, **(data.get("params") or {}))
