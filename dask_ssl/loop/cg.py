"""A conjugate-gradient solve's state at a checkpoint URL (see :func:`~dask_ssl.linalg.block_cg`).

The state (iterate, residual, direction, the product of the direction, the driver's counters)
is written with :func:`~.checkpoint.save_checkpoint`, whose ``state.json`` is replaced by one
rename, so a solve killed mid-write leaves the previous state in force. The system is identified
by a fingerprint stored beside it, e.g. the right-hand side and the product of a fixed probe
vector: a checkpoint of other data or other parameters is refused rather than continued.
"""

from __future__ import annotations

import numpy as np

from .checkpoint import load_checkpoint, save_checkpoint

#: CG passes between saves.
CG_EVERY = 10
KIND = "cg"
_VECTOR, _PRINT = "vector_", "fingerprint_"


class CGCheckpoint:
    """The ``checkpoint`` object :func:`~dask_ssl.linalg.block_cg` takes.

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
    every : int, optional
        Passes between saves; :data:`CG_EVERY` by default.
    """

    def __init__(self, url: str, fingerprint: dict, *, resume: bool, every: int | None = None):
        self.url = url
        self.fingerprint = {k: np.asarray(v, dtype=np.float64) for k, v in fingerprint.items()}
        self.resume = resume
        self.every = CG_EVERY if every is None else every

    def load(self) -> dict | None:
        if not self.resume:
            return None
        doc, arrays = load_checkpoint(self.url)
        if doc.get("kind") != KIND:
            raise ValueError(f"{self.url} holds a {doc.get('kind')!r} checkpoint, not a CG solve")
        for name, value in self.fingerprint.items():
            saved = arrays.get(_PRINT + name)
            if (saved is None or saved.shape != value.shape
                    or np.linalg.norm(saved - value) > 1e-10 * np.linalg.norm(value)):
                raise ValueError(f"{self.url} holds the CG state of another system (its {name} "
                                 "differs: other data or parameters); fit without resume to "
                                 "start afresh")
        return {"k": int(doc["k"]), "passes": int(doc["passes"]),
                "restarts": int(doc["restarts"]), "active": arrays["active"],
                "n_iter": arrays["n_iter"], "history": arrays["history"],
                "arrays": {k[len(_VECTOR):]: v for k, v in arrays.items() if k.startswith(_VECTOR)}}

    def save(self, state: dict) -> None:
        doc = {"kind": KIND, "stage": state["k"], "k": state["k"], "passes": state["passes"],
               "restarts": state["restarts"]}
        arrays = {"active": state["active"], "n_iter": state["n_iter"],
                  "history": state["history"],
                  **{_VECTOR + k: v for k, v in state["arrays"].items()},
                  **{_PRINT + k: v for k, v in self.fingerprint.items()}}
        save_checkpoint(self.url, doc, arrays)
