"""``dask-ssl fit`` is a one-step workflow: the same settings through ``fit`` and through a
workflow file under ``dask-ssl run`` train the same model and describe it alike."""

import json

import numpy as np
import pytest

from dask_ssl.cli import main

from .test_cli import write_problem

#: ``model.json`` fields that may differ, and why:
#: - ``created``, ``fit_seconds``: when the model was written, how long its fit took;
#: - ``wall_seconds``, ``phases``, ``phases_cpu``: the command's timings, which ``fit`` alone
#:   records;
#: - ``workflow``, ``run_dir``, ``warm_started_from``: a run's bookkeeping (its name, its run
#:   directory, the stored model it started from), which ``fit`` has no counterpart of.
#: ``history`` is compared without each stage's ``seconds`` (a timing too).
NOT_COMPARED = {"created", "fit_seconds", "wall_seconds", "phases", "phases_cpu", "workflow",
                "run_dir", "warm_started_from"}


def comparable(doc: dict) -> dict:
    out = {k: v for k, v in doc.items() if k not in NOT_COMPARED}
    out["history"] = [{k: v for k, v in record.items() if k != "seconds"}
                      if isinstance(record, dict) else record for record in doc["history"]]
    # what a selection cost is compared in round trips; its seconds differ from run to run
    if isinstance(doc.get("selection_cost_"), dict):
        out["selection_cost_"] = {k: v for k, v in doc["selection_cost_"].items()
                                  if "seconds" not in k}
    return out


CASES = {
    # a linear S3VM: gamma' ramp and label switching over 40 of the 400 labels
    "tsvm": (["--algorithm", "tsvm", "--gamma-A", "0.01", "--gamma-u", "0.5",
              "--labeled", "40", "--seed", "3"],
             "split: {labeled: 40, test_fraction: 0, seed: 3}\n"
             "estimator: {name: TSVM, params: {gamma_A: 0.01, gamma_u: 0.5}}\n"),
    # a graph estimator: the kNN graph built inside its fit, from the same rows
    "linlaprls": (["--algorithm", "linlaprls", "--gamma-A", "0.01", "--gamma-I", "0.1",
                   "--n-neighbors", "5", "--labeled", "20"],
                  "split: {labeled: 20, test_fraction: 0}\n"
                  "estimator: {name: LinearLapRLS, params: {gamma_A: 0.01, gamma_I: 0.1, "
                  "n_neighbors: 5}}\n"),
    # graph transduction: the graph and the prior in its fit, the transductive scores written
    "transduction": (["--algorithm", "transduction", "--gamma-I", "1", "--prior", "none",
                      "--class-balance", "none", "--n-neighbors", "5", "--labeled", "20"],
                     "split: {labeled: 20, test_fraction: 0}\n"
                     "estimator: {name: GraphTransduction, params: {gamma_I: 1.0, prior: null, "
                     "class_balance: null, n_neighbors: 5}}\n"),
    # a sparse kernel model: greedy basis on the slack objective, scored over its basis
    "sparselaprls": (["--algorithm", "sparselaprls", "--n-basis", "0.05", "--nu", "0.5",
                      "--gamma-I", "10", "--n-neighbors", "5", "--random-state", "2",
                      "--labeled", "20"],
                     "split: {labeled: 20, test_fraction: 0}\n"
                     "estimator: {name: SparseLapRLS, params: {n_basis: 0.05, nu: 0.5, "
                     "gamma_I: 10.0, n_neighbors: 5, random_state: 2}}\n"),
    # sparse eigenfunction bases: the filter, the Lasso on the labels, the Nystrom extension
    "eigenfunction": (["--algorithm", "eigenfunction", "--gamma-S", "0.01", "--sign-tol", "0.5",
                       "--no-fit-intercept", "--labeled", "20"],
                      "split: {labeled: 20, test_fraction: 0}\n"
                      "estimator: {name: SparseEigenfunctionClassifier, params: {gamma_S: 0.01, "
                      "sign_tol: 0.5, fit_intercept: false}}\n"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fit_and_run_with_the_same_settings_write_the_same_model(client, tmp_path, case):
    flags, sections = CASES[case]
    data = tmp_path / "train.svm"
    write_problem(data)
    with client.as_current():
        assert main(["fit", "--data", str(data), *flags, "--model-out", str(tmp_path / "fit"),
                     "--outputs", str(tmp_path / "fit.out")]) == 0
    workflow = tmp_path / "same.yaml"
    workflow.write_text(
        f"name: same\ndata: {{source: svmlight, path: {data}}}\n{sections}"
        "evaluation: {metrics: [train_error_labeled, error_unlabeled]}\n"
        f"outputs: {{runs: {tmp_path / 'runs'}, model_store: {tmp_path / 'models'}, "
        "plots: false, performance_report: false, predictions: all}\n")
    assert main(["run", str(workflow), "--scheduler", client.scheduler.address]) == 0

    fitted = json.loads((tmp_path / "fit" / "model.json").read_text())
    (stored,) = (tmp_path / "models" / "same" / "versions").glob("*/model.json")
    run = json.loads(stored.read_text())
    assert set(fitted) - NOT_COMPARED == set(run) - NOT_COMPARED
    assert comparable(fitted) == comparable(run)
    assert fitted["metrics"] and fitted["round_trips"] > 0
    (run_dir,) = (tmp_path / "runs" / "same").iterdir()
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "fit.out"),
                                  np.loadtxt(run_dir / "predictions-all.txt"))
