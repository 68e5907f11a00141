"""Export from any run of ours: a pretraining workdir, a fine-tuning workdir (the best seed, or one chosen), or
one seed's run, to a HuggingFace directory (model + tokenizer) or to a params-only checkpoint (params_export.py).

`resolve_run(workdir, step, seed)` finds the run and its checkpoint and reads the parameters; `export_hf` and
`export_params` write them. What HF cannot express is refused with `ExportRefused`, one line that says why and
offers `--to params`:
- sharing='attention' / 'ffn' (HF ALBERT shares whole layers only), and sharing='none' with inner_group_num > 1;
- a head without an HF class (the SQuAD v2 head: end logits conditioned on the start, answerability classifier).

HF classes (interop/hf.py `HEAD_OF_MODEL`): a pretraining run is AlbertForPreTraining (AlbertModel loads its
encoder); classification and regression AlbertForSequenceClassification (num_labels, problem_type, id2label);
token tagging AlbertForTokenClassification; span QA (v1) AlbertForQuestionAnswering; multiple choice
AlbertForMultipleChoice. A BERT-shaped run with a WordPiece tokenizer (initialised from MiniLM or another HF BERT)
is written as the Bert* class of the same head, with BertTokenizer files.
"""
from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any, Callable

from albert_jax.config import AlbertConfig, ConfigError, load_json
from albert_jax.training import rundir

log = logging.getLogger("albert_jax.export")


class ExportError(ValueError):
    """A workdir, seed or step that cannot be exported as asked; the message names it and what exists."""


class ExportRefused(ExportError):
    """What HuggingFace cannot express; the message says why and offers --to params."""


@dataclasses.dataclass
class RunParams:
    workdir: str  # the run directory the parameters come from (one seed's, for fine-tuning)
    kind: str  # 'pretraining' | 'finetune'
    step: int
    where: str  # 'checkpoints' | 'best'
    config: AlbertConfig
    task: dict  # config.json "task"
    params: Any
    tokenizer: Any
    seed: int | None = None
    init: dict = dataclasses.field(default_factory=dict)

    def describe(self) -> dict:
        return {"workdir": self.workdir, "kind": self.kind, "step": self.step, "checkpoint": self.where,
                "seed": self.seed, "task": self.task.get("name"), "init": self.init}


# ---------------------------------------------------------------------------------------------- finding the run
def best_seed(path: Path) -> tuple[int, str, float]:
    """(seed, metric, its dev value) of the seed with the best dev score (ties: the lowest seed), from the seeds'
    results.json (each records the metric it was selected by and its best dev evaluation)."""
    scored = []
    for seed, d in rundir.seed_dirs(path).items():
        f = d / rundir.RESULTS
        if not f.is_file():
            continue
        r = rundir.read_json(f, required=True)
        metric = r.get("select")
        value = r.get("dev", {}).get(metric)
        if value is not None:
            scored.append((-float(value), seed, metric))
    if not scored:
        raise ExportError(f"{path}: no seed has finished (no seed-<s>/results.json with a dev score); pass --seed S "
                          "to export one seed's checkpoint anyway "
                          f"(seeds here: {list(rundir.seed_dirs(path)) or 'none'})")
    neg, seed, metric = min(scored)
    return seed, metric, -neg


def resolve_run(workdir, step: int | None = None, seed: int | None = None) -> RunParams:
    """The run `workdir` names, with its parameters read. A fine-tuning parent gives its best seed by dev score
    (or `seed`); `step` picks a checkpoint (default: best/ for fine-tuning, the latest for pretraining)."""
    import jax  # noqa: PLC0415  heavy: jax

    from albert_jax.data import tokenization  # noqa: PLC0415  heavy: sentencepiece
    from albert_jax.runs.finetune import InitError, finetuned_params  # noqa: PLC0415  heavy: grain, jax
    from albert_jax.runs.pretrain import params_from_workdir, read_run_config  # noqa: PLC0415  heavy: jax, optax

    path = Path(workdir)
    if not path.is_dir():
        raise ExportError(f"--workdir {path}: no such directory")
    if not rundir.is_run(path):
        seeds = rundir.seed_dirs(path)
        if not seeds:
            raise ExportError(f"--workdir {path} is neither a run (config.json + checkpoints/) nor a fine-tuning "
                              "workdir (seed-<s>/ directories)")
        if seed is None:
            seed, metric, value = best_seed(path)
            log.info("exporting seed %d of %s: best dev %s = %.4f", seed, path, metric, value)
        elif seed not in seeds:
            raise ExportError(f"--seed {seed}: {path} has no seed-{seed}/ (seeds: {', '.join(map(str, seeds))})")
        path = seeds[seed]
        if not rundir.is_run(path):
            raise ExportError(f"{path} holds no run (config.json + checkpoints/ or best/)")
    elif seed is not None and rundir.seed_of(path) != seed:
        raise ExportError(f"--seed {seed} picks among a fine-tuning workdir's seed-<s>/ directories; {path} is one "
                          "run (drop --seed, or point --workdir at the parent)")
    run_cfg = read_run_config(str(path))
    task = run_cfg.get("task", {"name": "pretrain"})
    try:
        tokenizer = tokenization.load_tokenizer(path)
    except FileNotFoundError:
        raise ExportError(f"{path} holds no tokenizer (spiece.model or vocab.txt, which every run copies into its "
                          "workdir): an export without the tokenizer the model was trained with is not usable"
                          ) from None
    # One local device: an export is host-side work, on whatever machine, whatever devices trained the run.
    one_device = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
    if str(task.get("name", "")).startswith("pretrain"):
        steps = rundir.steps(path / rundir.CHECKPOINTS)
        if step is not None and step not in steps:
            raise ExportError(f"--step {step}: {path}/checkpoints holds steps {steps or 'none'}")
        if not steps:
            raise ExportError(f"{path}/checkpoints holds no checkpoint")
        got, cfg, params = params_from_workdir(str(path), step, one_device)
        return RunParams(str(path), "pretraining", got, rundir.CHECKPOINTS, cfg, task, params, tokenizer)
    try:
        got, where, cfg, task, params = finetuned_params(path, step, one_device)
    except InitError as e:
        raise ExportError(str(e)) from None
    return RunParams(str(path), "finetune", got, where, cfg, task, params, tokenizer, rundir.seed_of(path),
                     run_cfg.get("init", {}))


# ---------------------------------------------------------------------------------------------- to HuggingFace
def _wordpiece(tokenizer) -> bool:
    from albert_jax.data.wordpiece import WordPieceTokenizer  # noqa: PLC0415  CLI start (numpy)

    return isinstance(tokenizer, WordPieceTokenizer)


def hf_target(run: RunParams) -> dict:
    """What `run` becomes in HF: family, head, labels, problem_type, class names; ExportRefused if nothing."""
    from albert_jax.interop import hf  # noqa: PLC0415  CLI start (numpy)

    cfg, name = run.config, run.task.get("name", "")
    labels, problem_type = None, None
    if run.kind == "pretraining":
        head = "pretraining"
    else:
        from albert_jax.tasks.registry import label_names, task_of_run  # noqa: PLC0415  heavy: grain, jax

        task = task_of_run(run.task, cfg)  # with the head it was trained with (PABEE: AlbertForEarlyExit)
        model_name = type(task.model(cfg)).__name__
        head = hf.HEAD_OF_MODEL.get(model_name)
        if head is None:
            raise ExportRefused(f"cannot export {run.workdir} to HuggingFace: task {name} uses our {model_name}, "
                                "which no transformers class computes; `--to params` writes it (per-layer orbax "
                                "checkpoint + layout.json)")
        labels, problem_type = label_names(task, head)
    bert_shaped = cfg.sharing == "none" and not cfg.use_projection and cfg.embedding_size == cfg.hidden_size
    family = "bert" if bert_shaped and _wordpiece(run.tokenizer) and head != "pretraining" else "albert"
    try:
        hf.check_hf(cfg, family, head)
    except (ConfigError, hf.ConversionError) as e:
        raise ExportRefused(f"cannot export {run.workdir} to HuggingFace: {str(e).splitlines()[0]}; `--to params` "
                            "keeps every sharing mode (per-layer orbax checkpoint + layout.json)") from None
    tok_class = "BertTokenizer" if _wordpiece(run.tokenizer) else "AlbertTokenizer"
    return {"family": family, "head": head, "labels": labels, "problem_type": problem_type,
            "model_class": hf.hf_class(family, head), "tokenizer_class": tok_class}


def export_hf(run: RunParams, out_dir) -> dict:
    """config.json + model.safetensors + tokenizer files in `out_dir`; returns what was written (hf_target)."""
    from albert_jax.interop import hf  # noqa: PLC0415  CLI start (numpy)

    target = hf_target(run)
    out = _fresh_dir(out_dir)
    hf.save_hf_pretrained(run.params, run.config, out, head=target["head"], family=target["family"],
                          labels=target["labels"], problem_type=target["problem_type"])
    write_hf_tokenizer(run.tokenizer, out, run.config.max_position_embeddings)
    _write_source(out, run, target)
    return target


def write_hf_tokenizer(tokenizer, out: Path, max_length: int) -> None:
    """The tokenizer as transformers reads it: spiece.model (+ tokenizer_config.json, special_tokens_map.json
    for AlbertTokenizer), or vocab.txt with a BertTokenizer config. Our own sidecar (spiece.json) goes along, so
    that `load_tokenizer(out)` gives back the very tokenizer."""
    tokenizer.save(out)
    if _wordpiece(tokenizer):
        special = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                   "mask_token": "[MASK]"}  # WordPieceTokenizer checks the vocabulary holds them
        config = {"tokenizer_class": "BertTokenizer", "do_lower_case": tokenizer.lower, "strip_accents": None,
                  "tokenize_chinese_chars": True, "do_basic_tokenize": True, **special}
    else:
        if not tokenizer.normalize_quotes:
            log.warning("the tokenizer was trained with normalize_quotes=False; HF AlbertTokenizer always rewrites "
                        "`` and '' to \", so ids differ on text holding them")
        special = {"bos_token": "[CLS]", "eos_token": "[SEP]", "unk_token": "<unk>", "sep_token": "[SEP]",
                   "pad_token": "<pad>", "cls_token": "[CLS]",
                   # As AlbertTokenizer declares it: "[MASK]" absorbs the space before it.
                   "mask_token": {"content": "[MASK]", "lstrip": True, "rstrip": False, "normalized": False,
                                  "single_word": False}}
        config = {"tokenizer_class": "AlbertTokenizer", "do_lower_case": tokenizer.lower, "remove_space": True,
                  "keep_accents": tokenizer.keep_accents, **{**special, "mask_token": "[MASK]"}}
    config["model_max_length"] = max_length
    _write_json(out / "tokenizer_config.json", config)
    _write_json(out / "special_tokens_map.json", special)


# ---------------------------------------------------------------------------------------------- to params
def export_params(run: RunParams, out_dir) -> Path:
    """A params-only orbax checkpoint in the per-layer layout + layout.json (+ the tokenizer) in `out_dir`."""
    from albert_jax.interop.params_export import save_params_export  # noqa: PLC0415  heavy: jax, flax

    out = _fresh_dir(out_dir)
    save_params_export(out, run.config, run.params, task=run.task, source=run.describe())
    run.tokenizer.save(out)
    return out


# ---------------------------------------------------------------------------------------------- files
@dataclasses.dataclass(frozen=True)
class Exporter:
    """One export target: `write(run, out_dir)` and the words for what it wrote."""
    write: Callable[[RunParams, Any], Any]
    describe: Callable[[Any], str]
    help: str


# Every target `albert-jax export --to` and `convert from-tf --to` take: a new target is one entry here.
EXPORTERS = {
    "hf": Exporter(export_hf, lambda t: f"{t['model_class']} + {t['tokenizer_class']}", "hf (transformers)"),
    "params": Exporter(export_params, lambda _: "per-layer params (orbax) + layout.json", "params (orbax)"),
}
TARGETS = tuple(EXPORTERS)


def _fresh_dir(out_dir) -> Path:
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"--out {out} exists and is not an empty directory; choose a new one")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _write_json(path: Path, value) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _write_source(out: Path, run: RunParams, target: dict) -> None:
    """Where the export came from (HF ignores unknown files): the run, its step and the classes written."""
    _write_json(out / "albert_jax_export.json", {**run.describe(), "hf": target})


def import_official(checkpoint, config_path, out_dir, *, vocab=None, to: str = "hf") -> dict:
    """`albert-jax convert from-tf`: an official checkpoint + albert_config.json (+ vocabulary) -> `out_dir`.

    to='hf': config.json + model.safetensors + the tokenizer, a HuggingFace ALBERT directory that transformers
    loads and that `albert-jax finetune init=DIR` starts from. to='params': our params export (orbax, per-layer,
    layout.json) + the tokenizer. Returns what was written (also saved as albert_jax_import.json).
    """
    from albert_jax.data.tokenization import check_vocab_matches  # noqa: PLC0415  heavy: sentencepiece
    from albert_jax.interop import hf  # noqa: PLC0415  CLI start (numpy)
    from albert_jax.interop.tf_checkpoint import (  # noqa: PLC0415  CLI start (numpy)
        checkpoint_prefix, find_vocab, load_tf_checkpoint, load_vocab)

    if to not in TARGETS:
        raise ValueError(f"--to {to!r}: allowed {', '.join(TARGETS)}")
    if not Path(config_path).is_file():
        raise FileNotFoundError(f"--config {config_path}: no such file (the albert_config.json of the release)")
    config = load_json(config_path)
    prefix = checkpoint_prefix(checkpoint)
    vocab = vocab or find_vocab(prefix)
    tokenizer = load_vocab(vocab) if vocab else None
    if tokenizer is not None:
        check_vocab_matches(tokenizer, config.vocab_size)
    params, report = load_tf_checkpoint(prefix, config)
    head = "pretraining" if report["heads"] else "model"
    if to == "hf":
        hf.check_hf(config, "albert", head)  # refused before anything is written
    out = _fresh_dir(out_dir)
    if to == "hf":
        hf.save_hf_pretrained(params, config, out, head=head)
        if tokenizer is not None:
            write_hf_tokenizer(tokenizer, out, config.max_position_embeddings)
    else:
        from albert_jax.interop.params_export import save_params_export  # noqa: PLC0415  heavy: jax, flax

        save_params_export(out, config, params, task={"name": "pretrain"} if report["heads"] else {},
                           source={"tf_checkpoint": prefix})
        if tokenizer is not None:
            tokenizer.save(out)
    report.update(config=str(config_path), vocab=str(vocab) if vocab else None, to=to,
                  model_class=hf.hf_class("albert", head))
    (out / "albert_jax_import.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report
