"""sslearn's CoTraining on the label draws that bench_multiview.py saved: run in sslearn's own venv.

    <sslearn venv>/bin/python benchmarks/_cotraining_peer.py PROBLEM.npz

PROBLEM.npz holds the views as prepared for every method (``view0``, ``view1``, ...; dense),
the class codes ``y`` (0..k-1) and ``labeled`` (draws x rows, bool), one row per label draw.
Per draw: the base classifier is scikit-learn's LogisticRegression (lbfgs, multinomial) with
``C`` chosen per view among ``C_GRID`` by leave-one-out accuracy on the labeled rows (ties: the
smaller C); the two views with the best leave-one-out accuracy (ties: the first) are given to
CoTraining (``X`` and ``X2``, each view with its own C), at sslearn's defaults otherwise
(30 iterations, pool 75, threshold 0.5, labels per class per round from the labeled classes'
ratio), ``random_state`` the draw. The error is on the unlabeled rows. Also fitted, on the
labeled rows alone: the base classifier on the better of the two views (its supervised
counterpart). Prints one JSON line per draw. Imports nothing from dask_ssl (not installed in
that venv).
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import numpy as np

C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)


def _base(C):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, max_iter=2000)


def loo_accuracy(X, y, C) -> float:
    """Leave-one-out accuracy of the base classifier on the labeled rows ``X, y``; a row whose
    class has no other labeled row counts as wrong."""
    right = 0
    for i in range(y.size):
        keep = np.arange(y.size) != i
        if np.unique(y[keep]).size < 2 or not np.any(y[keep] == y[i]):
            continue
        right += int(_base(C).fit(X[keep], y[keep]).predict(X[i:i + 1])[0] == y[i])
    return right / y.size


def main(path):
    from sslearn.wrapper import CoTraining

    data = np.load(path)
    views = [data[f"view{s}"] for s in range(int(data["n_views"]))]
    y, labeled = data["y"], data["labeled"]
    for draw, lab in enumerate(labeled):
        lab = lab.astype(bool)
        unl = ~lab
        t0 = time.perf_counter()
        tuned = []  # (loo accuracy, C) per view
        for X in views:
            scores = [(loo_accuracy(X[lab], y[lab], C), -C) for C in C_GRID]
            acc, negC = max(scores)
            tuned.append((acc, -negC))
        order = sorted(range(len(views)), key=lambda s: (-tuned[s][0], s))[:2]
        tune_s = time.perf_counter() - t0
        a, b = order
        y_train = np.where(lab, y, -1)
        t0 = time.perf_counter()
        model = CoTraining(_base(tuned[a][1]), second_base_estimator=_base(tuned[b][1]),
                           random_state=draw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(views[a], y_train, X2=views[b])
        fit_s = time.perf_counter() - t0
        pred = model.predict(views[a][unl], X2=views[b][unl])
        t0 = time.perf_counter()
        base = _base(tuned[a][1]).fit(views[a][lab], y[lab])
        base_s = time.perf_counter() - t0
        base_pred = base.predict(views[a][unl])
        print(json.dumps({"draw": draw, "views": [a, b], "C": [tuned[a][1], tuned[b][1]],
                          "loo_accuracy": [t[0] for t in tuned], "tune_s": tune_s,
                          "fit_s": fit_s, "error": 100.0 * float(np.mean(pred != y[unl])),
                          "base_error": 100.0 * float(np.mean(base_pred != y[unl])),
                          "base_fit_s": base_s}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
