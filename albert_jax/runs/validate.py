"""Check a whole experiment config before anything is prepared: `validate(config, kind, workdir)`.

Both drivers (`albert-jax pretrain`, `albert-jax finetune`) call it first, so a bad field costs seconds, not a
corpus build. Every field the driver reads is checked for its type (a Python `True` is not an integer, so a config
file cannot slip a bool into `train.log_every`) and its range; fields that depend on each other are checked
together (`train.grad_accum_steps` must divide `train.batch_size`); the model section is checked by AlbertConfig's
own validation, with its field names written as the user writes them (`model.hidden_size`).

What contradicts itself or cannot run raises one ConfigError (a ValueError: the CLI prints it as one line) that
names the field as the user sets it (`train.batch_size=0`), the value, and what is allowed. A setting that has no
effect (a `train.init_mode` without `train.init_from`, a `data.held_out_fraction` on a corpus with fixed splits, a
field the driver never reads) is accepted with a warning on the `albert_jax.config` logger.

`check_devices(config)` is the part that needs the devices (mesh sizes, batch per shard); the drivers call it
right after the distributed runtime is up, still before any data is read.
"""
from __future__ import annotations

import dataclasses
import difflib
import logging
import math
import os
import re
import tempfile
from typing import Any

from albert_jax.config import AlbertConfig, ConfigError
from albert_jax.configs import schema
from albert_jax.configs.overrides import field_types
from albert_jax.configs.scales import DEFAULT_VOCAB
from albert_jax.configs.schema import Field
from albert_jax.data.corpora import PRETRAIN_SPLITS
from albert_jax.tasks.from_files import is_task_file
from albert_jax.training import rundir

log = logging.getLogger("albert_jax.config")

KINDS = ("pretrain", "finetune")
# Every field's type, allowed values, default and role: configs/schema.py.


# ------------------------------------------------------------------------------------------------ helpers
def _type_ok(kind: str, value: Any) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, str)


_TYPE_WORDS = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "a string"}


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    return {int: "an integer", float: "a number", str: "a string"}.get(type(value), f"a {type(value).__name__}")


def check_field(key: str, value: Any, spec: Field) -> None:
    """Raise ConfigError unless `value` has the field's type and passes its check."""
    if value is None and spec.nullable:
        return
    if not _type_ok(spec.kind, value):
        raise ConfigError(f"{key}={value!r}: expected {_TYPE_WORDS[spec.kind]}, got {_describe(value)}"
                          + (f"; allowed: {spec.allowed}" if spec.allowed and spec.kind != "bool" else ""))
    if spec.check is not None and not spec.check(value):
        raise ConfigError(f"{key}={value!r}: must be {spec.allowed}")


def _get(section, name: str, default: Any = None) -> Any:
    try:
        return section[name]
    except (KeyError, AttributeError):
        return default


def _keys(section) -> list[str]:
    return list(section.keys()) if hasattr(section, "keys") else []


def near(name: str, choices, n: int = 3) -> str:
    """' (did you mean a, b?)' for the choices close to `name`, or ''."""
    close = difflib.get_close_matches(name, sorted(set(choices)), n=n, cutoff=0.6)
    return f" (did you mean {', '.join(close)}?)" if close else ""


class _Checker:
    def __init__(self, config, kind: str):
        self.config, self.kind = config, kind
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        log.warning("%s", message)

    def section(self, name: str, fields: dict[str, Field]) -> None:
        """Check the section's fields as configs/schema.py declares them; a field the schema marks optional (added
        since runs were first recorded, or never written) may be absent."""
        node = self.config if name == "" else _get(self.config, name)
        where = f"{name}." if name else ""
        if name and not hasattr(node, "keys"):
            raise ConfigError(f"the config has no {name!r} section (the {self.kind} driver reads {name}.*)")
        for field, spec in fields.items():
            if field in node:
                check_field(where + field, node[field], spec)
            elif not spec.optional:
                raise ConfigError(f"{where}{field} is missing from the config (the {self.kind} driver reads it)")
        if name:
            known = set(fields)
            for field in _keys(node):
                if field not in known:
                    self.warn(f"{where}{field} is not read by {self.kind}: it has no effect"
                              + near(field, known))


def _model_field_name(message: str) -> str:
    """AlbertConfig's messages name bare fields (`hidden_size=100 ...`); the user sets `model.hidden_size`."""
    names = "|".join(sorted((f.name for f in dataclasses.fields(AlbertConfig)), key=len, reverse=True))
    return re.sub(rf"(?<![\w.])({names})(?=[=\s:,)']|$)", r"model.\1", message)


def check_model_section(section, vocab_size: int, fields=None) -> AlbertConfig:
    """The model section as an AlbertConfig (only `fields` of it when given: the rest from the defaults), with
    every field's type checked and AlbertConfig's own validation; errors name `model.<field>`."""
    if not hasattr(section, "keys"):
        raise ConfigError("the config has no 'model' section")
    types = field_types(AlbertConfig)
    names = list(fields) if fields is not None else list(types)
    values = {}
    for name in names:
        if name not in section:
            raise ConfigError(f"model.{name} is missing from the config")
        kinds, nullable = types[name]
        value = section[name]
        kind = {bool: "bool", int: "int", float: "float", str: "str"}[kinds[0]]
        if name == "vocab_size":
            check_field("model.vocab_size", value,
                        Field("int", lambda v: v >= 0, "an integer >= 0 (0: the tokenizer's)"))
            value = value or vocab_size
        else:
            check_field(f"model.{name}", value, Field(kind, None, "", nullable))
        values[name] = value
    extra = sorted(set(_keys(section)) - set(names))
    if extra and fields is None:
        raise ConfigError(f"model.{extra[0]}: not a model field{near(extra[0], types)}")
    try:
        return AlbertConfig(**values)
    except ConfigError as e:
        raise ConfigError(_model_field_name(str(e))) from None


# ------------------------------------------------------------------------------------------------ workdir
def check_workdir(workdir: str) -> None:
    """The workdir must be a directory we can write, or a path we can create; checked without creating it."""
    if not workdir or "://" in workdir:
        return  # a remote path (gs://...): its own client decides
    path = os.path.abspath(workdir)
    if os.path.exists(path) and not os.path.isdir(path):
        raise ConfigError(f"--workdir {workdir} is a file, not a directory; pass a directory (it is created if "
                          "missing)")
    probe_dir = path
    while not os.path.exists(probe_dir):
        parent = os.path.dirname(probe_dir)
        if parent == probe_dir:
            break
        probe_dir = parent
    if not os.path.isdir(probe_dir):
        raise ConfigError(f"--workdir {workdir}: {probe_dir} is a file, so the workdir cannot be created under it")
    try:
        fd, probe = tempfile.mkstemp(prefix=".albert_jax_write_probe_", dir=probe_dir)
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        what = "the workdir" if probe_dir == path else f"{probe_dir} (where the workdir would be created)"
        raise ConfigError(f"--workdir {workdir}: cannot write to {what}: {e.strerror or e}") from None


# Fields that name local files or directories: recorded resolved (absolute), so that a run resumed from another
# directory (a requeued job, `--resume`) reads the same files. comma: a comma-separated list of paths.
PATH_FIELDS = {"pretrain": ("data.spm_model", "data.instances", "data.eval_instances", "data.wordpiece_vocab",
                            "data.corpus_paths", "train.init_from"),
               "finetune": ("task", "init", "data.tokenizer", "distill.teacher")}  # task: a task file
_NOT_PATHS = ("random", "minilm")  # init= names that are not paths


def resolve_paths(config, kind: str) -> None:
    """Every existing relative path among the `kind` run's PATH_FIELDS made absolute, in place."""
    def one(value: str) -> str:
        value = value.strip()
        if not value or "://" in value or value in _NOT_PATHS or os.path.isabs(value) or not os.path.exists(value):
            return value
        return os.path.abspath(value)

    for field in PATH_FIELDS[kind]:
        section, _, name = field.rpartition(".")
        if section and section not in config:
            continue
        holder = config[section] if section else config
        value = holder.get(name)
        if not isinstance(value, str) or not value or (field == "task" and not value.lower().endswith(".json")):
            continue
        resolved = ",".join(one(v) for v in value.split(",")) if field == "data.corpus_paths" else one(value)
        if resolved != value:
            holder[name] = resolved


# ------------------------------------------------------------------------------------------------ corpora
def pretraining_corpora() -> dict[str, tuple[str, ...] | None]:
    """Our pretraining corpora and their config names (None: any name, text_corpus/<name>)."""
    from albert_jax.data import builders  # noqa: PLC0415  heavy: tfds

    return {"albert_pretrain_en": tuple(c.name for c in builders.AlbertPretrainEn.BUILDER_CONFIGS),
            "albert_pretrain_zh": tuple(c.name for c in builders.AlbertPretrainZh.BUILDER_CONFIGS),
            "text_corpus": None}


def check_corpus_name(corpus: str) -> None:
    """data.corpus must name one of our pretraining corpora (with a known config) or a TFDS catalog dataset."""
    from albert_jax.data import builders  # noqa: PLC0415  heavy: tfds

    ours = pretraining_corpora()
    base, _, cfg = corpus.partition("/")
    allowed = ("albert_pretrain_en, albert_pretrain_en/with_news, albert_pretrain_zh, text_corpus/<name> (with "
               "data.corpus_paths), or a TFDS catalog dataset with a 'text' feature (e.g. wikipedia/20230601.en)")
    if base in ours:
        configs = ours[base]
        if configs is None:
            if not re.fullmatch(r"[A-Za-z0-9_][\w.-]*", cfg):
                raise ConfigError(f"data.corpus={corpus!r}: a user corpus is named text_corpus/<name> (letters, "
                                  "digits, _ . -), e.g. text_corpus/mine")
        elif cfg and cfg not in configs:
            raise ConfigError(f"data.corpus={corpus!r}: {base} has the configs {', '.join(configs)}"
                              f"{near(cfg, configs)}")
        return
    if base in builders.BUILDERS:
        raise ConfigError(f"data.corpus={corpus!r} is a labeled (fine-tuning) set, not a pretraining corpus; "
                          f"allowed: {allowed}")
    known = builders.catalog_names()
    base = base.partition(":")[0]  # a catalog name may carry a version: wikipedia:1.0.0/20230601.en
    if base not in known:
        raise ConfigError(f"data.corpus={corpus!r}: no such corpus{near(base, list(ours) + known)}; allowed: "
                          f"{allowed}")


def check_corpus_paths(raw: str) -> list[str]:
    """data.corpus_paths: comma-separated regular files, not all empty."""
    paths = [p.strip() for p in (raw or "").split(",") if p.strip()]
    if not paths:
        raise ConfigError("data.corpus='text_corpus/...' needs data.corpus_paths (comma-separated files in the "
                          "official format: one sentence per line, a blank line between documents)")
    for p in paths:
        if os.path.isdir(p):
            raise ConfigError(f"data.corpus_paths: {p} is a directory; list its files instead (comma-separated), "
                              "each in the official format")
        if not os.path.exists(p):
            raise ConfigError(f"data.corpus_paths: {p} does not exist")
        if not os.path.isfile(p):
            raise ConfigError(f"data.corpus_paths: {p} is not a regular file")
    empty = [p for p in paths if os.path.getsize(p) == 0]
    if len(empty) == len(paths):
        raise ConfigError(f"data.corpus_paths: {', '.join(empty)} {'is' if len(empty) == 1 else 'are'} empty; "
                          "the corpus has no text")
    for p in empty:
        log.warning("data.corpus_paths: %s is empty; it adds nothing to the corpus", p)
    return paths


# ------------------------------------------------------------------------------------------------ drivers
def _check_train(c: _Checker, t) -> None:
    if t.batch_size % t.grad_accum_steps:
        divisors = [d for d in range(1, min(t.batch_size, 64) + 1) if t.batch_size % d == 0]
        raise ConfigError(f"train.grad_accum_steps={t.grad_accum_steps} does not divide train.batch_size="
                          f"{t.batch_size}: each accumulation step takes batch_size/grad_accum_steps examples; "
                          f"use one of {', '.join(map(str, divisors[:8]))}")
    if not ("num_epochs" in t and t.num_epochs):  # (fine-tuning) the steps are known once the data is: checked then
        check_schedule(t, c.warn)


# A run's cadence is set in steps (train.eval_every, train.log_every), as the scales set it: a longer run keeps its
# scale's cadence exactly, and says so when that is far more often than a learning curve needs. An evaluation reads
# the whole dev set; a log line is a JSON line (the paper scale's pretraining writes 1,250).
MAX_EVALUATIONS = 50
MAX_LOG_LINES = 2000


def check_schedule(t, warn) -> None:
    """Warnings about the train section's steps, each one line naming the fields to set: a warm-up longer than the
    run, more than MAX_EVALUATIONS evaluations or MAX_LOG_LINES log lines, an early-stopping patience the run ends
    before."""
    n = t.num_train_steps
    if t.warmup_steps > n:
        warn(f"train.warmup_steps={t.warmup_steps} exceeds train.num_train_steps={n}: the learning rate never "
             "reaches train.learning_rate")
    evals, logs = n // t.eval_every, n // t.log_every
    if evals > MAX_EVALUATIONS:
        warn(f"train.eval_every={t.eval_every} evaluates {evals} times in train.num_train_steps={n} steps (each "
             f"reads the whole dev set): set train.eval_every, e.g. {math.ceil(n / 20)} for 20 evaluations")
    if logs > MAX_LOG_LINES:
        warn(f"train.log_every={t.log_every} logs {logs} times in train.num_train_steps={n} steps: set "
             f"train.log_every, e.g. {math.ceil(n / 500)} for 500 lines")
    patience = t.early_stopping_patience if "early_stopping_patience" in t else 0  # a fine-tuning field
    if patience and (patience + 1) * t.eval_every >= n:
        warn(f"train.early_stopping_patience={patience} has no effect: with train.eval_every={t.eval_every} the "
             f"run's {n} steps end before {patience} evaluations can follow the first")


def _check_mesh(mesh) -> None:
    free = [k for k in ("data", "fsdp", "tensor") if mesh[k] == -1]
    if len(free) > 1:
        raise ConfigError(f"mesh.{free[0]}=-1 and mesh.{free[1]}=-1: at most one mesh axis may be -1 (all "
                          "remaining devices)")


def _check_packing(c: _Checker, d) -> None:
    """A packed row must hold at least one whole example's predictions; packing fields without packing warn."""
    preds = d.packing_max_predictions
    if not d.packing:
        for field in ("packing_max_examples", "packing_max_predictions"):
            if d[field] != schema.PRETRAIN_DATA[field].default:
                c.warn(f"data.{field}={d[field]!r} has no effect: data.packing is false")
        return
    if preds and preds < d.max_predictions_per_seq:
        raise ConfigError(f"data.packing_max_predictions={preds} is below data.max_predictions_per_seq="
                          f"{d.max_predictions_per_seq}: a packed row must hold one example's predictions; raise it "
                          "or set 0 (data.max_predictions_per_seq)")


def _check_chinese(c: _Checker, d, tokenizer_vocab: int) -> int:
    """data.tokenizer_kind, data.wordpiece_vocab and data.zh_masking (docs/chinese.md); the vocabulary size."""
    kind, vocab, zh = d.tokenizer_kind, d.wordpiece_vocab, d.zh_masking
    if vocab and kind != "wordpiece":
        raise ConfigError(f"data.wordpiece_vocab={vocab!r} needs data.tokenizer_kind=wordpiece (it is {kind!r})")
    if kind == "wordpiece":
        if d.spm_model and not d.instances:
            c.warn(f"data.spm_model={d.spm_model!r} has no effect: data.tokenizer_kind=wordpiece (set "
                   "data.wordpiece_vocab to use a given vocab.txt)")
        if vocab:
            from albert_jax.data.wordpiece import WordPieceTokenizer  # noqa: PLC0415  CLI start (numpy)
            if not os.path.isfile(vocab):
                raise ConfigError(f"data.wordpiece_vocab={vocab!r} does not exist (a vocab.txt, one token per line)")
            try:
                tokenizer_vocab = WordPieceTokenizer(vocab, lower=d.lower).vocab_size
            except (ValueError, OSError) as e:
                raise ConfigError(f"data.wordpiece_vocab={vocab!r}: {e}") from None
    if zh != "char":
        if kind != "wordpiece" and not d.instances:
            raise ConfigError(f"data.zh_masking={zh!r} needs data.tokenizer_kind=wordpiece: SentencePiece's Chinese "
                              "pieces span several characters, so a word boundary can fall inside one; use "
                              "data.zh_masking=char with SentencePiece")
        if d.instances:
            c.warn(f"data.zh_masking={zh!r} has no effect with data.instances: the records fix their masking (build "
                   "them with `pretraining-data create --zh-masking`)")
        if zh == "gold" and d.corpus != "albert_pretrain_zh":
            raise ConfigError(f"data.zh_masking=gold needs a corpus segmented by hand: albert_pretrain_zh (People's "
                              f"Daily); data.corpus={d.corpus!r} has no segmentation (use jieba, or build instances "
                              "from space-segmented text with `pretraining-data create --zh-masking gold`)")
    return tokenizer_vocab


def _validate_pretrain(c: _Checker, workdir: str | None) -> None:
    config = c.config
    for name, fields in schema.PRETRAIN.items():
        c.section(name, fields)
    d, t = config.data, config.train
    _check_train(c, t)
    _check_mesh(config.mesh)

    # data: the same rules the instance writer applies, named as the user sets them
    from albert_jax.tasks.pretraining.instances import PretrainingConfig  # noqa: PLC0415  heavy: sentencepiece
    try:
        PretrainingConfig.from_data(d)
    except ValueError as e:
        raise ConfigError(str(e).replace("PretrainingConfig.", "data.")) from None

    _check_packing(c, d)
    check_corpus_name(d.corpus)
    default_held_out = dict(PRETRAIN_SPLITS)["validation"]
    if d.corpus.startswith("text_corpus/"):
        check_corpus_paths(d.corpus_paths)
        f = d.held_out_fraction
        if f >= 0.5:
            raise ConfigError(f"data.held_out_fraction={f!r}: must be below 0.5 (it is taken once for validation and "
                              f"once for test, which leaves 1 - 2*{f!r} = {1 - 2 * f:.2g} for training); lower it, "
                              "e.g. to 0.1")
        if f <= 0:
            raise ConfigError(f"data.held_out_fraction={f!r}: must be above 0 (the validation split would be "
                              "empty); raise it, e.g. to 0.01 (0.1 for a small corpus)")
    else:
        if d.corpus_paths:
            c.warn(f"data.corpus_paths={d.corpus_paths!r} has no effect: data.corpus={d.corpus!r} is not a "
                   "text_corpus/<name>")
        if d.held_out_fraction != default_held_out:
            c.warn(f"data.held_out_fraction={d.held_out_fraction!r} has no effect: data.corpus={d.corpus!r} has "
                   "fixed splits (only text_corpus/<name> splits by this fraction)")

    tokenizer_vocab = d.vocab_size
    if d.spm_model:
        from albert_jax.data import tokenization  # noqa: PLC0415  heavy: sentencepiece
        if os.path.isdir(d.spm_model):
            raise ConfigError(f"data.spm_model={d.spm_model!r} is a directory; pass the .model file")
        if not os.path.isfile(d.spm_model):
            raise ConfigError(f"data.spm_model={d.spm_model!r} does not exist")
        try:
            tok = tokenization.load_tokenizer(d.spm_model)  # a vocab.txt too, for data.instances made with one
        except (ValueError, RuntimeError, OSError) as e:
            raise ConfigError(f"data.spm_model={d.spm_model!r}: {e}") from None
        tokenizer_vocab = tok.vocab_size
        # Only a vocab_size the user set is worth a word: the scale's default is what every config carries.
        default_vocab = DEFAULT_VOCAB.get(config.get("scale", ""))
        if d.vocab_size != tok.vocab_size and d.vocab_size != default_vocab:
            c.warn(f"data.vocab_size={d.vocab_size} has no effect: data.spm_model={d.spm_model!r} fixes the "
                   f"vocabulary ({tok.vocab_size} pieces)")
        if d.lower != tok.lower:
            c.warn(f"data.lower={d.lower} has no effect: data.spm_model={d.spm_model!r} was trained with "
                   f"lower={tok.lower}, which applies")

    tokenizer_vocab = _check_chinese(c, d, tokenizer_vocab)
    model = check_model_section(config.model, tokenizer_vocab)
    if config.model.vocab_size and config.model.vocab_size != tokenizer_vocab:
        source = (f"data.spm_model={d.spm_model!r} has {tokenizer_vocab} pieces" if d.spm_model
                  else f"the tokenizer trained on the corpus has data.vocab_size={tokenizer_vocab} pieces")
        raise ConfigError(f"model.vocab_size={config.model.vocab_size} does not match the tokenizer: {source}; "
                          "set model.vocab_size=0 to take the tokenizer's")
    if d.max_seq_length > model.max_position_embeddings:
        raise ConfigError(f"data.max_seq_length={d.max_seq_length} exceeds model.max_position_embeddings="
                          f"{model.max_position_embeddings}; lower the one or raise the other")

    if t.init_from:
        if not os.path.isdir(t.init_from):
            raise ConfigError(f"train.init_from={t.init_from!r}: no such directory (expected another run's workdir)")
        if not os.path.isfile(os.path.join(t.init_from, rundir.CONFIG)) or \
                not os.path.isdir(os.path.join(t.init_from, rundir.CHECKPOINTS)):
            raise ConfigError(f"train.init_from={t.init_from!r} is not a pretraining run's workdir (it needs "
                              "config.json and checkpoints/)")
        if workdir and os.path.abspath(t.init_from) == os.path.abspath(workdir):
            raise ConfigError(f"train.init_from={t.init_from!r} is this run's own workdir; a run resumes from its "
                              "workdir by itself, so leave train.init_from empty")
    elif t.init_mode != "copy":
        c.warn(f"train.init_mode={t.init_mode!r} has no effect without train.init_from (the run starts from "
               "random weights or resumes from its own checkpoints)")


def _validate_finetune(c: _Checker, workdir: str | None) -> None:
    config = c.config
    for name, fields in schema.FINETUNE.items():
        c.section(name, fields)
    if "distill" in config:
        c.section("distill", schema.DISTILL)
        if not config.distill.teacher:
            raise ConfigError("distill.teacher is empty: set it to a fine-tuning run of the same task (one seed's "
                              "workdir, e.g. runs/ft_teacher/seed-0)")
    _check_train(c, config.train)
    _check_mesh(config.mesh)
    from albert_jax.tasks.registry import TASKS  # noqa: PLC0415  heavy: grain, jax

    if not is_task_file(config.task) and config.task not in TASKS:
        raise ConfigError(f"task={config.task!r}: unknown task{near(config.task, TASKS)}; see "
                          "albert_jax/tasks/registry.py or docs/finetuning.md for the list")
    from albert_jax.tasks.early_exit import unsupported  # noqa: PLC0415  heavy: grain, jax
    from albert_jax.tasks.registry import make_task  # noqa: PLC0415  heavy: grain, jax

    why = unsupported(make_task(config.task)) if config.head != "default" else None
    if why:
        raise ConfigError(f"head={config.head}: {why}")
    d = config.data
    if "buckets" in d:
        from albert_jax.data.bucketing import BucketError, bucket_lengths  # noqa: PLC0415  CLI start (numpy)
        try:
            bucket_lengths(d.max_seq_length, d.buckets)
        except BucketError as e:
            raise ConfigError(str(e)) from None
    if config.init == "random" and config.depth:
        raise ConfigError(f"depth={config.depth} applies to an init source's architecture; with init=random set "
                          "model.num_hidden_layers instead")
    if config.init == "random":
        model = check_model_section(config.model, 1)
        if d.max_seq_length > model.max_position_embeddings:
            raise ConfigError(f"data.max_seq_length={d.max_seq_length} exceeds model.max_position_embeddings="
                              f"{model.max_position_embeddings}; lower the one or raise the other")
        if config.init_step:
            c.warn(f"init_step={config.init_step} has no effect with init=random (there is no checkpoint to pick)")
        if config.reset_head:
            c.warn("reset_head=true has no effect with init=random (every head starts new)")
    else:
        check_model_section(config.model, 1, fields=schema.FINETUNE_MODEL_KNOBS)
        for field in _keys(config.model):
            if field not in schema.FINETUNE_MODEL_KNOBS:
                c.warn(f"model.{field} has no effect: the architecture comes from init={config.init!r} (only "
                       f"{', '.join(schema.FINETUNE_MODEL_KNOBS)} may change)")
        if config.init != "minilm" and not os.path.exists(config.init):
            raise ConfigError(f"init={config.init!r}: no such directory; expected a pretraining or fine-tuning "
                              "workdir, a HuggingFace ALBERT/BERT directory, 'minilm' or 'random'")
    if d.tokenizer and not os.path.exists(d.tokenizer):
        raise ConfigError(f"data.tokenizer={d.tokenizer!r} does not exist (expected a SentencePiece .model, or a "
                          "workdir or HF directory holding one)")


def validate(config, kind: str, workdir: str | None = None) -> list[str]:
    """Check the whole experiment config of a `kind` run (pretrain | finetune) and its workdir before any data is
    prepared. Raises ConfigError naming the first bad field; returns (and logs) the warnings."""
    if kind not in KINDS:
        raise ValueError(f"validate: kind={kind!r}; allowed {', '.join(KINDS)}")
    schema.complete(config, kind)  # as the loader does, for a config built in Python and handed to a driver
    c = _Checker(config, kind)
    (_validate_pretrain if kind == "pretrain" else _validate_finetune)(c, workdir)
    if workdir is not None:
        check_workdir(workdir)
    known = set(schema.DESCRIPTIVE) | {"model"} | (set(schema.PRETRAIN) if kind == "pretrain" else set(schema.FINETUNE))
    if kind == "finetune":
        known |= set(schema.FINETUNE_TOP) | {"distill"}
    for field in _keys(config):
        if field not in known:
            c.warn(f"{field} is not read by {kind}: it has no effect{near(field, known)}")
    return c.warnings


def check_devices(config, num_devices: int | None = None, num_processes: int | None = None) -> None:
    """The mesh fits the devices and the batch splits evenly over its batch shards (mesh.data x mesh.fsdp) and
    over the processes (each reads its own share)."""
    if num_devices is None or num_processes is None:
        import jax  # noqa: PLC0415  heavy: jax
        num_devices = jax.device_count() if num_devices is None else num_devices
        num_processes = jax.process_count() if num_processes is None else num_processes
    m = config.mesh
    sizes = {k: m[k] for k in ("data", "fsdp", "tensor")}
    fixed = math.prod(v for v in sizes.values() if v != -1)
    free = [k for k, v in sizes.items() if v == -1]
    shown = ", ".join(f"mesh.{k}={v}" for k, v in sizes.items())
    if free:
        if num_devices % fixed:
            raise ConfigError(f"{shown}: the {num_devices} devices do not divide by the fixed axes' product {fixed}")
        sizes[free[0]] = num_devices // fixed
    elif fixed != num_devices:
        raise ConfigError(f"{shown} needs {fixed} devices; there are {num_devices} (set one axis to -1 to take "
                          "the rest)")
    shards = sizes["data"] * sizes["fsdp"]
    b = config.train.batch_size
    if b % shards:
        raise ConfigError(f"train.batch_size={b} does not split over the {shards} batch shards (mesh.data x "
                          f"mesh.fsdp = {sizes['data']} x {sizes['fsdp']}); use a multiple of {shards}")
    if b % num_processes:
        raise ConfigError(f"train.batch_size={b} does not split over the {num_processes} processes (each reads "
                          f"batch_size / processes examples); use a multiple of {num_processes}")
