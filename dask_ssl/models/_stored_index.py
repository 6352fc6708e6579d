"""A kNN index (:class:`~dask_ssl.graph.knn.DriverIndex`) as arrays of a model directory.

Beside the training rows, which the directory keeps already, an index is what the search of
each block's index reads: its rows' order, its search graph and its tree, with the groups of
identical rows and where each index's distinct rows start. The index's own (prepared) rows
are made from the stored rows on loading. Row numbers are stored as int32 where they fit
(half of int64) and widened on loading to the types the search kernels were compiled for.
"""

from __future__ import annotations

import numpy as np

from ..graph.knn import DriverIndex, DriverRows

#: Names of a random-projection tree's arrays (:func:`dask_ssl.graph._nndescent.trees.rp_tree`).
TREE = ("left", "right", "pa", "pb", "start", "stop", "perm")
OFFSETS = "index_offsets"


def pack_index(index: DriverIndex) -> dict:
    """The arrays of ``index`` but its rows, for ``arrays.npz``."""
    arrays = {OFFSETS: np.asarray(index.distinct_offsets, dtype=np.int64)}
    if index.groups is not None:
        g_start, _, members = index.groups
        arrays["index_group_start"] = _narrow(g_start)
        arrays["index_members"] = _narrow(members)
    for c, part in enumerate(index.indexes):
        if part is None:
            continue
        arrays[f"index_{c}_order"] = _narrow(part.order)
        arrays[f"index_{c}_adj_ptr"] = _narrow(part.adj_ptr)
        arrays[f"index_{c}_adj_ind"] = part.adj_ind  # int32 already below 2**31 rows a block
        arrays.update({f"index_{c}_tree_{name}": _narrow(a) for name, a in zip(TREE, part.tree)})
    return arrays


def packed_bytes(index: DriverIndex) -> int:
    """Bytes of :func:`pack_index`'s arrays."""
    return sum(int(a.nbytes) for a in pack_index(index).values())


def unpack_index(arrays: dict, rows: DriverRows) -> DriverIndex | None:
    """The index :func:`pack_index` stored beside ``rows``; None in a directory without one
    (written before directories kept it, or of a graph searched exactly)."""
    if OFFSETS not in arrays:
        return None
    offsets = arrays[OFFSETS]
    groups = None
    if "index_members" in arrays:
        members = _wide(arrays["index_members"])
        g_start = _wide(arrays["index_group_start"])
        groups = (g_start, np.diff(np.append(g_start, members.size)), members)
    parts = []
    for c in range(offsets.size - 1):
        if f"index_{c}_order" not in arrays:
            parts.append(None)
            continue
        parts.append((_wide(arrays[f"index_{c}_order"]), _wide(arrays[f"index_{c}_adj_ptr"]),
                      arrays[f"index_{c}_adj_ind"],
                      tuple(_wide(arrays[f"index_{c}_tree_{name}"]) for name in TREE)))
    return DriverIndex.from_arrays(rows, offsets, groups, parts)


def _narrow(a) -> np.ndarray:
    a = np.asarray(a)
    small = a.size == 0 or (a.min() >= np.iinfo(np.int32).min and a.max() <= np.iinfo(np.int32).max)
    return a.astype(np.int32) if small else a


def _wide(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)
