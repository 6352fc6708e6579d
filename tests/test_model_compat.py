"""Model directories stored before the one vocabulary still load and predict identically.

``tests/fixtures/models-2d7d3ef`` was written by the code at commit 2d7d3ef, before ``gamma``
became ``gamma_A``, ``T0`` ``initial_temperature``, ``epsilon`` ``anneal_tol``, the kernel
S3VMs' losses ``"l2"`` / ``"sqr"`` ``"squared_hinge"`` / ``"squared"`` and the semi-supervised
default marker ``unlabeled=None`` -1. ``expected.npz`` holds each model's decision values on
12 rows, computed by that code right after fitting.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dask_ssl.models.artifact import load_model

FIXTURES = Path(__file__).parent / "fixtures" / "models-2d7d3ef"
EXPECTED = np.load(FIXTURES / "expected.npz")

#: Parameters each stored document gave under an old name or value, as they read now.
MAPPED = {
    "DAS3VM": {"gamma_A": 1e-2, "initial_temperature": 5.0, "anneal_tol": 1e-5,
               "unlabeled": -1},
    "L2SVM": {"gamma_A": 1e-2, "unlabeled": None},
    "TSVM": {"gamma_A": 1e-2, "gamma_u": 0.5, "unlabeled": -1},
    "KernelDAS3VM": {"gamma_A": 1e-2, "loss": "squared_hinge", "initial_temperature": 10.0,
                     "anneal_tol": 1e-6, "unlabeled": -1},
    "KernelDAS3VM-sqr": {"gamma_A": 1e-2, "loss": "squared", "unlabeled": -1},
    "LapRLS": {"gamma_A": 1e-6, "n_neighbors": 5, "p": 1},
    "LinearLapRLS": {"gamma_A": 1e-3, "gamma_I": "auto", "unlabeled": -1},
}


def test_every_fixture_is_checked():
    assert sorted(MAPPED) == sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


@pytest.mark.parametrize("name", sorted(MAPPED))
def test_old_model_loads_and_predicts_identically(name):
    model = load_model(FIXTURES / name)
    params = model.get_params(deep=False)
    assert {k: params[k] for k in MAPPED[name]} == MAPPED[name]
    scores = model.decision_function(EXPECTED["X"])
    np.testing.assert_allclose(scores, EXPECTED[name], rtol=1e-12, atol=1e-14)
    assert np.array_equal(model.predict(EXPECTED["X"]),
                          model.classes_[(EXPECTED[name] > 0).astype(int)])
