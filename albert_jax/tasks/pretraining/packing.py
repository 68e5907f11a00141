"""Sequence packing for pretraining: several short instances in one row, attending only within themselves.

create_pretraining_data fills most instances to max_seq_length, but short_seq_prob and document ends leave
short ones, and a corpus of short documents leaves mostly short ones; their padding costs as much compute as real
tokens. Packing (as MLPerf BERT) concatenates instances into rows of max_seq_length and keeps each one's
computation as it was unpacked:

- `pack_ids` (1..k per packed instance, 0 on padding) make the attention block-diagonal
  (`layers.pack_mask_bias`): a token sees only the keys of its own instance, with the same -10000 bias that
  removes padding, so its softmax has exactly the same terms;
- `position_ids` restart at 0 for each instance; `masked_lm_positions` are offset into the row;
- each instance keeps its own sentence label, scored from its own [CLS] (`cls_positions`), with
  `next_sentence_weights` 0 on unused label slots.

The loss is sums over masked tokens and sentence labels divided by their counts (tasks/base.py), so a packed
batch gives the same loss and gradients as the same instances unpacked (tests/test_packing.py).

The plan (which records share a row) is fixed for the data set: computed once from the records' sizes (read
from their headers, cached beside the shards) by best-fit decreasing, with ties in a seeded order. The row
source is then an ordinary random-access source, so grain's shuffle, sharding and iterator state (exact resume)
work on rows exactly as they do on records.
"""
from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import numpy as np

log = logging.getLogger("albert_jax.pretrain")

# The data.packing fields (off by default; at most 3 instances per row, as MLPerf BERT; 0 predictions per row
# means data.max_predictions_per_seq) are declared with the other data fields in configs/schema.py.


def _sizes_cache(shards: list[str]) -> Path | None:
    """record_sizes-<key>.npy beside the shards, keyed by their names, sizes and times: rewritten shards
    are read again."""
    if not shards:
        return None
    stats = [(os.path.basename(p), os.path.getsize(p), os.stat(p).st_mtime_ns) for p in shards]
    key = hashlib.sha256(repr(stats).encode()).hexdigest()[:12]
    return Path(shards[0]).parent / f"record_sizes-{key}.npy"


def record_sizes(shards: list[str], source=None) -> np.ndarray:
    """[N, 2] uint16: (real tokens, masked predictions) of every record of `shards` in source order, from the
    20-byte headers (records.py); cached beside the shards (written under a temporary name, then renamed)."""
    cache = _sizes_cache(shards)
    if cache is not None and cache.exists():
        sizes = np.load(cache)
        if source is None or len(sizes) == len(source):
            return sizes
    if source is None:
        import grain  # noqa: PLC0415  heavy: grain
        source = grain.sources.ArrayRecordDataSource(shards)
    n = len(source)
    sizes = np.zeros((n, 2), np.uint16)
    for start in range(0, n, 4096):
        idx = list(range(start, min(n, start + 4096)))
        items = source.__getitems__(idx) if hasattr(source, "__getitems__") else [source[i] for i in idx]
        for i, data in zip(idx, items):
            sizes[i] = np.frombuffer(data, "<u2", 2, 10)  # header: magic, version, pad, L, P, tokens, predictions
    if cache is not None:
        tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as f:
                np.save(f, sizes)
            os.replace(tmp, cache)
        except OSError as e:  # a read-only data directory: the sizes are recomputed next time
            log.warning("could not cache record sizes beside %s: %s", shards[0], e)
    return sizes


def plan_rows(tokens: np.ndarray, predictions: np.ndarray, max_seq_length: int, max_examples: int,
              max_predictions: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Which records share each row: (order, starts), row r holding records order[starts[r]:starts[r + 1]].

    Best-fit decreasing: records longest first (equal lengths in a seeded order, so copies of one instance
    from different dupe passes do not cluster), each into the open row with the least room that still fits
    its tokens, its predictions and one more example. Every record is in exactly one row."""
    tokens, predictions = np.asarray(tokens, np.int64), np.asarray(predictions, np.int64)
    n, S = len(tokens), max_seq_length
    if n and (tokens.min() < 1 or tokens.max() > S):
        raise ValueError(f"record lengths must be 1..{S} (data.max_seq_length); got {tokens.min()}..{tokens.max()}")
    if n and predictions.max() > max_predictions:
        raise ValueError(f"a record has {predictions.max()} masked predictions, more than a packed row holds "
                         f"(data.packing_max_predictions={max_predictions})")
    perm = np.random.default_rng(seed).permutation(n)
    order = perm[np.argsort(-tokens[perm], kind="stable")]
    min_len, min_k = (int(tokens.min()), int(predictions.min())) if n else (0, 0)
    rows: list[list[int]] = []
    room_left: list[int] = []
    preds_left: list[int] = []
    # Open rows by free tokens, then by predictions left; most_preds[room] is the most any open row of that
    # room has left (-1: none), so one vector test finds the least room that fits both, whatever the mix.
    open_rows: list[dict[int, list[int]]] = [{} for _ in range(S + 1)]
    most_preds = np.full(S + 1, -1, np.int64)
    for rec in order.tolist():
        length, k = int(tokens[rec]), int(predictions[rec])
        fits = np.flatnonzero(most_preds[length:] >= k)
        if len(fits):
            room = length + int(fits[0])
            by_preds = open_rows[room]
            left = min(q for q in by_preds if q >= k)  # the best fit on predictions too
            row = by_preds[left].pop()
            if not by_preds[left]:
                del by_preds[left]
            most_preds[room] = max(by_preds, default=-1)
        else:
            row = len(rows)
            rows.append([])
            room_left.append(S)
            preds_left.append(max_predictions)
        rows[row].append(rec)
        room_left[row] -= length
        preds_left[row] -= k
        if len(rows[row]) < max_examples and room_left[row] >= min_len and preds_left[row] >= min_k:
            open_rows[room_left[row]].setdefault(preds_left[row], []).append(row)
            most_preds[room_left[row]] = max(most_preds[room_left[row]], preds_left[row])
    starts = np.zeros(len(rows) + 1, np.int64)
    starts[1:] = np.cumsum([len(r) for r in rows])
    flat = np.fromiter((i for r in rows for i in r), np.int64, count=n)
    return flat, starts


class PackedSource:
    """Row i of a plan: the list of its records (raw bytes) from the underlying random-access source."""

    def __init__(self, source, order: np.ndarray, starts: np.ndarray):
        self.source, self.order, self.starts = source, order, starts

    def __len__(self) -> int:
        return len(self.starts) - 1

    def __repr__(self) -> str:
        # grain checks a restored iterator's source by its repr: a state taken over another plan is refused.
        digest = hashlib.sha256(self.order.tobytes() + self.starts.tobytes()).hexdigest()[:12]
        return f"PackedSource({self.source!r}, rows={len(self)}, plan={digest})"

    def __getitem__(self, i: int) -> list:
        return [self.source[int(j)] for j in self.order[self.starts[i]:self.starts[i + 1]]]

    def __getitems__(self, rows) -> list[list]:
        """Several rows with one batched read of all their records (input_pipeline.read_many)."""
        from albert_jax.data.input_pipeline import read_many  # noqa: PLC0415  heavy: grain, jax

        members = [self.records_of(int(i)) for i in rows]
        flat = read_many(self.source, [int(j) for m in members for j in m])
        out, at = [], 0
        for m in members:
            out.append(flat[at:at + len(m)])
            at += len(m)
        return out

    def records_of(self, i: int) -> np.ndarray:
        return self.order[self.starts[i]:self.starts[i + 1]]


def pack_records(records: list[dict], max_seq_length: int, max_predictions: int, max_examples: int) -> dict:
    """One row from decoded records (records.decode_record's arrays): the BATCH_KEYS, packed, plus pack_ids,
    position_ids, cls_positions and next_sentence_weights. `next_sentence_labels` becomes [max_examples]."""
    S, P, K = max_seq_length, max_predictions, max_examples
    if len(records) > K:
        raise ValueError(f"{len(records)} records for one row of at most {K} (data.packing_max_examples)")
    out = {name: np.zeros(S, np.int32) for name in ("input_ids", "segment_ids", "pack_ids", "position_ids")}
    out.update(masked_lm_positions=np.zeros(P, np.int32), masked_lm_ids=np.zeros(P, np.int32),
               masked_lm_weights=np.zeros(P, np.float32), next_sentence_labels=np.zeros(K, np.int32),
               next_sentence_weights=np.zeros(K, np.float32), cls_positions=np.zeros(K, np.int32))
    off = p = 0
    for j, rec in enumerate(records):
        n, k = int(np.sum(rec["input_mask"])), int(np.sum(rec["masked_lm_weights"] > 0))
        if off + n > S or p + k > P:
            raise ValueError(f"records of {off + n} tokens and {p + k} predictions do not fit one row of {S} "
                             f"tokens and {P} predictions")
        out["input_ids"][off:off + n] = rec["input_ids"][:n]
        out["segment_ids"][off:off + n] = rec["segment_ids"][:n]
        out["pack_ids"][off:off + n] = j + 1
        out["position_ids"][off:off + n] = np.arange(n)
        out["masked_lm_positions"][p:p + k] = np.asarray(rec["masked_lm_positions"][:k]) + off
        out["masked_lm_ids"][p:p + k] = rec["masked_lm_ids"][:k]
        out["masked_lm_weights"][p:p + k] = rec["masked_lm_weights"][:k]
        out["next_sentence_labels"][j] = rec["next_sentence_labels"]
        out["next_sentence_weights"][j] = 1.0
        out["cls_positions"][j] = off
        off, p = off + n, p + k
    out["input_mask"] = (out["pack_ids"] > 0).astype(np.int32)
    return out


def padding_share(tokens: np.ndarray, rows: int, max_seq_length: int) -> float:
    """The share of row positions that hold no real token."""
    return 1.0 - float(np.sum(tokens)) / (rows * max_seq_length)
