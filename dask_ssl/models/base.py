"""What every linear dask-ssl classifier shares: input handling, one-vs-rest, prediction, saving."""

from __future__ import annotations

import time
import uuid
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..cluster import get_client
from ..linalg import RowBlocks, workerstate
from ..linalg.blas import single_blas_thread
from ..solvers.mfn import MFNSolver, ws_init
from ..linalg.recovery import solve_with_restarts
from ..linalg.rowblocks import is_dask_array
from ._clone import SharesClient
from ._constraints import validate
from ._input import check_finite_local, fit_input, target_columns, to_blocks
from ._part import fit_parts
from ._selection_cost import measured_fit

#: Above this many features the Newton systems are solved by CG instead of a Gram + Cholesky.
GRAM_MAX_FEATURES = 1000
#: ``solver`` of the linear estimators: Gram + Cholesky, CG, or chosen by the feature count.
LINEAR_SOLVERS = StrOptions({"auto", "gram", "cg"})


class OneVsRestLabels:
    """Labels from one-vs-rest scores: the sign for two classes, else the best class."""

    def _labels_from_scores(self, scores):
        scores = np.asarray(scores)
        if scores.ndim == 1 or scores.shape[1] == 1:
            return self.classes_[(scores.ravel() > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def predict(self, X):
        return self._labels_from_scores(self.decision_function(X))


def hinge_costs(y: np.ndarray, costs: np.ndarray) -> dict:
    """Per-row hinge costs of labeled rows: ``cpos`` for y = +1, ``cneg`` for y = -1."""
    return {"cpos": np.where(y > 0, costs, 0.0), "cneg": np.where(y < 0, costs, 0.0)}


def init_blocks(blocks, token: str, arrays: dict) -> None:
    """Ship per-row arrays (n-sized, split like the blocks) into each block's worker state."""
    per_block = [({k: v[s] for k, v in arrays.items()},) for s in blocks.block_slices()]
    blocks.call(ws_init, token, per_block=per_block)


def check_sample_weight(sample_weight, codes: np.ndarray) -> np.ndarray:
    """Per-row cost multipliers as float64: finite, non-negative, one per row, and positive on
    labeled rows of at least two classes."""
    n_rows = codes.shape[0]
    if sample_weight is None:
        return np.ones(n_rows)
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.shape != (n_rows,) or not np.all(np.isfinite(weights)) or (weights < 0).any():
        raise ValueError(f"sample_weight must be a finite, non-negative vector with one entry "
                         f"per row ({n_rows}), got shape {weights.shape}")
    weighted = codes[(codes >= 0) & (weights > 0)]
    if weighted.size == 0:
        raise ValueError("sample_weight is zero on every labeled row")
    if np.unique(weighted).size < 2:
        raise ValueError("sample_weight is positive on the labeled rows of only one class; "
                         "need at least two classes with positive weight")
    return weights


class LinearSSLClassifier(SharesClient, ClassifierMixin, OneVsRestLabels, BaseEstimator):
    """Base of the linear estimators: ``decision_function(x) = w^T x + b`` per class.

    Subclasses implement ``_fit_binary(blocks, y, costs, w0, token) -> dict`` where ``y`` holds
    +1/-1 on labeled rows and 0 on unlabeled ones; the dict has ``w`` (bias last), ``objective``,
    ``n_iter`` and optionally ``history`` and ``transduction`` (per-row +1/-1 on all rows).

    A semi-supervised subclass given no unlabeled row fits the supervised L2-SVM on the labeled
    rows instead, with a warning (as scikit-learn's ``SelfTrainingClassifier`` does): its
    objective without unlabeled rows is the L2-SVM objective.
    """

    #: Whether y marks unlabeled rows by default (-1, scikit-learn's convention). A supervised
    #: estimator reads every entry of a y it is given as a class, so -1 stays a class.
    _semi_supervised = True
    #: Without unlabeled rows, fit the supervised L2-SVM (with a warning) instead.
    _supervised_fallback = True

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # fitting -----------------------------------------------------------------------------
    def _check_params(self) -> None:
        """Every hyperparameter against its declared constraint, then what the constraints
        cannot say (the kernel's own parameters). Runs first in ``fit``, before any work."""
        validate(self)
        self._check_feature_map()

    def _solver(self, blocks: RowBlocks, token: str) -> MFNSolver:
        gram = self.solver == "gram" or (self.solver == "auto"
                                         and blocks.n_features <= GRAM_MAX_FEATURES)
        return MFNSolver(blocks, token, bias=self.fit_intercept, gram=gram, tol=self.tol,
                         max_newton=self.max_iter)

    def fit(self, X, y=None, *, sample_weight=None, coef_init=None, resume=False):
        """Fit on labeled and unlabeled rows.

        Parameters
        ----------
        X : array, sparse matrix, dask array or RowBlocks, shape (n, d)
        y : array of shape (n,), optional
            Class labels; rows equal to ``unlabeled`` are unlabeled. Taken from the blocks'
            labels when X is a RowBlocks that carries them.
        sample_weight : array of shape (n,), optional
            Per-example cost multipliers: labeled costs are ``c_i / sum_labeled c`` (svmlin's
            1/l with unit weights), so an integer weight means the same as repeating the row.
        coef_init : array of shape (n_classes_fitted, d + 1), optional
            Starting weights (bias last), e.g. last night's model: the seeds' "seeding".
        resume : bool, default=False
            Continue from the estimator's ``checkpoint`` (semi-supervised estimators only).
        """
        self._check_params()
        return self._fit(X, y, sample_weight=sample_weight, coef_init=coef_init, resume=resume)

    @measured_fit
    def _fit(self, X, y, *, graph=None, sample_weight=None, coef_init=None, resume=False):
        """:meth:`fit` after the parameter checks; ``graph`` (estimators with a graph on the
        rows) is handed to :meth:`_prepare`."""
        t0 = time.perf_counter()
        if resume and getattr(self, "checkpoint", None) is None:
            raise ValueError(f"{type(self).__name__} has no checkpoint to resume from")
        self.restarts_ = 0
        X, labels = fit_input(self, X, y, graph=graph)
        classes, codes, marker = labels.classes, labels.codes, labels.marker
        weights = check_sample_weight(sample_weight, codes)
        client = get_client(self.client)
        fit_part = getattr(self, "_fit_binary", None)  # absent where _fit_targets is whole
        if self._semi_supervised and self._supervised_fallback and not (codes < 0).any():
            warnings.warn(f"y has no unlabeled rows (marker {marker!r}): {type(self).__name__} "
                          "fits the supervised L2-SVM on them", UserWarning, stacklevel=2)
            fit_part = self._fit_supervised
        n_labeled = int(labels.labeled.sum())
        targets = labels.targets
        parts = fit_parts(getattr(self, "checkpoint", None), len(targets), resume)
        # The stage loops restore their own snapshots; a worker lost anywhere else (input
        # check, feature map, graph, a solve without stages) repeats the fit's worker part.
        (blocks, results, order), restarts = solve_with_restarts(
            lambda: self._fit_on_workers(X, client, codes, weights, targets, parts, coef_init,
                                         fit_part, graph), what=type(self).__name__)
        self.restarts_ += restarts
        W = np.vstack([out["w"] for out in results])
        objectives = [out["objective"] for out in results]
        iters = [out["n_iter"] for out in results]
        histories = [out.get("history", []) for out in results]
        transductions = [out.get("transduction") for out in results]
        if self.fit_intercept:
            self.coef_, self.intercept_ = W[:, :-1].copy(), W[:, -1].copy()
        else:
            self.coef_, self.intercept_ = W, np.zeros(W.shape[0])
        self.classes_ = classes
        self.n_features_in_ = blocks.n_features
        self.objective_ = objectives[0] if len(objectives) == 1 else np.array(objectives)
        self.n_iter_ = iters[0] if len(iters) == 1 else np.array(iters)
        self.history_ = histories[0] if len(histories) == 1 else histories
        if self._semi_supervised and all(t is not None for t in transductions):
            scores = np.column_stack(transductions)
            if order is not None:
                scores = scores[np.argsort(order)]
            self.transduction_ = self._labels_from_scores(scores)
        self.n_labeled_ = n_labeled
        self.data_shape_ = (blocks.n_rows, blocks.n_features)
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _fit_on_workers(self, X, client, codes, weights, targets, parts, coef_init, fit_part,
                        graph):
        """Input blocks, feature map, graph (``_prepare``) and the per-target fits:
        ``(blocks, results, row order)``."""
        blocks = to_blocks(X, client, self.n_blocks)
        self.feature_map_ = self._fit_feature_map(blocks)
        features = blocks if self.feature_map_ is None else self.feature_map_.transform(blocks)
        dim = features.n_features + (1 if self.fit_intercept else 0)
        if coef_init is not None:
            coef_init = np.asarray(coef_init, dtype=np.float64).reshape(len(targets), -1)
            if coef_init.shape[1] != dim:
                raise ValueError(f"coef_init has {coef_init.shape[1]} columns, expected {dim} "
                                 f"(features{' + bias' if self.fit_intercept else ''})")
        # Estimators with a graph line the rows up with it; a re-split reorders the rows.
        features, order, prepared = self._prepare(blocks, features, client, graph)
        if order is not None:
            codes, weights = codes[order], weights[order]
        labeled = codes >= 0
        # Labeled cost c_i / sum of the labeled c (svmlin: 1/l with unit weights), so that an
        # integer weight means the same as repeating the row, as scikit-learn expects.
        costs = weights / weights[labeled].sum()
        try:
            # The driver's BLAS work is d-sized and between round trips; a threaded BLAS
            # gains nothing there, and its spinning threads took a whole core from the
            # workers of a LocalCluster (RCV1-like TSVM: driver CPU 48 s in a 50 s fit).
            with single_blas_thread():
                results = self._fit_targets(features, codes, targets, parts, costs, coef_init,
                                            client, fit_part, prepared)
        finally:
            self._release(prepared)
        return blocks, results, order

    def _fit_targets(self, blocks, codes, targets, parts, costs, coef_init, client,
                     fit_part, prepared) -> list:
        """One ``fit_part`` (``_fit_binary``, or ``_fit_supervised`` without unlabeled rows)
        result per one-vs-rest target and its :class:`~._part.Part` (a subclass may solve
        them together, or with what :meth:`_prepare` set up)."""
        results = []
        for k, (cls, part) in enumerate(zip(targets, parts)):
            yk = target_columns(codes, [cls])[:, 0]
            token = f"{type(self).__name__}-{uuid.uuid4().hex[:12]}"
            try:
                results.append(fit_part(blocks, yk, costs, None if coef_init is None
                                        else coef_init[k], token, part))
            finally:
                client.run(workerstate.drop, token)
        return results

    def _prepare(self, blocks, features, client, graph):
        """For estimators with a graph on the rows (``graph``: one given to their fit, or
        None): ``(feature blocks to fit on, the row order they hold (None: the input's order),
        what the fit's solves need beside them (None here))``."""
        return features, None, None

    def _release(self, prepared) -> None:
        """Free what :meth:`_prepare` set up on the workers."""

    def _fit_supervised(self, blocks, y, costs, w0, token, part) -> dict:
        """One L2-SVM-MFN solve on the labeled rows (L2SVM, and S3VMs without unlabeled rows)."""
        init_blocks(blocks, token, hinge_costs(y, costs))
        # every row is labeled here: the transduction is the labels themselves
        return {**self._solve_mfn(blocks, token, w0), "transduction": y}

    def _solve_mfn(self, blocks, token, w0) -> dict:
        res = self._solver(blocks, token).solve(w0, self.gamma_A)
        return {"w": res.w, "objective": res.objective, "n_iter": res.n_newton,
                "history": [{"newton_step": k, "objective": v} for k, v in enumerate(res.history)]}

    # feature map (kernel, n_components: Nystrom features before the linear model) -----------
    def _check_feature_map(self) -> None:
        if getattr(self, "kernel", None) is not None:
            self._feature_map().check_params()

    def _feature_map(self):
        from ..kernels.nystrom import NystromFeatures

        return NystromFeatures(kernel=self.kernel, kernel_params=self.kernel_params,
                               n_components=self.n_components, landmarks=self.landmarks,
                               random_state=self.random_state)

    def _fit_feature_map(self, blocks):
        """The fitted Nystrom map when ``kernel`` is set, else None."""
        if getattr(self, "kernel", None) is None:
            return None
        return self._feature_map().fit(blocks)

    def _run_stages(self, driver, w0, part) -> dict:
        """The resumable stage loop of one part (checkpoint per part)."""
        from ..loop import StageLoop

        loop = StageLoop(driver, checkpoint=part.checkpoint, verbose=self.verbose)
        loop.run(w0, resume=part.resume)
        self.restarts_ += loop.restarts
        return driver.result()

    # prediction --------------------------------------------------------------------------
    def decision_function(self, X):
        """``X w + b``: shape (n,) for two classes (positive = ``classes_[1]``), else (n, k)."""
        check_is_fitted(self, "coef_")
        fm = getattr(self, "feature_map_", None)
        n_in = self.n_features_in_ if fm is not None else self.coef_.shape[1]
        if isinstance(X, RowBlocks) or is_dask_array(X):
            if len(X.shape) != 2 or X.shape[1] != n_in:
                raise ValueError(f"X has shape {X.shape}; {type(self).__name__} is expecting "
                                 f"{n_in} features")
        else:
            X = validate_data(self, X, reset=False, accept_sparse="csr", dtype=np.float64,
                              ensure_all_finite=False)
            check_finite_local(X)
        if fm is not None:
            X = fm.transform(X)
        d = self.coef_.shape[1]
        if isinstance(X, RowBlocks):
            W = np.column_stack([self.coef_, self.intercept_]).T
            parts = X.call(_block_scores, W, d)
            scores = np.concatenate(parts)
        elif is_dask_array(X):
            scores = X @ self.coef_.T + self.intercept_
        else:
            scores = np.asarray(X @ self.coef_.T) + self.intercept_
        return scores[:, 0] if self.classes_.size == 2 else scores

    # persistence (see artifact.py) --------------------------------------------------------
    def _fitted_info(self) -> dict:
        info = fitted_info(self)
        fm = getattr(self, "feature_map_", None)
        if fm is not None and not callable(fm.kernel):
            info["feature_map_kernel_params"] = fm.kernel_params_
        return info

    def _fitted_arrays(self) -> dict:
        arrays = {"coef": self.coef_, "intercept": self.intercept_, "classes": self.classes_}
        fm = getattr(self, "feature_map_", None)
        if fm is not None:
            landmarks = fm.components_
            arrays.update(landmarks=landmarks.toarray() if sp.issparse(landmarks) else landmarks,
                          landmark_indices=fm.component_indices_,
                          normalization=fm.normalization_)
        return arrays

    def _restore(self, arrays: dict, doc: dict) -> None:
        self.coef_ = arrays["coef"]
        self.intercept_ = arrays["intercept"]
        self.classes_ = arrays["classes"]
        restore_info(self, doc)
        self.feature_map_ = None
        if "landmarks" in arrays:
            fm = self._feature_map()
            fm.components_ = arrays["landmarks"]
            fm.component_indices_ = arrays["landmark_indices"]
            fm.normalization_ = arrays["normalization"]
            # models saved before the fitted width was stored ran with the parameters given
            fm.kernel_params_ = doc.get("feature_map_kernel_params", dict(fm.kernel_params or {}))
            fm.n_features_in_ = fm.components_.shape[1]
            fm.n_features_out_ = fm.normalization_.shape[1]
            self.feature_map_ = fm

    def coef_with_bias(self) -> np.ndarray:
        """Fitted weights as ``(k, d + 1)`` with the bias last: a ``coef_init`` for a retrain."""
        return np.column_stack([self.coef_, self.intercept_])

    def _warm_start(self, X, classes) -> dict:
        """``fit`` keywords that start a fit of the same estimator on the rows ``X`` with
        ``classes`` from this model (a retrain): its weights, when the classes are the same."""
        if not np.array_equal(classes, self.classes_):
            return {}
        return {"coef_init": self.coef_with_bias()}


#: What a selection on the labeled rows chose (with the graph term's coefficient it gives),
#: and its table (:mod:`._selection`), stored under the attribute's name where an estimator
#: has it.
SELECTED = ("selection_", "selection_cost_", "gamma_I_", "gamma_I_effective_", "gamma_u_")


def fitted_info(est) -> dict:
    """The fitted scalars every saved classifier stores in ``model.json``."""
    obj = est.objective_
    return {
        "n_features": int(est.n_features_in_),
        "data_shape": [int(v) for v in est.data_shape_],
        "n_labeled": int(est.n_labeled_),
        "classes": est.classes_.tolist(),
        "objective": obj.tolist() if isinstance(obj, np.ndarray) else float(obj),
        "n_iter": est.n_iter_.tolist() if isinstance(est.n_iter_, np.ndarray) else int(est.n_iter_),
        "fit_seconds": float(est.fit_seconds_),
        "history": est.history_,
        **{name: getattr(est, name) for name in SELECTED if hasattr(est, name)},
    }


def restore_info(est, doc: dict) -> None:
    """Set the attributes :func:`fitted_info` stored."""
    est.n_features_in_ = doc["n_features"]
    est.data_shape_ = tuple(doc["data_shape"])
    est.n_labeled_ = doc["n_labeled"]
    est.objective_ = np.asarray(doc["objective"]) if isinstance(doc["objective"], list) else doc["objective"]
    est.n_iter_ = doc["n_iter"]
    est.fit_seconds_ = doc["fit_seconds"]
    est.history_ = doc.get("history", [])
    for name in SELECTED:
        if name in doc:
            setattr(est, name, doc[name])
    if "selection_" in doc and "selection_cost_" not in doc:
        # models saved before the cost was recorded
        est.selection_cost_ = None


def _block_scores(i, X, W, d):
    return np.asarray(X @ W[:d]) + W[d]
