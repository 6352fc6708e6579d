"""A fitted GraphTransduction's scores of new rows, and what its model directory keeps.

A new row is scored by its own equation of the system, as if it joined the graph as an
unlabeled row whose edges (to its nearest training rows) leave the training scores as they
are (:func:`place`). That reads the training rows and the kNN index over them (to find the
neighbours), their scores ``F``, the edge weighting, the class weights and the prior:
:class:`Placement`. A model directory keeps exactly that: the rows as the workers held them
(CSR when the data was sparse; in their precision), the index's arrays but its rows
(:mod:`._stored_index`; where the fit built one), and reports its bytes per part in
``model.json`` (``stored_bytes``). A loaded model searches the index as the fit's workers
did, so it finds the same neighbours; one stored without an index searches the rows exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..graph.knn import DriverIndex, DriverRows, query_knn
from ..graph.weights import LOCAL, edge_weights, query_widths
from ._transduction_selection import target_scale
from ._stored_index import pack_index, packed_bytes, unpack_index
from .artifact import pack_matrix, unpack_matrix
from .base import fitted_info, restore_info

#: Prefix of the prior's arrays in ``arrays.npz``.
PRIOR = "prior_"


@dataclass(frozen=True)
class Placement:
    """What scoring new rows reads of a fitted model.

    ``search`` is ``(neighbors, weights, t, widths)``: the training rows (a live kNN index,
    :class:`DriverIndex` or :class:`DriverRows`), the edge weighting and, for local scaling,
    the rows' widths.
    ``gamma`` and ``mu`` are the system's graph and prior weights (``l gamma_I_eff`` and
    ``unlabeled_weight_``)."""

    search: tuple
    scores: np.ndarray
    class_weights: np.ndarray
    prior: object | None
    gamma: float
    mu: float
    n_neighbors: int
    search_epsilon: float


def place(pl: Placement, X) -> np.ndarray:
    """Scores of the rows ``X`` (checked, in memory), times the class weights.

    Each row minimizes ``gamma sum_j w_j (f - F_j)^2 + mu (f - s)^2`` over its neighbours
    ``j`` (weights normalized to sum 1), so ``f = (gamma mean_w(F) + mu s) / (gamma + mu)``,
    ``s`` the prior's scores of the row: the kNN mean of the training scores without a prior
    (the thesis method), the prior alone at ``gamma = 0`` (the supervised model's labels)."""
    if pl.prior is not None and pl.gamma == 0:
        # the supervised model's labels: no neighbours needed
        return target_scale(pl.prior.decision_function(X)) * pl.class_weights
    neighbors, weights, t, widths = pl.search
    ind, dist = query_knn(neighbors, X, pl.n_neighbors, pl.search_epsilon)
    products = None
    if t == LOCAL:
        products = query_widths(widths, dist)[:, None] * widths[np.maximum(ind, 0)]
    w = edge_weights(dist, weights, t, products)
    w = np.where(np.isfinite(dist), w, 0.0)
    # Far from every training row all heat weights underflow: fall back to a plain mean.
    flat = w.sum(axis=1) <= 0
    w[flat] = np.isfinite(dist[flat])
    w /= w.sum(axis=1, keepdims=True)
    F = np.einsum("mk,mkc->mc", w, pl.scores[np.maximum(ind, 0)])
    if pl.prior is not None:
        prior = target_scale(pl.prior.decision_function(X))
        F = (pl.gamma * F + pl.mu * prior) / (pl.gamma + pl.mu)
    return F * pl.class_weights


def place_block(i, X, pl: Placement) -> np.ndarray:
    """:func:`place` on one row block, on its worker (``pl`` a future resolved there)."""
    return place(pl, X)


# the model directory ------------------------------------------------------------------------
def stored_info(est, search) -> dict:
    """The fitted scalars of ``est`` for ``model.json``; ``search`` its training rows as
    :class:`DriverIndex` or :class:`DriverRows` with the edge weighting."""
    neighbors, weights, t, _ = search
    prior = est.prior_
    info = fitted_info(est)
    info.update({
        "unlabeled_weight_": float(est.unlabeled_weight_),
        "class_balance_": _jsonable(est.class_balance_),
        "metric_": est.metric_, "weights_": est.weights_, "prior_kind_": est.prior_kind_,
        "n_neighbors_": int(est.n_neighbors_),
        "selection_rows_": est.selection_rows_,
        "search": {"metric": neighbors.metric, "n_neighbors": int(neighbors.n_neighbors),
                   "weights": weights, "t": t if isinstance(t, str) or t is None else float(t)},
        "prior": None if prior is None else {
            "estimator": type(prior).__name__,
            "params": {k: v for k, v in prior.get_params(deep=False).items() if k != "client"},
            **prior._fitted_info()},
        "stored_bytes": stored_bytes(est, search),
    })
    return info


def stored_arrays(est, search) -> dict:
    neighbors, _, _, widths = search
    driver_rows = _rows(neighbors)
    rows = (sp.vstack(driver_rows.blocks, format="csr") if sp.issparse(driver_rows.blocks[0])
            else np.vstack(driver_rows.blocks))
    arrays = {"classes": est.classes_, "scores": est.scores_,
              "class_weights": est.class_weights_, "row_offsets": driver_rows.offsets,
              **pack_matrix("rows", rows)}
    if isinstance(neighbors, DriverIndex):
        arrays.update(pack_index(neighbors))
    if widths is not None:
        arrays["widths"] = widths
    if est.prior_ is not None:
        arrays.update({PRIOR + k: v for k, v in est.prior_._fitted_arrays().items()})
    return arrays


def stored_bytes(est, search) -> dict:
    """Bytes of each part a model directory keeps: the training rows, their scores, the kNN
    index over the rows (0 without one), the rest (the prior, class weights, widths)."""
    neighbors, _, _, widths = search
    rows = sum(_nbytes(b) for b in _rows(neighbors).blocks)
    scores = int(est.scores_.nbytes)
    index = packed_bytes(neighbors) if isinstance(neighbors, DriverIndex) else 0
    rest = int(est.class_weights_.nbytes) + (0 if widths is None else int(widths.nbytes))
    if est.prior_ is not None:
        rest += sum(int(np.asarray(v).nbytes) for v in est.prior_._fitted_arrays().values())
    return {"rows": rows, "scores": scores, "index": index, "rest": rest,
            "total": rows + scores + index + rest}


def restore(est, arrays: dict, doc: dict) -> None:
    """Set what :func:`stored_info` and :func:`stored_arrays` kept on a new ``est``."""
    from . import ESTIMATORS

    restore_info(est, doc)
    est.classes_ = arrays["classes"]
    est.scores_ = arrays["scores"]
    est.class_weights_ = arrays["class_weights"]
    est.unlabeled_weight_ = doc["unlabeled_weight_"]
    est.class_balance_ = doc["class_balance_"]
    est.metric_, est.weights_ = doc["metric_"], doc["weights_"]
    est.prior_kind_ = doc["prior_kind_"]
    est.n_neighbors_ = doc["n_neighbors_"]
    # models stored before the selection could sample scored it on every row
    est.selection_rows_ = doc.get("selection_rows_", doc["data_shape"][0]
                                  if doc.get("selection_") else None)
    search = doc["search"]
    rows = unpack_matrix("rows", arrays)
    offsets = arrays["row_offsets"]
    blocks = [rows[lo:hi] for lo, hi in zip(offsets[:-1], offsets[1:])]
    driver_rows = DriverRows(blocks, offsets, search["n_neighbors"], search["metric"])
    index = unpack_index(arrays, driver_rows)
    est._pickled_search = (driver_rows if index is None else index, search["weights"],
                           search["t"], arrays.get("widths"))
    est.prior_ = None
    if doc["prior"] is not None:
        pdoc = doc["prior"]
        prior = ESTIMATORS[pdoc["estimator"]](**pdoc["params"])
        prior._restore({k[len(PRIOR):]: v for k, v in arrays.items() if k.startswith(PRIOR)},
                       pdoc)
        est.prior_ = prior


def _rows(neighbors) -> DriverRows:
    return neighbors.rows if isinstance(neighbors, DriverIndex) else neighbors


def _nbytes(M) -> int:
    if sp.issparse(M):
        return int(M.data.nbytes + M.indices.nbytes + M.indptr.nbytes)
    return int(np.asarray(M).nbytes)


def _jsonable(value):
    return value.tolist() if isinstance(value, np.ndarray) else value
