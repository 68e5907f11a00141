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
import re
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import threadpoolctl

from albert_jax.ablations import evidence
from albert_jax.ablations import readings
from albert_jax.ablations import registry
from albert_jax.ablations import stats
from albert_jax.ablations import sweep
from albert_jax.config import AlbertConfig, model_from_section
from albert_jax.configs.loader import load_config
from albert_jax.configs.overrides import apply_overrides
from albert_jax.configs.schema import ADDED_DEFAULTS
from albert_jax.training import rundir

MISSING = "—"
NOT_RUN = "not run"


def read_metrics(workdir: Path) -> list[dict]:
    """A run's metrics records (rundir.read_metrics), [] before it has logged any."""
    path = Path(workdir) / rundir.METRICS
    return rundir.read_metrics(path) if path.is_file() else []


def paper_scale_params(exp: registry.Experiment, row_name: str) -> int | None:
    """Our exact count (encoder + pooler, heads apart, V=30000) of the row's architecture at the paper's scale."""
    rows = {r.name: r for r in exp.rows_at("paper")}
    if row_name not in rows:
        return None
    c = load_config(f"{registry.experiments_dir() / 'pretrain.py'}:scale=paper")
    apply_overrides(c, [f"{k}={sweep._format(v)}" for k, v in rows[row_name].fields.items() if k.startswith("model.")])
    return model_from_section(c.model, vocab_size=c.data.vocab_size).param_count()


def _finetune_result(ts: "evidence.TaskSamples | None") -> dict | None:
    """{'median', 'min', 'max', 'n', 'metric', 'estimate', 'majority', 'did_not_learn'} of a task's headline dev
    metric over every finished seed (pretraining seeds x fine-tuning seeds)."""
    if ts is None:
        return None
    est = _estimate(_nested(ts))
    values = ts.values
    return {"metric": ts.metric, "median": est.value, "min": min(values), "max": max(values), "n": len(values),
            "values": values, "estimate": est, "majority": ts.majority, "per_pretraining": ts.per_pretraining,
            "did_not_learn": evidence.did_not_learn(est.value, ts.majority)}


def _nested(ts: "evidence.TaskSamples") -> list:
    """A task's samples grouped by pretraining seed (stats' nested form): the bootstrap draws pretraining seeds,
    then their fine-tuning seeds, then examples."""
    return stats.nest(ts.samples, ts.per_pretraining)


def _estimate(samples: list) -> stats.Estimate:
    return stats.estimate(samples, seed=0)


def _seed_scores(xs: list) -> list:
    """Each seed's score in the samples' own nesting (a list is a pretraining seed's fine-tuning seeds)."""
    return [_seed_scores(x) if isinstance(x, list) else
            float(np.sum(x[0]) / np.sum(x[1])) if isinstance(x, tuple) else float(np.mean(x)) for x in xs]


def _difference(a: list, b: list, paired: bool = True) -> stats.Estimate | None:
    """a − b, paired by example where both rows kept their examples on the same set, else with each row's examples
    drawn on their own, else over seeds."""
    try:
        # other held-out pairs (another tokenizer or sequence length): unpaired, each row over its own examples
        return stats.difference(a, b, paired=paired)
    except ValueError:  # one row per example, the other per seed, or sets of different sizes: compare seed scores
        return stats.difference(_seed_scores(a), _seed_scores(b))


def collect(exp: registry.Experiment, scale: str, runs) -> list[dict[str, Any]]:
    """One record per row: what the table prints, read from disk. Besides the medians, each record carries its
    estimates with intervals (`est`), its samples, its paired differences to the reference row (`diff`), the
    random-init fine-tuning of its architecture (`random`) and ours minus that (`vs_random`)."""
    from albert_jax.tasks.registry import make_task  # noqa: PLC0415  heavy: grain, jax

    out = []
    for p in sweep.plan(exp, scale, runs):
        pre = p.directory / "pretrain"
        rec: dict[str, Any] = {"row": p.row.name, "paper": p.row.paper, "directory": str(p.directory)}
        cfg = rundir.read_config(pre, required=False)
        rec["params_run"] = AlbertConfig.from_dict(cfg["model"]).param_count() if cfg else None
        rec["arch"] = arch_of(cfg) if cfg else None
        rec["params_paper_config"] = paper_scale_params(exp, p.row.name)
        metrics = read_metrics(pre)
        pre_dirs = evidence.seeded_dirs(p.directory, "pretrain")
        samples = evidence.intrinsic_samples(pre_dirs)
        rec["pretrain_seeds"] = len(samples.get("eval/sop_accuracy", []))
        rec["samples"] = dict(samples)
        # Which held-out pairs the intrinsic samples are of: rows pair by example only when these are equal.
        rec["eval_set"] = json.dumps(((cfg or {}).get("data") or {}).get("eval_shards"), sort_keys=True)
        rec["est"] = {k: _estimate(v) for k, v in samples.items() if v}
        rec["intrinsic"] = {k: e.value for k, e in rec["est"].items()}
        rec["curve"] = [(m["step"], m[exp.curve]) for m in metrics if exp.curve in m]
        rec["finetune"], rec["random"], rec["random_samples"] = {}, {}, {}
        for t in exp.finetune:
            task = make_task(t)
            metric, scale = task.headline, task.metric_scale
            ts = evidence.finetune_samples(evidence.seeded_dirs(p.directory, f"finetune-{t}"), metric, scale)
            rec["finetune"][t] = _finetune_result(ts)
            if ts is not None:
                rec["samples"][f"ft:{t}"] = _nested(ts)
                rec["est"][f"ft:{t}"] = rec["finetune"][t]["estimate"]
            twins = evidence.seeded_dirs(p.directory, f"finetune-{t}{evidence.RANDOM_SUFFIX}")  # one per pt seed
            ts_random = evidence.finetune_samples(twins, metric, scale)
            rec["random"][t] = _finetune_result(ts_random)
            if ts_random is not None:
                rec["random_samples"][t] = _nested(ts_random)
        rec["vs_random"] = {t: _difference(rec["samples"][f"ft:{t}"], rec["random_samples"][t])
                            for t in exp.finetune if rec["finetune"][t] and t in rec["random_samples"]}
        step_times = [m["step_time"] for m in metrics if "step_time" in m]
        rec["step_time"] = statistics.median(step_times) if step_times else None
        # The sweep records a finished row in row.json with the settings it ran under (a demo's shorter schedule,
        # say); without one, the row is judged against this experiment's own settings.
        state = rundir.read_json(p.directory / "row.json") or {}
        rec["done"] = state.get("state") == "done" or all(s.done() for s in p.stages)
        out.append(rec)
    # Speedup as the paper's: throughput relative to the row whose printed speedup is 1.0 (BERT-large).
    ref = next((r for r in out if str(r["paper"].get("speedup")) == "1.0"), None)
    for r in out:
        ok = ref is not None and ref["step_time"] and r["step_time"]
        r["speedup"] = ref["step_time"] / r["step_time"] if ok else None
    reference = reference_row(exp, out)
    for r in out:
        r["diff"] = {}
        if reference is None or r is reference:
            continue
        for key, a in r["samples"].items():
            b = reference["samples"].get(key)
            if a and b:
                r["diff"][key] = _difference(a, b, paired=not key.startswith("eval/")
                                             or r["eval_set"] == reference["eval_set"])
    _add_task_mean(exp, out, reference)
    return out


def with_found_tasks(exp: registry.Experiment, scale: str, runs) -> registry.Experiment:
    """The experiment with every task its rows were fine-tuned on under `runs`: its own, then those a sweep's
    --tasks added (found as finetune-<task> stages in the row directories)."""
    found = set()
    for row in exp.rows_at(scale):
        for d in sweep.row_directory(Path(runs), exp.name, scale, row).glob("finetune-*"):
            found.add(re.sub(rf"({re.escape(evidence.RANDOM_SUFFIX)})?(-seed-\d+)?$", "", d.name[len("finetune-"):]))
    from albert_jax.tasks.registry import TASKS  # noqa: PLC0415  heavy: grain, jax

    return exp.with_tasks(sorted(t for t in found if t in TASKS))


def responding_tasks(exp: registry.Experiment, records: list[dict]) -> dict[str, tuple[int, int]]:
    """task -> (rows whose pretraining beats their random-init twin with an interval above 0, rows with a twin).
    A task responds to pretraining here when at least half of those rows do."""
    out = {}
    for t in exp.finetune:
        ds = [r["vs_random"][t] for r in records if r["vs_random"].get(t) is not None]
        out[t] = (sum(d.resolved and d.value > 0 for d in ds), len(ds))
    return out


def _add_task_mean(exp: registry.Experiment, records: list[dict], reference: dict | None) -> None:
    """With two or more downstream tasks, each row's headline downstream score: the mean over the tasks that
    respond to pretraining (`responding_tasks`), with its interval (stats.task_mean), its difference to the
    reference row and to its random-init twin."""
    if len(exp.finetune) < 2:
        return
    counts = responding_tasks(exp, records)
    tasks = [t for t, (k, n) in counts.items() if n and 2 * k >= n]
    for r in records:
        r["responding"], r["responding_counts"] = tasks, counts
        mine = [r["samples"].get(f"ft:{t}") for t in tasks]
        if not tasks or not all(mine):
            continue
        try:
            r["est"]["ft:mean"] = stats.task_mean([(s, None, True) for s in mine])
            theirs = [reference["samples"].get(f"ft:{t}") for t in tasks] if reference and r is not reference else []
            if theirs and all(theirs):
                r["diff"]["ft:mean"] = stats.task_mean([(a, b, True) for a, b in zip(mine, theirs)])
            rnd = [r["random_samples"].get(t) for t in tasks]
            if all(x is not None for x in rnd):
                r["vs_random"]["mean"] = stats.task_mean([(a, b, True) for a, b in zip(mine, rnd)])
        except ValueError:  # a task whose seeds were scored on different examples: no mean to draw
            r["est"].pop("ft:mean", None)


def reference_row(exp: registry.Experiment, records: list[dict]) -> dict | None:
    """The row the others are compared with: the experiment's `reference`, else its first row."""
    if not records:
        return None
    name = exp.reference or records[0]["row"]
    return next((r for r in records if r["row"] == name), None)


def _seen_spreads(records: list[dict], column: str) -> list[tuple[dict, tuple[float, float]]]:
    """(row, its stats.spreads) for the rows whose seeds show a spread in `column`: several pretraining seeds that
    do not all score the same. A row predicting one class on a balanced set scores exactly 50% with every seed
    (Table 5's None row on NSP and SOP): its zero spread says nothing of how far a row that learned varies from
    seed to seed."""
    seen = [(r, stats.spreads(r["samples"][column])) for r in records if len(r["samples"].get(column) or []) > 1]
    return [(r, sd) for r, sd in seen if any(x > 0 for x in sd)]


def row_coverage(records: list[dict], row: dict, column: str) -> float | None:
    """The simulated coverage of `row`'s 95% intervals in `column` at its seed counts and observed spreads
    (stats.row_coverage), kept in the record; a row with one pretraining seed borrows the median pretraining
    spread of the rows whose seeds show one (`_seen_spreads`; None where none does)."""
    cache = row.setdefault("coverage", {})
    if column not in cache:
        samples = row["samples"].get(column) if column != "ft:mean" else None
        if not samples:
            cache[column] = None
        else:
            others = [sd[0] for _, sd in _seen_spreads(records, column)]
            cache[column] = stats.row_coverage(samples, sd_pretraining=float(np.median(others)) if others else None)
    return cache[column]


def coverage_line(exp: registry.Experiment, records: list[dict]) -> str:
    """What more seeds would buy: for each column a reading rests on, the simulated coverage of its "95%"
    intervals at 1, 2 and 3 pretraining seeds, at the spreads the rows show (the median over the rows whose
    seeds show one, `_seen_spreads`) and this table's fine-tuning seeds and held-out examples (stats.coverage)."""
    parts = []
    for column in dict.fromkeys(c.column for c in exp.checks):
        seen = _seen_spreads(records, column)
        if not seen:
            continue
        spread = np.median([sd for _, sd in seen], axis=0)
        first_row = seen[0][0]
        first = first_row["est"].get(column) or _estimate(first_row["samples"][column])
        per = max(1, round(first.seeds / max(first.pretraining, 1)))
        cover = [stats.coverage(n, per, float(spread[0]), float(spread[1]), first.examples, first.value)
                 for n in (1, 2, 3)]
        label = column[3:] if column.startswith("ft:") else column.split("/")[-1]
        parts.append(f"{label} (seed SD {100 * spread[0]:.1f} points between pretraining seeds, "
                     f"{100 * spread[1]:.1f} between fine-tuning seeds; {per} fine-tuning seed{'s' if per > 1 else ''}"
                     f" each): {' / '.join(f'{100 * c:.0f}%' for c in cover)}")
    if not parts:
        return ("Coverage of the intervals behind the readings: not known (one pretraining seed per row, so no "
                "seed-to-seed spread is seen; one seed covers far less than 95% wherever seeds differ: "
                "docs/reproduction.md, \"How to read a verdict\").")
    return ("Simulated coverage of the readings' 95% intervals at 1 / 2 / 3 pretraining seeds, at the spreads seen "
            f"here (under {100 * readings.COVERED:.0f}%: under-covered): " + "; ".join(parts) + ".")


def check_readings(exp: registry.Experiment, records: list[dict]) -> list[readings.Reading]:
    """Each of the experiment's checks with its verdict (readings.py: direction and size, equivalence for "at
    chance", a bound; Holm over the family). A verdict drawn while one of its rows is still running says "so far"
    and names the row: a table printed from a sweep in progress must not read as its finding (a partial row once
    showed "contradicted" from one seed)."""
    by_row = {r["row"]: r for r in records}
    est = {r["row"]: r["est"] for r in records}
    diff = {}
    for c in exp.checks:
        a, b = by_row.get(c.row), by_row.get(c.against)
        if a and b and a["samples"].get(c.column) and b["samples"].get(c.column):
            paired = not c.column.startswith("eval/") or a["eval_set"] == b["eval_set"]
            diff[(c.row, c.against, c.column)] = _difference(a["samples"][c.column], b["samples"][c.column], paired)
    out, tested = [], {}
    for i, c in enumerate(exp.checks):
        stuck = [name for name in (c.row, c.against) if name in by_row and c.column.startswith("ft:")
                 and (by_row[name]["finetune"].get(c.column[3:]) or {}).get("did_not_learn")]
        d = c.tested(est, diff)
        if d is None:
            out.append(readings.Reading(c, "not run"))
            continue
        rows = [by_row[n] for n in (c.row, c.against) if n in by_row]
        cover = [row_coverage(records, r, c.column) for r in rows]
        r = readings.Reading(c, "", c.words(d), seeds=readings.seed_words(d, c.column.startswith("ft:")),
                             coverage=None if any(x is None for x in cover) else min(cover))
        if stuck:  # a row stuck at the majority class is no measurement of what pretraining gave it
            r.verdict = r.raw = "not resolved"
            r.words = f"{' and '.join(stuck)} did not learn"
        else:
            r.raw, r.p = c.judge(d)
            tested[i] = d
        out.append(r)
    readings.judge_family(out, tested)
    for r in out:
        running = [n for n in (r.check.row, r.check.against) if n in by_row and not by_row[n].get("done", True)]
        if running and r.verdict != "not run":
            r.verdict += " so far"
            r.words = f"{r.words}; {' and '.join(running)} not finished" if r.words else \
                f"{' and '.join(running)} not finished"
    return out


# ------------------------------------------------------------------ cells
def _pct(x: float | None) -> str:
    return MISSING if x is None else f"{100 * x:.1f}"


def _spread(r: dict | None) -> str:
    """A fine-tuning cell: median [95% interval], or 'did not learn' when it is within 2 points of the majority."""
    if not r:
        return NOT_RUN
    if r.get("did_not_learn"):
        return f"did not learn ({100 * r['median']:.1f}; majority {100 * r['majority']:.1f})"
    return r["estimate"].text() if "estimate" in r else f"{100 * r['median']:.1f}"


def _with_diff(text: str, d: stats.Estimate | None) -> str:
    """A cell followed by its paired difference to the reference row, marked when its interval excludes 0."""
    if d is None or text in (NOT_RUN, MISSING) or text.startswith("did not learn"):
        return text
    return f"{text}; Δ {readings.signed(d)}{' ✓' if d.resolved else ''}"


def _paper(value: Any) -> str:
    return MISSING if value is None else str(value)


def columns(exp: registry.Experiment) -> list[tuple[str, str]]:
    """(header, key) pairs: each paper column followed by ours where we measure it."""
    cols = [("Row", "row")]
    for key in exp.columns:
        label, ours = registry.COLUMNS[key]
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
    shown = {registry.COLUMNS[k][1] for k in exp.columns}
    cols += [(f"{t} dev (ours)", f"ours:ft:{t}") for t in exp.finetune if t not in shown]
    if len(exp.finetune) > 1:
        cols.append(("Downstream: mean of the responding tasks (ours)", "ours:ft:mean"))
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
        e = rec.get("est", {}).get(name)
        return _with_diff(e.text(), rec.get("diff", {}).get(name)) if e else NOT_RUN
    if name == "ft:mean":
        e = rec.get("est", {}).get(name)
        if e is None:
            return "no task responds" if not rec.get("responding") else NOT_RUN
        stuck = [t for t in rec["responding"] if (rec["finetune"].get(t) or {}).get("did_not_learn")]
        text = f"did not learn ({', '.join(stuck)})" if stuck else e.text()
        return _with_diff(text, rec.get("diff", {}).get(name))
    if name.startswith("ft:"):
        return _with_diff(_spread(rec["finetune"].get(name[3:])), rec.get("diff", {}).get(name))
    raise KeyError(key)


def arch_of(cfg: dict) -> dict:
    """What a run's random-init twin is made of: its architecture and its tokenizer (sweep.random_init_sets). Runs
    recorded before data.tokenizer_kind existed were SentencePiece (the schema's default for them)."""
    arch = {k: cfg["model"].get(k, "") for k in ("embedding_size", "hidden_size", "num_hidden_layers", "sharing",
                                                 "sharing_map", "num_hidden_groups")}
    kind = cfg["data"].get("tokenizer", ADDED_DEFAULTS["data.tokenizer_kind"])
    return dict(arch, vocab=f"{kind} V={cfg['model'].get('vocab_size')}")


def describe_arch(arch: dict) -> str:
    """"E=128 H=128 L=4 all", "... all, 2 groups" where consecutive layers share one set per group, or the
    layer -> parameter-set map where one is set (it overrides `sharing`). Rows whose random-init twins differ must
    read differently: the table lists one twin per description."""
    shared = f"sharing_map={arch['sharing_map']}" if arch.get("sharing_map") else arch["sharing"]
    groups = arch.get("num_hidden_groups") or 1
    return (f"E={arch['embedding_size']} H={arch['hidden_size']} L={arch['num_hidden_layers']} {shared}"
            + (f", {groups} groups" if groups > 1 else ""))


def twin_label(arch: dict, records: list[dict]) -> str:
    """What names a row's random-init twin: its architecture, and its tokenizer where the rows' tokenizers differ
    (zh_masking's WordPiece and SentencePiece rows share an architecture but not their twins)."""
    vocabs = {r["arch"].get("vocab") for r in records if r["arch"]}
    return describe_arch(arch) + (f", {arch.get('vocab')}" if len(vocabs) > 1 else "")


def markdown(exp: registry.Experiment, scale: str, records: list[dict]) -> str:
    cols = columns(exp)
    lines = [f"### {exp.title} — scale {scale}", "", f"Reading under test: {exp.reading}", "",
             "| " + " | ".join(h for h, _ in cols) + " |", "|" + "---|" * len(cols)]
    for rec in records:
        lines.append("| " + " | ".join(cell(rec, k) for _, k in cols) + " |")
    unmeasured = [registry.COLUMNS[k][0] for k in exp.columns if registry.COLUMNS[k][1] is None]
    notes = []
    if unmeasured:
        notes.append(f"Paper columns without ours ({', '.join(unmeasured)}): GLUE/SQuAD/RACE are TFDS catalog "
                     "tasks that need the network; add them to the experiment's fine-tuning tasks where it is "
                     "reachable.")
    metrics: dict = {}
    for r in records:
        for t in exp.finetune:
            if (r["finetune"].get(t) or {}).get("metric"):
                metrics.setdefault(t, r["finetune"][t]["metric"])
    measured = ", ".join(f"{t} {m}" for t, m in metrics.items()) or "its headline metric"
    notes.append("Ours: intrinsic accuracies (%) from each row's final held-out evaluation; fine-tuning: the dev "
                 f"score (%: {measured}) of the best dev checkpoint. Architecture at this scale: " +
                 "; ".join(f"{r['row']}: {describe_arch(r['arch'])}" for r in records if r["arch"]) + ".")
    notes += baseline_lines(exp, records)
    checked = check_readings(exp, records)
    if checked:
        tested = sum(r.in_family for r in checked)
        notes.append(f"The paper's reading, checked against the intervals: one family of {tested} tested "
                     f"reading{'s' if tested != 1 else ''}, Holm-adjusted at {100 * readings.HOLM_ALPHA:.0f}% "
                     "(albert_jax/ablations/readings.py); \"at chance\" by two one-sided tests within the stated "
                     "margin:")
        notes += [readings.line(r) for r in checked]
        notes.append(coverage_line(exp, records))
    done = sum(r["done"] for r in records)
    notes.append(f"{done}/{len(records)} rows finished.")
    return "\n".join(lines + [""] + notes) + "\n"


def finetune_seed_lines(exp: registry.Experiment, records: list[dict]) -> list[str]:
    """How many fine-tuning seeds stand behind each fine-tuning cell, per pretraining seed. One line when every
    cell has the same; otherwise each cell's counts, so a table printed mid-sweep does not pass one pretraining
    seed's fine-tunes off as the row's."""
    cells = {}
    for r in records:
        for t in exp.finetune:
            res = r["finetune"].get(t)
            if res:
                counts = list(res.get("per_pretraining") or ())
                cells[(r["row"], t)] = counts + [0] * max(0, (r.get("pretrain_seeds") or 0) - len(counts))
    if not cells:
        return []
    counts = {n for c in cells.values() for n in c}
    if len(counts) == 1 and len({len(c) for c in cells.values()}) == 1:  # the same everywhere: one line
        return [f"Fine-tuning seeds per pretraining seed: {counts.pop()}."]
    listed = "; ".join(f"{row} {t} {'+'.join(map(str, c))}" for (row, t), c in cells.items())
    return [f"Fine-tuning cells in progress (finished fine-tuning seeds under pretraining seed 0+1+...): {listed}."]


def baseline_lines(exp: registry.Experiment, records: list[dict]) -> list[str]:
    """What each column's numbers stand against: chance and majority, and random init per architecture."""
    ref = reference_row(exp, records)
    seeds = sorted({r["pretrain_seeds"] for r in records if r.get("pretrain_seeds")})
    out = [f"Cells: median over seeds [95% interval, nested bootstrap: pretraining seeds, then each one's "
           f"fine-tuning seeds, then held-out examples]; Δ: the paired difference to the reference row "
           f"({ref['row'] if ref else '—'}), ✓ where its interval excludes 0 (exploratory: not adjusted for the "
           f"many differences shown; the readings below are). Pretraining seeds per row: "
           f"{', '.join(map(str, seeds)) or '—'}."]
    out += finetune_seed_lines(exp, records)
    base = ["Baselines: held-out SOP and NSP are balanced, chance = majority = 50.0"]
    first = next((r for r in records if r.get("samples")), None)
    if first is not None:
        m = evidence.mlm_majority(Path(first["directory"]) / "pretrain")
        if m is not None:
            base.append(f"MLM majority (the commonest masked token every time) = {100 * m:.1f}")
    for t in exp.finetune:
        r = next((x["finetune"][t] for x in records if x["finetune"].get(t)), None)
        if r and r.get("majority") is not None:
            base.append(f"{t} dev majority = {100 * r['majority']:.1f}")
    out.append("; ".join(base) + ".")
    shown = set()
    for r in records:
        for t in exp.finetune:
            rnd = r["random"].get(t)
            if rnd is None or not r["arch"]:
                continue
            arch = twin_label(r["arch"], records)
            if (arch, t) not in shown:
                shown.add((arch, t))
                twins = [n for n in rnd.get("per_pretraining") or (rnd["n"],) if n]
                out.append(f"Random init, {arch}, {t} dev: {_spread(rnd)} ({len(twins)} twin"
                           f"{'s' if len(twins) != 1 else ''} × {'+'.join(map(str, twins))} fine-tuning seed"
                           f"{'s' if twins != [1] else ''}).")
            d = r["vs_random"].get(t)
            if d is not None:
                out.append(f"- {r['row']} − random init on {t}: {_signed(d)}")
    counts = next((r["responding_counts"] for r in records if "responding_counts" in r), None)
    if counts:
        said = [f"{t} ({k}/{n} rows)" for t, (k, n) in counts.items()]
        tasks = records[0]["responding"]
        out.append("Downstream mean: over the tasks that respond to pretraining here, i.e. at least half of the rows "
                   "beat their random-init twin with an interval above 0; rows that do, per task: "
                   f"{', '.join(said)}. Responding: {', '.join(tasks) or 'none'}.")
        for r in records:
            d = r["vs_random"].get("mean")
            if d is not None:
                out.append(f"- {r['row']} − random init, mean of the responding tasks: {_signed(d)}")
    return out


def _signed(d: stats.Estimate) -> str:
    return (f"{readings.signed(d)}"
            f"{' ✓ resolved' if d.resolved else ' (not resolved)'}")


def write_csv(exp: registry.Experiment, records: list[dict], path: Path) -> Path:
    cols = columns(exp)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([h for h, _ in cols])
        for rec in records:
            w.writerow(["" if cell(rec, k) in (MISSING, NOT_RUN) else cell(rec, k) for _, k in cols])
    return path


def headline_values(exp: registry.Experiment, records: list[dict]) -> tuple[dict, dict | None, dict]:
    """(ours, paper, our intervals) per row for the bar chart: a fine-tuning task's dev median or an intrinsic
    metric (%). The paper's values come along only for an intrinsic metric, the same measure as ours: a local
    task's dev accuracy and the paper's SST-2 are different measures and never share an axis."""
    ours, paper, intervals = {}, {}, {}
    key = f"ft:{exp.headline}" if exp.headline in exp.finetune else exp.headline
    for rec in records:
        e = rec.get("est", {}).get(key)
        ours[rec["row"]] = None if e is None else 100 * e.value
        if e is not None:
            intervals[rec["row"]] = (100 * e.low, 100 * e.high)
        col = next((k for k, (_, o) in registry.COLUMNS.items() if o == exp.headline and k in exp.columns), None)
        value = rec["paper"].get(col) if col and exp.headline.startswith("eval/") else None
        paper[rec["row"]] = value if isinstance(value, (int, float)) else None
    return ours, (paper if any(v is not None for v in paper.values()) else None), intervals


# The bootstraps' matrix products (stats._drawn_scores) are a few seeds wide: OpenBLAS's threads give them nothing
# on an idle machine and triple a table's time on a busy one (a study training beside it, the suite's workers:
# benchmarks/table_build.py, docs/benchmarks.md "Tables"). Exact either way: the sums are of whole counts.
BLAS_THREADS: int | None = 1  # None: OpenBLAS's own count


def build(exp: registry.Experiment, scale: str, runs, out_dir=None, plots: bool = True) -> tuple[str, list[Path]]:
    """Markdown text, and the files written (CSV, curves PNG, bars PNG) under out_dir (default: the sweep's)."""
    exp = with_found_tasks(exp, scale, runs)
    with threadpoolctl.threadpool_limits(BLAS_THREADS, user_api="blas"):
        records = collect(exp, scale, runs)
        text = markdown(exp, scale, records)
    out = Path(out_dir) if out_dir else Path(runs) / exp.name / scale
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text(text, encoding="utf-8")
    files = [out / "table.md", write_csv(exp, records, out / "table.csv")]
    if plots:
        from albert_jax.ablations import plots as plotting  # noqa: PLC0415  heavy: matplotlib

        seeds = sorted({r["pretrain_seeds"] for r in records if r.get("pretrain_seeds")})
        caption = (f"{exp.name}, {scale} scale, {'/'.join(map(str, seeds)) or '?'} pretraining seed(s)")
        curves = {r["row"]: {m: [(x["step"], x[m]) for x in read_metrics(Path(r["directory"]) / "pretrain") if m in x]
                             for m in evidence.INTRINSIC} for r in records}
        if any(any(v.values()) for v in curves.values()):
            files.append(plotting.plot_panels(curves, list(evidence.INTRINSIC), out / "curves.png",
                                       title=f"{caption}\nheld-out curves of seed 0",
                                       chance={"eval/sop_accuracy": evidence.CHANCE,
                                               "eval/nsp_accuracy": evidence.CHANCE}))
        ours, paper, intervals = headline_values(exp, records)
        files.append(plotting.plot_bars(ours, exp.headline, out / "bars.png", paper=paper, intervals=intervals,
                                 title=f"{caption}\nmedian [95% interval]" + (", the paper's beside" if paper else "")))
    return text, files


def best_row(exp: registry.Experiment, scale: str, runs, hf_only: bool = False) -> dict | None:
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
