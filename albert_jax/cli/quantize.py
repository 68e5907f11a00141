"""`albert-jax quantize`: int8 post-training quantization (qwix) of a fine-tuned run, scored beside float32."""
from __future__ import annotations

import json

from albert_jax.cli.common import setup_logging


def _run(args) -> int:
    from albert_jax.compression.run import quantize_run  # noqa: PLC0415  CLI start

    setup_logging(args.log_level)
    r = quantize_run(args.workdir, args.out, activations=args.activations, seed=args.seed,
                     batch_size=args.batch_size, repeats=args.repeats)
    short = {"out": args.out, "task": r["task"], "source": r["source"], "activations": args.activations,
             "delta_points": r["delta_points"], "bytes_ratio": {k: v["ratio"] for k, v in r["bytes"].items()},
             "examples_per_second": r["throughput"]["examples_per_second"]}
    print(json.dumps(short, indent=1))
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("quantize", help="int8 post-training quantization (qwix) of a fine-tuned run: "
                                               "accuracy, bytes and throughput beside float32")
    p.add_argument("--workdir", required=True, help="a fine-tuning run: seed-<s>/ or the parent holding the seeds")
    p.add_argument("--out", required=True, help="writes checkpoint/ (int8 orbax), quantization.json, results.json")
    p.add_argument("--activations", default="float32", choices=("float32", "int8"),
                   help="float32: weight-only int8 (default); int8: int8 activations too (dynamic, per token)")
    p.add_argument("--seed", type=int, default=None,
                   help="which seed-<s> of a parent workdir (default: the best dev score, as export)")
    p.add_argument("--batch-size", type=int, default=0, help="evaluation and timing batch (default: the run's)")
    p.add_argument("--repeats", type=int, default=20, help="timed rounds per model for the throughput median")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    p.set_defaults(func=_run)
