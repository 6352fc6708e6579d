"""Workflow files: every shipped one validates; broken ones name the file, key and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from dask_ssl.cli import main
from dask_ssl.models import ESTIMATORS
from dask_ssl.models.artifact import registry
from dask_ssl.workflow.spec import WorkflowError, load_workflow

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "workflows").glob("*.yaml"))

GOOD = """\
name: t
data:
  source: generator
  name: g50c
  params: {n: 200, seed: 1}
split:
  labeled_per_class: 5
estimator:
  name: L2SVM
  params:
    gamma_A: 1e-2
"""


def write(tmp_path, text, name="w.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_shipped_workflows_validate():
    names = {p.stem for p in SHIPPED}
    assert {"quickstart", "kdd99", "rcv1", "nightly-retrain"} <= names
    for path in SHIPPED:
        wf = load_workflow(path)
        assert wf.doc["estimator"]["name"] in registry()  # single- or multi-view
        assert wf.doc["outputs"]["model_name"] == wf.name


def test_quickstart_uses_the_semi_supervised_estimator_when_it_exists():
    wf = load_workflow(ROOT / "workflows" / "quickstart.yaml")
    expected = "TSVM" if "TSVM" in ESTIMATORS else "L2SVM"
    assert wf.doc["estimator"]["name"] == expected
    assert wf.doc["data"]["source"] == "generator"


def test_defaults_and_numbers_without_a_dot(tmp_path):
    wf = load_workflow(write(tmp_path, GOOD))
    assert wf.doc["estimator"]["params"]["gamma_A"] == pytest.approx(0.01)
    assert wf.doc["split"] == {"labeled_per_class": 5, "test_fraction": 0.2, "seed": 0}
    assert Path(wf.doc["outputs"]["model_store"]).is_absolute()
    assert wf.doc["evaluation"]["promote"]["metric"] == "error"


def test_error_names_file_line_and_key(tmp_path):
    path = write(tmp_path, GOOD.replace("gamma_A: 1e-2", "gamma_A: -1"))
    with pytest.raises(WorkflowError) as exc:
        load_workflow(path)
    assert str(exc.value) == (f"{path}:11: estimator.params.gamma_A: The 'gamma_A' parameter "
                              "of L2SVM must be a float in the range (0.0, inf). Got -1 instead.")


def test_all_problems_reported_in_line_order(tmp_path):
    text = GOOD.replace("labeled_per_class: 5", "labeled_per_class: 5\n  test_fraction: 1.5") \
               .replace("gamma_A: 1e-2", "gama: 1e-2")
    with pytest.raises(WorkflowError) as exc:
        load_workflow(write(tmp_path, text))
    lines = str(exc.value).splitlines()
    assert len(lines) == 2
    assert ":8: split.test_fraction: 1.5 is not < 1" in lines[0]
    assert ":12: estimator.params.gama: unknown key (did you mean 'gamma_A'?)" in lines[1]


@pytest.mark.parametrize("old,new,expected", [
    ("name: g50c", "name: g50", ":4: data.name: 'g50' is not one of"),
    ("{n: 200, seed: 1}", "{n: 200, sed: 1}", ":5: data.params.sed: unknown key"),
    ("  source: generator\n", "", ":2: data.source: required key is missing"),
    ("name: L2SVM", "name: Nope", ":9: estimator.name: 'Nope' is not one of"),
    ("    gamma_A: 1e-2", "    gamma_A: 1e-2\n    gamma_A: 2", ":12: estimator.params.gamma_A: key given twice"),
    ("params:\n    gamma_A: 1e-2", "params: [1", ":11: YAML syntax: expected"),
    ("labeled_per_class: 5", "labeled_per_class: 5\n  labeled: 3",
     ":6: split: give labeled or labeled_per_class, not both"),
])
def test_broken_workflows(tmp_path, old, new, expected):
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(WorkflowError) as exc:
        load_workflow(path)
    assert str(exc.value).startswith(str(path))
    assert expected in str(exc.value)


def test_estimator_own_checks_are_mapped_to_the_line(tmp_path):
    path = write(tmp_path, GOOD.replace("gamma_A: 1e-2", "gamma_A: 1e-2\n    solver: magic"))
    with pytest.raises(WorkflowError,
                       match=r":12: estimator\.params\.solver: The 'solver' parameter of L2SVM"):
        load_workflow(path)


def test_path_template_is_checked(tmp_path):
    text = ("name: t\ndata:\n  source: svmlight\n  path: d/{day}.svm\n"
            "estimator: {name: L2SVM}\n")
    with pytest.raises(WorkflowError, match=r":4: data\.path: unknown template field"):
        load_workflow(write(tmp_path, text))
    wf = load_workflow(write(tmp_path, text.replace("{day}", "{date:%Y%m%d}")))
    import datetime as dt

    assert wf.data_path(dt.date(2026, 1, 2)).endswith("d/20260102.svm")


def test_overrides(tmp_path):
    path = write(tmp_path, GOOD)
    wf = load_workflow(path, ["estimator.params.gamma_A=0.5", "split.seed=7",
                              "split.labeled_per_class=[2, 4]"])
    assert wf.doc["estimator"]["params"]["gamma_A"] == 0.5
    assert wf.doc["split"]["seed"] == 7
    assert wf.doc["split"]["labeled_per_class"] == [2, 4]
    with pytest.raises(WorkflowError) as exc:
        load_workflow(path, ["estimator.params.gamma_A=-2"])
    assert str(exc.value) == (f"{path} (--set estimator.params.gamma_A=-2): "
                              "estimator.params.gamma_A: The 'gamma_A' parameter of L2SVM must "
                              "be a float in the range (0.0, inf). Got -2 instead.")
    with pytest.raises(WorkflowError, match="expected KEY=VALUE"):
        load_workflow(path, ["gamma_A"])
    # a value that is not YAML (here a flow mapping cut short) is named, not a parser traceback
    with pytest.raises(WorkflowError, match=r"--set estimator.params.checkpoint=\{run_dir\}/c: "
                                            r"the value is not valid YAML .*quote it"):
        load_workflow(path, ["estimator.params.checkpoint={run_dir}/c"])
    wf = load_workflow(path, ["description='{run_dir}/c'"])
    assert wf.doc["description"] == "{run_dir}/c"


def test_cli_refuses_a_broken_workflow_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, GOOD.replace("gamma_A: 1e-2", "gamma_A: 0"))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:11: estimator.params.gamma_A: The 'gamma_A' parameter of L2SVM must be" in err
    assert "LocalCluster" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.yaml"]
    assert main(["run", str(ROOT / "workflows" / "quickstart.yaml"), "--detach"]) == 2
    assert "--detach needs --scheduler" in capsys.readouterr().err


def test_graph_section_only_for_estimators_that_use_one(tmp_path):
    path = write(tmp_path, GOOD + "graph: {n_neighbors: 10}\n")
    with pytest.raises(WorkflowError, match=r":12: graph: estimator L2SVM does not use a graph"):
        load_workflow(path)


@pytest.mark.parametrize("name, old, message", [
    ("L2SVM", "gamma: 1e-2", ":11: estimator.params.gamma: renamed: the key is now 'gamma_A'"),
    ("DAS3VM", "T0: 2.0",
     ":11: estimator.params.T0: renamed: the key is now 'initial_temperature'"),
    ("DAS3VM", "epsilon: 1e-5",
     ":11: estimator.params.epsilon: renamed: the key is now 'anneal_tol'"),
    ("L2SVM", "gamma_A: 1e-2\ngraph:\n  seed: 3",
     ":13: graph.seed: renamed: the key is now 'random_state'"),
])
def test_old_keys_name_their_new_names(tmp_path, name, old, message):
    # a workflow written for the names before the one vocabulary is refused with the new name,
    # never run with a default in place of the value it gave
    text = GOOD.replace("name: L2SVM", f"name: {name}").replace("    gamma_A: 1e-2",
                                                                 "    " + old)
    with pytest.raises(WorkflowError) as exc:
        load_workflow(write(tmp_path, text))
    assert message in str(exc.value)


@pytest.mark.parametrize("name, ok", [("TSVM", True), ("DAS3VM", True), ("KernelDAS3VM", True),
                                      ("BranchAndBoundS3VM", False)])
def test_gamma_u_auto_goes_through_the_estimators_params(tmp_path, name, ok):
    text = GOOD.replace("name: L2SVM", f"name: {name}").replace("gamma_A: 1e-2", "gamma_u: auto")
    if ok:
        assert load_workflow(write(tmp_path, text)).doc["estimator"]["params"]["gamma_u"] == "auto"
    else:
        with pytest.raises(WorkflowError,
                           match="estimator.params.gamma_u: The 'gamma_u' parameter"):
            load_workflow(write(tmp_path, text))
