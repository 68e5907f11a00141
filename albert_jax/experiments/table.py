"""The paper's table from a sweep's runs: the paper's value beside ours in every column, markdown and CSV, plots.

Everything is read from the rows' directories (sweep.py): the pretraining run's config.json and metrics.jsonl
(its last evaluation is the intrinsic MLM/SOP/NSP measurement) and each fine-tuning task's results.json (or the
seeds finished so far). A row not yet run, or a column we cannot measure offline, is shown as missing, never as
zero. Params: our exact count of the row's paper-scale architecture beside the paper's printed value (the known
residuals are explained in docs/reproduction.md), and the count of the model this scale actually trained.
"""
from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path
from typing import Any

from albert_jax.experiments import registry as R
from albert_jax.experiments import sweep as S

MISSING = "—"
NOT_RUN = "not run"


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_metrics(workdir: Path) -> list[dict]:
    path = Path(workdir) / "metrics.jsonl"
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line:
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a kill; the run rewrites it when it resumes
    return rows


def paper_scale_params(exp: R.Experiment, row_name: str) -> int | None:
    """Our exact count (encoder + pooler, heads apart, V=30000) of the row's architecture at the paper's scale."""
    from albert_jax.experiments.args import apply_overrides, model_from_section
    from albert_jax.experiments.loader import load_config

    rows = {r.name: r for r in exp.rows_at("paper")}
    if row_name not in rows:
        return None
    c = load_config(f"{R.experiments_dir() / 'pretrain.py'}:scale=paper")
    apply_overrides(c, [f"{k}={S._format(v)}" for k, v in rows[row_name].fields.items() if k.startswith("model.")])
    return model_from_section(c.model, vocab_size=c.data.vocab_size).param_count()


def _finetune_result(workdir: Path, task: str) -> dict | None:
    """{'median', 'min', 'max', 'n', 'metric'} of the task's headline dev metric over the seeds finished so far."""
    from albert_jax.tasks.registry import make_task

    metric = make_task(task).headline
    results = _read_json(workdir / "results.json")
    seeds = (results or {}).get("seeds") or [r for r in (_read_json(p / "results.json")
                                                        for p in sorted(workdir.glob("seed-*"))) if r]
    values = [s["dev"][metric] for s in seeds if metric in s.get("dev", {})]
    tests = [s["test"].get(f"test/{metric}") for s in seeds if s.get("test")]
    if not values:
        return None
    out = {"metric": metric, "median": statistics.median(values), "min": min(values), "max": max(values),
           "n": len(values), "values": values}
    tests = [t for t in tests if t is not None]
    if tests:
        out["test_median"] = statistics.median(tests)
    return out


def collect(exp: R.Experiment, scale: str, runs) -> list[dict[str, Any]]:
    """One record per row: what the table prints, read from disk."""
    from albert_jax.config import AlbertConfig

    out = []
    for p in S.plan(exp, scale, runs):
        pre = p.directory / "pretrain"
        rec: dict[str, Any] = {"row": p.row.name, "paper": p.row.paper, "directory": str(p.directory)}
        cfg = _read_json(pre / "config.json")
        rec["params_run"] = AlbertConfig.from_dict(cfg["model"]).param_count() if cfg else None
        rec["arch"] = ({k: cfg["model"].get(k, "") for k in ("embedding_size", "hidden_size", "num_hidden_layers",
                                                              "sharing", "sharing_map")} if cfg else None)
        rec["params_paper_config"] = paper_scale_params(exp, p.row.name)
        metrics = read_metrics(pre)
        final_step = cfg["experiment"]["train"]["num_train_steps"] if cfg else None
        final = [m for m in metrics if m.get("step") == final_step and any(k.startswith("eval/") for k in m)]
        rec["intrinsic"] = {k: v for k, v in final[-1].items() if k.startswith("eval/")} if final else {}
        rec["curve"] = [(m["step"], m[exp.curve]) for m in metrics if exp.curve in m]
        rec["finetune"] = {t: _finetune_result(p.directory / f"finetune-{t}", t) for t in exp.finetune}
        step_times = [m["step_time"] for m in metrics if "step_time" in m]
        rec["step_time"] = statistics.median(step_times) if step_times else None
        # The sweep records a finished row in row.json with the settings it ran under (a demo's shorter schedule,
        # say); without one, the row is judged against this experiment's own settings.
        state = _read_json(p.directory / "row.json") or {}
        rec["done"] = state.get("state") == "done" or all(s.done() for s in p.stages)
        out.append(rec)
    # Speedup as the paper's: throughput relative to the row whose printed speedup is 1.0 (BERT-large).
    ref = next((r for r in out if str(r["paper"].get("speedup")) == "1.0"), None)
    for r in out:
        ok = ref is not None and ref["step_time"] and r["step_time"]
        r["speedup"] = ref["step_time"] / r["step_time"] if ok else None
    return out


# ------------------------------------------------------------------ cells
def _pct(x: float | None) -> str:
    return MISSING if x is None else f"{100 * x:.1f}"


def _spread(r: dict | None) -> str:
    if not r:
        return NOT_RUN
    if r["n"] == 1:
        return f"{100 * r['median']:.1f} (1 seed)"
    return f"{100 * r['median']:.1f} [{100 * r['min']:.1f}–{100 * r['max']:.1f}] ({r['n']} seeds)"


def _paper(value: Any) -> str:
    return MISSING if value is None else str(value)


def columns(exp: R.Experiment) -> list[tuple[str, str]]:
    """(header, key) pairs: each paper column followed by ours where we measure it."""
    cols = [("Row", "row")]
    for key in exp.columns:
        label, ours = R.COLUMNS[key]
        cols.append((f"{label} (paper)", f"paper:{key}"))
        if key == "params":
            cols += [("Params (ours, paper config)", "ours:params_paper_config"),
                     ("Params (ours, this scale)", "ours:params_run")]
        elif ours in ("speedup", "step_time"):
            cols.append((f"{label} (ours)", f"ours:{ours}"))
        elif ours and ours.startswith("eval/"):
            cols.append((f"{label} (ours)", f"ours:{ours}"))
        elif ours in exp.finetune:
            cols.append((f"{ours} dev (ours)", f"ours:ft:{ours}"))
    shown = {R.COLUMNS[k][1] for k in exp.columns}
    cols += [(f"{t} dev (ours)", f"ours:ft:{t}") for t in exp.finetune if t not in shown]
    if "sop" not in exp.columns and "mlm" not in exp.columns:  # the intrinsic numbers are always worth a look
        cols += [("MLM acc (ours)", "ours:eval/mlm_accuracy"), ("SOP acc (ours)", "ours:eval/sop_accuracy")]
    return cols


def cell(rec: dict, key: str) -> str:
    kind, _, name = key.partition(":")
    if kind == "row":
        return rec["row"]
    if kind == "paper":
        return _paper(rec["paper"].get(name))
    if name in ("params_paper_config", "params_run"):
        return MISSING if rec[name] is None else f"{rec[name] / 1e6:.2f}M"
    if name == "speedup":
        return MISSING if rec.get("speedup") is None else f"{rec['speedup']:.2f}x"
    if name == "step_time":
        return MISSING if rec.get("step_time") is None else f"{rec['step_time']:.3f}"
    if name.startswith("eval/"):
        return _pct(rec["intrinsic"].get(name)) if rec["intrinsic"] else NOT_RUN
    if name.startswith("ft:"):
        return _spread(rec["finetune"].get(name[3:]))
    raise KeyError(key)


def describe_arch(arch: dict) -> str:
    """"E=128 H=128 L=4 all", or the layer -> parameter-set map where one is set (it overrides `sharing`)."""
    shared = f"sharing_map={arch['sharing_map']}" if arch.get("sharing_map") else arch["sharing"]
    return f"E={arch['embedding_size']} H={arch['hidden_size']} L={arch['num_hidden_layers']} {shared}"


def markdown(exp: R.Experiment, scale: str, records: list[dict]) -> str:
    cols = columns(exp)
    lines = [f"### {exp.title} — scale {scale}", "", f"Reading under test: {exp.reading}", "",
             "| " + " | ".join(h for h, _ in cols) + " |", "|" + "---|" * len(cols)]
    for rec in records:
        lines.append("| " + " | ".join(cell(rec, k) for _, k in cols) + " |")
    unmeasured = [R.COLUMNS[k][0] for k in exp.columns if R.COLUMNS[k][1] is None]
    notes = []
    if unmeasured:
        notes.append(f"Paper columns without ours ({', '.join(unmeasured)}): GLUE/SQuAD/RACE are TFDS catalog "
                     "tasks that need the network; add them to the experiment's fine-tuning tasks where it is "
                     "reachable.")
    notes.append("Ours: intrinsic accuracies (%) from each row's final held-out evaluation; fine-tuning: dev "
                 "median [min–max] over seeds (%). Architecture at this scale: " +
                 "; ".join(f"{r['row']}: {describe_arch(r['arch'])}" for r in records if r["arch"]) + ".")
    done = sum(r["done"] for r in records)
    notes.append(f"{done}/{len(records)} rows finished.")
    return "\n".join(lines + [""] + notes) + "\n"


def write_csv(exp: R.Experiment, records: list[dict], path: Path) -> Path:
    cols = columns(exp)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([h for h, _ in cols])
        for rec in records:
            w.writerow(["" if cell(rec, k) in (MISSING, NOT_RUN) else cell(rec, k) for _, k in cols])
    return path


def headline_values(exp: R.Experiment, records: list[dict]) -> tuple[dict, dict | None]:
    """(ours, paper) per row for the bar chart: a fine-tuning task's dev median or an intrinsic metric (%)."""
    ours, paper = {}, {}
    for rec in records:
        if exp.headline in exp.finetune:
            r = rec["finetune"].get(exp.headline)
            ours[rec["row"]] = None if r is None else 100 * r["median"]
        else:
            v = rec["intrinsic"].get(exp.headline)
            ours[rec["row"]] = None if v is None else 100 * v
        key = next((k for k, (_, o) in R.COLUMNS.items() if o == exp.headline and k in exp.columns), None)
        value = rec["paper"].get(key) if key else None
        paper[rec["row"]] = value if isinstance(value, (int, float)) else None
    return ours, (paper if any(v is not None for v in paper.values()) else None)


def build(exp: R.Experiment, scale: str, runs, out_dir=None, plots: bool = True) -> tuple[str, list[Path]]:
    """Markdown text, and the files written (CSV, curves PNG, bars PNG) under out_dir (default: the sweep's)."""
    records = collect(exp, scale, runs)
    out = Path(out_dir) if out_dir else Path(runs) / exp.name / scale
    out.mkdir(parents=True, exist_ok=True)
    text = markdown(exp, scale, records)
    (out / "table.md").write_text(text, encoding="utf-8")
    files = [out / "table.md", write_csv(exp, records, out / "table.csv")]
    if plots:
        from albert_jax.experiments import plots as P

        curves = {r["row"]: r["curve"] for r in records if r["curve"]}
        if curves:
            files.append(P.plot_curves(curves, exp.curve, out / "curves.png", title=f"{exp.name} ({scale})"))
        ours, paper = headline_values(exp, records)
        files.append(P.plot_bars(ours, exp.headline, out / "bars.png", paper=paper, title=f"{exp.name} ({scale})"))
    return text, files


def best_row(exp: R.Experiment, scale: str, runs, hf_only: bool = False) -> dict | None:
    """The finished row with the best headline fine-tuning score (dev median); hf_only keeps the rows whose
    sharing transformers can express (all-shared or not-shared, no sharing_map)."""
    task = exp.headline if exp.headline in exp.finetune else (exp.finetune[0] if exp.finetune else None)
    best = None
    for rec in collect(exp, scale, runs):
        r = rec["finetune"].get(task) if task else None
        if not rec["done"] or r is None or not rec["arch"]:
            continue
        if hf_only and (rec["arch"]["sharing"] not in ("all", "none") or rec["arch"].get("sharing_map")):
            continue
        if best is None or r["median"] > best["score"]:
            best = {"row": rec["row"], "score": r["median"], "task": task,
                    "workdir": str(Path(rec["directory"]) / f"finetune-{task}")}
    return best
