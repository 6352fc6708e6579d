"""The choice rule shared by every estimator's selection (dask_ssl.models._selection)."""

import numpy as np
import pytest

from dask_ssl.models._selection import (MIN_PER_CLASS, SelectionWarning, choose, enough_labels,
                                        table, warn_unchecked)


def test_a_win_within_one_standard_error_keeps_the_supervised_candidate():
    # 40 rows: the supervised candidate errs on 3, the other on 2 of them and one more
    # (mean gain 1/40, its standard error about 0.044)
    wrong = np.zeros((2, 40))
    wrong[0, :3] = 1
    wrong[1, 1:4] = 1
    wrong[1, 0] = 0
    wrong[1, 2] = 0
    gain = wrong[0] - wrong[1]
    assert gain.mean() <= gain.std(ddof=1) / np.sqrt(40)
    assert choose(wrong) == 0
    # erring on 8 against 1 is beyond the noise
    wrong[0, :8] = 1
    assert choose(wrong) == 1


def test_the_fewest_errors_win_then_the_smaller_squared_residual_then_the_earlier():
    wrong = np.zeros((4, 30))
    wrong[0, :10] = 1          # supervised
    wrong[1, :2] = 1
    wrong[2, 10:12] = 1        # as few errors as 1, smaller residual
    wrong[3, 20:22] = 1        # as few, same residual as 2, later
    assert choose(wrong, [5.0, 3.0, 2.0, 2.0]) == 2
    # the supervised candidate wins ties against the rest
    assert choose(np.zeros((3, 30)), [1.0, 0.5, 0.1]) == 0
    # another index can be the supervised one
    assert choose(np.zeros((3, 30)), supervised=2) == 2


def test_enough_labels_counts_the_smallest_class():
    assert enough_labels([0] * MIN_PER_CLASS + [1] * MIN_PER_CLASS)
    assert not enough_labels([0] * 50 + [1] * (MIN_PER_CLASS - 1))
    assert not enough_labels([1] * 50)
    with pytest.warns(SelectionWarning, match="too few to check gamma_I"):
        warn_unchecked(object(), "gamma_I")


def test_table_marks_the_chosen_row_with_rates_and_standard_errors():
    wrong = np.array([[1, 1, 0, 0], [0, 0, 0, 1]])
    rows = table([{"rho": 0.0}, {"rho": 1.0}], wrong, [3.0, 1.0], 1)
    assert [r["chosen"] for r in rows] == [False, True]
    assert rows[0]["errors"] == 2 and rows[0]["error"] == 0.5
    assert rows[1]["stderr"] == pytest.approx(np.sqrt(0.25 * 0.75 / 3))
    assert rows[1]["rho"] == 1.0 and rows[1]["squared"] == 1.0
