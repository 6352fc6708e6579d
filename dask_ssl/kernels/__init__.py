"""Kernels: base kernels by name or callable, the deformed (point-cloud) kernel, kernel row
blocks on the workers, Nystrom features."""

from .base import check_kernel, kernel_matrix
from .nystrom import NystromFeatures

__all__ = ["NystromFeatures", "check_kernel", "kernel_matrix"]
