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
from albert_jax.configs import overrides as A
from albert_jax.configs.scales import SCALES, SMOKE_MODEL
from albert_jax.training.optim import WEIGHT_DECAY

from albert_jax.runs.validate import KNOBS  # noqa: E402  (one owner)


def get_config(arg: str = "") -> ml_collections.ConfigDict:
    from albert_jax.runs.validate import near
    from albert_jax.tasks import from_files
    from albert_jax.tasks.protocol import protocol
    from albert_jax.tasks.registry import CATALOG, LOCAL, TASKS, make_task

    args = A.split_arg(arg)
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
    c = ml_collections.ConfigDict()
    c.experiment, c.arg, c.scale = "finetune", arg, scale
    c.task = task_name
    c.init = args.pop("init", "random")
    c.init_step = 0  # 0: the source's best (fine-tuning) or latest (pretraining) checkpoint
    c.reset_head = False  # a fine-tuned source's head is reused for the same task; true starts a new one
    # default: the task's own head; pabee: a classifier after every layer, patience-based early exit
    # (albert_jax/tasks/early_exit.py, docs/compression.md).
    c.head = args.pop("head", "default")
    # 0: the source's depth; k: apply an all-shared source's layer k times (its weights serve any depth).
    c.depth = A.parse_value("depth", args.pop("depth"), int) if "depth" in args else 0
    c.num_seeds = {"smoke": 1, "cpu": 3, "paper": 5}[scale]
    if "seeds" in args:
        c.num_seeds = A.parse_value("seeds", args.pop("seeds"), int)
        if c.num_seeds < 1:
            raise ValueError(f"seeds={c.num_seeds}: must be an integer >= 1")

    model_preset = args.pop("preset", "albert-base" if scale == "paper" else "smoke")
    base = preset(model_preset, **(SMOKE_MODEL if model_preset == "smoke" else {}))
    albert_dropout = row.albert_dropout if scale == "paper" else 0.0
    base = base.replace(hidden_dropout_prob=albert_dropout, attention_probs_dropout_prob=albert_dropout,
                        classifier_dropout_prob=row.classifier_dropout, vocab_size=1)
    section = model_section(base)
    if c.init == "random":
        c.model = section
        c.model.vocab_size = 0  # 0: the tokenizer's
    else:
        c.model = ml_collections.ConfigDict({k: section[k] for k in KNOBS})
    c.model_preset = model_preset

    c.data = ml_collections.ConfigDict()
    c.data.max_seq_length = {"smoke": 64, "cpu": min(task.max_seq_length, 128), "paper": row.max_seq_length}[scale]
    c.data.tokenizer = ""  # empty: the init source's; a .model file or a directory holding one
    c.data.limit = 256 if scale == "smoke" else 0  # examples per split (0: all)
    # Length bucketing (albert_jax/data/bucketing.py): each batch is cut to the shortest of these padded lengths
    # that holds its longest row: 'auto' (16, 32, 64, ... max_seq_length), 'off', or a list such as '32,64,96'.
    # Exact (the same losses and metrics as full-length batches); one compiled step per length. Off at the smoke
    # scale: a run of 12 steps on 256 examples is compile time, and every extra length is one more compile.
    c.data.buckets = "off" if scale == "smoke" else "auto"

    c.train = ml_collections.ConfigDict()
    c.train.optimizer = "adamw"  # the official fine-tuning optimizer
    c.train.learning_rate = {"smoke": 1e-4, "cpu": 1e-4, "paper": row.learning_rate}[scale]
    c.train.batch_size = {"smoke": 16, "cpu": 32, "paper": row.batch_size}[scale]
    c.train.num_train_steps = {"smoke": 12, "cpu": 400, "paper": row.num_train_steps}[scale]
    c.train.warmup_steps = {"smoke": 2, "cpu": 40, "paper": row.warmup_steps}[scale]
    c.train.weight_decay = WEIGHT_DECAY
    c.train.grad_accum_steps = 1
    c.train.log_every = {"smoke": 4, "cpu": 50, "paper": 100}[scale]
    c.train.eval_every = {"smoke": 6, "cpu": 100, "paper": 1000}[scale]
    c.train.eval_batches = 0  # 0: every dev example
    c.train.checkpoint_every = {"smoke": 12, "cpu": 200, "paper": 2000}[scale]
    c.train.keep_checkpoints = 1
    c.train.seed = 0  # seeds are seed, seed+1, ...
    c.train.peak_flops = 0.0
    # Resuming with changed steps/learning rate/warmup/batch/accumulation/weight decay is refused unless true; the
    # change is then recorded in config.json "changes" (docs/training.md, "What a run guarantees").
    c.train.allow_changed_schedule = False

    c.mesh = ml_collections.ConfigDict(dict(data=-1, fsdp=1, tensor=1))
    c.distributed = ml_collections.ConfigDict(dict(coordinator="", num_processes=0, process_id=-1))
    model_args = {k: args.pop(k) for k in list(args) if k.startswith("model.")}
    if args:
        raise ValueError(f"unknown experiment argument(s) {sorted(args)}; allowed: task, init, scale, seeds, preset, "
                         "head, depth, model.<field>")
    for key, raw in model_args.items():
        A.set_field(c, key, raw)
    return c
