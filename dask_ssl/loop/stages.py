"""The resumable outer loop shared by the S3VMs: stages, snapshots, recovery, checkpoints.

A *driver* (TSVM: one stage per gamma' value; DA: one per temperature) owns the small state and
refers to the per-block state on the workers. It implements:

- ``start(w0)``: put the initial per-block state on the workers;
- ``run_stage() -> dict``: one stage; sets ``done`` after the last; returns a history record;
- ``snapshot() -> (doc, arrays)``: JSON-able small state and the per-row arrays needed to rebuild
  the workers' state (temporary labels, p);
- ``restore(doc, arrays)``: rebuild every block's state from a snapshot;
- ``blocks``: its RowBlocks, or None when all of its state is on the driver (kernel DA).

A stage is deterministic given its starting snapshot, so when a worker is lost mid-stage the
loop restores the last snapshot and runs the stage again: the result is the one an
uninterrupted run reaches.
"""

from __future__ import annotations

import logging
import sys
import time

from ..linalg.recovery import RECOVERABLE
from .checkpoint import load_checkpoint, save_checkpoint

log = logging.getLogger(__name__)


class StageLoop:
    """Run a driver's stages with a snapshot after each, restarting a stage on a lost worker.

    Parameters
    ----------
    driver : object
        See the module docstring.
    checkpoint : str, optional
        Directory URL; the snapshot after each stage is saved there with ``meta``.
    meta : dict, optional
        Extra JSON stored with every checkpoint (what ``dask-ssl resume`` needs to rebuild the run).
    verbose : bool
        Print one line per stage to stderr (stage, DA's start, gamma' or T, objective,
        switches or entropy).
    max_restarts : int
        Lost-worker restarts allowed over the whole run.
    """

    def __init__(self, driver, *, checkpoint=None, meta=None, verbose=False, max_restarts=5):
        self.driver = driver
        self.checkpoint = checkpoint
        self.meta = dict(meta or {})
        self.verbose = verbose
        self.max_restarts = max_restarts
        self.restarts = 0

    def run(self, w0=None, *, resume: bool = False) -> None:
        """Run from ``w0`` (or from the checkpoint when ``resume``) until the driver is done."""
        driver = self.driver
        t0 = time.perf_counter()
        if resume:
            if self.checkpoint is None:
                raise ValueError("resume needs a checkpoint location")
            snap = load_checkpoint(self.checkpoint)
            if snap[0].get("kind") != driver.kind:
                raise ValueError(f"{self.checkpoint} holds a {snap[0].get('kind')!r} "
                                 f"checkpoint, not {driver.kind!r}")
        else:
            driver.w = w0
            snap = driver.snapshot()
        self._restore(snap)
        while not driver.done:
            record = self._attempt(driver.run_stage, snap)
            if record is None:
                continue
            new = self._attempt(driver.snapshot, snap)
            if new is None:
                continue
            snap = new
            if self.checkpoint is not None:
                save_checkpoint(self.checkpoint, dict(snap[0], meta=self.meta), snap[1])
            if self.verbose:
                self._print(record, time.perf_counter() - t0)

    def _attempt(self, fn, snap):
        """Call ``fn``; if a worker was lost, restore ``snap`` and return None (to run again)."""
        try:
            return fn()
        except RECOVERABLE as exc:
            self._count_restart(exc)
            self._restore(snap)
            return None

    def _restore(self, snap) -> None:
        while True:
            try:
                # a driver whose state is all local has no blocks to re-place
                if self.driver.blocks is not None:
                    self.driver.blocks.owners(refresh=True)
                self.driver.restore(*snap)
                return
            except RECOVERABLE as exc:
                self._count_restart(exc)

    def _count_restart(self, exc) -> None:
        self.restarts += 1
        if self.restarts > self.max_restarts:
            raise exc
        log.warning("lost worker state (%s); restarting from the last stage snapshot", exc)

    @staticmethod
    def _print(record: dict, elapsed: float) -> None:
        parts = [f"stage {record['stage']:3d}"]
        for key, fmt in (("start", "start={}"), ("gamma_u", "gamma'={:.3g}"), ("T", "T={:.4g}"),
                         ("objective", "objective={:.8g}"), ("switches", "switches={}"),
                         ("entropy", "entropy={:.3g}")):
            if key in record:
                parts.append(fmt.format(record[key]))
        parts.append(f"elapsed {elapsed:.1f}s")
        print("  ".join(parts), file=sys.stderr, flush=True)
