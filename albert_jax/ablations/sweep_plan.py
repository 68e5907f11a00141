"""`sweep NAME --plan TARGET`: every row's pretraining step compiled for the target before anything runs, as one
table (memory, fit, predicted step time, chip-hours per row and for the sweep); rows that cannot fit are named so a
launcher can refuse them before submitting.

Fine-tuning stages are not compiled: their config starts from a pretraining run that does not exist yet, and
their steps are short next to pretraining (at the paper's scale they are planned with `albert-jax plan` once it
does).
"""
from __future__ import annotations

import dataclasses

from albert_jax.plan import render, search


@dataclasses.dataclass
class PlannedRow:
    name: str
    report: object | None  # plan.compile.Report
    error: str = ""
    paper_speedup: str = ""


def plan_rows(plans, target) -> list[PlannedRow]:
    out = []
    for p in plans:
        stage = next((s for s in p.stages if s.kind == "pretrain"), None)
        if stage is None:
            continue
        try:
            out.append(PlannedRow(p.row.name, search.probe(stage.config(), target),
                                  paper_speedup=str(p.row.paper.get("speedup", ""))))
        except ValueError as e:  # a mesh or batch that does not split over the target's devices
            out.append(PlannedRow(p.row.name, None, str(e).splitlines()[0]))
    return out


def render_plan(rows: list[PlannedRow], target: str, reference: str = "") -> str:
    """The table, the sweep's total, and, with a reference row (Table 2: BERT large), each row's predicted speedup
    (the reference's step time over the row's, the same chips for every row) beside the paper's."""
    lines = [render.table([(r.name, r.report, r.error) for r in rows])]
    ok = [r for r in rows if r.report is not None and r.report.roofline]
    total = sum(r.report.roofline["chip_hours"] for r in ok)
    lines.append(f"\nsweep on {target}: {len(ok)} of {len(rows)} rows compiled, "
                 f"{sum(bool(r.report.fits) for r in ok)} fit; {total:,.0f} chip-hours for the rows that fit and "
                 "those that do not alike (a model's prediction, not a measurement)")
    ref = next((r for r in ok if r.name == reference), None)
    if ref is not None:
        lines += ["", f"| row | predicted speedup vs {reference} | paper | fits |", "|---|---:|---:|---|"]
        for r in ok:
            speed = ref.report.roofline["step_seconds"] / r.report.roofline["step_seconds"]
            lines.append(f"| {r.name} | {speed:.2f}x | {r.paper_speedup or '-'} | {'yes' if r.report.fits else 'no'} |")
    return "\n".join(lines)


def refused(rows: list[PlannedRow]) -> list[str]:
    """The rows a launcher must not submit: they do not fit, or did not compile."""
    return [r.name for r in rows if r.report is None or not r.report.fits]
