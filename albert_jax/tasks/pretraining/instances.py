"""Documents -> ALBERT pretraining instances, following the official create_pretraining_data.py (reference §2.3).

Kept from the official code: one target length per document and pass (max_seq_length-3, or with short_seq_prob a
uniform draw in [2, max_seq_length-3]); sentences accumulate to the target and are cut into A/B at a random sentence
boundary; truncation removes from the longer side, front or back at random; whole-word n-gram masking with
p(n) ∝ 1/n, num_to_predict = min(max_predictions, max(1, round(len * masked_lm_prob))) counted over all non-pad
tokens, 80% [MASK] / 10% kept / 10% random; `token_boundary` and the official feature names (SOP label stored as
`next_sentence_labels`, 1 = swapped / random next).

Changed, on purpose:
* All randomness comes from one seeded numpy Generator per input shard (the official n-gram draw used the global
  np.random, so its output was not reproducible from --random_seed).
* SOP is pure swapping by default: a chunk holding a single sentence is split inside the sentence at a random word
  start and swapped with p=0.5. The official code gives such chunks a B from another document, labelled 1
  (google-research/albert#234): NSP negatives inside "SOP" data, which the paper's SOP does not have. That
  behaviour stays available as `single_sentence="random_document"`.
* Words and n-grams never cross [SEP] (officially a continuation piece right after [SEP] joins the last word of A,
  and n-grams run across segments). Random replacements are drawn from the non-special ids.
* Streaming: documents are read one at a time and each gets its dupe_factor passes at once (pass-major order and
  the in-memory shuffles of the official code need the whole corpus in memory, which is what made it need >1 TB on
  large corpora, albert#204). Shards are written in document order: shuffle when reading (grain reads ArrayRecord
  by random access). NSP-style negatives come from a reservoir sample of at most `nsp_buffer_docs` documents seen
  so far (filled ahead by as many), not from the whole corpus, so memory is bounded by 2*nsp_buffer_docs documents.
* Bad input: invalid UTF-8 is an error naming file and line; lines over 100k characters (not sentences) are
  skipped, counted, and end the document they sit in; empty files are counted and give an empty shard.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import multiprocessing
import os
import sys
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
# Now, not at the first shard's seed: numpy loads np.random lazily, and its Cython modules discard an exception raised
# while they register with collections.abc, so a Ctrl-C that landed in that import, just after the first output file
# was opened, was lost and the command ran to the end (tests/test_cli.py's Ctrl-C test: 4 runs in 36 under load).
import numpy.random  # noqa: F401
from array_record.python.array_record_module import ArrayRecordWriter

# The record format lives in its own module; re-exported here because callers think in "pretraining data".
from albert_jax.tasks.pretraining.records import (FEATURES, _VERSION, decode_record, encode_record,  # noqa: F401
                                            read_records, shard_paths)
from albert_jax.data.tokenization import CLS_ID, MASK_ID, NUM_SPECIAL_IDS, SEP_ID, Tokenizer, iter_lines, load_tokenizer
from albert_jax.data.files import expand_inputs
from albert_jax.configs.schema import MASKING, SENTENCE_TASKS, ZH_MASKING
from albert_jax.data.zh_segment import Segmenter


@dataclasses.dataclass(frozen=True)
class SpecialIds:
    """The ids records are built from: [CLS], [SEP], [MASK], and the first id MLM's random replacements may draw
    (they come from [replace_low, vocab_size)). The default is our SentencePiece layout; a WordPiece vocabulary
    has its own (BERT-Chinese: 101, 102, 103 and 104)."""
    cls: int = CLS_ID
    sep: int = SEP_ID
    mask: int = MASK_ID
    replace_low: int = NUM_SPECIAL_IDS

    @classmethod
    def of(cls, tokenizer) -> "SpecialIds":
        return cls(tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id, tokenizer.replace_low)


@dataclasses.dataclass(frozen=True)
class PretrainingConfig:
    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    dupe_factor: int = 40
    task: str = "sop"               # sop: swap A/B with p=0.5 | nsp: B from another document with p=0.5 | none
    ngram: int = 3
    favor_shorter_ngram: bool = True
    single_sentence: str = "split"  # SOP chunk of one sentence: "split" it (default) | "random_document" (official)
    masking: str = "static"         # static: masks written to disk | dynamic: written unmasked, see DynamicMasking
    nsp_buffer_docs: int = 1000

    def __post_init__(self):
        def bad(field, allowed):
            raise ValueError(f"PretrainingConfig.{field}={getattr(self, field)!r}; allowed: {allowed}")
        if not 5 <= self.max_seq_length <= 65535:  # 5: [CLS] A [SEP] B [SEP]; 65535: the record format
            bad("max_seq_length", "5..65535")
        if not 1 <= self.max_predictions_per_seq <= self.max_seq_length:
            bad("max_predictions_per_seq", "1..max_seq_length")
        if not 0 <= self.masked_lm_prob <= 1:
            bad("masked_lm_prob", "0..1")
        if not 0 <= self.short_seq_prob <= 1:
            bad("short_seq_prob", "0..1")
        if self.dupe_factor < 1:
            bad("dupe_factor", ">= 1")
        if self.task not in SENTENCE_TASKS:
            bad("task", SENTENCE_TASKS)
        if self.ngram < 1:
            bad("ngram", ">= 1")
        if self.single_sentence not in ("split", "random_document"):
            bad("single_sentence", ("split", "random_document"))
        if self.masking not in MASKING:
            bad("masking", MASKING)
        if self.nsp_buffer_docs < 1:
            bad("nsp_buffer_docs", ">= 1")

    @classmethod
    def from_data(cls, d, **fields) -> "PretrainingConfig":
        """The instances a pretraining config's data section `d` asks for: the one mapping of data.* onto these
        fields (the trainer's data and the validator both use it); `fields` replaces some (a held-out set:
        dupe_factor=1, its own task, static masking)."""
        mapped = dict(max_seq_length=d.max_seq_length, max_predictions_per_seq=d.max_predictions_per_seq,
                      masked_lm_prob=d.masked_lm_prob, short_seq_prob=d.short_seq_prob, ngram=d.ngram,
                      dupe_factor=d.dupe_factor, task=d.task, masking=d.masking)
        return cls(**{**mapped, **fields})

    @property
    def needs_other_documents(self) -> bool:
        return self.task == "nsp" or (self.task == "sop" and self.single_sentence == "random_document")


# ---------------------------------------------------------------- masking (static and dynamic share this code)

def _ngram_cdf(ngram: int, favor_shorter: bool) -> np.ndarray:
    p = 1.0 / np.arange(1, ngram + 1)
    if not favor_shorter:
        p = p[::-1]
    return np.cumsum(p / p.sum())


def _select_ngrams(ids, token_boundary, num_to_predict, rng, ngram=3, favor_shorter_ngram=True, trace=None,
                   specials: SpecialIds = SpecialIds()):
    """Whole-word n-gram spans (start, end) to mask, the official way: words in random order, n ~ p(n), shorter n
    when over budget, skip overlaps. `trace` (a list) gets (words in the drawn n-gram, eligible) per draw, where
    eligible means no budget fallback or segment end could have shortened it (decided before the draw)."""
    special = (ids == specials.cls) | (ids == specials.sep)
    prev_special = np.concatenate(([True], special[:-1]))
    starts = np.flatnonzero(((token_boundary == 1) | prev_special) & ~special)
    if len(starts) == 0:
        return []
    stops = np.flatnonzero(special | np.concatenate(([False], token_boundary[1:] == 1)))
    stops = np.append(stops, len(ids))
    ends = stops[np.searchsorted(stops, starts, side="right")]
    segment = np.cumsum(special)[starts]
    seg_end = np.searchsorted(segment, segment, side="right")  # words are sorted, so segments are contiguous
    starts, ends, seg_end = starts.tolist(), ends.tolist(), seg_end.tolist()
    nw = len(starts)
    draws = np.searchsorted(_ngram_cdf(ngram, favor_shorter_ngram), rng.random(nw), side="right") + 1
    covered = bytearray(len(ids))
    spans, count = [], 0
    for w, n in zip(rng.permutation(nw).tolist(), draws.tolist()):
        if count >= num_to_predict:
            break
        if trace is not None:
            full = w + ngram <= seg_end[w] and count + ends[w + ngram - 1] - starts[w] <= num_to_predict
        last = min(w + n, seg_end[w])
        while last - w > 1 and count + ends[last - 1] - starts[w] > num_to_predict:
            last -= 1
        if trace is not None:
            trace.append((last - w, full))
        s, e = starts[w], ends[last - 1]
        if count + e - s > num_to_predict or any(covered[s:e]):
            continue
        covered[s:e] = b"\x01" * (e - s)
        spans.append((s, e))
        count += e - s
    return spans


def mask_record(record: dict, rng: np.random.Generator, *, vocab_size: int, max_predictions_per_seq: int = 20,
                masked_lm_prob: float = 0.15, ngram: int = 3, favor_shorter_ngram: bool = True,
                trace: list | None = None, specials: SpecialIds = SpecialIds()) -> dict:
    """Mask an unmasked record (its `input_ids` hold the original ids): returns a new record with masked
    `input_ids` and the `masked_lm_*` features. [CLS], [SEP] and padding are never candidates."""
    ids_all = np.asarray(record["input_ids"])
    n = int(np.asarray(record["input_mask"]).sum())
    ids = ids_all[:n]
    num_to_predict = min(max_predictions_per_seq, max(1, round(n * masked_lm_prob)))  # official: len incl. specials
    spans = _select_ngrams(ids, np.asarray(record["token_boundary"])[:n], num_to_predict, rng, ngram,
                           favor_shorter_ngram, trace, specials)
    out = dict(record)
    positions = np.array(sorted(i for s, e in spans for i in range(s, e)), dtype=np.int32)
    k = len(positions)
    if k > max_predictions_per_seq:
        raise ValueError(f"max_predictions_per_seq={max_predictions_per_seq} < {k} masked positions")
    new_ids = ids_all.astype(np.int32, copy=True)
    u = rng.random(k)
    new_ids[positions[u < 0.8]] = specials.mask
    rand = positions[u >= 0.9]  # 0.8 <= u < 0.9 keeps the original token
    new_ids[rand] = rng.integers(specials.replace_low, vocab_size, size=len(rand))
    out["input_ids"] = new_ids
    for name, dtype, values in (("masked_lm_positions", np.int32, positions), ("masked_lm_ids", np.int32,
                                ids[positions]), ("masked_lm_weights", np.float32, np.ones(k))):
        arr = np.zeros(max_predictions_per_seq, dtype)
        arr[:k] = values
        out[name] = arr
    return out


class DynamicMasking:
    """Picklable `fn(record, rng)` for grain: `MapDataset.random_map(DynamicMasking(...))` re-draws the masks
    every time a record is read (apply it after `repeat()` so each epoch's index, hence rng, differs)."""

    def __init__(self, vocab_size: int, max_predictions_per_seq: int = 20, masked_lm_prob: float = 0.15,
                 ngram: int = 3, favor_shorter_ngram: bool = True, specials: SpecialIds = SpecialIds()):
        self.kwargs = dict(vocab_size=vocab_size, max_predictions_per_seq=max_predictions_per_seq,
                           masked_lm_prob=masked_lm_prob, ngram=ngram, favor_shorter_ngram=favor_shorter_ngram,
                           specials=specials)

    def __call__(self, record: dict, rng: np.random.Generator) -> dict:
        return mask_record(record, rng, **self.kwargs)

    random_map = __call__  # the grain RandomMapTransform method name


# ---------------------------------------------------------------- segment pairs

def truncate_seq_pair(a: np.ndarray, b: np.ndarray, max_num_tokens: int, rng: np.random.Generator):
    """The official rule (one token at a time from the longer side, ties from B, front or back with p=1/2) in
    closed form: the counts removed per side are deterministic, only the front/back split is random."""
    excess = len(a) + len(b) - max_num_tokens
    if excess <= 0:
        return a, b
    gap = len(a) - len(b)
    ra = min(excess, gap) if gap > 0 else 0
    rb = min(excess, -gap) if gap < 0 else 0
    rest = excess - ra - rb  # now equal lengths: removals alternate B, A, B, ...
    rb, ra = rb + (rest + 1) // 2, ra + rest // 2
    fa, fb = rng.binomial(ra, 0.5), rng.binomial(rb, 0.5)
    return a[fa:len(a) - (ra - fa)], b[fb:len(b) - (rb - fb)]


class DocumentReservoir:
    """A uniform sample (Algorithm R) of at most `capacity` documents, the pool for random-document B segments."""

    def __init__(self, capacity: int):
        self.capacity, self.seen = capacity, 0
        self.ids: list[int] = []
        self.docs: list[list[np.ndarray]] = []

    def __len__(self):
        return len(self.docs)

    def add(self, doc_id: int, doc, rng: np.random.Generator) -> None:
        if len(self.docs) < self.capacity:
            self.ids.append(doc_id)
            self.docs.append(doc)
        else:
            j = int(rng.integers(0, self.seen + 1))
            if j < self.capacity:
                self.ids[j], self.docs[j] = doc_id, doc
        self.seen += 1

    def sample_other(self, doc_id: int, rng: np.random.Generator):
        """A random document other than `doc_id`, or None if the pool holds no other."""
        others = len(self.docs) - (doc_id in self.ids)
        if others <= 0:
            return None
        k = int(rng.integers(0, others))
        for i, d in enumerate(self.ids):
            if d == doc_id:
                continue
            if k == 0:
                return self.docs[i]
            k -= 1


def _record(a, b, label, cfg: PretrainingConfig, word_start: np.ndarray, vocab_size: int,
            specials: SpecialIds) -> dict:
    L, P, la, lb = cfg.max_seq_length, cfg.max_predictions_per_seq, len(a), len(b)
    n = la + lb + 3
    ids = np.zeros(L, np.int32)
    ids[0], ids[la + 1], ids[n - 1] = specials.cls, specials.sep, specials.sep
    ids[1:la + 1], ids[la + 2:n - 1] = a, b
    mask, seg, boundary = np.zeros(L, np.int32), np.zeros(L, np.int32), np.zeros(L, np.int32)
    mask[:n], seg[la + 2:n] = 1, 1
    boundary[:n] = word_start[ids[:n]]
    boundary[[0, la + 1, n - 1]] = 1  # the official code marks [CLS]/[SEP] as boundaries
    ids[:n] = np.where(ids[:n] >= vocab_size, ids[:n] - vocab_size, ids[:n])  # a word's later characters (below)
    return dict(input_ids=ids, input_mask=mask, segment_ids=seg, token_boundary=boundary,
                masked_lm_positions=np.zeros(P, np.int32), masked_lm_ids=np.zeros(P, np.int32),
                masked_lm_weights=np.zeros(P, np.float32), next_sentence_labels=np.array(label, np.int32))


def instances_from_document(document: list[np.ndarray], rng: np.random.Generator, cfg: PretrainingConfig,
                            word_start: np.ndarray, *, doc_id: int = 0, others: DocumentReservoir | None = None,
                            stats: Counter | None = None, vocab_size: int | None = None,
                            specials: SpecialIds = SpecialIds()) -> list[dict]:
    """One pass over one document (a list of id arrays, one per sentence): unmasked records.

    With `vocab_size` V given, an id i + V in a sentence is token i marked as a word's later character (segmented
    Chinese, data/zh_segment.py): `word_start` then has 2V entries, the last V of them False, and the records hold
    i itself."""
    stats = Counter() if stats is None else stats
    vocab_size = len(word_start) if vocab_size is None else vocab_size
    max_num_tokens = cfg.max_seq_length - 3
    target = max_num_tokens
    if rng.random() < cfg.short_seq_prob:
        target = int(rng.integers(2, max_num_tokens, endpoint=True))
        stats["short_targets"] += 1
    stats["document_passes"] += 1
    out, chunk, length, i = [], [], 0, 0
    while i < len(document):
        chunk.append(document[i])
        length += len(document[i])
        if i == len(document) - 1 or length >= target:
            a_end = 1 if len(chunk) < 2 else int(rng.integers(1, len(chunk) - 1, endpoint=True))
            a, b, label = np.concatenate(chunk[:a_end]), None, 0
            single = len(chunk) == 1
            stats["single_sentence_chunks"] += single
            if (cfg.task == "nsp" and (single or rng.random() < 0.5)) or \
                    (cfg.task == "sop" and single and cfg.single_sentence == "random_document"):
                other = others.sample_other(doc_id, rng) if others is not None else None
                if other is None:  # a one-document pool: the official code then falls back to the same document
                    other = document
                    stats["negatives_from_same_document"] += 1
                pieces, need, j = [], target - len(a), int(rng.integers(0, len(other)))
                while j < len(other) and sum(map(len, pieces)) < max(need, 1):
                    pieces.append(other[j])
                    j += 1
                b, label = np.concatenate(pieces), 1
                stats["random_document_negatives"] += 1
                i -= len(chunk) - a_end  # put the unused sentences back, as the official code does
            elif single:
                if len(a) < 2:
                    stats["unsplittable_chunks_skipped"] += 1
                    chunk, length = [], 0
                    i += 1
                    continue
                cuts = np.flatnonzero(word_start[a[1:]]) + 1  # prefer B to start at a word
                cut = int(rng.choice(cuts)) if len(cuts) else int(rng.integers(1, len(a)))
                a, b = a[:cut], a[cut:]
            else:
                b = np.concatenate(chunk[a_end:])
            if cfg.task == "sop" and label == 0 and rng.random() < 0.5:
                a, b, label = b, a, 1
            a, b = truncate_seq_pair(a, b, max_num_tokens, rng)
            out.append(_record(a, b, label, cfg, word_start, vocab_size, specials))
            chunk, length = [], 0
        i += 1
    return out


def create_instances(documents: Iterable[list[np.ndarray]], cfg: PretrainingConfig, word_start: np.ndarray,
                     rng: np.random.Generator, stats: Counter | None = None, *,
                     specials: SpecialIds = SpecialIds()) -> Iterator[dict]:
    """Stream records for `documents` (each a list of id arrays), dupe_factor passes per document, masked when
    cfg.masking == "static". Holds at most 2*nsp_buffer_docs documents when negatives need other documents.
    A sentence id i + len(word_start) is token i as a word's later character (`read_documents` with a segmenter)."""
    stats = Counter() if stats is None else stats
    vocab_size = len(word_start)
    word_start = np.concatenate([word_start, np.zeros_like(word_start)])
    reservoir = DocumentReservoir(cfg.nsp_buffer_docs) if cfg.needs_other_documents else None
    docs = iter(documents)
    pending: deque = deque()
    next_id = 0

    def admit() -> bool:
        nonlocal next_id
        doc = next(docs, None)
        if doc is None:
            return False
        if reservoir is not None:
            reservoir.add(next_id, doc, rng)
        pending.append((next_id, doc))
        next_id += 1
        return True

    lookahead = cfg.nsp_buffer_docs if reservoir is not None else 1
    while len(pending) < lookahead and admit():
        pass
    while pending:
        doc_id, doc = pending.popleft()
        for _ in range(cfg.dupe_factor):
            for rec in instances_from_document(doc, rng, cfg, word_start, doc_id=doc_id, others=reservoir,
                                               stats=stats, vocab_size=vocab_size, specials=specials):
                if cfg.masking == "static":
                    rec = mask_record(rec, rng, vocab_size=vocab_size,
                                      max_predictions_per_seq=cfg.max_predictions_per_seq,
                                      masked_lm_prob=cfg.masked_lm_prob, ngram=cfg.ngram,
                                      favor_shorter_ngram=cfg.favor_shorter_ngram, specials=specials)
                stats["instances"] += 1
                yield rec
        admit()


def read_documents(path: str | os.PathLike, tokenizer: Tokenizer, stats: Counter | None = None,
                   segmenter=None) -> Iterator[list[np.ndarray]]:
    """Documents of a file in the official format: one sentence per line, blank lines between documents.

    With a `segmenter` (data/zh_segment.py) a token that the tokenizer starts a word with but that does not start a
    segmented word is marked as the word's later character: its id i becomes i + vocab_size (create_instances)."""
    stats = Counter() if stats is None else stats
    skipped: list[int] = []
    doc: list[np.ndarray] = []
    prev = lines = 0
    for lineno, line in iter_lines(path, skipped=skipped):
        lines += 1
        broken = lineno != prev + 1  # a skipped over-long line: do not pair the sentences around it
        prev = lineno
        if (broken or not line.strip()) and doc:
            stats["documents"] += 1
            stats["one_sentence_documents"] += len(doc) == 1
            yield doc
            doc = []
        if not line.strip():
            continue
        if segmenter is None:
            ids = np.asarray(tokenizer.encode(line), np.int32)
        else:
            text, starts = segmenter(line)
            ids, offsets = tokenizer.encode_with_offsets(text)
            ids = np.asarray(ids, np.int32)
            later = tokenizer.word_start[ids] & ~np.isin(np.asarray(offsets), starts)
            ids = np.where(later, ids + tokenizer.vocab_size, ids).astype(np.int32)
            stats["word_later_tokens"] += int(later.sum())
        if len(ids):
            doc.append(ids)
            stats["sentences"] += 1
            stats["tokens"] += len(ids)
    if doc:
        stats["documents"] += 1
        stats["one_sentence_documents"] += len(doc) == 1
        yield doc
    if segmenter is not None:
        segmenter.check(path)
    if skipped:
        stats["long_lines_skipped"] += len(skipped)
        print(f"pretraining-data: {path}: skipped {len(skipped)} line(s) over 100000 characters (first: line "
              f"{skipped[0]}); is the file one sentence per line?", file=sys.stderr)
    if lines == 0 and not skipped:
        stats["empty_files"] += 1
        print(f"pretraining-data: {path} is empty; its shard has no records", file=sys.stderr)


def _shard_seed(seed: int, shard_index: int) -> np.random.Generator:
    # Each shard's stream depends only on (seed, shard index), so any number of workers writes identical shards.
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(shard_index,)))


def shard_records(shard_index: int, path, cfg: PretrainingConfig, seed: int, tokenizer, zh_masking: str = "char",
                  stats: Counter | None = None) -> Iterator[dict]:
    """The records of one input file (one shard), in order: a function of (file, config, seed, shard index,
    tokenizer) alone, so every way of running it (one process, a pool, a Beam pipeline) writes the same records."""
    docs = read_documents(path, tokenizer, stats, None if zh_masking == "char" else Segmenter(zh_masking))
    yield from create_instances(docs, cfg, tokenizer.word_start, _shard_seed(seed, shard_index), stats,
                                specials=SpecialIds.of(tokenizer))


def _create_shard(task) -> dict:
    shard_index, num_shards, path, output_dir, cfg, seed, tokenizer, per_file, zh_masking = task
    stem = f"part-{shard_index:05d}-of-{num_shards:05d}"
    # The writer keeps ~140 bytes of index per record until close, so a shard rolls over to a new file every
    # `per_file` records to keep memory bounded. All files of a shard are renamed only once all are complete.
    files: list[tuple[Path, Path]] = []
    stats = Counter(documents=0, instances=0)
    writer, in_file = None, 0
    try:
        for rec in itertools.chain([None], shard_records(shard_index, path, cfg, seed, tokenizer, zh_masking, stats)):
            if writer is None or in_file == per_file:
                if writer is not None:
                    writer.close()
                final = Path(output_dir) / f"{stem}-{len(files):04d}.array_record"
                files.append((final.with_name(f".{final.name}.tmp-{os.getpid()}"), final))
                writer, in_file = ArrayRecordWriter(str(files[-1][0]), "group_size:1"), 0  # cheap random access
            if rec is not None:
                writer.write(encode_record(rec))
                in_file += 1
        writer.close()
        for tmp, final in files:
            os.replace(tmp, final)
    except BaseException:
        if writer is not None:
            writer.close()
        for tmp, _ in files:
            tmp.unlink(missing_ok=True)
        raise
    return dict(shard=stem, files=[f.name for _, f in files], input=str(path), **stats)


def _remove_shards(output_dir: Path, shards: list[dict]) -> None:
    """After a failed create: the shards it completed, and any shard's temporary file a stopped worker left, so the
    output directory holds no half-made dataset (files of an earlier create stay as they were)."""
    for s in shards:
        for name in s["files"]:
            (output_dir / name).unlink(missing_ok=True)
    for tmp in output_dir.glob(".part-*.array_record.tmp-*"):
        tmp.unlink(missing_ok=True)


def create_pretraining_data(input_files: list[str | os.PathLike], tokenizer: Tokenizer | str | os.PathLike,
                            output_dir: str | os.PathLike, cfg: PretrainingConfig = PretrainingConfig(), *,
                            seed: int = 12345, workers: int = 1, records_per_file: int = 100_000,
                            zh_masking: str = "char") -> dict:
    """Write one shard per input file (processed in parallel by `workers` processes), each as ArrayRecord files
    part-SSSSS-of-NNNNN-FFFF.array_record of at most `records_per_file` records, and `pretraining_data.json`
    (config, counts); returns that summary. Split big inputs into ~100 MB files for parallelism.

    `zh_masking` (data/zh_segment.py): char (the tokenizer's words), jieba, or gold (input files whose words are
    separated by spaces); the last two need a tokenizer with offsets (WordPiece)."""
    if not input_files:
        raise ValueError("no input files given")
    input_files = expand_inputs(input_files, "pretraining-data")  # local paths, or URLs through Beam (data/files.py)
    if isinstance(tokenizer, (str, os.PathLike)):
        tokenizer = load_tokenizer(tokenizer)
    if zh_masking not in ZH_MASKING:
        raise ValueError(f"zh_masking={zh_masking!r}; allowed: {', '.join(ZH_MASKING)}")
    if zh_masking != "char" and not hasattr(tokenizer, "encode_with_offsets"):
        raise ValueError(f"zh_masking={zh_masking} needs a WordPiece tokenizer (a vocab.txt: "
                         f"`albert-jax tokenizer train --kind wordpiece`); {tokenizer.name} is SentencePiece, "
                         "whose Chinese pieces span several characters: use zh_masking=char with it")
    created = not Path(output_dir).exists()  # a failed create removes the directory it made
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    tasks = [(i, len(input_files), f, str(output_dir), cfg, seed, tokenizer, records_per_file, zh_masking)
             for i, f in enumerate(input_files)]
    shards: list[dict] = []  # in input order, as each shard completes
    try:
        if workers <= 1 or len(tasks) == 1:
            shards.extend(_create_shard(t) for t in tasks)
        else:  # spawn: forking a process that already runs JAX/grain threads can deadlock
            with multiprocessing.get_context("spawn").Pool(min(workers, len(tasks))) as pool:
                shards.extend(pool.imap(_create_shard, tasks, chunksize=1))
        totals = Counter()
        for s in shards:
            totals.update({k: v for k, v in s.items() if isinstance(v, int)})
            totals["files"] += len(s["files"])
        if totals["instances"] == 0:
            raise ValueError(f"no pretraining instances from {', '.join(input_files)}: the files hold no text")
    except BaseException:
        _remove_shards(Path(output_dir), shards)
        if created:
            try:
                Path(output_dir).rmdir()  # only when empty: nothing of anyone else's goes
            except OSError:
                pass
        raise
    summary = dict(config=dataclasses.asdict(cfg), seed=seed, vocab_size=tokenizer.vocab_size, zh_masking=zh_masking,
                   tokenizer=tokenizer.name, record_format=f"albert_jax pretraining record v{_VERSION}",
                   totals=dict(totals), shards=shards)
    tmp = Path(output_dir) / ".pretraining_data.json.tmp"
    tmp.write_text(json.dumps(summary, indent=1) + "\n")
    os.replace(tmp, Path(output_dir) / "pretraining_data.json")
    return summary

