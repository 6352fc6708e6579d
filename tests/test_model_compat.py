"""Model directories stored before the one vocabulary still load and predict identically.

``tests/fixtures/models-2d7d3ef`` was written by the code at commit 2d7d3ef, before ``gamma``
became ``gamma_A``, ``T0`` ``initial_temperature``, ``epsilon`` ``anneal_tol``, the kernel
S3VMs' losses ``"l2"`` / ``"sqr"`` ``"squared_hinge"`` / ``"squared"`` and the semi-supervised
default marker ``unlabeled=None`` -1. ``expected.npz`` holds each model's decision values on
12 rows, computed by that code right after fitting. ``tests/fixtures/models-bbbc9e4`` holds linear
graph models written before ``gamma_I`` took ``graph_normalization`` there;
``tests/fixtures/models-da83472`` Co-Laplacian models written before their class offsets
(``class_balance``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from dask_ssl.models._selection import SelectionWarning
from dask_ssl.models.artifact import load_model

FIXTURES = Path(__file__).parent / "fixtures" / "models-2d7d3ef"
EXPECTED = np.load(FIXTURES / "expected.npz")

#: Parameters each stored document gave under an old name or value, as they read now.
MAPPED = {
    "DAS3VM": {"gamma_A": 1e-2, "initial_temperature": 5.0, "anneal_tol": 1e-5,
               "unlabeled": -1, "initial_gamma_u": None,  # fitted with gamma' fixed
               "cold_start": False},  # and one annealing
    "L2SVM": {"gamma_A": 1e-2, "unlabeled": None},
    "TSVM": {"gamma_A": 1e-2, "gamma_u": 0.5, "unlabeled": -1},
    "KernelDAS3VM": {"gamma_A": 1e-2, "loss": "squared_hinge", "initial_temperature": 10.0,
                     "anneal_tol": 1e-6, "unlabeled": -1},
    "KernelDAS3VM-sqr": {"gamma_A": 1e-2, "loss": "squared", "unlabeled": -1},
    "LapRLS": {"gamma_A": 1e-6, "n_neighbors": 5, "p": 1},
    "LinearLapRLS": {"gamma_A": 1e-3, "gamma_I": "auto", "graph_normalization": "n2",
                     "unlabeled": -1},
}


def test_every_fixture_is_checked():
    assert sorted(MAPPED) == sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


@pytest.mark.parametrize("name", sorted(MAPPED))
def test_old_model_loads_and_predicts_identically(name):
    model = load_model(FIXTURES / name)
    params = model.get_params(deep=False)
    assert {k: params[k] for k in MAPPED[name]} == MAPPED[name]
    scores = model.decision_function(EXPECTED["X"])
    # the stored values came from another machine: BLAS sums in an order set by the CPU's
    # vector width, which moves a kernel expansion's last digits (seen: 2.6e-12 relative)
    np.testing.assert_allclose(scores, EXPECTED[name], rtol=1e-10, atol=1e-14)
    assert np.array_equal(model.predict(EXPECTED["X"]),
                          model.classes_[(EXPECTED[name] > 0).astype(int)])


def test_ramped_da_stored_before_the_cold_start_refits_with_one_annealing():
    """A DAS3VM stored with gamma' raised along its annealing but before ``cold_start``
    existed ran one annealing: its parameters read as ``cold_start=False``, what it was
    fitted with, and a parameter it was stored with is kept."""
    from dask_ssl.models import DAS3VM
    from dask_ssl.models._renames import upgrade_params

    stored = {"gamma_A": 1e-3, "gamma_u": 1.0, "initial_gamma_u": 1e-5}
    assert upgrade_params(DAS3VM, stored) == {**stored, "cold_start": False}
    assert upgrade_params(DAS3VM, {**stored, "cold_start": True})["cold_start"] is True


#: Models of the linear graph estimators written at commit bbbc9e4, when their gamma_I was the
#: graph term's coefficient itself (``make.py`` there wrote them): name -> what the stored
#: gamma_I reads as now.
LINEAR_FIXTURES = Path(__file__).parent / "fixtures" / "models-bbbc9e4"
LINEAR_EXPECTED = np.load(LINEAR_FIXTURES / "expected.npz")
LINEAR_MAPPED = {
    # a given coefficient: the same value taken as given
    "LinearLapRLS-given": {"gamma_I": 0.3, "graph_normalization": "none"},
    # "auto" chose the coefficient by normalization-free shares and fell back to 1e4 / n^2:
    # today's "auto" under the default
    "LinearLapSVM-auto": {"gamma_I": "auto", "graph_normalization": "n2"},
    "LinearLapRLS-few": {"gamma_I": "auto", "graph_normalization": "n2"},
}


def test_every_linear_fixture_is_checked():
    assert sorted(LINEAR_MAPPED) == sorted(p.name for p in LINEAR_FIXTURES.iterdir()
                                           if p.is_dir())


@pytest.mark.parametrize("name", sorted(LINEAR_MAPPED))
def test_old_linear_graph_model_reads_in_todays_units_and_refits_the_same(client, name):
    model = load_model(LINEAR_FIXTURES / name)
    params = model.get_params(deep=False)
    assert {k: params[k] for k in LINEAR_MAPPED[name]} == LINEAR_MAPPED[name]
    X = LINEAR_EXPECTED["X"]
    np.testing.assert_allclose(model.decision_function(X), LINEAR_EXPECTED[name], rtol=1e-12,
                               atol=1e-14)
    stored = model.model_document_
    # the stored coefficient is gamma_I_effective_; gamma_I_ and the table are in the units
    # of gamma_I under the mapped normalization
    unit = 1.0 if params["graph_normalization"] == "none" else 1.0 / X.shape[0] ** 2
    assert model.gamma_I_ * unit == pytest.approx(model.gamma_I_effective_, rel=1e-12)
    labels = LINEAR_EXPECTED["few" if name.endswith("few") else "y"]
    refit = type(model)(**{**params, "client": client}).fit(X, labels)
    np.testing.assert_allclose(refit.decision_function(X), LINEAR_EXPECTED[name], rtol=1e-9,
                               atol=1e-12)
    assert refit.gamma_I_effective_ == pytest.approx(model.gamma_I_effective_, rel=1e-12)
    assert refit.gamma_I_ == pytest.approx(model.gamma_I_, rel=1e-12)
    assert [r["gamma_I"] for r in refit.selection_] == pytest.approx(
        [r["gamma_I"] for r in stored["selection_"]], rel=1e-12)


#: CoLapRLS / CoLapSVM models written at commit da83472, before ``class_balance`` (``make.py``
#: there wrote them): 2 labels a class, the seeds' gamma_I unchecked.
COLAP_FIXTURES = Path(__file__).parent / "fixtures" / "models-da83472"
COLAP_EXPECTED = np.load(COLAP_FIXTURES / "expected.npz")


def test_every_colap_fixture_is_checked():
    assert sorted(p.name for p in COLAP_FIXTURES.iterdir() if p.is_dir()) == [
        "CoLapRLS-few", "CoLapSVM-few"]


@pytest.mark.parametrize("name", ["CoLapRLS-few", "CoLapSVM-few"])
def test_old_colap_model_predicts_without_offsets_and_a_refit_cuts(client, name):
    """The stored model predicts as it did (no offsets); refitted with the parameters it
    reads as today (``class_balance="auto"``), the views' learners are the same and only the
    offsets of the unchecked graph term are new."""
    model = load_model(COLAP_FIXTURES / name)
    Xs = [COLAP_EXPECTED["V1"], COLAP_EXPECTED["V2"]]
    assert model.get_params()["class_balance"] == "auto" and model.class_balance_ is None
    np.testing.assert_array_equal(model.intercept_, np.zeros(3))
    # the stored arrays; the kernel rows round in the last bits (large coefficients of
    # gamma_I = 1e4 cancel)
    np.testing.assert_allclose(model.decision_function(Xs), COLAP_EXPECTED[name], rtol=1e-9,
                               atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SelectionWarning)
        refit = type(model)(**{**model.get_params(), "client": client}).fit(
            Xs, COLAP_EXPECTED["y"])
    assert refit.class_balance_ == "labeled" and np.any(refit.intercept_ != 0)
    # a new solve of the same systems (gamma_I = 1e4: conditioned accordingly)
    np.testing.assert_allclose(np.mean(refit.view_decision_functions(Xs), axis=0),
                               COLAP_EXPECTED[name], rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("name", ["KernelDAS3VM", "BranchAndBoundS3VM"])
def test_kernel_model_stored_before_the_filled_width_keeps_its_width(tmp_path, name):
    """A kernel S3VM stored before the RBF width was filled in from the rows (no
    ``kernel_params_``, no ``gamma`` given) was fitted with scikit-learn's ``1 / n_features``:
    it loads with that width given, predicts as it did, and refits to the same model. The
    document is today's with the width taken out, as the older code wrote it."""
    import json

    from dask_ssl import models
    from dask_ssl.models.artifact import save_model

    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 3))
    y = np.full(30, -1)
    y[:3], y[3:6] = 0, 1
    cls = getattr(models, name)
    old = cls(kernel_params={"gamma": 1.0 / 3}).fit(X, y)
    path = save_model(old, tmp_path / name)
    doc = json.loads((path / "model.json").read_text())
    doc["params"]["kernel_params"] = None
    del doc["kernel_params_"]
    (path / "model.json").write_text(json.dumps(doc))
    model = load_model(path)
    assert model.get_params()["kernel_params"] == {"gamma": 1.0 / 3}
    assert model.kernel_params_ == {"gamma": 1.0 / 3}
    # arrays read back may be laid out otherwise, which moves BLAS's last digits
    np.testing.assert_allclose(model.decision_function(X), old.decision_function(X),
                               rtol=1e-12, atol=1e-12)
    refit = cls(**model.get_params()).fit(X, y)
    np.testing.assert_allclose(refit.decision_function(X), old.decision_function(X),
                               rtol=1e-12, atol=1e-12)
