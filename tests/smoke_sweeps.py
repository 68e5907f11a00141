"""Every registered experiment at its smoke scale, end to end (tests/test_smoke_sweeps_*.py): `albert-jax sweep
NAME --scale smoke --table` runs every row (pretraining with its final held-out MLM/SOP/NSP evaluation, fine-tuning
on the experiment's tasks), and the table, CSV and plots come from those runs.

The experiments are split in two files that run in parallel under `make test` (pytest-xdist, one file per worker),
which runs all seventeen; `make test-sweeps` runs these two files alone.
Each file keeps one runs directory, as a user would: a row identical to a finished row of another experiment links
to it instead of training again (Table 3 and Table 4 share rows, most claims reuse the tables'), so an experiment
sits in the file of the rows it reuses, after them. Run alone (`-k claim_e128`), an experiment trains its rows
itself. The sweeps' kill/resume, link and launcher paths are tests/test_sweeps.py's and tests/test_sweeps_jobs.py's;
these files check that no experiment's definition is broken anywhere between its rows and its table.

The sweeps compile with the suite's fast-compile XLA flags (tests/procs.py: LLVM's optimisation level 0, the CPU fusion
emitters off, one code-generation part): the same programs in less than half the compile time, which is most of a
smoke row's time; nothing here measures speed.
"""
import csv
import os
import subprocess
import sys

import pytest

from albert_jax.ablations import registry
from albert_jax.ablations import table as ablation_table
from procs import user_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Fine-tuning in seconds: the smoke scale's 12 steps and 256 examples are more than a plumbing test needs.
FAST = ["--set", "finetune.train.num_train_steps=2", "--set", "finetune.train.eval_every=2",
        "--set", "finetune.train.checkpoint_every=2", "--set", "finetune.data.limit=32"]
# The two files' experiments, each in the order a user would run them (a reused row's source first).
ABLATIONS = ("table3", "table4", "table5", "claim_e128", "claim_ffn_vs_attention", "claim_layers",
             "claim_sop_long_text", "claim_nsp_pairs", "claim_shared_speed")
SIZES = ("table1", "table2", "table11", "table12", "groups", "claim_every3", "zh_masking", "zh_few_labels")
# Table 5 runs as its cpu-scale write-up does: two pretraining seeds per row and a random-init baseline, so its
# table shows intervals over seeds and held-out examples, differences to the reference row and the checked reading.
EXTRA = {"table5": ["--seeds", "2", "--random-init"]}


def cli(*args, check=True, timeout=900) -> subprocess.CompletedProcess:
    """`albert-jax ARGS` as a user runs it (one device, tests/procs.py's compile settings); `check`: a failure raises
    with the ends of its output."""
    p = subprocess.run([sys.executable, "-m", "albert_jax.main", *args], cwd=ROOT, env=user_env(),
                       capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"albert-jax {' '.join(args)} failed ({p.returncode}):\n{p.stdout[-3000:]}\n"
                             f"{p.stderr[-3000:]}")
    return p


def run_and_check(name: str, runs) -> None:
    exp = registry.get(name)
    seeds = int(EXTRA.get(name, ["--seeds", "1"])[1])
    p = cli("sweep", name, "--scale", "smoke", "--runs", str(runs), *FAST, *EXTRA.get(name, []), "--table",
            timeout=1800)
    rows = [r.name for r in exp.rows_at("smoke")]
    records = ablation_table.collect(exp, "smoke", runs)
    assert [r["row"] for r in records] == rows
    for r in records:
        assert r["done"], (name, r["row"])
        assert r["params_run"] > 0 and r["arch"]["hidden_size"] > 0, (name, r["row"])
        # The final evaluation measures every intrinsic metric whatever loss the row trained with (Table 5).
        for key in ("eval/mlm_accuracy", "eval/sop_accuracy", "eval/nsp_accuracy"):
            assert 0.0 <= r["intrinsic"][key] <= 1.0, (name, r["row"], key)
            est = r["est"][key]  # per held-out example: the final evaluation kept them
            assert est.seeds == seeds and est.examples > 0 and est.low <= est.value <= est.high, (name, key, est)
        assert r["curve"] and r["curve"][-1][0] > 0, (name, r["row"])  # the training curve the plot draws
        for task in exp.finetune:
            result = r["finetune"][task]
            assert result["n"] == seeds and 0.0 <= result["median"] <= 1.0, (name, r["row"], task)
            assert result["estimate"].examples > 0, (name, r["row"], task)  # the best checkpoint's dev predictions
            if task == "pd_pos":  # tagging's majority baseline: the commonest tag's share of the dev words
                assert 0.1 < result["majority"] < 0.5, (name, r["row"], result["majority"])
        if "step_time" in exp.columns:
            assert r["step_time"] > 0, (name, r["row"])
    table = p.stdout[p.stdout.index("### "):]
    lines = {line.split(" | ")[0][2:]: line for line in table.splitlines() if line.startswith("| ")}
    for row in rows:
        assert ablation_table.NOT_RUN not in lines[row], (name, row, lines[row])
    assert f"{len(rows)}/{len(rows)} rows finished." in table
    reference = ablation_table.reference_row(exp, records)
    for r in records:
        for key in r["est"]:
            assert (key in r["diff"]) == (r is not reference), (name, r["row"], key)
    if name in EXTRA:
        assert f"Pretraining seeds per row: {seeds}." in table
        assert "Fine-tuning seeds per pretraining seed: " in table and "cells in progress" not in table
        for task in exp.finetune:
            assert f"Random init, {ablation_table.describe_arch(records[0]['arch'])}, {task} dev: " in table
            assert all(r["vs_random"][task] is not None for r in records)
        for check in exp.checks:
            verdict = next(line for line in table.splitlines() if line.startswith(f"- {check.statement}: **"))
            assert verdict.split("**")[1].startswith(("reproduced", "contradicted", "not resolved")), verdict
            assert "pretraining" in verdict and "cover" in verdict, verdict  # seed counts, coverage beside it
    directory = runs / name / "smoke"
    with open(directory / "table.csv", newline="", encoding="utf-8") as f:
        assert [line[0] for line in csv.reader(f)][1:] == rows
    for plot in ("curves.png", "bars.png"):
        assert (directory / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", (name, plot)


def sweep_tests(names: tuple[str, ...]):
    """A test file's runs-directory fixture (one per file) and its test, one case per experiment, in order."""
    @pytest.fixture(scope="module")
    def runs(tmp_path_factory):
        return tmp_path_factory.mktemp("runs")

    @pytest.mark.parametrize("name", names)
    def test_the_experiment_runs_end_to_end_at_the_smoke_scale(name, runs):
        run_and_check(name, runs)

    return runs, test_the_experiment_runs_end_to_end_at_the_smoke_scale
