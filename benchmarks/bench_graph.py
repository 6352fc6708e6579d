"""Laplacian product throughput and halo bytes; GraphTransduction vs scikit-learn LabelSpreading.

    python benchmarks/bench_graph.py laplacian --rows 494021
    python benchmarks/bench_graph.py transduction --rows 100000 --labeled 0.01
    python benchmarks/bench_graph.py solve --rows 50000 --n-labels 500

``laplacian``: a kNN-like random graph (10 neighbours a row drawn within a window, so that row
order carries locality), a shuffled copy without it, the kNN graph of KDD99 (k = 10, heat
weights) and, with ``--graphs rcv1``, the cosine kNN graph of RCV1-like text, each split over a 2-worker LocalCluster. Throughput of the per-block kernel
``d x - A v`` (the work of a product) on the operator's first block, in the operator's row order
and in the data's, and of whole products through the workers, against the copy bandwidth of
NumPy measured in the same run; bytes a product exchanges with halos against sending every block
the rest of the vector.

``transduction``: the KDD99 10% sample (attack vs normal), a fraction of rows labeled:
GraphTransduction (approximate kNN graph on the workers + block CG, the rows' move to the
workers included; the workers' JIT warm-up timed apart) vs ``LabelSpreading(kernel='knn')`` in
one process at its best here: ``n_jobs`` = our cores (2) and ``max_iter`` raised from its 30 to
1000 so it stops by its own convergence test (iterations and whether it converged printed);
time, per-core ratio and error on the unlabeled rows.

``solve``: a KDD99 sample of ``--rows`` rows (attack vs normal), ``--n-labels`` labeled. First
``GraphTransduction()`` with its defaults as a new user runs it (``--thesis``: the thesis
method, the default before the selection on the labeled rows): it starts its own 2-worker
LocalCluster inside ``fit`` (cluster start, JIT compilation, kNN graph and solve all timed), then
once more on that cluster (warm), next to ``LabelSpreading(kernel='knn', n_jobs=2)`` on the same
rows, run to its convergence as in ``transduction``. Then, on one kNN graph, the block-CG solve to relative residual ``--tol`` (passes, time
after the graph, final residual, error) for three heat widths (the default ``4t = mean(d^2)``,
the former default ``4t = (mean d)^2``, local scaling ``t="local"``), with and without the
block-Jacobi preconditioner, on METIS blocks and on the data's blocks.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import scipy.sparse as sp

from dask_ssl.graph._products import apply_rows, with_room
from dask_ssl.graph.laplacian import LaplacianOperator
from dask_ssl.graph.weights import Graph
from dask_ssl.linalg import workerstate

from _common import KDD99, load_average, local_cluster



def label_spreading(X, ys, args):
    """scikit-learn's ``LabelSpreading(kernel='knn', n_neighbors=10)`` at its best on this
    host: ``n_jobs`` = our cores (``--peer-jobs``, default 2: the 2 single-threaded workers)
    for its neighbour search, and ``max_iter`` raised (``--peer-max-iter``, default 1000, its
    default 30) so that it runs to its own convergence test; whether it converged is returned.
    Returns (seconds, fitted model, converged)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.semi_supervised import LabelSpreading

    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        ls = LabelSpreading(kernel="knn", n_neighbors=10, n_jobs=args.peer_jobs,
                            max_iter=args.peer_max_iter).fit(X, ys)
    secs = time.perf_counter() - t
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return secs, ls, converged


def _peer_name(args, ls, converged):
    return (f"LabelSpreading(kernel='knn', n_jobs={args.peer_jobs}), {ls.n_iter_} iterations, "
            + ("converged (its test: sum of changes < tol 1e-3)" if converged
               else f"NOT converged at max_iter={args.peer_max_iter}"))


def copy_bandwidth(n_bytes=400_000_000, repeats=5) -> float:
    """GB/s of ``np.copyto`` (bytes read + bytes written)."""
    a = np.ones(n_bytes // 8)
    b = np.empty_like(a)
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t)
    return 2 * a.nbytes / best / 1e9


def local_graph(n, k, window, rng):
    rows = np.repeat(np.arange(n), k)
    cols = np.clip(rows + rng.integers(-window, window + 1, size=rows.size), 0, n - 1)
    keep = rows != cols
    W = sp.csr_matrix((rng.random(keep.sum()), (rows[keep], cols[keep])), shape=(n, n))
    return W.maximum(W.T).tocsr()


def kernel_rate(A, d, v, n_b, repeats=5, kernel="numba"):
    """Best-of rate of one block's product ``d x - A [x; halo]``: nnz/s and GB/s, counting the
    bytes a product must touch once (A, the vectors read, the output written)."""
    x, halo = np.ascontiguousarray(v[:n_b]), np.ascontiguousarray(v[n_b:])
    if kernel == "numba":
        x = with_room(A, x)  # as the operator keeps its vectors
        apply_rows(A, d, x, [halo])  # compile / warm
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        if kernel == "numba":
            apply_rows(A, d, x, [halo])
        else:
            d[:, None] * x - A @ np.vstack([x, halo])
        best = min(best, time.perf_counter() - t)
    touched = A.data.nbytes + A.indices.nbytes + A.indptr.nbytes + v.nbytes + 2 * n_b * v.shape[1] * 8
    return A.nnz / best, touched / best / 1e9


def _operator_block(i, W, token):
    """The operator's matrix and diagonal of block ``i`` (rows in the block's order)."""
    st = workerstate.get(token, i)
    return st["A"], st["d"]


def _data_order_block(G, n_b):
    """Block 0 of ``G`` as the operator would hold it without reordering its rows."""
    block = G[:n_b]
    halo = np.unique(block.indices[block.indices >= n_b])
    local = np.where(block.indices < n_b, block.indices, n_b + np.searchsorted(halo, block.indices))
    return sp.csr_matrix((block.data, local, block.indptr), shape=(n_b, n_b + halo.size))


def laplacian_graphs(args, client, rng):
    """(name, scipy W, Graph) for each graph of ``--graphs``."""
    for name in args.graphs:
        if name == "kdd99":
            if not KDD99.exists():
                print(f"kdd99: skipped, {KDD99} not found")
                continue
            from dask_ssl.data.kdd99 import read_kdd99
            from dask_ssl.graph.weights import knn_graph
            from dask_ssl.linalg import RowBlocks

            X = sp.csr_matrix(read_kdd99(KDD99)[0]).toarray().astype(np.float32)[:args.rows]
            graph = knn_graph(RowBlocks.from_array(X, client=client, n_blocks=2), 10,
                              random_state=0)
            yield "KDD99 kNN", graph.to_scipy(), graph
            continue
        if name == "rcv1":
            from dask_ssl.data.generators import rcv1_like
            from dask_ssl.graph.weights import knn_graph
            from dask_ssl.linalg import RowBlocks

            X, _ = rcv1_like(n_rows=args.rcv1_rows, seed=0)
            graph = knn_graph(RowBlocks.from_array(X, client=client, n_blocks=2), 10,
                              metric="cosine", weights="cosine", random_state=0)
            yield f"RCV1-like kNN ({args.rcv1_rows} rows)", graph.to_scipy(), graph
            continue
        W = local_graph(args.rows, 10, 2000, rng)
        if name == "shuffled":
            perm = rng.permutation(args.rows)
            W = W[perm][:, perm].tocsr()
        yield name, W, Graph.from_scipy(W, client=client, n_blocks=2)


def bench_laplacian(args, client):
    bw = copy_bandwidth()
    print(f"NumPy copy bandwidth: {bw:.2f} GB/s (one core)")
    rng = np.random.default_rng(0)
    print("| graph | cols | kernel | Mnnz/s | GB/s | % of copy | product ms (workers) "
          "| halo MB | broadcast MB |")
    for name, G, graph in laplacian_graphs(args, client, rng):
        op = LaplacianOperator(graph, normalized=True, partition=args.partition)
        n_b = int(op.W.sizes[0])
        A, d = op.W.call(_operator_block, op.token)[0]
        # The same block in the data's row order, to show what the block order buys.
        A_data = _data_order_block(G if op.order is None else G[op.order][:, op.order], n_b)
        for c in args.cols:
            v = rng.standard_normal((A.shape[1], c))
            rates = {kern: kernel_rate(A, d, v, n_b, kernel=kern) for kern in ("scipy", "numba")}
            rates["numba, data order"] = kernel_rate(A_data, d, v, n_b)
            store = op.new_store()
            op.scatter(store, "x", rng.standard_normal((graph.n_rows, c)))
            op.apply(store, "x", "y")  # compile / warm
            t = time.perf_counter()
            for _ in range(args.repeats):
                op.apply(store, "x", "y")
            per = (time.perf_counter() - t) / args.repeats
            op.release(store)
            h, b = op.bytes_per_product(c)
            for kern, (nnz_rate, gbs) in rates.items():
                print(f"| {name} | {c} | {kern} | {nnz_rate / 1e6:.0f} | {gbs:.2f} | "
                      f"{100 * gbs / bw:.0f}% | {per * 1e3:.0f} | {h / 1e6:.1f} | "
                      f"{b / 1e6:.1f} |")
        op.close()


def bench_transduction(args, client):
    from dask_ssl.data.kdd99 import read_kdd99
    from dask_ssl.graph.weights import knn_graph
    from dask_ssl.linalg import RowBlocks
    from dask_ssl.models.graph_transduction import GraphTransduction

    X, y = read_kdd99(KDD99)
    X = sp.csr_matrix(X).toarray().astype(np.float32)
    y = (np.asarray(y) > 0).astype(int)
    rng = np.random.default_rng(0)
    if args.rows < X.shape[0]:
        keep = np.sort(rng.choice(X.shape[0], args.rows, replace=False))
        X, y = X[keep], y[keep]
    ys = np.full(y.shape, -1)
    lab = rng.choice(y.size, max(2, int(args.labeled * y.size)), replace=False)
    ys[lab] = y[lab]
    unl = ys == -1
    print(f"KDD99 {X.shape}, {lab.size} labeled")
    # JIT warm-up of the workers' kNN indexes, kept out of the timing (timed apart).
    t = time.perf_counter()
    GraphTransduction(client=client, n_neighbors=10, tol=1e-2).fit(X[:6000], np.r_[0, 1, [-1] * 5998])
    t_warm = time.perf_counter() - t
    t = time.perf_counter()
    graph = knn_graph(RowBlocks.from_array(X, client=client), 10, random_state=0)
    t_knn = time.perf_counter() - t
    # the thesis method beside LabelSpreading: ch. 5's system weight args.gamma (l gamma_I_eff
    # with gamma_I as given), no prior, no balancing
    gt = GraphTransduction(gamma_I=args.gamma / lab.size, graph_normalization="none",
                           prior=None, unlabeled_weight=0.0, class_balance=None,
                           metric="euclidean", weights="heat", n_neighbors=10, tol=args.tol,
                           max_iter=args.max_iter, client=client).fit(X, ys, graph=graph)
    t_gt = time.perf_counter() - t
    e_gt = np.mean(gt.transduction_[unl] != y[unl])
    print(f"ours: {t_gt:.1f} s (kNN graph {t_knn:.1f} s, block CG {t_gt - t_knn:.1f} s: "
          f"{gt.n_iter_} passes, {1e3 * (t_gt - t_knn) / max(gt.n_iter_, 1):.1f} ms each, "
          f"relative residuals {[f'{v:.2e}' for v in gt.history_[-1]]}), "
          f"error {100 * e_gt:.2f}%")
    t_ls, ls, converged = label_spreading(X, ys, args)
    e_ls = np.mean(ls.transduction_[unl] != y[unl])
    print(f"{_peer_name(args, ls, converged)}: {t_ls:.1f} s, error {100 * e_ls:.2f}%")
    print(f"load average {load_average()}; JIT warm-up of our workers (not in 'ours s'): "
          f"{t_warm:.1f} s")
    print("| n | labeled | ours s (graph + CG) | LS s (iterations, converged) | ratio | per core "
          "| ours error % | LS error % |")
    print(f"| {y.size} | {lab.size} | {t_gt:.1f} ({t_knn:.1f} + {t_gt - t_knn:.1f}) | {t_ls:.1f} "
          f"({ls.n_iter_}, {'yes' if converged else 'no'}) | {t_gt / t_ls:.2f} | "
          f"{t_gt * 2 / (t_ls * args.peer_jobs):.2f} | {100 * e_gt:.2f} | {100 * e_ls:.2f} |")


def _kdd99_sample(rows, n_labels, seed=0):
    from dask_ssl.data.kdd99 import read_kdd99

    X, y = read_kdd99(KDD99)
    X = sp.csr_matrix(X).toarray().astype(np.float32)
    y = (np.asarray(y) > 0).astype(int)
    rng = np.random.default_rng(seed)
    if rows < X.shape[0]:
        keep = np.sort(rng.choice(X.shape[0], rows, replace=False))
        X, y = X[keep], y[keep]
    ys = np.full(y.shape, -1)
    lab = rng.choice(y.size, n_labels, replace=False)
    ys[lab] = y[lab]
    return X, y, ys


def bench_solve(args):
    from dask_ssl.cluster import get_client
    from dask_ssl.graph.weights import build_graph
    from dask_ssl.models.graph_transduction import GraphTransduction

    X, y, ys = _kdd99_sample(args.rows, args.n_labels)
    unl = ys == -1
    print(f"KDD99 sample {X.shape}, {int((~unl).sum())} labeled, tol {args.tol}")
    err = lambda labels: 100 * np.mean(labels[unl] != y[unl])  # noqa: E731
    runs = []
    # --thesis: the cold and warm fits time the thesis method (ch. 5's system at weight 1, no
    # prior, no balancing), the default before gamma_I, the prior and the balance were chosen
    # on the labeled rows; the README's solve table was measured so
    pinned = (dict(gamma_I=1.0 / np.sum(~unl), graph_normalization="none", prior=None,
                   unlabeled_weight=0.0, class_balance=None) if args.thesis else {})
    name = "GraphTransduction(thesis method)" if args.thesis else "GraphTransduction()"
    for run in ("cold (own cluster started in fit)", "warm (same cluster)"):
        t = time.perf_counter()
        gt = GraphTransduction(tol=args.tol, random_state=0, **pinned).fit(X, ys)
        runs.append((run, time.perf_counter() - t, gt.n_iter_, err(gt.transduction_)))
    print("| estimator | s | iterations | error % |")
    for run, secs, passes, e in runs:
        print(f"| {name}, {run} | {secs:.1f} | {passes} | {e:.2f} |")
    if not args.no_peer:
        t_ls, ls, converged = label_spreading(X, ys, args)
        print(f"| {_peer_name(args, ls, converged)} | {t_ls:.1f} | {ls.n_iter_} | "
              f"{err(ls.transduction_):.2f} |")
        print(f"GraphTransduction / LabelSpreading time: cold {runs[0][1] / t_ls:.2f}, warm "
              f"{runs[1][1] / t_ls:.2f} (load {load_average()})")

    client = get_client()  # the cluster GraphTransduction started
    neigh = gt.graph_.neighbors
    dist = neigh.gather()[1]
    old_t = float(np.mean(dist[np.isfinite(dist)].astype(np.float64)) ** 2 / 4)
    print("| width | partition | preconditioner | CG iterations | solve s | residual | error % |")
    widths = (("4t = mean(d^2) (default)", None), ("4t = (mean d)^2", old_t), ("local", "local"))
    for name, t_width in widths[:1] if args.default_width else widths:
        graph = gt.graph_ if t_width is None else build_graph(neigh, t=t_width)
        for partition in ("metis", None):
            for pre in ("block", None):
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    # the thesis method's system (weight 1), whose solve this times
                    fit = GraphTransduction(gamma_I=1.0 / np.sum(~unl),
                                            graph_normalization="none", prior=None,
                                            unlabeled_weight=0.0, class_balance=None,
                                            tol=args.tol, max_iter=args.max_iter, t=t_width,
                                            partition=partition, preconditioner=pre,
                                            client=client).fit(X, ys, graph=graph)
                secs = time.perf_counter() - t
                print(f"| {name} | {partition} | {pre} | {fit.n_iter_} | {secs:.1f} | "
                      f"{fit.history_[-1].max():.1e} | {err(fit.transduction_):.2f} |",
                      flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["laplacian", "transduction", "solve"])
    ap.add_argument("--rows", type=int, default=494021)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--graphs", nargs="+", default=["row-local", "shuffled", "kdd99"],
                    choices=["row-local", "shuffled", "kdd99", "rcv1"],
                    help="laplacian: synthetic graphs, the kNN graph of KDD99's first --rows "
                         "rows, the cosine kNN graph of RCV1-like data")
    ap.add_argument("--rcv1-rows", type=int, default=200000)
    ap.add_argument("--partition", choices=["none", "metis"], default="none",
                    help="laplacian: keep the graph's blocks, or re-split them by METIS")
    ap.add_argument("--cols", type=int, nargs="+", default=[1, 4, 16, 64],
                    help="right-hand sides per product (classes x hyperparameter values)")
    ap.add_argument("--labeled", type=float, default=0.01)
    ap.add_argument("--n-labels", type=int, default=500, help="solve: labeled rows")
    ap.add_argument("--gamma-I", dest="gamma", type=float, default=1.0)
    ap.add_argument("--tol", type=float, default=None,
                    help="block-CG tolerance (default 1e-4 for transduction, 1e-6 for solve)")
    ap.add_argument("--max-iter", type=int, default=2000, help="block-CG passes")
    ap.add_argument("--peer-jobs", type=int, default=2,
                    help="LabelSpreading n_jobs (default 2: our 2 single-threaded workers)")
    ap.add_argument("--peer-max-iter", type=int, default=1000,
                    help="LabelSpreading max_iter (its default is 30); whether it converged "
                         "is printed")
    ap.add_argument("--no-peer", action="store_true",
                    help="solve: skip LabelSpreading (about 20 minutes at 494 k rows)")
    ap.add_argument("--default-width", action="store_true",
                    help="solve: only the default heat width in the solver table")
    ap.add_argument("--thesis", action="store_true",
                    help="solve: time the thesis method cold and warm (gamma_I = 1/l with "
                         "graph_normalization 'none', no prior, no balancing: the default "
                         "before it chose them on the labeled rows) instead of "
                         "GraphTransduction()")
    args = ap.parse_args()
    args.partition = None if args.partition == "none" else args.partition
    if args.tol is None:
        args.tol = 1e-6 if args.what == "solve" else 1e-4
    if args.what == "solve":  # starts its own cluster, as GraphTransduction() does
        bench_solve(args)
        return
    with local_cluster(2) as client:
        (bench_laplacian if args.what == "laplacian" else bench_transduction)(args, client)


if __name__ == "__main__":
    main()
