"""Distillation into ALBERT: a fine-tuned teacher's soft targets plus the hard labels, on the fine-tuning core.

Run (docs/compression.md, "Distillation"):
  albert-jax finetune --config experiments/finetune.py:task=rt_sentiment,init=minilm,scale=cpu,seeds=1 \
      --set data.max_seq_length=64 --workdir runs/teacher_rt
  albert-jax distill --config experiments/distill.py:task=rt_sentiment,init=<all-shared pretraining run>,\
teacher=runs/teacher_rt/seed-0,scale=cpu --set data.max_seq_length=64 --workdir runs/distill_rt

Arguments after ':' are experiments/finetune.py's (task, init = the STUDENT's init, scale, seeds, preset,
model.<field>) plus teacher=<one fine-tuning seed's workdir of the same task>, temperature=<T>, alpha=<weight of
the soft targets>, hidden_weight=<weight of pooled-vector matching; needs equal hidden sizes>. The defaults are
Hinton et al.'s usual T=2 with the soft and hard terms weighted equally (alpha=0.5), no hidden matching; the
schedule is the fine-tuning scale's, unchanged, so a distilled student is compared with a plain fine-tuned one
at equal steps.
"""
from __future__ import annotations

import ml_collections

from albert_jax.configs import overrides
from albert_jax.configs import schema


def get_config(arg: str = "") -> ml_collections.ConfigDict:
    import os

    from albert_jax.configs.loader import load_config

    args = overrides.split_arg(arg)
    mine = {k: args.pop(k) for k in list(args) if k in schema.DISTILL}
    # The fine-tuning config beside this file is the whole run; distillation adds only its own section.
    finetune = os.path.join(os.path.dirname(os.path.abspath(__file__)), "finetune.py")
    c = load_config(finetune + ":" + ",".join(f"{k}={v}" for k, v in args.items()))
    c.experiment, c.arg = "distill", arg
    c.distill = schema.section(schema.DISTILL)
    for key, raw in mine.items():
        overrides.set_field(c, f"distill.{key}", raw)
    return c
