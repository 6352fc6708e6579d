"""Graph Laplacians ``L = D - W``, ``D^-1/2 L D^-1/2`` and their powers as operators on the workers.

Row block ``b`` of ``L x`` needs ``x`` on block ``b``'s own rows and on its *halo*: the columns of
``W_b`` outside ``b``. The halo index sets are computed once; a product then moves, for each pair
of blocks, only the entries one needs from the other. A product is ``p + 1`` direct calls
(:meth:`RowBlocks.call <dask_ssl.linalg.rowblocks.RowBlocks.call>`): the first returns each
block's *send rows* (the rows other blocks' halos hold), each of the others multiplies with the
halos the driver assembled from them and returns the send rows of its result. Through the
scheduler (a pick task per block pair, a product task per block) a 494 k-row product took
about 60 ms, most of it scheduling. The matrices and the vectors stay in the worker processes
(:mod:`dask_ssl.linalg.workerstate`); if a worker is replaced its state is gone and the next
product raises :class:`StateLost`.

Inside a block, rows are kept in reverse Cuthill-McKee order of the block's own graph, the vectors
on the workers too (:func:`to_inner`, :func:`to_outer` convert at the edges): in the order of
the data, a row's neighbours are scattered over the block and a product's reads of ``x`` miss
the cache (on the KDD99 kNN graph the one-column kernel ran 1.3x faster in this order).
"""

from __future__ import annotations

import uuid

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from ..linalg import workerstate
from ._products import apply_finish, apply_rows, with_room
from .partition import check_partition, min_cut_order, reblock
from .weights import Graph

def _setup(i, W, offset, offsets, token):
    n_b = W.shape[0]
    cols = W.indices.astype(np.int64)
    own = (cols >= offset) & (cols < offset + n_b)
    halo = np.unique(cols[~own])
    local = np.where(own, cols - offset, n_b + np.searchsorted(halo, cols))
    Wl = sp.csr_matrix((W.data, local, W.indptr), shape=(n_b, n_b + halo.size))
    # The block works in its own row order (see ``order``): neighbours close together in
    # memory make the products' reads of [x; halo] cache hits.
    order = reverse_cuthill_mckee(Wl[:, :n_b].tocsr(), symmetric_mode=True).astype(np.int64)
    rank = np.empty_like(order)
    rank[order] = np.arange(n_b)
    Wl = Wl[order][:, np.concatenate([order, np.arange(n_b, n_b + halo.size)])].tocsr()
    src = np.searchsorted(offsets, halo, side="right") - 1
    # halo is sorted, so its entries are grouped by source block in ascending order: pieces
    # stacked by ascending source line up with Wl's halo columns.
    sources = [int(c) for c in np.unique(src)]
    workerstate.put(token, i, {"W": Wl, "deg": np.asarray(Wl.sum(axis=1)).ravel(),
                               "order": order, "rank": rank, "sources": sources, "send": {}})
    return {c: halo[src == c] - offsets[c] for c in sources}


def _set_send(i, W, send, token):
    st = workerstate.get(token, i)
    st["send"] = {b: st["rank"][rows] for b, rows in send.items()}


def to_inner(i, token, X):
    """Block ``i``'s rows of ``X`` (in the data's order) in the operator's order for the block."""
    return np.asarray(X)[workerstate.get(token, i)["order"]]


def _unpermute(X, order):
    """``Y`` with ``Y[order] = X``: undoes ``X = Y[order]``."""
    out = np.empty_like(X)
    out[order] = X
    return out


def to_outer(i, token, X):
    """Inverse of :func:`to_inner`."""
    return _unpermute(X, workerstate.get(token, i)["order"])


def inner_rows(i, token, rows):
    """Positions, in the operator's order, of block ``i``'s rows ``rows`` (data order)."""
    return workerstate.get(token, i)["rank"][rows]


def _finish_setup(i, W, pieces, token, normalized):
    st = workerstate.get(token, i)
    if normalized:
        full = np.concatenate([st["deg"], *pieces])
        inv = np.zeros_like(full)
        np.divide(1.0, np.sqrt(full), out=inv, where=full > 0)
        n_b = st["deg"].size
        st["A"] = sp.csr_matrix(sp.diags(inv[:n_b]) @ st["W"] @ sp.diags(inv))
        # scipy's normed Laplacian leaves isolated rows at zero (not 1 on the diagonal).
        st["d"] = (st["deg"] > 0).astype(np.float64)
    else:
        st["A"], st["d"] = st["W"], st["deg"]
    del st["W"]


def _send_rows(i, W, token, values):
    """Block ``i``'s rows of ``values`` that other blocks' halos hold, per destination."""
    return {b: values[rows] for b, rows in workerstate.get(token, i)["send"].items()}


def _degree_send_rows(i, W, token):
    return _send_rows(i, W, token, workerstate.get(token, i)["deg"])


def apply_block(i, token, s, src, dst, pieces):
    """``s[dst]`` = block ``i``'s rows of ``L [s[src]; halo]`` (``pieces``: the halo by
    ascending source block), in the worker holding the operator ``token``; the previous
    ``s[dst]``'s buffer is reused. ``s[src]`` is kept in a buffer with room for the halo
    (:func:`~dask_ssl.graph._products.with_room`) for the next product."""
    st = workerstate.get(token, i)
    s[src] = x = with_room(st["A"], s[src])
    s[dst] = apply_rows(st["A"], st["d"], x, pieces, out=s.get(dst))
    return s[dst]


def finish_block(i, token, s, src, pieces, gamma):
    """The last product step of a CG pass on block ``i``: ``q = gamma L [s[src]; halo] + a p``
    with ``a, p, r, q`` from ``s``; returns ``(p.q, r.q, q.q)`` (``src`` is ``p`` for ``M = L``,
    ``L^(p-1) p`` for ``M = L^p``). ``s[src]`` is kept as in :func:`apply_block`."""
    st = workerstate.get(token, i)
    s[src] = x = with_room(st["A"], s[src])
    return apply_finish(st["A"], st["d"], x, pieces, gamma, s["a"], s["p"], s["r"], s["q"])


def _slot_send_rows(i, W, token, store, slot):
    return _send_rows(i, W, token, workerstate.get(store, i)[slot])


def _product_step(i, W, pieces, token, store, src, dst, send):
    """``dst = L [src; halo]`` on block ``i``; returns the send rows of ``dst`` if ``send``."""
    s = workerstate.get(store, i)
    y = apply_block(i, token, s, src, dst, pieces)
    return _send_rows(i, W, token, y) if send else None


def _put(i, W, value, token, vec_token, slot):
    workerstate.get(vec_token, i)[slot] = to_inner(i, token, np.asarray(
        value, dtype=np.float64).reshape(W.shape[0], -1))


def _new_store(i, W, vec_token):
    workerstate.put(vec_token, i, {})


def _get(i, W, token, vec_token, slot):
    return to_outer(i, token, workerstate.get(vec_token, i)[slot])


def _drop(token):
    return workerstate.drop(token)


class LaplacianOperator:
    """``M = L^p`` of a :class:`Graph`, applied to ``n x c`` blocks of vectors on the workers.

    Parameters
    ----------
    graph : Graph
    normalized : bool
        ``D^-1/2 (D - W) D^-1/2`` (the seeds' experiments) instead of ``D - W``.
    p : int
        Power of ``L`` (the seeds' iterated Laplacian ``M = L^p``).
    partition : {None, "metis"}
        None: the blocks of ``graph``. ``"metis"``: as many blocks, re-split by a METIS minimum
        edge cut (:mod:`dask_ssl.graph.partition`; the whole graph passes through the driver
        once), so that products move fewer halo rows. Vectors in and out stay in the graph's
        row order either way.

    Attributes
    ----------
    W : RowBlocks
        The blocks the operator works on (``graph.W``, or its re-split copy).
    order : ndarray or None
        With a re-split: ``order[k]`` is the graph row at position ``k`` of the blocks.
    halo_sizes : ndarray
        Halo entries each block receives per vector column and power step.
    sources : list of list of int
        Per block, the blocks its halo comes from, ascending (the order of its halo columns).
    halo_rows : list of dict
        ``halo_rows[b][c]``: local rows of block ``c`` in block ``b``'s halo, ascending.
    """

    def __init__(self, graph: Graph, *, normalized: bool = True, p: int = 1, partition=None):
        if not isinstance(p, (int, np.integer)) or p < 1:
            raise ValueError(f"the Laplacian power p must be a positive integer, got {p!r}")
        check_partition(partition)
        self.graph, self.normalized, self.p = graph, bool(normalized), int(p)
        self.W = W = graph.W
        self.client = W.client
        self.order = None
        if partition == "metis":
            W_all = graph.to_scipy()
            found = min_cut_order(W_all, W.n_blocks)
            if found is not None:
                self.order = found[0]
                self.W = W = reblock(W_all, self.order, found[1], self.client)
            del W_all
        self.token = "lap-" + uuid.uuid4().hex[:12]
        offsets = W.offsets
        needs = W.map(_setup, self.token, per_block=[(int(o), offsets) for o in offsets[:-1]])
        # needs[b][c]: rows of block c that block b's halo holds; block c sends them to b.
        self.sources = [sorted(needs[b]) for b in range(W.n_blocks)]
        self.halo_rows = needs
        self.halo_sizes = np.array([sum(len(v) for v in nb.values()) for nb in needs])
        W.map(_set_send, self.token, per_block=[({b: needs[b][c] for b in range(W.n_blocks)
                                                   if c in needs[b]},)
                                                  for c in range(W.n_blocks)])
        degree_halos = W.call(_degree_send_rows, self.token)
        W.call(_finish_setup, self.token, self.normalized, per_block=self._halos(degree_halos))

    def _halos(self, send_rows):
        """Per block, its halo pieces (ascending source) from every block's send rows."""
        return [([send_rows[c][b] for c in self.sources[b]],) for b in range(self.W.n_blocks)]

    def to_block_order(self, X):
        """Rows of ``X`` (graph order) in the order of the operator's blocks."""
        return X if self.order is None else X[self.order]

    def from_block_order(self, X):
        """Inverse of :meth:`to_block_order`."""
        return X if self.order is None else _unpermute(X, self.order)

    # worker-side vector stores -------------------------------------------------------------
    def new_store(self) -> str:
        """A fresh per-block dictionary of vectors on the workers; returns its token."""
        token = "vec-" + uuid.uuid4().hex[:12]
        self.W.call(_new_store, token)
        return token

    def release(self, token: str) -> None:
        """Forget a vector store (or the operator's own state) on every worker."""
        self.client.run(_drop, token)

    def scatter(self, store: str, slot: str, X) -> None:
        """Send row blocks of an ``n x c`` array into ``slot`` of ``store``."""
        X = self.to_block_order(np.asarray(X, dtype=np.float64))
        self.W.call(_put, self.token, store, slot,
                    per_block=[(X[s],) for s in self.W.block_slices()])

    def gather(self, store: str, slot: str) -> np.ndarray:
        """``slot`` of ``store`` from all blocks, stacked (n x c)."""
        return self.from_block_order(np.vstack(self.W.call(_get, self.token, store, slot)))

    # products ----------------------------------------------------------------------------
    def apply(self, store: str, src: str, dst: str) -> None:
        """``dst = M src`` in ``store``: ``p + 1`` direct calls."""
        halos = self.W.call(_slot_send_rows, self.token, store, src)
        slot = src
        for step in range(self.p):
            last = step == self.p - 1
            out = dst if last else f"{dst}:{step}"
            halos = self.W.call(_product_step, self.token, store, slot, out, not last,
                                per_block=self._halos(halos))
            slot = out

    def matmat(self, X) -> np.ndarray:
        """``M X`` for an in-memory ``n x c`` (or length-n) array, through the workers."""
        X = np.asarray(X, dtype=np.float64)
        store = self.new_store()
        try:
            self.scatter(store, "x", X.reshape(X.shape[0], -1))
            self.apply(store, "x", "y")
            out = self.gather(store, "y")
        finally:
            self.release(store)
        return out.reshape(X.shape)

    def bytes_per_product(self, n_cols: int = 1) -> tuple[int, int]:
        """``(halo, broadcast)``: bytes moved between blocks by one product with ``n_cols``
        float64 columns, and what sending every block the rest of the vector would move."""
        halo = int(self.halo_sizes.sum()) * n_cols * 8 * self.p
        sizes = self.W.sizes
        broadcast = int((self.W.n_rows - sizes).sum()) * n_cols * 8 * self.p
        return halo, broadcast

    def close(self) -> None:
        """Free the operator's matrices on the workers."""
        self.release(self.token)
