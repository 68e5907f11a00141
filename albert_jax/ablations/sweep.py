"""Sweeps: every row of an experiment end to end (pretrain, whose last evaluation is the intrinsic MLM/SOP/NSP
measurement, then fine-tuning on the experiment's tasks), resumable at any moment.

A row's directory `RUNS/<experiment>/<scale>/<row>/` holds `pretrain/` (a pretraining workdir) and
`finetune-<task>/` (a fine-tuning workdir per task, one `seed-<s>/` each) plus `row.json` (the row, the exact
command of every stage and its state). Each stage is one of our ordinary commands, so a stage interrupted at any
moment resumes from its own checkpoint; a finished stage is recognised by what it left on disk (the final
pretraining checkpoint; the fine-tuning results.json with every seed), never by a flag set before the work ended.

A stage is its config, not its row: when a finished stage under the same RUNS has exactly the settings of one
about to run (Table 3 and Table 4 share four rows; most claims are rows of the tables with more fine-tuning
tasks), the sweep links to it instead of training it again (`--no-reuse` trains every stage itself). Each
row.json records a fingerprint of every stage's resolved config for this; a link is a relative symlink, so a
runs directory can be moved, and the finished source is never written to.

Launchers: `local` runs the rows in this process, one after another (with `--jobs N`, their stages as N processes
at a time: ablations/parallel.py); `slurm` (and `submitit-local`, the same
code path on this machine) submits one job per chain of rows through submitit (a row warm-started from another
runs in its source's job, after it); `print` prints one command per chain for any other scheduler.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Iterable

from albert_jax.ablations import evidence_dir, registry
from albert_jax.ablations.evidence import RANDOM_SUFFIX
from albert_jax.configs import schema
from albert_jax.configs.arguments import Arg, Derived, parse_args
from albert_jax.configs.loader import jsonable, load_config
from albert_jax.configs.overrides import apply_overrides
from albert_jax.runs import validate
from albert_jax.training import rundir

STAGE_PREFIXES = ("pretrain.", "finetune.")
log = logging.getLogger(__name__)


class SweepError(ValueError):
    """A sweep cannot run as asked; the message names the row, stage or setting."""


@dataclasses.dataclass
class Stage:
    kind: str  # pretrain | finetune
    name: str  # "pretrain" or "finetune-<task>"
    workdir: Path
    spec: str  # experiments/<file>.py:<args>
    sets: list[str]
    after: Path | None = None  # the workdir of the stage this one reads (its init or warm start): runs first
    evidence: Path | None = None  # where its evidence goes (sweep --evidence: ablations/evidence_dir.py)
    tokenizer_of: Stage | None = None  # a random-init stage: the pretraining whose corpus tokenizer it reads

    def config(self):
        c = load_config(self.spec)
        apply_overrides(c, self.sets)
        return c

    def args(self) -> list[str]:
        """The stage's `albert-jax` arguments: what `command()` prints and what `--jobs` runs (parallel.py)."""
        parts = [self.kind, "--config", self.spec]
        for s in self.sets:
            parts += ["--set", s]
        return parts + ["--workdir", str(self.workdir)]

    def command(self) -> str:
        return shlex.join(["albert-jax", *self.args()])

    def done(self) -> bool:
        """Finished here, or (with an evidence directory) finished wherever its evidence was written."""
        c = self.config()
        return stage_done(self.kind, self.workdir, c) or (self.evidence is not None
                                                           and stage_done(self.kind, self.evidence, c))

    def progress(self) -> str:
        c = self.config()
        if self.kind == "pretrain":
            step = rundir.latest_step(self.workdir / rundir.CHECKPOINTS)
            return f"step {step or 0}/{c.train.num_train_steps}"
        seeds = sum((rundir.seed_dir(self.workdir, c.train.seed + i) / rundir.RESULTS).is_file()
                    for i in range(c.num_seeds))
        return f"{seeds}/{c.num_seeds} seeds"


def _real_paths(value: Any) -> Any:
    """Paths (strings with a separator) that exist become their real paths: a fine-tuning stage whose init is a
    row's `pretrain` link is the stage whose init is the linked run. A bare name ("sop", "rt_sentiment") stays a
    name even if the working directory holds a file of that name."""
    if isinstance(value, dict):
        return {k: _real_paths(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_real_paths(v) for v in value]
    if isinstance(value, str) and os.sep in value and os.path.exists(value):
        return os.path.realpath(value)
    return value


def fingerprint(stage: Stage) -> str:
    """A hash of everything that makes the stage's result what it is: its resolved config, less the spelling of
    the command (`arg`), the number of fine-tuning seeds (a source is used when it holds every seed this stage
    asks for), the settings that change only speed (remat, length bucketing: both exact) and, at their defaults,
    the fields added since fingerprints existed or never written by the experiment files (schema.fingerprint_omits:
    the loader fills those in)."""
    return digest(stage.kind, _real_paths(identity_config(stage)))


def digest(kind: str, config: dict) -> str:
    blob = json.dumps({"kind": kind, "config": config}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def identity_config(stage: Stage) -> dict:
    """The stage's config as `fingerprint` compares it, before its paths are resolved."""
    c = jsonable(stage.config())
    for key in ("arg", "num_seeds"):
        c.pop(key, None)
    for section, fields in schema.SPEED_ONLY.items():
        for field in fields:
            c.get(section, {}).pop(field, None)
    for key, default in schema.fingerprint_omits(stage.kind).items():
        section, field = key.split(".")
        if c.get(section, {}).get(field, default) == default:
            c.get(section, {}).pop(field, None)
    return c


def find_identical(stage: Stage, runs: Path) -> Path | None:
    """A finished stage elsewhere under `runs` (any experiment, scale or row) with this stage's fingerprint."""
    mine, own = fingerprint(stage), os.path.realpath(stage.workdir)
    for row_json in sorted(Path(runs).glob("*/*/*/row.json")):
        stages = (rundir.read_json(row_json) or {}).get("stages", [])  # unreadable: not ours, not a source
        for s in stages:
            src = row_json.parent / s.get("name", "")
            if (s.get("fingerprint") == mine and s.get("name") == stage.name and src.is_dir()
                    and os.path.realpath(src) != own and stage_done(stage.kind, src, stage.config())):
                return Path(os.path.realpath(src))
    return None


def reuse(stage: Stage, runs: Path) -> Path | None:
    """Link `stage.workdir` to an identical finished stage (see the module docstring); the source, or None when
    there is none or this stage has begun work of its own (a started stage finishes itself)."""
    w = stage.workdir
    if w.is_symlink() or (w.exists() and (not w.is_dir() or any(w.iterdir()))):
        return None
    src = find_identical(stage, runs)
    if src is None:
        return None
    if w.exists():
        w.rmdir()
    w.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(src, w.parent), w, target_is_directory=True)
    return src


def stage_done(kind: str, workdir: Path, config) -> bool:
    """One rule for a run's workdir and for its exported evidence (whose evidence.json records the checkpoint step
    the run stood at): pretraining is done at its final step, fine-tuning when results.json has every seed."""
    if kind == "pretrain":
        exported = evidence_dir.marker(workdir)
        step = exported.get("step") if exported else rundir.latest_step(workdir / rundir.CHECKPOINTS)
        return step == config.train.num_train_steps
    results = workdir / rundir.RESULTS
    if not results.is_file():
        return False
    seeds = {s.get("seed") for s in rundir.read_json(results, required=True).get("seeds", [])}
    return all(config.train.seed + i in seeds for i in range(config.num_seeds))


def _format(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def split_overrides(items: Iterable[str] | None) -> dict[str, list[str]]:
    """`pretrain.train.num_train_steps=600` -> {'pretrain': ['train.num_train_steps=600'], ...}."""
    out: dict[str, list[str]] = {"pretrain": [], "finetune": []}
    for item in items or ():
        key, eq, value = item.partition("=")
        stage = next((p[:-1] for p in STAGE_PREFIXES if key.startswith(p)), None)
        if not eq or stage is None:
            raise SweepError(f"--set {item!r}: a sweep setting names its stage, e.g. "
                             "pretrain.train.num_train_steps=600 or finetune.num_seeds=1")
        out[stage].append(f"{key[len(stage) + 1:]}={value}")
    return out


@dataclasses.dataclass
class RowPlan:
    experiment: str
    scale: str
    row: registry.Row
    directory: Path
    stages: list[Stage]

    def describe(self) -> dict:
        return {"experiment": self.experiment, "scale": self.scale, "row": self.row.name,
                "fields": self.row.fields, "paper": self.row.paper, "warm_start": self.row.warm_start,
                "stages": [{"name": s.name, "workdir": str(s.workdir), "command": s.command(),
                            "fingerprint": fingerprint(s)} for s in self.stages]}


def row_directory(runs: Path, experiment: str, scale: str, row: registry.Row) -> Path:
    return Path(runs) / experiment / scale / row.slug


def seed_suffix(seed: int) -> str:
    """Stage names of pretraining seed k: seed 0 keeps the plain names (`pretrain`, `finetune-<task>`), so a
    one-seed sweep's rows are what they always were; seed k > 0 adds `-seed-<k>`."""
    return f"-seed-{seed}" if seed else ""




# Twin k fine-tunes with seeds TWIN_SEED_STRIDE * k + 0, 1, ...: no two twins share a seed below this many
# fine-tuning seeds.
TWIN_SEED_STRIDE = 1000


def random_init_sets(pretrain: Stage) -> list[str]:
    """The settings that fine-tune the pretraining stage's architecture from random init with its tokenizer: every
    model field of the pretraining config but the fine-tuning knobs (dropout, dtype, scan, remat: the fine-tuning
    protocol's own) and vocab_size (the tokenizer's). The tokenizer is the corpus's cached SentencePiece model,
    the very file each pretraining run copies, so rows of one architecture have identical random-init stages and
    the sweep trains one and links the others."""
    from albert_jax.tasks.pretraining.input import tokenizer_model_path  # noqa: PLC0415  heavy: tfds, grain, jax

    c = pretrain.config()
    knobs = schema.FINETUNE_MODEL_KNOBS
    sets = [f"model.{k}={_format(v)}" for k, v in c.model.items() if k not in knobs and k != "vocab_size"]
    return sets + [f"data.tokenizer={tokenizer_model_path(c.data)}"]


def plan(exp: registry.Experiment, scale: str, runs, overrides=None, rows: Iterable[str] | None = None,
         experiments_dir: Path | None = None, seeds: int = 1, random_init: bool | None = None,
         evidence: Path | None = None) -> list[RowPlan]:
    """The stages of every row (or the named ones), with their exact configs; nothing is run or written.

    seeds: pretraining seeds per row (train.seed k = 0..seeds-1, each fine-tuned like seed 0; the instances are
    the same, so a seed changes the initialisation and the order of the batches). random_init (default: every
    scale but smoke): each row also fine-tunes its architecture from random init, the baseline that says what
    pretraining bought, once per pretraining seed. evidence: an evidence directory whose stages count as done
    (evidence_dir.py)."""
    if seeds < 1:
        raise SweepError(f"--seeds {seeds}: at least 1")
    random_init = scale != "smoke" if random_init is None else random_init
    exp_dir = Path(experiments_dir or registry.experiments_dir()).resolve()
    if exp_dir.is_relative_to(Path.cwd()):
        exp_dir = exp_dir.relative_to(Path.cwd())  # commands as a user types them from the repository root
    user = split_overrides(overrides)
    fixed = split_overrides(f"{k}={_format(v)}" for k, v in exp.settings.get(scale, {}).items())
    all_rows = exp.rows_at(scale)
    wanted = {exp.row(scale, n).name for n in rows} if rows else {r.name for r in all_rows}
    plans = []
    for row in all_rows:
        if row.name not in wanted:
            continue
        d = row_directory(runs, exp.name, scale, row)
        pre_sets = [f"{k}={_format(v)}" for k, v in row.fields.items()] + fixed["pretrain"]
        src = None
        if row.warm_start:
            src = row_directory(runs, exp.name, scale, exp.row(scale, row.warm_start)) / "pretrain"
            pre_sets += [f"train.init_from={src}", "train.init_mode=deeper"]
        pre_sets += user["pretrain"]
        stages = []
        for k in range(seeds):
            sfx = seed_suffix(k)
            pre = Stage("pretrain", f"pretrain{sfx}", d / f"pretrain{sfx}", f"{exp_dir / 'pretrain.py'}:scale={scale}",
                        pre_sets + ([f"train.seed={k}"] if k else []), after=src)
            stages.append(pre)
            for task in exp.finetune:
                spec = f"{exp_dir / 'finetune.py'}:task={task},init={pre.workdir},scale={scale}"
                stages.append(Stage("finetune", f"finetune-{task}{sfx}", d / f"finetune-{task}{sfx}", spec,
                                    fixed["finetune"] + user["finetune"], after=pre.workdir))
        if random_init:
            # As many random-init twins as pretraining seeds, each with fine-tuning seeds of its own (from
            # train.seed = TWIN_SEED_STRIDE * k): the twin's interval is then over seeds as the row's is, and a
            # difference to it compares like with like (issue 48).
            sets = random_init_sets(stages[0])
            for k in range(seeds):
                for task in exp.finetune:
                    spec = f"{exp_dir / 'finetune.py'}:task={task},init=random,scale={scale}"
                    name = f"finetune-{task}{RANDOM_SUFFIX}{seed_suffix(k)}"
                    stages.append(Stage("finetune", name, d / name, spec, sets + fixed["finetune"] + user["finetune"]
                                        + ([f"train.seed={TWIN_SEED_STRIDE * k}"] if k else []),
                                        tokenizer_of=stages[0]))
        if evidence is not None:
            for s in stages:
                s.evidence = row_directory(Path(evidence), exp.name, scale, row) / s.name
        plans.append(RowPlan(exp.name, scale, row, d, stages))
    return plans


def check(plans: list[RowPlan]) -> None:
    """Every stage's whole config validated before anything runs (a bad setting fails in seconds, not rows later).

    A fine-tuning stage's init source does not exist yet, so only its own fields are checked here."""
    for p in plans:
        for s in p.stages:
            try:
                c = s.config()
                if s.kind == "pretrain":
                    if p.row.warm_start and not os.path.isdir(c.train.init_from):
                        c.train.init_from, c.train.init_mode = "", "copy"  # its source row runs first
                    validate.validate(c, "pretrain", None)
            except ValueError as e:
                raise SweepError(f"{p.experiment} row {p.row.name!r}, stage {s.name}: {e}") from None


def chains(plans: list[RowPlan]) -> list[list[RowPlan]]:
    """Rows grouped so that a warm-started row runs after its source, in the same job."""
    by_name = {p.row.name: p for p in plans}
    groups: list[list[RowPlan]] = []
    where: dict[str, int] = {}
    for p in plans:
        src = p.row.warm_start
        if src and src in where:
            where[p.row.name] = where[src]
            groups[where[src]].append(p)
        else:
            if src and src not in by_name:
                raise SweepError(f"row {p.row.name!r} warm-starts from {src!r}, which is not in this sweep: add "
                                 "it to --rows")
            where[p.row.name] = len(groups)
            groups.append([p])
    return groups


# ------------------------------------------------------------------ running
def stages_state(p: RowPlan) -> dict[str, str]:
    """Each stage's state for row.json: "done" (here, or in the evidence directory), else how far it got here (a
    stage done only in the evidence has nothing here to count)."""
    return {s.name: "done" if s.done() else s.progress() for s in p.stages}


def write_row_json(p: RowPlan, state: dict) -> None:
    """row.json in the row's directory, and in its evidence directory when the sweep keeps one."""
    text = json.dumps({**p.describe(), **state}, indent=1)
    p.directory.mkdir(parents=True, exist_ok=True)
    (p.directory / "row.json.tmp").write_text(text, encoding="utf-8")
    os.replace(p.directory / "row.json.tmp", p.directory / "row.json")
    kept = p.stages[0].evidence
    if kept is not None:  # its evidence copy, naming no path of this machine (evidence_dir.portable_json)
        evidence_dir.portable_json(p.directory / "row.json", kept.parent / "row.json",
                                   p.directory.absolute().parents[2])


# ------------------------------------------------------------------ evidence (sweep --evidence)
def save_evidence(s: Stage) -> None:
    """Export a stage finished here whose evidence is missing or from before it finished."""
    if s.evidence is not None:
        c = s.config()
        if stage_done(s.kind, s.workdir, c) and not stage_done(s.kind, s.evidence, c):
            evidence_dir.export_stage(s.kind, s.workdir, s.evidence)


def prepare(plans: list[RowPlan]) -> None:
    """What a sweep does before its first stage, however it runs them: the evidence of stages finished before it
    kept evidence, the parameters its unfinished stages read, and the tokenizers its random-init stages read."""
    for s in (s for p in plans for s in p.stages):
        save_evidence(s)
    keep_params(plans)
    train_twin_tokenizers(plans)


def train_twin_tokenizers(plans: list[RowPlan]) -> None:
    """A random-init stage reads its corpus's cached tokenizer, which a pretraining run trains on its first start.
    Where none has yet (a new machine or cache), it is trained here, once per corpus and vocabulary, under the
    cache's lock: with --jobs a twin starts beside the pretraining it does not wait for, and a study resumed from
    evidence may have no pretraining left to run at all; either way the twin would find no tokenizer."""
    twins = [s for p in plans for s in p.stages if s.tokenizer_of is not None and not s.done()]
    if not twins:  # no twin to run: the --jobs parent need not import the data pipeline
        return
    from albert_jax.tasks.pretraining.input import corpus_tokenizer, tokenizer_model_path  # noqa: PLC0415  heavy

    wanted = {}
    for s in twins:
        d = s.tokenizer_of.config().data
        wanted.setdefault(tokenizer_model_path(d), d)
    for path, d in wanted.items():
        if not path.exists():
            log.warning("training the corpus tokenizer %s, which the random-init stages read", path)
            corpus_tokenizer(d)


def keep_params(plans: list[RowPlan]) -> None:
    """A pretraining stage's final parameters stay in its evidence exactly while a stage that reads them (its
    fine-tuning, a warm-started row) is unfinished: a study stopped there continues on another machine."""
    stages = [s for p in plans for s in p.stages]
    # Which runs an unfinished stage still reads: each stage's done() loads its config, so asked once per stage,
    # not once per stage for every pretraining stage.
    read = {s.after for s in stages if s.after is not None and not s.done()}
    for t in stages:
        if t.kind != "pretrain" or t.evidence is None or evidence_dir.marker(t.evidence) is None:
            continue
        needed = t.workdir in read
        have = evidence_dir.has_params(t.evidence)
        if needed and not have and stage_done(t.kind, t.workdir, t.config()):
            evidence_dir.archive_params(t.workdir, t.evidence)
        elif not needed and have:
            evidence_dir.drop_params(t.evidence)


def restore_source(s: Stage, plans: list[RowPlan]) -> None:
    """Before `s` runs: the run it starts from, rebuilt from that stage's evidence when it finished elsewhere."""
    src = next((t for p in plans for t in p.stages if s.after is not None and t.workdir == s.after), None)
    if src is None or src.evidence is None:
        return
    c = src.config()
    if stage_done(src.kind, src.workdir, c) or not stage_done(src.kind, src.evidence, c):
        return
    if not evidence_dir.has_params(src.evidence):
        raise SweepError(f"{s.name} of {s.workdir.parent.name} starts from {src.name}, finished only as evidence in "
                         f"{src.evidence} without its final parameters ({evidence_dir.PARAMS}/): copy that run to "
                         f"{src.workdir}, or remove {src.evidence} to train it again")
    step = evidence_dir.restore_params(src.evidence, src.workdir)
    log.info("restored %s at step %d from %s", src.workdir, step, src.evidence)


def export_evidence(exp: registry.Experiment, scale: str, runs, dest) -> list[Path]:
    """Every row directory of `exp` at `scale` under `runs`, as it stands, exported to the evidence directory
    `dest` (the same layout); the stage directories written."""
    out = []
    for row in exp.rows_at(scale):
        d = row_directory(Path(runs), exp.name, scale, row)
        if d.is_dir():
            out += evidence_dir.export_row(d, row_directory(Path(dest), exp.name, scale, row))
    return out


def run_stage(stage: Stage) -> int | None:
    """Runs (or resumes) one stage in this process; None when it finished, else the signal that stopped it (0
    when it ended unfinished without one)."""
    from albert_jax.runs.finetune import finetune  # noqa: PLC0415  heavy: jax, flax
    from albert_jax.runs.pretrain import pretrain  # noqa: PLC0415  heavy: jax, flax

    config = stage.config()
    stage.workdir.parent.mkdir(parents=True, exist_ok=True)
    result = (pretrain if stage.kind == "pretrain" else finetune)(config, str(stage.workdir))
    if result.get("stopped"):
        return result.get("signal") or 0
    return None if stage.done() else 0


def run_rows(plans: list[RowPlan], out=sys.stdout, total: int | None = None, offset: int = 0,
             reuse_stages: bool = True) -> int | None:
    """Run (or resume) the rows in order; None when every row finished, else the signal that stopped a stage (0:
    none known). Shows progress per row and overall.
    With `reuse_stages`, a stage identical to a finished one under the same runs directory links to it."""
    total = total or len(plans)
    started = time.time()
    prepare(plans)
    for i, p in enumerate(plans, start=offset + 1):
        status = stages_state(p)
        write_row_json(p, {"state": "running", "stages_state": status})
        print(f"[{i}/{total}] {p.experiment} {p.scale} · {p.row.name}: "
              + ", ".join(f"{k} {v}" for k, v in status.items()), file=out, flush=True)
        for s in p.stages:
            if s.done():
                continue
            src = reuse(s, p.directory.parents[2]) if reuse_stages else None
            if src is not None:  # linked to a stage that find_identical found finished
                print(f"[{i}/{total}]   {s.name}: identical to the finished {src}: linked, not rerun", file=out,
                      flush=True)
                save_evidence(s)
                continue
            restore_source(s, plans)
            print(f"[{i}/{total}]   {s.name}: {s.progress()} -> running  ({s.command()})", file=out, flush=True)
            t0 = time.time()
            stopped = run_stage(s)
            if stopped is not None:
                write_row_json(p, {"state": "interrupted", "stages_state": stages_state(p)})
                print(f"[{i}/{total}]   {s.name}: stopped at {s.progress()}; rerun the same command to continue",
                      file=out, flush=True)
                return stopped
            print(f"[{i}/{total}]   {s.name}: done in {time.time() - t0:.0f} s", file=out, flush=True)
            save_evidence(s)
            keep_params(plans)
        write_row_json(p, {"state": "done", "stages_state": {s.name: "done" for s in p.stages}})
        elapsed = time.time() - started
        print(f"[{i}/{total}] done · {i - offset}/{len(plans)} rows this run in {elapsed:.0f} s", file=out,
              flush=True)
    return None


def run_chain_job(experiment: str, scale: str, runs: str, rows: list[str], overrides: list[str],
                  experiments_dir: str, reuse_stages: bool = True, seeds: int = 1,
                  random_init: bool | None = None, tasks: list[str] | None = None, evidence: str | None = None) -> dict:
    """The function a scheduler job runs (picklable: plain arguments); one chain of rows, resumable."""
    if int(os.environ.get("SLURM_NTASKS", "1")) > 1:  # a multi-host job: JAX's runtime finds the SLURM cluster
        from albert_jax import sharding  # noqa: PLC0415  heavy: jax

        sharding.init_distributed()
    exp = registry.get(experiment, experiments_dir).with_tasks(tasks)
    plans = plan(exp, scale, Path(runs), overrides, rows, Path(experiments_dir), seeds, random_init,
                 Path(evidence) if evidence else None)
    stopped = run_rows(plans, reuse_stages=reuse_stages)
    return {"rows": rows, "finished": stopped is None}


def launch_commands(exp: registry.Experiment, scale: str, runs, groups: list[list[RowPlan]], overrides, seeds: int = 1,
                    random_init: bool | None = None, tasks: list[str] | None = None,
                    evidence: str | None = None) -> list[str]:
    out = []
    for g in groups:
        cmd = ["albert-jax", "sweep", exp.name, "--scale", scale, "--runs", str(runs),
               "--rows", ",".join(p.row.slug for p in g)]
        if tasks:
            cmd += ["--tasks", ",".join(tasks)]
        if seeds != 1:
            cmd += ["--seeds", str(seeds)]
        if random_init is not None:
            cmd += ["--random-init" if random_init else "--no-random-init"]
        if evidence:
            cmd += ["--evidence", str(evidence)]
        for o in overrides or ():
            cmd += ["--set", o]
        out.append(shlex.join(cmd))
    return out


def submit(exp: registry.Experiment, scale: str, runs, groups: list[list[RowPlan]], overrides, launcher: str,
           resources: dict[str, Any], experiments_dir: Path, wait: bool = True, out=sys.stdout,
           reuse_stages: bool = True, seeds: int = 1, random_init: bool | None = None,
           tasks: list[str] | None = None, evidence: str | None = None) -> list[dict]:
    """One submitit job per chain; `launcher` is 'slurm' or 'submitit-local' (this machine, same code path)."""
    import submitit  # noqa: PLC0415  heavy: submitit

    folder = Path(runs) / exp.name / scale / "_jobs" / "%j"
    if launcher == "slurm":
        executor = submitit.AutoExecutor(folder=folder, cluster="slurm")
        executor.update_parameters(**{k: v for k, v in resources.items() if v is not None})
    elif launcher == "submitit-local":
        executor = submitit.LocalExecutor(folder=folder)
        executor.update_parameters(timeout_min=resources.get("timeout_min", 60))
    else:
        raise SweepError(f"--launcher {launcher!r}: allowed local, slurm, submitit-local, print")
    jobs = []
    for g in groups:
        names = [p.row.name for p in g]
        job = executor.submit(run_chain_job, exp.name, scale, str(runs), names, list(overrides or ()),
                              str(experiments_dir), reuse_stages, seeds, random_init, tasks,
                              str(evidence) if evidence else None)
        print(f"submitted job {job.job_id}: {', '.join(names)}", file=out, flush=True)
        jobs.append((names, job))
    if not wait:
        return [{"rows": n, "job_id": j.job_id} for n, j in jobs]
    results = []
    for n, j in jobs:
        results.append({"rows": n, "job_id": j.job_id, **j.result()})  # re-raises a job's error, with its log
        print(f"job {j.job_id} finished: {', '.join(n)}", file=out, flush=True)
    return results


SLURM_RESOURCES = {  # per scale: what one row needs (one row = one job; --set nothing here changes the science)
    "smoke": {"timeout_min": 20, "nodes": 1, "tasks_per_node": 1, "cpus_per_task": 2, "gpus_per_node": 0},
    "cpu": {"timeout_min": 120, "nodes": 1, "tasks_per_node": 1, "cpus_per_task": 4, "gpus_per_node": 0},
    "paper": {"timeout_min": 72 * 60, "nodes": 1, "tasks_per_node": 1, "cpus_per_task": 16, "gpus_per_node": 8},
}


ROW_ARGS = (Arg("row", default=Derived("the scale's first row", lambda _: ""), help="a row's name or slug"),
            Arg("scale", allowed=registry.SCALES, default="smoke", help="the row's scale"))


def config_getter(exp_name: str):
    """`get_config` for an experiment file: `experiments/table4.py:row=<name or slug>,scale=cpu` is the
    pretraining config of that row (as its sweep runs it, warm start from runs/ included), so any one row also
    runs with `albert-jax pretrain`. Its arguments are ROW_ARGS."""
    def get_config(arg: str = ""):
        args, _ = parse_args(arg, ROW_ARGS)
        scale, name = args["scale"], args["row"]
        exp = registry.get(exp_name)
        row = exp.row(scale, name) if name else exp.rows_at(scale)[0]
        rows = [row.name] + ([row.warm_start] if row.warm_start else [])
        plans = {p.row.name: p for p in plan(exp, scale, Path("runs"), rows=rows)}
        return plans[row.name].stages[0].config()
    get_config.ARGS = ROW_ARGS
    return get_config
