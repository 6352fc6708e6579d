"""Move row blocks once so that they line up with another set of blocks (a graph's).

A solver that multiplies ``X z`` and then ``L (X z)`` needs block ``b`` of the data and block
``b`` of the graph in one worker process, with the same rows. When the graph's blocks differ
(other sizes, another worker, rows re-split by METIS), the data rows are moved to the graph's
layout once at setup, not a vector per iteration.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .rowblocks import RowBlocks


def _assemble(positions, inverse, *parts):
    """Rows ``positions[k]`` of ``parts[k]`` stacked, then put back in the requested order."""
    pieces = [part[pos] for part, pos in zip(parts, positions)]
    stacked = sp.vstack(pieces, format="csr") if sp.issparse(parts[0]) else np.vstack(pieces)
    out = stacked[inverse]
    if sp.issparse(out):
        out = sp.csr_matrix(out)
        out.sort_indices()
        return out
    return np.ascontiguousarray(out)


def lined_up(blocks: RowBlocks, target: RowBlocks) -> bool:
    """Whether block ``b`` of ``blocks`` has the rows of block ``b`` of ``target``, on its worker."""
    return (blocks.n_blocks == target.n_blocks and np.array_equal(blocks.sizes, target.sizes)
            and blocks.owners() == target.owners())


def take_rows(blocks: RowBlocks, rows: list, owners: list) -> RowBlocks:
    """New row blocks: block ``b`` holds rows ``rows[b]`` (global row numbers, in that order)
    of ``blocks`` and lives on worker ``owners[b]``. One task per new block, run on its
    worker, fetches the pieces it needs from the old blocks."""
    client = blocks.client
    futures = []
    for b, want in enumerate(rows):
        want = np.asarray(want, dtype=np.int64)
        src = np.searchsorted(blocks.offsets, want, side="right") - 1
        by_source = np.argsort(src, kind="stable")
        used = np.unique(src)
        positions = [want[src == s] - blocks.offsets[s] for s in used]
        # stacked (by source) row k is want[by_source[k]]: invert to restore the order
        inverse = np.empty_like(by_source)
        inverse[by_source] = np.arange(by_source.size)
        futures.append(client.submit(_assemble, positions, inverse,
                                     *[blocks.blocks[s] for s in used], workers=[owners[b]],
                                     allow_other_workers=False, pure=False))
    blocks.wait(futures)
    sizes = np.array([len(r) for r in rows], dtype=np.int64)
    return RowBlocks(client, futures, sizes, blocks.n_features, blocks.sparse)
