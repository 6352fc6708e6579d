"""Serving the multi-view estimators: model directories, workflow data sources of views, and
``dask-ssl fit`` / ``predict`` with views (a missing, extra or misnamed view is an error
before any work)."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from dask_ssl import models, multiview
from dask_ssl.cli import main
from dask_ssl.data import two_moons_two_lines
from dask_ssl.models.artifact import is_multiview, load_model, registry, save_model
from dask_ssl.multiview import CoLapRLS, CoLapSVM, CoMR, CoRLS
from dask_ssl.workflow import split as split_mod
from dask_ssl.workflow.runner import new_run, run_workflow
from dask_ssl.workflow.spec import WorkflowError, load_workflow
from dask_ssl.workflow.views import ViewRows, read_svmlight_views

from .test_fit_is_a_workflow import NOT_COMPARED

#: A single-view model directory, stored by the tests of old models.
SINGLE_VIEW_MODEL = Path(__file__).parent / "fixtures" / "models-2d7d3ef" / "LapRLS"

N = 60


@pytest.fixture(scope="module")
def toy():
    """Two named views of 60 rows, 3 labels a class (0 = unlabeled, as the workflows mark)."""
    Xs, y = two_moons_two_lines(n=N, seed=2)
    y_fit = np.where(np.arange(N) < 6, y, 0)
    return {"moons": Xs[0], "lines": Xs[1]}, y, y_fit


#: Settings that fit fast and choose nothing (no selection warnings to wade through).
FITTED = {
    "CoRLS": lambda: CoRLS(gamma_A=1e-2, gamma_C=1.0, unlabeled=0),
    "CoLapRLS": lambda: CoLapRLS(gamma_I=1.0, p=1, n_neighbors=5, unlabeled=0),
    # class offsets to store (the labeled shares)
    "CoLapSVM": lambda: CoLapSVM(gamma_I=1.0, p=1, n_neighbors=5, solver="direct",
                                 class_balance="labeled", unlabeled=0),
    "CoMR": lambda: CoMR(gamma_I=1.0, n_neighbors=5, unlabeled=0),
}
#: CoRLS's primal models: a weight vector or landmark coefficients per view
PRIMAL = {
    "CoRLS-linear": lambda: CoRLS(gamma_A=1e-2, gamma_C=1.0, kernel="linear", solver="gram",
                                  unlabeled=0),
    "CoRLS-nystrom": lambda: CoRLS(gamma_A=1e-2, gamma_C=1.0, n_components=40, random_state=0,
                                   unlabeled=0),
}


def test_registry_keeps_the_multiview_estimators_apart():
    # the single-X registry (walked by the scikit-learn and vocabulary checks) holds none
    assert set(multiview.ESTIMATORS) == set(FITTED)
    assert not set(multiview.ESTIMATORS) & set(models.ESTIMATORS)
    assert registry() == {**models.ESTIMATORS, **multiview.ESTIMATORS}
    assert is_multiview(CoRLS) and is_multiview(CoMR()) and not is_multiview(models.LapRLS)


@pytest.mark.parametrize("name", sorted(FITTED) + sorted(PRIMAL))
def test_saved_model_predicts_as_the_fitted_one(toy, tmp_path, name):
    views, y, y_fit = toy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = {**FITTED, **PRIMAL}[name]().fit(views, y_fit)
    save_model(est, tmp_path / "m")
    doc = json.loads((tmp_path / "m" / "model.json").read_text())
    assert doc["estimator"] == name.split("-")[0]
    assert doc["view_names"] == ["moons", "lines"] and doc["view_features"] == [2, 2]
    back = load_model(tmp_path / "m")
    assert type(back) is type(est)
    assert back.view_names_ == ("moons", "lines") and back.view_features_ == (2, 2)
    if name == "CoLapSVM":  # the class offsets
        assert back.class_balance_ == "labeled" and np.any(est.intercept_ != 0)
        np.testing.assert_array_equal(back.intercept_, est.intercept_)
    if name == "CoMR":  # the graph setting it chose
        assert (back.n_neighbors_, back.p_) == (est.n_neighbors_, est.p_) == (5, est.p_)
        assert est.p_ in (1, 5)
    # the same arrays; matrix products may round in the last bits with another alignment
    np.testing.assert_allclose(back.decision_function(views), est.decision_function(views),
                               rtol=1e-12, atol=1e-12)
    assert np.array_equal(back.predict(views), est.predict(views))
    assert np.mean(est.predict(views) != y) < 0.2  # a model worth serving
    # views in another order are matched by name
    assert np.array_equal(back.predict({"lines": views["lines"], "moons": views["moons"]}),
                          est.predict(views))


def test_loaded_model_checks_its_views(toy, tmp_path):
    views, _, y_fit = toy
    save_model(FITTED["CoRLS"]().fit(views, y_fit), tmp_path / "m")
    model = load_model(tmp_path / "m")
    with pytest.raises(ValueError, match=r"missing \['lines'\]"):
        model.predict({"moons": views["moons"]})
    with pytest.raises(ValueError, match=r"extra \['pixels'\]"):
        model.predict({**views, "pixels": views["moons"]})
    with pytest.raises(ValueError, match="view 'lines' has 3 features; .* fitted with 2"):
        model.predict({"moons": views["moons"], "lines": np.ones((N, 3))})


def test_callable_kernel_is_refused_before_anything_is_written(toy, tmp_path):
    views, _, y_fit = toy
    est = CoRLS(gamma_C=1.0, kernel=lambda A, B: A @ B.T, unlabeled=0).fit(views, y_fit)
    with pytest.raises(ValueError, match="callable kernel"):
        save_model(est, tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_split_takes_the_same_rows_of_every_view():
    a = np.arange(20.0).reshape(10, 2)
    rows = ViewRows({"a": a, "b": 2 * a[:, :1]}, np.repeat([1.0, -1.0], 5))
    mask = np.zeros(10, dtype=bool)
    mask[[1, 4, 7]] = True
    got = split_mod.take(rows, mask)
    assert np.array_equal(got.views["a"], a[mask])
    assert np.array_equal(got.views["b"], 2 * a[mask, :1])
    assert np.array_equal(got.labels, [1.0, 1.0, -1.0])
    assert got.n_features == [2, 1] and got.n_rows == 3


def _write_views(tmp_path, views, y):
    paths = {}
    for name, X in views.items():
        paths[name] = tmp_path / f"{name}.svm"
        dump_svmlight_file(X, y, str(paths[name]), zero_based=False)
    return paths


def test_svmlight_views_must_hold_the_same_labels(toy, tmp_path):
    views, y, _ = toy
    paths = _write_views(tmp_path, views, y)
    rows = read_svmlight_views([paths["moons"], paths["lines"]])
    assert list(rows.views) == ["moons", "lines"] and np.array_equal(rows.labels, y)
    other = y.copy()
    other[7] = -other[7]
    dump_svmlight_file(views["lines"], other, str(paths["lines"]), zero_based=False)
    with pytest.raises(ValueError, match="lines.svm line 8 has label"):
        read_svmlight_views([paths["moons"], paths["lines"]])


def _workflow(tmp_path, data: str, estimator: str, extra: str = "") -> str:
    path = tmp_path / "w.yaml"
    path.write_text(f"name: w\ndata: {data}\nestimator: {estimator}\n{extra}")
    return path


def test_views_and_estimators_must_match_in_a_workflow(tmp_path):
    gen = "{source: multiview_generator, name: two_moons_two_lines, params: {n: 40}}"
    with pytest.raises(WorkflowError, match="data.source: .*estimator L2SVM takes one matrix"):
        load_workflow(_workflow(tmp_path, gen, "{name: L2SVM}"))
    with pytest.raises(WorkflowError, match="data.source: estimator CoRLS takes views"):
        load_workflow(_workflow(tmp_path, "{source: generator, name: g50c}", "{name: CoRLS}"))
    with pytest.raises(WorkflowError, match="graph: a graph section"):
        load_workflow(_workflow(tmp_path, gen, "{name: CoLapRLS}", "graph: {n_neighbors: 5}\n"))
    with pytest.raises(WorkflowError, match="data.params.noise: unknown key"):
        load_workflow(_workflow(tmp_path, gen.replace("n: 40", "noise: 1"), "{name: CoRLS}"))
    wf = load_workflow(_workflow(
        tmp_path, "{source: svmlight_views, paths: [a.svm, b.svm], names: [x, y]}",
        "{name: CoRLS, params: {gamma_C: 1.0}}"))
    assert all(p.startswith("/") for p in wf.doc["data"]["paths"])


def test_fit_and_run_with_the_same_views_write_the_same_model(client, toy, tmp_path):
    views, y, _ = toy
    paths = _write_views(tmp_path, views, y)
    view_flags = ["--view", f"moons={paths['moons']}", "--view", f"lines={paths['lines']}"]
    with client.as_current():
        assert main(["fit", "--algorithm", "corls", *view_flags, "--gamma-A", "0.01",
                     "--gamma-C", "1", "--labeled", "6", "--seed", "1",
                     "--model-out", str(tmp_path / "fit"),
                     "--outputs", str(tmp_path / "fit.out")]) == 0
    workflow = tmp_path / "same.yaml"
    workflow.write_text(
        f"name: same\ndata: {{source: svmlight_views, paths: [{paths['moons']}, "
        f"{paths['lines']}], names: [moons, lines]}}\n"
        "split: {labeled: 6, test_fraction: 0, seed: 1}\n"
        "estimator: {name: CoRLS, params: {gamma_A: 0.01, gamma_C: 1.0}}\n"
        "evaluation: {metrics: [train_error_labeled, error_unlabeled]}\n"
        f"outputs: {{runs: {tmp_path / 'runs'}, model_store: {tmp_path / 'models'}, "
        "plots: false, performance_report: false, predictions: all}\n")
    # the run's steps as `dask-ssl run` takes them, on this client (a second client's connect
    # and close cost seconds on a loaded host)
    doc = load_workflow(workflow).doc
    run_workflow(doc, new_run(doc), client=client, progress=False)
    fitted = json.loads((tmp_path / "fit" / "model.json").read_text())
    (stored,) = (tmp_path / "models" / "same" / "versions").glob("*/model.json")
    run = json.loads(stored.read_text())
    assert set(fitted) - NOT_COMPARED == set(run) - NOT_COMPARED
    # (no history: the multi-view estimators solve in closed form)
    assert {k: v for k, v in fitted.items() if k not in NOT_COMPARED} == \
        {k: v for k, v in run.items() if k not in NOT_COMPARED}
    assert fitted["data"] == [str(paths["moons"]), str(paths["lines"])]
    assert fitted["metrics"]["error_unlabeled"] < 0.2
    (run_dir,) = (tmp_path / "runs" / "same").iterdir()
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "fit.out"),
                                  np.loadtxt(run_dir / "predictions-all.txt"))

    # predict: the views by name, in any order, give the fit's scores
    out = tmp_path / "pred.out"
    assert main(["predict", "--model", str(tmp_path / "fit"), "--view",
                 f"lines={paths['lines']}", "--view", str(paths["moons"]),
                 "--outputs", str(out)]) == 0
    np.testing.assert_allclose(np.loadtxt(out), np.loadtxt(tmp_path / "fit.out"),
                               rtol=1e-9, atol=1e-9)


@pytest.fixture
def served(toy, tmp_path):
    """A saved CoRLS on views "moons" and "lines", and their files."""
    views, y, y_fit = toy
    save_model(FITTED["CoRLS"]().fit(views, y_fit), tmp_path / "m")
    return tmp_path / "m", _write_views(tmp_path, views, y)


@pytest.mark.parametrize("given, message", [
    (["moons"], r"missing \['lines'\], extra \[\]"),
    (["moons", "lines", "pixels=moons"], r"missing \[\], extra \['pixels'\]"),
    (["moons", "fourier=lines"], r"missing \['lines'\], extra \['fourier'\]"),
])
def test_predict_names_a_missing_extra_or_misnamed_view(served, tmp_path, capsys, given,
                                                        message):
    model, paths = served
    flags = []
    for spec in given:
        name, _, view = spec.partition("=")
        flags += ["--view", f"{name}={paths[view or name]}"]
    out = tmp_path / "p.out"
    # no scheduler is reachable here: the error comes before any cluster or file is used
    assert main(["predict", "--model", str(model), *flags, "--outputs", str(out),
                 "--scheduler", "tcp://127.0.0.1:1"]) == 2
    assert re.search(message, capsys.readouterr().err)
    assert not out.exists()


def test_predict_refuses_data_for_a_multiview_model_and_views_for_a_single_one(served,
                                                                              tmp_path, capsys):
    model, paths = served
    out = tmp_path / "p.out"
    assert main(["predict", "--model", str(model), "--data", str(paths["moons"]),
                 "--outputs", str(out)]) == 2
    assert "multi-view CoRLS fitted on views ['moons', 'lines']" in capsys.readouterr().err
    assert main(["predict", "--model", str(SINGLE_VIEW_MODEL), "--view", str(paths["moons"]),
                 "--outputs", str(out)]) == 2
    assert "takes one matrix" in capsys.readouterr().err
    assert not out.exists()


def test_fit_checks_the_data_flags_before_any_work(tmp_path, capsys):
    common = ["--model-out", str(tmp_path / "m"), "--scheduler", "tcp://127.0.0.1:1"]
    assert main(["fit", "--algorithm", "corls", "--data", "x.svm", *common]) == 2
    assert "--algorithm corls takes views" in capsys.readouterr().err
    assert main(["fit", "--algorithm", "svm", "--view", "a.svm", *common]) == 2
    assert "--algorithm svm takes one matrix" in capsys.readouterr().err
    assert main(["fit", "--algorithm", "corls", "--view", "a/x.svm", "--view", "b/x.svm",
                 *common]) == 2
    assert "['x'] name more than one file" in capsys.readouterr().err
    assert main(["fit", "--algorithm", "corls", "--view", "a.svm", "--classes", "1", "2",
                 *common]) == 2
    assert "--classes selects from a .mat file" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_predict_takes_the_models_views_from_a_mat_file_by_name(toy, tmp_path):
    import scipy.io

    from dask_ssl.workflow.views import predict_views, read_mat_views

    views, y, y_fit = toy
    cells = np.empty((1, 3), dtype=object)
    cells[0, :] = [views["moons"], np.zeros((N, 1)), views["lines"]]
    scipy.io.savemat(tmp_path / "d.mat", {"X": cells, "Y": (y > 0).astype(float)[:, None] + 1})
    rows = read_mat_views(tmp_path / "d.mat", views=[0, 2], positive_class=2)
    assert list(rows.views) == ["view0", "view2"] and np.array_equal(rows.labels, y)
    save_model(FITTED["CoRLS"]().fit(rows.views, y_fit), tmp_path / "m")
    model = load_model(tmp_path / "m")
    # the file's extra view (view1) is left; the model's are taken by name
    got = predict_views(model, mat=tmp_path / "d.mat")
    assert list(got) == ["view0", "view2"]
    np.testing.assert_allclose(model.decision_function(got),
                               model.decision_function(rows.views), rtol=1e-12, atol=1e-12)
    cells[0, :] = [views["moons"], views["lines"], views["lines"]]
    scipy.io.savemat(tmp_path / "two.mat", {"X": cells[:, :2], "Y": np.ones((N, 1))})
    with pytest.raises(ValueError, match=r"missing \['view2'\]"):
        predict_views(model, mat=tmp_path / "two.mat")


def test_store_compares_a_new_model_with_the_promoted_one_on_the_same_views(client, tmp_path):
    workflow = tmp_path / "toy.yaml"
    workflow.write_text(
        "name: toy\ndata: {source: multiview_generator, name: two_moons_two_lines, "
        "params: {n: 80, seed: 3}}\nsplit: {labeled_per_class: 3, test_fraction: 0.25}\n"
        "estimator: {name: CoRLS, params: {gamma_A: 0.01, gamma_C: 1.0}}\n"
        f"outputs: {{runs: {tmp_path / 'runs'}, model_store: {tmp_path / 'models'}, "
        "plots: false, performance_report: false}\n")
    doc = load_workflow(workflow).doc
    first = run_workflow(doc, new_run(doc), client=client, progress=False)
    assert first["model"]["promoted"] and first["data"]["n_features"] == [2, 2]
    doc["estimator"]["params"]["gamma_C"] = 0.0  # one RLS per view: the views do not agree
    second = run_workflow(doc, new_run(doc), client=client, progress=False)
    # the promoted model, loaded from the store, scored on this run's held-out views
    assert second["model"]["current"] == first["metrics"]["error"]
    assert second["model"]["candidate"] == second["metrics"]["error"]
