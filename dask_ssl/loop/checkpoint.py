"""Stage checkpoints at a local path or fsspec URL: ``state.json`` + ``arrays-<stage>.npz``.

``state.json`` is written last, and names its arrays file, so a reader never sees a state whose
arrays are missing: a crash mid-write leaves the previous stage's checkpoint in force.
"""

from __future__ import annotations

import io
import json

import fsspec
import numpy as np

from ..models.artifact import _json_default


def save_checkpoint(url: str, doc: dict, arrays: dict) -> None:
    fs, root = fsspec.core.url_to_fs(url)
    fs.makedirs(root, exist_ok=True)
    name = f"arrays-{doc['stage']:05d}.npz"
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    with fs.open(f"{root}/{name}", "wb") as f:
        f.write(buf.getvalue())
    state = dict(doc, arrays=name)
    with fs.open(f"{root}/state.json.tmp", "w") as f:
        json.dump(state, f, default=_json_default)
    fs.mv(f"{root}/state.json.tmp", f"{root}/state.json")
    for old in fs.glob(f"{root}/arrays-*.npz"):
        if not old.endswith(name):
            fs.rm(old)


def load_checkpoint(url: str) -> tuple[dict, dict]:
    fs, root = fsspec.core.url_to_fs(url)
    try:
        with fs.open(f"{root}/state.json", "r") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise ValueError(f"{url} holds no checkpoint (no state.json)") from None
    with fs.open(f"{root}/{doc['arrays']}", "rb") as f:
        with np.load(io.BytesIO(f.read()), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    return doc, arrays
