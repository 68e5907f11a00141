"""Pretraining data for the trainer: corpus (TFDS builder) -> SentencePiece -> pretraining instances -> batches.

Every stage is cached under <cache>/pretrain/<corpus>/ keyed by what determines it, and each stage's output is
written under a temporary name and renamed when complete, so an interrupted preparation is redone, never trusted.
One process at a time prepares a corpus's stages (data/cache_lock.py): two sweeps started together on a fresh
machine would otherwise write the same temporary files at once.
Eval sets are built from the held-out text (validation and test splits) twice, once with SOP and once with NSP
pairs, so every model is measured on both (the paper's Table 5), whatever loss it trained with; each is read
balanced 50/50 (`PretrainData.eval_order`).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
from pathlib import Path

import grain
import numpy as np
from etils import epath

from albert_jax.data import input_pipeline
from albert_jax.data import tokenization
from albert_jax.tasks.pretraining import instances as ptd
from albert_jax.data import builders, cache_lock, fetch
from albert_jax.data.wordpiece import WordPieceTokenizer, train_wordpiece
from albert_jax.tasks.features import Features, eval_batches
from albert_jax.tasks.pretraining import packing
from albert_jax.tasks.pretraining.beam import TfdsRecords
from albert_jax.tasks.pretraining.task import BATCH_KEYS

log = logging.getLogger("albert_jax.pretrain")


def _preparing(root: Path):
    """The lock under which one process at a time builds the cached stages of the corpus at `root`."""
    return cache_lock.prepare_lock(root / ".prepare.lock", f"the pretraining data in {root}", log.warning)


def _write_official_format(source, path: Path, corpus: str = "", field: str = "text") -> int:
    """Documents as the official input format: one sentence per line, a blank line between documents. `field`
    "segmented" writes a segmented corpus's words separated by spaces instead (zh_masking=gold).

    NUL bytes (a catalog corpus's binary debris; a user's text_corpus refuses them with file:line when it is
    read) are removed and counted, never written into the training text."""
    tmp = path.with_name(path.name + ".tmp")
    n, nul_docs, nuls = 0, 0, 0
    with open(tmp, "w", encoding="utf-8") as f:
        for i in range(len(source)):
            text = source[i][field]
            text = text.decode("utf-8") if isinstance(text, bytes) else text
            if "\x00" in text:
                nul_docs, nuls = nul_docs + 1, nuls + text.count("\x00")
                text = text.replace("\x00", "")
            if text.strip():
                f.write(text.strip() + "\n\n")
                n += 1
    os.replace(tmp, path)
    if nuls:
        log.warning("corpus %s: removed %d NUL byte(s) from %d document(s) of %s", corpus, nuls, nul_docs,
                    path.name)
    return n


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:12]


def _instances(text: Path, tokenizer, out_dir: Path, cfg: ptd.PretrainingConfig, seed: int,
               zh_masking: str = "char") -> list[str]:
    with _preparing(out_dir.parent):
        if not (out_dir / "pretraining_data.json").exists():
            ptd.create_pretraining_data([text], tokenizer, out_dir, cfg, seed=seed, workers=1, zh_masking=zh_masking)
    return ptd.shard_paths(out_dir)


def _select(record: dict) -> dict:
    return {k: record[k] for k in BATCH_KEYS}


TFDS_PREFIX = "tfds:"  # a "shard" naming a Beam-built TFDS directory (tasks/pretraining/beam.py) instead of files


def records_source(shards: list[str]):
    """A random-access source of our record bytes: our ArrayRecord shards, or a Beam-built TFDS directory."""
    if len(shards) == 1 and shards[0].startswith(TFDS_PREFIX):
        return TfdsRecords(shards[0][len(TFDS_PREFIX):])
    return grain.sources.ArrayRecordDataSource(shards)


@dataclasses.dataclass
class PretrainData:
    tokenizer: tokenization.Tokenizer  # or data.wordpiece.WordPieceTokenizer (data.tokenizer_kind)
    train_shards: list[str]
    eval_shards: dict[str, list[str]]
    masking: str
    masking_options: dict
    summary: dict
    # data.packing: {max_seq_length, max_examples, max_predictions, seed}; None trains on unpacked rows.
    packing: dict | None = None
    eval_seed: int = 0  # chooses and orders the balanced eval examples (eval_order)
    _eval_orders: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    @property
    def eval_tasks(self) -> list[str]:
        return list(self.eval_shards)

    @property
    def eval_sets(self) -> dict:
        """{'sop': fn(batch_size, sharding) -> batches, 'nsp': ...}: every model is measured on both."""
        return {task: (lambda b, sh, task=task: self.eval_iterator(task, b, sh)) for task in self.eval_shards}

    def check_vocab(self, model_vocab_size: int) -> None:
        tokenization.check_vocab_matches(self.tokenizer, model_vocab_size)

    def _transform(self):
        if self.masking == "static":
            return lambda data: _select(ptd.decode_record(data))
        masker = ptd.DynamicMasking(self.vocab_size, **self.masking_options, specials=ptd.SpecialIds.of(self.tokenizer))
        return lambda data, rng: _select(masker(ptd.decode_record(data), rng))  # fresh masks every epoch

    def packed_source(self, source):
        """The rows of the packing plan over `source` (the train records), planned once from their sizes."""
        p = self.packing
        sizes = packing.record_sizes(self.train_shards, source).astype(np.int64)
        if self.masking == "dynamic":  # records hold no masks yet: the most mask_record can draw for each
            m = self.masking_options
            sizes[:, 1] = np.minimum(m["max_predictions_per_seq"],
                                     np.maximum(1, np.round(sizes[:, 0] * m["masked_lm_prob"])))
        order, starts = packing.plan_rows(sizes[:, 0], sizes[:, 1], p["max_seq_length"], p["max_examples"],
                                          p["max_predictions"], seed=p["seed"])
        log.info("packing: %d records in %d rows (padding %.1f%% -> %.1f%%)", len(sizes), len(starts) - 1,
                 100 * packing.padding_share(sizes[:, 0], len(sizes), p["max_seq_length"]),
                 100 * packing.padding_share(sizes[:, 0], len(starts) - 1, p["max_seq_length"]))
        return packing.PackedSource(source, order, starts)

    def _packed_transform(self):
        p = self.packing
        args = (p["max_seq_length"], p["max_predictions"], p["max_examples"])
        if self.masking == "static":
            return lambda items: packing.pack_records([ptd.decode_record(d) for d in items], *args)
        masker = ptd.DynamicMasking(self.vocab_size, **self.masking_options, specials=ptd.SpecialIds.of(self.tokenizer))
        # One rng per row and epoch (grain's), drawn from in record order: reproducible, fresh every epoch.
        return lambda items, rng: packing.pack_records([masker(ptd.decode_record(d), rng) for d in items], *args)

    def train_iterator(self, batch_size: int, sharding, seed: int):
        source = records_source(self.train_shards)
        transform = self._transform()
        if self.packing:
            source, transform = self.packed_source(source), self._packed_transform()
        kwargs = {"random_transform_fn" if self.masking == "dynamic" else "transform_fn": transform}
        return input_pipeline.make_batch_iterator(source, global_batch_size=batch_size, seed=seed, shuffle=True,
                                                  num_epochs=None, sharding=sharding, **kwargs)

    def eval_order(self, task: str) -> np.ndarray:
        """The indices of eval set `task` that are measured, in the order they are read: balanced (issue 24).

        Built as the official code builds them, the held-out NSP pairs are not 50/50: a document of one chunk always
        gets a random B, so a constant prediction scored 39.1% or 60.9% and "chance" read as neither. The examples
        kept are an equal number of each label, chosen and ordered by a seeded shuffle (`balanced_order`): chance
        is 50% on both sets, and a capped evaluation (train.eval_batches) reads a random sample of the whole
        split, not its first documents. The training instances are untouched."""
        if task not in self._eval_orders:
            source = records_source(self.eval_shards[task])
            labels = np.array([int(ptd.decode_record(source[i])["next_sentence_labels"])
                               for i in range(len(source))], dtype=np.int64)
            self._eval_orders[task] = balanced_order(labels, self.eval_seed)
        return self._eval_orders[task]

    def eval_iterator(self, task: str, batch_size: int, sharding):
        """The balanced eval set (`eval_order`), the last batch padded with weight-0 rows: a set smaller than one
        batch (a small corpus's validation split) is still measured, and every example counts once."""
        source = records_source(self.eval_shards[task])
        order = self.eval_order(task)

        def batches():
            for start in range(0, len(order), batch_size):
                rows = [_select(ptd.decode_record(source[int(i)])) for i in order[start:start + batch_size]]
                yield from eval_batches(Features.stack(task, rows), batch_size, sharding)
        return batches()


def balanced_order(labels: np.ndarray, seed: int) -> np.ndarray:
    """Indices of `labels` holding the same number of every label (the rarest label's count), in a seeded random
    order. Which examples of the commoner labels are dropped, and the order, depend on `seed` alone."""
    labels = np.asarray(labels)
    values, counts = np.unique(labels, return_counts=True)
    if len(values) < 2:
        raise ValueError(f"an eval set of {len(labels)} examples holds only label(s) {values.tolist()}: it cannot be "
                         "balanced; the held-out split is too small (add documents or raise data.held_out_fraction)")
    rng = np.random.default_rng(seed)
    keep = np.concatenate([rng.permutation(np.flatnonzero(labels == v))[:counts.min()] for v in values])
    return rng.permutation(keep)


def _corpus_source(d) -> tuple[Path, str, dict]:
    """(cache directory, TFDS name, builder arguments) of the data section's corpus."""
    cache = fetch.default_cache_dir()
    max_docs = d.max_docs or None
    source_kwargs, tag, tfds_name = {"max_docs": max_docs}, "", d.corpus
    if d.corpus.startswith("text_corpus"):
        # A user's own files in the official format; the cache key follows their names, sizes and times.
        paths = [p for p in (d.corpus_paths or "").split(",") if p]
        if not paths:
            raise ValueError(f"data.corpus={d.corpus!r} needs data.corpus_paths (comma-separated files in the "
                             "official format: one sentence per line, a blank line between documents)")
        for p in paths:
            if os.path.isdir(p):
                raise ValueError(f"data.corpus_paths: {p} is a directory; list its files instead (comma-separated)")
            if not os.path.isfile(p):
                raise FileNotFoundError(f"data.corpus_paths: {p} does not exist")
        held_out = d.held_out_fraction
        source_kwargs.update(paths=paths, splits=(("train", 1 - 2 * held_out), ("validation", held_out),
                                                  ("test", held_out)))
        tag = "-" + _digest([(os.path.abspath(p), os.path.getsize(p), os.path.getmtime(p)) for p in paths]
                            + [held_out])
        tfds_name = f"{d.corpus}_{tag[1:]}"  # TFDS caches by config name: a changed corpus gets a new one
    root = cache / "pretrain" / f"{d.corpus.replace('/', '_')}-{max_docs or 'all'}{tag}"
    return root, tfds_name, source_kwargs


def corpus_texts(d, splits=("train", "validation"), field: str = "text") -> dict[str, Path]:
    """The corpus splits of data section `d` as official-format text files (cached; built when missing); `field`
    "segmented" gives a segmented corpus's words, space-separated (`{split}.words.txt`, for zh_masking=gold).

    The validation split is the run's held-out text: pretraining evaluates on it, and the layer analysis
    (ablations/analysis.py) reads it."""
    root, tfds_name, source_kwargs = _corpus_source(d)
    with _preparing(root):
        texts = {}
        for split in splits:
            path = root / (f"{split}.txt" if field == "text" else f"{split}.words.txt")
            if not path.exists():
                try:
                    source = builders.load_source(tfds_name, split, cache_dir=fetch.default_cache_dir(),
                                                  **source_kwargs)
                except ValueError as e:
                    if "Unknown split" not in str(e):
                        raise ValueError(f"data.corpus={d.corpus!r}: {e}") from None
                    if not d.corpus.startswith("text_corpus"):
                        # A max_docs subset of our corpora can be too small for a split (People's Daily's first
                        # 100 documents have no validation split): say which knob gives it one.
                        subset = (f" in its first {d.max_docs} documents a source (data.max_docs); raise "
                                  "data.max_docs, or set 0 for every document") if d.max_docs else ""
                        raise ValueError(f"data.corpus={d.corpus!r} has no {split!r} split{subset}") from None
                    # Documents go to a split by a hash of their id: a small corpus can leave one split empty.
                    fix = ("lower data.held_out_fraction (or add documents)" if split == "train" else
                           "add documents or raise data.held_out_fraction (0.1 suits a small corpus)")
                    raise ValueError(f"data.corpus={d.corpus!r} has no documents in its {split!r} split "
                                     f"(data.held_out_fraction={d.held_out_fraction!r} of the documents, chosen by a "
                                     f"hash of their id, go to validation and as many to test); {fix}") from None
                if len(source) and field not in source[0]:
                    raise ValueError(f"data.corpus={d.corpus!r} holds no word segmentation (no {field!r} field): "
                                     "data.zh_masking=gold needs albert_pretrain_zh, whose People's Daily text is "
                                     "segmented by hand; use data.zh_masking=jieba or char")
                if _write_official_format(source, path, d.corpus, field) == 0:
                    raise ValueError(f"data.corpus={d.corpus!r}: its {split!r} split holds no text")
            texts[split] = path
        return texts


def tokenizer_kind(d) -> str:
    return d.tokenizer_kind


def tokenizer_model_path(d) -> Path:
    """The tokenizer file the data section `d` tokenizes with: data.spm_model (SentencePiece) or
    data.wordpiece_vocab (WordPiece, data.tokenizer_kind), or the one `corpus_tokenizer` trains and caches for the
    corpus; it need not exist yet."""
    case = "lower" if d.lower else "cased"
    if tokenizer_kind(d) == "wordpiece":
        return Path(d.wordpiece_vocab or _corpus_source(d)[0] / f"wordpiece-{d.vocab_size}-{case}" / "vocab.txt")
    if d.spm_model:
        return Path(d.spm_model)
    return _corpus_source(d)[0] / f"spm-{d.vocab_size}-{case}.model"


def corpus_tokenizer(d, texts: dict | None = None):
    """data.spm_model / data.wordpiece_vocab, or the tokenizer trained on the corpus's train text (cached by
    corpus, kind, vocab size and case; benchmarks use it too): SentencePiece, or a BERT-Chinese style WordPiece
    vocabulary with data.tokenizer_kind=wordpiece (docs/chinese.md)."""
    if tokenizer_kind(d) == "wordpiece":
        path = tokenizer_model_path(d)
        if d.wordpiece_vocab:
            return WordPieceTokenizer(path, lower=d.lower)
        with _preparing(_corpus_source(d)[0]):
            if not path.exists():  # trained in a temporary directory, renamed when complete
                tmp = path.parent.with_name(path.parent.name + ".tmp")
                shutil.rmtree(tmp, ignore_errors=True)
                train_wordpiece(tmp, [(texts or corpus_texts(d))["train"]], vocab_size=d.vocab_size, lower=d.lower)
                os.replace(tmp, path.parent)
        return WordPieceTokenizer(path, lower=d.lower)
    if d.spm_model:
        return tokenization.Tokenizer.load(d.spm_model)
    root = _corpus_source(d)[0]
    prefix = tokenizer_model_path(d).with_suffix("")
    with _preparing(root):
        if not Path(f"{prefix}.model").exists():
            texts = texts or corpus_texts(d)
            try:
                tokenization.train_tokenizer(str(prefix) + ".tmp", files=[texts["train"]], vocab_size=d.vocab_size,
                                             lower=d.lower, seed=d.seed)
            except tokenization.CorpusTooSmallError as e:  # the fix is a config field here, not a tokenizer flag
                raise tokenization.CorpusTooSmallError(
                    f"data.vocab_size={d.vocab_size}: the corpus {d.corpus} is too small for a tokenizer of that "
                    f"many pieces (it supports at most {e.supported}); --set data.vocab_size={e.supported} (or "
                    "fewer), give a tokenizer with data.spm_model, or train on more text") from None
            for ext in (".vocab", ".json", ".model"):  # .model last: its presence means complete
                os.replace(f"{prefix}.tmp{ext}", f"{prefix}{ext}")
    return tokenization.Tokenizer.load(f"{prefix}.model")


def heldout_text(d, texts: dict[str, Path]) -> Path:
    """The text the intrinsic eval sets are built from: the validation and test splits together, neither of which
    is trained on. The validation split alone (1% of the English mix, 18 documents) makes ~1,000 balanced SOP pairs,
    a standard error of 1.6 points; with the test split there are over 2,000 (issue 24 asks for SE <= 1.1). A
    corpus whose test split is empty (a tiny max_docs subset) uses its validation split alone."""
    try:
        test = corpus_texts(d, splits=("test",))["test"]
    except ValueError as e:
        log.info("held-out eval text: validation split only (%s)", e)
        return texts["validation"]
    path = texts["validation"].with_name("heldout.txt")
    with _preparing(path.parent):
        if not path.exists():
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(texts["validation"].read_bytes() + test.read_bytes())  # both end in a blank line
            os.replace(tmp, path)
    return path


def _read_instances(directory: str, field: str) -> tuple[dict, list[str]]:
    """(pretraining_data.json, shard paths) of a `pretraining-data create` output directory."""
    meta = epath.Path(directory) / "pretraining_data.json"  # TFDS's path type: a Beam build may sit in a bucket
    if not meta.is_file():
        raise ValueError(f"data.{field}={directory}: no pretraining_data.json there; point it at the --output-dir of "
                         "`albert-jax pretraining-data create`")
    summary = json.loads(meta.read_text(encoding="utf-8"))
    if summary.get("record_format") == "tfds":  # written by --runner beam
        return summary, [TFDS_PREFIX + summary["tfds_dir"]]
    return summary, ptd.shard_paths(Path(directory))


def masking_options(d) -> dict:
    """What dynamic masking (and the held-out sets' reading) takes from the data section `d`."""
    return dict(max_predictions_per_seq=d.max_predictions_per_seq, masked_lm_prob=d.masked_lm_prob, ngram=d.ngram)


def from_instances(d) -> PretrainData:
    """Pretraining on instances `pretraining-data create` wrote (data.instances), evaluated on a second such
    directory built from held-out text (data.eval_instances), with the SentencePiece model they were made with
    (data.spm_model). Every setting the records fix is checked against the data section, field by field."""
    if not d.eval_instances or not d.spm_model:
        raise ValueError("data.instances needs data.eval_instances (a second `pretraining-data create` over held-out "
                         "text, --task sop or nsp) and data.spm_model (the --spm-model both were made with)")
    tokenizer = tokenization.load_tokenizer(d.spm_model)
    train_meta, train = _read_instances(d.instances, "instances")
    eval_meta, evals = _read_instances(d.eval_instances, "eval_instances")
    expect = {"max_seq_length": d.max_seq_length, "max_predictions_per_seq": d.max_predictions_per_seq,
              "task": d.task, "masking": d.masking}
    for field, meta in (("instances", train_meta), ("eval_instances", eval_meta)):
        if meta.get("vocab_size") != tokenizer.vocab_size:
            raise ValueError(f"data.{field}={getattr(d, field)} was made with a vocabulary of {meta.get('vocab_size')}"
                             f"; data.spm_model={d.spm_model} has {tokenizer.vocab_size}: not the same tokenizer")
        for key, want in expect.items():
            if field == "eval_instances" and key in ("task", "masking"):
                continue  # the held-out set is read statically, and may pair sentences as SOP or NSP
            got = meta["config"].get(key)
            if got != want:
                raise ValueError(f"data.{field}={getattr(d, field)} holds instances with {key}={got!r}; set "
                                 f"data.{key}={got!r} (the records fix it) or rebuild them")
    eval_task = eval_meta["config"]["task"]
    if eval_task not in ("sop", "nsp") or eval_meta["config"].get("masking") != "static":
        raise ValueError(f"data.eval_instances={d.eval_instances}: built with --task {eval_task} --masking "
                         f"{eval_meta['config'].get('masking')}; held-out instances need --task sop or nsp and static "
                         "masking (their labels and masks are what is scored)")
    summary = {"corpus": f"instances:{Path(d.instances).resolve()}", "vocab_size": tokenizer.vocab_size,
               "train_shards": train, "eval_shards": {eval_task: evals}, "pretraining": train_meta["config"],
               "eval_instances": str(Path(d.eval_instances).resolve())}
    return PretrainData(tokenizer, train, {eval_task: evals}, d.masking, masking_options(d), summary, None,
                        eval_seed=d.seed + 1)


def prepare(config) -> PretrainData:
    d = config.data
    if d.instances:
        if d.packing:
            raise ValueError("data.packing with data.instances is not supported: build the instances with the "
                             "lengths you train at, or pretrain from a corpus (data.corpus) to pack")
        return from_instances(d)
    max_docs = d.max_docs or None
    if max_docs:  # said every time: a user's corpus read at the smoke scale is otherwise cut without a word
        log.warning("data.max_docs=%d: each source of %s keeps only its first %d documents; set data.max_docs=0 "
                    "to read every document", max_docs, d.corpus, max_docs)
    root = _corpus_source(d)[0]
    texts = corpus_texts(d)
    tokenizer = corpus_tokenizer(d, texts)
    train_cfg = ptd.PretrainingConfig.from_data(d)
    tok_id = tokenizer.fingerprint[:12]  # the instances depend on the exact model
    zh_masking = d.zh_masking
    key = _digest([dataclasses.asdict(train_cfg), d.seed, tok_id] + ([zh_masking] if zh_masking != "char" else []))
    train_text = corpus_texts(d, ("train",), field="segmented")["train"] if zh_masking == "gold" else texts["train"]
    train = _instances(train_text, tokenizer, root / f"train-{key}", train_cfg, d.seed, zh_masking)
    # The held-out sets are masked per character (the tokenizer's words) whatever the training masking: one
    # yardstick for every zh_masking row of a comparison.
    evals, heldout = {}, heldout_text(d, texts)
    for task in ("sop", "nsp"):
        cfg = ptd.PretrainingConfig.from_data(d, dupe_factor=1, task=task, masking="static")
        evals[task] = _instances(heldout, tokenizer,
                                 root / f"heldout-{task}-{_digest([dataclasses.asdict(cfg), tok_id])}", cfg,
                                 d.seed + 1)
    summary = {"corpus": d.corpus, "max_docs_per_source": max_docs, "vocab_size": tokenizer.vocab_size,
               "tokenizer": tokenizer_kind(d), "zh_masking": zh_masking, "train_shards": train, "eval_shards": evals,
               "pretraining": dataclasses.asdict(train_cfg)}
    packing = None
    if d.packing:
        packing = dict(max_seq_length=d.max_seq_length, max_examples=d.packing_max_examples,
                       max_predictions=d.packing_max_predictions or d.max_predictions_per_seq, seed=d.seed)
        summary["packing"] = packing
    return PretrainData(tokenizer, train, evals, d.masking, masking_options(d), summary, packing,
                        eval_seed=d.seed + 1)
