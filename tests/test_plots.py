"""Plots for experiment tables: curves read back from the metrics our own writer produces, PNGs that decode, and
a missing value drawn as an absent bar (never a zero-height one)."""

import numpy as np
import pytest
from matplotlib import image as mpimg
from matplotlib.patches import Rectangle

from albert_jax.ablations import plots
from albert_jax.training.metrics import MetricWriter


def _png_ok(path):
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    assert img.std() > 0  # something is drawn, not a blank canvas


def _write_run(workdir, n_steps=6, eval_every=3):
    """A run's metrics.jsonl written by the trainer's own writer: train lines every step, eval lines sometimes."""
    w = MetricWriter(workdir, tensorboard=False, enabled=True)
    for step in range(1, n_steps + 1):
        w.write(step, {"loss": 5.0 / step, "learning_rate": np.float32(1e-3)})
        if step % eval_every == 0:
            w.write(step, {"eval/mlm_accuracy": 0.1 * step, "eval/sop_loss": np.float32(0.7)})
    w.close()


def test_read_curves_from_the_metric_writer(tmp_path):
    _write_run(tmp_path)
    assert plots.read_curves(tmp_path, "loss") == [(s, pytest.approx(5.0 / s)) for s in range(1, 7)]
    # eval metrics live on their own lines; the training lines that lack them are skipped
    assert plots.read_curves(tmp_path, "eval/mlm_accuracy") == [(3, pytest.approx(0.3)), (6, pytest.approx(0.6))]
    assert plots.read_curves(tmp_path, "eval/absent") == []


def test_read_curves_after_a_resume_and_a_killed_write(tmp_path):
    _write_run(tmp_path)
    # a resumed run appends: steps 5-6 logged again (with other values), and the process died mid-line
    w = MetricWriter(tmp_path, tensorboard=False, enabled=True)
    w.write(5, {"loss": 9.0})
    w.write(6, {"loss": 8.0})
    w.close()
    with open(tmp_path / "metrics.jsonl", "a") as f:
        f.write('{"step": 7, "loss": 1.')
    pts = plots.read_curves(tmp_path, "loss")
    assert [s for s, _ in pts] == [1, 2, 3, 4, 5, 6]
    assert pts[-2:] == [(5, 9.0), (6, 8.0)]


def test_read_curves_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="metrics.jsonl"):
        plots.read_curves(tmp_path, "loss")
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "loss": 2}\nnot json\n{"step": 2, "loss": 1}\n')
    with pytest.raises(ValueError, match=r"metrics.jsonl:2"):
        plots.read_curves(tmp_path, "loss")


def test_plot_curves_writes_a_png(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _write_run(a)
    _write_run(b, n_steps=9)
    curves = {"a": plots.read_curves(a, "eval/mlm_accuracy"), "b": plots.read_curves(b, "eval/mlm_accuracy"),
              "c": []}
    out = plots.plot_curves(curves, "eval/mlm_accuracy", tmp_path / "figs" / "curves.png", title="MLM")
    assert out == tmp_path / "figs" / "curves.png" and out.stat().st_size > 0
    _png_ok(out)
    assert not list(out.parent.glob("*.tmp"))


def _bars(ax):
    return [p for p in ax.patches if isinstance(p, Rectangle)]


def test_a_missing_value_is_no_bar_and_is_labelled():
    ours = {"E=64": 0.5, "E=128": None, "E=256": 0.7}
    paper = {"E=64": 0.6, "E=128": 0.65, "E=256": None}
    fig, ax = plots._bars_figure(ours, "acc", paper)
    bars = _bars(ax)
    assert len(bars) == 4  # two missing values: no bar for either
    assert sorted(round(b.get_height(), 6) for b in bars) == [0.5, 0.6, 0.65, 0.7]
    labels = [t.get_text() for t in ax.texts]
    assert labels.count("not run") == 1 and labels.count("not reported") == 1
    lo, hi = ax.get_xlim()  # the labels of absent bars are inside the drawn area, not clipped away
    assert all(lo < t.xy[0] < hi for t in ax.texts if t.get_text().startswith("not "))
    # ours sit left of the paper's bar in each group; "E=128" has only the paper's bar
    xs = sorted((round(b.get_x() + b.get_width() / 2, 3), round(b.get_height(), 3)) for b in bars)
    assert xs == [(-0.2, 0.5), (0.2, 0.6), (1.2, 0.65), (1.8, 0.7)]
    assert [t.get_text() for t in ax.get_xticklabels()] == list(ours)


def test_bars_without_the_paper_and_nan_is_missing():
    fig, ax = plots._bars_figure({"a": 1.0, "b": float("nan"), "c": -0.5}, "delta")
    assert sorted(b.get_height() for b in _bars(ax)) == [-0.5, 1.0]
    assert [t.get_text() for t in ax.texts].count("not run") == 1


def test_plot_bars_writes_a_png(tmp_path):
    out = plots.plot_bars({"shared": 80.1, "not-shared": None}, "avg", tmp_path / "bars.png",
                          paper={"shared": 80.1, "not-shared": 82.3}, title="Table 4")
    assert out.stat().st_size > 0
    _png_ok(out)
