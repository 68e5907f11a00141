"""Fine-tuning one downstream task from any checkpoint, with the paper's protocol (Table 14), several seeds.

Run:
  albert-jax finetune --config experiments/finetune.py:task=rt_sentiment,init=workdirs/demo/table5/cpu/sop/pretrain,scale=cpu --workdir W
  albert-jax finetune --config experiments/finetune.py:task=rt_sentiment,init=random,scale=cpu \
      --set data.tokenizer=workdirs/demo/table5/cpu/sop/pretrain --workdir W_random
  albert-jax finetune --config experiments/finetune.py:task=mrpc,init=<HF ALBERT dir>,scale=paper --workdir W

Arguments after ':' (comma list): task=<name> (albert_jax/tasks/registry.py) or task=<your task file>.json (your own
CSV/TSV/JSONL, CoNLL or SQuAD files: albert_jax/tasks/from_files.py, docs/finetuning.md), init=<pretraining or fine-tuning
workdir | HuggingFace ALBERT/BERT directory | minilm | random>, scale=smoke|cpu|paper, seeds=<count>,
preset=<model preset, for init=random>, head=default|pabee (pabee: a classifier after every layer, patience-based
early exit), depth=<k> (0: the source's; k: an all-shared source applied k times), and model.<field>=<value>.

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
from albert_jax.configs.scales import PAPER_REMAT, SCALES


def get_config(arg: str = "") -> ml_collections.ConfigDict:
    from albert_jax.runs.validate import near
    from albert_jax.tasks import from_files
    from albert_jax.tasks.protocol import protocol
    from albert_jax.tasks.registry import CATALOG, LOCAL, TASKS, make_task

    args = overrides.split_arg(arg)
    scale = args.pop("scale", "smoke")
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r}: allowed {', '.join(SCALES)}")
    task_name = args.pop("task", "rt_sentiment")
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
    num_seeds = overrides.parse_value("seeds", args.pop("seeds"), int) if "seeds" in args else by_scale(1, 3, 5)
    if num_seeds < 1:
        raise ValueError(f"seeds={num_seeds}: must be an integer >= 1")
    c.update(schema.section(
        schema.FINETUNE_TOP, task=task_name, init=args.pop("init", "random"),
        # default: the task's own head; pabee: a classifier after every layer, patience-based early exit
        # (albert_jax/tasks/early_exit.py, docs/compression.md).
        head=args.pop("head", "default"),
        # 0: the source's depth; k: apply an all-shared source's layer k times (its weights serve any depth).
        depth=overrides.parse_value("depth", args.pop("depth"), int) if "depth" in args else 0,
        num_seeds=num_seeds))

    model_preset = args.pop("preset", "albert-base" if scale == "paper" else "smoke")
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
    model_args = {k: args.pop(k) for k in list(args) if k.startswith("model.")}
    if args:
        raise ValueError(f"unknown experiment argument(s) {sorted(args)}; allowed: task, init, scale, seeds, preset, "
                         "head, depth, model.<field>")
    for key, raw in model_args.items():
        overrides.set_field(c, key, raw)
    return c
