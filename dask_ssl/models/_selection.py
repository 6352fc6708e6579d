"""The rule by which every semi-supervised estimator chooses among its candidate settings on the
labeled rows, and the table it keeps of them (``selection_``).

Each candidate is scored on the labeled rows held out (exact leave-one-out where it is closed
form, :data:`CV_FOLDS`-fold cross-validation otherwise, :func:`fold_of`): ``wrong[j, i]`` is 1
where candidate ``j`` misclassifies labeled row ``i``, ``squared[j, i]`` its held-out loss there
(the squared residual of the least-squares estimators, the squared hinge of the SVMs, the
misclassification itself for GraphTransduction, whose balanced cut of class shares carries no
confidence to score).

The rule. Let ``s`` be the supervised candidate and ``m`` the number of the others. A candidate
``j`` is eligible when it errs on fewer held-out rows than ``s`` and at least one of two paired
tests over the labeled rows finds it better beyond the noise, each at the one-sided level
``LEVEL / sqrt(m)`` (:func:`level`; :data:`LEVEL` is one standard error of a normal, about 16%):

- the loss: the mean of the gains ``squared[s] - squared[j]`` exceeds :func:`noise_multiple`
  standard errors of that mean (one for ``m = 1``, about 1.7 for ``m = 11``);
- the errors: of the rows where exactly one of the two errs, ``j`` is right on ``b`` and wrong
  on ``c``, and ``P(B >= b)`` for ``B`` Binomial(``b + c``, 1/2) is at most that level (the
  exact one-sided sign test, McNemar's; :func:`fewer_errors_beyond_chance`).

Where ``s`` errs on no held-out row, fewer errors cannot be had and the sign test has no
discordant row to count: a candidate that errs on none either is then eligible when the loss
test passes. Among the eligible candidates and ``s``, the fewest held-out errors win; ties go
to the smaller summed loss, then to ``s``, then to the earlier candidate.

Why both tests. The loss is informative where errors are rare: with 50 labels a supervised
model's leave-one-out errors are often 0 to 2, whichever candidate is better. But the SVMs'
graph candidates have smaller outputs, and their squared-hinge gain is noisy even where they
err on no held-out row against the supervised model's five; the sign test passes those (5 of
5 discordant rows: P = 1/32). Why the level is shared: the best of a dozen candidates has its
gain overestimated by the choice itself; with one standard error among eleven candidates, a
random linear label over isotropic noise (no clusters to follow) let a graph candidate
through in half the draws. Why fewer errors are required even when the loss passes: a smaller
residual alone may only mean less confident outputs, as an S3VM's on labels its clusters do
not follow. Why the exception where the supervised model errs on no held-out row: no
candidate could ever err on fewer, whatever its unlabeled error, and every held-out output of
both already has the right sign, so a smaller residual there means outputs nearer their
targets. Where the graph does not help, or the labels are too few to tell, the fit is the
supervised model's, so adding unlabeled rows does not make the classifier worse than the one
the labels alone give.

With fewer than :data:`MIN_PER_CLASS` labeled rows in some class the estimate cannot separate
the candidates; the estimator then keeps the seeds' setting and warns once
(:class:`SelectionWarning`).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.special
import scipy.stats

#: Labeled rows per class below which the held-out errors cannot tell candidates apart.
MIN_PER_CLASS = 5
#: One-sided level of the paired test: one standard error for a single alternative.
LEVEL = float(scipy.stats.norm.sf(1.0))
#: Folds of the labeled rows where leave-one-out is not closed form.
CV_FOLDS = 4


class SelectionWarning(UserWarning):
    """The labels were too few to check the semi-supervised setting against the supervised one."""


def enough_labels(truth) -> bool:
    """Whether every class has at least :data:`MIN_PER_CLASS` labeled rows (``truth``: the
    class code of each labeled row)."""
    _, counts = np.unique(np.asarray(truth), return_counts=True)
    return counts.size > 1 and int(counts.min()) >= MIN_PER_CLASS


def fold_of(truth, k: int) -> np.ndarray:
    """Fold number per labeled row: each class's rows (``truth``: class codes) are dealt to
    the ``k`` folds in turn, so every fold holds every class and each row is in one fold."""
    truth = np.asarray(truth)
    fold = np.empty(truth.shape[0], dtype=np.int64)
    for cls in np.unique(truth):
        rows = np.flatnonzero(truth == cls)
        fold[rows] = np.arange(rows.size) % k
    return fold


def warn_unchecked(estimator, setting: str) -> None:
    """Warn that ``setting`` stands as the seeds give it, unchecked on the labels."""
    warnings.warn(f"{type(estimator).__name__}: fewer than {MIN_PER_CLASS} labeled rows in a "
                  f"class, too few to check {setting} against the supervised model on them; "
                  "the seeds' setting is used unchecked", SelectionWarning, stacklevel=3)


def choose(wrong, squared, *, supervised: int = 0) -> int:
    """The index of the chosen candidate (see the module docstring).

    Parameters
    ----------
    wrong : array of shape (n_candidates, n_labeled)
        1 where a candidate misclassifies a held-out labeled row, else 0.
    squared : array of shape (n_candidates, n_labeled)
        The candidates' held-out losses per labeled row (summed over the class columns): the
        tie-break among candidates with equal errors, and one of the two paired gains that
        may exceed their noise.
    supervised : int, default 0
        The supervised candidate's index (graph term 0, or the supervised prior alone).
    """
    wrong = np.asarray(wrong, dtype=float)
    squared = np.asarray(squared, dtype=float)
    errors, residual = wrong.sum(axis=1), squared.sum(axis=1)
    passed = passed_tests(wrong, squared, supervised=supervised)
    candidates = [j for j in range(len(wrong)) if j == supervised
                  or eligible(errors[j], errors[supervised], passed[j])]
    return min(candidates, key=lambda j: (errors[j], residual[j], j != supervised, j))


def eligible(errors, supervised_errors, passed) -> bool:
    """Whether a candidate with ``errors`` held-out errors and the paired tests ``passed``
    (:func:`passed_tests`) may replace the supervised one with ``supervised_errors``: fewer
    errors and a test passed, or, where the supervised model errs on none, none either and
    the loss test passed (module docstring)."""
    if not passed:
        return False
    return errors < supervised_errors or (errors == supervised_errors == 0 and "loss" in passed)


def passed_tests(wrong, squared, *, supervised: int = 0) -> list:
    """Per candidate, the paired tests against the supervised one that find it better beyond
    the noise (module docstring): a list holding ``"loss"`` and / or ``"errors"``, None for
    the supervised candidate itself. ``wrong``, ``squared``: as :func:`choose`'s."""
    wrong = np.asarray(wrong, dtype=float)
    squared = np.asarray(squared, dtype=float)
    alternatives = len(wrong) - 1
    return [None if j == supervised else
            [name for name, ok in (
                ("loss", not within_noise(squared[supervised] - squared[j], alternatives)),
                ("errors", fewer_errors_beyond_chance(wrong[supervised], wrong[j],
                                                      alternatives))) if ok]
            for j in range(len(wrong))]


def within_noise(gain, n_alternatives: int = 1) -> bool:
    """Whether the mean of paired gains is at most :func:`noise_multiple` standard errors."""
    gain = np.asarray(gain, dtype=float)
    if gain.size < 2:
        return True
    stderr = gain.std(ddof=1) / np.sqrt(gain.size)
    return not gain.mean() > noise_multiple(n_alternatives) * stderr


def fewer_errors_beyond_chance(wrong_supervised, wrong_candidate,
                               n_alternatives: int = 1) -> bool:
    """Whether a candidate's held-out errors are fewer than the supervised one's beyond
    chance: the exact sign test on the discordant rows (McNemar's exact test, one-sided).
    Of the ``m`` rows where exactly one of the two errs, the candidate is right on ``b``;
    were both equally good, ``b`` would be Binomial(``m``, 1/2), and the test passes when
    ``P(B >= b)`` is at most the level of :func:`noise_multiple` for ``n_alternatives``
    (``LEVEL / sqrt(n_alternatives)``)."""
    sup = np.asarray(wrong_supervised) > 0
    cand = np.asarray(wrong_candidate) > 0
    gained, lost = int(np.sum(sup & ~cand)), int(np.sum(~sup & cand))
    if gained <= lost:
        return False
    p_value = scipy.stats.binom.sf(gained - 1, gained + lost, 0.5)
    return bool(p_value <= level(n_alternatives))


def level(n_alternatives: int) -> float:
    """The one-sided level of each of ``n_alternatives`` candidates' tests against the
    supervised one (:func:`noise_multiple`)."""
    return LEVEL / np.sqrt(max(n_alternatives, 1))


def noise_multiple(n_alternatives: int) -> float:
    """Standard errors a gain must exceed when the best of ``n_alternatives`` candidates is
    tested against the supervised one: one for a single alternative (a one-sided level of
    :data:`LEVEL`), more for more, at ``LEVEL / sqrt(n_alternatives)`` each. The candidates
    differ in one setting at a time and their held-out residuals move together, so they count
    as fewer independent tests than they are: sharing the level among all of them
    (Bonferroni) kept the supervised model on two moons with 5 labels a class."""
    # the normal quantile itself: scipy.stats' frozen-distribution machinery cost more than
    # the rest of a small selection's rule
    return float(-scipy.special.ndtri(level(n_alternatives)))


def table(candidates: list, wrong, squared, chosen: int, *, supervised: int = 0) -> list:
    """``selection_``: per candidate its settings, held-out ``errors`` (count), ``error``
    (rate), the rate's standard ``stderr``, the ``squared`` residual, the paired tests it
    ``passed`` against the ``supervised`` candidate (:func:`passed_tests`) and whether it was
    ``chosen``."""
    wrong = np.asarray(wrong, dtype=float)
    n = wrong.shape[1]
    passed = passed_tests(wrong, squared, supervised=supervised)
    rows = []
    for j, settings in enumerate(candidates):
        rate = float(wrong[j].mean()) if n else 0.0
        rows.append({**settings, "errors": int(wrong[j].sum()), "error": rate,
                     "stderr": float(np.sqrt(rate * (1.0 - rate) / max(n - 1, 1))),
                     "squared": float(np.sum(squared[j])), "passed": passed[j],
                     "chosen": j == chosen})
    return rows


def chosen_row(selection: list) -> dict:
    """The chosen row of a selection table."""
    return next(row for row in selection if row["chosen"])
