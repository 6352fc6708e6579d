"""Base kernels: names and parameters checked before work, results equal scikit-learn's, NaN refused."""

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

from dask_ssl.kernels import check_kernel, kernel_matrix


def test_named_kernel_equals_sklearn():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(7, 3)), rng.normal(size=(4, 3))
    np.testing.assert_allclose(kernel_matrix(X, Y, kernel="rbf", kernel_params={"gamma": 0.3}),
                               rbf_kernel(X, Y, gamma=0.3))
    np.testing.assert_allclose(kernel_matrix(X, kernel="linear"), X @ X.T)


def test_callable_gets_whole_row_sets():
    calls = []

    def k(A, B, scale=1.0):
        calls.append((A.shape, B.shape))
        return scale * (A @ B.T)

    X = np.arange(12.0).reshape(4, 3)
    np.testing.assert_allclose(kernel_matrix(X, kernel=k, kernel_params={"scale": 2.0}), 2 * X @ X.T)
    assert calls == [((4, 3), (4, 3))]


@pytest.mark.parametrize("kernel, params, match", [
    ("gaussian", None, "unknown kernel 'gaussian'"),
    ("precomputed", None, "unknown kernel 'precomputed'"),
    ("rbf", {"degree": 3}, r"takes no parameter\(s\) \['degree'\]"),
    ("rbf", [("gamma", 1)], "kernel_params must be a dict"),
])
def test_bad_kernel_is_named(kernel, params, match):
    with pytest.raises(ValueError, match=match):
        check_kernel(kernel, params)


def test_kernel_returning_nan_is_refused():
    def bad(A, B):
        K = A @ B.T
        K[1, 2] = np.nan
        return K

    with pytest.raises(ValueError, match=r"non-finite value \(nan\) for rows 1 and 2"):
        kernel_matrix(np.ones((3, 2)), kernel=bad)
    with pytest.raises(ValueError, match="returned shape"):
        kernel_matrix(np.ones((3, 2)), kernel=lambda A, B: np.ones((2, 2)))
