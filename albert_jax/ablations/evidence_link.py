"""`sweep --link-evidence DIR`: a stage another study already finished, taken from that study's evidence.

Within one runs directory a sweep links a stage to an identical finished one (sweep.find_identical, by
fingerprint). That needs the other run's directory on this machine; a study continued elsewhere has only the
other study's committed evidence. Fingerprints there cannot be compared: they hash the paths of the machine that
ran them (a fine-tune's `init`, a twin's tokenizer in the cache). Here a stage is compared by its portable
fingerprint instead: its config as `fingerprint` compares it, with a path to a planned stage's workdir replaced by
that stage's own portable fingerprint (a fine-tune is its settings and the pretraining it starts from, wherever
that ran) and the cache and runs roots by their placeholders.

The other study is planned as this sweep plans its own rows (same --set, --seeds and --tasks, at the evidence's
own scale). A stage of it is taken when it finished in DIR, the command its row.json there records is the one
planned (so the evidence is of that very stage, not of one run with other settings under its name), and its
portable fingerprint is one of this sweep's unfinished stages'. It is copied into this sweep's evidence directory,
so its table still rebuilds from its own evidence alone; byte for byte (git stores a file it already holds once).
"""
from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from albert_jax.ablations import evidence_dir, registry
from albert_jax.ablations.sweep import RowPlan, Stage, SweepError, digest, identity_config, plan, stage_done
from albert_jax.training import rundir


def portable_fingerprint(stage: Stage, planned: dict[str, Stage], runs: Path, memo: dict[str, str]) -> str:
    """The stage's identity with no path of this machine in it (module docstring); `planned` maps each planned
    stage's workdir (as a string) to its stage, `memo` keeps what is computed."""
    key = str(stage.workdir)
    if key not in memo:
        def by_stage(value):
            if isinstance(value, dict):
                return {k: by_stage(v) for k, v in value.items()}
            if isinstance(value, list):
                return [by_stage(v) for v in value]
            if isinstance(value, str) and value in planned and value != key:
                return "stage:" + portable_fingerprint(planned[value], planned, runs, memo)
            return value
        memo[key] = digest(stage.kind, evidence_dir.portable(by_stage(identity_config(stage)), runs))
    return memo[key]


def _recorded_command(stage_evidence: Path) -> str | None:
    """The command the stage ran as, as its row's row.json in the evidence records it (placeholders for roots)."""
    row = rundir.read_json(stage_evidence.parent / "row.json") or {}
    return next((s.get("command") for s in row.get("stages", []) if s.get("name") == stage_evidence.name), None)


def _command_key(command: str | None) -> list[str] | None:
    """A stage's command with its config file named by its file name alone: the planner writes the experiments
    directory relative to the working directory when it lies below it (sweep.plan), so a study run from the
    repository root and one planned from elsewhere record the same stage differently. The config's contents are
    compared by the fingerprint, not here."""
    if command is None:
        return None
    parts = shlex.split(command)
    for i in range(1, len(parts)):
        if parts[i - 1] == "--config":
            file, sep, settings = parts[i].partition(":")
            parts[i] = Path(file).name + sep + settings
    return parts


def _by_workdir(plans: list[RowPlan]) -> dict[str, Stage]:
    return {str(s.workdir): s for p in plans for s in p.stages}


def link(plans: list[RowPlan], roots: list[Path], runs: Path, overrides=None, seeds: int = 1,
         tasks: list[str] | None = None, random_init: bool | None = None, out=sys.stdout) -> int:
    """Copy into this sweep's evidence every unfinished stage of `plans` that a study whose evidence is in one of
    `roots` finished; the number of stages copied."""
    ours = _by_workdir(plans)
    todo = [s for s in ours.values() if not s.done()]
    if any(s.evidence is None for s in todo):
        raise SweepError("--link-evidence copies finished stages into this sweep's own evidence: give --evidence DIR")
    memo: dict[str, str] = {}
    wanted = {portable_fingerprint(s, ours, runs, memo): s for s in todo}
    rows = {str(s.workdir): p.row.name for p in plans for s in p.stages}
    copied = 0
    for root in roots:
        name, scale = evidence_dir.experiment_of(Path(root))
        exp = registry.get(name).with_tasks(tasks)
        theirs = _by_workdir(plan(exp, scale, runs, overrides, seeds=seeds, random_init=random_init,
                                  evidence=Path(root)))
        their_memo: dict[str, str] = {}
        for t in theirs.values():
            s = wanted.get(portable_fingerprint(t, theirs, runs, their_memo))
            if s is None or s.done() or not stage_done(t.kind, t.evidence, s.config()):
                continue
            recorded, planned = _recorded_command(t.evidence), evidence_dir.portable(t.command(), runs)
            if _command_key(recorded) != _command_key(planned):
                print(f"{rows[str(s.workdir)]} · {s.name}: not taken from {name} {t.workdir.parent.name}/{t.name}: "
                      f"its evidence records the command {recorded!r}, not the planned {planned!r}", file=out,
                      flush=True)
                continue
            tmp = s.evidence.with_name(s.evidence.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(t.evidence, tmp)
            shutil.rmtree(s.evidence, ignore_errors=True)
            tmp.rename(s.evidence)
            copied += 1
            print(f"{rows[str(s.workdir)]} · {s.name}: identical to {name} {t.workdir.parent.name}/{t.name}, "
                  f"finished in {root}: its evidence copied, not rerun", file=out, flush=True)
    return copied
