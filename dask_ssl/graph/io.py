"""Saving a graph and loading it back (``graph.json`` plus one ``.npz`` per block; no pickle).

Each worker writes and reads its own blocks, so the graph never passes through the driver. The
per-block search indexes are not saved (only the kNN lists and ``W``); a loaded graph searches
new points exactly, block by block.
"""

from __future__ import annotations

import hashlib
import io
import json

import fsspec
import numpy as np
import scipy.sparse as sp

from .. import __version__
from ..linalg.rowblocks import RowBlocks
from .knn import Neighbors
from .weights import Graph

FORMAT = "dask-ssl-graph/1"


def _block_name(b: int) -> str:
    return f"block-{b:05d}.npz"


def _write_block(i, W, part, url):
    buf = io.BytesIO()
    np.savez(buf, data=W.data, indices=W.indices, indptr=W.indptr, shape=np.array(W.shape),
             knn_indices=part[0], knn_distances=part[1])
    raw = buf.getvalue()
    with fsspec.open(f"{url}/{_block_name(i)}", "wb") as f:
        f.write(raw)
    return hashlib.sha256(raw).hexdigest()


def save_graph(graph: Graph, url: str) -> None:
    """Write ``graph`` under ``url`` (a local directory or an fsspec URL the workers can reach)."""
    if graph.neighbors is None:
        raise ValueError("only graphs built from kNN lists can be saved (this one was given "
                         "as a matrix)")
    url = str(url).rstrip("/")
    fs, path = fsspec.core.url_to_fs(url)
    fs.makedirs(path, exist_ok=True)
    neigh = graph.neighbors
    sums = graph.W.map(_write_block, url, per_block=[(p,) for p in neigh.parts])
    doc = {"format": FORMAT, "library_version": __version__, "n_rows": graph.n_rows,
           "n_features": neigh.data.n_features, "sizes": graph.W.sizes.tolist(),
           "n_neighbors": neigh.n_neighbors, "metric": neigh.metric, "weights": graph.weights,
           "t": graph.t, "symmetrize": graph.symmetrize,
           "blocks": [{"file": _block_name(b), "sha256": s} for b, s in enumerate(sums)]}
    with fsspec.open(f"{url}/graph.json", "w") as f:
        json.dump(doc, f, indent=1)


def _read_block(i, X, entry, expect_rows, url):
    with fsspec.open(f"{url}/{entry['file']}", "rb") as f:
        raw = f.read()
    if hashlib.sha256(raw).hexdigest() != entry["sha256"]:
        raise ValueError(f"{entry['file']} does not match its checksum in graph.json")
    with np.load(io.BytesIO(raw), allow_pickle=False) as z:
        W = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
        part = (z["knn_indices"], z["knn_distances"])
    if W.shape[0] != expect_rows:
        raise ValueError(f"{entry['file']} holds {W.shape[0]} rows, expected {expect_rows}")
    return W, part


def _first(pair):
    return pair[0]


def _second(pair):
    return pair[1]


def load_graph(url: str, data: RowBlocks) -> Graph:
    """Read a graph saved by :func:`save_graph` for the rows ``data`` it was built on.

    ``data`` must be partitioned as when the graph was saved; each block is read on the worker
    holding the matching data block.
    """
    url = str(url).rstrip("/")
    with fsspec.open(f"{url}/graph.json", "r") as f:
        doc = json.load(f)
    if doc.get("format") != FORMAT:
        raise ValueError(f"{url} does not hold a {FORMAT} graph (format {doc.get('format')!r})")
    if doc["sizes"] != data.sizes.tolist() or doc["n_features"] != data.n_features:
        raise ValueError(f"the saved graph covers blocks {doc['sizes']} x {doc['n_features']} "
                         f"features; the data has {data.sizes.tolist()} x {data.n_features}")
    client, owners = data.client, data.owners()
    pairs = data.submit(_read_block, url,
                        per_block=[(e, int(s)) for e, s in zip(doc["blocks"], data.sizes)])
    # loose placement, as RowBlocks.submit's: a lost block is recomputed on any worker
    W = [client.submit(_first, p, workers=[owners[b]], allow_other_workers=True, pure=False)
         for b, p in enumerate(pairs)]
    parts = [client.submit(_second, p, workers=[owners[b]], allow_other_workers=True,
                           pure=False) for b, p in enumerate(pairs)]
    data.wait(W + parts)
    neigh = Neighbors(data, parts, None, int(doc["n_neighbors"]), doc["metric"])
    return Graph(neigh, RowBlocks(client, W, data.sizes.copy(), data.n_rows, True),
                 doc["weights"], doc["t"], doc["symmetrize"])
