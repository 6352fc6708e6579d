"""Checkpoints at a local path or fsspec URL: ``state.json`` + one ``arrays-<stage>-<tag>.npz``.

Both files are written under temporary names and renamed into place, the arrays first and
``state.json`` (which names its arrays file) last, so a reader never sees a half-written file or
a state whose arrays are missing: a crash mid-write leaves the previous checkpoint in force. An
exception clears its own temporary files; the next save clears what a kill left. Each arrays
file has a name of its own (the random tag), so a save never overwrites the file the current
``state.json`` names.
"""

from __future__ import annotations

import io
import json
import uuid

import fsspec
import numpy as np

from .._json import json_default

_PRINT = "fingerprint_"


def save_checkpoint(url: str, doc: dict, arrays: dict) -> None:
    fs, root = fsspec.core.url_to_fs(url)
    fs.makedirs(root, exist_ok=True)
    name = f"arrays-{doc['stage']:05d}-{uuid.uuid4().hex[:8]}.npz"
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    ours = [f"{root}/{name}.tmp", f"{root}/{name}", f"{root}/state.json.tmp"]
    try:
        with fs.open(ours[0], "wb") as f:
            f.write(buf.getvalue())
        fs.mv(ours[0], ours[1])
        with fs.open(ours[2], "w") as f:
            json.dump(dict(doc, arrays=name), f, default=json_default)
        fs.mv(ours[2], f"{root}/state.json")
    except BaseException:
        # interrupted before the new state.json was in place: the previous state stands
        for path in ours:
            if fs.exists(path):
                fs.rm(path)
        raise
    for old in fs.glob(f"{root}/arrays-*.npz") + fs.glob(f"{root}/*.tmp"):
        if not old.endswith(name):
            fs.rm(old)


def has_checkpoint(url: str) -> bool:
    fs, root = fsspec.core.url_to_fs(url)
    return fs.exists(f"{root}/state.json")


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


class SolverCheckpoint:
    """An iterative solve's state at a checkpoint URL, tied to the system it solves.

    The system is identified by a fingerprint stored beside the state, e.g. the right-hand side
    and the product of a fixed probe vector: a state saved for other data or other parameters
    is refused rather than continued. Subclasses set :attr:`kind` and :attr:`what` and turn
    their solver's state into a document and arrays (:meth:`_save`, :meth:`_load`).

    Parameters
    ----------
    url : str
        Local path or fsspec URL of the checkpoint directory.
    fingerprint : dict of str to ndarray
        Arrays that identify the system; a saved state is continued only if every one of them
        agrees with the saved copy to ``1e-10`` relative (round-off of a product summed over
        blocks in another order is not a different system).
    resume : bool
        Continue from the saved state (which must exist); otherwise start afresh and overwrite.
    """

    #: ``kind`` in ``state.json``; a state of another kind is refused.
    kind = ""
    #: The solver, for messages ("CG", "Newton").
    what = ""

    def __init__(self, url: str, fingerprint: dict, *, resume: bool):
        self.url = url
        self.fingerprint = {k: np.asarray(v, dtype=np.float64) for k, v in fingerprint.items()}
        self.resume = resume

    def _load(self) -> tuple[dict, dict] | None:
        """The saved document and arrays (fingerprint checked), or None when not resuming."""
        if not self.resume:
            return None
        doc, arrays = load_checkpoint(self.url)
        if doc.get("kind") != self.kind:
            raise ValueError(f"{self.url} holds a {doc.get('kind')!r} checkpoint, not a "
                             f"{self.what} solve")
        for name, value in self.fingerprint.items():
            saved = arrays.get(_PRINT + name)
            if (saved is None or saved.shape != value.shape
                    or np.linalg.norm(saved - value) > 1e-10 * np.linalg.norm(value)):
                raise ValueError(f"{self.url} holds the {self.what} state of another system "
                                 f"(its {name} differs: other data or parameters); fit without "
                                 "resume to start afresh")
        return doc, {k: v for k, v in arrays.items() if not k.startswith(_PRINT)}

    def _save(self, doc: dict, arrays: dict) -> None:
        save_checkpoint(self.url, dict(doc, kind=self.kind),
                        {**arrays, **{_PRINT + k: v for k, v in self.fingerprint.items()}})
