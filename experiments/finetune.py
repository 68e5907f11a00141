"""Fine-tuning one downstream task from any checkpoint, with the paper's protocol (Table 14), several seeds.

Run:
  albert-jax finetune --workdir W \
      --config experiments/finetune.py:task=rt_sentiment,init=workdirs/demo/table5/cpu/sop/pretrain,scale=cpu
  albert-jax finetune --config experiments/finetune.py:task=rt_sentiment,init=random,scale=cpu \
      --set data.tokenizer=workdirs/demo/table5/cpu/sop/pretrain --workdir W_random
  albert-jax finetune --config experiments/finetune.py:task=mrpc,init=<HF ALBERT dir>,scale=paper --workdir W

Arguments after ':' (comma list): declared in ARGS below (`albert-jax config args experiments/finetune.py` prints
them). task= is a registered task (albert_jax/tasks/registry.py) or your task file .json (your own CSV/TSV/JSONL,
CoNLL or SQuAD files: albert_jax/tasks/from_files.py, docs/finetuning.md).

Scales: `smoke` (tests: 256 examples per split, a few steps), `cpu` (this 2-core machine: minutes per seed; the
same hyperparameters for every task, chosen once and not tuned per task: AdamW 1e-4, batch 32, 400 steps, 10%
warmup, no encoder dropout, classifier dropout 0.1, 3 seeds), `paper` (the task's Table 14 row: learning rate,
batch, steps, warmup, dropout, max length; 5 seeds, median reported as the paper does).
With init=random the model section holds the whole architecture; otherwise the architecture is the init
source's and the model section holds only what fine-tuning may change (dropout, dtype, scan, remat).
"""
from __future__ import annotations

from pathlib import Path

import ml_collections

from albert_jax.config import model_section, preset
from albert_jax.configs import overrides
from albert_jax.configs import schema
from albert_jax.configs.arguments import Arg, Derived, parse_args
from albert_jax.configs.scales import PAPER_REMAT, SCALES
from albert_jax.runs.validate import near
from albert_jax.tasks import from_files
from albert_jax.tasks.protocol import protocol

ARGS = (
    Arg("task", default="rt_sentiment", help="a registered task (albert_jax/tasks/registry.py) or a task file .json"),
    Arg("init", typed_as="init", help="a pretraining or fine-tuning workdir, a HuggingFace ALBERT/BERT directory, "
        "minilm or random"),
    Arg("scale", allowed=SCALES, default="smoke", help="smoke (tests), cpu (minutes per seed on 2 cores) or paper"),
    Arg("seeds", typed_as="num_seeds", default=Derived("1 at smoke, 3 at cpu, 5 at paper",
                                                       lambda a: {"smoke": 1, "cpu": 3, "paper": 5}[a["scale"]]),
        help="fine-tuning seeds; the median is reported"),
    Arg("preset", default=Derived("albert-base at scale=paper, else smoke",
                                  lambda a: "albert-base" if a["scale"] == "paper" else "smoke"),
        help="the model preset, for init=random (albert_jax/config.py)"),
    Arg("head", typed_as="head", help="default: the task's own; pabee: a classifier after every layer, "
        "patience-based early exit"),
    Arg("depth", typed_as="depth"),
    Arg("model.<field>", help="a model field (AlbertConfig), typed as that field; with an init source, only "
        "those fine-tuning may change"),
)


def get_config(arg: str = "") -> ml_collections.ConfigDict:
    from albert_jax.tasks.registry import CATALOG, LOCAL, TASKS, make_task  # noqa: PLC0415  heavy: grain, jax

    args, model_args = parse_args(arg, ARGS)
    scale = args["scale"]
    task_name = args["task"]
    if from_files.is_task_file(task_name):
        task_name = str(Path(task_name).resolve())  # the run may resume from another folder
    elif task_name not in TASKS:
        raise ValueError(f"task={task_name!r}: unknown task{near(task_name, TASKS)}; local tasks (offline): "
                         f"{', '.join(LOCAL)}; TFDS catalog tasks: {', '.join(CATALOG)}")
    task = make_task(task_name)
    row = protocol(task.table14)
    # Every field's type, default and role: albert_jax/configs/schema.py. Here: the values that depend on the scale.
    by_scale = lambda smoke, cpu, paper: {"smoke": smoke, "cpu": cpu, "paper": paper}[scale]  # noqa: E731
    c = ml_collections.ConfigDict()
    c.experiment, c.arg, c.scale = "finetune", arg, scale
    c.update(schema.section(
        schema.FINETUNE_TOP, task=task_name, init=args["init"],
        # pabee: albert_jax/tasks/early_exit.py, docs/compression.md; an all-shared source's weights serve any depth.
        head=args["head"], depth=args["depth"], num_seeds=args["seeds"]))

    model_preset = args["preset"]
    base = preset(model_preset)
    albert_dropout = row.albert_dropout if scale == "paper" else 0.0
    base = base.replace(hidden_dropout_prob=albert_dropout, attention_probs_dropout_prob=albert_dropout,
                        classifier_dropout_prob=row.classifier_dropout, vocab_size=1,
                        # scanned, no more memory than unrolled (configs/scales.py)
                        **({"remat_policy": PAPER_REMAT} if scale == "paper" else {}))
    section = model_section(base)
    if c.init == "random":
        c.model = section
        c.model.vocab_size = 0  # 0: the tokenizer's
    else:
        c.model = ml_collections.ConfigDict({k: section[k] for k in schema.FINETUNE_MODEL_KNOBS})
    c.model_preset = model_preset

    c.data = schema.section(
        schema.FINETUNE_DATA,
        max_seq_length=by_scale(64, min(task.max_seq_length, 128), row.max_seq_length),
        limit=256 if scale == "smoke" else 0,  # examples per split (0: all)
        # Length bucketing (albert_jax/data/bucketing.py): each batch is cut to the shortest of these padded lengths
        # that holds its longest row: 'auto' (16, 32, 64, ... max_seq_length), 'off', or a list such as '32,64,96'.
        # Exact (the same losses and metrics as full-length batches); one compiled step per length. Off at the smoke
        # scale: a run of 12 steps on 256 examples is compile time, and every extra length is one more compile.
        buckets="off" if scale == "smoke" else "auto")
    c.train = schema.section(
        schema.FINETUNE_TRAIN,
        optimizer="adamw",  # the official fine-tuning optimizer
        learning_rate=by_scale(1e-4, 1e-4, row.learning_rate),
        batch_size=by_scale(16, 32, row.batch_size),
        num_train_steps=by_scale(12, 400, row.num_train_steps),
        warmup_steps=by_scale(2, 40, row.warmup_steps),
        log_every=by_scale(4, 50, 100),
        eval_every=by_scale(6, 100, 1000),
        eval_batches=0,  # 0: every dev example
        checkpoint_every=by_scale(12, 200, 2000),
        keep_checkpoints=1)
    c.mesh = schema.section(schema.MESH)
    c.distributed = schema.section(schema.DISTRIBUTED)
    for key, raw in model_args.items():
        overrides.set_field(c, key, raw)
    return c
