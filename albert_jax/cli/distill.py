"""`albert-jax distill`: a fine-tuned teacher into an (all-shared) ALBERT student, soft targets + hard labels."""
from __future__ import annotations

import json
import time

from albert_jax.cli.common import add_run_arguments, interrupted, run_config, setup_logging


def _run(args) -> int:
    from albert_jax.runs.distill import distill  # noqa: PLC0415  CLI start

    setup_logging(args.log_level)
    config, workdir = run_config(args)
    started = time.time()
    r = distill(config, workdir)
    if r.get("stopped"):
        return interrupted("distill", r, workdir)
    d = r["distill"]
    print(json.dumps({"workdir": workdir, "finished": True, "seconds": round(time.time() - started, 1),
                      "task": r["task"], "student": d["student_median"], "share_of_teacher": d["share_of_teacher"],
                      "params": {"student": d["student_params"], "teacher": d["teacher_params"]},
                      "speed": d["speed"]}, indent=1))
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("distill", help="distil a fine-tuned teacher into an ALBERT student (soft targets at "
                                              "a temperature + hard labels); the student's share of the teacher")
    add_run_arguments(p, "experiments/distill.py:task=rt_sentiment,init=<pretraining run>,"
                         "teacher=<teacher run>/seed-0,scale=cpu")
    p.set_defaults(func=_run)
