"""The paper's readings as verdicts no stronger than their numbers (albert_jax/ablations/readings.py, issue 48):
direction kept apart from size, "at chance" by equivalence, a bound for a sized claim, Holm over a table's family,
the seed counts and coverage beside each verdict."""
import numpy as np
import pytest

from albert_jax.ablations import readings
from albert_jax.ablations import stats
from albert_jax.ablations.readings import Check


def _draws(mean, sd, n=2000, seed=0):
    """An Estimate with bootstrap draws ~ N(mean, sd): its interval and p-values are those of the draws."""
    s = np.random.default_rng(seed).normal(mean, sd, n)
    lo, hi = np.percentile(s, [2.5, 97.5])
    return stats.Estimate(mean, float(lo), float(hi), 9, 2000, "seeds and examples", 3, s)


def _seeds(p, n=2000, seeds=3, seed=0):
    """Per-example correctness of `seeds` models at accuracy p on n examples."""
    rng = np.random.default_rng(seed)
    return [(rng.random(n) < p).astype(np.float64) for _ in range(seeds)]


@pytest.mark.parametrize("mean,expect,size,verdict", [
    (0.05, "higher", None, "reproduced in direction"),
    (0.05, "lower", None, "contradicted"),
    (0.005, "higher", None, "not resolved"),
    (0.05, "higher", 0.345, "reproduced in direction, not in size"),  # Table 5's SOP gap: 34.5 points
    (0.05, "higher", 0.04, "reproduced in direction and in size"),
])
def test_direction_and_size_are_separate_verdicts(mean, expect, size, verdict):
    c = Check("s", "eval/sop_accuracy", "SOP", "NSP", expect, size=size)
    d = _draws(mean, 0.01)
    assert c.tested({}, {("SOP", "NSP", "eval/sop_accuracy"): d}) is d
    assert c.judge(d)[0] == verdict
    assert c.tested({}, {}) is None  # a row not run: nothing to judge


def test_at_chance_is_an_equivalence_test_with_three_outcomes():
    """Within the margin (3 points on 2,000 balanced pairs): reproduced; away from chance: contradicted; an
    interval that holds 50% but also reaches past the margin (200 pairs) is neither."""
    c = Check("s", "eval/sop_accuracy", "NSP", "chance", "chance")

    def judged(p, n, seeds=3):
        e = stats.estimate(_seeds(p, n, seeds))
        return c.judge(c.tested({"NSP": {"eval/sop_accuracy": e}}, {}))[0]

    assert judged(0.50, 2000).startswith("reproduced: at chance within ±3.0")
    assert judged(0.58, 2000).startswith("contradicted")
    inconclusive = judged(0.51, 200)
    assert inconclusive.startswith("not resolved") and "±7.1" in inconclusive  # 2 SE of 200 pairs: the margin


def test_a_sized_claim_is_judged_against_its_size_relative_as_the_source_means_it():
    """"E=128 costs under 1%": E128 − E768 at least -1% of E768's level. The same -0.5-point difference passes
    on a level of 80 (-0.6%) only if its interval stays above -1% of it."""
    c = Check("cost", "ft:t", "E=128", "E=768", "at least", size=-0.01, relative=True)
    level = {"E=768": {"ft:t": stats.Estimate(0.8, 0.79, 0.81, 3, 0, "seeds")}}
    tight = c.tested(level, {("E=128", "E=768", "ft:t"): _draws(-0.001, 0.001)})
    assert tight.value == pytest.approx(-0.00125) and c.judge(tight)[0] == "reproduced"
    wide = c.tested(level, {("E=128", "E=768", "ft:t"): _draws(-0.005, 0.01)})
    assert c.judge(wide)[0] == "not resolved"  # its interval reaches past -1% of 80
    worse = c.tested(level, {("E=128", "E=768", "ft:t"): _draws(-0.03, 0.005)})
    assert c.judge(worse)[0] == "contradicted"
    assert "%" in c.words(worse) and "bound -1.0%" in c.words(worse)
    with pytest.raises(ValueError, match="at least"):
        Check("x", "ft:t", "a", "b", "at least")


def test_holm_keeps_a_family_s_verdicts_only_where_the_step_down_rejects():
    """Two readings each resolved alone (p about 0.04 and 0.0001): over a family of two, Holm keeps both (0.0001 <=
    0.025, then 0.04 <= 0.05); with a third, null reading in the family, the weak one's threshold is 0.025: not
    kept, and its unadjusted verdict is what the table prints beside."""
    weak, strong, null = _draws(0.02, 0.01, seed=1), _draws(0.05, 0.0125, seed=2), _draws(0.0, 0.01, seed=3)
    checks = [Check(f"c{i}", "eval/sop_accuracy", "a", "b", "higher") for i in range(3)]

    def family(ds):
        out = []
        for c, d in zip(checks, ds):
            raw, p = c.judge(d)
            out.append(readings.Reading(c, "", raw=raw, p=p))
        readings.judge_family(out, dict(enumerate(ds)))
        return [r.verdict for r in out]

    assert weak.resolved and 0.03 < weak.p_value() < 0.05
    assert family([weak, strong]) == ["reproduced in direction"] * 2
    assert family([weak, strong, null]) == ["not resolved after Holm", "reproduced in direction", "not resolved"]


def test_each_verdict_names_its_seed_counts_and_coverage():
    c = Check("SOP beats NSP", "ft:t", "SOP", "NSP", "higher")
    d = _draws(0.05, 0.01)
    r = readings.Reading(c, "reproduced in direction", c.words(d), raw="reproduced in direction",
                         seeds=readings.seed_words(d, True), coverage=0.62)
    text = readings.line(r)
    assert "3 pretraining × 3 fine-tuning seeds" in text and "under-covered" in text and "62%" in text
    assert "coverage 93%" in readings.line(readings.Reading(c, "not resolved", raw="not resolved", coverage=0.93))
    assert "coverage not known" in readings.line(readings.Reading(c, "not resolved", raw="not resolved"))
    assert readings.seed_words(d, False) == "3 pretraining seeds"


def test_a_bound_that_rounds_to_zero_still_shows_its_sign():
    assert readings.points(-0.0002) == "-0.02" and readings.points(0.0004) == "+0.04"
    assert readings.points(0.0) == "+0.0" and readings.points(0.034) == "+3.4"


def test_a_table_says_what_more_seeds_would_buy_at_its_spreads():
    """Two rows with 3 pretraining seeds 4 points apart: the line gives 1 / 2 / 3 seeds' coverage, rising; with one
    seed per row there is no spread to simulate at, and it says so."""
    from albert_jax.ablations import registry
    from albert_jax.ablations import table

    exp = registry.Experiment("x", "x", "x", columns=(), rows=lambda s: [],
                              checks=(Check("a beats b", "eval/sop_accuracy", "a", "b", "higher"),))

    def row(name, levels):
        samples = [_seeds(p, 1000, 1, seed=i)[0] for i, p in enumerate(levels)]
        return {"row": name, "samples": {"eval/sop_accuracy": samples}, "est": {}}

    rows = [row("a", [0.56, 0.60, 0.64]), row("b", [0.50, 0.54, 0.58])]
    line = table.coverage_line(exp, rows)
    cover = [int(x) for x in line.split(": ")[-1].rstrip("%.").split("% / ")]
    assert len(cover) == 3 and cover[0] < 90 and cover[0] < cover[2], line
    seen = np.median([stats.spreads(r["samples"]["eval/sop_accuracy"])[0] for r in rows])
    assert f"seed SD {100 * seen:.1f} points between pretraining seeds" in line, line  # simulated at what is seen
    assert "not known" in table.coverage_line(exp, [row("a", [0.6]), row("b", [0.5])])


def test_a_row_whose_seeds_all_score_the_same_lends_no_spread():
    """Table 5's None row predicts one class on the balanced SOP set: 50.0% with each of its two seeds. Its zero
    spread would make a one-seed row's interval look 95% covered; it lends none, so that coverage is not known, and
    the what-more-seeds line leaves the column out. A row whose seeds differ does lend its spread."""
    from albert_jax.ablations import registry
    from albert_jax.ablations import table

    exp = registry.Experiment("x", "x", "x", columns=(), rows=lambda s: [],
                              checks=(Check("a beats b", "eval/sop_accuracy", "a", "b", "higher"),))
    constant = np.r_[np.ones(500), np.zeros(500)]  # one class on a balanced set: exactly 50%

    def row(name, samples):
        return {"row": name, "samples": {"eval/sop_accuracy": samples}, "est": {}}

    records = [row("none", [constant, constant.copy()]), row("a", [_seeds(0.6, 1000, 1, seed=0)[0]])]
    assert table.row_coverage(records, records[1], "eval/sop_accuracy") is None
    assert "not known" in table.coverage_line(exp, records)
    varied = row("b", [_seeds(p, 1000, 1, seed=i)[0] for i, p in enumerate((0.52, 0.58))])
    records = [records[0], row("a", [_seeds(0.6, 1000, 1, seed=0)[0]]), varied]
    assert table.row_coverage(records, records[1], "eval/sop_accuracy") is not None
