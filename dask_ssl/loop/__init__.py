"""Resumable outer loops (TSVM gamma' ramp with switching, DA temperature annealing)."""

from .checkpoint import load_checkpoint, save_checkpoint
from .stages import StageLoop

__all__ = ["StageLoop", "load_checkpoint", "save_checkpoint"]
