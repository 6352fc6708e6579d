"""A conjugate-gradient solve's state at a checkpoint URL (see :func:`~dask_ssl.linalg.block_cg`).

The state (iterate, residual, direction, the product of the direction, the driver's counters)
is written atomically with :func:`~.checkpoint.save_checkpoint`, beside the fingerprint of its
system (:class:`~.checkpoint.SolverCheckpoint`).
"""

from __future__ import annotations

from .checkpoint import SolverCheckpoint

#: CG passes between saves.
CG_EVERY = 10
_VECTOR = "vector_"


class CGCheckpoint(SolverCheckpoint):
    """The ``checkpoint`` object :func:`~dask_ssl.linalg.block_cg` takes.

    Parameters
    ----------
    url, fingerprint, resume
        As in :class:`~.checkpoint.SolverCheckpoint`.
    every : int, optional
        Passes between saves; :data:`CG_EVERY` by default.
    """

    kind, what = "cg", "CG"

    def __init__(self, url: str, fingerprint: dict, *, resume: bool, every: int | None = None):
        super().__init__(url, fingerprint, resume=resume)
        self.every = CG_EVERY if every is None else every

    def load(self) -> dict | None:
        saved = self._load()
        if saved is None:
            return None
        doc, arrays = saved
        return {"k": int(doc["k"]), "passes": int(doc["passes"]),
                "restarts": int(doc["restarts"]), "active": arrays["active"],
                "n_iter": arrays["n_iter"], "history": arrays["history"],
                "arrays": {k[len(_VECTOR):]: v for k, v in arrays.items() if k.startswith(_VECTOR)}}

    def save(self, state: dict) -> None:
        doc = {"stage": state["k"], "k": state["k"], "passes": state["passes"],
               "restarts": state["restarts"]}
        self._save(doc, {"active": state["active"], "n_iter": state["n_iter"],
                         "history": state["history"],
                         **{_VECTOR + k: v for k, v in state["arrays"].items()}})
