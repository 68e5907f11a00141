"""The interval and difference code of the tables (albert_jax/ablations/stats.py), on hand-worked numbers."""
import dataclasses
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


# ------------------------------------------------------------------------------------------ flat input unchanged
def _flat_inputs():
    rng = np.random.default_rng(123)
    a = [(rng.random(300) < p).astype(float) for p in (0.60, 0.64, 0.70)]
    b = [(rng.random(300) < p).astype(float) for p in (0.58, 0.61)]
    r = [(rng.integers(0, 4, 200).astype(float), np.full(200, 4.0)) for _ in range(2)]
    c = [(rng.random(250) < 0.5).astype(float) for _ in range(3)]
    return a, b, r, c


# (value, low, high, seeds, examples, over) from stats.py at 18b985a, before the nested draw: flat input must draw
# exactly as it did, so that tables already printed keep their numbers.
_BEFORE_NESTED = {
    "estimate_a": (0.6266666666666667, 0.5566666666666666, 0.7866666666666666, 3, 300, "seeds and examples"),
    "estimate_a_seed7": (0.6266666666666667, 0.5533333333333333, 0.7833333333333333, 3, 300, "seeds and examples"),
    "estimate_ratio": (0.37, 0.33248437500000005, 0.41, 2, 200, "seeds and examples"),
    "estimate_floats": (0.65, 0.61, 0.7, 4, 0, "seeds"),
    "diff_paired": (0.021666666666666723, -0.08666666666666667, 0.21666666666666667, 2, 300, "seeds and examples"),
    "diff_unpaired": (0.1146666666666667, 0.007333333333333303, 0.28266666666666673, 3, 250, "seeds and examples"),
    "diff_floats": (0.030000000000000027, -0.010000000000000009, 0.06000000000000005, 2, 0, "seeds"),
    "task_mean_est": (0.5693333333333334, 0.5203333333333333, 0.659, 3, 250, "seeds and examples"),
    "task_mean_diff": (0.04422222222222222, 0.003549999999999988, 0.1182444444444443, 2, 0, "seeds"),
}


def test_flat_input_gives_the_numbers_it_gave_before_the_nested_draw():
    a, b, r, c = _flat_inputs()
    now = {
        "estimate_a": stats.estimate(a),
        "estimate_a_seed7": stats.estimate(a, seed=7),
        "estimate_ratio": stats.estimate(r),
        "estimate_floats": stats.estimate([0.61, 0.66, 0.64, 0.70]),
        "diff_paired": stats.difference(a, b),
        "diff_unpaired": stats.difference(a, c, paired=False),
        "diff_floats": stats.difference([0.61, 0.66, 0.64], [0.60, 0.62]),
        "task_mean_est": stats.task_mean([(a, None, True), (c, None, True)]),
        "task_mean_diff": stats.task_mean([(a, b, True), (c, c[:2], True),
                                           ([0.6, 0.7, 0.65], [0.5, 0.55], True)]),
    }
    for key, e in now.items():
        value, low, high, seeds, examples, over = _BEFORE_NESTED[key]
        assert (e.value, e.low, e.high) == (pytest.approx(value, abs=1e-12), pytest.approx(low, abs=1e-12),
                                            pytest.approx(high, abs=1e-12)), key
        assert (e.seeds, e.examples, e.over) == (seeds, examples, over), key
        # flat: every sample its own pretraining seed
        assert e.pretraining == e.seeds, key


def test_the_kept_first_example_draw_gives_the_draws_of_a_new_generator(monkeypatch):
    # A table's cells on one held-out set share their first example draw (kept, with the generator's state after
    # it): every number must be the one drawn anew, whichever cell came first and whatever came between.
    a, b, _, c = _flat_inputs()
    nested = [[a[0], a[1]], [a[2]]]
    cells = [lambda: stats.estimate(a), lambda: stats.estimate(nested), lambda: stats.difference(nested, b),
             lambda: stats.difference(a, c, paired=False), lambda: stats.estimate(a, seed=7),
             lambda: stats.estimate(c), lambda: stats.difference(b, a)]
    with monkeypatch.context() as m:  # drawn anew: a new generator, its first draw, nothing kept
        def anew_draw(row, draws, seed):
            rng = np.random.default_rng(seed)
            return stats._examples_draw(row, draws, rng), rng

        m.setattr(stats, "_first_examples_draw", anew_draw)
        anew = [cell().samples for cell in cells]
    for order in (cells, cells[::-1]):
        stats._FIRST_DRAWS.clear()
        kept = [cell().samples for cell in order]
        assert all(np.array_equal(x, y) for x, y in zip(kept, anew if order is cells else anew[::-1]))
    assert stats._FIRST_DRAWS  # kept, so the comparison above compared kept draws with new ones


# ------------------------------------------------------------------------------------------ nested draw
def _binary(n: int, right: int) -> np.ndarray:
    x = np.zeros(n)
    x[:right] = 1
    return x


def test_one_pretraining_seed_with_identical_finetuning_seeds_is_example_noise_only():
    # Three fine-tuning seeds that answer alike: every draw's median is their common score on the drawn examples,
    # so the interval is the one seed's (the same example draw comes first from the same seed).
    x = _binary(2000, 1200)
    nested, one = stats.estimate([[x, x.copy(), x.copy()]]), stats.estimate([x])
    assert (nested.value, nested.low, nested.high) == (one.value, one.low, one.high)
    assert (nested.seeds, nested.pretraining) == (3, 1)
    assert nested.high - nested.low > 0.03  # example noise is in it: about 2 x 1.96 x 1.1 points


def test_constant_scores_per_pretraining_seed_span_exactly_the_pretraining_seeds_range():
    # Pretraining seed A's fine-tuning seeds all score 0.6, B's all 0.8: a draw is AA (median 0.6), AB or BA (0.7)
    # or BB (0.8), a quarter, a half, a quarter; the fine-tuning draw within a seed changes nothing.
    e = stats.estimate([[0.6, 0.6], [0.8, 0.8]], draws=4000)
    assert e.value == pytest.approx(0.7) and e.pretraining == 2 and e.seeds == 4
    assert (e.low, e.high) == (pytest.approx(0.6), pytest.approx(0.8))
    assert set(np.round(e.samples, 9)) == {0.6, 0.7, 0.8}
    assert np.mean(np.isclose(e.samples, 0.7)) == pytest.approx(0.5, abs=0.03)


def test_nested_draw_weighs_pretraining_seeds_alike_where_a_flat_draw_weighs_seeds():
    # A has one fine-tuning seed (0.6), B five (0.8). Nested: a draw's median is 0.6 only when both pretraining
    # draws are A (1 A score against 5 B scores otherwise): a quarter of draws. Flat, the six scores are six
    # seeds and the median is 0.6 only when 4 or more of 6 draws hit A's one score: P(Bin(6, 1/6) >= 4).
    nested = stats.estimate([[0.6], [0.8] * 5], draws=4000)
    flat = stats.estimate([0.6] + [0.8] * 5, draws=4000)
    flat_share = sum(math.comb(6, k) * (1 / 6) ** k * (5 / 6) ** (6 - k) for k in range(4, 7))
    assert np.mean(np.isclose(nested.samples, 0.6)) == pytest.approx(0.25, abs=0.025)
    assert np.mean(np.isclose(flat.samples, 0.6)) == pytest.approx(flat_share, abs=0.006)
    assert nested.low == pytest.approx(0.6)  # A alone is a likely world for the nested draw
    assert flat.low > 0.6 + 1e-9  # and an unlikely one for the flat draw


def test_finetuning_seeds_are_drawn_from_their_own_pretraining_seed():
    row = stats._parse([[0.1, 0.2], [0.5], [0.7, 0.8, 0.9]])
    rng = np.random.default_rng(0)
    pre = stats._pretraining_draw(row, 3000, rng)
    index, real = stats._seed_draw(row, pre, rng)
    index, real = index.reshape(3000, 3, 3), real.reshape(3000, 3, 3)
    start, count = row.offsets[pre][..., None], row.counts[pre][..., None]
    # every drawn pretraining seed brings exactly its own number of fine-tuning seeds, all from its own list
    assert (real.sum(axis=2) == row.counts[pre]).all()
    assert ((index >= start) & (index < start + count))[real].all()
    # each of the third seed's fine-tuning seeds about a third of the time
    third = index[real & (pre[..., None] == 2)]
    assert np.bincount(third - 3, minlength=3) / len(third) == pytest.approx([1 / 3] * 3, abs=0.02)
    # the padded median is the median of the real entries
    values = np.take_along_axis(np.broadcast_to(row.scores, (3000, 6)), index.reshape(3000, -1), axis=1)
    medians = stats._median(values, real.reshape(3000, -1))
    assert medians == pytest.approx([np.median(v[r]) for v, r in zip(values, real.reshape(3000, -1))])


def test_nested_differences_and_task_means():
    rng = np.random.default_rng(1)
    # Every seed of both rows answers alike: whichever seeds a draw takes, the paired difference is exactly 0.
    x = (rng.random(400) < 0.6).astype(float)
    d = stats.difference([[x, x], [x, x, x]], [[x], [x]])
    assert (d.value, d.low, d.high, d.pretraining, d.seeds) == (0.0, 0.0, 0.0, 2, 2) and not d.resolved
    ref = [[(rng.random(400) < 0.6).astype(float) for _ in range(k)] for k in (2, 3)]
    # Per-pretraining-seed constants: 0.7 or 0.9 against 0.5 always; the difference spans 0.2 to 0.4.
    d = stats.difference([[0.7, 0.7], [0.9, 0.9]], [[0.5], [0.5, 0.5, 0.5]])
    assert (d.value, d.low, d.high) == (pytest.approx(0.3), pytest.approx(0.2), pytest.approx(0.4))
    assert stats.difference(ref, [[x] for x in ref[1]], paired=False).over == "seeds and examples"
    # A row's pretraining seeds are drawn once for all its tasks, also nested: A scores 0.6 on task 1 and 0.8 on
    # task 2, B the reverse, so every draw's mean over tasks is 0.7.
    e = stats.task_mean([([[0.6, 0.6], [0.8, 0.8]], None, True), ([[0.8, 0.8], [0.6, 0.6]], None, True)])
    assert (e.value, e.low, e.high, e.pretraining) == (pytest.approx(0.7), pytest.approx(0.7), pytest.approx(0.7), 2)


def test_nest_groups_flat_task_samples_by_pretraining_seed():
    assert stats.nest(list("abcde"), (2, 0, 3)) == [["a", "b"], ["c", "d", "e"]]
    assert stats.nest(list("abc"), ()) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="samples for"):
        stats.nest(list("abc"), (1, 1))
    with pytest.raises(ValueError, match="no fine-tuning seeds"):
        stats.estimate([[0.5], []])
    with pytest.raises(ValueError, match="two levels"):
        stats.estimate([[[0.5, 0.6]]])


# ------------------------------------------------------------------------------------------ p-values, Holm
def _shifted_rows():
    ref = np.random.default_rng(0).integers(0, 2, 500).astype(float)
    row = ref.copy()
    row[np.flatnonzero(ref == 0)[:50]] = 1  # right on 50 more of 500: +0.1, in every draw
    return row, ref


def test_p_value_and_intervals_at_other_levels_come_from_the_same_draws():
    row, ref = _shifted_rows()
    d = stats.difference([row], [ref])
    assert d.p_value() == pytest.approx(2 / (stats.DRAWS + 1))  # no draw at or below 0: the floor, never 0
    assert d.interval(stats.LEVEL) == (d.low, d.high)
    lo90, hi90 = d.interval(0.90)
    assert d.low < lo90 < d.value < hi90 < d.high
    assert stats.difference([ref], [ref.copy()]).p_value() == 1.0  # every draw is exactly 0
    assert stats.difference([0.8], [0.5]).p_value() == 1.0  # a point resolves nothing
    # about half the draws of a centred difference fall on each side: p near 1
    assert stats.difference([0.70, 0.74, 0.72], [0.71, 0.73, 0.72]).p_value() > 0.5
    e = stats.estimate([row])
    assert e.shifted(-0.5).p_value() == e.p_value(0.5) and e.shifted(-0.5).value == pytest.approx(e.value - 0.5)
    # the draws are carried but neither compared nor shown
    assert e == dataclasses.replace(e, samples=None) and "samples" not in repr(e)
    with pytest.raises(ValueError, match="without its bootstrap samples"):
        stats.Estimate(0.1, 0.05, 0.15, 3, 100, "seeds and examples").p_value()


def test_holm_steps_down_and_stops_at_the_first_p_value_it_keeps():
    # m = 4, thresholds 0.05/4, 0.05/3, 0.05/2, 0.05/1 for the sorted p-values 0.005, 0.01, 0.03, 0.04:
    # 0.005 <= 0.0125 and 0.01 <= 0.0167 go, 0.03 > 0.025 stops, so 0.04 stays though 0.04 <= 0.05.
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == [True, False, False, True]
    # the smallest already fails its 0.0125: nothing is rejected, though 0.045 alone would be at 5%
    assert stats.holm([0.02, 0.03, 0.04, 0.045]) == [False] * 4
    # 0.001 <= 0.0125, 0.011 <= 0.0167, 0.02 <= 0.025, 0.5 > 0.05
    assert stats.holm([0.001, 0.02, 0.011, 0.5]) == [True, True, True, False]
    assert stats.holm([0.04]) == [True] and stats.holm([0.04], alpha=0.01) == [False] and stats.holm([]) == []


def test_holm_resolved_needs_enough_draws_for_its_family():
    row, ref = _shifted_rows()
    d = stats.difference([row], [ref])  # p = 2 / 2001, about 0.001, the floor of 2,000 draws
    same = stats.difference([ref], [ref.copy()])
    assert stats.holm_resolved([d, same]) == [True, False]
    assert all(stats.holm_resolved([d] * 40))  # 0.001 <= 0.05 / 40
    assert not any(stats.holm_resolved([d] * 60))  # 0.001 > 0.05 / 60: 2,000 draws cannot resolve 60 at once
    assert all(stats.holm_resolved([stats.difference([row], [ref], draws=10_000)] * 60))


# ------------------------------------------------------------------------------------------ equivalence
def _with_draws(samples: np.ndarray, seeds: int = 3) -> stats.Estimate:
    lo, hi = stats._interval(samples, stats.LEVEL)
    return stats.Estimate(float(np.median(samples)), lo, hi, seeds, 2000, "seeds and examples", seeds, samples)


def test_equivalence_each_outcome_and_which_wins():
    # Draws spread evenly over [a, b]: the 90% interval is a + (b - a) x [0.05, 0.95], the 95% one [0.025, 0.975].
    assert stats.equivalence(_with_draws(np.linspace(-0.01, 0.01, 2001)), 0.03) == "equivalent"
    assert stats.equivalence(_with_draws(np.linspace(0.05, 0.10, 2001)), 0.03) == "different"
    # 90%: [-0.017, 0.037] leaves the margin; 95%: [-0.0185, 0.0385] holds 0
    assert stats.equivalence(_with_draws(np.linspace(-0.02, 0.04, 2001)), 0.03) == "inconclusive"
    # resolved (95%: [0.00525, 0.01475] excludes 0) and inside the margin: equivalent wins...
    small = _with_draws(np.linspace(0.005, 0.015, 2001))
    assert small.resolved and stats.equivalence(small, 0.03) == "equivalent"
    # ...unless the margin is below it (90% reaches 0.0145)
    assert stats.equivalence(small, 0.012) == "different"
    assert stats.equivalence(_with_draws(np.linspace(0.005, 0.015, 2001)).shifted(0.5), 0.03, center=0.5) == \
        "equivalent"
    assert stats.equivalence(stats.estimate([0.51]), 0.03, center=0.5) == "inconclusive"  # one number: a point
    with pytest.raises(ValueError, match="positive"):
        stats.equivalence(small, 0.0)


def test_at_chance_is_shown_within_the_margin_not_by_an_interval_holding_chance():
    margin = stats.balanced_margin(2106)
    at_chance = stats.estimate([_binary(2106, 1063)])  # 50.5% on the held-out SOP pairs' count
    assert stats.equivalence(at_chance, margin, center=0.5) == "equivalent"
    # 52 of 100: the interval holds 50% (the old reading: reproduced), yet it cannot tell 50 from 60
    few = stats.estimate([_binary(100, 52)])
    assert few.low <= 0.5 <= few.high and stats.equivalence(few, margin, center=0.5) == "inconclusive"
    assert stats.equivalence(stats.estimate([_binary(2000, 1200)]), margin, center=0.5) == "different"


def test_balanced_margin_is_three_points_unless_the_set_cannot_resolve_them():
    se = math.sqrt(0.25 / 2106)
    assert 2 * se < 0.03 and stats.balanced_margin(2106) == pytest.approx(0.03)
    assert stats.balanced_margin(400) == pytest.approx(2 * math.sqrt(0.25 / 400))  # 5 points: 2 SE above 3
    assert stats.balanced_margin(2106, points=1.0) == pytest.approx(2 * se)
    with pytest.raises(ValueError):
        stats.balanced_margin(0)


# ------------------------------------------------------------------------------------------ coverage
def test_coverage_falls_short_with_few_pretraining_seeds():
    # Seed SD 3 points on 1,000 examples at 50%: one seed's interval holds example noise alone (SE 1.6 points of
    # a total 3.4), so it covers about P(|Z| < 1.96 x 1.6 / 3.4) = 64%; more seeds bring the seed noise in.
    one, two, three = (stats.coverage(n, 1, 0.03, 0.0, 1000, 0.5, sims=200) for n in (1, 2, 3))
    assert one < 0.8 and one < two < three and three > 0.85


def test_coverage_is_nominal_without_seed_noise_and_exact_over_seeds_alone():
    # No seed spread: the interval is a binomial one, near 95% (Monte Carlo SE 1.3 points at 300 simulations).
    assert stats.coverage(1, 1, 0.0, 0.0, 1000, 0.5) == pytest.approx(0.95, abs=0.04)
    # Seed scores alone, three seeds: the bootstrap median of 3 spans min to max (each has probability 7/27 of
    # being a draw's median), which holds the true median unless all 3 fall on one side: 1 - 2 / 8 = 0.75.
    assert stats.coverage(3, 1, 0.03, 0.0, 0, 0.5, sims=2000) == pytest.approx(0.75, abs=0.03)
    assert stats.coverage(1, 1, 0.03, 0.0, 0, 0.5, sims=50) == 0.0  # a point covers nothing
    with pytest.raises(ValueError):
        stats.coverage(2, [1, 0], 0.03, 0.0, 0, 0.5)


def test_blocks_of_examples_cover_as_single_examples_do():
    # 1,000 examples in 250 blocks of 4 (the default) against one unit per example, at a seed SD where coverage is
    # well below 95% (2 seeds, about 85%): the same within their Monte Carlo error (SE about 2 points each, 300
    # simulations). A block read as one example (its correct count as a 0/1 score, or its size lost) would put the
    # example noise 4 times too high or too low and move coverage by 10 points or more.
    assert stats._blocks(1000, 250).tolist() == [4] * 250 and stats._blocks(1001, 250).sum() == 1001
    assert stats._blocks(100, 250).tolist() == [1] * 100 and stats._blocks(1000, None).tolist() == [1] * 1000
    exact = stats.coverage(2, 1, 0.03, 0.0, 1000, 0.5, units=None)
    blocked = stats.coverage(2, 1, 0.03, 0.0, 1000, 0.5)
    assert 0.75 < exact < 0.93 and blocked == pytest.approx(exact, abs=0.07)


def test_spreads_of_a_nested_row():
    # Means 0.61 and 0.72: SD 0.11 / sqrt(2). Within: squared deviations 2 x 0.01^2 (1 dof) and 2 x 0.02^2 (2 dof).
    sd_pre, sd_ft = stats.spreads([[0.60, 0.62], [0.70, 0.72, 0.74]])
    assert sd_pre == pytest.approx(0.11 / math.sqrt(2)) and sd_ft == pytest.approx(math.sqrt(0.001 / 3))
    assert stats.spreads([0.6, 0.7, 0.8])[1] == 0.0  # flat: no fine-tuning level
    assert stats.spreads([[0.6, 0.7]])[0] == 0.0  # one pretraining seed


def test_row_coverage_simulates_at_the_rows_counts_and_spreads():
    row = [[0.60, 0.62], [0.70, 0.72, 0.74], [0.64]]
    sd_pre, sd_ft = stats.spreads(row)
    assert stats.row_coverage(row, sims=100) == stats.coverage(3, [2, 3, 1], sd_pre, sd_ft, 0, 0.64, sims=100)
    x = _binary(500, 300)
    assert stats.row_coverage([x]) is None  # one pretraining seed shows no pretraining spread
    assert stats.row_coverage([x], sd_pretraining=0.03, sims=100) == stats.coverage(1, 1, 0.03, 0.0, 500, 0.6,
                                                                                      sims=100)
