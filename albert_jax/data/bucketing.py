"""Length bucketing: a batch is cut to the shortest of a few padded lengths that holds its longest row.

Downstream sentences are short (rt_sentiment averages 37 real tokens, wordnet_wic 19) while the features are padded
to `max_seq_length` (128 or 512): padding was most of the compute (docs/benchmarks.md). Cutting a batch's padding
columns is exact: a padded position is masked out of every attention score (its weight is exp(-10000) = 0 in
float32) and every per-position output past a row's end is ignored by the losses and metrics, so the real
positions' outputs and every loss are those of the full-length batch, to float rounding (tests/test_bucketing.py).

A few fixed lengths, not the batch's exact longest row: each length is one XLA program, compiled once, so a run
compiles at most len(buckets) train steps and as many eval steps. Training keeps its batches and their order
(grain's order, exactly resumable); evaluation walks a split sorted by length, so most of its batches are short
(its metrics are order-free: each row carries `example_index`).
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

AUTO_MIN = 16  # the finest step of 'auto'
AUTO_COUNT = 8  # 'auto' has at most this many lengths: at most 8 compiled train steps and 8 eval steps


class BucketError(ValueError):
    """A `data.buckets` value that cannot be used; the message names the field and what is allowed."""


def bucket_lengths(max_len: int, spec: str = "auto") -> tuple[int, ...]:
    """The padded lengths a batch may take, ascending, the last always `max_len`.

    spec: "auto" (multiples of max(16, max_len/8): 16, 32, ... 128 for max_len 128, 64, 128, ... 512 for 512),
    "off" (max_len only: no bucketing), or a comma list of lengths such as "32,64,96" (max_len is added).
    Random training batches of short sentences still hold one long row (rt_sentiment's batches of 32 reach 70
    tokens at the median, its sentences 36): steps of an eighth cut most of what a batch can lose, where powers of
    two (64 -> 128) would cut little of it."""
    spec = (spec or "off").strip().lower()
    if spec == "off":
        return (max_len,)
    if spec == "auto":
        stride = max(AUTO_MIN, -(-max_len // AUTO_COUNT))
        return (*range(stride, max_len, stride), max_len)
    try:
        lengths = sorted({int(x) for x in spec.split(",") if x.strip()})
    except ValueError:
        raise BucketError(f"data.buckets={spec!r}: expected 'auto', 'off' or a comma list of lengths such as "
                          "'32,64,96'") from None
    bad = [n for n in lengths if not 0 < n <= max_len]
    if bad or not lengths:
        raise BucketError(f"data.buckets={spec!r}: every length must lie in 1..data.max_seq_length={max_len}"
                          + (f" (got {bad})" if bad else ""))
    return tuple(lengths) if lengths[-1] == max_len else (*lengths, max_len)


def row_lengths(mask: np.ndarray) -> np.ndarray:
    """Real length of each example [N]: one past its last non-zero mask position, over every choice of a
    multiple-choice row ([N, C, L] -> its longest choice)."""
    m = np.asarray(mask) != 0
    last = m.shape[-1] - np.argmax(m[..., ::-1], axis=-1)
    last = np.where(m.any(-1), last, 0)
    return last.reshape(last.shape[0], -1).max(-1)


def fit(need: int, buckets: Sequence[int]) -> int:
    """The shortest bucket holding `need` positions."""
    for n in buckets:
        if n >= need:
            return n
    return buckets[-1]


def cut(batch: dict, keys: Iterable[str], length: int) -> dict:
    """The batch with the sequence (last) axis of `keys` cut to `length`; other arrays untouched."""
    keys = set(keys)
    return {k: (v[..., :length] if k in keys else v) for k, v in batch.items()}


def global_need(need: int) -> int:
    """The longest row over every process's share of a global batch: all processes must cut alike (one shape)."""
    import jax  # noqa: PLC0415  heavy: jax

    if jax.process_count() == 1:
        return int(need)
    from jax.experimental import multihost_utils  # noqa: PLC0415  heavy: jax
    return int(np.max(multihost_utils.process_allgather(np.int32(need))))


def trim(batch: dict, keys: Sequence[str], buckets: Sequence[int], mask_key: str = "input_mask") -> dict:
    """`batch` cut to the shortest bucket that holds its longest row (a process-local batch: agreed over hosts)."""
    if len(buckets) < 2 or not keys:
        return batch
    return cut(batch, keys, fit(global_need(int(row_lengths(batch[mask_key]).max(initial=0))), buckets))
