"""`albert-jax plan`: the training step a config describes, compiled for a TPU slice or GPUs that are not here.

Prints memory per device and whether it fits, FLOPs per step (every loop counted), collectives, a roofline step
time, and the run's predicted wall time and chip-hours (docs/accelerators.md). Exit 0 when it fits, 1 when it does
not; 2 for a usage error (a missing compiler names the package to install).
"""
from __future__ import annotations

import json
import os
import sys

from albert_jax.cli.common import load_experiment, setup_logging

DOES_NOT_FIT = 1


def prepare_compile_only():
    # Compile-only devices: the CPU stays the backend (with libtpu or the CUDA plugin installed, jax would probe
    # for a TPU or GPU at start); this must happen before jax is imported.
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("TPU_ACCELERATOR_TYPE", "v5litepod-1")  # quiets libtpu's "no TPU here" warnings


def _run(args) -> int:
    prepare_compile_only()
    setup_logging(args.log_level)
    from albert_jax.plan import compile as plan_compile  # noqa: PLC0415  CLI start: the planner's modules
    from albert_jax.plan import render, search, targets  # noqa: PLC0415  CLI start: the planner's modules

    config = load_experiment(args.config, args.set)
    target = targets.resolve(args.target)
    if args.max_batch:
        best, probes = search.max_batch(config, target)
        rows = [(f"per-device batch {p.per_device_batch:g}", p, "") for p in probes]
        if args.json:
            print(json.dumps({"max_per_device_batch": best, "probes": [p.to_dict() for p in probes]}, indent=1))
        else:
            print(render.table(rows))
            print(f"largest per-device batch that fits on {args.target}: {best}")
        return 0 if best else DOES_NOT_FIT
    if args.search:
        tried, best = search.search(config, target)
        rows = [(f"mesh {t.mesh['data']}x{t.mesh['fsdp']}x{t.mesh['tensor']} remat {t.remat}", t.report, t.error)
                for t in tried]
        if args.json:
            print(json.dumps({"best": best, "tried": [{"mesh": t.mesh, "remat": t.remat, "error": t.error,
                                                       "report": t.report.to_dict() if t.report else None}
                                                      for t in tried]}, indent=1))
        else:
            print("(mesh data x fsdp x tensor)")
            print(render.table(rows, best))
        return 0 if best is not None else DOES_NOT_FIT
    try:
        report = plan_compile.plan(config, target)
    except plan_compile.DoesNotFit as e:
        report = e.report
    print(json.dumps(report.to_dict(), indent=1) if args.json else render.report(report))
    if not report.fits:
        print(f"albert-jax plan: {report.verdict_line()}", file=sys.stderr)
        return DOES_NOT_FIT
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("plan", help="compile a run's training step for a TPU slice or GPUs that are not "
                              "here: memory and fit, FLOPs, collectives, predicted step time and cost")
    p.add_argument("--config", required=True,
                   help="what pretrain, finetune or distill take: experiments/<file>.py[:<args>], e.g. "
                   "experiments/pretrain.py:scale=paper,preset=albert-base")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config field, as the training "
                   "commands take it (e.g. train.batch_size=1024, model.remat_policy=dots, mesh.fsdp=8)")
    p.add_argument("--target", required=True, help="tpu:<gen>:<topology>[:slices=N] or gpu:<chip>x<count>, e.g. "
                   "tpu:v3:8x8, tpu:v5e:16x16, tpu:v5e:16x16:slices=2, gpu:h100x8")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--max-batch", action="store_true",
                      help="find the largest per-device batch that fits (bisection on compiles)")
    what.add_argument("--search", action="store_true", help="compile each mesh (data x fsdp x tensor) with each "
                      "remat policy and print the table; the best fits with the shortest predicted step")
    p.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING or ERROR")
    p.set_defaults(func=_run)
