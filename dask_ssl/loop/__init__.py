"""Resumable outer loops (TSVM gamma' ramp with switching, DA temperature annealing) and
resumable CG solves (LinearLapRLS)."""

from .cg import CGCheckpoint
from .checkpoint import load_checkpoint, save_checkpoint
from .stages import StageLoop

__all__ = ["CGCheckpoint", "StageLoop", "load_checkpoint", "save_checkpoint"]
