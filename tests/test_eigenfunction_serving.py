"""``SparseEigenfunctionClassifier`` as a served model: ``dask-ssl fit --algorithm
eigenfunction`` writes the model the estimator fits in process, ``dask-ssl predict`` scores new
rows on the workers as the estimator does, bad flags stop before any work, and the shipped
workflow trains and promotes one."""

import json

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, make_moons

from dask_ssl.cli import main
from dask_ssl.models import SparseEigenfunctionClassifier
from dask_ssl.models.artifact import load_model
from dask_ssl.workflow.runner import store_for

from .test_workflow_run import run_shipped

#: (flags, the same hyperparameters as estimator parameters): the default "auto" choice of
#: gamma_S on 6 labels a class, a given weight with the filter, a bias and a width set, and the
#: eigenvectors of a Nystrom approximation on seeded landmarks with a given weight (a Lasso fit,
#: so the model expands over the landmarks only).
CASES = {
    "auto": ([], {}),
    "nystrom": (["--n-components", "40", "--landmarks", "kmeans++", "--random-state", "3",
                 "--gamma-S", "0.02", "--sign-tol", "0.2", "--kernel-params", '{"gamma": 20.0}'],
                dict(n_components=40, landmarks="kmeans++", random_state=3, gamma_S=0.02,
                     sign_tol=0.2, kernel_params={"gamma": 20.0})),
    "given": (["--gamma-S", "0.01", "--sign-tol", "0.2", "--fit-intercept",
               "--kernel-params", '{"gamma": 20.0}'],
              dict(gamma_S=0.01, sign_tol=0.2, fit_intercept=True,
                   kernel_params={"gamma": 20.0})),
}


def moons_files(tmp_path):
    """Training rows (6 labels a class, label 0 = unlabeled) and new rows, as svmlight files."""
    X, t = make_moons(160, noise=0.08, random_state=1)
    y = np.where(t == 1, 1.0, -1.0)
    train, new = np.arange(120), np.arange(120, 160)
    labels = np.zeros(train.size)
    for c in (-1.0, 1.0):
        rows = np.flatnonzero(y[train] == c)[:6]
        labels[rows] = c
    dump_svmlight_file(X[train], labels, str(tmp_path / "train.svm"), zero_based=False)
    dump_svmlight_file(X[new], y[new], str(tmp_path / "new.svm"), zero_based=False)
    return X[train], labels, X[new]


@pytest.mark.parametrize("case", sorted(CASES))
def test_cli_fit_and_predict_equal_the_estimator_in_process(client, tmp_path, case):
    flags, params = CASES[case]
    X, labels, X_new = moons_files(tmp_path)
    model = tmp_path / "model"
    with client.as_current():
        assert main(["fit", "--data", str(tmp_path / "train.svm"), "--algorithm",
                     "eigenfunction", *flags, "--model-out", str(model)]) == 0
        assert main(["predict", "--model", str(model), "--data", str(tmp_path / "new.svm"),
                     "--outputs", str(tmp_path / "new.out")]) == 0
    est = SparseEigenfunctionClassifier(unlabeled=0, **params).fit(X, labels)
    doc = json.loads((model / "model.json").read_text())
    assert doc["estimator"] == "SparseEigenfunctionClassifier"
    assert {k: doc["params"][k] for k in params} == params
    assert doc["gamma_S_"] == est.gamma_S_ and doc["n_nonzero_"] == est.n_nonzero_
    # the same candidates, held-out errors and choice (the residuals to rounding: the fit on
    # the workers' rows sums in another order)
    assert len(doc["selection_"]) == len(est.selection_)
    for stored, fitted in zip(doc["selection_"], est.selection_):
        assert set(stored) == set(fitted)
        for key, value in fitted.items():
            assert stored[key] == (pytest.approx(value, rel=1e-9)
                                   if isinstance(value, float) else value), key
    if case == "auto":
        assert doc["selection_"]  # 6 labels a class: chosen on them, the table stored
    else:
        assert doc["gamma_S_"] == params["gamma_S"] and doc["n_nonzero_"] > 0
    np.testing.assert_allclose(np.loadtxt(tmp_path / "new.out"), est.decision_function(X_new),
                               rtol=1e-9, atol=1e-12)
    loaded = load_model(model)
    np.testing.assert_array_equal(loaded.predict(X_new), est.predict(X_new))
    if "n_components" in params:
        # the same landmarks drawn from the file's rows as from the rows in memory, and the
        # stored model expands over them alone (sparse, as the svmlight file was read)
        np.testing.assert_array_equal(loaded.landmark_indices_, est.landmark_indices_)
        assert len(set(est.landmark_indices_.tolist())) == 40
        np.testing.assert_allclose(loaded.expansion_points_.toarray(),
                                   X[np.sort(est.landmark_indices_)], rtol=1e-15)
        # to rounding relative to the largest (the Gram matrix sums blocks in another order)
        np.testing.assert_allclose(loaded.eigenvalues_, est.eigenvalues_, rtol=1e-9,
                                   atol=1e-12 * est.eigenvalues_[0])


@pytest.mark.parametrize("flags, message", [
    (["--gamma-S", "-1"], "gamma_S"),
    (["--sign-tol", "2"], "sign_tol"),
    (["--n-components", "0"], "n_components"),
])
def test_bad_flags_stop_before_any_work_and_leave_no_model(tmp_path, capsys, flags, message):
    X, labels, _ = moons_files(tmp_path)
    model = tmp_path / "model"
    # no scheduler listens there: an error about the flag shows the check came first
    status = main(["fit", "--data", str(tmp_path / "train.svm"), "--algorithm", "eigenfunction",
                   *flags, "--model-out", str(model), "--scheduler", "tcp://127.0.0.1:9"])
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and "dask-ssl: error:" in err
    assert not model.exists()


def test_eigenfunction_flags_belong_to_eigenfunction(tmp_path, capsys):
    moons_files(tmp_path)
    assert main(["fit", "--data", str(tmp_path / "train.svm"), "--algorithm", "svm",
                 "--sign-tol", "0.2", "--model-out", str(tmp_path / "m")]) == 2
    assert "--sign-tol does not apply to --algorithm svm" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fit", "--data", "x.svm", "--algorithm", "eigenfunction", "--gamma-S", "big",
              "--model-out", str(tmp_path / "m")])
    assert "expected a number or 'auto'" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_shipped_eigenfunction_workflow(client, tmp_path):
    """workflows/eigenfunction-moons.yaml as shipped: the Lasso over the sign-constant
    eigenvectors labels the held-out rows of two moons right from 5 labels a class, and the
    model is stored and promoted."""
    report = run_shipped("eigenfunction-moons.yaml", tmp_path, client)
    assert report["split"]["n_labeled"] == 10 and report["split"]["n_test"] == 100
    assert report["metrics"]["error"] <= 0.05
    assert report["model"]["promoted"] and report["model"]["previous"] is None
    store = store_for(report["parameters"])
    model = store.load()
    assert type(model).__name__ == "SparseEigenfunctionClassifier"
    assert model.gamma_S_ == 0.02 and 0 < model.n_nonzero_ <= model.basis_.size
    assert model.expansion_points_.shape == (300, 2)
    # a second run is judged against the promoted model, reloaded from the store and scored
    # on the held-out rows: the same draw errs alike
    again = run_shipped("eigenfunction-moons.yaml", tmp_path, client)["model"]
    assert again["previous"] == report["model"]["version"]
    assert again["current"] == report["metrics"]["error"] == again["candidate"]
    assert again["promoted"]
