"""Figures for experiment tables: metric curves over training steps, and bars of our numbers beside the paper's.

Figures are built on `matplotlib.figure.Figure` directly, which renders with the non-interactive Agg canvas and
touches no pyplot global state: nothing opens a window, needs a display, or leaks figures in a long sweep.
A missing number (a row not run yet, a value the paper does not report) is drawn as an absent bar with a label
saying so, never as a zero, which would read as a measurement.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

from matplotlib.figure import Figure

from albert_jax.training import rundir

METRICS_FILE = rundir.METRICS  # what training/metrics.py's MetricWriter writes in a workdir


def read_curves(workdir, metric: str) -> list[tuple[int, float]]:
    """(step, value) points of one metric from a run's metrics.jsonl, sorted by step.

    Lines without the metric are skipped (training lines lack `eval/...` keys and vice versa), so a run that has
    not reached its first evaluation gives []. A resumed run appends to the file and may log a step twice; the
    later record wins. The file is read by rundir.read_metrics: a last line cut short by a killed process is
    skipped with a warning; a malformed line elsewhere is an error naming the file and line.
    """
    path = Path(workdir) / METRICS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: {workdir} is not a run's workdir, or it has logged nothing")
    points: dict[int, float] = {}
    for record in rundir.read_metrics(path):
        if metric in record and "step" in record:
            points[int(record["step"])] = float(record[metric])
    return sorted(points.items())


def save_png(fig: Figure, path) -> Path:
    """Write `fig` as a PNG at `path` (its folder made), atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fig.savefig(tmp, format="png", dpi=100)
    os.replace(tmp, path)  # a reader (or a rerun) never sees half a PNG
    return path


def plot_curves(curves: dict[str, list[tuple[int, float]]], metric: str, path, title: str = "") -> Path:
    """One line per row (row name -> (step, value) points) on one figure; a row without points is listed in the
    legend as "not run". Writes a PNG at `path` and returns it."""
    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    ax = fig.add_subplot()
    for name, points in curves.items():
        if points:
            steps, values = zip(*sorted(points))
            ax.plot(steps, values, marker="o" if len(points) < 30 else None, markersize=3, label=name)
        else:
            ax.plot([], [], label=f"{name} (not run)")
    ax.set_xlabel("step")
    ax.set_ylabel(metric)
    ax.set_title(title or metric)
    ax.grid(True, alpha=0.3)
    if curves:
        ax.legend(fontsize="small")
    return save_png(fig, path)


def plot_panels(curves: dict[str, dict[str, list[tuple[int, float]]]], metrics: list[str], path,
                title: str = "", chance: dict[str, float] | None = None) -> Path:
    """One panel per metric (row name -> {metric: (step, value) points}), each row one line in every panel: a
    metric is never drawn on another's axis. `chance` draws a dashed line at a metric's chance level."""
    fig = Figure(figsize=(4.2 * len(metrics), 4.0), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics):
        for k, (name, by_metric) in enumerate(curves.items()):
            points = by_metric.get(metric) or []
            if points:
                steps, values = zip(*sorted(points))
                ax.plot(steps, values, marker="o" if len(points) < 30 else None, markersize=3, label=name,
                        color=f"C{k}")
            else:
                ax.plot([], [], label=f"{name} (not run)", color=f"C{k}")
        if chance and metric in chance:
            ax.axhline(chance[metric], color="grey", linestyle="--", linewidth=0.8, label="chance")
        ax.set_xlabel("step")
        ax.set_title(metric, fontsize="medium")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize="small")
    if title:
        fig.suptitle(title, fontsize="medium")
    return save_png(fig, path)


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _bars_figure(ours: dict[str, float | None], metric: str, paper: dict[str, float | None] | None = None,
                 title: str = "", intervals: dict[str, tuple[float, float]] | None = None):
    """(figure, axes) of plot_bars, before saving: tests inspect its patches."""
    rows = list(ours) + [r for r in (paper or {}) if r not in ours]
    series = [("ours", ours, "not run")]
    if paper is not None:
        series.append(("paper", paper, "not reported"))
    width = 0.8 / len(series)
    fig = Figure(figsize=(max(4.8, 1.1 * len(rows) + 2), 4.2), layout="constrained")
    ax = fig.add_subplot()
    for k, (name, values, missing) in enumerate(series):
        offset = (k - (len(series) - 1) / 2) * width
        xs = [i + offset for i, r in enumerate(rows) if _present(values.get(r))]
        heights = [float(values[r]) for r in rows if _present(values.get(r))]
        err = None
        if name == "ours" and intervals:  # the 95% interval as an error bar (asymmetric around the median)
            shown = [r for r in rows if _present(values.get(r))]
            err = [[max(0.0, float(values[r]) - intervals[r][0]) if r in intervals else 0.0 for r in shown],
                   [max(0.0, intervals[r][1] - float(values[r])) if r in intervals else 0.0 for r in shown]]
        bars = ax.bar(xs, heights, width=width * 0.95, label=name, color=f"C{k}", yerr=err, capsize=3)
        ax.bar_label(bars, fmt="%.4g", fontsize="x-small", padding=2)
        for i, r in enumerate(rows):
            if not _present(values.get(r)):
                # No bar at all: a label at the baseline says why, so the gap cannot be read as a zero.
                ax.annotate(missing, (i + offset, 0), xytext=(0, 3), textcoords="offset points", ha="center",
                            va="bottom", rotation=90, fontsize="x-small", color=f"C{k}")
    slant = len(rows) > 4
    ax.set_xticks(range(len(rows)), rows, rotation=30 if slant else 0, ha="right" if slant else "center")
    ax.set_xlim(-0.5, len(rows) - 0.5)  # the whole group, also where a row's last bar is absent
    ax.set_ylabel(metric)
    ax.set_title(title or metric)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.margins(y=0.15)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    return fig, ax


def plot_bars(ours: dict[str, float | None], metric: str, path, paper: dict[str, float | None] | None = None,
              title: str = "", intervals: dict[str, tuple[float, float]] | None = None) -> Path:
    """Grouped bars per row: ours (with its interval, where given) beside the paper's, which callers pass only when
    it is the same measure. None (or NaN) is drawn as an absent bar labelled "not run" (ours) or "not reported"
    (paper), never as zero. Writes a PNG at `path` and returns it."""
    fig, _ = _bars_figure(ours, metric, paper, title, intervals)
    return save_png(fig, path)
