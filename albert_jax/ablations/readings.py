"""The paper's readings put to a table (issue 48): each experiment declares its family of checks, and each check
gets a verdict no stronger than its numbers.

- A direction ("higher", "lower"): "reproduced in direction" when the 95% interval of the difference excludes 0
  on the paper's side, "contradicted" on the other side, else "not resolved". Where the paper gives the effect's
  size (`size`), the verdict adds "and in size" when the interval holds it, "not in size" when it excludes it.
- "At chance" ("chance"): an equivalence test, two one-sided tests against a margin (stats.equivalence,
  stats.balanced_margin: 3 points, or 2 standard errors of the held-out set where those are more): "reproduced"
  when equivalent, "contradicted" when different from chance, "not resolved" when neither (an interval that
  merely holds 50% no longer counts as confirming it).
- A claim with a bound ("at least": e.g. "E=128 costs under 1%" is E128 - E768 at least -1% relative): reproduced
  when the interval lies above the bound, contradicted when below it, else not resolved. `relative`: the size is a
  share of the compared row's level (a "5%" claim on 34.6 is 1.7 points), as the source means it.

Multiplicity: the checks of one table are one family. Each gets the p-value of the test behind its verdict (the
two-sided bootstrap p for a direction, the larger one-sided p of the two equivalence tests, the one-sided p against
a bound), and Holm's step-down over the family at 5% decides which verdicts stand; one that does not is printed as
"not resolved after Holm" with its unadjusted verdict beside. The other differences a table prints (every Δ cell,
every "− random init" line) are exploratory: marked by their own interval, not adjusted, and the table says so.

Coverage: beside each verdict, how often intervals like the ones behind it cover the truth at their rows' seed
counts and observed spreads (stats.row_coverage); under 90% it is marked "under-covered".
"""
from __future__ import annotations

import dataclasses


from albert_jax.ablations import stats
from albert_jax.ablations.evidence import CHANCE
HOLM_ALPHA = 0.05
COVERED = 0.90  # below this simulated coverage a verdict's interval is marked under-covered (issue 48)
DIRECTION = ("higher", "lower")
EXPECTS = (*DIRECTION, "chance", "at least")


@dataclasses.dataclass(frozen=True)
class Check:
    """One statement of the paper's reading, put to the table: `row`'s `column` is higher than, lower than, at
    the level of, or at least `size` above `against` (another row, or "chance")."""
    statement: str
    column: str  # an intrinsic key (eval/sop_accuracy) or ft:<task>
    row: str
    against: str  # a row name, or "chance" (0.5: the balanced SOP/NSP sets)
    expect: str  # "higher" | "lower" | "chance" | "at least"
    size: float | None = None  # the effect as the paper states it (0.345: 34.5 points); "at least": the bound
    relative: bool = False  # size is a share of `against`'s level, not points

    def __post_init__(self):
        if self.expect not in EXPECTS:
            raise ValueError(f"check {self.statement!r}: expect must be one of {', '.join(EXPECTS)}")
        if self.expect == "at least" and self.size is None:
            raise ValueError(f"check {self.statement!r}: 'at least' needs its bound as size")

    def tested(self, est: dict, diff: dict) -> stats.Estimate | None:
        """The estimate the reading is about: row − against (over against's level where relative), or row −
        chance."""
        if self.against == "chance":
            e = est.get(self.row, {}).get(self.column)
            return None if e is None else e.shifted(-CHANCE)
        d = diff.get((self.row, self.against, self.column))
        if d is None or not self.relative:
            return d
        level = est.get(self.against, {}).get(self.column)
        return None if level is None or level.value <= 0 else d.scaled(1 / level.value)

    def judge(self, d: stats.Estimate) -> tuple[str, float]:
        """(verdict before the family's adjustment, the p-value of the test behind it)."""
        if self.expect == "chance":
            margin = stats.balanced_margin(d.examples) if d.examples else stats.balanced_margin(1_000_000)
            outcome = stats.equivalence(d, margin)
            if outcome == stats.EQUIVALENT:
                return f"reproduced: at chance within ±{100 * margin:.1f}", _equivalence_p(d, margin)
            if outcome == stats.DIFFERENT:
                return f"contradicted: away from chance (margin ±{100 * margin:.1f})", d.p_value()
            return f"not resolved: neither within ±{100 * margin:.1f} of chance nor away from it", 1.0
        if self.expect == "at least":
            if d.low > self.size:
                return "reproduced", d.one_sided_p(self.size, above=True)
            if d.high < self.size:
                return "contradicted", d.one_sided_p(self.size, above=False)
            return "not resolved", 1.0
        if not d.resolved:
            return "not resolved", d.p_value()
        if (d.value > 0) != (self.expect == "higher"):
            return "contradicted", d.p_value()
        verdict = "reproduced in direction"
        if self.size is not None:
            verdict += " and in size" if d.low <= self.size <= d.high else ", not in size"
        return verdict, d.p_value()

    def words(self, d: stats.Estimate) -> str:
        unit = "%" if self.relative else ""
        what = f"{self.row}: {d.shifted(CHANCE).text()} against chance 50.0" if self.against == "chance" else \
            f"{self.row} − {self.against}{' relative' if self.relative else ''}: {signed(d)}{unit}"
        if self.size is not None:
            sign = "" if self.expect == "at least" else "the paper's "
            what += f"; {sign}{'bound' if self.expect == 'at least' else 'size'} {100 * self.size:+.1f}{unit}"
        return what


def points(x: float) -> str:
    """A signed value in points to one decimal; one that rounds to 0 but is not 0 gets the digits that show its
    sign, so a resolved interval never prints a bound of "-0.0" or "+0.0" (issue 48)."""
    text = f"{100 * x:+.1f}"
    return f"{100 * x:+.2g}" if x and float(text) == 0 else text


def signed(d: stats.Estimate) -> str:
    return f"{points(d.value)} [{points(d.low)}, {points(d.high)}]"


def _equivalence_p(d: stats.Estimate, margin: float) -> float:
    """Two one-sided tests: the larger of their p-values (below -margin, above +margin)."""
    return max(d.one_sided_p(-margin, above=True), d.one_sided_p(margin, above=False))


@dataclasses.dataclass
class Reading:
    check: Check
    verdict: str  # after Holm; "not run" where a row is missing
    words: str = ""
    raw: str = ""  # the verdict before the family's adjustment
    p: float = 1.0
    coverage: float | None = None  # the lower simulated coverage of the two rows' intervals (None: not known)
    seeds: str = ""  # the seed counts behind it, in words
    in_family: bool = False  # tested, so one of the family Holm adjusts over (not: not run, a row that did not learn)


def judge_family(readings: list[Reading], tested: dict[int, stats.Estimate]) -> None:
    """Holm over the family's p-values: a resolved verdict (reproduced or contradicted) whose hypothesis Holm
    does not reject becomes "not resolved after Holm"."""
    idx = [i for i in tested if readings[i].raw]
    for i in idx:
        readings[i].in_family = True
    keep = stats.holm([readings[i].p for i in idx], HOLM_ALPHA)
    for i, kept in zip(idx, keep):
        r = readings[i]
        resolved = not r.raw.startswith("not resolved")
        r.verdict = r.raw if kept or not resolved else "not resolved after Holm"


def seed_words(d: stats.Estimate, finetuning: bool) -> str:
    """"3 pretraining × 3 fine-tuning seeds" (per row; for a difference, the smaller row's)."""
    pre = d.pretraining or d.seeds
    if not finetuning:
        return f"{pre} pretraining seed{'s' if pre != 1 else ''}"
    per = d.seeds / pre if pre else 0
    ft = f"{per:.0f}" if per == int(per) else f"{per:.1f} on average"
    return f"{pre} pretraining × {ft} fine-tuning seed{'s' if per != 1 else ''}"


def line(r: Reading) -> str:
    """One verdict as the table prints it."""
    if r.verdict == "not run":
        return f"- {r.check.statement}: **not run**"
    notes = [r.words] if r.words else []
    if r.verdict != r.raw and r.raw:
        notes.append(f"unadjusted: {r.raw}")
    if r.seeds:
        notes.append(r.seeds)
    if r.coverage is None:
        notes.append("coverage not known (one pretraining seed)")
    elif r.coverage < COVERED:
        notes.append(f"under-covered: its intervals cover {100 * r.coverage:.0f}% in simulation")
    else:
        notes.append(f"coverage {100 * r.coverage:.0f}%")
    return f"- {r.check.statement}: **{r.verdict}** ({'; '.join(notes)})"
