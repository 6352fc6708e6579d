"""GraphTransduction served: a model directory keeps what scoring new rows needs (the training
rows, their scores, the prior), scores new rows as the fitted model does, on the workers for
row blocks, and ``dask-ssl fit --algorithm transduction`` / ``dask-ssl predict`` run it."""

import json
import pickle
import shutil

import numpy as np
import pytest
import scipy.sparse as sp

from dask_ssl.cli import main
from dask_ssl.graph.knn import DriverIndex, DriverRows, query_knn
from dask_ssl.linalg import RowBlocks
from dask_ssl.models import GraphTransduction
from dask_ssl.models.artifact import _sha256, load_model, save_model
from dask_ssl.models.graph_transduction import _normalize

from ._labels import labels_per_class
from .test_cli import write_problem


def _clusters(n=400, sparse=False, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(n, 8))
    X[:, 0] += 3.0 * y
    if sparse:  # non-negative term-count-like rows: the cosine graph
        X = sp.csr_matrix(np.abs(X) * (rng.random(X.shape) < 0.6))
    return X, y


SETTINGS = {
    # the thesis method: no prior, the kNN mean of the training scores
    "thesis": dict(gamma_I=1.0, prior=None, unlabeled_weight=0.0, class_balance=None),
    # the graph weight 0: the supervised prior's labels, on any row
    "supervised": dict(gamma_I=0.0, prior="rls", unlabeled_weight=1.0, class_balance=None),
    # a prior held with weight mu, local scaling, the class mix cut
    "prior": dict(gamma_I=10.0, prior="rls", unlabeled_weight=0.01, class_balance="labeled",
                  metric="euclidean", weights="heat", t="local"),
}


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_a_stored_model_scores_new_rows_as_the_fitted_one(client, tmp_path, setting, sparse):
    X, y = _clusters(sparse=sparse)
    y_fit = labels_per_class(y, 8, seed=1)
    est = GraphTransduction(n_neighbors=7, random_state=0, client=client,
                            **SETTINGS[setting]).fit(X, y_fit)
    Q = X[::5] * 1.01
    est.set_params(client=None)  # a client does not pickle; the fit's client stays current
    save_model(est, tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    # the same exact search of the same rows as a pickled model's
    np.testing.assert_allclose(loaded.predict_proba(Q),
                               pickle.loads(pickle.dumps(est)).predict_proba(Q),
                               rtol=1e-12, atol=1e-15)
    # the fitted model searches its workers' index, whose distance kernel rounds otherwise
    np.testing.assert_allclose(loaded.predict_proba(Q), est.predict_proba(Q), rtol=1e-6)
    np.testing.assert_array_equal(loaded.predict(Q), est.predict(Q))
    assert (loaded.prior_ is None) == (SETTINGS[setting]["prior"] is None)
    # row blocks are scored on their workers, with the same answer; by the fitted model
    # through its workers' index, as rows in memory are
    blocks = RowBlocks.from_array(Q, client=client, n_blocks=3)
    np.testing.assert_array_equal(est.decision_function(blocks), est.decision_function(Q))
    np.testing.assert_allclose(loaded.decision_function(blocks), loaded.decision_function(Q),
                               rtol=1e-12, atol=1e-15)
    # the reported bytes are the arrays the directory holds (the archive adds its headers)
    doc = json.loads((tmp_path / "m" / "model.json").read_text())
    size = doc["stored_bytes"]
    assert size["total"] == size["rows"] + size["scores"] + size["index"] + size["rest"]
    assert size["scores"] == est.scores_.nbytes
    assert size["index"] == 0  # below 5000 rows the graph is exact: no index to keep
    assert size["total"] <= (tmp_path / "m" / "arrays.npz").stat().st_size < 1.1 * size["total"] + 4096


@pytest.fixture(scope="module")
def indexed(client, tmp_path_factory):
    """A model fitted on enough rows for kNN indexes (5000, build_knn's exact_below), some
    rows repeated (the groups of identical rows are kept too), and its directory."""
    X, y = _clusters(n=5200, seed=2)
    X[100:400] = X[:300]
    est = GraphTransduction(n_neighbors=7, random_state=0, client=client,
                            **SETTINGS["thesis"]).fit(X, labels_per_class(y, 8, seed=1))
    assert est.graph_.neighbors.indexes is not None and est.graph_.neighbors.groups is not None
    est.set_params(client=None)
    path = save_model(est, tmp_path_factory.mktemp("indexed") / "m")
    return est, path, X[::13] * 1.01


def test_a_stored_model_searches_the_fitted_models_index(client, indexed):
    """The directory keeps the fit's kNN indexes: the loaded model finds the fitted model's
    neighbours (the same search of the same arrays), so its scores are the fitted model's
    exactly, on the driver and on the workers."""
    est, path, Q = indexed
    loaded = load_model(path)
    assert isinstance(loaded._search()[0], DriverIndex)
    np.testing.assert_array_equal(loaded.predict_proba(Q), est.predict_proba(Q))
    blocks = RowBlocks.from_array(Q, client=client, n_blocks=3)
    np.testing.assert_array_equal(loaded.predict_proba(blocks), est.predict_proba(Q))
    size = json.loads((path / "model.json").read_text())["stored_bytes"]
    with np.load(path / "arrays.npz") as npz:
        index_bytes = sum(npz[k].nbytes for k in npz.files if k.startswith("index_"))
    assert size["index"] == index_bytes > 0
    assert size["total"] == size["rows"] + size["scores"] + size["index"] + size["rest"]


def test_a_directory_without_the_index_searches_its_rows_exactly(indexed, tmp_path):
    """A directory written before directories kept the index (the same one without its
    index arrays) loads and searches all its rows exactly: its i-th neighbour is never
    farther than the index's, the index finds most of the same, and the two models label the
    new rows alike."""
    est, path, Q = indexed
    old = _rewritten(path, tmp_path / "old",
                     lambda arrays: {k: v for k, v in arrays.items() if not k.startswith("index_")})
    loaded = load_model(old)
    exact = loaded._search()[0]
    assert isinstance(exact, DriverRows)
    _, d_exact = query_knn(exact, Q, 7)
    _, d_index = query_knn(load_model(path)._search()[0], Q, 7)
    # (the index's float32 distance kernel rounds otherwise than the exact search)
    assert (d_exact <= d_index * (1 + 1e-5) + 1e-6).all()
    assert np.isclose(d_exact, d_index, rtol=1e-5).mean() >= 0.95  # the index's recall
    assert np.mean(loaded.predict(Q) == est.predict(Q)) >= 0.99


@pytest.mark.parametrize("key, change", [
    ("index_0_adj_ind", lambda a: np.where(np.arange(a.size) == 5, a.max() + 1, a)),
    ("index_0_tree_left", lambda a: np.where(np.arange(a.size) == 0, 0, a)),
    ("index_members", lambda a: a[::-1][1:]),
])
def test_a_stored_index_that_does_not_fit_its_rows_is_refused(indexed, tmp_path, key, change):
    """The search kernels read where the index's row numbers point, unchecked: a directory
    whose index (checksum renewed) points outside its rows, or whose tree loops, is refused
    on loading with the array's name."""
    _, path, _ = indexed
    bad = _rewritten(path, tmp_path / "bad", lambda arrays: {**arrays, key: change(arrays[key])})
    with pytest.raises(ValueError, match=f"{key} is inconsistent"):
        load_model(bad)


def _rewritten(path, dest, edit):
    """A copy of model directory ``path`` at ``dest`` with its arrays ``edit``ed and their
    checksum renewed."""
    shutil.copytree(path, dest)
    with np.load(path / "arrays.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    np.savez(dest / "arrays.npz", **edit(arrays))
    doc = json.loads((dest / "model.json").read_text())
    doc["checksums"]["arrays.npz"] = _sha256(dest / "arrays.npz")
    (dest / "model.json").write_text(json.dumps(doc))
    return dest


def test_fit_and_predict_from_the_shell(client, tmp_path):
    data, new = tmp_path / "train.svm", tmp_path / "new.svm"
    write_problem(data, n=400)
    X_new, _ = write_problem(new, n=60, seed=5)
    model = tmp_path / "model"
    with client.as_current():
        assert main(["fit", "--data", str(data), "--algorithm", "transduction",
                     "--labeled", "40", "--n-neighbors", "7", "--model-out", str(model),
                     "--outputs", str(tmp_path / "fit.out")]) == 0
        assert main(["predict", "--model", str(model), "--data", str(new),
                     "--outputs", str(tmp_path / "new.out")]) == 0
    doc = json.loads((model / "model.json").read_text())
    assert doc["estimator"] == "GraphTransduction"
    assert doc["selection_"] and sum(row["chosen"] for row in doc["selection_"]) == 1
    est = load_model(model)
    # fit writes the transductive answer on the training rows, predict the new rows' scores
    fitted = np.loadtxt(tmp_path / "fit.out")
    P = _normalize(est.scores_ * est.class_weights_)  # label_distributions_ of the fit
    # (the outputs file holds 10 significant digits)
    np.testing.assert_allclose(fitted, P[:, 1] - P[:, 0], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(np.loadtxt(tmp_path / "new.out"), est.decision_function(X_new),
                               rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("flag, value, param, expected", [
    ("--prior", "none", "prior", None),
    ("--class-balance", "labeled", "class_balance", "labeled"),
    ("--unlabeled-weight", "0.5", "unlabeled_weight", 0.5),
    ("--metric", "cosine", "metric", "cosine"),
])
def test_transduction_flags_reach_the_estimator(flag, value, param, expected):
    from dask_ssl.cli import build_parser
    from dask_ssl.workflow.fit import make_estimator

    args = build_parser().parse_args(["fit", "--data", "x.svm", "--algorithm", "transduction",
                                      flag, value, "--model-out", "m"])
    assert make_estimator(args).get_params()[param] == expected


def test_a_transduction_flag_on_another_algorithm_is_refused(capsys):
    assert main(["fit", "--data", "x.svm", "--algorithm", "svm", "--prior", "none",
                 "--model-out", "m"]) == 2
    assert "--prior does not apply to --algorithm svm" in capsys.readouterr().err
