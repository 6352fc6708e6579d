"""Neighbourhood graphs over row blocks: approximate kNN, edge weights, Laplacian operators."""
