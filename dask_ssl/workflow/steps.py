"""The steps every workflow takes, whichever command runs it: read, split, (graph), fit, scores.

``dask-ssl run`` (:mod:`.runner`: a run directory, the model store, a report) and ``dask-ssl
fit`` (:mod:`.fit`: a model directory and an outputs file) differ only in what they do with the
fitted model afterwards. Everything before that is :class:`Steps`, so the two commands read,
label, build and fit alike, and describe the model alike (:meth:`Steps.model_fields`).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np
from sklearn import config_context

from ..linalg import RowBlocks
from . import metrics as metrics_mod
from . import sources, split as split_mod
from .estimators import build_estimator
from .views import model_input


@dataclass
class Data:
    """The rows as read (labels on the workers, 0 = unlabeled), the split of each setting."""

    blocks: RowBlocks
    encoding: dict | None
    path: str | None
    splits: list


def sweep_values(split: dict) -> list[tuple[str, object]]:
    """``(key, value)`` of each setting a ``split`` section sweeps, fewest labels first."""
    key = "labeled_per_class" if "labeled_per_class" in split else "labeled"
    values = split[key]
    return [(key, v) for v in (sorted(values) if isinstance(values, list) else [values])]


def scores_of(est, blocks) -> np.ndarray:
    return np.asarray(est.decision_function(model_input(blocks)))


def training_scores(est, blocks) -> np.ndarray:
    """Decision values of the rows ``est`` was fitted on: a transductive model's own answer
    on them (``label_distributions_``, in :meth:`decision_function`'s form), where it has one,
    else its decision function."""
    P = getattr(est, "label_distributions_", None)
    if P is None:
        return scores_of(est, blocks)
    return P[:, 1] - P[:, 0] if P.shape[1] == 2 else P


def scalars(m: dict) -> dict:
    """The scalar metrics (the per-class table left out): what ``model.json`` records."""
    return {k: v for k, v in m.items() if isinstance(v, float)}


class Steps:
    """Execute a validated workflow document's steps up to the fitted models.

    Parameters
    ----------
    doc : dict
        The workflow (``data``, ``split``, ``estimator``, ``evaluation``, optional ``graph``).
    client : distributed.Client
    progress : Progress
        Times each phase (``read``, ``graph``, ``fit``, ``scores``) into ``progress.timings``.
    resume : bool
        Continue an estimator's outer loop from its checkpoint, when one was written.
    """

    def __init__(self, doc: dict, client, progress, *, resume: bool = False):
        #: whether the last fit started from an earlier model (``fit_all``'s ``start_from``)
        self.warm_started = False
        self.doc = doc
        self.client = client
        self.progress = progress
        self.resume = resume

    # what a command may change --------------------------------------------------------------
    def data_path(self) -> str | None:
        """The file to read (``data.path``; a run fills in its ``{date}``), or the files of
        the views (``data.paths``)."""
        return self.doc["data"].get("path") or self.doc["data"].get("paths")

    def estimator_params(self) -> dict:
        return dict(self.doc["estimator"]["params"])

    def fitted_before(self):
        """A model fitted by an earlier attempt of this same command, to use as it is."""
        return None

    def fitted(self, est) -> None:
        """Called with the last setting's model right after it is fitted."""

    # the steps ------------------------------------------------------------------------------
    def read(self, *, n_features: int | None = None) -> Data:
        """Read the rows and choose every setting's labeled (and test) rows, as phase ``read``.

        ``n_features``: the width of a model whose features new data must land in.
        """
        sp = self.doc["split"]
        with self.progress.phase("read"):
            path = self.data_path()
            blocks, encoding = sources.load(self.doc["data"], path, self.client,
                                            n_features=n_features)
            y = blocks.gather_labels()
            splits = [(setting, split_mod.choose(y, test_fraction=sp["test_fraction"],
                                                 seed=sp["seed"], **{setting[0]: setting[1]}))
                      for setting in sweep_values(sp)]
        return Data(blocks, encoding, path, splits)

    def fit_all(self, data: Data, *, start_from=None) -> list[dict]:
        """Fit and score each setting of the sweep; one result per setting, the last kept whole.

        ``start_from``: a fitted model of the same estimator to start each fit from (a
        warm-started retrain), where the estimator has such a start (``_warm_start``).
        """
        results = []
        for k, ((key, value), split) in enumerate(data.splits):
            last = k == len(data.splits) - 1
            held_out = bool(split.test.any())
            # Without held-out rows the training rows are the rows as read: no copy of them.
            train = split_mod.take(data.blocks, split.train) if held_out else data.blocks
            test = split_mod.take(data.blocks, split.test) if held_out else None
            y_train = split.train_labels()
            warm = {}
            if start_from is not None and hasattr(start_from, "_warm_start"):
                known = y_train[y_train != split_mod.UNLABELED]
                warm = start_from._warm_start(train, np.unique(known))
            est = self._fit(train, y_train, last=last, warm=warm)
            with self.progress.phase("scores"):
                result = self._scores(est, split, train, test)
            if not last:  # only the final model's rows are written out
                result["train_scores"] = None
            results.append({"setting": {key: value}, "counts": split.counts(), **result,
                            "estimator": est, "test": test if last else None})
        return results

    def model_fields(self, data: Data, final: dict) -> tuple[dict, dict]:
        """``(metrics, extra)`` of the final model's ``model.json``, alike for every command:
        the scalar metrics, the data path, the fit's round trips and bytes, and the KDD99
        encoding a prediction file must be read with."""
        extra = {"data": data.path, "round_trips": final["round_trips"],
                 "bytes_moved": final["bytes_moved"]}
        if data.encoding is not None:
            extra["kdd99_encoding"] = data.encoding
        return scalars(final["metrics"]), extra

    # parts ----------------------------------------------------------------------------------
    def _fit(self, train, y_train, *, last: bool, warm: dict):
        if last:
            earlier = self.fitted_before()
            if earlier is not None:
                return earlier
        name = self.doc["estimator"]["name"]
        est = build_estimator(name, self.estimator_params(), client=self.client)
        # a start from a model of another estimator (the workflow changed) is not taken
        fit_kw = {k: v for k, v in warm.items()
                  if k in inspect.signature(est.fit).parameters}
        self.warm_started = bool(fit_kw)
        if "graph" in self.doc:
            fit_kw["graph"] = self._graph(train)
        checkpoint = getattr(est, "checkpoint", None)
        if self.resume and checkpoint and _exists(checkpoint):
            # An outer loop interrupted mid-way goes on from its last stage.
            fit_kw["resume"] = True
        # The estimator section was checked when the workflow was loaded (or the flags read),
        # before any data: the fit does not check its parameters again.
        with self.progress.phase("fit", counter=lambda: train.round_trips, unit="round trips"), \
                config_context(skip_parameter_validation=True):
            est.fit(model_input(train), y_train, **fit_kw)
        est.client = None
        if last:
            self.fitted(est)
        return est

    def _graph(self, train):
        """The weighted kNN graph of the training rows, for estimators whose fit takes one."""
        from ..graph import build_graph, build_knn

        g = self.doc["graph"]
        with self.progress.phase("graph"):
            neigh = build_knn(train, g.get("n_neighbors", 10), metric=g.get("metric", "euclidean"),
                              random_state=g.get("random_state", 0))
            return build_graph(neigh, weights=g.get("weights", "heat"),
                               symmetrize=g.get("symmetrize", "max"))

    def _scores(self, est, split, train, test) -> dict:
        """Decision values of the training rows and the metrics, with the round trips and
        bytes the training rows have cost so far (read, fit and these scores)."""
        train_scores = training_scores(est, train)
        y_train = split.y[split.train]
        labeled = split.labeled[split.train]
        # Transductive error: unlabeled training rows whose true label is known.
        hidden = ~labeled & (y_train != split_mod.UNLABELED)
        y_test = split.y[split.test]
        test_scores = scores_of(est, test) if test is not None else np.empty(0)
        evaluation = self.doc["evaluation"]
        promote = evaluation.get("promote")  # a run's; fit stores no versions to promote
        m = metrics_mod.evaluate(
            est, test_scores, y_test,
            wanted=evaluation["metrics"] + ([promote["metric"]] if promote else []),
            unlabeled_scores=train_scores[hidden], y_unlabeled=y_train[hidden],
            labeled_scores=train_scores[labeled], y_labeled=y_train[labeled])
        return {"metrics": m, "y_test": y_test, "train_scores": train_scores,
                "round_trips": int(train.round_trips), "bytes_moved": int(train.bytes_moved)}


def _exists(url: str) -> bool:
    import fsspec

    fs, path = fsspec.core.url_to_fs(url)
    return fs.exists(path)
