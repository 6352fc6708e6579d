"""Resumable outer loops (TSVM gamma' ramp with switching, DA temperature annealing),
resumable CG solves (LinearLapRLS) and Newton solves (LinearLapSVM)."""

from .cg import CGCheckpoint
from .checkpoint import load_checkpoint, save_checkpoint
from .newton import NewtonCheckpoint
from .stages import StageLoop

__all__ = ["CGCheckpoint", "NewtonCheckpoint", "StageLoop", "load_checkpoint", "save_checkpoint"]
