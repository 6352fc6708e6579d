"""Neighbourhood graphs over row blocks: approximate kNN, edge weights, Laplacian operators."""

from .diagnostics import GraphDiagnostics, GraphWarning, graph_diagnostics, warn_graph
from .io import load_graph, save_graph
from .knn import Neighbors, build_knn, query_knn
from .laplacian import LaplacianOperator
from .quality import KNNQuality, exact_neighbors, knn_quality, score_neighbors
from .system import GraphSystem
from .weights import Graph, build_graph, edge_weights, knn_graph

__all__ = ["Graph", "GraphDiagnostics", "GraphSystem", "GraphWarning", "KNNQuality",
           "LaplacianOperator", "Neighbors", "build_graph", "build_knn", "edge_weights",
           "exact_neighbors", "graph_diagnostics", "knn_graph", "knn_quality", "load_graph",
           "query_knn", "save_graph", "score_neighbors", "warn_graph"]
