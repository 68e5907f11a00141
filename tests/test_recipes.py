"""The cpu-scale recipe study (albert_jax/ablations/recipes.py): each candidate's command, and the report read from
a real run's metrics (the shared tiny pretraining run stands in as the reference candidate's workdir)."""
import csv
import json
import os

import pytest

from albert_jax.ablations import recipes


def test_every_candidate_is_the_cpu_scale_on_the_whole_mix_with_its_own_changes(tmp_path):
    assert len(recipes.CANDIDATES) >= 5
    for r in recipes.CANDIDATES.values():
        cmd = recipes.command(r, tmp_path)
        assert cmd[cmd.index("--config") + 1] == "experiments/pretrain.py:scale=cpu"
        assert cmd[cmd.index("--workdir") + 1] == str(tmp_path / r.name)
        sets = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--set"]
        assert "data.max_docs=0" in sets and f"train.num_train_steps={r.steps}" in sets
    with pytest.raises(ValueError, match="unknown recipe 'nope'"):
        recipes.select("ref,nope")


def test_a_run_records_its_clock_and_the_report_plots_it_against_cpu_minutes(tiny_pretrained, tmp_path):
    records = [json.loads(line) for line in (tiny_pretrained / "metrics.jsonl").read_text().splitlines()]
    timed = [r for r in records if "cpu_s" in r]
    assert timed and all(r["cpu_s"] > 0 and r["wall_s"] > 0 for r in timed)
    assert [r["cpu_s"] for r in timed] == sorted(r["cpu_s"] for r in timed)  # a clock only moves forward
    runs = tmp_path / "runs"
    runs.mkdir()
    os.symlink(tiny_pretrained, runs / "ref")
    files = recipes.report(runs, tmp_path / "out", n_sop=2106)
    assert [f.name for f in files] == ["curves.csv", "curves.png", "summary.md"]
    with open(files[0], newline="") as f:
        rows = list(csv.DictReader(f))
    final = [r for r in records if "eval/sop_accuracy" in r][-1]
    assert [r["recipe"] for r in rows] == ["ref"] and int(rows[0]["step"]) == final["step"]
    assert float(rows[0]["cpu_min"]) == pytest.approx(final["cpu_s"] / 60, abs=1e-4)
    assert float(rows[0]["sop"]) == pytest.approx(final["eval/sop_accuracy"], abs=1e-4)
    assert files[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    line = next(x for x in files[2].read_text().splitlines() if x.startswith("| ref |"))
    assert f"{100 * final['eval/sop_accuracy']:.1f} ± " in line
