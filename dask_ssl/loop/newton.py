"""An L2-SVM-MFN solve's state at a checkpoint URL (see :meth:`~dask_ssl.solvers.mfn.MFNSolver.solve`).

After every Newton step the driver hands over the iterate ``w``, the steps taken, the CG
iterations so far and the objective history; when the solve ends, its result. The state is
written atomically beside the fingerprint of its system (:class:`~.checkpoint.SolverCheckpoint`).
The workers' outputs are not saved: a resumed solve recomputes them from ``w`` in its first
round trip, so it continues along the same iterates up to round-off.
"""

from __future__ import annotations

import numpy as np

from .checkpoint import SolverCheckpoint


class NewtonCheckpoint(SolverCheckpoint):
    """The ``checkpoint`` object :meth:`MFNSolver.solve` takes.

    ``save(state)`` takes ``steps`` (Newton steps taken), ``w``, ``n_cg``, ``history`` and, once
    the solve has ended, ``objective`` and ``converged``; ``load()`` returns the same dict (with
    ``done``) or None when not resuming.
    """

    kind, what = "newton", "Newton"

    def load(self) -> dict | None:
        saved = self._load()
        if saved is None:
            return None
        doc, arrays = saved
        state = {"steps": int(doc["steps"]), "n_cg": int(doc["n_cg"]), "done": doc["done"],
                 "w": arrays["w"], "history": arrays["history"].tolist()}
        if doc["done"]:
            state.update(objective=float(doc["objective"]), converged=bool(doc["converged"]))
        return state

    def save(self, state: dict) -> None:
        done = "objective" in state
        doc = {"stage": state["steps"], "steps": state["steps"], "n_cg": state["n_cg"],
               "done": done}
        if done:
            doc.update(objective=state["objective"], converged=state["converged"])
        self._save(doc, {"w": state["w"], "history": np.asarray(state["history"], dtype=float)})
