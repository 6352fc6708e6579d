"""``gamma_u="auto"`` of the S3VMs (TSVM, DAS3VM, KernelDAS3VM): the unlabeled loss's weight
gamma' chosen by cross-validation on the labeled rows.

The candidates are :data:`AUTO_GAMMA_U`. ``gamma_u = 0`` drops the unlabeled loss: the fit is
the supervised L2-SVM (kernel L2-SVM or kernel RLS) on the labeled rows, so where the unlabeled
rows do not help (their clusters do not follow the labels), the labels say so. The largest
candidate is the seeds' 1 (svmlin's default ``-U 1``); below it, one step per decade down to
0.01. A small weight already follows the clusters where they hold (g50c, 40 labels: TSVM's
error falls from 18% at 0 to 10% at 0.01 and at 1, DA's with gamma' fixed through its
annealing to 7.5% at 0.01 while it rises to 35% at 1, which DA's rising gamma' avoids), and stays near the supervised fit where they do not. Each further candidate costs every
fold another fit (DA: another annealing) and gives the best of them more chances to win by luck.

Each labeled row is held out once: the labeled rows of each class are dealt to
:data:`CV_FOLDS` folds in turn, and a fold's held-out rows become unlabeled rows of that fold's
fits (every candidate, from the same rows), so a fold fit sees the same rows as the final fit
and only a quarter fewer labels. Only held-out labeled rows are scored; unlabeled rows never
are. The choice among the candidates is :mod:`._selection`'s rule with ``gamma_u = 0`` as the
supervised candidate: a semi-supervised weight replaces it only when its held-out errors are
fewer by more than their standard error. With fewer than :data:`._selection.MIN_PER_CLASS`
labels in a class the seeds' 1 is used unchecked, with a :class:`._selection.SelectionWarning`.

The estimators supply the fold fits (what they can share across candidates differs: TSVM's
gamma' ramp to the largest candidate passes every smaller one; DA reuses the supervised fit as
the warm start of its first step); this module holds the fold loop, the scoring and the record
of the choice in a checkpoint, so that a resumed fit continues with the weight it chose.
"""

from __future__ import annotations

import json

import fsspec
import numpy as np

from ._input import target_columns
from ._selection import CV_FOLDS, choose, enough_labels, fold_of, table, warn_unchecked
from ._selection_cost import selecting

#: gamma_u values tried by ``gamma_u="auto"``, ascending, the supervised 0 first.
AUTO_GAMMA_U = (0.0, 0.01, 0.1, 1.0)
#: The seeds' gamma' (svmlin ``-U 1``), used unchecked where the labels are too few to choose.
SEED_GAMMA_U = 1.0
#: The file in a fit's checkpoint directory that records the chosen gamma_u.
CHOICE_FILE = "gamma_u.json"


def choose_gamma_u(est, codes: np.ndarray, targets: list, fold_outputs) -> tuple[float, list]:
    """``(gamma_u_, selection_)`` of an estimator about to fit on rows with class ``codes``
    (-1 unlabeled) and one-vs-rest ``targets``.

    A number ``gamma_u`` is used as given (empty selection); "auto" with too few labels is
    :data:`SEED_GAMMA_U`, with a warning; else the cross-validated choice.

    Parameters
    ----------
    fold_outputs : callable
        ``(fold_codes, held) -> outputs``: fit every candidate of :data:`AUTO_GAMMA_U` on rows
        with class codes ``fold_codes`` (the held-out rows ``held`` marked -1) and return their
        outputs on the rows ``held``, shape ``(n_candidates, held.size, len(targets))``.
    """
    if not isinstance(est.gamma_u, str):
        return float(est.gamma_u), []
    labeled = np.flatnonzero(codes >= 0)
    truth = codes[labeled]
    if not enough_labels(truth):
        warn_unchecked(est, "gamma_u")
        return SEED_GAMMA_U, []
    fold = fold_of(truth, CV_FOLDS)
    outputs = np.empty((len(AUTO_GAMMA_U), labeled.size, len(targets)))
    with selecting():
        for f in range(CV_FOLDS):
            held = labeled[fold == f]
            fold_codes = codes.copy()
            fold_codes[held] = -1
            outputs[:, fold == f] = fold_outputs(fold_codes, held)
    wrong = np.array([_guess(out, targets) != truth for out in outputs])
    Y = target_columns(truth, targets)
    # the squared hinge, the S3VMs' loss, per held-out row
    squared = np.array([np.sum(np.maximum(0.0, 1.0 - Y * out) ** 2, axis=1) for out in outputs])
    best = choose(wrong, squared, supervised=0)
    return AUTO_GAMMA_U[best], table([{"gamma_u": g} for g in AUTO_GAMMA_U], wrong, squared,
                                     best)


def _guess(out: np.ndarray, targets: list) -> np.ndarray:
    """Class codes from one-vs-rest outputs: the sign for one target (class 1 against 0),
    else the target with the largest output."""
    if len(targets) == 1:
        return (out[:, 0] > 0).astype(np.int64)
    return np.asarray(targets)[np.argmax(out, axis=1)]


def fold_costs(costs: np.ndarray, fold_codes: np.ndarray) -> np.ndarray:
    """Labeled costs of a fold fit: the fit's costs on the rows still labeled, renormalized to
    sum to 1 over them (1/l with unit weights, as the fit on all labels)."""
    c = np.where(fold_codes >= 0, costs, 0.0)
    return c / c.sum()


def resolve_gamma_u(est, checkpoint: str | None, resume: bool, choose_now) -> None:
    """Set ``est.gamma_u_`` and ``est.selection_``: from the checkpoint's record when resuming
    a fit that had chosen, else from ``choose_now()`` (recorded in the checkpoint, before
    any stage of the final fit is saved, when "auto" chose on the labels).

    A fit interrupted during its final fit resumes with the weight its stages were run at,
    without choosing again. One interrupted before the final fit saved a stage has nothing to
    resume, as any fit stopped before its first stage: it is fitted again without ``resume``
    (and an earlier record is removed as that fit starts, so a resume never reads another
    fit's choice).
    """
    record = isinstance(est.gamma_u, str) and checkpoint is not None
    if record:
        fs, root = fsspec.core.url_to_fs(checkpoint)
        path = f"{root.rstrip('/')}/{CHOICE_FILE}"
    if record and resume and fs.exists(path):
        with fs.open(path, "r") as f:
            doc = json.load(f)
        est.gamma_u_, est.selection_ = doc["gamma_u_"], doc["selection_"]
        return
    if record and fs.exists(path):
        # an earlier fit's choice: a resume of this one must not find it
        fs.rm(path)
    est.gamma_u_, est.selection_ = choose_now()
    if record:
        fs.makedirs(root, exist_ok=True)
        # written aside and renamed: a reader never sees half a record
        with fs.open(path + ".part", "w") as f:
            json.dump({"gamma_u_": est.gamma_u_, "selection_": est.selection_}, f)
        fs.mv(path + ".part", path)
