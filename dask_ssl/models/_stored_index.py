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
    (written before directories kept it, or of a graph searched exactly).

    Raises ``ValueError`` naming the array when the index does not fit its rows: the search
    kernels read where its row numbers point, unchecked."""
    if OFFSETS not in arrays:
        return None
    try:
        offsets = _wide(arrays[OFFSETS])
        n_rows = int(rows.offsets[-1])
        groups = None
        n_distinct = n_rows
        if "index_members" in arrays:
            members = _wide(arrays["index_members"])
            g_start = _wide(arrays["index_group_start"])
            _check(_is_permutation(members, n_rows), "index_members")
            _check(g_start.size > 0 and g_start[0] == 0 and (np.diff(g_start) > 0).all()
                   and g_start[-1] < n_rows, "index_group_start")
            groups = (g_start, np.diff(np.append(g_start, n_rows)), members)
            n_distinct = g_start.size
        _check(offsets.ndim == 1 and offsets.size >= 2 and offsets[0] == 0
               and (np.diff(offsets) >= 0).all() and offsets[-1] == n_distinct, OFFSETS)
        parts = []
        for c in range(offsets.size - 1):
            n = int(offsets[c + 1] - offsets[c])
            key = f"index_{c}_"
            if n == 0:
                parts.append(None)
                continue
            part = (_wide(arrays[key + "order"]), _wide(arrays[key + "adj_ptr"]),
                    np.ascontiguousarray(arrays[key + "adj_ind"], dtype=np.int32),
                    tuple(_wide(arrays[key + "tree_" + name]) for name in TREE))
            _check_part(key, n, *part)
            parts.append(part)
    except KeyError as exc:
        raise ValueError(f"the stored kNN index lacks the array {exc}") from None
    return DriverIndex.from_arrays(rows, offsets, groups, parts)


def _check_part(key, n, order, adj_ptr, adj_ind, tree):
    """Raise ``ValueError`` unless index ``key``'s arrays describe a search over ``n`` rows."""
    _check(_is_permutation(order, n), key + "order")
    _check(adj_ptr.size == n + 1 and adj_ptr[0] == 0 and (np.diff(adj_ptr) >= 0).all()
           and adj_ptr[-1] == adj_ind.size, key + "adj_ptr")
    _check(adj_ind.size == 0 or (adj_ind.min() >= 0 and adj_ind.max() < n), key + "adj_ind")
    left, right, pa, pb, start, stop, perm = tree
    nodes = np.arange(left.size)
    _check(left.size > 0 and all(a.size == left.size for a in tree[:6]), key + "tree")
    # children are numbered after their parent: a descent ends at a leaf
    _check(((left == -1) & (right == -1) | (left > nodes) & (right > nodes)).all()
           and left.max() < left.size and right.max() < left.size, key + "tree_left")
    _check(((pa >= -1) & (pa < n) & (pb >= -1) & (pb < n)).all(), key + "tree_pa")
    _check(((0 <= start) & (start <= stop) & (stop <= n)).all(), key + "tree_start")
    _check(_is_permutation(perm, n), key + "tree_perm")


def _is_permutation(a, n) -> bool:
    return a.size == n and (n == 0 or (a.min() >= 0 and a.max() < n
                                       and (np.bincount(a, minlength=n) == 1).all()))


def _check(ok, name):
    if not ok:
        raise ValueError(f"the stored kNN index does not fit its rows: {name} is inconsistent")


def _narrow(a) -> np.ndarray:
    a = np.asarray(a)
    small = a.size == 0 or (a.min() >= np.iinfo(np.int32).min and a.max() <= np.iinfo(np.int32).max)
    return a.astype(np.int32) if small else a


def _wide(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)
