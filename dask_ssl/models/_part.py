"""One one-vs-rest part of a fit: which binary problem it is and where it checkpoints.

A multi-class fit solves one binary problem per class (one for two classes). Each part's
outer loop or Newton state checkpoints in ``checkpoint`` itself when there is one part, else
in its ``part-<k>`` subdirectory; a resumed fit resumes every part. The estimators hand a
:class:`Part` to each binary fit instead of keeping it on themselves during the fit.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Part:
    """Part ``index`` of ``count``, whether the fit resumes, and its checkpoint location."""

    index: int
    count: int
    resume: bool
    checkpoint: str | None


def fit_parts(checkpoint: str | None, count: int, resume: bool) -> list[Part]:
    """The ``count`` parts of a fit with the estimator's ``checkpoint`` (or None)."""
    def url(k):
        if checkpoint is None or count == 1:
            return checkpoint
        return f"{checkpoint.rstrip('/')}/part-{k}"

    return [Part(k, count, bool(resume), url(k)) for k in range(count)]
