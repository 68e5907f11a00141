"""Experiments as data: the paper's tables and our sources' claims, each a file under experiments/ with its rows.

An experiment file defines `EXPERIMENT = Experiment(...)`: a name, the table it reproduces (or the claim it
tests), the paper's columns and values for each row, our downstream tasks, and `rows(scale)` giving each row's
pretraining settings at that scale. `load_registry()` finds every such file and refuses two with one name.

Scales (every experiment has all three): `smoke` (seconds per row: tests), `cpu` (minutes per row on a 2-core
machine: the small model family of experiments/pretrain.py, H=128, with the row's ablated field scaled the same
way) and `paper` (the paper's §4.1 setup and the paper's architecture for the row).
"""
from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any, Callable

from albert_jax.configs.loader import experiments_dir, load_module
from albert_jax.configs.scales import SCALES
from albert_jax.runs.validate import near

# The paper's columns, in the order its tables print them; "ours" names the measurement that stands in for the
# paper's (an intrinsic metric of our pretraining, or a local downstream task of the same kind), or None.
COLUMNS: dict[str, tuple[str, str | None]] = {
    "params": ("Params", "params"),
    "mlm": ("MLM acc", "eval/mlm_accuracy"),
    "nsp": ("NSP acc", "eval/nsp_accuracy"),
    "sop": ("SOP acc", "eval/sop_accuracy"),
    "squad11": ("SQuAD1.1 F1/EM", None),
    "squad20": ("SQuAD2.0 F1/EM", None),
    "mnli": ("MNLI", None),
    "sst2": ("SST-2", "rt_sentiment"),  # movie-review sentiment, binary: the same kind of task, a smaller set
    "race": ("RACE", None),
    "avg": ("Avg", None),
    "speedup": ("Speedup", "speedup"),  # ours: the reference row's median step time over this row's
    "step_time": ("Step time (s)", "step_time"),
}
DOWNSTREAM = ("squad11", "squad20", "mnli", "sst2", "race", "avg")


class ExperimentError(ValueError):
    """A registry or experiment definition problem; the message names the experiment, row or file."""


@dataclasses.dataclass(frozen=True)
class Row:
    name: str  # as the paper's table labels it, e.g. "E=128 all-shared"
    fields: dict[str, Any]  # pretraining config fields at this scale: {"model.embedding_size": 16, ...}
    paper: dict[str, Any] = dataclasses.field(default_factory=dict)  # column key -> the paper's printed value
    warm_start: str = ""  # another row whose pretraining this one starts from (Table 11: deeper from shallower)

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")


@dataclasses.dataclass(frozen=True)
class Experiment:
    name: str
    title: str  # "Table 4: cross-layer parameter-sharing strategies (ALBERT-base)"
    reading: str  # what the paper (or the source) concludes: the statement our table puts to the data
    columns: tuple[str, ...]  # keys of COLUMNS, in the paper's order
    rows: Callable[[str], list[Row]]  # scale -> rows at that scale
    finetune: tuple[str, ...] = ("rt_sentiment",)  # our downstream tasks, run on every row
    headline: str = "rt_sentiment"  # the bar chart's metric: a finetune task or an intrinsic metric key
    curve: str = "eval/mlm_accuracy"  # the training curve drawn for every row
    # Extra settings per scale for every row's stages: {"cpu": {"pretrain.train.num_train_steps": 1000}}.
    settings: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    source: str = ""  # the file that defines it (set by the registry)
    # The row every other row's paired differences are taken against (default: the first row), and the
    # statements of the paper's reading that the table checks against its intervals (readings.Check).
    reference: str = ""
    checks: tuple = ()
    # The row whose planned step time the others' predicted speedups divide (`sweep --plan`; Table 2: BERT large).
    speed_reference: str = ""

    def rows_at(self, scale: str) -> list[Row]:
        if scale not in SCALES:
            raise ExperimentError(f"--scale {scale!r}: allowed {', '.join(SCALES)}")
        rows = list(self.rows(scale))
        names = [r.name for r in rows]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ExperimentError(f"experiment {self.name} has duplicate row names {dup} ({self.source})")
        slugs = [r.slug for r in rows]
        if len(set(slugs)) != len(slugs):
            raise ExperimentError(f"experiment {self.name}: two rows map to one directory name ({self.source})")
        for r in rows:
            if r.warm_start and r.warm_start not in names[:names.index(r.name)]:
                raise ExperimentError(f"experiment {self.name}, row {r.name!r}: warm_start={r.warm_start!r} must "
                                      "name an earlier row")
        return rows

    def with_tasks(self, tasks) -> "Experiment":
        """This experiment fine-tuning every row on these tasks too (`sweep --tasks`): more downstream columns,
        and the tasks a table's mean over responding tasks can draw on."""
        from albert_jax.tasks.registry import TASKS  # noqa: PLC0415  heavy: grain, jax

        extra = [t for t in dict.fromkeys(tasks or ()) if t not in self.finetune]
        for t in extra:
            if t not in TASKS:
                raise ExperimentError(f"--tasks: unknown task {t!r}{near(t, TASKS)}")
        return dataclasses.replace(self, finetune=tuple(self.finetune) + tuple(extra)) if extra else self

    def row(self, scale: str, name: str) -> Row:
        rows = {r.name: r for r in self.rows_at(scale)}
        by_slug = {r.slug: r for r in rows.values()}
        if name in rows or name in by_slug:
            return rows.get(name) or by_slug[name]
        raise ExperimentError(f"experiment {self.name} has no row {name!r}{near(name, list(rows))}; rows: "
                              f"{', '.join(rows)}")


def load_registry(directory: str | os.PathLike | None = None) -> dict[str, Experiment]:
    """name -> Experiment for every experiments/*.py defining EXPERIMENT (or EXPERIMENTS, a list)."""
    directory = Path(directory) if directory else experiments_dir()
    if not directory.is_dir():
        raise ExperimentError(f"experiments directory {directory} does not exist")
    out: dict[str, Experiment] = {}
    for path in sorted(directory.glob("*.py")):
        if path.name.startswith("_"):
            continue
        module = load_module(path)
        found = list(getattr(module, "EXPERIMENTS", ())) + ([module.EXPERIMENT] if hasattr(module, "EXPERIMENT")
                                                              else [])
        for exp in found:
            if not isinstance(exp, Experiment):
                raise ExperimentError(f"{path}: EXPERIMENT must be an albert_jax.ablations.registry.Experiment")
            if exp.name in out:
                raise ExperimentError(f"experiment name {exp.name!r} is defined twice: {out[exp.name].source} and "
                                      f"{path.name}; names must be unique")
            bad = [c for c in exp.columns if c not in COLUMNS]
            if bad:
                raise ExperimentError(f"{path.name}: experiment {exp.name} has unknown column(s) {bad}; known: "
                                      f"{', '.join(COLUMNS)}")
            out[exp.name] = dataclasses.replace(exp, source=path.name)
    return out


def get(name: str, directory=None) -> Experiment:
    registry = load_registry(directory)
    if name not in registry:
        raise ExperimentError(f"unknown experiment {name!r}{near(name, list(registry))}; `albert-jax experiments "
                              f"list` shows them: {', '.join(registry)}")
    return registry[name]


# ------------------------------------------------------------------ how a paper row becomes a row at each scale
# cpu and smoke train the small family (experiments/pretrain.py: L=4, H=128, A=4, I=256); a factorised E keeps
# roughly its ratio to H (paper H=768): 64 -> 8, 128 -> 16, 256 -> 32, and E=H stays E=H.
SMALL_H = 128
SMALL_E = {64: 8, 128: 16, 256: 32, 768: SMALL_H}


def embedding_at(scale: str, paper_e: int, paper_h: int = 768) -> int:
    if scale == "paper":
        return paper_e
    if paper_e == paper_h:
        return SMALL_H
    if paper_e not in SMALL_E:
        raise ExperimentError(f"no cpu-scale embedding size for E={paper_e}; known: {sorted(SMALL_E)}")
    return SMALL_E[paper_e]


def sized(scale: str, hidden: int, layers: int, embedding: int, sharing: str, heads: int) -> dict[str, Any]:
    """A Table 1-style model (width, depth, E, sharing) at a scale: H/8, heads A/4 and E/8 on cpu (depth kept).
    smoke divides widths by 32 and heads by 8 instead (head size 12-16, as on cpu): its rows check the plumbing in
    seconds, and the widest rows (xxlarge, Table 12's H=6144) would otherwise spend most of the tests' time."""
    if scale == "paper":
        h, e, a = hidden, embedding, heads
    else:
        width, head = (8, 4) if scale == "cpu" else (32, 8)
        h, a = hidden // width, max(2, heads // head)
        e = h if embedding == hidden else max(8, embedding // 8)
    return {"model.hidden_size": h, "model.num_hidden_layers": layers, "model.embedding_size": e,
            "model.num_attention_heads": a, "model.intermediate_size": 4 * h, "model.sharing": sharing}


def base_fields(scale: str, embedding: int, sharing: str, task: str = "sop", **model: Any) -> dict[str, Any]:
    """A row of the ALBERT-base ablations (Tables 3-5): E, sharing and the inter-sentence task at a scale."""
    fields = {"model.embedding_size": embedding_at(scale, embedding), "model.sharing": sharing, "data.task": task}
    fields.update({f"model.{k}": v for k, v in model.items()})
    return fields


# A shorter cpu schedule for the experiments whose rows are large (Tables 1, 2, 11, 12).
SHORT_CPU = {"cpu": {"pretrain.train.num_train_steps": 500, "pretrain.train.warmup_steps": 50,
                     "pretrain.train.eval_every": 500, "pretrain.train.checkpoint_every": 250}}


def sibling(this_file: str, name: str):
    """Another experiment file of the same folder, as a module (Table 2 reuses Table 1's models)."""
    return load_module(Path(this_file).resolve().parent / f"{name}.py")
