"""`albert-jax pretrain`: MLM + SOP/NSP/none from an experiment config."""
from __future__ import annotations

import json
import time

from albert_jax.cli.common import add_run_arguments, interrupted, run_config, setup_logging


def _run(args) -> int:
    from albert_jax.runs.pretrain import pretrain  # noqa: PLC0415  CLI start

    setup_logging(args.log_level)
    config, workdir = run_config(args)
    started = time.time()
    result = pretrain(config, workdir)
    if result.get("stopped"):
        return interrupted("pretrain", result, workdir)
    print(json.dumps({"workdir": workdir, "finished": True, "seconds": round(time.time() - started, 1), **result},
                     indent=1))
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("pretrain", help="pretrain ALBERT (MLM + SOP/NSP/none) from an experiment config")
    add_run_arguments(p, "experiments/pretrain.py:scale=cpu")
    p.set_defaults(func=_run)
