"""numba kernels of the partitioned kNN search (:mod:`dask_ssl.graph.knn`), one module per job,
as pynndescent splits its own:

- :mod:`.distances`: rank distances between rows, dense or CSR, and from a pinned row;
- :mod:`.prefetch`: hints that bring rows about to be compared into cache;
- :mod:`.rng`: the small random generator the kernels share;
- :mod:`.heaps`: the bounded heaps that hold each row's neighbour list, and their sort;
- :mod:`.trees`: random-projection trees, and a query's descent to its leaf;
- :mod:`.descent`: NN-descent from the trees' leaves, and brute force for small blocks;
- :mod:`.search_graph`: the diversified kNN lists plus their reverse edges;
- :mod:`.search`: best-first search of query rows through a block's search graph;
- :mod:`.duplicates`: row hashes that find exact duplicates, and the duplicates' lists.

This package re-exports what its callers use.

Every kernel is compiled with ``cache=True`` and is small: the set compiles once, then every
later worker process loads it from disk. (pynndescent's own build recompiles its closures in
every process, which dominated the test suite and every fresh worker.)

numba checks a cached kernel only against its own file, while a kernel compiled with a function
of another module keeps the copy it was compiled with: the cache directory is therefore keyed by
the text of every kernel module of the package (:mod:`dask_ssl.kernel_cache`), so editing any
module here compiles all of them anew.
"""

from .descent import brute_force, init_from_leaves, init_random, nn_descent
from .distances import COSINE, EUCLIDEAN
from .duplicates import expand_duplicates, hash_dense_rows, hash_sparse_rows
from .heaps import sort_heaps
from .search import search
from .search_graph import diversify, edge_counts, fill_edges
from .trees import rp_tree

__all__ = ["COSINE", "EUCLIDEAN", "brute_force", "diversify", "edge_counts",
           "expand_duplicates", "fill_edges", "hash_dense_rows", "hash_sparse_rows",
           "init_from_leaves", "init_random", "nn_descent", "rp_tree", "search", "sort_heaps"]
