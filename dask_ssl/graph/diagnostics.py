"""Graph hygiene: connected components, isolated points and degrees, reported as warnings.

Components are found without moving the graph: each block labels the components of its own
rows' subgraph and sends, per local component, the outside rows it touches; the driver joins
those (a graph of local components, far smaller than ``W``) with one union pass.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .weights import Graph


class GraphWarning(UserWarning):
    """The graph has a property that can spoil a Laplacian method (disconnected, isolated rows)."""


@dataclass
class GraphDiagnostics:
    """Summary of a graph's structure.

    Attributes
    ----------
    n_components : int
    component_sizes : ndarray
        Sizes of all components, largest first.
    labels : ndarray of int
        Component of each row (n-sized, on the driver).
    n_isolated : int
        Rows without any edge.
    degree_min, degree_mean, degree_max : float
        Weighted degree ``sum_j W_ij``.
    n_edges : int
        Stored non-zeros of ``W`` (each undirected edge counted twice).
    """

    n_components: int
    component_sizes: np.ndarray
    labels: np.ndarray
    n_isolated: int
    degree_min: float
    degree_mean: float
    degree_max: float
    n_edges: int


def _local_structure(i, W, offset):
    n_b = W.shape[0]
    deg = np.asarray(W.sum(axis=1)).ravel()
    coo = W.tocoo()
    inside = (coo.col >= offset) & (coo.col < offset + n_b)
    local = sp.csr_matrix((np.ones(inside.sum()), (coo.row[inside], coo.col[inside] - offset)),
                          shape=(n_b, n_b))
    n_comp, lab = connected_components(local, directed=False)
    pairs = np.unique(np.column_stack([lab[coo.row[~inside]], coo.col[~inside]]), axis=0)
    return (n_comp, lab.astype(np.int64), pairs,
            (float(deg.min(initial=np.inf)), float(deg.sum()), float(deg.max(initial=0.0)),
             int((deg == 0).sum()), int(W.nnz)))


def graph_diagnostics(graph: Graph) -> GraphDiagnostics:
    """Components, isolated rows and degree statistics of ``graph`` (one round trip)."""
    W = graph.W
    got = W.map(_local_structure, per_block=[(int(o),) for o in W.offsets[:-1]])
    first = np.concatenate([[0], np.cumsum([g[0] for g in got])])
    node = np.concatenate([g[1] + first[b] for b, g in enumerate(got)])
    src = np.concatenate([g[2][:, 0] + first[b] for b, g in enumerate(got)])
    dst = node[np.concatenate([g[2][:, 1] for g in got])]
    m = int(first[-1])
    joined = sp.csr_matrix((np.ones(src.size), (src, dst)), shape=(m, m))
    n_comp, comp = connected_components(joined, directed=False)
    labels = comp[node]
    stats = [g[3] for g in got]
    n = W.n_rows
    return GraphDiagnostics(
        n_components=int(n_comp),
        component_sizes=np.sort(np.bincount(labels, minlength=n_comp))[::-1],
        labels=labels,
        n_isolated=sum(s[3] for s in stats),
        degree_min=min(s[0] for s in stats),
        degree_mean=sum(s[1] for s in stats) / n,
        degree_max=max(s[2] for s in stats),
        n_edges=sum(s[4] for s in stats))


def warn_graph(diag: GraphDiagnostics, labeled: np.ndarray | None = None) -> None:
    """Emit a :class:`GraphWarning` for each problem in ``diag``.

    Parameters
    ----------
    diag : GraphDiagnostics
    labeled : ndarray of bool, optional
        Labeled rows: components without any get their own warning, since a transductive
        solution there is not determined by the labels.
    """
    if diag.n_isolated:
        warnings.warn(f"{diag.n_isolated} rows have no edge (isolated points); a Laplacian "
                      "method cannot propagate anything to them", GraphWarning, stacklevel=2)
    if diag.n_components > 1:
        sizes = ", ".join(str(s) for s in diag.component_sizes[:5])
        warnings.warn(f"the graph has {diag.n_components} connected components (largest: "
                      f"{sizes}); consider more neighbours", GraphWarning, stacklevel=2)
    if labeled is not None and diag.n_components > 1:
        has_label = np.zeros(diag.n_components, dtype=bool)
        has_label[diag.labels[np.asarray(labeled, dtype=bool)]] = True
        bare = np.flatnonzero(~has_label)
        if bare.size:
            rows = int(np.isin(diag.labels, bare).sum())
            warnings.warn(f"{bare.size} components ({rows} rows) contain no labeled row; "
                          "their scores come from the fidelity term alone", GraphWarning,
                          stacklevel=2)
