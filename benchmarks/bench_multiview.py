"""Multi-view learning (issue 27): the co-regularized estimators against single views, the
concatenated features and a co-training peer; and Rosenberg's MR vs CoMR protocol.

    python benchmarks/bench_multiview.py                                  # both parts
    python benchmarks/bench_multiview.py --part views --datasets bbcsport --draws 2   # smoke
    python benchmarks/bench_multiview.py --part rosenberg                 # LINES, g50c
    python benchmarks/bench_multiview.py --peer-python /tmp/sslearn-venv/bin/python
    python benchmarks/bench_multiview.py --part coupling --datasets bbcsport,bbc --draws 3

Part "views": multi-class (one-vs-rest), a stratified draw of ``--labels-per-class`` labeled
rows per class per draw (seeds 0..draws-1), error % on the unlabeled rows (transductive). Every
estimator at its defaults (only ``client`` and ``random_state=0`` set); the same prepared views
go to every method:

| name | rows | views | classes | preparation |
|---|---|---|---|---|
| hw | ``--hw-rows`` (600) of HW.mat's 2,000 (a stratified subset, seed 12345; 0: all) | fac, fou, kar, mor, pix, zer | 10 | each view's columns z-scored over all rows |
| bbc | 685 (BBC.mat) | four segments (term counts) | 5 | each view ltc tf-idf ``(1 + log tf) log(n / df)``, rows l2-normalized |
| bbcsport | 544 (bbcsport_2view.mat) | two segments | 5 | as bbc |

Methods, each fitted on the same labels of the same draw:

- ``CoRLS``, ``CoLapRLS``, ``CoMR`` (dask_ssl.multiview) on all the views, defaults.
- Their single-view families. RLS: kernel RLS on one view, RBF kernel of the default width
  (``default_rbf_gamma`` of the view), ``gamma_A`` = CoRLS's default (1e-3): exactly CoRLS at
  ``gamma_C = 0`` for that view, solved here on the labeled rows. LapRLS: ``dask_ssl.models.
  LapRLS`` at its defaults on the view (``gamma_I="auto"``, its own kNN graph). Each family on
  (a) the view with the fewest leave-one-out errors on the labeled rows (RLS: the exact LOO of
  the ridge; LapRLS: the LOO errors of the candidate its selection chose; ties: smaller LOO
  residual, then the first view) - a choice made from the labels alone, its time the sum of
  every view's fit; (b) the oracle: per draw the view with the lowest error on the unlabeled
  rows (not a method, a bound); (c) the views side by side (concatenated features).
- The co-training peer (``--peer-python``, a Python with sslearn installed, run on the same
  views and label draws saved to a file; see ``_cotraining_peer.py``): sslearn's ``CoTraining``
  with LogisticRegression, C tuned per view by leave-one-out on the labeled rows, given the
  two views with the best leave-one-out accuracy; and its base classifier on the better view,
  labeled rows only.

Target per set: each co-regularized method's mean error below that of its family's best view
(chosen by LOO) and the peer's.

Part "rosenberg": Rosenberg's Tables 4.3 / 4.4 protocol, MR vs CoMR at Table 4.2's parameters,
10 random splits, test and unlabeled error %:

- lines: ``dask_ssl.data.lines(seed=split)`` (n = 1002), l = 2 (one a class), u = 500, t = 250
  (the 250 validation rows unused, the parameters being fixed), linear kernel, nn = 10, p = 1;
  MR ``gamma_A = 0.01, gamma_I = 1e-6`` (CoMR at ``gamma_C = inf``), CoMR ``gamma_A = 1e-4,
  gamma_I = 100, gamma_C = 1``.  ``--formulation transductive`` fits CoMR's transductive
  objective (4.3.1), the one Rosenberg's experiments ran; ``--comr-gamma-I`` replaces Table
  4.2's CoMR gamma_I.
- g50c: ``dask_ssl.data.g50c(n=550, seed=0)`` given as two views (features 1-25 and 26-50;
  CoMR's ambient kernel sees them side by side, as Rosenberg's "no feature splitting"), per split
  l = 50 (stratified), u = 338, t = 112 (v = 50 unused), RBF ``sigma = 17.5`` (``gamma = 1 / (2
  sigma^2)``), nn = 50, p = 5; MR ``gamma_A = 1, gamma_I = 100``, CoMR ``gamma_A = 10,
  gamma_I = 10, gamma_C = 1``.

Also fitted: the supervised limit, CoMR at ``gamma_C = 0`` with MR's ``gamma_A`` (kernel RLS on
the labeled rows). Both: the graph is the symmetric kNN graph with heat weights
``exp(-d^2 / 2 sigma^2)``, ``sigma^2 = 1`` (exact neighbours, scikit-learn; g50c's
``--g50c-graph-sigma2`` changes it), the normalized Laplacian,
``graph_normalization="none"`` (Table 4.2's values are Eq 4.3's).

The tables go to stdout as markdown (with the command line, library versions, the load average
at start and end); progress lines go to stderr; ``--json PATH`` also writes every fit's record.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from datetime import datetime, timezone

import numpy as np
import scipy.sparse as sp

from _common import MULTIVIEW, local_cluster
from bench_safety import load_text, log, versions

HW_VIEWS = ("fac", "fou", "kar", "mor", "pix", "zer")
#: CoRLS's default gamma_A: the RLS per view is CoRLS at gamma_C = 0.
RLS_GAMMA_A = 1e-3
CO_METHODS = ("CoRLS", "CoLapRLS", "CoMR")
#: The single-view family each co-regularized method is compared with.
FAMILY = {"CoRLS": "RLS", "CoLapRLS": "LapRLS", "CoMR": "LapRLS"}


# data -----------------------------------------------------------------------------------------
def _zscore(X):
    X = np.asarray(X, dtype=float)
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def _tfidf(X):
    from dask_ssl.data.generators import _document_frequency, _idf, _tf_idf

    X = sp.csr_matrix(X)
    X.eliminate_zeros()
    return _tf_idf(X, _idf([_document_frequency(X)], X.shape[0]))


def load(name, args):
    """``(views, y codes 0..k-1, view names)`` prepared as the module docstring says."""
    from dask_ssl.data import read_multiview, stratified_split

    if name == "hw":
        views, y = read_multiview(MULTIVIEW / "HW.mat")
        if args.hw_rows and args.hw_rows < y.size:
            keep = np.sort(stratified_split(y, n_labeled=args.hw_rows, seed=12345).labeled)
            views, y = [V[keep] for V in views], y[keep]
        views, names = [_zscore(V) for V in views], list(HW_VIEWS)
    else:
        path = MULTIVIEW / ("BBC.mat" if name == "bbc" else "bbcsport_2view.mat")
        views, y = read_multiview(path)
        views = [_tfidf(V) for V in views]
        names = [f"seg{s + 1}" for s in range(len(views))]
    return views, np.unique(y, return_inverse=True)[1].astype(np.int64), names


# single-view kernel RLS -----------------------------------------------------------------------
def _columns(codes, k):
    Y = -np.ones((codes.size, k))
    Y[np.arange(codes.size), codes] = 1.0
    return Y


def rls_view(X, y, labeled, k, gamma_A=RLS_GAMMA_A):
    """Kernel RLS of one view on the labeled rows (CoRLS at gamma_C = 0 for this view):
    ``(predicted codes on all rows, LOO errors, LOO squared residual)``."""
    from dask_ssl.kernels import kernel_matrix
    from dask_ssl.models._rbf_width import default_rbf_gamma

    L = np.flatnonzero(labeled)
    params = {"gamma": default_rbf_gamma(X)}
    KL = kernel_matrix(X, X[L], kernel="rbf", kernel_params=params)  # (n, l)
    YL = _columns(y[L], k)
    G = KL[L] + gamma_A * L.size * np.eye(L.size)
    Ginv = np.linalg.inv(G)
    scores = KL @ (Ginv @ YL)
    h = np.einsum("ij,ji->i", KL[L], Ginv)  # diag of the hat matrix K_LL G^-1
    loo = (scores[L] - h[:, None] * YL) / (1.0 - h)[:, None]
    return (np.argmax(scores, axis=1), int(np.sum(np.argmax(loo, axis=1) != y[L])),
            float(np.sum((loo - YL) ** 2)))


def _hstack(views):
    return (sp.hstack(views, format="csr") if any(sp.issparse(V) for V in views)
            else np.hstack(views))


def _err(pred, y, unl):
    return 100.0 * float(np.mean(np.asarray(pred)[unl] != y[unl]))


def _loo_of(est):
    """``(errors, squared)`` of the candidate a fitted LapRLS's selection chose."""
    rows = est.selection_ or []
    row = next((r for r in rows if r.get("chosen")), None)
    if row is None:
        return None, None
    errors = row["errors"]
    return (int(errors[0] if isinstance(errors, (list, tuple)) else errors),
            float(np.sum(row["squared"])))


def _best(per_view):
    """Index of the view with the fewest LOO errors (then smaller residual, then first)."""
    keyed = [(e if e is not None else np.inf, s if s is not None else np.inf, i)
             for i, (e, s) in enumerate(per_view)]
    return min(keyed)[2]


def _fit_timed(make, Xs, y_train):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        est = make().fit(Xs, y_train)
        seconds = time.perf_counter() - t0
    return est, seconds, sorted({f"{w.category.__name__}: {str(w.message)[:120]}"
                                 for w in caught})


def run_views(name, args, client, progress=lambda res: None) -> dict:
    from dask_ssl.data import stratified_split
    from dask_ssl.models import LapRLS
    from dask_ssl.multiview import CoLapRLS, CoMR, CoRLS

    views, y, names = load(name, args)
    k = int(y.max()) + 1
    concat = _hstack(views)
    log(f"{name}: {y.size} rows, views {[V.shape[1] for V in views]}, {k} classes")
    out = {"dataset": name, "n": int(y.size), "views": names, "k": k,
           "features": [int(V.shape[1]) for V in views], "draws": []}
    masks = []
    for draw in range(args.first_draw, args.first_draw + args.draws):
        split = stratified_split(y, labels_per_class=args.labels_per_class, seed=draw)
        y_train = split.y_train(y, marker=-1)
        lab = y_train != -1
        unl = ~lab
        masks.append(lab)
        rec = {"draw": draw, "labels": int(lab.sum())}
        # RLS per view and concatenated
        per = []
        for V in views:
            t0 = time.perf_counter()
            pred, e, s = rls_view(V, y, lab, k)
            per.append({"error": _err(pred, y, unl), "fit_s": time.perf_counter() - t0,
                        "loo_errors": e, "loo_squared": s})
        t0 = time.perf_counter()
        pred, _, _ = rls_view(concat, y, lab, k)
        rec["RLS"] = {"views": per, "concat": {"error": _err(pred, y, unl),
                                               "fit_s": time.perf_counter() - t0}}
        # LapRLS per view and concatenated
        per = []
        for V in views:
            est, sec, warns = _fit_timed(lambda: LapRLS(client=client, random_state=0), V,
                                         y_train)
            e, s = _loo_of(est)
            per.append({"error": _err(est.transduction_, y, unl), "fit_s": sec,
                        "loo_errors": e, "loo_squared": s, "gamma_I": float(est.gamma_I_),
                        "warnings": warns})
        est, sec, warns = _fit_timed(lambda: LapRLS(client=client, random_state=0), concat,
                                     y_train)
        rec["LapRLS"] = {"views": per, "concat": {"error": _err(est.transduction_, y, unl),
                                                  "fit_s": sec, "gamma_I": float(est.gamma_I_),
                                                  "warnings": warns}}
        # the co-regularized estimators
        for label, make, what in (
                ("CoRLS", lambda: CoRLS(), lambda e: {"gamma_C": float(e.gamma_C_)}),
                ("CoLapRLS", lambda: CoLapRLS(client=client, random_state=0),
                 lambda e: {"gamma_I": [float(g) for g in e.gamma_I_],
                            "graphs": list(e.graph_names_)}),
                ("CoMR", lambda: CoMR(client=client, random_state=0),
                 lambda e: {"gamma_I": float(e.gamma_I_), "graph": [e.n_neighbors_, e.p_]})):
            try:
                est, sec, warns = _fit_timed(make, views, y_train)
                rec[label] = {"error": _err(est.transduction_, y, unl), "fit_s": sec,
                              "warnings": warns, **what(est)}
                if label == "CoRLS":
                    rec[label]["selection"] = [
                        {k_: v for k_, v in r.items() if k_ in ("rho", "errors", "chosen")}
                        for r in est.selection_]
            except Exception as exc:  # noqa: BLE001 - one failing fit must not end the run
                rec[label] = {"failed": f"{type(exc).__name__}: {str(exc)[:200]}",
                              "traceback": traceback.format_exc(limit=6)}
        out["draws"].append(rec)
        progress(out)  # an interrupted run keeps the draws it finished
        log(f"  {name} draw {draw}: " + ", ".join(
            f"{m} {rec[m]['error']:.2f}% {rec[m]['fit_s']:.1f}s" if "error" in rec[m]
            else f"{m} failed" for m in CO_METHODS)
            + f"; RLS views {[round(v['error'], 1) for v in rec['RLS']['views']]}"
            + f" concat {rec['RLS']['concat']['error']:.1f}"
            + f"; LapRLS views {[round(v['error'], 1) for v in rec['LapRLS']['views']]}"
            + f" concat {rec['LapRLS']['concat']['error']:.1f}")
    out["peer"] = run_peer(views, y, masks, args)
    return out


def run_peer(views, y, masks, args):
    if not args.peer_python:
        return {"skipped": "no --peer-python given"}
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "problem.npz")
        np.savez(path, y=y, labeled=np.array(masks), n_views=len(views),
                 **{f"view{s}": (V.toarray() if sp.issparse(V) else V)
                    for s, V in enumerate(views)})
        t0 = time.perf_counter()
        done = subprocess.run([args.peer_python, os.path.join(here, "_cotraining_peer.py"),
                               path], capture_output=True, text=True)
    if done.returncode != 0:
        return {"failed": done.stderr.strip().splitlines()[-1:] or ["?"]}
    draws = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    log(f"  peer: {len(draws)} draws in {time.perf_counter() - t0:.1f} s; errors "
        f"{[round(d['error'], 1) for d in draws]}")
    return {"draws": draws}


# tables ---------------------------------------------------------------------------------------
def _ms(values):
    values = np.asarray(values, dtype=float)
    return f"{values.mean():.2f} ({values.std(ddof=1) if values.size > 1 else 0.0:.2f})"


def _counts(items, names):
    return ", ".join(f"{names[i]} x{c}" for i, c in Counter(items).most_common())


def views_rows(res) -> tuple[list, dict]:
    """Table rows ``(method, errors per draw, seconds per draw, note)`` and the mean error of
    each comparison key."""
    draws, names = res["draws"], res["views"]
    rows, errs = [], {}
    for fam in ("RLS", "LapRLS"):
        chosen = [_best([(v["loo_errors"], v["loo_squared"]) for v in d[fam]["views"]])
                  for d in draws]
        oracle = [int(np.argmin([v["error"] for v in d[fam]["views"]])) for d in draws]
        total_s = [sum(v["fit_s"] for v in d[fam]["views"]) for d in draws]
        e_best = [d[fam]["views"][c]["error"] for d, c in zip(draws, chosen)]
        e_oracle = [d[fam]["views"][c]["error"] for d, c in zip(draws, oracle)]
        e_cat = [d[fam]["concat"]["error"] for d in draws]
        per_view = "; ".join(f"{nm} {np.mean([d[fam]['views'][s]['error'] for d in draws]):.1f}"
                             for s, nm in enumerate(names))
        rows += [(f"{fam}, best view by labeled LOO", e_best, total_s,
                  f"chosen: {_counts(chosen, names)}; time: all views' fits"),
                 (f"{fam}, oracle best view on the unlabeled rows (bound)", e_oracle, None,
                  f"{_counts(oracle, names)}; per view mean: {per_view}"),
                 (f"{fam}, concatenated views", e_cat,
                  [d[fam]["concat"]["fit_s"] for d in draws], "")]
        errs[f"{fam} best"], errs[f"{fam} oracle"], errs[f"{fam} concat"] = (
            np.mean(e_best), np.mean(e_oracle), np.mean(e_cat))
    for m in CO_METHODS:
        ok = [d[m] for d in draws if "error" in d[m]]
        fails = sorted({d[m]["failed"] for d in draws if "failed" in d[m]})
        if not ok:
            rows.append((m, [], None, "failed: " + "; ".join(fails)))
            continue
        if m == "CoRLS":
            note = "gamma_C: " + ", ".join(f"{g:g} x{c}" for g, c in
                                           Counter(r["gamma_C"] for r in ok).most_common())
        elif m == "CoMR":
            note = "gamma_I: " + ", ".join(f"{g:g} x{c}" for g, c in
                                           Counter(r["gamma_I"] for r in ok).most_common())
            if all("graph" in r for r in ok):  # the (nn, p) of the graph candidates chosen
                note += "; graph (nn, p): " + ", ".join(
                    f"{tuple(k)} x{c}" for k, c in Counter(
                        tuple(r["graph"]) for r in ok if r["gamma_I"] > 0).most_common())
        else:
            note = "gamma_I per view (draw 0): " + ", ".join(
                f"{g:g}" for g in ok[0]["gamma_I"]) + "; graphs (draw 0): " + ", ".join(
                ok[0]["graphs"])
        if fails:
            note += "; failed: " + "; ".join(fails)
        rows.append((m, [r["error"] for r in ok], [r["fit_s"] for r in ok], note))
        errs[m] = np.mean([r["error"] for r in ok])
    peer = res.get("peer", {})
    if "draws" in peer and peer["draws"]:
        pd_ = peer["draws"]
        pairs = Counter("+".join(names[v] for v in sorted(d["views"])) for d in pd_)
        rows.append(("co-training peer: sslearn CoTraining (LogisticRegression)",
                     [d["error"] for d in pd_], [d["fit_s"] for d in pd_],
                     "views: " + ", ".join(f"{p} x{c}" for p, c in pairs.most_common())
                     + f"; C tuning by LOO {np.mean([d['tune_s'] for d in pd_]):.1f} s a draw, "
                     "not in the fit time"))
        rows.append(("its base classifier on the better view, labeled rows only",
                     [d["base_error"] for d in pd_], [d["base_fit_s"] for d in pd_], ""))
        errs["peer"] = np.mean([d["error"] for d in pd_])
    else:
        rows.append(("co-training peer", [], None, "; ".join(
            f"{k}: {v}" for k, v in peer.items()) or "not run"))
    return rows, errs


def views_markdown(res) -> str:
    rows, errs = views_rows(res)
    d0 = res["draws"][0]
    lines = [f"**{res['dataset']}**: {res['n']} rows, views "
             + ", ".join(f"{n} ({f})" for n, f in zip(res["views"], res["features"]))
             + f", {res['k']} classes, {d0['labels']} labels ({d0['labels'] // res['k']} a "
             f"class), {len(res['draws'])} draws", "",
             "| method | error % mean (sd) | fit s mean | notes |", "|---|---|---|---|"]
    for label, e, s, note in rows:
        lines.append(f"| {label} | {_ms(e) if len(e) else '-'} | "
                     f"{np.mean(s):.2f} | {note} |" if s else
                     f"| {label} | {_ms(e) if len(e) else '-'} | - | {note} |")
    lines += ["", "| co-regularized | vs its family's best view (LOO) | vs oracle view | "
              "vs concatenated | vs peer | target (beats best view and peer) |",
              "|---|---|---|---|---|---|"]
    for m in CO_METHODS:
        if m not in errs:
            lines.append(f"| {m} | - | - | - | - | no result |")
            continue
        fam = FAMILY[m]
        diffs = [errs[m] - errs[f"{fam} best"], errs[m] - errs[f"{fam} oracle"],
                 errs[m] - errs[f"{fam} concat"]]
        peer = errs[m] - errs["peer"] if "peer" in errs else None
        ok = diffs[0] < 0 and (peer is None or peer < 0)
        verdict = ("held" if ok else "NOT held") + ("" if peer is not None else " (no peer)")
        lines.append(f"| {m} | {diffs[0]:+.2f} | {diffs[1]:+.2f} | {diffs[2]:+.2f} | "
                     f"{'-' if peer is None else f'{peer:+.2f}'} | {verdict} |")
    return "\n".join(lines)


# why a co-regularized default lost ------------------------------------------------------------
COUPLINGS = (1e-3, 0.1, 10.0)


def run_coupling(name, args, client) -> list[dict]:
    """Per draw: CoMR at its defaults and at its MR limit (``gamma_C = inf``) on Rosenberg's
    graph (nn = 10, p = 1), LapRLS on the concatenated views with that graph and at its
    defaults; CoRLS at
    its default and at the fixed couplings ``COUPLINGS``. Error % on the unlabeled rows."""
    from dask_ssl.data import stratified_split
    from dask_ssl.models import LapRLS
    from dask_ssl.multiview import CoMR, CoRLS

    views, y, _ = load(name, args)
    concat = _hstack(views)
    fits = [("CoMR()", lambda: CoMR(client=client, random_state=0), False),
            ("CoMR(gamma_C=inf, n_neighbors=10, p=1), its MR limit", lambda: CoMR(
                gamma_C=np.inf, n_neighbors=10, p=1, client=client, random_state=0), False),
            ("LapRLS(n_neighbors=10, p=1), concatenated", lambda: LapRLS(
                n_neighbors=10, p=1, client=client, random_state=0), True),
            ("LapRLS(), concatenated", lambda: LapRLS(client=client, random_state=0), True),
            ("CoRLS()", lambda: CoRLS(), False)]
    fits += [(f"CoRLS(gamma_C={g:g})", lambda g=g: CoRLS(gamma_C=g), False) for g in COUPLINGS]
    out = []
    for draw in range(args.draws):
        y_train = stratified_split(y, labels_per_class=args.labels_per_class,
                                   seed=draw).y_train(y, marker=-1)
        unl = y_train == -1
        for label, make, flat in fits:
            est, sec, _ = _fit_timed(make, concat if flat else views, y_train)
            out.append({"dataset": name, "draw": draw, "fit": label, "fit_s": sec,
                        "error": _err(est.transduction_, y, unl),
                        "gamma_I": float(getattr(est, "gamma_I_", np.nan)),
                        "gamma_C": float(getattr(est, "gamma_C_", np.nan))})
        log(f"  {name} draw {draw}: " + ", ".join(f"{r['fit']} {r['error']:.2f}"
                                                  for r in out if r["draw"] == draw))
    return out


def coupling_markdown(records) -> str:
    lines = ["| data | fit | draws | error % mean | per draw | gamma_I chosen |",
             "|---|---|---|---|---|---|"]
    groups = {}
    for r in records:
        groups.setdefault((r["dataset"], r["fit"]), []).append(r)
    for (name, fit), rs in groups.items():
        gi = sorted({r["gamma_I"] for r in rs if np.isfinite(r["gamma_I"])})
        lines.append(f"| {name} | {fit} | {len(rs)} | {np.mean([r['error'] for r in rs]):.2f} | "
                     + " / ".join(f"{r['error']:.2f}" for r in rs) + " | "
                     + (", ".join(f"{g:g}" for g in gi) or "-") + " |")
    return "\n".join(lines)


# Rosenberg's protocol -------------------------------------------------------------------------
def _heat_graph(X, k, client, sigma2=1.0):
    from sklearn.neighbors import kneighbors_graph

    from dask_ssl.graph import Graph

    W = kneighbors_graph(X, k, mode="distance")
    W = W.maximum(W.T)
    W.data = np.exp(-W.data ** 2 / (2.0 * sigma2))
    return Graph.from_scipy(W, client=client, n_blocks=2)


def rosenberg_split(name, split, graph_sigma2=1.0):
    """``(views, y, labeled rows, unlabeled rows, test rows, settings)`` of one split;
    ``graph_sigma2``: g50c's heat-weight width (Rosenberg's 1)."""
    from dask_ssl.data import g50c, lines, stratified_split

    if name == "lines":
        (X,), y = lines(seed=split)
        rng = np.random.default_rng(split)
        lab = np.array([rng.choice(np.flatnonzero(y > 0)), rng.choice(np.flatnonzero(y < 0))])
        rest = rng.permutation(np.setdiff1d(np.arange(y.size), lab))
        unl, test = rest[:500], rest[500:750]
        return ([X], y, lab, unl, test,
                dict(nn=10, common=dict(kernel="linear", p=1),
                     mr=dict(gamma_A=0.01, gamma_I=1e-6), co=dict(gamma_A=1e-4, gamma_I=100.0)))
    X, y = g50c(n=550, seed=0)
    lab = stratified_split(y, n_labeled=50, seed=split).labeled
    rest = np.random.default_rng(split).permutation(np.setdiff1d(np.arange(y.size), lab))
    unl, test = rest[:338], rest[338:450]
    sigma = 17.5
    return ([X[:, :25], X[:, 25:]], y, lab, unl, test,
            dict(nn=50, sigma2=graph_sigma2,
                 common=dict(kernel="rbf", kernel_params={"gamma": 1 / (2 * sigma ** 2)}, p=5),
                 mr=dict(gamma_A=1.0, gamma_I=100.0), co=dict(gamma_A=10.0, gamma_I=10.0)))


def run_rosenberg(name, splits, client, graph_sigma2=1.0, formulation="semi-supervised",
                  comr_gamma_I=None) -> list[dict]:
    """``formulation``: CoMR's objective; ``comr_gamma_I``: in place of Table 4.2's."""
    from dask_ssl.multiview import CoMR

    out = []
    for split in range(splits):
        views, y, lab, unl, test, cfg = rosenberg_split(name, split, graph_sigma2)
        train = np.r_[lab, unl]
        Xs = [V[train] for V in views]
        yl = np.r_[y[lab], np.zeros(unl.size)]
        t0 = time.perf_counter()
        graph = _heat_graph(np.hstack(Xs), cfg["nn"], client, cfg.get("sigma2", 1.0))
        graph_s = time.perf_counter() - t0
        rec = {"split": split, "graph_s": graph_s, "formulation": formulation}
        co = {**cfg["co"], **({} if comr_gamma_I is None else {"gamma_I": comr_gamma_I})}
        for label, gamma_C, params in (("MR", np.inf, cfg["mr"]), ("CoMR", 1.0, co),
                                       ("RLS", 0.0, cfg["mr"])):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                est = CoMR(gamma_C=gamma_C, graph_normalization="none", unlabeled=0,
                           formulation=formulation, **cfg["common"], **params).fit(
                               Xs, yl, graph=graph)
                sec = time.perf_counter() - t0
            pred_unl = est.transduction_[lab.size:]
            rec[label] = {"test": 100.0 * float(np.mean(est.predict([V[test] for V in views])
                                                        != y[test])),
                          "unlabeled": 100.0 * float(np.mean(pred_unl != y[unl])),
                          "fit_s": sec}
        log(f"  {name} split {split}: MR {rec['MR']['test']:.1f} / {rec['MR']['unlabeled']:.1f}"
            f", CoMR {rec['CoMR']['test']:.1f} / {rec['CoMR']['unlabeled']:.1f}")
        out.append(rec)
    return out


ROSENBERG = {"lines": ((7.7, 1.2), (1.0, 1.5), (7.5, 1.0), (1.3, 2.0)),
             "g50c": ((5.8, 2.8), (5.5, 2.3), (6.6, 0.8), (6.9, 1.0))}


def rosenberg_markdown(results) -> str:
    lines = ["| data | splits | MR test % | CoMR test % | MR unlabeled % | CoMR unlabeled % | "
             "CoMR - MR test, wins / ties / losses | fit s MR / CoMR | supervised RLS (MR's "
             "gamma_A, gamma_C = 0) test % | Rosenberg (Tables 4.3 / 4.4): MR vs CoMR test; "
             "unlabeled |", "|" + "---|" * 10]
    for name, recs in results.items():
        mt, ct = [r["MR"]["test"] for r in recs], [r["CoMR"]["test"] for r in recs]
        mu, cu = [r["MR"]["unlabeled"] for r in recs], [r["CoMR"]["unlabeled"] for r in recs]
        d = np.array(ct) - np.array(mt)
        ref = ROSENBERG[name]
        lines.append(
            f"| {name} | {len(recs)} | {_ms(mt)} | {_ms(ct)} | {_ms(mu)} | {_ms(cu)} | "
            f"{d.mean():+.2f}, {int((d < 0).sum())} / {int((d == 0).sum())} / "
            f"{int((d > 0).sum())} | {np.mean([r['MR']['fit_s'] for r in recs]):.2f} / "
            f"{np.mean([r['CoMR']['fit_s'] for r in recs]):.2f} | "
            f"{_ms([r['RLS']['test'] for r in recs])} | "
            f"{ref[0][0]} ({ref[0][1]}) vs {ref[1][0]} ({ref[1][1]}); "
            f"{ref[2][0]} ({ref[2][1]}) vs {ref[3][0]} ({ref[3][1]}) |")
    return "\n".join(lines)


# run ------------------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("views", "rosenberg", "all", "coupling"), default="all",
                    help="coupling: the checks of why a co-regularized default lost (CoMR at "
                         "its MR limit, CoRLS at fixed couplings) on --datasets, --draws")
    ap.add_argument("--datasets", default="hw,bbc,bbcsport",
                    help="part views: comma-separated of hw, bbc, bbcsport")
    ap.add_argument("--draws", type=int, default=10, help="label draws (seeds 0..draws-1)")
    ap.add_argument("--first-draw", type=int, default=0,
                    help="part views: the first draw's seed (to extend a run in pieces; the "
                         "peer's random_state counts from 0 within a run)")
    ap.add_argument("--labels-per-class", type=int, default=5)
    ap.add_argument("--hw-rows", type=int, default=600,
                    help="HW rows (a stratified subset; 0: all 2000). CoRLS solves a dense "
                         "system of views x rows, one LU per gamma_C candidate: 12,000 rows at "
                         "2000 (about 10 min a fit on 2 cores under load 8-10), 3,600 at 600")
    ap.add_argument("--splits", type=int, default=10, help="part rosenberg: random splits")
    ap.add_argument("--rosenberg-sets", default="lines,g50c")
    ap.add_argument("--g50c-graph-sigma2", type=float, default=1.0,
                    help="g50c's graph heat width sigma^2 (Rosenberg: 1; 306.25 is the "
                         "kernel's sigma = 17.5)")
    ap.add_argument("--formulation", choices=("semi-supervised", "transductive"),
                    default="semi-supervised",
                    help="part rosenberg: CoMR's objective (Rosenberg 4.3.3 or 4.3.1, the one "
                         "of his experiments)")
    ap.add_argument("--comr-gamma-I", type=float, default=None,
                    help="part rosenberg: CoMR's gamma_I in place of Table 4.2's")
    ap.add_argument("--peer-python", default=os.environ.get("MULTIVIEW_PEER_PYTHON"),
                    help="a Python with sslearn installed (the co-training peer); default "
                         "$MULTIVIEW_PEER_PYTHON, none: the peer is skipped")
    ap.add_argument("--json", default=None, help="also write every fit's record here")
    args = ap.parse_args()

    started = datetime.now(timezone.utc)
    header = ["# Multi-view learning", "",
              f"- command: `{' '.join(shlex.quote(a) for a in [sys.executable] + sys.argv)}`",
              f"- started {started:%Y-%m-%d %H:%M:%S} UTC, load average (1, 5, 15 min) at start: "
              f"{load_text()}, {os.cpu_count()} CPUs",
              f"- {versions()}", "- LocalCluster: 2 workers x 1 thread"]
    for line in header:
        log(line)
    results = {"views": [], "rosenberg": {}}
    body = []
    t_run = time.perf_counter()

    def dump():
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1, default=str)

    with local_cluster(2, 1) as client:
        if args.part in ("views", "all"):
            for name in [d.strip() for d in args.datasets.split(",") if d.strip()]:
                t0 = time.perf_counter()
                results["views"].append({})
                res = run_views(name, args, client,
                                lambda part: (results["views"].__setitem__(-1, part), dump()))
                res["seconds"] = time.perf_counter() - t0
                results["views"][-1] = res
                dump()
                body += [views_markdown(res), ""]
                log(body[-2])
        if args.part == "coupling":
            results["coupling"] = []
            for name in [d.strip() for d in args.datasets.split(",") if d.strip()]:
                results["coupling"] += run_coupling(name, args, client)
                dump()
            body += [coupling_markdown(results["coupling"]), ""]
        if args.part in ("rosenberg", "all"):
            for name in [d.strip() for d in args.rosenberg_sets.split(",") if d.strip()]:
                results["rosenberg"][name] = run_rosenberg(
                    name, args.splits, client, args.g50c_graph_sigma2, args.formulation,
                    args.comr_gamma_I)
                dump()
            body += [rosenberg_markdown(results["rosenberg"]), ""]
    footer = [f"- finished after {time.perf_counter() - t_run:.0f} s, load average at end: "
              f"{load_text()}"]
    print("\n".join(header + [""] + body + footer))


if __name__ == "__main__":
    main()
