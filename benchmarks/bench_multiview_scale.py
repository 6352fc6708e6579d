"""Multi-view learning at scale (issue 27): CoRLS and CoLapRLS on two views held as co-located row
blocks, next to single-view LinearLapRLS, TSVM and GraphTransduction on the same labels.

    python benchmarks/bench_multiview_scale.py [--rows 200000] [--labels 100] \
        [--components 300] [--gamma-C auto,0.1] [--split parity] \
        [--methods corls-nystrom,corls-linear,...]

Data: RCV1-like text (:func:`dask_ssl.data.rcv1_like`) made on the workers; its vocabulary split
into two disjoint halves of columns gives the two views (each block's two halves are cut on the
block's worker: :class:`~dask_ssl.multiview.blocks.MultiViewBlocks`, no row moves). The halves
are the even and the odd columns (``--split parity``): the generator draws every topic's words
from the ranks below ``n_features / 2``, so the first and second halves of the columns
(``--split contiguous``) leave the second view without a topic word (on 3000 rows, 100 labels:
12% error from the first half alone, 47% from the second).

Methods: ``corls-nystrom`` CoRLS on ``--components`` Nystrom RBF features per view (Gram path,
``gamma_C="auto"`` by exact leave-one-out); ``corls-linear`` CoRLS on the views' rows (linear
kernels, CG path, one fit per ``--gamma-C``); ``colap-linear`` CoLapRLS with LinearLapRLS per
view on the mean of the views' kNN graphs (``gamma_I="auto"``); ``colap-nystrom`` the same with
Nystrom LapRLS per view; ``laprls`` single-view LinearLapRLS on all columns with its own graph;
``tsvm`` (gamma' 10, the unlabeled positive share given); ``transduction`` GraphTransduction on
the single-view graph. The kNN graphs (cosine, k = ``--neighbors``) are built once, timed apart,
and given to the fits. Prints fit seconds, round trips (of the data's row blocks; the graph
solves of GraphTransduction run on the graph's blocks and are not counted), iterations and the
error on the unlabeled rows.

Measured 2026-11-26 on the shared 2-core machine, 2 workers, 100 stratified labels (seed 0),
gamma_A 1e-3, m = 300 linear-kernel Nystrom features per view, under a load average of 8 to 25
from other jobs (seconds are inflated accordingly):

    50 000 rows (--gamma-C auto,0.1,1, all methods; load 7.7 -> 14.8):
      CoRLS Nystrom, gamma_C auto (LOO: 0)        18.8 s,  2 trips      10.6 %
      CoRLS linear, gamma_C auto (4-fold CV: 0)   23.5 s, 34 trips      14.5 %
      CoRLS linear, gamma_C 0.1 / 1                1.8 / 2.0 s, CG     14.5 / 14.3 %
      CoLapRLS linear (LinearLapRLS per view)     173.9 s + graphs 112 s 14.5 % (gamma_I 0, 0)
      CoLapRLS Nystrom                             37.0 s + graphs 112 s 10.8 % (gamma_I 0, 0)
      LinearLapRLS, all columns                   202.4 s + graph 67 s  16.7 % (gamma_I 0)
      TSVM, all columns                            66.1 s               2.0 %
      GraphTransduction, all columns              100.8 s + graph 67 s   1.7 %
    200 000 rows (load 12 -> 26):
      CoRLS Nystrom, gamma_C auto (LOO: 0)        49.2 s,  2 trips      14.7 %
      CoRLS linear, gamma_C auto (4-fold CV: 0)  107.6 s, 35 trips      16.6 %
      CoLapRLS Nystrom                            138.5 s + graphs 503 s 15.8 % (gamma_I 0, 0)
      TSVM, all columns                           410.7 s               1.4 %

With 100 labels the held-out labeled rows chose no coupling (gamma_C 0: one RLS per view) and
no graph term (gamma_I 0) on these views; the coupled fits that were given a coupling erred
about as often (gamma_C 1: 14.3% against 14.5%). On the first and second halves of the columns
(``--split contiguous``) a coupling hurt: on 10 000 rows 16% at 0, 42% at gamma_C 10, view 2
dragging view 1 towards its own chance-level outputs.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from _common import local_cluster, worker_peak_rss


def _columns(i, X, cols):
    return X[:, cols].tocsr()


def two_views(blocks, split):
    """Two disjoint halves of the columns of ``blocks`` as a MultiViewBlocks, cut on the
    workers: the even and odd columns (``"parity"``) or the first and second halves."""
    from dask_ssl.linalg import RowBlocks
    from dask_ssl.multiview.blocks import MultiViewBlocks

    d = blocks.n_features
    if split == "parity":
        halves = [np.arange(0, d, 2), np.arange(1, d, 2)]
    else:
        halves = [np.arange(d // 2), np.arange(d // 2, d)]
    views = []
    for cols in halves:
        futures = blocks.submit(_columns, cols)
        blocks.wait(futures)
        views.append(RowBlocks(blocks.client, futures, blocks.sizes.copy(), cols.size, True))
    return MultiViewBlocks(views, ("view 1", "view 2"), blocks.labels, 0)


def _couplings(text):
    return [v if v == "auto" else float(v) for v in text.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--labels", type=int, default=100)
    ap.add_argument("--components", type=int, default=300, help="Nystrom m per view")
    ap.add_argument("--gamma-A", dest="gamma", type=float, default=1e-3)
    ap.add_argument("--gamma-C", dest="gamma_C", type=_couplings, default=["auto"],
                    help="gamma_C of corls-linear, comma-separated, one fit each ('auto': "
                         "4-fold cross-validation on the CG path)")
    ap.add_argument("--kernel", default="linear",
                    help="kernel of the Nystrom features per view (the RBF's default width is "
                         "too narrow on these tf-idf halves: chance-level errors)")
    ap.add_argument("--split", choices=["parity", "contiguous"], default="parity",
                    help="the views: even / odd columns, or first / second half")
    ap.add_argument("--neighbors", type=int, default=10)
    ap.add_argument("--blocks", type=int)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--methods", default="corls-nystrom,corls-linear,colap-linear,"
                                         "colap-nystrom,laprls,tsvm,transduction")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    methods = args.methods.split(",")
    from dask_ssl.data import rcv1_like, stratified_split
    from dask_ssl.graph import knn_graph
    from dask_ssl.models import TSVM, GraphTransduction, LinearLapRLS
    from dask_ssl.multiview import CoLapRLS, CoRLS

    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
          f"{os.getloadavg()[2]:.2f} on {os.cpu_count()} cores", flush=True)
    graph_kw = dict(metric="cosine", weights="cosine")
    with local_cluster(args.workers) as client:
        t0 = time.perf_counter()
        blocks = rcv1_like(n_rows=args.rows, client=client, n_blocks=args.blocks)
        y = blocks.gather_labels()
        mv = two_views(blocks, args.split)
        print(f"RCV1-like: {blocks.n_rows} x {blocks.n_features} in {blocks.n_blocks} blocks, "
              f"views {mv.n_features} ({args.split} split, made in {time.perf_counter() - t0:.1f} s), gamma_A = "
              f"{args.gamma}, workers = {args.workers}", flush=True)
        split = stratified_split(y, n_labeled=args.labels, seed=args.seed)
        y_train = split.y_train(y, marker=0)
        unl = y_train == 0
        r = float(np.mean(y[unl] > 0))
        graphs, graph_s = {}, {}
        uses = {"colap-linear", "colap-nystrom"} & set(methods)
        for name, data in ([("view 1", mv.views[0]), ("view 2", mv.views[1])]
                           if uses else []) + (
                [("all columns", blocks)] if {"laprls", "transduction"} & set(methods) else []):
            t0 = time.perf_counter()
            graphs[name] = knn_graph(data, args.neighbors, random_state=args.seed, **graph_kw)
            graph_s[name] = time.perf_counter() - t0
            print(f"kNN graph on {name} (cosine, k = {args.neighbors}): {graph_s[name]:.1f} s",
                  flush=True)
        view_graphs = [graphs.get("view 1"), graphs.get("view 2")]
        lap = dict(gamma_A=args.gamma, graph_normalization="none", n_neighbors=args.neighbors,
                   unlabeled=0, client=client, random_state=args.seed, **graph_kw)
        runs = []
        for name in methods:
            if name == "corls-nystrom":
                runs.append((f"CoRLS nystrom m={args.components}", lambda: CoRLS(
                    gamma_A=args.gamma, n_components=args.components, kernel=args.kernel,
                    unlabeled=0,
                    client=client, random_state=args.seed), mv, {}, 0.0))
            elif name == "corls-linear":
                runs += [(f"CoRLS linear gC={g}", lambda g=g: CoRLS(
                    gamma_A=args.gamma, gamma_C=g, kernel="linear", unlabeled=0,
                    client=client), mv, {}, 0.0) for g in args.gamma_C]
            elif name == "colap-linear":
                runs.append(("CoLapRLS linear", lambda: CoLapRLS(
                    kernel="linear", max_iter=1000, **lap), mv, {"graphs": view_graphs},
                             graph_s["view 1"] + graph_s["view 2"]))
            elif name == "colap-nystrom":
                runs.append((f"CoLapRLS nystrom m={args.components}", lambda: CoLapRLS(
                    n_components=args.components, kernel=args.kernel, **lap), mv, {"graphs": view_graphs},
                             graph_s["view 1"] + graph_s["view 2"]))
            elif name == "laprls":
                runs.append(("LinearLapRLS (1 view)", lambda: LinearLapRLS(p=1, **lap), blocks,
                             {"graph": graphs["all columns"]}, graph_s["all columns"]))
            elif name == "tsvm":
                runs.append(("TSVM (1 view)", lambda: TSVM(
                    gamma_A=args.gamma, gamma_u=10.0, pos_fraction=r, unlabeled=0,
                    client=client), blocks, {}, 0.0))
            elif name == "transduction":
                runs.append(("GraphTransduction", lambda: GraphTransduction(
                    class_balance="labeled", unlabeled=0, client=client, **graph_kw), blocks,
                             {"graph": graphs["all columns"]}, graph_s["all columns"]))
        print(f"{'method':28s} {'fit s':>7s} {'+graph s':>8s} {'trips':>6s} {'iters':>6s} "
              f"{'unl. error %':>12s} {'peak RSS MiB':>12s}  chosen", flush=True)
        for name, make, data, extra, gs in runs:
            trips0 = sum(v.round_trips for v in mv.views) + blocks.round_trips
            est = make()
            t0 = time.perf_counter()
            est.fit(data, y_train, **extra)
            fit_s = time.perf_counter() - t0
            if isinstance(est, CoLapRLS):
                # LapRLS on Nystrom features does not count its inner fit's round trips
                counted = [getattr(e, "round_trips_", None) for e in est.estimators_]
                trips = "-" if None in counted else sum(counted)
                iters = [getattr(e, "n_iter_", None) for e in est.estimators_]
                chosen = f"gamma_I {np.round(est.gamma_I_, 6).tolist()}"
            elif isinstance(est, CoRLS):
                trips, iters = est.round_trips_, est.n_iter_
                chosen = f"gamma_C {est.gamma_C_:g}" + "".join(
                    f", {r['criterion']} errors {r['errors']} at rho {r['rho']:g}"
                    for r in est.selection_ if r["chosen"])
            else:
                trips = getattr(est, "round_trips_", None)
                if trips is None:
                    trips = sum(v.round_trips for v in mv.views) + blocks.round_trips - trips0
                iters = getattr(est, "n_iter_", None)
                chosen = (f"gamma_I {est.gamma_I_:.4g}" if hasattr(est, "gamma_I_") else "")
            if isinstance(est, (CoRLS, CoLapRLS, GraphTransduction)):
                pred = est.transduction_
            else:
                pred = est.predict(data)
            err = 100 * np.mean(pred[unl] != y[unl])
            trips = "-" if isinstance(est, GraphTransduction) else trips
            print(f"{name:28s} {fit_s:7.1f} {gs:8.1f} {trips!s:>6s} {iters!s:>6s} {err:12.3f} "
                  f"{worker_peak_rss(client):12.0f}  {chosen}", flush=True)
        print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
              f"{os.getloadavg()[2]:.2f}", flush=True)


if __name__ == "__main__":
    main()
