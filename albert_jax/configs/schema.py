"""The experiment config schema, declared once: every field of a pretraining, fine-tuning or distillation config.

Each field says, in one place:
- its type and allowed values: runs/validate.py checks a config against them, and configs/overrides.py parses an
  experiment argument or `--set` value as that type;
- its default: the experiment files build each section with `section(fields, **values)`, which writes the
  defaults and takes the scale's own value for a field without one (REQUIRED);
- its role on a resume and in a sweep: `identity` (the checkpoint belongs to it: a resume that changes it is
  refused), `schedule` (a resume may change it with train.allow_changed_schedule=true), `speed` (changes only speed
  and memory, exactly: a resume may change it and a sweep's stage fingerprint leaves it out) or `free` (how a run
  is watched or laid out: logging, evaluation and checkpoint cadence, mesh). training/workdir.py and
  ablations/sweep.py read these roles;
- whether it was added after runs were first recorded (`added`): a recorded config without it reads its default;
  `added="fingerprint"` also leaves it out of a sweep's stage fingerprint at its default, so a stage trained before
  it existed is still found.
Every default is filled in once, by `complete(config)`, where a config enters: when an experiment file is loaded
(configs/loader.py), when a run's config.json is read back (training/rundir.read_config), and when a driver is
handed a config built in Python (runs/validate.validate). Every reader then writes `config.section.field`.

The model section mirrors AlbertConfig (albert_jax/config.py), which declares its fields' types and defaults; this
module gives only its roles (MODEL_SPEED) and the fields a fine-tuning run may change (FINETUNE_MODEL_KNOBS).
The lists of allowed values below are the one owner of each (the modules that act on them import them).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import ml_collections

# ------------------------------------------------------------------------------------------------ allowed values
OPTIMIZERS = ("lamb", "adamw")
# The official optimizers decay every weight but LayerNorm and biases by 0.01 (albert/optimization.py).
WEIGHT_DECAY = 0.01
SENTENCE_TASKS = ("sop", "nsp", "none")  # the inter-sentence losses (Table 5); "none" is MLM alone
MASKING = ("static", "dynamic")  # masks written into the records, or drawn per epoch (DynamicMasking)
ZH_MASKING = ("char", "jieba", "gold")  # Chinese whole words for the n-gram mask (data/zh_segment.py)
TOKENIZER_KINDS = ("spm", "wordpiece")
INIT_MODES = ("copy", "group0", "deeper")  # train.init_from: copy | official --init_from_group0 | Table 11's warm start
HEADS = ("default", "pabee")  # a fine-tuning task's own head, or a classifier after every layer (early exit)
ROLES = ("identity", "schedule", "speed", "free")
RUNNERS = ("local", "beam")  # how the data pipelines run: in this process (and a pool), or on Apache Beam

REQUIRED = object()  # no default: the experiment file gives the value (it depends on the scale or the task)


@dataclasses.dataclass(frozen=True)
class Field:
    kind: str  # int | float | str | bool
    check: Callable[[Any], bool] | None = None
    allowed: str = ""  # what `check` accepts, in words
    nullable: bool = False
    default: Any = REQUIRED
    role: str = "free"
    added: str = ""  # "" | "record" (old records lack it) | "fingerprint" (old fingerprints lack it too)
    written: bool = True  # False: read with its default when absent, never written by the experiment files
    choices: tuple[str, ...] = ()  # a closed set of values (`check` accepts exactly these)

    def __post_init__(self):
        if self.role not in ROLES or self.added not in ("", "record", "fingerprint"):
            raise ValueError(f"schema Field: role={self.role!r}, added={self.added!r}")

    @property
    def optional(self) -> bool:
        """A config may lack the field (it reads as the default)."""
        return bool(self.added) or not self.written


def _int(lo: int | None = None, hi: int | None = None, note: str = "", **kw) -> Field:
    if lo is not None and hi is not None:
        return Field("int", lambda v: lo <= v <= hi, f"an integer in {lo}..{hi}{note}", **kw)
    if lo is not None:
        return Field("int", lambda v: v >= lo, f"an integer >= {lo}{note}", **kw)
    return Field("int", None, f"an integer{note}", **kw)


def _float(lo: float = 0.0, *, strict: bool = False, hi: float | None = None, note: str = "", **kw) -> Field:
    def ok(v):
        if not math.isfinite(v):
            return False
        if (v <= lo) if strict else (v < lo):
            return False
        return hi is None or v <= hi
    rng = (f"> {lo}" if strict else f">= {lo}") + (f" and <= {hi}" if hi is not None else "")
    return Field("float", ok, f"a finite number {rng}{note}", **kw)


def _choice(allowed: tuple[str, ...], **kw) -> Field:
    return Field("str", lambda v: v in allowed, f"one of {', '.join(allowed)}", choices=allowed, **kw)


def _str(**kw) -> Field:
    return Field("str", None, "a string", **kw)


def _bool(**kw) -> Field:
    return Field("bool", None, "true or false", **kw)


# ------------------------------------------------------------------------------------------------ sections
# Top-level fields that only describe how the config was made (the drivers do not read them).
DESCRIPTIVE = {"experiment": _str(role="identity"), "arg": _str(), "scale": _str(),
               "model_preset": _str(role="identity")}

TRAIN_COMMON = {
    "batch_size": _int(1, role="schedule"),
    "num_train_steps": _int(1, role="schedule"),
    "optimizer": _choice(OPTIMIZERS, role="identity"),
    "learning_rate": _float(0.0, role="schedule"),
    "warmup_steps": _int(0, role="schedule"),
    "grad_accum_steps": _int(1, note=" that divides train.batch_size", default=1, role="schedule"),
    "log_every": _int(1, note=" (steps between logged metrics)"),
    "eval_every": _int(1, note=" (steps between evaluations)"),
    "eval_batches": _int(0, note=" (0: the whole eval set; N: at most N batches of each eval set)"),
    "checkpoint_every": _int(1, note=" (steps between checkpoints)"),
    "keep_checkpoints": _int(1),
    "seed": _int(0, default=0, role="identity"),  # fine-tuning: seeds are seed, seed+1, ...
    "peak_flops": _float(0.0, note=" (0: look the device up)", default=0.0),  # per device, for MFU
    # Resuming with a changed schedule is refused unless true; the change is then recorded in config.json
    # "changes" (docs/training.md, "What a run guarantees").
    "allow_changed_schedule": _bool(default=False),
}
_WEIGHT_DECAY = _float(0.0, default=WEIGHT_DECAY, role="schedule")

MESH = {name: Field("int", lambda v: v == -1 or v >= 1, "-1 (all remaining devices) or an integer >= 1",
                    default=default) for name, default in (("data", -1), ("fsdp", 1), ("tensor", 1))}
DISTRIBUTED = {"coordinator": _str(default=""),
               "num_processes": _int(0, note=" (0: from the environment)", default=0),
               "process_id": _int(-1, note=" (-1: from the environment)", default=-1)}

_ID = dict(role="identity")
PRETRAIN_TRAIN = {
    **TRAIN_COMMON,
    "init_from": _str(default=""),  # another run's workdir to start from (when this workdir has no checkpoint)
    "init_mode": _choice(INIT_MODES, default="copy"),
    "weight_decay": dataclasses.replace(_WEIGHT_DECAY, written=False),  # the official 0.01 unless set
}
PRETRAIN_DATA = {
    # albert_pretrain_en (or /with_news), albert_pretrain_zh, text_corpus/<name> (+ corpus_paths), a TFDS dataset
    "corpus": _str(**_ID),
    "corpus_paths": _str(default="", **_ID),  # for text_corpus/<name>: comma-separated files, official format
    "held_out_fraction": _float(0.0, default=0.01, **_ID),  # text_corpus: validation share (and as much for test)
    "spm_model": _str(default="", **_ID),  # empty: train one on the corpus (cached by corpus and vocab size)
    "vocab_size": _int(14, note=" (the 5 special and 8 user-defined pieces come first)", **_ID),
    "lower": _bool(default=True, **_ID),
    "task": _choice(SENTENCE_TASKS, default="sop", **_ID),
    "max_seq_length": _int(5, 65535, **_ID),
    "max_predictions_per_seq": _int(1, default=20, **_ID),
    "masked_lm_prob": _float(0.0, hi=1.0, default=0.15, **_ID),
    "short_seq_prob": _float(0.0, hi=1.0, default=0.1, **_ID),
    "ngram": _int(1, default=3, **_ID),
    "dupe_factor": _int(1, **_ID),
    "masking": _choice(MASKING, default="static", **_ID),  # static (official, dupe_factor copies) or dynamic
    "max_docs": _int(0, note=" (0: every document)", **_ID),
    "seed": _int(0, default=12345, **_ID),
    # Added after the first runs, each with the default that keeps the behaviour from before it existed.
    # Several short instances per row with block-diagonal attention (docs/training.md, "Sequence packing"): exact,
    # but our instances are ~96% full, so it saves ~3% of rows here; on for corpora of short documents.
    "packing": _bool(default=False, added="record", **_ID),
    "packing_max_examples": _int(2, note=" (examples packed into one row at most)", default=3, added="record",
                                 **_ID),
    "packing_max_predictions": _int(0, note=" (masked predictions per packed row; 0: data.max_predictions_per_seq)",
                                    default=0, added="record", **_ID),
    # Instances `albert-jax pretraining-data create` wrote (local or Beam): its --output-dir for training, a second
    # one built from held-out text for evaluation, and data.spm_model the tokenizer both used (docs/training.md).
    "instances": _str(default="", added="fingerprint", **_ID),
    "eval_instances": _str(default="", added="fingerprint", **_ID),
    # spm (SentencePiece, the English models) | wordpiece (a BERT-Chinese style vocab.txt, as the official Chinese
    # models: trained on the corpus, or data.wordpiece_vocab); docs/chinese.md.
    "tokenizer_kind": _choice(TOKENIZER_KINDS, default="spm", added="fingerprint", **_ID),
    "wordpiece_vocab": _str(default="", added="fingerprint", **_ID),
    "zh_masking": _choice(ZH_MASKING, default="char", added="fingerprint", **_ID),
}
PRETRAIN = {"train": PRETRAIN_TRAIN, "data": PRETRAIN_DATA, "mesh": MESH, "distributed": DISTRIBUTED}

FINETUNE_TOP = {
    "task": _str(**_ID),
    "init": _str(default="random", **_ID),
    "init_step": _int(0, note=" (0: the source's best or latest checkpoint)", default=0, **_ID),
    "reset_head": _bool(default=False, **_ID),  # a fine-tuned source's head is reused for its task unless true
    # Identity: another head or depth is another model (a resume would load the wrong tree or apply it k times);
    # a record from before they existed reads their defaults.
    "head": _choice(HEADS, default="default", added="record", **_ID),
    "depth": _int(0, note=" (0: the init source's depth)", default=0, added="record", **_ID),  # k: an all-shared
    # source applied k times
    "num_seeds": _int(1),
}
FINETUNE_TRAIN = {
    **TRAIN_COMMON, "weight_decay": _WEIGHT_DECAY,
    # A budget in epochs instead of steps, and early stopping on the dev headline metric (docs/finetuning.md,
    # "Epochs and early stopping"); both added after runs were first recorded, at defaults that keep the old runs.
    "num_epochs": _float(0.0, note=" (0: train.num_train_steps; > 0 replaces it by ceil(epochs * training rows / "
                         "batch_size), resolved before training)", default=0.0, role="schedule", added="fingerprint"),
    "early_stopping_patience": _int(0, note=" (0: off; N: stop after N dev evaluations without a better headline "
                                    "metric)", default=0, role="schedule", added="fingerprint"),
}
FINETUNE_DATA = {
    "max_seq_length": _int(5, 65535, **_ID),
    "tokenizer": _str(default="", **_ID),  # empty: the init source's; a .model file or a directory holding one
    "limit": _int(0, note=" (0: every example)", **_ID),  # examples per split
    # A fixed random sample of the train split (seed 0: the same sample for every run and fine-tuning seed, so a
    # pretrained model and its random-init twin learn from the same labels): how pretraining helps as labels get
    # scarce (docs/chinese.md). Drawn after `limit`.
    "train_examples": _int(0, note=" (0: the whole train split)", default=0, added="fingerprint", **_ID),
    "buckets": _str(role="speed"),  # length bucketing (data/bucketing.py): exact, so speed only
}
FINETUNE = {"": FINETUNE_TOP, "train": FINETUNE_TRAIN, "data": FINETUNE_DATA, "mesh": MESH,
            "distributed": DISTRIBUTED}
# `albert-jax distill` is a fine-tuning run with this section more (runs/distill.py).
DISTILL = {"teacher": _str(default=""), "temperature": _float(0.0, strict=True, default=2.0),
           "alpha": _float(0.0, hi=1.0, note=" (the soft targets' weight; 1 - alpha on the hard labels)", default=0.5),
           "hidden_weight": _float(0.0, note=" (0: no hidden-state matching)", default=0.0)}

# The model section (AlbertConfig's fields): every field is identity but these, which change only speed and
# memory (remat recomputes exactly).
MODEL_SPEED = ("remat_policy", "attention_impl")
# The model fields a fine-tuning run may change on a loaded architecture; everything else comes from the source.
FINETUNE_MODEL_KNOBS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout_prob", "dtype",
                        "param_dtype", "scan_layers", "remat_policy", "attention_impl")


# ------------------------------------------------------------------------------------------------ views
def section(fields: dict[str, Field], **values: Any) -> ml_collections.ConfigDict:
    """A config section: every written field of `fields` in declared order, its default or the value given here.
    A REQUIRED field without a value, or a value for no field, is a mistake in an experiment file."""
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise TypeError(f"section(): no field {unknown[0]!r}; fields are {', '.join(fields)}")
    out = ml_collections.ConfigDict()
    for name, f in fields.items():
        if name in values:
            out[name] = values[name]
        elif f.written:
            if f.default is REQUIRED:
                raise TypeError(f"section(): field {name!r} has no default; give its value")
            out[name] = f.default
    return out


def _walk():
    """(dotted key as in an experiment config, Field) for every declared field."""
    for top in (DESCRIPTIVE, FINETUNE_TOP):
        yield from top.items()
    for sections in (PRETRAIN, FINETUNE, {"distill": DISTILL}):
        for name, fields in sections.items():
            if name:
                for field, f in fields.items():
                    yield f"{name}.{field}", f


def _merged() -> dict[str, Field]:
    """Every declared field by its dotted key; a key the pretraining and fine-tuning configs share must agree on
    its type and role (one fact, one meaning)."""
    out: dict[str, Field] = {}
    for key, f in _walk():
        seen = out.setdefault(key, f)
        if (seen.kind, seen.role) != (f.kind, f.role):
            raise AssertionError(f"schema: {key} is declared twice with different types or roles")
    return out


FIELDS = _merged()


def role_of(key: str) -> str | None:
    """The role of an experiment config key (`train.batch_size`, `model.hidden_size`), or None if undeclared."""
    if key.startswith("model."):
        return "speed" if key[len("model."):] in MODEL_SPEED else "identity"
    f = FIELDS.get(key)
    return f.role if f else None


def keys_with_role(role: str) -> tuple[str, ...]:
    return tuple(k for k, f in FIELDS.items() if f.role == role)


# Settings that change only speed and memory, by section: a resume may change them, a fingerprint leaves them out.
SPEED_ONLY = {"model": MODEL_SPEED,
              "data": tuple(k.split(".", 1)[1] for k in keys_with_role("speed") if k.startswith("data."))}
# Fields added after runs were first recorded: dotted key -> the default an older record reads.
ADDED_DEFAULTS = {k: f.default for k, f in FIELDS.items() if f.added}
# Of those, the ones a sweep's stage fingerprint leaves out at their defaults (added after fingerprints existed).
FINGERPRINT_OMITS_AT_DEFAULT = {k: f.default for k, f in FIELDS.items() if f.added == "fingerprint"}


KINDS = ("pretrain", "finetune", "distill")


def kind_of(config) -> str:
    """Which driver's config this is, from its shape: a distill section (distill), a top-level task (fine-tuning),
    else pretraining (whose task is data.task)."""
    if "distill" in config:
        return "distill"
    return "finetune" if "task" in config else "pretrain"


def sections_of(kind: str) -> dict[str, dict[str, Field]]:
    """The declared sections of a `kind` config ("" is the top level)."""
    if kind == "pretrain":
        return PRETRAIN
    if kind in ("finetune", "distill"):
        return {**FINETUNE, "distill": DISTILL} if kind == "distill" else FINETUNE
    raise ValueError(f"schema: kind={kind!r}; allowed {', '.join(KINDS)}")


def complete(config, kind: str | None = None):
    """Fill in, in place, every declared field of a `kind` config (by default `kind_of(config)`) that `config`
    lacks, at its default, and return it: a config loaded from an experiment file (the fields it never writes, such
    as pretraining's train.weight_decay), or read back from a run recorded before a field existed, reads as one
    written today, so every reader writes `d.x`. A field without a default (REQUIRED) and a section the config
    lacks stay missing: validation names them. A ConfigDict or a plain dict (a config.json record)."""
    if not hasattr(config, "keys"):
        return config
    kind = kind or kind_of(config)
    sections = sections_of("distill" if kind == "finetune" and "distill" in config else kind)
    for name, fields in sections.items():
        node = config if name == "" else config[name] if name in config else None
        if not hasattr(node, "keys"):
            continue
        for field, f in fields.items():
            if field not in node and f.default is not REQUIRED:
                node[field] = f.default
    return config


def fingerprint_omits(kind: str) -> dict[str, Any]:
    """Dotted key -> default of the fields a sweep's stage fingerprint of a `kind` config leaves out at their
    defaults: FINGERPRINT_OMITS_AT_DEFAULT, and the fields the experiment files never write (`complete` adds them),
    so a fingerprint is the one it was before configs were completed."""
    unwritten = {f"{name}.{k}" if name else k: f.default for name, fields in sections_of(kind).items()
                 for k, f in fields.items() if not f.written}
    return {**FINGERPRINT_OMITS_AT_DEFAULT, **unwritten}


# ------------------------------------------------------------------------------------------------ descriptions
# One line per field, for `albert-jax config show` (the type, default, allowed values and role are the Field's).
DESCRIPTIONS = {
    "experiment": "the experiment file's name (pretrain, finetune, distill)",
    "arg": "the experiment argument the config was made from (after ':')",
    "scale": "smoke (tests, seconds), cpu (this 2-core machine, minutes) or paper (the paper's protocol)",
    "model_preset": "the AlbertConfig preset the model section started from",
    "task": "the downstream task: a registered name (albert_jax/tasks/registry.py) or your task file (.json)",
    "init": "what fine-tuning starts from: a workdir of ours, an HF ALBERT/BERT directory, minilm or random",
    "init_step": "the init source's checkpoint step",
    "reset_head": "start a new task head even when the init source was fine-tuned on this task",
    "head": "the task's own head, or pabee: a classifier after every layer for early exit",
    "depth": "apply an all-shared init source's layer this many times",
    "num_seeds": "fine-tuning seeds (train.seed, +1, ...); results.json reports their median",
    "train.batch_size": "examples per optimizer step, over all devices",
    "train.num_train_steps": "optimizer steps; the learning-rate decay's horizon",
    "train.optimizer": "lamb (pretraining, as the paper) or adamw (fine-tuning, as the official scripts)",
    "train.learning_rate": "peak learning rate, after the linear warm-up",
    "train.warmup_steps": "steps of linear warm-up from 0 to train.learning_rate",
    "train.grad_accum_steps": "micro-batches a step accumulates (the same gradient, less memory)",
    "train.log_every": "steps between logged training metrics (metrics.jsonl, TensorBoard)",
    "train.eval_every": "steps between evaluations (pretraining: held-out MLM/SOP/NSP; fine-tuning: dev)",
    "train.eval_batches": "batches of each eval set per evaluation",
    "train.checkpoint_every": "steps between checkpoints (also at the end and on SIGTERM/SIGINT)",
    "train.keep_checkpoints": "checkpoints kept in checkpoints/ (the newest)",
    "train.seed": "the random seed of initialisation, dropout and data order",
    "train.peak_flops": "the device's peak FLOP/s for MFU",
    "train.allow_changed_schedule": "let a resume change a schedule field (recorded in config.json 'changes')",
    "train.init_from": "another pretraining run's workdir to start from when this one has no checkpoint",
    "train.init_mode": "how train.init_from is loaded: copy, group0 (official) or deeper (Table 11)",
    "train.weight_decay": "decoupled weight decay (not LayerNorm or biases)",
    "train.num_epochs": "train for this many passes over the training rows instead of train.num_train_steps",
    "train.early_stopping_patience": "stop after this many dev evaluations without a better headline metric",
    "data.corpus": "the pretraining corpus: ours, text_corpus/<name> with data.corpus_paths, or a TFDS dataset",
    "data.corpus_paths": "text_corpus's files, comma-separated (one sentence a line, blank line between documents)",
    "data.held_out_fraction": "text_corpus: the share of documents held out for validation (as much for test)",
    "data.spm_model": "a SentencePiece .model to tokenize with (empty: trained on the corpus)",
    "data.vocab_size": "the vocabulary size of a tokenizer trained on the corpus",
    "data.lower": "lower-case the text (the English models do)",
    "data.task": "the inter-sentence loss beside MLM: sop, nsp or none (Table 5)",
    "data.max_seq_length": "tokens per example, [CLS] and [SEP] included",
    "data.max_predictions_per_seq": "masked positions per pretraining example at most",
    "data.masked_lm_prob": "the share of tokens masked",
    "data.short_seq_prob": "the share of pretraining examples cut to a random shorter length",
    "data.ngram": "the longest n-gram masked as one (official: 3)",
    "data.dupe_factor": "copies of the corpus with different masks (static masking)",
    "data.masking": "static (masks written once per copy, official) or dynamic (drawn every epoch)",
    "data.max_docs": "documents per source read",
    "data.seed": "the seed of the pretraining instances (masks, pairs, swaps)",
    "data.packing": "several short examples per row with block-diagonal attention (exact)",
    "data.packing_max_examples": "examples packed into one row at most",
    "data.packing_max_predictions": "masked predictions per packed row",
    "data.instances": "instances written by `albert-jax pretraining-data create` (its --output-dir)",
    "data.eval_instances": "held-out instances written the same way, for evaluation",
    "data.tokenizer_kind": "spm (SentencePiece) or wordpiece (the official Chinese models' vocab.txt)",
    "data.wordpiece_vocab": "a given vocab.txt (empty: trained on the corpus)",
    "data.zh_masking": "Chinese whole words for the n-gram mask: char, jieba or gold",
    "data.tokenizer": "the tokenizer for fine-tuning (empty: the init source's)",
    "data.limit": "examples read per split",
    "data.train_examples": "a fixed random sample of this many training examples (the same for every run)",
    "data.buckets": "length buckets each batch is cut to: auto, off, or a list such as 32,64,96 (exact)",
    "mesh.data": "devices along the data-parallel axis",
    "mesh.fsdp": "devices the parameters and optimizer state are sharded over",
    "mesh.tensor": "devices along the tensor-parallel (model) axis",
    "distributed.coordinator": "the multi-host coordinator's address (empty: from the environment)",
    "distributed.num_processes": "the number of hosts",
    "distributed.process_id": "this host's index",
    "distill.teacher": "the fine-tuned teacher: one seed's workdir of the same task",
    "distill.temperature": "the softmax temperature of the soft targets",
    "distill.alpha": "the soft targets' weight in the loss",
    "distill.hidden_weight": "the weight of matching the teacher's hidden states",
    "model.vocab_size": "V, the vocabulary size",
    "model.embedding_size": "E, the width of the factorized embeddings",
    "model.hidden_size": "H, the hidden width",
    "model.num_hidden_layers": "L, the layers",
    "model.num_attention_heads": "A, the attention heads",
    "model.intermediate_size": "I, the FFN width",
    "model.hidden_act": "the FFN activation (gelu_new: the official tanh approximation)",
    "model.hidden_dropout_prob": "dropout on hidden states",
    "model.attention_probs_dropout_prob": "dropout on attention probabilities",
    "model.classifier_dropout_prob": "dropout before a task's classifier",
    "model.max_position_embeddings": "the longest sequence the position table holds",
    "model.type_vocab_size": "segment ids",
    "model.initializer_range": "the truncated normal's standard deviation at initialisation",
    "model.layer_norm_eps": "LayerNorm's epsilon",
    "model.sharing": "the parts shared across layers: all (ALBERT), attention, ffn, none (BERT)",
    "model.num_hidden_groups": "G, groups of layers, each sharing one parameter set",
    "model.sharing_map": "layer -> parameter set of the shared parts, e.g. 0-7.8x4 (empty: the G rule)",
    "model.inner_group_num": "blocks applied in sequence inside each layer, each with its own parameters",
    "model.embedding_projection": "project E to H (null: only when E != H)",
    "model.scan_layers": "one scanned stack (true) or a Python loop over layers (the same parameters)",
    "model.remat_policy": "what the backward pass recomputes instead of storing (exact: speed and memory)",
    "model.attention_impl": "xla (dot, softmax, dot) or cudnn (fused flash attention, GPU, bf16); auto: cudnn on GPUs "
                            "where the model allows it (speed only)",
    "model.dtype": "the compute dtype",
    "model.param_dtype": "the parameters' dtype",
}
