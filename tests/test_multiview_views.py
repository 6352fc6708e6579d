"""The multi-view input contract: bad views are refused before any work, naming the view."""

import numpy as np
import pytest
import scipy.sparse as sp

from dask_ssl.multiview import check_views, views_at_predict


def test_named_views_keep_their_names_and_sparse_views_stay_sparse():
    views = check_views({"page": sp.random(4, 6, density=0.5, format="csr", random_state=0),
                         "link": np.ones((4, 2))})
    assert views.names == ("page", "link")
    assert views.n_features == (6, 2) and views.n_rows == 4
    assert sp.issparse(views.arrays[0]) and views.arrays[1].dtype == np.float64


@pytest.mark.parametrize("Xs, match", [
    ([np.ones((3, 2)), np.ones((4, 2))], "view 0 has 3 rows but view 1 has 4"),
    ({"a": np.ones((3, 2)), "b": np.full((3, 2), np.nan)}, "view 'b': .*NaN"),
    ([np.ones((3, 2))], "1 view"),
    (np.ones((3, 2)), "list of per-view arrays"),
])
def test_bad_views_name_the_problem(Xs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        check_views(Xs)


@pytest.mark.parametrize("Xs, match", [
    ({"a": np.ones((1, 2))}, r"missing \['b'\]"),
    ({"a": np.ones((1, 2)), "b": np.ones((1, 3)), "c": np.ones((1, 1))}, r"extra \['c'\]"),
    ([np.ones((1, 2)), np.ones((1, 3))], "pass a dict"),
    ({"b": np.ones((1, 3)), "a": np.ones((1, 3))}, "view 'a' has 3 features"),
])
def test_views_at_predict_are_matched_by_name(Xs, match):
    with pytest.raises(ValueError, match=match):
        views_at_predict(Xs, ("a", "b"), (2, 3))


def test_named_views_in_another_order_are_put_back_in_the_fitted_order():
    views = views_at_predict({"b": np.zeros((2, 3)), "a": np.ones((2, 2))}, ("a", "b"), (2, 3))
    assert views.names == ("a", "b") and views.n_features == (2, 3)
