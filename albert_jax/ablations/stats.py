"""Medians with 95% intervals, and paired differences, over seeds and held-out examples (issue 24).

A table cell is the median over a row's seeds of a score that is the mean of per-example scores (accuracy: 1 for a
correct example, 0 for a wrong one). Its interval is a two-level bootstrap: draw the seeds with replacement, and for
each drawn seed its examples with replacement; the 2.5th and 97.5th percentiles of the resampled medians bound it.
So both sources of noise are in it: which seeds were run, and which examples the held-out set happened to hold.

A difference between two rows is paired by example: both rows were scored on the same held-out examples (the
intrinsic sets and every dev set are fixed, in a fixed order), so one draw of example indices serves both, and an
example that is hard for both rows cancels out. Seeds are drawn independently per row (seed s of one row has
nothing to do with seed s of another). A difference is "resolved" when its interval excludes 0.

Where only per-seed scores exist (no per-example file), the bootstrap is over seeds alone, and says so: with one
seed that interval is a point, which is why such a cell shows no interval rather than a false one.

numpy alone: the percentile bootstrap is a few lines, and scipy.stats.bootstrap resamples one level only.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

DRAWS = 2000
LEVEL = 0.95


@dataclasses.dataclass(frozen=True)
class Estimate:
    value: float  # the median over seeds of each seed's mean score
    low: float
    high: float
    seeds: int
    examples: int  # per seed; 0 when only per-seed scores were available
    over: str  # "seeds and examples" | "seeds"

    @property
    def resolved(self) -> bool:
        """For a difference: its interval excludes 0. An interval over one seed per row and no examples is a
        point, not an interval: it resolves nothing."""
        if self.over == "seeds" and self.seeds < 2:
            return False
        return self.low > 0 or self.high < 0

    def text(self, scale: float = 100.0, digits: int = 1) -> str:
        f = f"{{:.{digits}f}}"
        if self.low == self.high == self.value and self.seeds == 1 and not self.examples:
            return f.format(scale * self.value)
        return f"{f.format(scale * self.value)} [{f.format(scale * self.low)}, {f.format(scale * self.high)}]"


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


def _interval(samples: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.percentile(samples, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return float(lo), float(hi)


def _scores(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return num.sum(axis=1) / np.maximum(den.sum(axis=1), 1e-12)


def _resampled_medians(num: np.ndarray, den: np.ndarray, example_draws: np.ndarray,
                       rng: np.random.Generator) -> np.ndarray:
    """Medians over resampled seeds of each resampled seed's score over `example_draws` (draws x examples indices,
    shared with the other row of a paired difference)."""
    n_seeds = num.shape[0]
    seed_draws = rng.integers(0, n_seeds, size=(example_draws.shape[0], n_seeds))
    return np.median(np.take_along_axis(_drawn_scores(num, den, example_draws), seed_draws, axis=1), axis=1)


def _drawn_scores(num: np.ndarray, den: np.ndarray, example_draws: np.ndarray) -> np.ndarray:
    """Each seed's score on each draw's examples (draws x seeds); one gather per seed keeps memory small."""
    return np.stack([num[s][example_draws].sum(axis=1) / np.maximum(den[s][example_draws].sum(axis=1), 1e-12)
                     for s in range(num.shape[0])], axis=1)


def _seed_medians(values: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    return np.median(values[rng.integers(0, len(values), size=(draws, len(values)))], axis=1)


def estimate(per_seed: Sequence, *, draws: int = DRAWS, level: float = LEVEL, seed: int = 0) -> Estimate:
    """Median over seeds of each seed's score, with its bootstrap interval (module docstring). per_seed: per seed,
    an array of per-example scores (the same examples for every seed), a Ratio, or one float."""
    num, den, per_example = _as_matrices(per_seed)
    rng = np.random.default_rng(seed)
    if per_example:
        ex = rng.integers(0, num.shape[1], size=(draws, num.shape[1]))
        samples = _resampled_medians(num, den, ex, rng)
    else:
        samples = _seed_medians(_scores(num, den), draws, rng)
    lo, hi = _interval(samples, level)
    return Estimate(float(np.median(_scores(num, den))), lo, hi, num.shape[0], num.shape[1] if per_example else 0,
                    "seeds and examples" if per_example else "seeds")


def difference(row: Sequence, reference: Sequence, *, draws: int = DRAWS, level: float = LEVEL,
               seed: int = 0, paired: bool = True) -> Estimate:
    """row minus reference (medians over seeds), paired by example when both are scored per example on the same
    examples; its `resolved` says whether the interval excludes 0. `paired=False`: the rows were scored on
    different examples (another tokenizer makes other held-out pairs), so each row's examples are drawn on their
    own: a wider interval, and a valid one."""
    a_num, a_den, a_ex = _as_matrices(row)
    b_num, b_den, b_ex = _as_matrices(reference)
    rng = np.random.default_rng(seed)
    value = float(np.median(_scores(a_num, a_den)) - np.median(_scores(b_num, b_den)))
    if a_ex and b_ex and not paired:
        ex_a = rng.integers(0, a_num.shape[1], size=(draws, a_num.shape[1]))
        ex_b = rng.integers(0, b_num.shape[1], size=(draws, b_num.shape[1]))
        samples = _resampled_medians(a_num, a_den, ex_a, rng) - _resampled_medians(b_num, b_den, ex_b, rng)
        over, n_ex = "seeds and examples", min(a_num.shape[1], b_num.shape[1])
    elif a_ex and b_ex:
        if a_num.shape[1] != b_num.shape[1]:
            raise ValueError(f"a paired difference needs the same examples: {a_num.shape[1]} vs {b_num.shape[1]}")
        ex = rng.integers(0, a_num.shape[1], size=(draws, a_num.shape[1]))
        samples = _resampled_medians(a_num, a_den, ex, rng) - _resampled_medians(b_num, b_den, ex, rng)
        over, n_ex = "seeds and examples", a_num.shape[1]
    else:
        samples = (_seed_medians(_scores(a_num, a_den), draws, rng) - _seed_medians(_scores(b_num, b_den), draws, rng))
        over, n_ex = "seeds", 0
    lo, hi = _interval(samples, level)
    return Estimate(value, lo, hi, min(a_num.shape[0], b_num.shape[0]), n_ex, over)


def task_mean(per_task: Sequence[tuple[Sequence, Sequence | None, bool]], *, draws: int = DRAWS,
              level: float = LEVEL, seed: int = 0) -> Estimate:
    """The mean over tasks of a row's medians (each task `(row, None, _)`), or of its differences to a reference row
    (`(row, reference, paired)`), with a bootstrap interval. One draw resamples each row's seeds once for every
    task (a row's pretraining seeds serve all its tasks, so their noise is shared) and each task's examples on
    their own (the tasks' dev sets are independent); a difference shares the example draw with its reference
    when `paired`, as `difference` does."""
    if not per_task:
        raise ValueError("no tasks to average")
    rng = np.random.default_rng(seed)
    seed_draws: dict[tuple[str, int], np.ndarray] = {}
    value, samples = 0.0, np.zeros(draws)
    seeds, examples, per_example_all = [], [], True
    for row, reference, paired in per_task:
        mats = [("row", +1.0, _as_matrices(row))]
        if reference is not None:
            mats.append(("reference", -1.0, _as_matrices(reference)))
        sizes = {m[2][0].shape[1] for m in mats}
        shared = (rng.integers(0, sizes.pop(), size=(draws, mats[0][2][0].shape[1]))
                  if paired and len(mats) == 2 and len(sizes) == 1 and all(m[2][2] for m in mats) else None)
        for who, sign, (num, den, per_example) in mats:
            n = num.shape[0]
            draw = seed_draws.setdefault((who, n), rng.integers(0, n, size=(draws, n)))
            if per_example:
                ex = shared if shared is not None else rng.integers(0, num.shape[1], size=(draws, num.shape[1]))
                scores = _drawn_scores(num, den, ex)
                examples.append(num.shape[1])
            else:
                scores = np.broadcast_to(_scores(num, den), (draws, n))
                per_example_all = False
            value += sign * float(np.median(_scores(num, den))) / len(per_task)
            samples += sign * np.median(np.take_along_axis(scores, draw, axis=1), axis=1) / len(per_task)
            seeds.append(n)
    lo, hi = _interval(samples, level)
    return Estimate(value, lo, hi, min(seeds), min(examples) if per_example_all else 0,
                    "seeds and examples" if per_example_all else "seeds")
