"""What every training command shares: loading the experiment config and applying `--set` overrides."""
from __future__ import annotations

import json
import logging
import signal
import sys
import warnings
from pathlib import Path

import ml_collections

from albert_jax.configs.loader import load_config
from albert_jax.configs.overrides import apply_overrides
from albert_jax.training import rundir

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def setup_logging(level: str) -> None:
    """`--log-level` for our own loggers (albert_jax.*: "resumed from step N", the config's warnings...).

    Other libraries' loggers (orbax and absl log dozens of INFO lines per checkpoint, JAX its backend probing) stay
    at WARNING unless the level is DEBUG, so that INFO shows what this program says rather than burying it."""
    name = str(level).upper()
    if name not in LEVELS:
        raise ValueError(f"--log-level={level!r}: allowed {', '.join(LEVELS)}")
    numeric = getattr(logging, name)
    others = numeric if numeric <= logging.DEBUG else max(numeric, logging.WARNING)
    logging.basicConfig(level=others, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr,
                        force=True)
    logging.getLogger("albert_jax").setLevel(numeric)
    if numeric > logging.DEBUG:
        # What orbax says on every read of a checkpoint (absl WARNINGs "Given directory is read only", "setting
        # save_interval_steps=0"; the UserWarning that the sharding comes from the sharding file) carries nothing a
        # user can act on; DEBUG shows it all again.
        logging.getLogger("absl").setLevel(logging.ERROR)
        warnings.filterwarnings("ignore", message="Sharding info not provided when restoring")
        warnings.filterwarnings("ignore", message="Couldn't find sharding info under RestoreArgs")


def load_experiment(spec: str, overrides):
    config = load_config(spec)
    apply_overrides(config, overrides)
    return config


# A run that a signal (SIGTERM, SIGINT) stopped after checkpointing is not finished, and the same command continues
# it: it exits 128 + the signal's number, the shells' convention (130 for Ctrl-C, 143 for SIGTERM), so that
# `pretrain && finetune` in a script stops there. A sweep whose scheduler jobs did not all finish exits 3.
INTERRUPTED = 3


def stopped_status(signum: int | None) -> int:
    return 128 + signum if signum else INTERRUPTED


def interrupted(command: str, result: dict, workdir: str) -> int:
    """For a run a signal stopped: one line on stderr, its results JSON on stdout with "finished": false, and the
    exit status that says so."""
    where = f"seed {result['seed']}, " if "seed" in result else ""
    signum = result.get("signal")
    name = signal.Signals(signum).name if signum else "a signal"
    print(f"albert-jax {command}: stopped by {name} after checkpointing ({where}step {result['step']}); run the "
          "same command to continue", file=sys.stderr)
    print(json.dumps({"workdir": workdir, "finished": False, "step": result["step"], "signal": name,
                      **({"seed": result["seed"]} if "seed" in result else {})}, indent=1))
    return stopped_status(signum)


def recorded_config(workdir):
    """The experiment config a run recorded in its config.json; for a fine-tuning workdir, its first seed's (which
    holds the base seed: seed-<s> records train.seed = s)."""
    path = Path(workdir)
    if not (path / rundir.CONFIG).is_file():
        seeds = rundir.seed_dirs(path) if path.is_dir() else {}
        if not seeds or not (next(iter(seeds.values())) / rundir.CONFIG).is_file():
            raise ValueError(f"--resume {workdir}: no {rundir.CONFIG} there (nor in a seed-<s>/ directory): not a run "
                             "this program started")
        path = next(iter(seeds.values()))
    recorded = rundir.read_config(path, required=True)  # its experiment config filled in from the schema
    if "experiment" not in recorded:
        raise ValueError(f"--resume {workdir}: {path / rundir.CONFIG} records no experiment config")
    return ml_collections.ConfigDict(recorded["experiment"])


def run_config(args):
    """(config, workdir) of a training command: `--config` + `--workdir`, or `--resume WORKDIR` (the config that
    run recorded, so a resume needs no retyped --set); `--set` applies on top of either."""
    if args.resume:
        if args.config:
            raise ValueError("--resume reads the config the run recorded: drop --config (add --set to change a field)")
        if args.workdir and args.workdir != args.resume:
            raise ValueError(f"--resume {args.resume} continues that run in its own workdir; drop --workdir "
                             f"{args.workdir}")
        config = recorded_config(args.resume)
        apply_overrides(config, args.set)
        return config, args.resume
    if not args.config or not args.workdir:
        raise ValueError("--config and --workdir are required (or --resume WORKDIR to continue a run with the config "
                         "it recorded)")
    return load_experiment(args.config, args.set), args.workdir


def add_run_arguments(p, example: str) -> None:
    p.add_argument("--config", help=f"experiments/<file>.py[:<args>], e.g. {example} (`albert-jax config args "
                   "experiments/<file>.py` lists a file's arguments)")
    p.add_argument("--workdir", help="checkpoints, metrics.jsonl, TensorBoard events, config.json")
    p.add_argument("--resume", metavar="WORKDIR", help="continue the run in WORKDIR with the config it recorded "
                   "(no --config, no retyped --set)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a config field (typed), e.g. train.num_train_steps=50 or model.embedding_size=256")
    p.add_argument("--log-level", default="INFO",
                   help="DEBUG, INFO, WARNING or ERROR, for albert_jax's own messages (other libraries log at "
                   "WARNING unless DEBUG)")


def add_finetuned_run_arguments(p, batch_help: str) -> None:
    """What `predict` and `evaluate` both take to pick a fine-tuned checkpoint and run it."""
    p.add_argument("--workdir", required=True, help="a fine-tuning workdir (its seed-<s>/ directories) or one "
                   "seed's directory")
    p.add_argument("--seed", type=int, default=None, help="which seed (default: the best dev score)")
    p.add_argument("--step", type=int, default=None, help="checkpoint step (default: the seed's best/)")
    p.add_argument("--batch-size", type=int, default=32, help=f"{batch_help} per forward pass (default: 32)")
    p.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING or ERROR (default: WARNING)")
