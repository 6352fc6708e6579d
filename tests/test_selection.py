"""The choice rule shared by every estimator's selection (dask_ssl.models._selection)."""

import numpy as np
import pytest
import scipy.stats

from dask_ssl.models._selection import (MIN_PER_CLASS, SelectionWarning, choose, enough_labels,
                                        fewer_errors_beyond_chance, level, noise_multiple,
                                        table, passed_tests, warn_unchecked)


def _gains(wins, losses, n=40):
    """Two candidates' squared residuals: the second smaller on ``wins`` rows by 0.5, larger on
    ``losses`` rows by 0.5, equal elsewhere; the first errs on two rows."""
    wrong = np.zeros((2, n))
    wrong[0, :2] = 1
    squared = np.ones((2, n))
    squared[1, :wins] = 0.5
    squared[1, wins:wins + losses] = 1.5
    return wrong, squared


def test_a_gain_within_one_standard_error_keeps_the_supervised_candidate():
    wrong, squared = _gains(4, 1)  # mean gain 0.0375, its standard error 0.029
    gain = squared[0] - squared[1]
    assert gain.mean() > gain.std(ddof=1) / np.sqrt(40)
    assert choose(wrong, squared) == 1
    wrong, squared = _gains(4, 3)  # mean gain 0.0125, its standard error 0.037
    gain = squared[0] - squared[1]
    assert 0 < gain.mean() <= gain.std(ddof=1) / np.sqrt(40)
    assert choose(wrong, squared) == 0


def test_the_best_of_many_candidates_must_win_by_more():
    """The gain that beats one standard error for a single alternative is not enough as the
    best of eleven (about 1.67 standard errors)."""
    wrong, squared = _gains(4, 1)
    many_wrong = np.vstack([wrong[:1]] * 11 + [wrong[1:]])
    many_squared = np.vstack([squared[:1]] * 11 + [squared[1:]])
    assert choose(many_wrong, many_squared) == 0
    assert noise_multiple(1) == pytest.approx(1.0)
    assert noise_multiple(11) == pytest.approx(
        scipy.stats.norm.isf(scipy.stats.norm.sf(1) / np.sqrt(11)))
    wrong, squared = _gains(9, 0)
    assert choose(np.vstack([wrong[:1]] * 11 + [wrong[1:]]),
                  np.vstack([squared[:1]] * 11 + [squared[1:]])) == 11


def test_fewer_errors_beyond_chance_pass_without_a_loss_gain():
    """A candidate whose held-out loss is larger on every row (less confident outputs) still
    replaces the supervised one when it errs on fewer rows beyond chance: the exact one-sided
    sign test on the rows where exactly one of them errs."""
    wrong = np.zeros((2, 40))
    wrong[0, :4] = 1  # 4 rows the supervised errs on, the candidate none: P = 1/16
    squared = np.ones((2, 40))
    squared[1] += 0.1
    assert fewer_errors_beyond_chance(wrong[0], wrong[1])
    assert choose(wrong, squared) == 1
    assert passed_tests(wrong, squared) == [None, ["errors"]]
    assert table([{"g": 0}, {"g": 1}], wrong, squared, 1)[1]["passed"] == ["errors"]
    wrong[0, 2:4] = 0  # 2 against 0: P = 1/4, above the level
    assert not fewer_errors_beyond_chance(wrong[0], wrong[1])
    assert choose(wrong, squared) == 0


def test_the_sign_test_counts_discordant_rows_at_the_shared_level():
    """5 rows won and 1 lost (both err on 3 more): P = 7/64, scipy's exact binomial test; below
    the level of one alternative, above that of eleven."""
    wrong = np.zeros((2, 60))
    wrong[:, :3] = 1
    wrong[0, 3:8] = 1
    wrong[1, 8] = 1
    p_value = scipy.stats.binomtest(5, 6, 0.5, alternative="greater").pvalue
    assert p_value == pytest.approx(7 / 64)
    assert level(1) < p_value * 2 and p_value <= level(1)
    assert level(11) < p_value
    assert fewer_errors_beyond_chance(wrong[0], wrong[1], 1)
    assert not fewer_errors_beyond_chance(wrong[0], wrong[1], 11)
    squared = np.ones((2, 60))
    assert choose(wrong, squared) == 1
    assert choose(np.vstack([wrong[:1]] * 11 + [wrong[1:]]),
                  np.vstack([squared[:1]] * 11 + [squared[1:]])) == 0
    # more errors than the supervised one never pass, however the discordant rows fall
    assert not fewer_errors_beyond_chance(wrong[1], wrong[0])


def test_the_fewest_errors_win_then_the_smaller_squared_residual_then_the_earlier():
    wrong = np.zeros((4, 30))
    wrong[0, :10] = 1          # supervised
    wrong[1, :2] = 1
    wrong[2, 10:12] = 1        # as few errors as 1, smaller residual
    wrong[3, 20:22] = 1        # as few, same residual as 2, later
    squared = np.ones((4, 30))
    squared[1] = 0.3
    squared[2:] = 0.2
    assert choose(wrong, squared) == 2
    # the supervised candidate wins ties against the rest
    assert choose(np.zeros((3, 30)), np.ones((3, 30))) == 0
    # another index can be the supervised one; a gain on every row is beyond any noise
    assert choose(np.zeros((3, 30)), np.ones((3, 30)), supervised=2) == 2
    squared = np.ones((3, 30))
    squared[2] = 1.01
    wrong = np.zeros((3, 30))
    wrong[:, 0] = 1
    assert choose(wrong, squared, supervised=2) == 2  # as many errors (one each): no gain
    wrong[:2, 0] = 0
    assert choose(wrong, squared, supervised=2) == 0


def test_where_the_supervised_model_errs_on_no_held_out_row_the_loss_decides():
    """Fewer errors than none cannot be had: a candidate that errs on none either and whose
    loss gain passes its test replaces the supervised one; one that errs, or whose gain is
    within the noise, does not."""
    rng = np.random.default_rng(0)
    wrong = np.zeros((3, 40))
    squared = np.ones((3, 40)) + 0.05 * rng.normal(size=(3, 40))
    squared[1] -= 0.5          # a gain far beyond its noise
    assert choose(wrong, squared) == 1
    assert table([{}, {}, {}], wrong, squared, 1)[1]["passed"] == ["loss"]
    wrong[1, 3] = 1            # the same gain, one error more than the supervised model
    assert choose(wrong, squared) == 0
    wrong[1, 3] = 0
    squared[1] = squared[0] - 0.001 + 0.05 * rng.normal(size=40)   # within the noise
    assert choose(wrong, squared) == 0


def test_enough_labels_counts_the_smallest_class():
    assert enough_labels([0] * MIN_PER_CLASS + [1] * MIN_PER_CLASS)
    assert not enough_labels([0] * 50 + [1] * (MIN_PER_CLASS - 1))
    assert not enough_labels([1] * 50)
    with pytest.warns(SelectionWarning, match="too few to check gamma_I"):
        warn_unchecked(object(), "gamma_I")


def test_table_marks_the_chosen_row_with_rates_and_standard_errors():
    wrong = np.array([[1, 1, 0, 0], [0, 0, 0, 1]])
    rows = table([{"rho": 0.0}, {"rho": 1.0}], wrong, [[1.0, 2.0, 0.0, 0.0], [1.0, 0, 0, 0]], 1)
    assert [r["chosen"] for r in rows] == [False, True]
    assert rows[0]["errors"] == 2 and rows[0]["error"] == 0.5
    assert rows[1]["stderr"] == pytest.approx(np.sqrt(0.25 * 0.75 / 3))
    assert rows[1]["rho"] == 1.0 and rows[1]["squared"] == 1.0
    # fewer errors, but by neither test beyond the noise: 2 discordant rows won of 3, a gain
    # of 0.5 against its standard error of 0.5
    assert rows[0]["passed"] is None and rows[1]["passed"] == []
    assert table([{"rho": 0.0}, {"rho": 1.0}], wrong, np.ones((2, 4)), 0,
                 supervised=1)[1]["passed"] is None


def test_the_fewest_errors_among_the_candidates_that_beat_the_noise():
    """A candidate with the fewest errors but neither gain beyond the noise (a larger residual
    everywhere: outputs shrunk towards 0; 6 rows won and 2 lost against the supervised one, P =
    37/256 above the level of two alternatives) does not keep out one whose loss gain is
    beyond the noise and whose errors are fewer than the supervised model's."""
    wrong = np.zeros((3, 40))
    wrong[0, :8] = 1                        # supervised
    wrong[1, :2] = wrong[1, 10:12] = 1      # fewest errors, larger residual everywhere
    wrong[2, :5] = 1
    assert level(2) < 37 / 256
    squared = np.ones((3, 40))
    squared[1] = 1.2
    squared[2] = 0.6
    assert choose(wrong, squared) == 2
