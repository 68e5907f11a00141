"""Fine-tuning: any init source -> one task -> the one training loop, for several seeds; median reported.

`finetune(config, workdir)` is what `albert-jax finetune` calls. For each seed it trains in
`workdir/seed-<s>` (resumable like pretraining), keeps the best dev checkpoint (`best/`, chosen by the task's
headline metric), scores the test split ONCE from it, and writes `seed-<s>/results.json`; then
`workdir/results.json` holds every seed's numbers with the median, min and max, as the paper reports medians.
A seed whose results.json exists is not run again.

Init sources (`init=`): a pretraining or fine-tuning workdir of ours (any sharing mode, E, depth), a HuggingFace
ALBERT directory, a HuggingFace BERT directory (sharing='none'), `minilm` (the real all-MiniLM-L6-v2 BERT
fetched from the registry), or `random` (the baseline: the model section's architecture, fresh weights).
"""
from __future__ import annotations

import copy
import dataclasses
import json
import logging
import math
import os
import statistics
from pathlib import Path
from typing import Any, Callable

import jax
import numpy as np
from flax import linen as nn
from flax import traverse_util

from albert_jax.config import AlbertConfig, model_from_section
from albert_jax.data import bucketing, tokenization
from albert_jax.data.weights import fetch_minilm
from albert_jax.interop import hf
from albert_jax.runs import validate
from albert_jax.runs.pretrain import init_distributed, params_from_workdir, read_run_config
from albert_jax.configs import schema
from albert_jax.configs.scales import DEFAULT_VOCAB
from albert_jax.tasks.early_exit import with_head
from albert_jax.tasks.registry import label_names, make_task, task_of_run
from albert_jax.training import checkpoints as ckpt
from albert_jax.training import examples, loop, rundir
from albert_jax.training import state as st
from albert_jax.training import workdir as wdir

log = logging.getLogger("albert_jax.finetune")

PAPER_VOCAB = DEFAULT_VOCAB["paper"]


class FinetuneError(ValueError):
    """A fine-tuning run that cannot produce its results; the message says why."""


class InitError(ValueError):
    """An init source that cannot serve this task; the message names the path and what is wrong."""


@dataclasses.dataclass
class InitSource:
    kind: str  # workdir | hf_albert | hf_bert | random
    path: str
    model_cfg: AlbertConfig | None
    tokenizer: Any = None
    encoder: Callable[[], dict] | None = None  # host parameters of the AlbertModel subtree
    head: Callable[[], dict] | None = None  # a fine-tuned run's other top-level subtrees (its head)
    task: dict | None = None  # a fine-tuned run's task description
    step: int | None = None  # a workdir's checkpoint step, known once encoder() has read it
    hf_head: dict | None = None  # an HF AlbertFor<Task>'s classifier (interop/hf.hf_task_head): see adopt_hf_head
    head_reused: bool = False  # plan_head / adopt_hf_head decided that `head` serves this run's task
    head_order: list[int] | None = None  # the source's label index of each of this task's labels, when reordered


def _load_tokenizer(path) -> Any:
    try:
        return tokenization.load_tokenizer(path)
    except FileNotFoundError:
        return None


def finetuned_params(workdir, step: int | None = None, sharding=None) -> tuple[int, str, AlbertConfig, dict, dict]:
    """(step, 'best' | 'checkpoints', model config, task description, parameters) of one fine-tuning seed's run.

    step=None reads best/ (the best dev checkpoint) when there is one, else the latest of checkpoints/; a given
    step is read from checkpoints/, or from best/ when that is where it is. `sharding` as in
    `checkpoints.restore_params_only`."""
    path = Path(workdir)
    run_cfg = read_run_config(str(path))
    cfg, task_info = AlbertConfig.from_dict(run_cfg["model"]), run_cfg.get("task", {})
    best, saved = rundir.steps(path / rundir.BEST), rundir.steps(path / rundir.CHECKPOINTS)
    if step is None:
        where = rundir.BEST if best else rundir.CHECKPOINTS
    elif step in saved:
        where = rundir.CHECKPOINTS
    elif step in best:
        where = rundir.BEST
    else:
        raise InitError(f"{path} has no checkpoint at step {step}: checkpoints/ holds {saved or 'none'}, best/ holds "
                        f"{best or 'none'}")
    abstract = nn.unbox(st.abstract_params(task_of_run(task_info, cfg), cfg))
    step, params = ckpt.restore_params_only(str(path / where), abstract, step, sharding)
    return step, where, cfg, task_info, params


def _workdir_source(path: Path, step: int | None) -> InitSource:
    run_cfg = read_run_config(str(path))
    cfg = AlbertConfig.from_dict(run_cfg["model"])
    task_info = run_cfg.get("task", {"name": "pretrain"})
    tokenizer = _load_tokenizer(path)
    if not (ckpt.has_steps(str(path / rundir.CHECKPOINTS)) or ckpt.has_steps(str(path / rundir.BEST))):
        raise InitError(f"{path} is a run's workdir with no checkpoint yet (checkpoints/ holds no step): let it "
                        "train until its first save, or point at another run")
    if str(task_info.get("name", "")).startswith("pretrain"):
        src = InitSource("workdir", str(path), cfg, tokenizer)

        def encoder():
            src.step, _, params = params_from_workdir(str(path), step)
            return params["albert"]
        src.encoder = encoder
        return src
    cache: dict = {}

    def params():
        if not cache:
            src.step, _, _, _, cache["p"] = finetuned_params(path, step)
        return cache["p"]
    src = InitSource("workdir", str(path), cfg, tokenizer, lambda: params()["albert"],
                     lambda: {k: v for k, v in params().items() if k != "albert"}, task_info)
    return src


def _init_json(path: Path) -> dict:
    """A config.json of ours or of an HF directory: unreadable is an init source the user must fix."""
    try:
        return rundir.read_json(path, required=True)
    except ValueError as e:
        raise InitError(str(e)) from None


def resolve_init(spec: str, step: int | None = None) -> InitSource:
    """What `init=` names, with its model config, tokenizer and (lazily) its parameters."""
    if spec == "random":
        return InitSource("random", spec, None)
    if spec == "minilm":
        path = fetch_minilm() / "model"
        if not path.is_dir():
            path = fetch_minilm()
    else:
        path = Path(spec)
    if not path.exists():
        raise InitError(f"init={spec!r}: no such directory; expected a pretraining or fine-tuning workdir, a "
                        "HuggingFace ALBERT/BERT directory, 'minilm' or 'random'")
    if rundir.seed_dirs(path):
        raise InitError(f"init={spec!r} holds several fine-tuning seeds; point at one of them, e.g. "
                        f"{next(iter(rundir.seed_dirs(path).values()))}")
    if (path / rundir.CONFIG).is_file() and ((path / rundir.CHECKPOINTS).is_dir() or (path / rundir.BEST).is_dir()
                                              or "experiment" in _init_json(path / rundir.CONFIG)):
        return _workdir_source(path, step)  # ours (an "experiment" section), with or without a checkpoint yet
    if (path / "config.json").is_file():  # a HuggingFace directory (its own layout, not a run of ours)
        model_type = _init_json(path / "config.json").get("model_type")
        if model_type == "albert":
            cfg, params = hf.load_hf_pretrained(path, drop_task_head=True)  # the encoder; its head: adopt_hf_head
            enc = params.get("albert", params)
            return InitSource("hf_albert", str(path), cfg, _load_tokenizer(path), lambda: enc,
                              hf_head=hf.hf_task_head(path))
        if model_type == "bert":
            cfg, params = hf.load_bert_safetensors(path)  # the encoder; a BertFor<Task>'s head: adopt_hf_head
            return InitSource("hf_bert", str(path), cfg, _load_tokenizer(path), lambda: params,
                              hf_head=hf.hf_task_head(path))
        raise InitError(f"init={spec!r}: config.json has model_type={model_type!r}; expected albert or bert")
    raise InitError(f"init={spec!r} is neither a workdir of ours (config.json + checkpoints/) nor a HuggingFace "
                    "directory (config.json + weights)")


def _merge(fresh: dict, loaded: dict, where: str) -> dict:
    """`loaded` into `fresh`, leaf by leaf; a missing or misshapen leaf is named."""
    out = {}
    for k, v in fresh.items():
        path = f"{where}/{k}"
        if k not in loaded:
            if k == "pooler":  # e.g. a token-tagging run as the source: the pooler starts fresh
                log.warning("%s is not in the init source; it starts from random weights", path)
                out[k] = v
                continue
            raise InitError(f"the init source has no {path}; it was not trained with this architecture")
        if isinstance(v, dict):
            out[k] = _merge(v, loaded[k], path)
        else:
            if tuple(v.shape) != tuple(loaded[k].shape):
                raise InitError(f"{path}: the init source has shape {tuple(loaded[k].shape)}, the model needs "
                                f"{tuple(v.shape)}")
            out[k] = np.asarray(jax.device_get(loaded[k]), v.dtype)  # host: the state builder lays it out
    return out


def model_config(config, src: InitSource, tokenizer) -> AlbertConfig:
    """The fine-tuning model: the source's architecture with this run's knobs (dropout, dtype, scan, remat)."""
    if src.kind == "random":
        cfg = model_from_section(config.model, vocab_size=config.model.vocab_size or tokenizer.vocab_size)
    else:
        cfg = src.model_cfg.replace(**{k: config.model[k] for k in schema.FINETUNE_MODEL_KNOBS})
        if config.depth:
            cfg = with_depth(cfg, config.depth, src.path)
    if config.data.max_seq_length > cfg.max_position_embeddings:
        raise InitError(f"data.max_seq_length={config.data.max_seq_length} exceeds the model's "
                        f"max_position_embeddings={cfg.max_position_embeddings}")
    return cfg


def with_depth(cfg: AlbertConfig, depth: int, where: str) -> AlbertConfig:
    """The source's architecture applied `depth` times. Only a stack whose parameters do not depend on the depth
    (every part shared, no per-layer sharing_map) can: the same weights then serve any number of layers."""
    if cfg.sharing != "all" or cfg.sharing_map:
        what = f"sharing_map={cfg.sharing_map!r}" if cfg.sharing_map else f"sharing={cfg.sharing!r}"
        raise InitError(f"depth={depth}: {where} has {what}, whose parameters are per layer or per set; only an "
                        "all-shared model (sharing='all', no sharing_map) can run at another depth")
    return cfg.replace(num_hidden_layers=depth)


def initial_params(task, model_cfg, src: InitSource, seed: int, reset_head: bool) -> dict:
    """The fine-tuning's first parameters: the source's encoder (and head, where it is reused) merged into the
    model's tree; every leaf the source does not give starts from the model's own initialiser with `seed`."""
    rng = jax.random.PRNGKey(seed)
    if src.kind == "random":
        return st.fresh_params(task, model_cfg, rng)
    shapes = nn.unbox(st.abstract_params(task, model_cfg))  # what to merge into; unfilled leaves stay abstract
    out = dict(shapes)
    out["albert"] = _merge(shapes["albert"], src.encoder(), "albert")
    if src.head is not None and not reset_head and src.head_reused:
        head = src.head()
        if src.head_order is not None:
            head = _reorder_head(head, src.head_order)
        out.update({k: _merge(shapes[k], v, k) for k, v in head.items() if k in shapes})
    flat = traverse_util.flatten_dict(out)
    missing = tuple(path for path, v in flat.items() if isinstance(v, jax.ShapeDtypeStruct))
    flat.update(st.fresh_params(task, model_cfg, rng, only=missing) if missing else {})
    return traverse_util.unflatten_dict(flat)


def _reorder_head(head: dict, order: list[int]) -> dict:
    """The head's output units in this task's label order: unit j of the result is the source's unit order[j]
    (every kernel and bias whose last axis is the label axis)."""
    n = len(order)

    def take(a):
        a = np.asarray(jax.device_get(a))
        return a[..., order] if a.ndim and a.shape[-1] == n else a
    return jax.tree.map(take, head)


def head_labels(task) -> list[str] | None:
    """The names of a task's outputs, in order (a tagging task's tags, a classifier's label names), or None where
    it has none that mean anything (regression, spans, multiple choice, HF's generic LABEL_<i>)."""
    if getattr(task, "tags", None) is not None:
        return [str(t) for t in task.tags]
    n = getattr(task, "num_labels", None)
    if not isinstance(n, int) or n < 2:
        return None
    try:
        names, _ = label_names(task, "sequence")
    except Exception:  # a task without a label source: no names to match
        return None
    return None if not names or names == [f"LABEL_{i}" for i in range(n)] else [str(x) for x in names]


def match_labels(mine: list[str], theirs: list[str]) -> tuple[str, list[int] | None] | None:
    """('reuse', None) for the same names in the same order, ('remap', order) for the same names in another
    order (order[j]: the index in `theirs` of mine[j]), None when the names differ."""
    if mine == theirs:
        return "reuse", None
    if len(set(mine)) == len(mine) and sorted(mine) == sorted(theirs):
        return "remap", [theirs.index(x) for x in mine]
    return None


# The kind of HF head each task kind can take over, ALBERT's or BERT's (Albert... / Bert... + this).
HF_HEAD_OF = {"ClassificationTask": "ForSequenceClassification", "TaggingTask": "ForTokenClassification"}


def adopt_hf_head(task, src: InitSource, reset_head: bool) -> None:
    """An HF {Albert,Bert}For{Sequence,Token}Classification's classifier serves this task when it is that kind of head,
    with as many labels, and the same label names where both have names (HF's generic LABEL_<i> match any);
    otherwise, or with reset_head, the new head starts fresh, and the log says why."""
    h = src.hf_head
    if h is None or reset_head:
        return
    kind = type(task).__name__
    n = getattr(task, "num_labels", None)
    names = None
    if kind in HF_HEAD_OF:
        names, _ = label_names(task, "token" if kind == "TaggingTask" else "sequence")
        names = None if names == [f"LABEL_{i}" for i in range(n)] else names  # generic: no names to compare
    why = None
    if kind not in HF_HEAD_OF or not h["architecture"].endswith(HF_HEAD_OF[kind]):
        why = f"it is an {h['architecture']} head, task {task.name} needs a *{HF_HEAD_OF.get(kind, 'another kind')}"
    elif h["weight"].shape[0] != n:
        why = f"it has {h['weight'].shape[0]} labels, task {task.name} has {n}"
    order = None
    if not why and names and h["labels"] and h["labels"] != list(names):
        matched = match_labels(list(names), list(h["labels"]))
        if matched is None:
            why = f"its labels {h['labels']} are not task {task.name}'s {list(names)}"
        else:
            order = matched[1]
    if why:
        log.warning("%s: its task head is not reused (%s); the new head starts fresh", src.path, why)
        return
    weight, bias = h["weight"], h["bias"]
    src.head = lambda: {"classifier": {"kernel": weight.T, "bias": bias}}  # torch Linear is [out, in]
    src.task = {"name": task.name, "kind": kind, "num_labels": n}
    src.head_reused, src.head_order = True, order
    if order is None:
        log.info("%s: its %s head (%d labels) is reused (reset_head=true starts a new one)", src.path,
                 h["architecture"], n)
    else:
        log.info("%s: its %s head (labels %s) is reused with its rows remapped to task %s's order %s "
                 "(reset_head=true starts a new one)", src.path, h["architecture"], _names(h["labels"]),
                 task.name, _names(names))


def _names(labels) -> str:
    return "[" + ", ".join(map(str, labels)) + "]"


def plan_head(task, src: InitSource, reset_head: bool) -> str | None:
    """Whether a fine-tuned source's head serves this task, decided by the label names, in order: the same names
    reuse it, the same names in another order reuse it with its output rows remapped, other names (or another kind
    of head) start a fresh head. Where either side has no label names (regression, spans, HF's LABEL_<i>), the
    same task name with as many outputs reuses it. One log line says which; returns 'reuse' | 'remap' | 'reset'
    (None: the source has no task head)."""
    theirs = src.task or {}
    if src.head is None:
        return None
    src.head_reused, src.head_order = False, None
    what = f"{src.path}: its task head (task {theirs.get('name')}"
    if reset_head:
        log.info("%s) is reset (reset_head=true); the new head starts fresh", what)
        return "reset"
    mine_kind = task.describe().get("kind")
    why = None
    if theirs.get("kind") != mine_kind:
        why = f"it is a {theirs.get('kind')} head, task {task.name} needs a {mine_kind}"
    else:
        try:
            old = head_labels(task_of_run(theirs, src.model_cfg))
        except Exception:  # a task this version cannot rebuild: its names are unknown
            old = None
        mine = head_labels(task)
        if mine and old:
            what += f", labels {_names(old)}"
            matched = match_labels(mine, old)
            if matched is None:
                why = f"its labels are not task {task.name}'s {_names(mine)}"
            elif matched[0] == "remap":
                src.head_reused, src.head_order = True, matched[1]
                log.info("%s) is reused with its rows remapped to task %s's order %s (reset_head=true starts a "
                         "new one)", what, task.name, _names(mine))
                return "remap"
        elif theirs.get("num_labels") != getattr(task, "num_labels", None):
            why = (f"it has {theirs.get('num_labels')} outputs, task {task.name} has "
                   f"{getattr(task, 'num_labels', None)}")
        elif theirs.get("name") != task.name:
            why = (f"no label names to match it by, and its task is not {task.name} (name the labels in a task "
                   "file's \"labels\" to match them)")
    if why:
        log.warning("%s) is not reused (%s); the new head starts fresh", what, why)
        return "reset"
    src.head_reused = True
    log.info("%s) is reused for task %s (reset_head=true starts a new one)", what, task.name)
    return "reuse"


def _tokenizer_for(config, src: InitSource):
    if config.data.tokenizer:
        tok = tokenization.load_tokenizer(config.data.tokenizer)
        if src.tokenizer is not None and src.tokenizer.fingerprint != tok.fingerprint:
            raise InitError(f"data.tokenizer={config.data.tokenizer} is not the tokenizer {src.path} was trained "
                            "with (their vocabularies differ); leave data.tokenizer empty to use the source's")
        return tok
    if src.tokenizer is None:
        where = "init=random" if src.kind == "random" else f"init={src.path} has no tokenizer and"
        raise InitError(f"{where} needs data.tokenizer (a SentencePiece .model, or a workdir or HF directory "
                        "holding one)")
    return src.tokenizer


def _summarise(per_seed: list[dict]) -> dict:
    out: dict[str, dict] = {}
    for part in ("dev", "test"):
        keys = sorted({k for r in per_seed for k in r.get(part, {})})
        for k in keys:
            vals = [r[part][k] for r in per_seed if k in r.get(part, {})]
            out.setdefault(part, {})[k] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals),
                                           "values": vals}
    return out


def student_model(config) -> tuple[InitSource, Any, AlbertConfig]:
    """(init source, tokenizer, model config) of the run `config` describes, checked against each other."""
    src = resolve_init(config.init, config.init_step or None)
    tokenizer = _tokenizer_for(config, src)
    model_cfg = model_config(config, src, tokenizer)
    tokenization.check_vocab_matches(tokenizer, model_cfg.vocab_size)
    return src, tokenizer, model_cfg


def planned_task_and_model(config) -> tuple[Any, AlbertConfig]:
    """The task (with its head) and model a fine-tuning run of `config` trains, without reading its data: what
    the planner (albert_jax/plan) compiles. init=random with no tokenizer named takes model.vocab_size, or the
    paper's 30,000."""
    task = make_task(config.task)
    if config.init == "random" and not config.data.tokenizer:
        model_cfg = model_from_section(config.model, vocab_size=config.model.vocab_size or PAPER_VOCAB)
    else:
        model_cfg = student_model(config)[2]
    return with_head(task, config.head, model_cfg.num_hidden_layers), model_cfg


def resolve_schedule(config, train_rows: int) -> tuple[Any, dict]:
    """The config with train.num_train_steps resolved from train.num_epochs (when > 0: ceil(epochs * training rows /
    batch_size); the rows an epoch of the train iterator walks, a span task's windows), and what was resolved, for
    results.json. The resolved config is the one the run records in config.json."""
    t = config.train
    epochs = float(t.num_epochs or 0.0)
    if not epochs:
        return config, {"num_train_steps": t.num_train_steps}
    steps = max(1, math.ceil(epochs * train_rows / t.batch_size))
    config = copy.deepcopy(config)
    config.train.num_train_steps = steps
    log.info("train.num_epochs=%g: %d training rows / batch %d -> train.num_train_steps=%d", epochs, train_rows,
             t.batch_size, steps)
    return config, {"num_epochs": epochs, "train_rows": train_rows, "batch_size": t.batch_size,
                    "num_train_steps": steps}


def _stopped(result, num_train_steps: int) -> dict:
    """Why a finished seed stopped where it did, for results.json."""
    if result.early_stop:
        return result.early_stop
    return {"step": result.step, "reason": "num_train_steps", "num_train_steps": num_train_steps}


def finetune(config, workdir: str, make_run_task: Callable | None = None, kind: str = "finetune") -> dict:
    """Fine-tune `config.task`; `make_run_task(task, model_cfg) -> task` may wrap the task first (distillation
    does: runs/distill.py, kind='distill'), everything else is the same core."""
    validate.validate(config, "finetune", workdir)  # the whole config, in seconds, before any data is read
    wdir.claim_kind(workdir, kind)  # not a pretraining run's workdir
    validate.resolve_paths(config, "finetune")  # recorded absolute: a resume from another directory finds them
    init_distributed(config)
    validate.check_devices(config)
    task = make_task(config.task)
    src, tokenizer, model_cfg = student_model(config)
    task = with_head(task, config.head, model_cfg.num_hidden_layers)  # PABEE: one classifier per layer
    plan_head(task, src, config.reset_head)
    adopt_hf_head(task, src, config.reset_head)
    if make_run_task is not None:
        task = make_run_task(task, model_cfg)
    data = task.prepare(tokenizer, config.data.max_seq_length, limit=config.data.limit,
                        train_examples=config.data.train_examples)
    data.buckets = bucketing.bucket_lengths(config.data.max_seq_length, config.data.get("buckets", "off"))
    config, schedule = resolve_schedule(config, len(data.train))
    if "num_epochs" in schedule:
        validate.check_schedule(config.train, warn=log.warning)  # now that the steps are known
    base_seed = config.train.seed
    per_seed = []
    for i in range(config.num_seeds):
        seed = base_seed + i
        wd = str(rundir.seed_dir(workdir, seed))
        done = Path(wd) / rundir.RESULTS
        if done.is_file():
            per_seed.append(rundir.read_json(done, required=True))
            log.info("seed %d: already finished (%s)", seed, done)
            continue
        cfg = copy.deepcopy(config)
        cfg.train.seed = seed
        run = loop.Run(task=task, data=data, model_cfg=model_cfg, config=cfg,
                       init_params=lambda s=seed: initial_params(task, model_cfg, src, s, config.reset_head),
                       select=task.headline, extra_meta={"init": {"kind": src.kind, "path": src.path}})
        result = loop.train(run, wd)
        if result.stopped:
            log.warning("seed %d stopped by a signal at step %d; rerun to continue", seed, result.step)
            return {"stopped": True, "seed": seed, "step": result.step, "signal": result.signal}
        best_dir = ckpt.Checkpointer(os.path.join(wd, rundir.BEST), keep=1)
        best = best_dir.restore_latest(result.abstract_state)
        best_dir.close()
        if best is None:
            raise FinetuneError(f"{wd}/best holds no checkpoint: no dev evaluation ran (train.eval_every="
                           f"{config.train.eval_every} > train.num_train_steps={config.train.num_train_steps}?)")
        best_step, best_state, _, best_meta = best
        test = result.evaluate(best_state.params, data.test_sets) if data.test else {}
        kept: dict = {}  # the best checkpoint's per-example dev predictions: the tables bootstrap over them
        result.evaluate(best_state.params, data.eval_sets, keep=kept)
        if hasattr(task, "example_scores"):  # scores decoded from the predictions (SQuAD's F1 per question)
            for name, preds in kept.items():
                preds.update(task.example_scores(preds, data.eval_sets[name].features))
        if jax.process_index() == 0:
            examples.save_examples(os.path.join(wd, examples.BEST_EXAMPLES_FILE), kept)
        record = {"seed": seed, "best_step": best_step, "select": task.headline,
                  "dev": best_meta.get("eval", {}), "test": test, "final_dev": result.eval,
                  "schedule": schedule, "stopped": _stopped(result, config.train.num_train_steps)}
        if jax.process_index() == 0:
            tmp = done.with_suffix(".tmp")
            tmp.write_text(json.dumps(record, indent=1))
            os.replace(tmp, done)
        per_seed.append(record)
    summary = {"task": task.name, "init": {"kind": src.kind, "path": src.path}, "schedule": schedule, "seeds": per_seed,
               "summary": _summarise(per_seed), "data": data.summary}
    if jax.process_index() == 0:
        with open(os.path.join(workdir, rundir.RESULTS), "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1)
    return summary
