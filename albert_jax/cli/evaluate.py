"""`albert-jax evaluate`: a fine-tuned run's metrics on a labelled file, as JSON (runs/predict.py)."""
from __future__ import annotations

import json

from albert_jax.cli.common import add_finetuned_run_arguments, setup_logging


def _cmd(args) -> int:
    from albert_jax.runs.predict import Predictor  # noqa: PLC0415  CLI start

    setup_logging(args.log_level)
    predictor = Predictor.load(args.workdir, seed=args.seed, step=args.step, batch_size=args.batch_size)
    records = predictor.labelled_records(args.input)
    metrics = predictor.evaluate(records)
    run = predictor.run
    print(json.dumps({"workdir": run.workdir, "seed": run.seed, "step": run.step, "checkpoint": run.where,
                      "input": args.input, "task": predictor.task.name, "headline": predictor.task.headline,
                      "metrics": metrics}, indent=1))
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser(
        "evaluate", help="a fine-tuned run's metrics (the task's, as on dev) on a labelled file, as JSON",
        description="Scores a labelled FILE with a fine-tuning run (its best seed by dev score and that seed's best "
        "dev checkpoint, unless --seed / --step) and prints the task's metrics as fine-tuning reports them on dev. "
        "FILE is read as a task file's dev split: the task's columns (.tsv/.csv with a header, .jsonl), CoNLL for "
        "tagging, SQuAD JSON for spans; labels by name. docs/finetuning.md, 'Evaluation'.")
    p.add_argument("--input", required=True, help="the labelled file")
    add_finetuned_run_arguments(p, "examples")
    p.set_defaults(func=_cmd)
