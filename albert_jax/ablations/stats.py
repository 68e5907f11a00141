"""Medians with 95% intervals, and paired differences, over seeds and held-out examples (issues 24 and 48).

A table cell is the median over a row's seed scores, a seed score being the mean of per-example scores (accuracy:
1 for a correct example, 0 for a wrong one) of one fine-tuned (or, for intrinsic metrics, one pretrained) model.

A row's samples are nested: a list over pretraining seeds, each a list over that pretraining seed's fine-tuning
seeds, each sample an array of per-example scores, a Ratio `(num, den)` of arrays, or one float. The flat form, a
list of samples, means one fine-tuning seed per pretraining seed (intrinsic metrics: one sample per pretraining
seed). Per-example scores must be numpy arrays (or Ratios of them): a Python list always means a group of seeds.

One bootstrap draw of a row, exactly:
  1. the held-out examples: as many example indices as the set holds, drawn with replacement (one draw shared by
     every seed of the row, and, for a paired difference, by the other row too);
  2. its pretraining seeds: as many as it has, drawn with replacement;
  3. within each drawn pretraining seed, its own fine-tuning seeds: as many as that seed has, with replacement
     (a pretraining seed drawn twice has its fine-tuning seeds drawn twice, independently);
and the draw's statistic is the median of the drawn (pretraining, fine-tuning) seeds' scores on the drawn
examples: the statistic the table prints, over a draw whose seed count varies when the fine-tuning counts do.
The 2.5th and 97.5th percentiles of the draws' statistics bound the interval; the point value is the median of all
observed seed scores. So three sources of noise are in it: which pretraining seeds were run, which fine-tuning
seeds under each, and which examples the held-out set happened to hold. Drawing the two seed levels apart matters:
pooled into one flat list, 3 x 3 seeds look like 9 independent ones, and a pretraining seed with five fine-tuning
seeds outweighs one with one five to one, where the nested draw weighs them alike.

A difference between two rows is paired by example: both rows were scored on the same held-out examples (the
intrinsic sets and every dev set are fixed, in a fixed order), so one draw of example indices serves both, and an
example that is hard for both rows cancels out. Seeds are drawn independently per row (seed s of one row has
nothing to do with seed s of another). A difference is "resolved" when its interval excludes 0.

Where only per-seed scores exist (no per-example file), the bootstrap is over seeds alone, and says so: with one
seed that interval is a point, which is why such a cell shows no interval rather than a false one.

What an interval may be made to say (issue 48), below the bootstrap: a p-value per estimate and Holm's adjustment
over a family of them (`holm`, `holm_resolved`); "at the level of" as an equivalence test within a margin
(`equivalence`, `balanced_margin`) rather than as an interval that fails to exclude it; and how often intervals like
these cover the truth at a table's seed counts (`coverage`, `spreads`, `row_coverage`), since with few seeds they
cover far less than 95%.

numpy alone: the percentile bootstrap is a few lines, and scipy.stats.bootstrap resamples one level only.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

DRAWS = 2000
LEVEL = 0.95


@dataclasses.dataclass(frozen=True)
class Estimate:
    value: float  # the median over seeds of each seed's mean score
    low: float
    high: float
    seeds: int  # seed scores (pretraining x fine-tuning); for a difference, the smaller row's
    examples: int  # per seed; 0 when only per-seed scores were available
    over: str  # "seeds and examples" | "seeds"
    pretraining: int = 0  # pretraining seeds (the smaller row's); 0 where not known (built by hand)
    # The bootstrap draws' statistics, for intervals at other levels and p-values; None when built by hand.
    samples: np.ndarray | None = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def resolved(self) -> bool:
        """For a difference: its interval excludes 0. An interval over one seed per row and no examples is a
        point, not an interval: it resolves nothing."""
        if self._point:
            return False
        return self.low > 0 or self.high < 0

    @property
    def _point(self) -> bool:
        return self.over == "seeds" and self.seeds < 2

    def text(self, scale: float = 100.0, digits: int = 1) -> str:
        f = f"{{:.{digits}f}}"
        if self.low == self.high == self.value and self.seeds == 1 and not self.examples:
            return f.format(scale * self.value)
        return f"{f.format(scale * self.value)} [{f.format(scale * self.low)}, {f.format(scale * self.high)}]"

    def _draws(self) -> np.ndarray:
        if self.samples is None:
            raise ValueError("this Estimate was built without its bootstrap samples: no other interval or p-value")
        return self.samples

    def interval(self, level: float) -> tuple[float, float]:
        """The percentile interval of the same draws at another level (0.90 for an equivalence test)."""
        return _interval(self._draws(), level)

    def p_value(self, null: float = 0.0) -> float:
        """Two-sided bootstrap p-value for "the value is `null`": twice the smaller share of draws on either side
        of it (ties count on both sides), each share (k + 1) / (draws + 1) so that it is never 0; at most 1. Its
        floor is 2 / (draws + 1): Holm over m estimates rejects nothing unless draws >= 2 m / alpha - 1 (130
        differences at 5%: 5,199 draws). A point (one seed, no examples) gets 1: it tests nothing."""
        if self._point:
            return 1.0
        return min(1.0, 2 * min(self.one_sided_p(null, above=True), self.one_sided_p(null, above=False)))

    def one_sided_p(self, bound: float, above: bool) -> float:
        """The bootstrap p-value for "the value lies above `bound`" (above=True; else below it): the share of draws
        on the other side of it, ties included, (k + 1) / (draws + 1)."""
        s = self._draws()
        k = np.count_nonzero(s <= bound) if above else np.count_nonzero(s >= bound)
        return (k + 1) / (len(s) + 1)

    def scaled(self, by: float) -> Estimate:
        """The estimate of value * by (a difference as a share of a level), its draws scaled with it."""
        return dataclasses.replace(self, value=self.value * by, low=self.low * by, high=self.high * by,
                                   samples=None if self.samples is None else self.samples * by)

    def shifted(self, by: float) -> Estimate:
        """The estimate of value + by (e.g. accuracy minus chance), its draws moved with it."""
        return dataclasses.replace(self, value=self.value + by, low=self.low + by, high=self.high + by,
                                   samples=None if self.samples is None else self.samples + by)


Ratio = tuple  # (numerators, denominators) per example: a seed's score is sum(num) / sum(den) (MLM accuracy)


def _as_matrices(per_seed: Sequence) -> tuple[np.ndarray, np.ndarray, bool]:
    """(numerators, denominators) as seeds x examples, and whether they are per example (False: one score per
    seed). A seed is a float, an array of per-example scores (denominators 1), or a Ratio (num, den) of arrays."""
    if not len(per_seed):
        raise ValueError("no seeds to estimate from")
    nums, dens = [], []
    for s in per_seed:
        num, den = (s if isinstance(s, tuple) else (s, None))
        num = np.atleast_1d(np.asarray(num, dtype=np.float64))
        nums.append(num)
        dens.append(np.ones_like(num) if den is None else np.atleast_1d(np.asarray(den, dtype=np.float64)))
    shapes = {a.shape for a in nums + dens}
    if len(shapes) != 1 or nums[0].ndim != 1:
        raise ValueError(f"every seed must be scored on the same examples; got shapes {sorted(shapes)}")
    per_example = not all(np.ndim(s) == 0 for s in per_seed)
    return np.stack(nums), np.stack(dens), per_example


@dataclasses.dataclass(frozen=True)
class _Row:
    """A row's seeds in one flat order (pretraining seed 0's fine-tuning seeds, then seed 1's, ...) as seeds x
    examples matrices, with how many fine-tuning seeds each pretraining seed has."""
    num: np.ndarray
    den: np.ndarray
    per_example: bool
    counts: np.ndarray  # fine-tuning seeds per pretraining seed

    @property
    def offsets(self) -> np.ndarray:  # where each pretraining seed's fine-tuning seeds start in the flat order
        return np.concatenate([[0], np.cumsum(self.counts)[:-1]])

    @property
    def scores(self) -> np.ndarray:
        return _scores(self.num, self.den)


def _parse(samples: Sequence) -> _Row:
    """A row given flat (each sample its own pretraining seed) or nested (lists of fine-tuning seeds' samples)."""
    if not len(samples):
        raise ValueError("no seeds to estimate from")
    groups = [s if isinstance(s, list) else [s] for s in samples]
    if any(not g for g in groups):
        raise ValueError("a pretraining seed with no fine-tuning seeds: leave it out")
    flat = [x for g in groups for x in g]
    if any(isinstance(x, list) for x in flat):
        raise ValueError("samples nest two levels at most (pretraining seeds, then fine-tuning seeds); "
                         "give per-example scores as numpy arrays")
    num, den, per_example = _as_matrices(flat)
    return _Row(num, den, per_example, np.array([len(g) for g in groups]))


def nest(samples: Sequence, per_pretraining: Sequence[int]) -> list:
    """A flat list of samples, pretraining seed by pretraining seed (evidence.TaskSamples.samples), as the nested
    form, given each pretraining seed's count of fine-tuning seeds (TaskSamples.per_pretraining); a pretraining
    seed with none is left out. No counts: the flat list as it is."""
    if not per_pretraining:
        return list(samples)
    if sum(per_pretraining) != len(samples):
        raise ValueError(f"{len(samples)} samples for {sum(per_pretraining)} fine-tuning seeds "
                         f"{tuple(per_pretraining)}")
    ends = np.cumsum(per_pretraining)
    return [list(samples[e - n:e]) for n, e in zip(per_pretraining, ends) if n]


def _interval(samples: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.percentile(samples, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return float(lo), float(hi)


def _scores(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return num.sum(axis=1) / np.maximum(den.sum(axis=1), 1e-12)


def _drawn_scores(num: np.ndarray, den: np.ndarray, example_counts: np.ndarray) -> np.ndarray:
    """Each seed's score on each draw's examples (draws x seeds), from how often each draw took each example
    (`_examples_draw`): the sums are one matrix product, the same sums as gathering, faster with many seeds."""
    return (example_counts @ num.T) / np.maximum(example_counts @ den.T, 1e-12)


def _seed_draw(row: _Row, pretraining: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
    """Given each draw's pretraining seeds (draws x pretraining seeds), draw each one's fine-tuning seeds from its
    own list: (flat seed indices per draw, which of them are real, None when all are). Slots run to the largest
    fine-tuning count; a drawn seed with fewer fills the rest with padding. One fine-tuning seed each (the flat
    form) draws nothing, so flat rows use the random stream as before."""
    counts, top = row.counts, int(row.counts.max())
    if top == 1:
        return pretraining, None  # the flat order is the pretraining seeds' order
    n = counts[pretraining]  # draws x slots: each drawn pretraining seed's fine-tuning count
    within = rng.integers(0, n[..., None], size=n.shape + (top,))
    index = (row.offsets[pretraining][..., None] + within).reshape(len(pretraining), -1)
    if (counts == top).all():
        return index, None
    return index, (np.arange(top) < n[..., None]).reshape(len(pretraining), -1)


def _median(values: np.ndarray, real: np.ndarray | None) -> np.ndarray:
    """Each row's median over its real entries (padding sorts last as +inf)."""
    if real is None:
        return np.median(values, axis=1)
    ordered = np.sort(np.where(real, values, np.inf), axis=1)
    n = real.sum(axis=1)[:, None]
    lo, hi = np.take_along_axis(ordered, (n - 1) // 2, axis=1), np.take_along_axis(ordered, n // 2, axis=1)
    return ((lo + hi) / 2)[:, 0]


def _row_medians(row: _Row, example_counts: np.ndarray | None, pretraining: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
    """Each draw's statistic (module docstring): the median of the drawn seeds' scores on the drawn examples;
    `example_counts` None: on every example, once (seed scores alone)."""
    if example_counts is None:
        scores = np.broadcast_to(row.scores, (len(pretraining), row.num.shape[0]))
    else:
        scores = _drawn_scores(row.num, row.den, example_counts)
    index, real = _seed_draw(row, pretraining, rng)
    return _median(np.take_along_axis(scores, index, axis=1), real)


def _pretraining_draw(row: _Row, draws: int, rng: np.random.Generator) -> np.ndarray:
    n = len(row.counts)
    return rng.integers(0, n, size=(draws, n))


def _examples_draw(row: _Row, draws: int, rng: np.random.Generator) -> np.ndarray:
    """`draws` resamples of the row's examples, with replacement, as counts: how often each draw took each example
    (draws x examples, float64 for the matrix product of `_drawn_scores`)."""
    n = row.num.shape[1]
    picks = rng.integers(0, n, size=(draws, n))
    counts = np.bincount((picks + n * np.arange(draws)[:, None]).ravel(), minlength=draws * n)
    return counts.reshape(draws, n).astype(np.float64)


# A table draws every estimate and every paired difference on one held-out set from a new generator at seed 0, so
# all of them start with the very same example draw: it is made once per set and kept (with the generator's state
# just after it), not redrawn for each cell. The numbers are those of drawing it anew, to the bit. Bounded by bytes:
# an entry is draws x examples float64 (2,000 x 2,000: 32 MB).
_FIRST_DRAWS: dict[tuple[int, int, int], tuple[np.ndarray, dict]] = {}
_FIRST_DRAWS_BYTES = 256 << 20


def _first_examples_draw(row: _Row, draws: int, seed: int) -> tuple[np.ndarray, np.random.Generator]:
    """(`_examples_draw` of a new generator at `seed`, that generator just after the draw)."""
    key = (row.num.shape[1], draws, seed)
    if key not in _FIRST_DRAWS:
        rng = np.random.default_rng(seed)
        counts = _examples_draw(row, draws, rng)
        counts.flags.writeable = False  # shared by every later call
        while _FIRST_DRAWS and sum(c.nbytes for c, _ in _FIRST_DRAWS.values()) + counts.nbytes > _FIRST_DRAWS_BYTES:
            del _FIRST_DRAWS[next(iter(_FIRST_DRAWS))]  # the oldest first
        _FIRST_DRAWS[key] = (counts, rng.bit_generator.state)
    counts, state = _FIRST_DRAWS[key]
    rng = np.random.default_rng(seed)
    rng.bit_generator.state = state
    return counts, rng


def estimate(samples: Sequence, *, draws: int = DRAWS, level: float = LEVEL, seed: int = 0) -> Estimate:
    """Median over seeds of each seed's score, with its nested bootstrap interval (module docstring). samples:
    flat (per seed: an array of per-example scores, the same examples for every seed, a Ratio, or one float) or
    nested (per pretraining seed, a list of its fine-tuning seeds' samples)."""
    row = _parse(samples)
    ex, rng = _first_examples_draw(row, draws, seed) if row.per_example else (None, np.random.default_rng(seed))
    stat = _row_medians(row, ex, _pretraining_draw(row, draws, rng), rng)
    lo, hi = _interval(stat, level)
    return Estimate(float(np.median(row.scores)), lo, hi, row.num.shape[0], row.num.shape[1] if row.per_example else 0,
                    "seeds and examples" if row.per_example else "seeds", len(row.counts), stat)


def difference(row: Sequence, reference: Sequence, *, draws: int = DRAWS, level: float = LEVEL,
               seed: int = 0, paired: bool = True) -> Estimate:
    """row minus reference (medians over seeds; either flat or nested), paired by example when both are scored per
    example on the same examples; its `resolved` says whether the interval excludes 0. Each row's seeds are drawn
    on their own, nested as in `estimate`. `paired=False`: the rows were scored on different examples (another
    tokenizer makes other held-out pairs), so each row's examples are drawn on their own: a wider interval, and a
    valid one. Either row without per-example scores: both over their seed scores alone."""
    a, b = _parse(row), _parse(reference)
    rng = np.random.default_rng(seed)
    value = float(np.median(a.scores) - np.median(b.scores))
    if a.per_example and b.per_example and not paired:
        ex_a, rng = _first_examples_draw(a, draws, seed)
        ex_b = _examples_draw(b, draws, rng)
        over, n_ex = "seeds and examples", min(a.num.shape[1], b.num.shape[1])
    elif a.per_example and b.per_example:
        if a.num.shape[1] != b.num.shape[1]:
            raise ValueError(f"a paired difference needs the same examples: {a.num.shape[1]} vs {b.num.shape[1]}")
        ex_a, rng = _first_examples_draw(a, draws, seed)
        ex_b = ex_a
        over, n_ex = "seeds and examples", a.num.shape[1]
    else:
        ex_a = ex_b = None
        over, n_ex = "seeds", 0
    stat = (_row_medians(a, ex_a, _pretraining_draw(a, draws, rng), rng)
            - _row_medians(b, ex_b, _pretraining_draw(b, draws, rng), rng))
    lo, hi = _interval(stat, level)
    return Estimate(value, lo, hi, min(a.num.shape[0], b.num.shape[0]), n_ex, over,
                    min(len(a.counts), len(b.counts)), stat)


def task_mean(per_task: Sequence[tuple[Sequence, Sequence | None, bool]], *, draws: int = DRAWS,
              level: float = LEVEL, seed: int = 0) -> Estimate:
    """The mean over tasks of a row's medians (each task `(row, None, _)`), or of its differences to a reference row
    (`(row, reference, paired)`), with a bootstrap interval; rows flat or nested. One draw resamples each row's
    pretraining seeds once for every task (a row's pretraining seeds serve all its tasks, so their noise is
    shared: tasks whose row has the same number of pretraining seeds share the draw), each task's fine-tuning seeds
    under them on their own (a task's fine-tuning runs are its own), and each task's examples on their own (the
    tasks' dev sets are independent); a difference shares the example draw with its reference when `paired`, as
    `difference` does."""
    if not per_task:
        raise ValueError("no tasks to average")
    rng = np.random.default_rng(seed)
    pretraining_draws: dict[tuple[str, int], np.ndarray] = {}
    value, stat = 0.0, np.zeros(draws)
    seeds, pretraining, examples, per_example_all = [], [], [], True
    for row, reference, paired in per_task:
        rows = [("row", +1.0, _parse(row))]
        if reference is not None:
            rows.append(("reference", -1.0, _parse(reference)))
        sizes = {r.num.shape[1] for _, _, r in rows}
        shared = (_examples_draw(rows[0][2], draws, rng)
                  if paired and len(rows) == 2 and len(sizes) == 1 and all(r.per_example for _, _, r in rows) else None)
        for who, sign, r in rows:
            # Drawn even where the row's draw exists and is reused: the random stream, and so the numbers of
            # tables made before the nested draw, stay as they were.
            fresh = _pretraining_draw(r, draws, rng)
            pre = pretraining_draws.setdefault((who, len(r.counts)), fresh)
            if r.per_example:
                ex = shared if shared is not None else _examples_draw(r, draws, rng)
                examples.append(r.num.shape[1])
            else:
                ex, per_example_all = None, False
            value += sign * float(np.median(r.scores)) / len(per_task)
            stat += sign * _row_medians(r, ex, pre, rng) / len(per_task)
            seeds.append(r.num.shape[0])
            pretraining.append(len(r.counts))
    lo, hi = _interval(stat, level)
    return Estimate(value, lo, hi, min(seeds), min(examples) if per_example_all else 0,
                    "seeds and examples" if per_example_all else "seeds", min(pretraining), stat)


# ------------------------------------------------------------------------------------------ many differences
def holm(p_values: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Which hypotheses Holm's step-down rejects, in input order, keeping the chance of any false rejection in the
    family at `alpha`: the k-th smallest of m p-values (k from 1) is rejected while p <= alpha / (m - k + 1), and
    the first that is not stops it (every larger p-value stands, even one below its own threshold)."""
    order = np.argsort(np.asarray(p_values, dtype=np.float64), kind="stable")
    out = [False] * len(order)
    for k, i in enumerate(order):
        if p_values[i] > alpha / (len(order) - k):
            break
        out[i] = True
    return out


def holm_resolved(family: Sequence[Estimate], alpha: float = 0.05) -> list[bool]:
    """Which of a family of differences stay resolved once tested together (Holm on their bootstrap p-values for
    "difference = 0"): rejected by Holm and resolved by its own interval, so that adjusting never resolves more.
    The family is every difference whose resolution a table reports together; leave out the ones not computed.
    Needs enough draws: see Estimate.p_value's floor."""
    return [r and e.resolved for r, e in zip(holm([e.p_value() for e in family], alpha), family)]


# ------------------------------------------------------------------------------------------ "at the level of"
EQUIVALENT, DIFFERENT, INCONCLUSIVE = "equivalent", "different", "inconclusive"


def equivalence(est: Estimate, margin: float, center: float = 0.0, alpha: float = 0.05) -> str:
    """Is `est` at `center` (chance, another row's level) within +-`margin`?

    "equivalent": two one-sided tests at `alpha` both reject, i.e. the (1 - 2 alpha) interval (90%) lies inside
    (center - margin, center + margin);
    "different": otherwise, the (1 - alpha) interval (95%) excludes `center`;
    "inconclusive": neither: the data cannot tell (an interval that merely holds the center says nothing more).

    Where both hold (a small but resolved difference, its 90% interval inside the margin), "equivalent" wins: the
    margin is declared as the smallest difference that matters, so a difference shown to be smaller is "at the
    level of" the center however well it is resolved (the paper's own "at chance" SOP is 52.0, not 50). The
    difference itself stays visible as the estimate. A point (one seed, no examples) is "inconclusive"."""
    if margin <= 0:
        raise ValueError(f"an equivalence margin must be positive, got {margin}")
    if est._point:
        return INCONCLUSIVE
    lo, hi = est.interval(1 - 2 * alpha)
    if center - margin < lo and hi < center + margin:
        return EQUIVALENT
    lo, hi = est.interval(1 - alpha)
    return DIFFERENT if lo > center or hi < center else INCONCLUSIVE


def balanced_margin(n_examples: int, points: float = 3.0, standard_errors: float = 2.0) -> float:
    """An equivalence margin (a fraction) for accuracy on a balanced binary set of `n_examples` (the held-out SOP
    and NSP pairs, chance 50%): `points` points, but never below `standard_errors` standard errors of a proportion
    at 50% on that many examples, sqrt(0.25 / n). A margin the set cannot resolve could never be met: with one
    seed and no seed noise a model exactly at chance meets the margin m with probability P(|Z| < m / SE - 1.645),
    which is 28% at 2 SE; 3 points on the 2,106 held-out SOP pairs (SE 1.09 points) are 2.75 SE, 73% (on the
    2,274 NSP pairs 2.86 SE, 78%)."""
    if n_examples < 1:
        raise ValueError("a margin needs a set of at least one example")
    return max(points / 100, standard_errors * math.sqrt(0.25 / n_examples))


# ------------------------------------------------------------------------------------------ do these intervals cover?
# Held-out examples a coverage simulation draws as one unit each, at most: a larger set is simulated as this many
# blocks of near-equal size, each block's correct count Binomial(size, q) and the bootstrap drawing blocks. For
# independent examples (the simulation's model) that is the same bootstrap variance, q (1 - q) / n, at a fraction of
# the cost: Table 5's coverage line over 9 seeds x 2,000 pairs took 85 s of a table rebuild with every pair a unit,
# 9 s in 250 blocks. What it costs: the interval's width is estimated from 250 values instead of 2,000 (about 9%
# relative spread instead of 3%), which moves a simulated coverage by well under its Monte Carlo error
# (tests/test_stats.py compares the two).
UNITS = 250


def _blocks(n_examples: int, units: int | None) -> np.ndarray:
    """The sizes of the blocks `n_examples` examples are simulated in (module note at UNITS); None: one per example."""
    if units is None or n_examples <= units:
        return np.ones(n_examples, dtype=np.int64)
    return np.diff(np.linspace(0, n_examples, units + 1).round().astype(np.int64))


def coverage(n_pretraining: int, n_finetuning: int | Sequence[int], sd_pretraining: float, sd_finetuning: float,
             n_examples: int, p: float, *, level: float = LEVEL, draws: int = 400, sims: int = 300,
             seed: int = 0, units: int | None = UNITS) -> float:
    """The share of `sims` simulated rows whose nested-bootstrap interval (`estimate`'s, at `level`, with `draws`
    draws) holds the true value `p`.

    The model: pretraining seed i shifts the score by a_i ~ N(0, sd_pretraining), its fine-tuning seed j by
    b_ij ~ N(0, sd_finetuning) more; the seed's chance of getting an example right is q_ij = p + a_i + b_ij
    (clipped to [0, 1]), and its `n_examples` held-out outcomes are independent Bernoulli(q_ij) draws, the seeds
    on the same example indices but with no per-example difficulty (the set adds binomial noise only). The true
    value is the median of a fresh seed's expected score, p. `n_examples` 0: a seed's score is q_ij itself and
    the bootstrap is over seeds alone. `n_finetuning` a sequence: per pretraining seed. More than `units` examples
    are simulated in `units` blocks (the note at UNITS); None: every example its own unit.

    Monte Carlo error: a binomial share, sqrt(c (1 - c) / sims), 0.013 at c = 0.95 and 0.028 at c = 0.63 for 300
    simulations; 400 draws per interval add a little noise to each interval's ends, not a bias to speak of."""
    counts = np.broadcast_to(np.asarray(n_finetuning, dtype=np.int64), (n_pretraining,))
    if n_pretraining < 1 or counts.min() < 1:
        raise ValueError("coverage needs at least one pretraining seed and one fine-tuning seed under each")
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(n_pretraining), counts)
    sizes = _blocks(n_examples, units)
    den = np.broadcast_to(sizes.astype(np.float64), (len(group), len(sizes)))
    hits = 0
    for _ in range(sims):
        q = np.clip(p + rng.normal(0, sd_pretraining, n_pretraining)[group] + rng.normal(0, sd_finetuning, len(group)),
                    0, 1)
        if n_examples:
            num = rng.binomial(sizes, q[:, None]).astype(np.float64)
            row = _Row(num, den, True, counts)
            ex = _examples_draw(row, draws, rng)
        else:
            row, ex = _Row(q[:, None], np.ones((len(group), 1)), False, counts), None
        lo, hi = _interval(_row_medians(row, ex, _pretraining_draw(row, draws, rng), rng), level)
        hits += lo <= p <= hi
    return hits / sims


def spreads(samples: Sequence) -> tuple[float, float]:
    """(sd_pretraining, sd_finetuning) observed in a row (flat or nested): the standard deviation (n - 1) of its
    pretraining seeds' mean scores, 0 with one; the pooled within-pretraining-seed standard deviation of its
    fine-tuning seeds' scores, 0 where no pretraining seed has two. Raw spreads: each holds the noise of the levels
    below it (the pretraining one the fine-tuning noise over its seeds' count, both the example noise), so they
    overstate the model's spreads a little, and a coverage simulated at them leans generous for one seed's level."""
    row = _parse(samples)
    groups = np.split(row.scores, np.cumsum(row.counts)[:-1])
    means = np.array([g.mean() for g in groups])
    sd_pre = float(means.std(ddof=1)) if len(means) > 1 else 0.0
    dof = int(sum(len(g) - 1 for g in groups))
    sd_ft = float(math.sqrt(sum(((g - g.mean()) ** 2).sum() for g in groups) / dof)) if dof else 0.0
    return sd_pre, sd_ft


def row_coverage(samples: Sequence, *, sd_pretraining: float | None = None, level: float = LEVEL,
                 draws: int = 400, sims: int = 300, seed: int = 0) -> float | None:
    """`coverage` at a row's own seed counts, examples, value and observed `spreads`: what a table prints as
    "simulated coverage of these 95% intervals at this row's seeds and spreads". One pretraining seed shows no
    pretraining spread: give `sd_pretraining` (another row's, say), else None (not known, not 95%). Per-example
    scores are simulated as 0/1 on the row's examples, a Ratio's as one per example."""
    row = _parse(samples)
    sd_pre, sd_ft = spreads(samples)
    if len(row.counts) > 1:
        sd_pretraining = sd_pre
    elif sd_pretraining is None:
        return None
    return coverage(len(row.counts), row.counts, sd_pretraining, sd_ft, row.num.shape[1] if row.per_example else 0,
                    float(np.median(row.scores)), level=level, draws=draws, sims=sims, seed=seed)
