"""The model store: versions, promotion by atomic rename, refusal, history, rollback, crashes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dask_ssl.cli import main
from dask_ssl.models import L2SVM
from dask_ssl.workflow.store import ModelStore, compare


@pytest.fixture(scope="module")
def fitted(client):
    """Two different fitted models on small in-memory data."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=300) > 0, 1, -1)
    models = []
    for gamma in (1e-2, 1.0):
        est = L2SVM(gamma_A=gamma, unlabeled=0, client=client).fit(X, y)
        est.client = None
        models.append(est)
    return models


def test_compare_directions():
    assert compare("error", 0.10, None, 0.0) == (True, "no current model")
    ok, reason = compare("error", 0.12, 0.10, 0.01)
    assert not ok and "worse than the current model's 0.1 by 0.02" in reason
    assert compare("error", 0.105, 0.10, 0.01)[0]
    assert compare("prbep", 0.95, 0.90, 0.0)[0]
    assert not compare("prbep", 0.85, 0.90, 0.01)[0]


def test_promote_history_rollback(tmp_path, fitted):
    store = ModelStore(tmp_path / "m")
    assert store.current() is None
    with pytest.raises(ValueError, match="no promoted model"):
        store.load()
    v1 = store.add(fitted[0], metrics={"error": 0.1})
    v2 = store.add(fitted[1], metrics={"error": 0.2})
    assert [v["version"] for v in store.versions()] == [v1, v2]
    store.promote(v1, reason="first")
    store.promote(v2, reason="second")
    assert store.current() == v2
    np.testing.assert_array_equal(store.load().coef_, fitted[1].coef_)
    record = store.rollback()
    assert record["version"] == v1 and store.current() == v1
    np.testing.assert_array_equal(store.load().coef_, fitted[0].coef_)
    assert [h["action"] for h in store.pointer()["history"]] == ["promote", "promote", "rollback"]
    with pytest.raises(ValueError, match="nothing to roll back"):
        store.rollback()
    with pytest.raises(ValueError, match="no version 'nope'"):
        store.promote("nope", reason="x")


def test_versions_ignore_unfinished_saves_and_checksums_hold(tmp_path, fitted):
    store = ModelStore(tmp_path / "m")
    v1 = store.add(fitted[0])
    (store.versions_dir / ".v-half.tmp-1234").mkdir()
    assert [v["version"] for v in store.versions()] == [v1]
    arrays = store.path(v1) / "arrays.npz"
    arrays.write_bytes(arrays.read_bytes()[:-8] + b"corrupt!")
    with pytest.raises(ValueError, match="checksum"):
        store.load(v1)


def test_interrupted_promotion_leaves_the_previous_model(tmp_path, fitted, monkeypatch):
    """An interruption at the rename of the pointer (test_workflow_retrain kills a real
    process there): the old model stays current and loadable, the new version is stored."""
    store = ModelStore(tmp_path / "m")
    v1 = store.add(fitted[0])
    store.promote(v1, reason="first")
    v2 = store.add(fitted[1])

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr("dask_ssl.workflow.store.os.replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store.promote(v2, reason="interrupted")
    monkeypatch.undo()
    assert store.current() == v1
    np.testing.assert_array_equal(store.load().coef_, fitted[0].coef_)
    assert json.loads((store.root / "current.json").read_text())["stack"] == [v1]
    assert not list(store.root.glob(".current.json.*"))
    store.promote(v2, reason="again")
    assert store.current() == v2


def test_models_command(tmp_path, fitted, capsys):
    store = ModelStore(tmp_path / "models" / "demo")
    v1 = store.add(fitted[0], metrics={"error": 0.1})
    v2 = store.add(fitted[1], metrics={"error": 0.2})
    args = ["--store", str(tmp_path / "models")]
    assert main(["models", "promote", "demo", v1, *args]) == 0
    assert main(["models", "promote", "demo", v2, *args]) == 0
    assert main(["models", "list", *args]) == 0
    assert f"demo                     current: {v2} (2 versions)" in capsys.readouterr().out
    assert main(["models", "list", "demo", *args]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"  {v1}") and out[1].startswith(f"* {v2}") and "error=0.2" in out[1]
    assert main(["models", "rollback", "demo", *args]) == 0
    assert f"rolled back from {v2} to {v1}" in capsys.readouterr().out
    assert main(["models", "show", "demo", *args]) == 0
    out = capsys.readouterr().out
    assert f"demo {v1} (current)" in out and "rollback" in out and str(store.path(v1)) in out
    assert main(["models", "show", "nothere", *args]) == 2
