"""Row-partitioned matrices on Dask workers and the solvers that run on them."""

from .rowblocks import RowBlocks

__all__ = ["RowBlocks"]
