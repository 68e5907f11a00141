"""The one owner of a run directory's layout; everything that writes or reads a run goes through these names.

    <run>/config.json          what the run was (training/workdir.py: which settings may differ on resume)
    <run>/metrics.jsonl        one JSON record per log or evaluation
    <run>/checkpoints/<step>/  orbax steps, digit-named folders (training/checkpoints.py)
    <run>/best/<step>/         the best dev evaluation of a fine-tuning run
    <run>/results.json         what the run reports when it has finished
    <workdir>/kind.json        which command's run the workdir holds: pretrain, finetune or distill

A fine-tuning workdir holds one such run per seed, `seed-<s>/`, and its own results.json over every seed.

Reading them goes through this module too, one reader per file, one rule each:
- `read_metrics(path)`: metrics.jsonl. A process killed mid-write leaves its last line cut short: a last line that
  is not a JSON object is dropped with one warning (the crash case: a record cut anywhere before its closing brace
  does not parse; one cut right after it is whole and is kept). A bad line anywhere else is damage, not a crash:
  ValueError naming file:line. `truncate_metrics` is the same rule for a resume that rolls the file back.
- `read_config(run, required)`: config.json, with its experiment config filled in from the schema
  (configs/schema.complete), so a run recorded before a field existed reads that field's default.
- `read_json(path)`: results.json, kind.json (and a sweep's row.json): a dict, or None when it is missing or
  unreadable (a results.json cut by a kill is a run that has not finished); `required=True` raises instead.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from albert_jax.configs import schema

log = logging.getLogger(__name__)

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
    p = Path(workdir)
    kind_file = p / KIND
    if kind_file.is_file():
        kind = (read_json(kind_file) or {}).get("kind")
        if kind in RUN_KINDS:
            return kind, f"recorded in {kind_file}"
    if not p.is_dir():
        return None, ""
    if seed_dirs(p):
        return ("distill" if (p / "teacher").is_dir() else "finetune"), f"it has {_SEED}*/ directories"
    if (p / CONFIG).is_file():
        task = (read_json(p / CONFIG) or {}).get("task") or {}
        if isinstance(task, dict) and str(task.get("name", "")).startswith("pretrain"):
            return "pretrain", f"{p / CONFIG} records task {task['name']}"
    return None, ""


# ---------------------------------------------------------------------------------------------------- reading
def read_json(path, *, required: bool = False) -> dict | None:
    """A run's JSON file (results.json, kind.json, config.json as it is on disk) as a dict. Missing, or not a
    JSON object (a file cut by a kill, or not ours): None, with a warning for the unreadable one; with
    `required`, FileNotFoundError or ValueError naming the file (and line) instead."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise FileNotFoundError(f"{path} does not exist") from None
        return None
    try:
        value = json.loads(text)
        problem = None if isinstance(value, dict) else f"a JSON {type(value).__name__}, not an object"
    except json.JSONDecodeError as e:
        value, problem = None, f"line {e.lineno}: not valid JSON ({e.msg})"
    if problem is None:
        return value
    if required:
        raise ValueError(f"{path}: {problem}")
    log.warning("%s: %s; read as absent", path, problem)
    return None


def read_config(run, required: bool = True) -> dict | None:
    """The record a run wrote in `run`/config.json, its experiment config filled in with every field the schema
    declares at its default (configs/schema.complete): what a resume compares, and what a later version reads of a
    run recorded before a field existed. Without config.json: FileNotFoundError naming the directory, or None when
    not `required`; an unreadable one raises (a record is written whole: os.replace)."""
    path = Path(run) / CONFIG
    if not path.is_file():
        if required:
            raise FileNotFoundError(f"{run} is not a run's workdir (no {CONFIG})")
        return None
    record = read_json(path, required=True)
    if isinstance(record.get("experiment"), dict):
        schema.complete(record["experiment"])
    return record


def _metric_lines(path) -> list[tuple[str, dict[str, Any]]]:
    """(line, record) of every record of a metrics.jsonl, by the rule in the module docstring."""
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    last = max((i for i, ln in enumerate(lines) if ln.strip()), default=-1)
    out = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            problem = None if isinstance(record, dict) else "not a JSON object"
        except json.JSONDecodeError as e:
            problem = f"not a JSON object ({e.msg})"
        if problem is None:
            out.append((line, record))
        elif i == last:
            log.warning("%s:%d: last line cut short (a run killed while writing it?): dropped", path, i + 1)
        else:
            raise ValueError(f"{path}:{i + 1}: {problem}")
    return out


def read_metrics(path) -> list[dict[str, Any]]:
    """The records of a metrics.jsonl file (`<run>/METRICS`), in file order; a resumed run may repeat a step
    (the later record is the one that counts). A cut last line is dropped with a warning; a bad line elsewhere
    raises ValueError naming file:line. A missing file: FileNotFoundError (`path.is_file()` first where a run may
    not have logged yet)."""
    return [record for _, record in _metric_lines(path)]


def truncate_metrics(path, last_step: int) -> list[dict[str, Any]]:
    """For a run resuming from `last_step`: drop the records past it (they describe training the resume rolls
    back) and a cut last line, rewriting the file (atomically) only if something goes; the kept records, which the
    run's clock continues from. [] when there is no file yet."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        before = f.read()
    kept = [(line, r) for line, r in _metric_lines(path) if r.get("step", 0) <= last_step]
    text = "".join(line if line.endswith("\n") else line + "\n" for line, _ in kept)  # appends start a new line
    if text != before:
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    return [r for _, r in kept]
