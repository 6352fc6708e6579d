"""LapRLS and LapSVM in the primal on kernel row blocks vs dense single-process solves.

    python benchmarks/bench_manifold.py --sizes 2000 5000 10000 20000
    python benchmarks/bench_manifold.py --sizes 50000 --dense-max 0     # the largest n

g50c-like data (two 50-dimensional Gaussians, Bayes error 5%), 1% of the rows labeled (both
classes), RBF kernel, heat-weighted kNN graph, normalized Laplacian to the power p. Per n, on a
fresh 2-worker LocalCluster:

- ``graph``: the kNN graph built on the workers (reported apart: both solvers use it);
- ``primal``: :func:`dask_ssl.solvers.primal.solve_primal` (each kernel pair computed once,
  kept in row bands on the workers, float32; PCG with early stopping), squared loss (LapRLS)
  and squared hinge (LapSVM);
- ``dense``: in a separate process, the same graph gathered: Eq 2.12 by ``np.linalg.solve``
  (LapRLS), and LapSVM by the dual of Eq 2.19-2.21, ``SVC(kernel="precomputed", C=1/l)`` on
  ``J K (2 gamma_A I + 2 gamma_I L K)^-1 J^T`` (hinge loss, the thesis's solver).

With ``--lamda-python`` (the interpreter of a venv where LAMDA-SSL installs; it is no
dependency of dask-ssl), LAMDA-SSL's LapSVM runs beside them in a subprocess for n up to
``--lamda-max``: the same rows, labels, kNN graph, RBF kernel, gamma_A and gamma_I (it uses the
same ``gamma_I / (l + u)^2`` convention, hinge loss, dense inverse of the n x n system, dual by
``scipy.optimize.minimize``); its graph term is always ``D - W`` to the power 1, so with
``--unnormalized --p 1`` all three solve the same equations. A venv where it installs
(lamda-ssl 1.0.2 reads ``ClassifierMixin._estimator_type``, which recent scikit-learn no longer
has, so scikit-learn 1.5.2 there; torch pinned to the CPU build so that no CUDA packages come)::

    python3 -m venv .venv-lamda
    .venv-lamda/bin/pip install torch==2.13.0
    echo torch==2.13.0 > /tmp/pin.txt
    .venv-lamda/bin/pip install lamda-ssl==1.0.2 scikit-learn==1.5.2 -c /tmp/pin.txt
    python benchmarks/bench_manifold.py --sizes 2000 5000 --losses squared_hinge \
        --lamda-python .venv-lamda/bin/python [--unnormalized --p 1]

Error is on the unlabeled rows. Peak memory is each process's largest resident set
(``ru_maxrss``): the larger worker, against half of one dense ``n x n`` float64 matrix (the
issue's target), and the dense process. Hyperparameters in the thesis's convention:
``gamma_I`` is divided by ``n^2`` (``(u + l)^2``) before it enters the objective.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from _common import local_cluster


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def labeled_rows(y, fraction, rng):
    lab = np.zeros(y.size, bool)
    for c in np.unique(y):
        rows = np.flatnonzero(y == c)
        lab[rng.choice(rows, max(1, int(round(fraction * rows.size))), replace=False)] = True
    return lab


def laplacian_power(W, p, normed=True):
    from scipy.sparse.csgraph import laplacian

    L = sp.csr_matrix(laplacian(W, normed=normed))
    M = L
    for _ in range(p - 1):
        M = M @ L
    return M


def dense_solve(loss, X, y, lab, W, args, out):
    """One process: K, then Eq 2.12 (squared) or the LapSVM dual (hinge), timed from X."""
    from sklearn.svm import SVC

    from dask_ssl.kernels.base import kernel_matrix

    t0 = time.perf_counter()
    n, l = X.shape[0], int(lab.sum())
    gA, gI = args.gamma_A, args.gamma_I / n ** 2
    K = kernel_matrix(X, kernel="rbf", kernel_params={"gamma": args.rbf_gamma})
    MK = laplacian_power(W, args.p, not args.unnormalized) @ K
    Y = y * lab
    if loss == "squared":
        A = MK  # overwritten: J K + gamma_A l I + gamma_I l M K
        A *= gI * l
        A[lab] += K[lab]
        A[np.diag_indices(n)] += gA * l
        f = K @ scipy.linalg.solve(A, Y, overwrite_a=True, check_finite=False)
    else:
        B = MK  # overwritten: 2 gamma_A I + 2 gamma_I M K
        B *= 2 * gI
        B[np.diag_indices(n)] += 2 * gA
        JT = np.zeros((n, l))
        JT[np.flatnonzero(lab), np.arange(l)] = 1.0
        S = scipy.linalg.solve(B, JT, overwrite_a=True, check_finite=False)
        G = K[lab] @ S
        G = (G + G.T) / 2
        svc = SVC(kernel="precomputed", C=1.0 / l, tol=1e-5).fit(G, y[lab])
        beta = np.zeros(l)
        beta[svc.support_] = svc.dual_coef_[0]  # y_i beta_i
        f = K @ (S @ beta) + svc.intercept_[0]
    out.put({"time": time.perf_counter() - t0, "error": float(np.mean(
        np.sign(f[~lab]) != y[~lab])), "peak_mib": peak_mib()})


def run_dense(loss, X, y, lab, W, args):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=dense_solve, args=(loss, X, y, lab, W, args, q))
    proc.start()
    try:
        return q.get()
    finally:
        proc.join()


def run_lamda(X, y, lab, W, args):
    """LAMDA-SSL's LapSVM in its own interpreter (benchmarks/_lamda_peer.py): a dict with
    time, error and peak_mib, or the reason it failed."""
    W = sp.csr_matrix(W)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "problem.npz"
        np.savez(path, X=X, y=y, labeled=lab, w_data=W.data, w_indices=W.indices,
                 w_indptr=W.indptr, rbf_gamma=args.rbf_gamma, gamma_A=args.gamma_A,
                 gamma_I=args.gamma_I)
        script = Path(__file__).with_name("_lamda_peer.py")
        proc = subprocess.run([args.lamda_python, str(script), str(path)], capture_output=True,
                              text=True, timeout=args.lamda_timeout)
    if proc.returncode != 0:
        return {"failed": proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def worker_peaks(client):
    return client.run(peak_mib)


def warm_up(client, X, y, args, losses):
    """Every step once on a few rows, untimed: the workers compile their numba kernels (kNN,
    Laplacian products per column count, kernel products) once per process."""
    from dask_ssl.graph.weights import knn_graph
    from dask_ssl.solvers.primal import solve_primal
    from dask_ssl.linalg.rowblocks import RowBlocks

    data = RowBlocks.from_array(X, client=client, n_blocks=2)
    graph = knn_graph(data, args.k, weights="heat", random_state=0)
    lab = labeled_rows(y, 0.1, np.random.default_rng(0))
    for loss in losses:
        solve_primal(data, graph, y * lab, lab, kernel_params={"gamma": args.rbf_gamma},
                     gamma_A=args.gamma_A, gamma_I=args.gamma_I / len(y) ** 2, loss=loss,
                     p=args.p, tol=args.tol, max_iter=20, client=client, dtype=args.dtype)


def run_primal(n, X, y, lab, args, losses):
    from dask_ssl.graph.weights import knn_graph
    from dask_ssl.kernels.blocks import KernelBlocks
    from dask_ssl.solvers.primal import solve_primal
    from dask_ssl.linalg.rowblocks import RowBlocks

    rows = {}
    with local_cluster(2) as client:
        warm_up(client, X[:300], y[:300], args, losses)
        data = RowBlocks.from_array(X, client=client, n_blocks=2)
        base = worker_peaks(client)  # a worker's own footprint: imports, compiled kernels
        t = time.perf_counter()
        graph = knn_graph(data, args.k, weights="heat", random_state=0)
        graph_time = time.perf_counter() - t
        W = graph.to_scipy()
        after_graph = worker_peaks(client)
        Y = (y * lab)[:, None]
        for loss in losses:
            t = time.perf_counter()
            K = KernelBlocks(data, kernel="rbf", kernel_params={"gamma": args.rbf_gamma},
                             dtype=args.dtype)
            k_time = time.perf_counter() - t
            res = solve_primal(data, graph, Y, lab, kernel_blocks=K, gamma_A=args.gamma_A,
                               gamma_I=args.gamma_I / n ** 2, loss=loss, normalized=not args.unnormalized,
                               p=args.p, tol=args.tol, max_iter=args.max_iter, client=client,
                               early_stopping=not args.no_early_stopping)
            total = time.perf_counter() - t
            K.close()
            f = res.decision[:, 0]
            rows[loss] = {"time": total, "kernel_time": k_time, "iters": res.n_iter,
                          "newton": int(res.n_newton[0]), "trips": res.round_trips,
                          "early": bool(res.stopped_early[0]),
                          "error": float(np.mean(np.sign(f[~lab]) != y[~lab])),
                          "peak_mib": max(worker_peaks(client).values())}
        end = worker_peaks(client)
    return rows, graph_time, W, base, after_graph, end


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 5000, 10000, 20000])
    ap.add_argument("--losses", nargs="+", default=["squared", "squared_hinge"],
                    choices=["squared", "squared_hinge"])
    ap.add_argument("--labeled", type=float, default=0.01)
    ap.add_argument("--k", type=int, default=10, help="graph neighbours")
    ap.add_argument("--p", type=int, default=2, help="Laplacian power")
    ap.add_argument("--gamma-A", type=float, default=1e-6)
    ap.add_argument("--gamma-I", type=float, default=100.0, help="thesis scale: / n^2")
    ap.add_argument("--rbf-gamma", type=float, default=1.0 / 50)
    ap.add_argument("--tol", type=float, default=1e-9,
                    help="PCG residual; early stopping usually ends first")
    ap.add_argument("--max-iter", type=int, default=2000)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--no-early-stopping", action="store_true")
    ap.add_argument("--dense-max", type=int, default=20000,
                    help="largest n for the dense solves (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--unnormalized", action="store_true",
                    help="graph term with L = D - W (default: the normalized Laplacian)")
    ap.add_argument("--lamda-python", help="python of a venv with LAMDA-SSL: run its LapSVM too")
    ap.add_argument("--lamda-max", type=int, default=5000, help="largest n for LAMDA-SSL")
    ap.add_argument("--lamda-timeout", type=float, default=3600.0, help="seconds per LAMDA run")
    args = ap.parse_args()

    from dask_ssl.data.generators import g50c

    print(f"g50c-like, {args.labeled:.0%} labeled, RBF gamma {args.rbf_gamma}, k = {args.k}, "
          f"p = {args.p} ({'D - W' if args.unnormalized else 'normalized'}), gamma_A = {args.gamma_A}, gamma_I = {args.gamma_I}/n^2, "
          f"tol {args.tol}, {args.dtype} kernel bands, early stopping "
          f"{'off' if args.no_early_stopping else 'on'}")
    header = (f"{'n':>6} {'loss':<14} {'graph s':>8} {'primal s':>9} {'(K rows s)':>10} "
              f"{'iters':>6} {'newton':>6} {'trips':>6} {'err %':>6} {'peak MiB':>9} {'half nn MiB':>11} "
              f"{'dense s':>8} {'err %':>6} {'peak MiB':>9} {'ratio':>6}")
    print(header)
    for n in args.sizes:
        X, y = g50c(n=n, seed=args.seed)
        lab = labeled_rows(y, args.labeled, np.random.default_rng(args.seed))
        rows, graph_time, W, base, after_graph, end = run_primal(n, X, y, lab, args, args.losses)
        half = n * n * 8 / 2 / 2**20
        for loss in args.losses:
            r = rows[loss]
            dense = run_dense(loss, X, y, lab, W, args) if n <= args.dense_max else None
            d = (f"{dense['time']:8.2f} {100 * dense['error']:6.2f} {dense['peak_mib']:9.0f} "
                 f"{r['time'] / dense['time']:6.2f}" if dense else f"{'-':>8} {'-':>6} {'-':>9} {'-':>6}")
            print(f"{n:6d} {loss:<14} {graph_time:8.2f} {r['time']:9.2f} {r['kernel_time']:10.2f} "
                  f"{r['iters']:6d} {r['newton']:6d} {r['trips']:6d} {100 * r['error']:6.2f} {r['peak_mib']:9.0f} "
                  f"{half:11.0f} {d}", flush=True)
        print(f"{'':6} worker peaks MiB (per worker): at start "
              f"{[round(base[w]) for w in sorted(base)]}, after the graph "
              f"{[round(after_graph[w]) for w in sorted(base)]}, at the end "
              f"{[round(end[w]) for w in sorted(base)]}, increase over the start "
              f"{[round(end[w] - base[w]) for w in sorted(base)]}")
        if args.lamda_python and n <= args.lamda_max:
            try:
                peer = run_lamda(X, y, lab, W, args)
            except subprocess.TimeoutExpired:
                peer = {"failed": [f"past --lamda-timeout {args.lamda_timeout:.0f} s"]}
            if "failed" in peer:
                print(f"{'':6} LAMDA-SSL LapSVM failed: {peer['failed'][0]}")
            else:
                print(f"{'':6} LAMDA-SSL LapSVM (hinge, L = D - W, p = 1): {peer['time']:.2f} s, "
                      f"err {100 * peer['error']:.2f} %, peak {peer['peak_mib']:.0f} MiB")
        # the host may be shared with other jobs: the load beside the times
        print(f"{'':6} load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()),
              flush=True)


if __name__ == "__main__":
    main()
