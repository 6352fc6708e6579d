"""Security: model directories never unpickle or follow links out, secrets stay out of what is
written, a started LocalCluster's dashboard listens on 127.0.0.1 only."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from urllib.parse import urlparse

import numpy as np
import psutil
import pytest

from dask_ssl.models import L2SVM
from dask_ssl.models.artifact import load_model, redact, save_model
from dask_ssl.workflow.store import ModelStore


class _Planted:
    """Unpickling this writes a marker file: proof that something was executed."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.fixture(scope="module")
def fitted(client):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] + 0.1 * rng.normal(size=40) > 0, 1, -1)
    return L2SVM(client=client).fit(X, y)


def _rewrite_checksum(model_dir):
    doc = json.loads((model_dir / "model.json").read_text())
    digest = hashlib.sha256((model_dir / "arrays.npz").read_bytes()).hexdigest()
    doc["checksums"]["arrays.npz"] = "sha256:" + digest
    (model_dir / "model.json").write_text(json.dumps(doc))


def test_saved_model_loads(fitted, tmp_path):
    loaded = load_model(save_model(fitted, tmp_path / "m"))
    np.testing.assert_array_equal(loaded.coef_, fitted.coef_)


@pytest.mark.parametrize("checksum_too", [False, True])
def test_planted_pickle_is_refused_and_never_run(fitted, tmp_path, checksum_too):
    model = save_model(fitted, tmp_path / "m")
    marker = tmp_path / "executed"
    (model / "arrays.npz").write_bytes(pickle.dumps({"coef": _Planted(str(marker))}))
    if checksum_too:  # an attacker who can also edit model.json
        _rewrite_checksum(model)
    match = "not an .npz archive of plain arrays" if checksum_too else "checksum"
    with pytest.raises(ValueError, match=match) as err:
        load_model(model)
    assert str(model / "arrays.npz") in str(err.value)
    assert not marker.exists()


def test_object_array_inside_npz_is_refused(fitted, tmp_path):
    model = save_model(fitted, tmp_path / "m")
    marker = tmp_path / "executed"
    with open(model / "arrays.npz", "wb") as f:
        np.savez(f, coef=np.array([_Planted(str(marker))], dtype=object),
                 intercept=fitted.intercept_, classes=fitted.classes_)
    _rewrite_checksum(model)
    with pytest.raises(ValueError, match="never unpickles"):
        load_model(model)
    assert not marker.exists()


def test_tampered_arrays_fail_the_checksum(fitted, tmp_path):
    model = save_model(fitted, tmp_path / "m")
    data = bytearray((model / "arrays.npz").read_bytes())
    data[-40] ^= 0xFF
    (model / "arrays.npz").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="does not match its checksum"):
        load_model(model)


def test_links_out_of_a_model_directory_are_refused(fitted, tmp_path):
    model = save_model(fitted, tmp_path / "m")
    outside = save_model(fitted, tmp_path / "elsewhere")
    (model / "arrays.npz").unlink()
    os.symlink(outside / "arrays.npz", model / "arrays.npz")
    with pytest.raises(ValueError, match="symbolic link"):
        load_model(model)


def test_unknown_parameters_in_model_json_are_refused(fitted, tmp_path):
    model = save_model(fitted, tmp_path / "m")
    doc = json.loads((model / "model.json").read_text())
    doc["params"]["__class__"] = "os.system"
    (model / "model.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="params must be a mapping of L2SVM's parameters"):
        load_model(model)


def test_store_refuses_dotdot_and_links_outside(fitted, tmp_path):
    store = ModelStore(tmp_path / "store" / "m")
    version = store.add(fitted)
    outside = save_model(fitted, tmp_path / "outside" / "v")
    for name in ["../../outside/v", "..", "a/b", ".hidden"]:
        with pytest.raises(ValueError, match="not a version name"):
            store.load(name)
    os.symlink(outside, store.versions_dir / "20990101T000000.000000")
    with pytest.raises(ValueError, match="is a link"):
        store.load("20990101T000000.000000")
    assert [v["version"] for v in store.versions()] == [version]
    # a pointer edited to climb out of the store is refused the same way
    (store.root / "current.json").write_text(json.dumps(
        {"version": "../../outside/v", "stack": [], "history": []}))
    with pytest.raises(ValueError, match="not a version name"):
        store.load()


def test_secrets_are_redacted_from_model_json_and_events(fitted, tmp_path):
    secret_url = "s3://AKIAKEY:verysecret@bucket/train-{date}.svm"
    doc_extra = {"data": secret_url, "storage_options": {"key": "AKIAKEY", "secret": "verysecret"}}
    model = save_model(fitted, tmp_path / "m", extra=doc_extra)
    text = (model / "model.json").read_text()
    assert "verysecret" not in text and "AKIAKEY" not in text
    assert json.loads(text)["data"] == "s3://***@bucket/train-{date}.svm"
    store = ModelStore(tmp_path / "store")
    store.log({"action": "refuse", "reason": f"could not read {secret_url}"})
    assert "verysecret" not in (store.root / "events.jsonl").read_text()
    assert redact({"run": {"aws_access_key": "x", "token": "", "n": 3}}) == {
        "run": {"aws_access_key": "***", "token": "", "n": 3}}


def _http_status(url: str) -> int:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("processes", [False, True])
def test_started_local_cluster_listens_on_localhost_only(processes):
    from dask_ssl import cluster

    def listening():
        me = psutil.Process()
        return {c.laddr for p in [me, *me.children(recursive=True)]
                for c in p.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}

    before = listening()  # other tests' clusters in this process
    client = cluster.get_client(n_workers=1, processes=processes, dashboard=True)
    try:
        link = cluster.dashboard_link(client)
        assert urlparse(link).hostname == "127.0.0.1"
        opened = listening() - before
        assert urlparse(link).port in [a.port for a in opened]
        assert _http_status(link) == 200
        # the dashboard, the scheduler, the workers and their HTTP servers alike
        assert {a.ip for a in opened} == {"127.0.0.1"}
        assert len(opened) >= (4 if processes else 2)
    finally:
        cluster._OWNED.remove(client)
        cluster._WITH_DASHBOARD.remove(client)
        cluster_obj = client.cluster
        client.close()
        cluster_obj.close()


def test_started_local_cluster_has_no_dashboard_unless_asked(monkeypatch):
    from dask_ssl import cluster

    monkeypatch.delenv("DASK_SSL_DASHBOARD", raising=False)
    client = cluster.get_client(n_workers=1)
    try:
        assert cluster.dashboard_link(client) is None
        # the scheduler's HTTP server still answers health checks, but serves no dashboard
        port = client.scheduler_info()["services"]["dashboard"]
        assert _http_status(f"http://127.0.0.1:{port}/health") == 200
        assert _http_status(f"http://127.0.0.1:{port}/status") == 404
    finally:
        cluster._OWNED.remove(client)
        cluster_obj = client.cluster
        client.close()
        cluster_obj.close()


def test_run_workflow_json_readable_by_owner_only(tmp_path):
    import stat

    from dask_ssl.workflow.runner import new_run

    doc = {"name": "wf", "outputs": {"runs": str(tmp_path / "runs")},
           "data": {"storage_options": {"secret": "verysecret"}}}
    run_dir = new_run(doc)
    mode = stat.S_IMODE(os.stat(run_dir / "workflow.json").st_mode)
    assert mode == 0o600
    assert json.loads((run_dir / "workflow.json").read_text()) == doc
