"""JSON for the documents dask-ssl writes (model.json, checkpoints): NumPy values as plain ones.

It sits at the top of the package so that every layer that writes a document (``loop/``,
``models/``) uses it without importing a layer above its own.
"""

from __future__ import annotations

import numpy as np


def json_default(obj):
    """``json.dump``'s ``default``: NumPy scalars and arrays as Python numbers and lists."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")
