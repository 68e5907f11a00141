"""`albert-jax finetune`: one downstream task from any checkpoint, several seeds, the median reported."""
from __future__ import annotations

import json
import time

from albert_jax.cli.common import add_run_arguments, interrupted, run_config, setup_logging


def _run(args) -> int:
    from albert_jax.runs.finetune import finetune  # noqa: PLC0415  CLI start

    setup_logging(args.log_level)
    config, workdir = run_config(args)
    started = time.time()
    result = finetune(config, workdir)
    if result.get("stopped"):
        return interrupted("finetune", result, workdir)
    short = {"workdir": workdir, "finished": True, "seconds": round(time.time() - started, 1),
             "task": result.get("task"),
             "summary": {part: {k: v["median"] for k, v in d.items()} for part, d in result.get("summary", {}).items()}}
    print(json.dumps(short, indent=1))
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("finetune", help="fine-tune a downstream task from a pretraining run, an HF "
                                               "directory or random weights (several seeds, median)")
    add_run_arguments(p, "experiments/finetune.py:task=rt_sentiment,init=workdirs/demo/table5/cpu/sop/pretrain,"
                         "scale=cpu")
    p.set_defaults(func=_run)
