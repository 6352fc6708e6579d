"""Kernels: base kernels by name or callable, the deformed (point-cloud) kernel, kernel row
blocks on the workers, Nystrom features."""

from .base import check_kernel, kernel_matrix
from .deformed import DeformedKernel, graph_term_weight
from .nystrom import NystromFeatures

__all__ = ["DeformedKernel", "NystromFeatures", "check_kernel", "graph_term_weight",
           "kernel_matrix"]
