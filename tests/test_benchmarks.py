"""benchmarks/run.py runs every suite end to end (`--quick`, in a child process on one CPU device, real data,
real HF models) and writes JSON whose every measured field is a positive finite number, headed by the command,
machine and versions. It checks that the benchmarks run and report, not how fast anything is."""
import json
import math
import os
import subprocess
import sys

import pytest
from procs import user_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITES = ("ceiling", "train", "inference", "finetune", "compile", "memory")

# suite -> table -> (fields every row must hold as positive finite numbers, the systems the table must hold)
EXPECTED = {
    "ceiling": {"matmul ceiling": (("gflops",), ())},
    "train": {"pretraining step": (("step_s", "seq_per_s", "tokens_per_s", "tflops_per_device",
                                    "share_of_ceiling", "ceiling_gflops"), ("albert_jax", "hf_torch", "hf_flax"))},
    "inference": {
        "encoder forward (batch 8, seq 128)": (("median_s", "seq_per_s", "tflops", "share_of_ceiling",
                                                "ceiling_gflops"),
                                               ("albert_jax", "hf_torch", "hf_flax")),
        "rt_sentiment dev classification forward": (
            ("examples", "mean_padded_len", "pass_s", "examples_per_s", "useful_tokens_per_s", "tflops",
             "share_of_ceiling", "ceiling_gflops", "speedup_vs_padded", "ours_bucketed_over_this"),
            ("albert_jax padded", "albert_jax bucketed", "hf_torch dynamic padding"))},
    "finetune": {"fine-tuning step (batch 32, max length 128)": (
        ("mean_padded_len", "step_s", "examples_per_s", "useful_tokens_per_s", "tflops", "share_of_ceiling",
         "ceiling_gflops", "speedup_vs_full", "ours_bucketed_over_this"),
        ("albert_jax full-length", "albert_jax bucketed", "hf_torch dynamic padding"))},
    "compile": {"compile time and program size against depth": (
        ("depth", "trace_lower_s", "compile_s", "total_s", "stablehlo_chars", "hlo_chars"), ())},
    "memory": {"sharing x remat": (("step_s", "tokens_per_s", "gflops", "share_of_ceiling", "compile_s",
                                    "peak_mib"), ()),
               "largest batch under the budget": (("largest_batch", "peak_mib"), ())},
}
SUMMARY = {"train": 2, "inference": 4, "finetune": 6, "compile": 4, "memory": 1}  # at least this many ratios


def positive(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def run_suite(out, suite: str, *extra: str) -> dict:
    """Runs SUITE (one, or a comma list) and returns the JSON of the last suite it names."""
    env = user_env()  # a user's one-device process
    p = subprocess.run([sys.executable, "benchmarks/run.py", suite, "--quick", "--out", str(out), *extra], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    for name in suite.split(","):
        assert (out / f"{name}.md").read_text().startswith(f"# benchmarks: {name}")
    with open(out / f"{suite.split(',')[-1]}.json", encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def ceiling(tmp_path_factory):
    """A comma list of suites, as `run.py all` runs them: the ceiling measured once and handed to the compile
    suite's own process. The other suites then run one per test, handed the same ceiling file, so no one test
    holds the whole run."""
    out = tmp_path_factory.mktemp("bench")
    run = run_suite(out, "ceiling,compile")
    with open(out / "ceiling.json", encoding="utf-8") as f:
        return out, json.load(f), run


def check_suite_json(r: dict, suite: str, ceiling: dict):
    h = r["header"]
    assert f"run.py {suite}" in h["command"] and "--quick" in h["command"]
    assert h["machine"]["cpu"] and h["machine"]["cores"] >= 1
    assert isinstance(h["machine"]["avx2"], bool) and isinstance(h["machine"]["avx512"], bool)
    assert all(h["versions"][k] for k in ("python", "jax", "flax", "torch", "transformers")), h["versions"]
    assert h["date"][:2] == "20"
    # Every suite reads its rates against the one jax ceiling of the run (measured once and handed on).
    assert positive(r["ceiling"]["jax_float32_gflops"]) and positive(r["ceiling"]["torch_float32_gflops"])
    assert r["ceiling"] == ceiling
    for table, (fields, systems) in EXPECTED[suite].items():
        rows = r["tables"][table]
        assert rows, table
        for row in rows:
            assert "error" not in row, row
            bad = {f: row.get(f) for f in fields if not positive(row.get(f))}
            assert not bad, f"{suite}/{table}: {bad} in {row}"
        assert set(systems) <= {row.get("system") for row in rows}, table
    assert len(r["summary"]) >= SUMMARY.get(suite, 0)
    assert all(positive(v) for v in r["summary"].values()), r["summary"]


def test_ceiling_suite(ceiling):
    """The ceiling was measured for all three libraries, and its JSON holds every field."""
    _, r, _ = ceiling
    check_suite_json(r, "ceiling", r["ceiling"])
    libs = {row["library"] for row in r["tables"]["matmul ceiling"]}
    assert libs == {"jax", "numpy", "torch"}


def _train(r):
    # Shares are of the ceiling GEMM timed in the same rounds as the systems, which each row reports.
    for row in r["tables"]["pretraining step"]:
        assert math.isclose(row["share_of_ceiling"], row["tflops_per_device"] * 1e3 / row["ceiling_gflops"])


def _inference(r):
    # Bucketing really cuts the padded length.
    inf = {row["system"]: row for row in r["tables"]["rt_sentiment dev classification forward"]}
    assert inf["albert_jax padded"]["mean_padded_len"] == 128
    assert inf["albert_jax bucketed"]["mean_padded_len"] < 128
    assert inf["hf_torch dynamic padding"]["mean_padded_len"] < 128
    for row in r["tables"]["encoder forward (batch 8, seq 128)"]:
        assert math.isclose(row["share_of_ceiling"], row["tflops"] * 1e3 / row["ceiling_gflops"])


def _compile(r):
    # The compile points cover scan and unrolled at every depth.
    comp = r["tables"]["compile time and program size against depth"]
    assert {(row["layers"], row["depth"]) for row in comp} == {(m, d) for m in ("scan", "unrolled") for d in (1, 2)}
    unrolled = {row["depth"]: row["stablehlo_chars"] for row in comp if row["layers"] == "unrolled"}
    assert unrolled[2] > unrolled[1]  # an unrolled program grows with depth


def _memory(r):
    # The search found a batch.
    assert r["tables"]["largest batch under the budget"][0]["largest_batch"] >= 1


def _finetune(r):
    # Bucketing cuts the padded length of every task below the full 128.
    rows = r["tables"]["fine-tuning step (batch 32, max length 128)"]
    padded = {(row["task"], row["system"]): row["mean_padded_len"] for row in rows}
    for task in {row["task"] for row in rows}:
        assert padded[task, "albert_jax full-length"] == 128
        assert padded[task, "albert_jax bucketed"] < 128


# What each suite must show beyond its fields: that it measures what it says.
MEASURES = {"train": _train, "inference": _inference, "finetune": _finetune, "compile": _compile,
            "memory": _memory}


@pytest.mark.parametrize("suite", SUITES[1:])
def test_suite_runs_and_measures_what_it_says(ceiling, suite):
    out, ceil, compiled = ceiling
    r = compiled if suite == "compile" else run_suite(out, suite, "--ceiling", str(out / "ceiling.json"))
    check_suite_json(r, suite, ceil["ceiling"])
    MEASURES[suite](r)
