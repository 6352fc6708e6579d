"""Evaluation metrics of a fitted model: error, PRBEP, objective and a per-class table."""

from __future__ import annotations

import numpy as np


def prbep(positive: np.ndarray, scores: np.ndarray) -> float:
    """Precision-recall break-even point: precision of the ``p`` highest scores, ``p`` being
    the number of positives (there precision equals recall)."""
    positive = np.asarray(positive, dtype=bool)
    p = int(positive.sum())
    if p == 0:
        return float("nan")
    top = np.argpartition(-np.asarray(scores, dtype=np.float64), p - 1)[:p]
    return float(positive[top].mean())


def _one_vs_rest(classes, y, scores):
    scores = np.asarray(scores)
    if scores.ndim == 1:
        return [(classes[1], y == classes[1], scores)]
    return [(c, y == c, scores[:, k]) for k, c in enumerate(classes)]


def per_class(classes, y, predicted) -> list[dict]:
    """Rows per class: support, precision, recall and error of one-vs-rest decisions."""
    table = []
    for c in classes:
        true, pred = y == c, predicted == c
        tp = int((true & pred).sum())
        table.append({"class": c.item() if hasattr(c, "item") else c,
                      "support": int(true.sum()),
                      "precision": tp / int(pred.sum()) if pred.any() else float("nan"),
                      "recall": tp / int(true.sum()) if true.any() else float("nan"),
                      "error": float(np.mean(true != pred))})
    return table


def evaluate(estimator, test_scores, y_test, *, wanted, unlabeled_scores=None,
             y_unlabeled=None, labeled_scores=None, y_labeled=None) -> dict:
    """Metrics of ``estimator`` from its decision values on held-out and training rows.

    Parameters
    ----------
    estimator : fitted dask-ssl estimator
    test_scores, y_test : decision values and true labels of the held-out rows
        Without held-out rows (``dask-ssl fit`` trains on every row) the metrics measured on
        them (``error``, ``prbep``, ``per_class``) are left out.
    wanted : list of str
        Metric names (see :data:`dask_ssl.workflow.schema.METRICS`, plus ``per_class``).
    unlabeled_scores, y_unlabeled : optional
        Decision values and true labels of the unlabeled training rows (transductive error).
    labeled_scores, y_labeled : optional
        Decision values and labels of the labeled training rows (training error).
    """
    classes = estimator.classes_
    out = {}
    held_out = len(y_test) > 0
    predicted = estimator._labels_from_scores(test_scores) if held_out else None
    if "train_error_labeled" in wanted and labeled_scores is not None and len(y_labeled):
        out["train_error_labeled"] = float(np.mean(
            estimator._labels_from_scores(labeled_scores) != y_labeled))
    if "error" in wanted and held_out:
        out["error"] = float(np.mean(predicted != y_test))
    if "error_unlabeled" in wanted and unlabeled_scores is not None and len(y_unlabeled):
        out["error_unlabeled"] = float(np.mean(
            estimator._labels_from_scores(unlabeled_scores) != y_unlabeled))
    if "prbep" in wanted and held_out:
        values = [prbep(pos, s) for _, pos, s in _one_vs_rest(classes, y_test, test_scores)]
        out["prbep"] = float(np.nanmean(values))
    # (the multi-view estimators, solved in closed form, keep no objective)
    if "objective" in wanted and hasattr(estimator, "objective_"):
        out["objective"] = float(np.sum(estimator.objective_))
    if "per_class" in wanted and held_out:
        out["per_class"] = per_class(classes, y_test, predicted)
    return out


def format_table(metrics: dict) -> str:
    """The metrics as aligned text lines for the terminal."""
    lines = [f"  {k:<16} {v:.6g}" for k, v in metrics.items() if isinstance(v, float)]
    table = metrics.get("per_class")
    if table:
        lines.append(f"  {'class':>8} {'support':>9} {'precision':>10} {'recall':>8} {'error':>8}")
        for row in table:
            lines.append(f"  {str(row['class']):>8} {row['support']:>9d} {row['precision']:>10.4f} "
                         f"{row['recall']:>8.4f} {row['error']:>8.4f}")
    return "\n".join(lines)
