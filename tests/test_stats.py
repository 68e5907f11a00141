"""The interval and difference code of the tables (albert_jax/ablations/stats.py), on hand-worked numbers."""
import math

import numpy as np
import pytest

from albert_jax.ablations import stats


def test_one_seed_scalar_is_a_point_and_prints_without_an_interval():
    e = stats.estimate([0.734])
    assert (e.value, e.low, e.high, e.seeds, e.examples, e.over) == (0.734, 0.734, 0.734, 1, 0, "seeds")
    assert e.text() == "73.4"


def test_median_over_seeds_of_per_example_means():
    # seed means 0.5, 0.75, 1.0 -> median 0.75
    e = stats.estimate([np.array([1, 0, 1, 0]), np.array([1, 1, 1, 0]), np.array([1, 1, 1, 1])])
    assert e.value == pytest.approx(0.75)
    assert e.examples == 4 and e.seeds == 3 and e.over == "seeds and examples"
    assert 0.0 <= e.low <= e.value <= e.high <= 1.0


def test_interval_width_matches_the_binomial_standard_error():
    # One seed, 2,000 examples with 1,200 correct: p = 0.6, SE = sqrt(0.6 * 0.4 / 2000) = 0.010954;
    # a 95% interval is about p +- 1.96 SE = [0.5785, 0.6215].
    scores = np.zeros(2000)
    scores[:1200] = 1
    e = stats.estimate([scores], draws=4000)
    se = math.sqrt(0.6 * 0.4 / 2000)
    assert e.value == pytest.approx(0.6)
    assert e.low == pytest.approx(0.6 - 1.96 * se, abs=0.004)
    assert e.high == pytest.approx(0.6 + 1.96 * se, abs=0.004)


def test_seed_only_interval_lies_within_the_seeds_range():
    e = stats.estimate([0.60, 0.70, 0.80])
    assert e.value == pytest.approx(0.70)
    assert e.low >= 0.60 and e.high <= 0.80 and e.over == "seeds"
    # the median of 3 draws from {0.6, 0.7, 0.8}: each extreme value has probability 7/27 = 0.26 > 2.5%
    assert (e.low, e.high) == (pytest.approx(0.60), pytest.approx(0.80))


def test_paired_difference_of_a_constant_shift_is_exact_and_resolved():
    rng = np.random.default_rng(0)
    ref = rng.integers(0, 2, 500).astype(float)
    row = ref.copy()
    flip = np.flatnonzero(ref == 0)[:50]  # 50 of 500 examples wrong for the reference, right for the row
    row[flip] = 1
    d = stats.difference([row], [ref])
    assert d.value == pytest.approx(0.1)
    # Paired by example, the difference on a draw is (flipped examples drawn) / 500: about 0.1 +- 1.96 *
    # sqrt(0.1 * 0.9 / 500) = [0.074, 0.126]; unpaired it would be about twice as wide.
    assert 0.065 < d.low < 0.085 and 0.115 < d.high < 0.135
    assert d.resolved


def test_identical_rows_differ_by_exactly_zero_and_are_not_resolved():
    ref = np.array([1, 0, 1, 1, 0, 1, 0, 0, 1, 1], float)
    d = stats.difference([ref, ref], [ref])
    assert (d.value, d.low, d.high) == (0.0, 0.0, 0.0)
    assert not d.resolved


def test_difference_inside_the_noise_is_not_resolved():
    # Two seeds each; the rows' seed scores overlap: 0.70/0.74 against 0.71/0.73.
    d = stats.difference([0.70, 0.74], [0.71, 0.73])
    assert d.value == pytest.approx(0.0)
    assert d.low < 0 < d.high and not d.resolved


def test_difference_needs_the_same_examples():
    with pytest.raises(ValueError, match="same examples"):
        stats.difference([np.ones(5)], [np.ones(6)])
    with pytest.raises(ValueError, match="same examples"):
        stats.estimate([np.ones(5), np.ones(6)])
    with pytest.raises(ValueError, match="no seeds"):
        stats.estimate([])


def test_text_shows_the_interval_in_points():
    e = stats.Estimate(0.612, 0.59, 0.633, 3, 2000, "seeds and examples")
    assert e.text() == "61.2 [59.0, 63.3]"
    assert stats.Estimate(0.02, 0.001, 0.04, 3, 100, "").resolved
    assert not stats.Estimate(0.02, -0.001, 0.04, 3, 100, "").resolved


def test_a_ratio_score_is_pooled_over_the_drawn_examples():
    # MLM accuracy: 3 of 4 masked tokens right in example 0, 1 of 6 in example 1 -> 4/10 = 0.4 (not the mean of
    # 0.75 and 0.167). With every example drawn the same way the interval holds 0.4.
    e = stats.estimate([(np.array([3.0, 1.0]), np.array([4.0, 6.0]))])
    assert e.value == pytest.approx(0.4)
    assert e.low <= 0.4 <= e.high
    d = stats.difference([(np.array([3.0, 1.0]), np.array([4.0, 6.0]))], [(np.array([2.0, 0.0]), np.array([4.0, 6.0]))])
    assert d.value == pytest.approx(0.2)
    # each example gains exactly one token: a draw of two examples gains 2 over 8 to 12 tokens, 0.17 to 0.25
    assert 2 / 12 - 1e-9 <= d.low and d.high <= 2 / 8 + 1e-9 and d.resolved


def test_unpaired_difference_draws_each_rows_own_examples():
    """Rows scored on different held-out examples (another tokenizer makes other pairs): 80/100 against 60/120.
    The difference is 0.3; its interval is the two-sample one, 0.3 +- 1.96 * sqrt(.8*.2/100 + .5*.5/120) = +-0.117."""
    a = [np.r_[np.ones(80), np.zeros(20)]]
    b = [np.r_[np.ones(60), np.zeros(60)]]
    with pytest.raises(ValueError, match="same examples"):
        stats.difference(a, b)  # pairing them by index would be meaningless
    d = stats.difference(a, b, paired=False)
    assert d.value == pytest.approx(0.3) and d.resolved and d.over == "seeds and examples"
    assert d.low == pytest.approx(0.3 - 0.117, abs=0.02) and d.high == pytest.approx(0.3 + 0.117, abs=0.02)


def test_one_seed_per_row_without_examples_resolves_nothing():
    """Seed scores alone, one seed a row: the 'interval' is the point 0.3, which excludes 0 and says nothing."""
    d = stats.difference([0.8], [0.5])
    assert d.low == d.high == pytest.approx(0.3)
    assert not d.resolved
    assert stats.difference([0.8, 0.81], [0.5, 0.52]).resolved  # two seeds a row: an interval, and it excludes 0


def test_task_mean_interval_matches_the_standard_error_of_a_mean_of_two_proportions():
    # One seed; task A: 2,000 examples, 1,200 right (0.6); task B: 2,000 examples, 1,600 right (0.8). The mean is
    # 0.7 with SE = 0.5 * sqrt(0.6*0.4/2000 + 0.8*0.2/2000) = 0.0070711, so a 95% interval of about +-0.01386.
    a, b = np.zeros(2000), np.zeros(2000)
    a[:1200], b[:1600] = 1, 1
    e = stats.task_mean([([a], None, True), ([b], None, True)], draws=4000)
    assert e.value == pytest.approx(0.7)
    assert (e.high - e.low) / 2 == pytest.approx(1.96 * 0.0070711, rel=0.15)
    assert e.over == "seeds and examples" and e.examples == 2000 and e.seeds == 1


def test_task_mean_draws_a_rows_seeds_once_for_all_its_tasks():
    # Seed 0 scores 0.6 on task A and 0.8 on task B, seed 1 the reverse: whichever seeds a draw takes, the mean of
    # the two tasks' medians is 0.7. Drawing the seeds apart per task would spread it (0.6 to 0.8).
    e = stats.task_mean([([0.6, 0.8], None, True), ([0.8, 0.6], None, True)])
    assert (e.value, e.low, e.high) == (pytest.approx(0.7), pytest.approx(0.7), pytest.approx(0.7))


def test_task_mean_of_paired_differences():
    # The row is right on exactly the reference's examples plus 100 more of 1,000 on task A (+0.1) and equal on
    # task B (0): the mean difference is +0.05, resolved; a paired draw of the equal task adds no noise.
    ref_a, ref_b = np.zeros(1000), np.zeros(1000)
    ref_a[:500], ref_b[:300] = 1, 1
    row_a = ref_a.copy()
    row_a[500:600] = 1
    e = stats.task_mean([([row_a], [ref_a], True), ([ref_b.copy()], [ref_b], True)])
    assert e.value == pytest.approx(0.05) and e.resolved
    same = stats.task_mean([([ref_b.copy()], [ref_b], True)])
    assert (same.value, same.low, same.high) == (0.0, 0.0, 0.0) and not same.resolved
    with pytest.raises(ValueError, match="no tasks"):
        stats.task_mean([])
