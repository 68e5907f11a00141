"""Distillation into ALBERT: a fine-tuned teacher's soft targets plus the hard labels, on the fine-tuning core.

Run (docs/compression.md, "Distillation"):
  albert-jax finetune --config experiments/finetune.py:task=rt_sentiment,init=minilm,scale=cpu,seeds=1 \
      --set data.max_seq_length=64 --workdir runs/teacher_rt
  albert-jax distill --config experiments/distill.py:task=rt_sentiment,init=<all-shared pretraining run>,\
teacher=runs/teacher_rt/seed-0,scale=cpu --set data.max_seq_length=64 --workdir runs/distill_rt

Arguments after ':' are experiments/finetune.py's (init = the STUDENT's init) plus the distill section's fields
(ARGS below; `albert-jax config args experiments/distill.py` prints them all). hidden_weight (pooled-vector
matching) needs equal hidden sizes. The defaults are
Hinton et al.'s usual T=2 with the soft and hard terms weighted equally (alpha=0.5), no hidden matching; the
schedule is the fine-tuning scale's, unchanged, so a distilled student is compared with a plain fine-tuned one
at equal steps.
"""
from __future__ import annotations

import os

import ml_collections

from albert_jax.configs import overrides
from albert_jax.configs import schema
from albert_jax.configs.arguments import Arg, parse_args
from albert_jax.configs.loader import load_module

# The fine-tuning config beside this file is the whole run; distillation adds only its own section.
FINETUNE = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "finetune.py"))
ARGS = FINETUNE.ARGS + tuple(Arg(name, sets=f"distill.{name}") for name in schema.DISTILL)


def get_config(arg: str = "") -> ml_collections.ConfigDict:
    _, mine = parse_args(arg, ARGS)  # every argument checked here; the fine-tuning ones are finetune.py's
    rest = {k: v for k, v in overrides.split_arg(arg).items() if k not in schema.DISTILL}
    c = FINETUNE.get_config(",".join(f"{k}={v}" for k, v in rest.items()))
    c.experiment, c.arg = "distill", arg
    c.distill = schema.section(schema.DISTILL)
    for key, raw in mine.items():
        if key.startswith("distill."):
            overrides.set_field(c, key, raw)
    return c
