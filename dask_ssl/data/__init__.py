"""Readers, generators and splits.

Every loader follows one convention: with a ``client`` it returns a
:class:`~dask_ssl.linalg.RowBlocks` whose blocks (and label vectors) were made on the workers;
with ``client=None`` it returns ``(X, y)`` in this process (NumPy / SciPy CSR). The multi-view
reader is in memory only.

``DATASETS`` names every loader for the ``dask-ssl datasets`` command.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .generators import g50c, rcv1_like, two_moons
from .kdd99 import KDD99Encoding, read_kdd99
from .multiview import read_multiview
from .multiview_toys import lines, two_moons_two_lines
from .splits import Split, stratified_split
from .svmlight import read_svmlight


@dataclass(frozen=True)
class Dataset:
    """A registry entry: the loader and a one-line description."""

    loader: Callable
    description: str


DATASETS = {
    "svmlight": Dataset(read_svmlight, "svmlight/libsvm files (paths, globs or URLs), parsed in "
                                       "parallel byte ranges; label 0 = unlabeled"),
    "kdd99": Dataset(read_kdd99, "KDD Cup 99 intrusion records, attack vs normal, one-hot + "
                                 "log1p/max scaling; replicate=k for kdd99-scale"),
    "two_moons": Dataset(two_moons, "two interleaved half circles in 2-D, generated"),
    "g50c": Dataset(g50c, "two 50-D unit Gaussians with 5% Bayes error, generated"),
    "rcv1_like": Dataset(rcv1_like, "RCV1-shaped sparse text (804k x 47k, tf-idf) with topic "
                                    "clusters, generated"),
    "multiview": Dataset(read_multiview, "multi-view .mat files (X: cell of views, Y: classes "
                                         "from 1), in memory"),
}

__all__ = ["DATASETS", "Dataset", "KDD99Encoding", "Split", "g50c", "rcv1_like",
           "read_kdd99", "read_multiview", "read_svmlight", "stratified_split", "two_moons"]
__all__ += ["lines", "two_moons_two_lines"]
