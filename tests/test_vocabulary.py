"""One vocabulary: every exported estimator names the same meaning the same way, declares the
values of every parameter, and checks them before any work.

The table below is the vocabulary (DESIGN.md's, with the seeds' symbols); a new estimator whose
parameter is not in it, or that gives a shared name another set of values without saying why in
OVERRIDES, fails here.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import check_param_validation

import dask_ssl.models as models
import dask_ssl.multiview as multiview
from dask_ssl.models._constraints import SHARED

#: name -> meaning. Regularizers carry the seeds' symbols (gamma_A, gamma_I), so snake_case here
#: allows one capital suffix.
VOCABULARY = {
    "gamma_A": "ambient-norm weight (svmlin -W, thesis lambda / gamma_A)",
    "gamma_I": "graph-term weight (thesis gamma_I), scaled by graph_normalization",
    "gamma_I_pos": "graph-term weight of the positive class's graph (thesis 2.8)",
    "gamma_I_neg": "graph-term weight of the negative class's graph (thesis 2.8)",
    "gamma_u": "weight of the unlabeled loss (gamma', svmlin -U)",
    "pos_fraction": "positive share of the unlabeled rows (r, svmlin -R)",
    "max_switches": "label pairs switched per TSVM round (S, svmlin -S)",
    "unlabeled_weight": "pull of unlabeled scores towards the prior, or 0 without one (mu)",
    "prior": "supervised model whose scores are the unlabeled rows' targets",
    "class_balance": "shares the unlabeled rows are cut to",
    "graph_normalization": "scaling of gamma_I: 1/(u+l)^2 (default), 1/sum W_ij or none",
    "loss": "V: 'squared', 'squared_hinge' or 'hinge'",
    "gamma_C": "coupling between views (thesis gamma_C, Rosenberg lambda), over 1/(u+l)",
    "mu": "weight of view 2's labeled loss against view 1's (thesis ch. 4 mu)",
    "formulation": "objective: CoRLS coupled or averaged, CoMR semi-supervised or transductive",
    "view_weights": "weights of the views' graphs in the multi-view graph (thesis alpha)",
    "combine": "multi-view prediction: the views' mean or one view",
    "initial_temperature": "DA's starting temperature T",
    "initial_gamma_u": "DA's gamma' at the first stage, raised to gamma_u (None: fixed)",
    "cold_start": "DA: also anneal from the seeds' relative temperature, keep the lower objective",
    "anneal_factor": "DA's temperature divisor R per stage",
    "anneal_tol": "DA's KL / entropy stopping tolerance (epsilon)",
    "max_stages": "bound on the outer loop's stages",
    "max_inner": "bound on alternations per stage",
    "n_neighbors": "k of the kNN graph (nn)",
    "metric": "distance of the kNN graph",
    "weights": "edge weights of the kNN graph",
    "t": "heat-kernel width",
    "symmetrize": "how the kNN graph is made symmetric",
    "normalized": "normalized Laplacian D^-1/2 L D^-1/2",
    "p": "power of the Laplacian ('degree')",
    "search_epsilon": "recall knob of the approximate kNN search",
    "partition": "how graph rows are split among the workers",
    "preconditioner": "preconditioner of the graph systems",
    "kernel": "base kernel K, by scikit-learn name or callable",
    "kernel_params": "the kernel's parameters (the RBF width is gamma there)",
    "n_components": "Nystrom landmarks m (RegularizedSpectralClustering: eigenfunctions)",
    "landmarks": "how Nystrom landmarks are drawn",
    "eig_tol": "relative cut of the kernel matrix's eigenvalues",
    "n_basis": "basis size d of a sparse model (int, or a share of n)",
    "basis": "how a sparse model's basis J is found, or the row indices",
    "method": "objective on a sparse basis: restricted LapRLS, slack, decoupled, sigmoid",
    "kappa": "candidates scored per greedy step (kappa)",
    "nu": "slack coupling of graph outputs f and basis outputs (nu)",
    "gamma_S": "l1 weight of a sparse fit (thesis gamma_S, Sinha-Belkin lambda)",
    "sign_tol": "no-sign-change filter of eigenvectors (Sinha-Belkin eps, relative)",
    "rho": "slope of the sigmoid on a sparse model's outputs (rho)",
    "solver": "the estimator's solvers (its own options)",
    "tol": "solver tolerance",
    "max_iter": "solver iteration bound",
    "max_nodes": "branch-and-bound node bound",
    "fit_intercept": "fit a bias",
    "early_stopping": "stop the primal solver on the labeled rows' error",
    "unlabeled": "marker of unlabeled rows in y",
    "client": "the Dask client",
    "n_blocks": "row blocks for in-memory X",
    "random_state": "seed wherever randomness enters",
    "checkpoint": "directory or URL of stage checkpoints",
    "verbose": "progress lines",
}

#: Names an earlier release used, which must not come back.
RETIRED = {"gamma", "T0", "epsilon", "seed", "C", "alpha", "lambda_"}

#: (estimator, parameter) -> why it takes other values than the shared constraint.
OVERRIDES = {
    ("L2SVM", "solver"): "Gram + Cholesky or CG Newton systems",
    ("RLS", "solver"): "Gram + Cholesky or CG Newton systems",
    ("TSVM", "solver"): "Gram + Cholesky or CG Newton systems",
    ("DAS3VM", "solver"): "Gram + Cholesky or CG Newton systems",
    ("LinearLapRLS", "solver"): "Gram + Cholesky or CG normal equations",
    ("LinearLapSVM", "solver"): "Gram + Cholesky or CG Newton systems",
    ("LapRLS", "solver"): "direct dense solve or primal on the workers",
    ("LapSVM", "solver"): "direct dense solve or primal on the workers",
    ("TSVM", "kernel"): "None: linear on the input features (Nystrom features otherwise)",
    ("DAS3VM", "kernel"): "None: linear on the input features (Nystrom features otherwise)",
    ("LinearLapRLS", "kernel"): "None: linear on the input features",
    ("LinearLapSVM", "kernel"): "None: linear on the input features",
    ("TSVM", "gamma_u"): "'auto' selects it on the labeled rows",
    ("DAS3VM", "gamma_u"): "'auto' selects it on the labeled rows",
    ("KernelDAS3VM", "gamma_u"): "'auto' selects it on the labeled rows",
    ("GraphTransduction", "metric"): "'auto' picks it by the data",
    ("GraphTransduction", "weights"): "'auto' follows the metric",
    ("GraphTransduction", "class_balance"): "'auto' selects it with gamma_I",
    ("CoMR", "class_balance"): "'auto': 'labeled' for an unchecked graph term",
    ("GraphTransduction", "unlabeled_weight"): "'auto' selects it with gamma_I",
    ("RegularizedSpectralClustering", "gamma_I"): "only gamma_A / gamma_I enters Eq 2.28",
    ("LapRLS", "n_neighbors"): "'auto' selects (k, p) by leave-one-out",
    ("LapSVM", "n_neighbors"): "'auto' selects (k, p) by leave-one-out",
    ("LapRLS", "p"): "'auto' selects (k, p) by leave-one-out",
    ("LapSVM", "p"): "'auto' selects (k, p) by leave-one-out",
    ("LapRLS", "n_components"): "None: the exact expansion over all rows",
    ("LapSVM", "n_components"): "None: the exact expansion over all rows",
    ("LapSVM", "loss"): "the two losses of thesis ch. 2",
    ("KernelDAS3VM", "loss"): "DA(l2) and DA(sqr) of thesis ch. 3",
    ("BranchAndBoundS3VM", "loss"): "the losses of thesis ch. 3",
    ("SparseLapRLS", "solver"): "f-systems by a sparse LU on the driver or block CG on the workers",
    ("SparseLapRLS", "gamma_A"): "'auto' selects it with gamma_I by leave-one-out (laprls, slack)",
    ("SparseLapRLS", "n_neighbors"): "'auto' selects (k, p) by graph transduction's CV error",
    ("SparseLapRLS", "p"): "'auto' selects (k, p) by graph transduction's CV error",
    ("SparseEigenfunctionClassifier", "n_components"): "None: the exact eigenvectors of K",
    ("SparseEigenfunctionClassifier", "gamma_S"): "'auto' chosen against kernel RLS",
}
# multi-view estimators: a hyperparameter of each view takes one value or a list per view
for _est in ("CoRLS", "CoLapRLS", "CoLapSVM"):
    for _name in ("gamma_A", "kernel", "kernel_params"):
        OVERRIDES[(_est, _name)] = "one value for every view or a list with one per view"
for _est in ("CoLapRLS", "CoLapSVM"):
    OVERRIDES[(_est, "gamma_I")] = "per view, 'auto' as LapRLS's"
    OVERRIDES[(_est, "p")] = "'auto' as LapRLS's, on the multi-view graph"
    OVERRIDES[(_est, "solver")] = "each view's LapRLS / LapSVM solvers"
    OVERRIDES[(_est, "class_balance")] = "'auto': 'labeled' for an unchecked graph term"
OVERRIDES[("CoLapSVM", "loss")] = "the two losses of thesis ch. 2"
for _est in ("CoRLS", "CoLapRLS", "CoLapSVM"):
    OVERRIDES[(_est, "n_components")] = "None: the exact kernels (or linear features at scale)"
OVERRIDES[("CoRLS", "solver")] = "the dense block system or the primal one (Gram or CG)"
OVERRIDES[("CoMR", "formulation")] = "Rosenberg's two CoMR objectives (4.3.3 and 4.3.1)"
for _name in ("n_neighbors", "p"):
    OVERRIDES[("CoMR", _name)] = "'auto' selects (k, p) with gamma_I by leave-one-out"
OVERRIDES[("CoMR", "gamma_C")] = "inf gives its MR limit; no 'auto' (gamma_I is what it selects)"

#: Estimators whose y holds unlabeled rows by default.
SUPERVISED = {"L2SVM", "RLS", "ClassDependentLapRLS", "RegularizedSpectralClustering"}

ESTIMATORS = [getattr(models, name) for name in models.__all__
              if inspect.isclass(getattr(models, name))
              and issubclass(getattr(models, name), BaseEstimator)]
#: The multi-view estimators (they take a list of views, so scikit-learn's checks pass them by).
MULTIVIEW = [getattr(multiview, name) for name in multiview.__all__
             if inspect.isclass(getattr(multiview, name))
             and issubclass(getattr(multiview, name), BaseEstimator)]
ALL = ESTIMATORS + MULTIVIEW


def _params(cls) -> dict:
    return {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()
            if k != "self"}


def test_every_exported_estimator_is_walked():
    assert len(ESTIMATORS) == 15
    assert set(models.ESTIMATORS.values()) <= set(ESTIMATORS)
    assert {"CoRLS", "CoLapRLS", "CoLapSVM"} <= {cls.__name__ for cls in MULTIVIEW}


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_names_are_the_vocabulary(cls):
    params = _params(cls)
    kinds = {p.kind for k, p in inspect.signature(cls.__init__).parameters.items()
             if k != "self"}
    assert kinds == {inspect.Parameter.KEYWORD_ONLY}, "hyperparameters are keyword-only"
    assert set(params) <= set(VOCABULARY), set(params) - set(VOCABULARY)
    assert not set(params) & RETIRED
    for name in params:
        assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*(_[A-Z])?(_[a-z]+)?", name), name
    if cls.__name__ not in SUPERVISED:
        assert params.get("unlabeled") == -1, "semi-supervised estimators mark unlabeled as -1"
    if {"n_neighbors", "n_components"} & set(params) and cls.__name__ not in (
            "KernelDAS3VM", "BranchAndBoundS3VM"):
        assert "random_state" in params, "a kNN graph or Nystrom landmarks draw at random"


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_one_name_takes_one_set_of_values(cls):
    declared = cls._parameter_constraints
    assert set(declared) == set(_params(cls))
    for name, constraint in declared.items():
        if (cls.__name__, name) in OVERRIDES:
            assert constraint != SHARED.get(name), f"{name}: the override changes nothing"
        else:
            assert constraint == SHARED[name], f"{cls.__name__}.{name} differs from the shared one"


#: Estimators with a graph term weighted by gamma_I (gamma_I_pos / gamma_I_neg).
GRAPH_ESTIMATORS = {"LapRLS", "LapSVM", "LinearLapRLS", "LinearLapSVM", "GraphTransduction",
                    "RegularizedSpectralClustering", "ClassDependentLapRLS", "CoLapRLS",
                    "CoLapSVM", "SparseLapRLS"}


def test_graph_estimators_scale_gamma_I_one_way_by_default():
    by_name = {cls.__name__: cls for cls in ALL}
    for name in GRAPH_ESTIMATORS:
        assert _params(by_name[name])["graph_normalization"] == "n2", name


def test_overrides_name_real_parameters():
    by_name = {cls.__name__: cls for cls in ALL}
    for est, name in OVERRIDES:
        assert name in _params(by_name[est]), (est, name)


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_every_parameter_is_checked_before_any_work(cls):
    # scikit-learn's own check: _parameter_constraints covers every parameter, and fit raises
    # InvalidParameterError naming the parameter for a value of a wrong type or outside its
    # declared values (the data is never looked at: no client is needed for these fits)
    check_param_validation(cls.__name__, cls())


def test_readme_lists_the_vocabulary():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    listed = dict(re.findall(r"^\| `(\w+)` \| (.+) \|$", readme, flags=re.M))
    assert listed == VOCABULARY
