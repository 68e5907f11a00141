"""A reproducible sample of a corpus's sentences for tokenizer training, the same on every runner (issue 28).

SentencePiece samples `input_sentence_size` sentences itself, but only from what one process reads. For a corpus on
many machines the sample is drawn first: each sentence gets the key blake2b(seed, file index, line number), and the
sample is the `size` sentences with the smallest keys (a bottom-k sample: uniform without replacement, and a function
of the corpus and the seed alone), written in key order. `local_sample` draws it in one process;
tasks/pretraining/beam.sample_with_beam draws the same sample as a Beam pipeline (a combiner that keeps `size`
sentences per worker). Train on the result with `albert-jax tokenizer train --input sample.txt`.
"""
from __future__ import annotations

import hashlib
import heapq
import os
from collections.abc import Iterator

from albert_jax.data.files import expand_inputs
from albert_jax.data.tokenization import iter_lines


def sample_key(seed: int, file_index: int, line_no: int) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}:{file_index}:{line_no}".encode(), digest_size=8).digest(), "big")


def keyed_sentences(file_index: int, path: str, seed: int) -> Iterator[tuple[int, str]]:
    """(key, sentence) for every non-blank line of one file (UTF-8, errors named by file and line)."""
    for line_no, line in iter_lines(path):
        text = line.strip()
        if text:
            yield sample_key(seed, file_index, line_no), text


def local_sample(files, size: int, seed: int = 0) -> list[str]:
    if size < 1:
        raise ValueError(f"sample size {size}: at least 1")
    files = expand_inputs(files, "sample")  # local paths, or URLs through Beam's filesystems (data/files.py)
    keyed = (kv for i, f in enumerate(files) for kv in keyed_sentences(i, str(f), seed))
    return [text for _, text in heapq.nsmallest(size, keyed)]


def write_sample(sentences: list[str], path) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(s + "\n" for s in sentences)
    os.replace(tmp, path)
