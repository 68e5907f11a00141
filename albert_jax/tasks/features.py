"""Turning labeled examples into model inputs, and feeding them to the training core.

Encoding follows the official run_classifier.py: `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, segment ids 0/1,
pairs truncated longest-first (BERT's `_truncate_seq_pair`); every truncation is counted and reported.

`Features` holds one split as numpy arrays in memory (the downstream sets here are at most tens of thousands
of rows). Training batches come from grain over those rows (shuffled, repeated, with checkpointable iterator
state, as pretraining); evaluation batches walk a split in order, the last one padded, with `example_weight`
0 on padding rows and `example_index` naming each row's example, so every example counts exactly once.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
from typing import Any, Callable, Iterator, Sequence

import jax
import numpy as np

from albert_jax.data import bucketing, input_pipeline


class TaskDataError(ValueError):
    """A downstream dataset that cannot be used as asked; the message names the task and split."""


def truncate_pair(a: list[int], b: list[int], max_tokens: int) -> bool:
    """Pop from the longer list until both fit (BERT's rule); True if anything was removed."""
    cut = False
    while len(a) + len(b) > max_tokens:
        (a if len(a) > len(b) else b).pop()
        cut = True
    return cut


def encode_text(tokenizer, a: str, b: str | None, max_len: int, stats: collections.Counter) -> dict[str, np.ndarray]:
    """One example's input_ids / input_mask / segment_ids, padded to max_len."""
    ta = tokenizer.encode(a)
    tb = tokenizer.encode(b) if b is not None else None
    if tb is None:
        if len(ta) > max_len - 2:
            ta, stats["truncated"] = ta[:max_len - 2], stats["truncated"] + 1
        ids, seg = [tokenizer.cls_id, *ta, tokenizer.sep_id], [0] * (len(ta) + 2)
    else:
        if truncate_pair(ta, tb, max_len - 3):
            stats["truncated"] += 1
        ids = [tokenizer.cls_id, *ta, tokenizer.sep_id, *tb, tokenizer.sep_id]
        seg = [0] * (len(ta) + 2) + [1] * (len(tb) + 1)
    return pad_row(ids, seg, max_len, tokenizer.pad_id)


def pad_row(ids: Sequence[int], seg: Sequence[int], max_len: int, pad_id: int) -> dict[str, np.ndarray]:
    n = len(ids)
    out_ids = np.full(max_len, pad_id, np.int32)
    out_ids[:n] = ids
    mask = np.zeros(max_len, np.int32)
    mask[:n] = 1
    segs = np.zeros(max_len, np.int32)
    segs[:n] = seg
    return {"input_ids": out_ids, "input_mask": mask, "segment_ids": segs}


def text_of(record: dict, key: str) -> str:
    v = record[key]
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


@dataclasses.dataclass
class Features:
    """One split: `arrays` [N, ...] (model inputs and targets); `meta` keeps whatever decoding needs."""
    split: str
    arrays: dict[str, np.ndarray]
    meta: list[Any] = dataclasses.field(default_factory=list)
    stats: dict[str, int] = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return len(next(iter(self.arrays.values())))

    @classmethod
    def stack(cls, split: str, rows: list[dict], meta=None, stats=None) -> "Features":
        if not rows:
            raise TaskDataError(f"split {split!r} is empty")
        arrays = {k: np.stack([r[k] for r in rows]) for k in rows[0]}
        return cls(split, arrays, meta or [], dict(stats or {}))


class _Rows:
    """A random-access source of row dicts over `Features.arrays` (what grain reads)."""

    def __init__(self, arrays: dict[str, np.ndarray], split: str = "train"):
        self.arrays = arrays
        self._n = len(next(iter(arrays.values())))
        h = hashlib.sha256()
        for k in sorted(arrays):
            h.update(k.encode() + np.ascontiguousarray(arrays[k]).tobytes())
        self._digest = h.hexdigest()[:16]

    def __repr__(self) -> str:
        # grain checks a restored iterator against repr(source): the same rows must give the same text, and
        # changed rows (another tokenizer, max length or data) a different one.
        return f"Rows(n={self._n}, sha256={self._digest})"

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        return {k: v[i] for k, v in self.arrays.items()}


def _identity(row):
    return row


def eval_batches(features: Features, batch_size: int, sharding, seq_keys: Sequence[str] = (),
                 buckets: Sequence[int] = ()) -> Iterator[dict]:
    """The split in global batches; the last one padded with weight-0 rows.

    With `buckets` (data/bucketing.py) the split is walked shortest first and each batch is cut to the shortest
    bucket holding its longest row (`seq_keys` are the arrays with a sequence axis); without, in order at full
    length. Either way every example is scored once and named by `example_index`."""
    n = len(features)
    pc, pi = jax.process_count(), jax.process_index()
    local = batch_size // pc
    bucketed = len(buckets) > 1 and bool(seq_keys)
    lengths = bucketing.row_lengths(features.arrays["input_mask"]) if bucketed else None
    order = np.argsort(lengths, kind="stable") if bucketed else np.arange(n)
    for start in range(0, n, batch_size):
        pos = np.arange(start, start + batch_size)
        real = pos < n
        idx = order[np.where(real, pos, start)]  # padding rows repeat the batch's first row (weight 0)
        batch = {k: v[idx] for k, v in features.arrays.items()}
        batch["example_weight"] = real.astype(np.float32)
        batch["example_index"] = np.where(real, idx, -1).astype(np.int32)
        if bucketed:  # every process holds the whole split, so all of them cut to the same length
            batch = bucketing.cut(batch, seq_keys, bucketing.fit(int(lengths[idx].max()), buckets))
        if sharding is None:
            yield batch
            continue
        yield {k: jax.make_array_from_process_local_data(sharding, v[pi * local:(pi + 1) * local],
                                                         (batch_size,) + v.shape[1:]) for k, v in batch.items()}


class EvalSet:
    """One split to evaluate: `(batch_size, sharding)` -> its padded batches, and the features a task's `finalize`
    decodes its predictions against (SQuAD's windows and answers)."""

    def __init__(self, features: Features, seq_keys=(), buckets=()):
        self.features, self.seq_keys, self.buckets = features, tuple(seq_keys), tuple(buckets)

    def __call__(self, batch_size: int, sharding):
        return eval_batches(self.features, batch_size, sharding, self.seq_keys, self.buckets)


@dataclasses.dataclass
class TaskData:
    """What the training loop reads: train batches, dev sets for evaluation during training, test sets scored
    once from the best checkpoint, the tokenizer and a summary for config.json."""
    tokenizer: Any
    train: Features
    dev: dict[str, Features]
    test: dict[str, Features]
    summary: dict
    # Length bucketing (data/bucketing.py): the arrays with a sequence axis, and the lengths a batch may be cut to
    # (set by the run from data.buckets; one length, or none, keeps every batch at full length).
    seq_keys: tuple[str, ...] = ()
    buckets: tuple[int, ...] = ()

    def train_iterator(self, batch_size: int, sharding, seed: int):
        if len(self.train) < batch_size:
            raise TaskDataError(f"the train split has {len(self.train)} examples, fewer than one batch of "
                                f"{batch_size}; lower train.batch_size")
        cut = None
        if len(self.buckets) > 1 and self.seq_keys:
            cut = functools.partial(bucketing.trim, keys=self.seq_keys, buckets=self.buckets)
        return input_pipeline.make_batch_iterator(_Rows(self.train.arrays, self.train.split), _identity, batch_size,
                                                  seed=seed, shuffle=True, num_epochs=None, sharding=sharding,
                                                  local_fn=cut)

    def _sets(self, splits: dict[str, Features]) -> dict[str, "EvalSet"]:
        return {name: EvalSet(f, self.seq_keys, self.buckets) for name, f in splits.items()}

    @property
    def eval_sets(self) -> dict[str, Callable]:
        return self._sets(self.dev)

    @property
    def test_sets(self) -> dict[str, Callable]:
        return self._sets(self.test)
