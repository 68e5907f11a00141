"""The on-disk format of pretraining instances: one compact binary record per instance in ArrayRecord shards.

A 20-byte header (magic "ALBP", version, max_seq_length L, max_predictions P, token count n, prediction count k,
label), then input_ids int32[n], masked_lm_ids int32[k], masked_lm_positions uint16[k], segment_ids uint8[n],
token_boundary uint8[n]: about 3.2 KB for a 512-token instance. `decode_record` restores the official fixed-shape
features (padding, input_mask, masked_lm_weights are implied by n and k).
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Iterator

import numpy as np
from array_record.python.array_record_module import ArrayRecordReader

FEATURES = ("input_ids", "input_mask", "segment_ids", "token_boundary", "masked_lm_positions", "masked_lm_ids",
            "masked_lm_weights", "next_sentence_labels")


_MAGIC, _VERSION = b"ALBP", 1
_HEADER = struct.Struct("<4sBxHHHHB5x")  # magic, version, L, P, tokens, predictions, label: 20 bytes


def encode_record(rec: dict) -> bytes:
    """Compact fixed layout: header | input_ids i32[n] | masked_lm_ids i32[k] | positions u16[k] |
    segment_ids u8[n] | token_boundary u8[n]; n = tokens before padding, k = predictions."""
    L, P = len(rec["input_ids"]), len(rec["masked_lm_positions"])
    n, k = int(rec["input_mask"].sum()), int(rec["masked_lm_weights"].sum())
    header = _HEADER.pack(_MAGIC, _VERSION, L, P, n, k, int(rec["next_sentence_labels"]))
    return b"".join((header, rec["input_ids"][:n].astype("<i4").tobytes(),
                     rec["masked_lm_ids"][:k].astype("<i4").tobytes(),
                     rec["masked_lm_positions"][:k].astype("<u2").tobytes(),
                     rec["segment_ids"][:n].astype(np.uint8).tobytes(),
                     rec["token_boundary"][:n].astype(np.uint8).tobytes()))


def decode_record(data: bytes) -> dict:
    """The inverse of encode_record: fixed-shape arrays (int32; masked_lm_weights float32; label a scalar)."""
    magic, version, L, P, n, k, label = _HEADER.unpack_from(data)
    if magic != _MAGIC or version != _VERSION:
        raise ValueError(f"not an albert_jax pretraining record (magic {magic!r}, version {version})")
    parts, off = {}, _HEADER.size
    for name, dtype, count in (("input_ids", "<i4", n), ("masked_lm_ids", "<i4", k),
                               ("masked_lm_positions", "<u2", k), ("segment_ids", "u1", n),
                               ("token_boundary", "u1", n)):
        parts[name] = np.frombuffer(data, dtype, count, off)
        off += count * np.dtype(dtype).itemsize
    out = {}
    for name, size, count in (("input_ids", L, n), ("segment_ids", L, n), ("token_boundary", L, n),
                              ("masked_lm_positions", P, k), ("masked_lm_ids", P, k)):
        arr = np.zeros(size, np.int32)
        arr[:count] = parts[name]
        out[name] = arr
    out["input_mask"] = (np.arange(L) < n).astype(np.int32)
    out["masked_lm_weights"] = (np.arange(P) < k).astype(np.float32)
    out["next_sentence_labels"] = np.array(label, np.int32)
    return {name: out[name] for name in FEATURES}


def shard_paths(output_dir: str | os.PathLike) -> list[str]:
    """The finished ArrayRecord files of a directory written by create_pretraining_data, in order."""
    return sorted(str(p) for p in Path(output_dir).glob("part-*.array_record"))


def read_records(path: str | os.PathLike) -> Iterator[dict]:
    """Records of one ArrayRecord file, decoded. For training use grain.sources.ArrayRecordDataSource(shard_paths(d))
    and map decode_record."""
    reader = ArrayRecordReader(str(path))
    try:
        for start in range(0, reader.num_records(), 1024):
            for data in reader.read(list(range(start, min(start + 1024, reader.num_records())))):
                yield decode_record(data)
    finally:
        reader.close()
