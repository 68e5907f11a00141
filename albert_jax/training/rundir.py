"""The one owner of a run directory's layout; everything that writes or reads a run goes through these names.

    <run>/config.json          what the run was (training/workdir.py: which settings may differ on resume)
    <run>/metrics.jsonl        one JSON record per log or evaluation
    <run>/checkpoints/<step>/  orbax steps, digit-named folders (training/checkpoints.py)
    <run>/best/<step>/         the best dev evaluation of a fine-tuning run
    <run>/results.json         what the run reports when it has finished
    <workdir>/kind.json        which command's run the workdir holds: pretrain, finetune or distill

A fine-tuning workdir holds one such run per seed, `seed-<s>/`, and its own results.json over every seed.
"""
from __future__ import annotations

import os
from pathlib import Path

CONFIG = "config.json"
METRICS = "metrics.jsonl"
CHECKPOINTS = "checkpoints"
BEST = "best"
RESULTS = "results.json"
KIND = "kind.json"
RUN_KINDS = ("pretrain", "finetune", "distill")
_SEED = "seed-"


def steps(directory) -> list[int]:
    """The committed steps of a checkpoint directory, ascending (names only; nothing is opened)."""
    d = Path(directory)
    if not d.is_dir():
        return []
    return sorted(int(n) for n in os.listdir(d) if n.isdigit() and (d / n).is_dir())


def latest_step(directory) -> int | None:
    return max(steps(directory), default=None)


def seed_dir(workdir, seed: int) -> Path:
    return Path(workdir) / f"{_SEED}{seed}"


def seed_of(path) -> int | None:
    """The seed of a `seed-<s>` directory, or None for any other name."""
    name = Path(path).name
    suffix = name[len(_SEED):] if name.startswith(_SEED) else ""
    return int(suffix) if suffix.lstrip("-").isdigit() else None


def seed_dirs(workdir) -> dict[int, Path]:
    """seed -> `seed-<s>/` of a fine-tuning workdir, by seed."""
    found = {seed_of(d): d for d in Path(workdir).glob(f"{_SEED}*") if d.is_dir()}
    return dict(sorted((s, d) for s, d in found.items() if s is not None))


def is_run(path) -> bool:
    """A directory that one run wrote: its config and a checkpoint folder."""
    p = Path(path)
    return (p / CONFIG).is_file() and ((p / CHECKPOINTS).is_dir() or (p / BEST).is_dir())


def run_kind(workdir) -> tuple[str | None, str]:
    """(kind, how it is known) of the run a workdir holds: its kind.json, or for a workdir written before runs
    recorded their kind, inferred (seed-*/ directories: fine-tuning, distillation with a teacher/ cache beside
    them; a config.json whose task is pretrain*: pretraining). (None, '') for a new or unrecognised workdir."""
    import json

    p = Path(workdir)
    kind_file = p / KIND
    if kind_file.is_file():
        try:
            kind = json.loads(kind_file.read_text(encoding="utf-8")).get("kind")
        except (ValueError, AttributeError):
            kind = None
        if kind in RUN_KINDS:
            return kind, f"recorded in {kind_file}"
    if not p.is_dir():
        return None, ""
    if seed_dirs(p):
        return ("distill" if (p / "teacher").is_dir() else "finetune"), f"it has {_SEED}*/ directories"
    if (p / CONFIG).is_file():
        try:
            task = json.loads((p / CONFIG).read_text(encoding="utf-8")).get("task") or {}
        except (ValueError, AttributeError):
            task = {}
        if str(task.get("name", "")).startswith("pretrain"):
            return "pretrain", f"{p / CONFIG} records task {task['name']}"
    return None, ""
