"""Choosing the cpu scale from measurements (issue 24): candidate pretraining recipes, their learning curves against
CPU-minutes, and the summary that picks one.

Each candidate is the cpu scale of experiments/pretrain.py on the whole English mix (`data.max_docs=0`) with a few
fields changed. `run` trains candidates one after another with the ordinary `albert-jax pretrain` (each resumes
from its own checkpoints, so a killed study is rerun with the same command); `report` reads their metrics.jsonl
and writes the curves (CSV and PNG: held-out MLM and SOP accuracy against the run's CPU-minutes, one panel per
metric) and a markdown summary: the last and best held-out values with their standard errors, and how much MLM
gained over the last quarter of the steps (the "flat" criterion).

CPU-minutes are the process's user+system time (`wall_s`/`cpu_s`, training/metrics.RunClock), evaluation and
compilation included: what the recipe costs, comparable between runs that shared the machine.
"""
from __future__ import annotations

import csv
import dataclasses
import math
import os
import subprocess
import sys
from pathlib import Path

from matplotlib.figure import Figure

from albert_jax.ablations.plots import METRICS_FILE, save_png
from albert_jax.training import rundir

# What every candidate shares: the whole English mix, evaluated often on every held-out pair.
COMMON = {"data.max_docs": "0", "train.eval_batches": "0", "train.log_every": "50", "train.checkpoint_every": "500"}


@dataclasses.dataclass(frozen=True)
class Recipe:
    name: str
    what: str  # the one thing it changes against the reference, in words
    fields: dict[str, str]
    steps: int
    eval_every: int = 250

    def overrides(self) -> list[str]:
        fields = {**COMMON, "train.num_train_steps": str(self.steps), "train.eval_every": str(self.eval_every),
                  **self.fields}
        return [f"{k}={v}" for k, v in fields.items()]


def _model(h: int, layers: int = 4, e: int = 128, heads: int = 4, inter: int | None = None) -> dict[str, str]:
    return {"model.hidden_size": str(h), "model.num_hidden_layers": str(layers), "model.embedding_size": str(e),
            "model.num_attention_heads": str(heads), "model.intermediate_size": str(inter or 2 * h)}


# The reference is today's cpu model at E=H=128 (the Table 3/4 rows that learnt SOP at all), 64 sequences of 64.
_REF = _model(128)
CANDIDATES = {r.name: r for r in (
    Recipe("ref", "today's cpu recipe at E=H=128, whole mix", _REF, 3000),
    Recipe("b256", "4x the tokens per step (batch 256), LAMB 0.02, warmup 100", {
        **_REF, "train.batch_size": "256", "train.learning_rate": "0.02", "train.warmup_steps": "100"}, 800,
        eval_every=100),
    Recipe("lr3e-3", "LAMB 0.003 (the reference's 0.01 is ~45x the paper's rate scaled to batch 64)", {
        **_REF, "train.learning_rate": "0.003"}, 3000),
    Recipe("h256", "width 256 (I=1024, 4 heads of 64)", _model(256, inter=1024), 2000),
    Recipe("s128", "sequence 128 at batch 32 (the reference's tokens per step)", {
        **_REF, "data.max_seq_length": "128", "train.batch_size": "32"}, 3000),
    Recipe("dyn", "dynamic masking (fresh masks every epoch)", {**_REF, "data.masking": "dynamic"}, 3000),
    Recipe("v8k", "vocabulary 8,000", {**_REF, "data.vocab_size": "8000"}, 3000),
    Recipe("l6", "depth 6", _model(128, layers=6), 2000),
    Recipe("e32", "E=32 (a factorised floor) at H=128", _model(128, e=32), 3000),
)}


def workdir(root, name: str) -> Path:
    return Path(root) / name


def command(recipe: Recipe, root) -> list[str]:
    """The `albert-jax pretrain` command of one candidate (what `run` executes, and what the write-up prints)."""
    cmd = [sys.executable, "-m", "albert_jax.main", "pretrain", "--config", "experiments/pretrain.py:scale=cpu",
           "--workdir", str(workdir(root, recipe.name)), "--log-level", "WARNING"]
    for o in recipe.overrides():
        cmd += ["--set", o]
    return cmd


def select(names: str | None) -> list[Recipe]:
    if not names:
        return list(CANDIDATES.values())
    out = []
    for n in names.split(","):
        if n not in CANDIDATES:
            raise ValueError(f"--only: unknown recipe {n!r}; known: {', '.join(CANDIDATES)}")
        out.append(CANDIDATES[n])
    return out


def run(recipes: list[Recipe], root, cwd=None) -> int:
    """Train each recipe in turn (resuming what its workdir holds); the first failure stops the study."""
    for r in recipes:
        print(f"recipe {r.name}: {r.what} ({r.steps} steps)", flush=True)
        rc = subprocess.call(command(r, root), cwd=cwd)
        if rc:
            print(f"recipe {r.name}: exit status {rc}; rerun the same command to resume", flush=True)
            return rc
    return 0


# ------------------------------------------------------------------------------------------------ the curves
def read_run(path) -> list[dict]:
    """The evaluation points of one candidate: step, wall/CPU minutes, held-out MLM/SOP/NSP accuracy (and the
    number of pairs behind each, for its standard error). A resumed run's repeated step: the later record wins."""
    points: dict[int, dict] = {}
    for rec in rundir.read_metrics(Path(path) / METRICS_FILE):
        if "eval/sop_accuracy" in rec and "cpu_s" in rec:
            points[int(rec["step"])] = {
                "step": int(rec["step"]), "wall_min": rec["wall_s"] / 60, "cpu_min": rec["cpu_s"] / 60,
                "mlm": rec.get("eval/mlm_accuracy"), "sop": rec.get("eval/sop_accuracy"),
                "nsp": rec.get("eval/nsp_accuracy")}
    return [points[s] for s in sorted(points)]


def summarize(points: list[dict], n_sop: int) -> dict:
    """Last and best held-out values, the MLM gain over the last quarter of the steps, and SOP's standard error
    (binomial, on n_sop balanced pairs)."""
    if not points:
        return {}
    last = points[-1]
    quarter = [p for p in points if p["step"] >= 0.75 * last["step"]]
    se = math.sqrt(last["sop"] * (1 - last["sop"]) / n_sop) if n_sop else float("nan")
    return {"steps": last["step"], "cpu_min": last["cpu_min"], "wall_min": last["wall_min"], "mlm": last["mlm"],
            "sop": last["sop"], "sop_se": se, "nsp": last["nsp"], "best_sop": max(p["sop"] for p in points),
            "mlm_gain_last_quarter": last["mlm"] - quarter[0]["mlm"]}


def report(root, out, n_sop: int = 0, recipes: list[Recipe] | None = None) -> list[Path]:
    """curves.csv, curves.png and summary.md of the candidates that have evaluated at least once."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs = {r.name: read_run(workdir(root, r.name)) for r in (recipes or CANDIDATES.values())
            if (workdir(root, r.name) / METRICS_FILE).is_file()}
    runs = {k: v for k, v in runs.items() if v}
    if not runs:
        raise FileNotFoundError(f"no candidate under {root} has evaluated yet")
    csv_path = out / "curves.csv"
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["recipe", "step", "cpu_min", "wall_min", "mlm", "sop", "nsp"])
        w.writeheader()
        for name, pts in runs.items():
            for p in pts:
                w.writerow({"recipe": name, **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in p.items()}})
    fig = Figure(figsize=(12, 4.5))
    axes = fig.subplots(1, 3)
    for ax, (key, title) in zip(axes, (("mlm", "held-out MLM accuracy"), ("sop", "held-out SOP accuracy (chance 0.5)"),
                                       ("nsp", "held-out NSP accuracy (chance 0.5)"))):
        for name, pts in runs.items():
            ax.plot([p["cpu_min"] for p in pts], [p[key] for p in pts], marker=".", label=name)
        if key != "mlm":
            ax.axhline(0.5, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("CPU-minutes (process user+system time)")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Choosing the cpu scale: candidate recipes on the whole English mix, one seed each "
                 f"(held-out pairs: {n_sop or '?'} SOP)", fontsize=10)
    fig.tight_layout()
    png = save_png(fig, out / "curves.png")
    # At equal cost: every candidate's last evaluation within the CPU-minutes the shortest run reached.
    budget = min(pts[-1]["cpu_min"] for pts in runs.values())
    lines = [f"| recipe | what it changes | steps | CPU-min | wall-min | MLM acc | SOP acc ± SE | best SOP | NSP acc | "
             f"MLM gain, last quarter | at ≤ {budget:.1f} CPU-min: step, MLM, SOP |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, pts in runs.items():
        s = summarize(pts, n_sop)
        within = [p for p in pts if p["cpu_min"] <= budget + 1e-9]
        at = f"{within[-1]['step']}, {100 * within[-1]['mlm']:.1f}, {100 * within[-1]['sop']:.1f}" if within else "—"
        lines.append(f"| {name} | {CANDIDATES[name].what if name in CANDIDATES else ''} | {s['steps']} | "
                     f"{s['cpu_min']:.1f} | {s['wall_min']:.1f} | {100 * s['mlm']:.1f} | "
                     f"{100 * s['sop']:.1f} ± {100 * s['sop_se']:.1f} | {100 * s['best_sop']:.1f} | "
                     f"{100 * s['nsp']:.1f} | {100 * s['mlm_gain_last_quarter']:+.1f} | "
                     f"{at} |")
    md = out / "summary.md"
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [csv_path, png, md]


def repo_root() -> str:
    """Where experiments/pretrain.py is: the candidates' --config is relative to it."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
