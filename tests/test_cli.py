"""The ``dask-ssl fit`` / ``predict`` commands: outputs, model.json contract, bad input."""

import json
import subprocess
import sys
import time

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from dask_ssl.cli import main
from dask_ssl.models.artifact import load_model

MODEL_FIELDS = {"objective", "fit_seconds", "n_iter", "params", "data_shape", "n_features",
                "estimator", "library_version", "checksums", "metrics"}


def write_problem(path, n=400, d=6, seed=0, unlabeled_every=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.7)
    y = np.where(X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    if unlabeled_every:
        y[::unlabeled_every] = 0
    dump_svmlight_file(X, y, str(path), zero_based=False)
    return X, y


def test_fit_then_predict_in_process(client, tmp_path, capsys):
    data = tmp_path / "train.svm"
    X, y = write_problem(data)
    model = tmp_path / "model"
    with client.as_current():
        assert main(["fit", "--data", str(data), "--algorithm", "svm", "--gamma-A", "0.01",
                     "--model-out", str(model), "--outputs", str(tmp_path / "fit.out")]) == 0
    doc = json.loads((model / "model.json").read_text())
    assert MODEL_FIELDS <= set(doc)
    assert doc["estimator"] == "L2SVM" and doc["params"]["gamma_A"] == 0.01
    assert doc["data_shape"] == [400, 6]
    fitted = np.loadtxt(tmp_path / "fit.out")
    assert fitted.shape == (400,)
    est = load_model(model)
    np.testing.assert_allclose(fitted, est.decision_function(X), rtol=1e-8, atol=1e-10)
    with client.as_current():
        assert main(["predict", "--model", str(model), "--data", str(data),
                     "--outputs", str(tmp_path / "pred.out")]) == 0
    np.testing.assert_allclose(np.loadtxt(tmp_path / "pred.out"), fitted, rtol=1e-9)


BAD = {
    "nan": "1 1:0.5 2:nan\n-1 1:0.1\n1 2:0.3\n",
    "malformed": "1 1:0.5 2:0.1\n-1 1:x\n",
    "no_labels": "0 1:0.5\n0 1:0.1 2:3\n",
    "one_class": "1 1:0.5\n1 1:0.1 2:3\n0 2:1\n",
    "empty": "",
}


@pytest.mark.parametrize("case, message", [
    ("nan", "nan.svm, line 1: value 'nan' is not a finite number"), ("malformed", "line 2"), ("no_labels", "no labeled rows"),
    ("one_class", "one labeled class"), ("empty", "no data"),
])
def test_bad_input_gives_clear_error_and_no_model(client, tmp_path, capsys, case, message):
    data = tmp_path / f"{case}.svm"
    data.write_text(BAD[case])
    model = tmp_path / "model"
    with client.as_current():
        rc = main(["fit", "--data", str(data), "--model-out", str(model)])
    assert rc == 2
    assert message in capsys.readouterr().err
    assert not model.exists()
    assert not list(tmp_path.glob(".model*"))


@pytest.mark.parametrize("flags, message", [
    (["--gamma-A", "0"], "'gamma_A' parameter of"), (["--gamma-A", "-1"], "'gamma_A' parameter of"),
    (["--gamma", "0.01"], "--gamma was renamed --gamma-A"),
    (["--algorithm", "tsvm", "--pos-fraction", "1.5"], "pos_fraction"),
    (["--algorithm", "tsvm", "--gamma-u", "-2"], "gamma_u"),
    (["--algorithm", "svm", "--gamma-u", "1"], "does not apply"),
    (["--algorithm", "svm", "--n-components", "10"], "does not apply"),
    (["--algorithm", "linlaprls", "--max-switches", "1"], "does not apply"),
    (["--algorithm", "kda", "--loss", "l2"], "loss='l2' is now called loss='squared_hinge'"),
    (["--algorithm", "laprls", "--gamma-I", "-1"], "'gamma_I' parameter of LapRLS"),
    (["--algorithm", "linlaprls", "--graph-normalization", "n3"],
     "'graph_normalization' parameter of LinearLapRLS"),
    (["--algorithm", "svm", "--graph-normalization", "none"], "does not apply"),
    (["--algorithm", "bb", "--gamma-u", "auto"], "'gamma_u' parameter of BranchAndBoundS3VM"),
    (["--algorithm", "linlaprls", "--n-components", "10"], "give --kernel"),
    (["--algorithm", "tsvm", "--landmarks", "kmeans++"], "give --kernel"),
    (["--algorithm", "laprls", "--n-components", "0"], "'n_components' parameter of"),
    (["--algorithm", "lapsvm", "--loss", "hinge", "--n-components", "9"], "exact expansion"),
])
def test_bad_parameters_fail_before_reading(tmp_path, capsys, flags, message):
    model = tmp_path / "model"
    rc = main(["fit", "--data", str(tmp_path / "missing.svm"), "--model-out", str(model), *flags])
    assert rc == 2
    assert message in capsys.readouterr().err
    assert not model.exists()


@pytest.mark.cluster
def test_fit_against_real_scheduler_and_workers(real_cluster, tmp_path):
    cluster = real_cluster(n_workers=2)
    data = tmp_path / "train.svm"
    write_problem(data, unlabeled_every=3)
    model = tmp_path / "model"
    cmd = [sys.executable, "-m", "dask_ssl.cli", "fit", "--scheduler", cluster.address,
           "--data", str(data), "--algorithm", "tsvm", "--gamma-A", "0.01", "--gamma-u", "0.5",
           "--model-out", str(model), "--outputs", str(tmp_path / "out.txt")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    doc = json.loads((model / "model.json").read_text())
    assert doc["estimator"] == "TSVM" and MODEL_FIELDS <= set(doc)
    assert len(np.loadtxt(tmp_path / "out.txt")) == 400
    assert [h["stage"] for h in doc["history"]] == list(range(len(doc["history"])))


@pytest.mark.cluster
def test_detached_fit_finishes_after_the_submitter_exits(real_cluster, tmp_path):
    cluster = real_cluster(n_workers=2)
    data = tmp_path / "train.svm"
    write_problem(data, unlabeled_every=3)
    model = tmp_path / "model"
    done = subprocess.run([sys.executable, "-m", "dask_ssl.cli", "fit", "--scheduler",
                           cluster.address, "--data", str(data), "--algorithm", "tsvm",
                           "--model-out", str(model), "--detach"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "submitted" in done.stdout
    deadline = time.time() + 300
    while not (model / "model.json").exists():
        assert time.time() < deadline, "the detached fit wrote no model"
        time.sleep(0.5)
    assert json.loads((model / "model.json").read_text())["estimator"] == "TSVM"


def test_kdd99_model_predicts_with_its_training_encoding(client, kdd99_path, tmp_path):
    import gzip

    lines = gzip.open(kdd99_path, "rt").readlines()
    train, test = tmp_path / "kddcup-train.csv", tmp_path / "kddcup-test.csv"
    train.write_text("".join(lines[:3000]))
    # a later file with fewer categories must still land in the training columns
    test.write_text("".join(lines[100000:100300]))
    model = tmp_path / "model"
    with client.as_current():
        assert main(["fit", "--data", str(train), "--gamma-A", "0.01", "--model-out", str(model),
                     "--outputs", str(tmp_path / "fit.out")]) == 0
        assert main(["predict", "--model", str(model), "--data", str(test),
                     "--outputs", str(tmp_path / "pred.out")]) == 0
    doc = json.loads((model / "model.json").read_text())
    assert "kdd99_encoding" in doc
    assert np.loadtxt(tmp_path / "pred.out").shape == (300,)


def test_fit_phases_add_up_to_the_wall_time_from_process_start(tmp_path):
    # A fresh process, as from a shell: the clock starts when the process does.
    data = tmp_path / "train.svm"
    write_problem(data, unlabeled_every=3)
    model = tmp_path / "model"
    launched = time.time()
    done = subprocess.run([sys.executable, "-m", "dask_ssl.cli", "fit", "--workers", "1",
                           "--data", str(data), "--algorithm", "tsvm", "--gamma-A", "0.01",
                           "--model-out", str(model), "--outputs", str(tmp_path / "out.txt")],
                          capture_output=True, text=True, timeout=300)
    ended = time.time()
    assert done.returncode == 0, done.stderr
    doc = json.loads((model / "model.json").read_text())
    phases, wall = doc["phases"], doc["wall_seconds"]
    assert list(phases) == ["imports", "cluster", "read", "fit", "scores", "write"]
    assert all(v > 0 for v in phases.values())
    assert sum(phases.values()) == pytest.approx(wall, rel=0.05)
    # The wall time starts at the process start, not at some later point inside it.
    started = (model / "model.json").stat().st_mtime - wall
    assert launched - 0.05 <= started <= launched + 0.5
    assert wall < ended - launched
    assert doc["fit_seconds"] <= phases["fit"]
    # CPU seconds of the same phases (the whole process's, worker threads included)
    assert list(doc["phases_cpu"]) == list(phases)
    assert all(v >= 0 for v in doc["phases_cpu"].values()) and doc["phases_cpu"]["imports"] > 0
    for name in phases:
        assert f"  {name}: done in" in done.stderr


@pytest.mark.slow  # the estimators' own equality on worker processes: test_worker_processes.py
def test_worker_threads_and_worker_processes_fit_the_same_model(tmp_path):
    # The default LocalCluster runs its workers as threads of the command; --processes as
    # processes. Same blocks, same arithmetic: the same model either way.
    data = tmp_path / "train.svm"
    write_problem(data, unlabeled_every=3)
    runs = {}
    for name, extra in [("threads", ["--dashboard"]), ("processes", ["--processes"])]:
        model = tmp_path / name
        done = subprocess.run([sys.executable, "-m", "dask_ssl.cli", "fit", "--workers", "2",
                               "--data", str(data), "--algorithm", "tsvm", "--gamma-A", "0.01",
                               "--model-out", str(model), *extra],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        runs[name] = (json.loads((model / "model.json").read_text()), done.stderr)
    (threads, err_t), (procs, err_p) = runs["threads"], runs["processes"]
    assert "LocalCluster with 2 workers, dashboard http://127.0.0.1:" in err_t
    assert "LocalCluster with 2 worker processes\n" in err_p  # no dashboard unless asked
    assert threads["objective"] == pytest.approx(procs["objective"], rel=1e-10)
    assert threads["round_trips"] == procs["round_trips"]


@pytest.mark.parametrize("flag", ["--processes", "--dashboard"])
def test_local_cluster_flags_are_refused_with_a_scheduler(flag, tmp_path, capsys):
    rc = main(["fit", "--scheduler", "tcp://127.0.0.1:1", flag, "--data", str(tmp_path / "x"),
               "--model-out", str(tmp_path / "m")])
    assert rc == 2
    assert f"{flag} applies to the LocalCluster" in capsys.readouterr().err


def test_two_concurrent_fits_on_one_file_share_the_block_cache(tmp_path):
    import os

    data = tmp_path / "train.svm"
    write_problem(data, n=2000, unlabeled_every=3)
    env = dict(os.environ, DASK_SSL_CACHE=str(tmp_path / "cache"))
    procs = [subprocess.Popen([sys.executable, "-m", "dask_ssl.cli", "fit", "--workers", "1",
                               "--data", str(data), "--gamma-A", "0.01",
                               "--model-out", str(tmp_path / f"model{k}")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for k in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    docs = [json.loads((tmp_path / f"model{k}" / "model.json").read_text()) for k in range(2)]
    assert docs[0]["objective"] == docs[1]["objective"]
    entries = list((tmp_path / "cache" / "blocks").glob("*.npz"))
    assert entries and not list((tmp_path / "cache" / "blocks").glob(".*.tmp"))
    for entry in entries:  # whole entries, whichever run renamed its copy last
        with np.load(entry) as z:
            assert z["indptr"][-1] == z["data"].size == z["indices"].size


def test_outputs_are_the_bytes_savetxt_writes(tmp_path):
    import io

    from dask_ssl.workflow.outputs import write_outputs

    rng = np.random.default_rng(3)
    cases = [rng.normal(size=20000) * 10.0 ** rng.integers(-16, 14, 20000),
             # exact ties (half to even), carries into the next power of ten, %f/%e borders,
             # signed zero, specials
             np.array([1234567890.5, 1234567891.5, 9.99999999996, 99999.999995, 0.5, 2.5, 1e10,
                       9999999999.5, 1e-4, 9.9999999999e-5, 1e-13, 1e-14, -0.0, 0.0, np.nan,
                       np.inf, -np.inf, 1 / 3]),
             rng.integers(0, 10 ** 10, 5000) + 0.5,
             rng.normal(size=(300, 3))]
    for k, scores in enumerate(cases):
        expected = io.BytesIO()
        np.savetxt(expected, scores, fmt="%.10g")
        write_outputs(tmp_path / f"out{k}.txt", scores, chunk_rows=7000)
        assert (tmp_path / f"out{k}.txt").read_bytes() == expected.getvalue()
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("algorithm", ["laprls", "lapsvm"])
def test_manifold_fit_then_predict(client, tmp_path, algorithm):
    data = tmp_path / "train.svm"
    X, y = write_problem(data, n=150, unlabeled_every=3)
    model = tmp_path / "model"
    with client.as_current():
        assert main(["fit", "--data", str(data), "--algorithm", algorithm, "--gamma-A", "1e-4",
                     "--gamma-I", "100", "--kernel-params", '{"gamma": 0.1}', "--n-neighbors",
                     "8", "--p", "2", "--model-out", str(model),
                     "--outputs", str(tmp_path / "fit.out")]) == 0
        assert main(["predict", "--model", str(model), "--data", str(data),
                     "--outputs", str(tmp_path / "pred.out")]) == 0
    doc = json.loads((model / "model.json").read_text())
    assert doc["params"]["gamma_A"] == 1e-4 and doc["params"]["p"] == 2
    fitted = np.loadtxt(tmp_path / "fit.out")
    np.testing.assert_allclose(np.loadtxt(tmp_path / "pred.out"), fitted, rtol=1e-9, atol=1e-12)
    est = load_model(model)
    np.testing.assert_allclose(est.decision_function(X), fitted, rtol=1e-8, atol=1e-10)
    _, truth = write_problem(tmp_path / "full.svm", n=150)  # the same rows, every label kept
    hidden = y == 0
    assert np.mean(np.sign(fitted[hidden]) == truth[hidden]) > 0.8


@pytest.mark.parametrize("algorithm, flags", [
    ("linlaprls", ["--kernel", "rbf", "--kernel-params", '{"gamma": 0.1}', "--n-components",
                   "40", "--landmarks", "kmeans++", "--gamma-I", "0.1"]),
    ("linlapsvm", ["--gamma-I", "0.1", "--graph-normalization", "none"]),
    ("linlaprls", ["--gamma-I", "auto"]),
    ("laprls", ["--n-components", "40", "--kernel-params", '{"gamma": 0.1}', "--gamma-I", "100"]),
    ("lapsvm", ["--n-components", "40", "--landmarks", "kmeans++", "--gamma-I", "100"]),
    ("tsvm", ["--kernel", "rbf", "--kernel-params", '{"gamma": 0.1}', "--n-components", "40"]),
    ("tsvm", ["--gamma-u", "auto"]),
])
def test_nystrom_and_linear_laplacian_fit_then_predict(client, tmp_path, algorithm, flags):
    data = tmp_path / "train.svm"
    X, y = write_problem(data, n=150, unlabeled_every=3)
    model = tmp_path / "model"
    graph = [] if algorithm == "tsvm" else ["--n-neighbors", "8", "--p", "1", "--gamma-A", "1e-3"]
    with client.as_current():
        assert main(["fit", "--data", str(data), "--algorithm", algorithm, *graph, *flags,
                     "--model-out", str(model), "--outputs", str(tmp_path / "fit.out")]) == 0
        assert main(["predict", "--model", str(model), "--data", str(data),
                     "--outputs", str(tmp_path / "pred.out")]) == 0
    doc = json.loads((model / "model.json").read_text())
    if "--gamma-I" in flags:
        given = flags[flags.index("--gamma-I") + 1]
        assert doc["params"]["gamma_I"] == (given if given == "auto" else float(given))
    if "--graph-normalization" in flags:
        assert doc["params"]["graph_normalization"] == "none"
        assert doc["gamma_I_effective_"] == doc["gamma_I_"] == 0.1
    if "--gamma-u" in flags:
        assert doc["params"]["gamma_u"] == "auto"
        assert len(doc["selection_"]) == 4 and doc["gamma_u_"] in (0.0, 0.01, 0.1, 1.0)
    if "--n-components" in flags:
        assert doc["params"]["n_components"] == 40
        assert doc["params"]["landmarks"] == ("kmeans++" if "kmeans++" in flags else "uniform")
    fitted = np.loadtxt(tmp_path / "fit.out")
    np.testing.assert_allclose(np.loadtxt(tmp_path / "pred.out"), fitted, rtol=1e-9, atol=1e-12)
    est = load_model(model)
    np.testing.assert_allclose(est.decision_function(X), fitted, rtol=1e-8, atol=1e-10)
    _, truth = write_problem(tmp_path / "full.svm", n=150)
    hidden = y == 0
    assert np.mean(np.sign(fitted[hidden]) == truth[hidden]) > 0.8


def test_linlapsvm_fit_killed_after_a_newton_step_resumes_from_the_shell(client, tmp_path,
                                                                         monkeypatch):
    """``fit --checkpoint`` killed after the first Newton step; ``dask-ssl resume DIR`` writes
    the model the uninterrupted fit writes."""
    from dask_ssl.loop import NewtonCheckpoint

    data = tmp_path / "train.svm"
    write_problem(data, n=150, unlabeled_every=3)
    ck = tmp_path / "ck"
    flags = ["fit", "--data", str(data), "--algorithm", "linlapsvm", "--n-neighbors", "8",
             "--gamma-A", "1e-4", "--gamma-I", "1e-4"]
    original = NewtonCheckpoint.save

    def killed_after_step_1(self, state):
        original(self, state)
        if state["steps"] == 1 and "objective" not in state:
            raise RuntimeError("killed")

    with client.as_current():
        assert main(flags + ["--model-out", str(tmp_path / "whole")]) == 0
        monkeypatch.setattr(NewtonCheckpoint, "save", killed_after_step_1)
        with pytest.raises(RuntimeError, match="killed"):
            main(flags + ["--model-out", str(tmp_path / "resumed"), "--checkpoint", str(ck)])
        monkeypatch.setattr(NewtonCheckpoint, "save", original)
        assert not (tmp_path / "resumed").exists()
        assert json.loads((ck / "state.json").read_text())["steps"] == 1
        assert main(["resume", str(ck)]) == 0
    whole = json.loads((tmp_path / "whole" / "model.json").read_text())
    resumed = json.loads((tmp_path / "resumed" / "model.json").read_text())
    assert whole["n_iter"] == resumed["n_iter"] > 1
    assert resumed["objective"] == pytest.approx(whole["objective"], rel=1e-10)
    np.testing.assert_allclose(load_model(tmp_path / "resumed").coef_,
                               load_model(tmp_path / "whole").coef_, rtol=1e-8)


def test_fit_checks_the_parameters_once(client, tmp_path, monkeypatch):
    # before reading the data (the flags), and not again inside the fit
    from sklearn.base import BaseEstimator

    checked = []
    original = BaseEstimator._validate_params
    monkeypatch.setattr(BaseEstimator, "_validate_params",
                        lambda self: checked.append(type(self).__name__) or original(self))
    data = tmp_path / "train.svm"
    write_problem(data, unlabeled_every=3)
    with client.as_current():
        assert main(["fit", "--data", str(data), "--algorithm", "tsvm", "--gamma-A", "0.01",
                     "--model-out", str(tmp_path / "model")]) == 0
    assert [name for name in checked if name == "TSVM"] == ["TSVM"]


def test_gamma_I_flag_takes_a_number_or_auto(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["fit", "--data", "x.svm", "--model-out", "m", "--algorithm", "linlaprls",
              "--gamma-I", "lots"])
    assert exc.value.code == 2
    assert "expected a number or 'auto', got 'lots'" in capsys.readouterr().err
