"""Recall@10 and worker CPU seconds of ``build_knn`` (2 blocks, 2 single-threaded workers) on
dense and sparse data sets, against exact search; for checking a search default across data.

    python benchmarks/bench_knn_recall.py --data g50c:10000 g50c:50000 kdd99:100000 \
        rcv1:50000 moons:10000 [--budget B]

CPU seconds are the workers' process CPU time (user + system) over the build, which the load of
other jobs on the host does not inflate the way it does wall time. On g50c the share of the
exact symmetrised 10-NN graph's edges (scikit-learn ``kneighbors_graph``, maximum with its
transpose) found in the built graph's is printed too (``--edges``; rows <= 20 k).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import scipy.sparse as sp
from dask_ssl.graph.knn import build_knn
from dask_ssl.graph.quality import exact_neighbors, sample_rows, score_neighbors
from dask_ssl.linalg.rowblocks import RowBlocks

from _common import KDD99, local_cluster


def _load(name, rows):
    if name == "g50c":
        from dask_ssl.data.generators import g50c

        X, y = g50c(n=rows, seed=0)
        return np.asarray(X), np.asarray(y), "euclidean"
    if name == "moons":
        from dask_ssl.data.generators import two_moons

        X, y = two_moons(n=rows, seed=0)
        return np.asarray(X), np.asarray(y), "euclidean"
    if name == "kdd99":
        from dask_ssl.data.kdd99 import read_kdd99

        X, y = read_kdd99(_KDD99_PATH)
        X, y = sp.csr_matrix(X), np.asarray(y)
        keep = np.sort(np.random.default_rng(0).choice(X.shape[0], rows, replace=False))
        return X[keep].toarray().astype(np.float32), y[keep], "euclidean"
    if name == "rcv1":
        from dask_ssl.data.generators import rcv1_like

        X, y = rcv1_like(n_rows=rows, seed=0)
        return sp.csr_matrix(X, dtype=np.float32), np.asarray(y), "cosine"
    raise ValueError(name)


_KDD99_PATH = KDD99


def _cpu():
    t = os.times()
    return t.user + t.system


def _edge_share(X, ind, k):
    from sklearn.neighbors import kneighbors_graph

    E = kneighbors_graph(X, k, mode="connectivity", include_self=False)
    E = E.maximum(E.T).tocsr()
    n = ind.shape[0]
    A = sp.csr_matrix((np.ones(ind.size), ind.ravel(), np.arange(0, ind.size + 1, k)),
                      shape=(n, n))
    A = A.maximum(A.T)
    return E.multiply(A).nnz / E.nnz


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", nargs="+", default=["g50c:10000"])
    ap.add_argument("--budget", type=int, default=None, help="build_knn search_budget")
    ap.add_argument("--budget-max", type=int, default=None, help="build_knn search_budget_max")
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--edges", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--kdd99", default=str(KDD99), help="the KDD99 10%% file")
    args = ap.parse_args()
    global _KDD99_PATH
    _KDD99_PATH = args.kdd99
    print(f"load {os.getloadavg()}", flush=True)
    with local_cluster(2) as client:
        warm = RowBlocks.from_array(np.random.default_rng(0).normal(size=(3000, 5)).astype(
            np.float32), client=client, n_blocks=2)
        build_knn(warm, 10, exact_below=0, random_state=0)
        for spec in args.data:
            name, rows = spec.split(":")
            X, y, metric = _load(name, int(rows))
            data = RowBlocks.from_array(X, client=client, n_blocks=2, y=y)
            best = None
            for _ in range(args.repeat):
                c0 = sum(client.run(_cpu).values())
                t = time.perf_counter()
                opts = {} if args.budget_max is None else {"search_budget_max": args.budget_max}
                neigh = build_knn(data, 10, metric=metric, search_budget=args.budget,
                                  random_state=0, **opts)
                wall = time.perf_counter() - t
                cpu = sum(client.run(_cpu).values()) - c0
                best = cpu if best is None else min(best, cpu)
            rows_ = sample_rows(data.n_rows, args.samples, 0)
            ind, _ = neigh.gather()
            q = score_neighbors(data, rows_, ind[rows_], metric, labels=y,
                                exact=exact_neighbors(data, rows_, 10, metric))
            extra = ""
            if args.edges and name in ("g50c", "moons") and int(rows) <= 20000:
                extra = f" exact-edges {_edge_share(X, ind, 10):.4f}"
            print(f"{spec} budget={args.budget} max={args.budget_max} cpu {best:.1f} s wall {wall:.1f} s recall@10 "
                  f"{q.recall:.4f} agreement {q.agreement:.4f}{extra} load "
                  f"{os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
