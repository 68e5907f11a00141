"""What every training command shares: loading the experiment config and applying `--set` overrides."""
from __future__ import annotations

import logging
import sys


def setup_logging(level: str) -> None:
    numeric = getattr(logging, str(level).upper(), None)
    if not isinstance(numeric, int):
        raise ValueError(f"--log-level={level!r}: allowed DEBUG, INFO, WARNING, ERROR")
    logging.basicConfig(level=numeric, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr,
                        force=True)


def load_experiment(spec: str, overrides):
    from albert_jax.experiments.args import apply_overrides
    from albert_jax.experiments.loader import load_config

    config = load_config(spec)
    apply_overrides(config, overrides)
    return config


def add_run_arguments(p, example: str) -> None:
    p.add_argument("--config", required=True, help=f"experiments/<file>.py[:<args>], e.g. {example}")
    p.add_argument("--workdir", required=True, help="checkpoints, metrics.jsonl, TensorBoard events, config.json")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a config field (typed), e.g. train.num_train_steps=50 or model.embedding_size=256")
    p.add_argument("--log-level", default="INFO")
