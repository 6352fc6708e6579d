"""L2SVM reaches LIBLINEAR's optimum (-s 2, the L2-loss primal solver) on real KDD99 rows."""

import numpy as np
import pytest

from dask_ssl.data import read_kdd99
from dask_ssl.models import L2SVM

liblinear = pytest.importorskip("liblinear.liblinearutil")


def objective(X, y, w, b, gamma):
    o = np.asarray(X @ w).ravel() + b
    return 0.5 * gamma * (w @ w + b * b) + 0.5 / len(y) * np.sum(np.maximum(0, 1 - y * o) ** 2)


@pytest.mark.parametrize("gamma", [1e-3, 1e-5])
def test_same_objective_as_liblinear_on_kdd99_subset(client, kdd99_path, gamma):
    X, y = read_kdd99(str(kdd99_path), n_rows=20000)
    # our objective / gamma is LIBLINEAR's with C = 1/(2 gamma l); both regularize the bias
    prob = liblinear.problem(y, X)
    prob.set_bias(1)
    model = liblinear.train(prob, liblinear.parameter(
        f"-s 2 -c {1.0 / (2 * gamma * len(y))!r} -B 1 -e 1e-8 -q"))
    w, b = model.get_decfun()
    sign = 1.0 if model.get_labels()[0] == 1 else -1.0
    theirs = objective(X, y, sign * np.asarray(w), sign * b, gamma)
    ours = L2SVM(gamma_A=gamma, client=client, unlabeled=0).fit(X, y)
    assert objective(X, y, ours.coef_[0], ours.intercept_[0], gamma) == pytest.approx(
        ours.objective_, rel=1e-10)
    assert ours.objective_ == pytest.approx(theirs, rel=1e-6)
    assert ours.objective_ <= theirs * (1 + 1e-9)
