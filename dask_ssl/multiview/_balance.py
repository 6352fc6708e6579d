"""Class offsets that cut signed one-vs-rest scores at given class shares.

With few labels a graph term can put most of every class column's outputs on the unlabeled
rows along one smooth vector (for the normalized Laplacian ``D^1/2 1``) with a per-column
coefficient set by where the labeled rows sit, not by the class: the largest score then picks
the column with the largest coefficient almost everywhere. The class balance constraint of the
thesis' S3VMs (``r``, Eq 3.2) in transductive form, as
:class:`~dask_ssl.models.GraphTransduction`'s ``class_balance`` applies it, decides instead by
a ranking of the unlabeled rows cut at the class shares. GraphTransduction's scores are
non-negative label mass, cut by class weights (:func:`~dask_ssl.models.graph_transduction.
balance_weights`); one-vs-rest RLS scores are signed (the common part is often negative in
every column), which a weight cannot move past zero, so here the cut is an offset per class:
``argmax_c (f_c(x) - b_c)``, the model's intercept ``-b``.
"""

from __future__ import annotations

import numpy as np

#: Rounds of :func:`balance_offsets` over the classes (one column needs one).
BALANCE_ROUNDS = 20


def _cut(t, k) -> float:
    """A value between the ``k``-th and ``k+1``-th largest of ``t`` (their midpoint), ``k``
    kept in ``[1, len(t) - 1]`` so that every class keeps at least one row."""
    t = np.sort(t)[::-1]
    if t.size == 1:
        return float(t[0]) - 1.0
    k = min(max(k, 1), t.size - 1)
    return 0.5 * float(t[k - 1] + t[k])


def balance_offsets(F, shares) -> np.ndarray:
    """Offsets ``b`` such that the rows of ``F`` go to the classes in ``shares``.

    ``F`` of shape (n, 1) (two classes, positive ``classes_[1]``; the row is class 1 when
    ``F_i - b > 0``) or (n, n_classes) (``argmax_c F_ic - b_c``). Class ``c`` wins row ``i``
    when ``b_c < t_i = F_ic - max_{c' != c} (F_ic' - b_c')``: with the other offsets fixed,
    ``b_c`` is put between the ``k``-th and ``k+1``-th largest ``t``, ``k`` the rows its share
    asks for. With more than two classes the classes take turns for :data:`BALANCE_ROUNDS`
    rounds (a coordinate search: the shares come close, not exact); the offsets are returned
    centred (a common shift changes no decision).
    """
    F = np.asarray(F, dtype=np.float64)
    n_rows, n_columns = F.shape
    if n_rows == 0:
        return np.zeros(n_columns)
    if n_columns == 1:
        return np.array([_cut(F[:, 0], int(round(shares[1] * n_rows)))])
    b = np.zeros(n_columns)
    for _ in range(BALANCE_ROUNDS):
        for c in range(n_columns):
            others = np.max(np.delete(F - b, c, axis=1), axis=1)
            b[c] = _cut(F[:, c] - others, int(round(shares[c] * n_rows)))
    return b - b.mean()
