"""benchmarks/run.py runs every suite end to end (`all --quick`, in a child process on one CPU device, real data,
real HF models) and writes JSON whose every measured field is a positive finite number, headed by the command,
machine and versions. It checks that the benchmarks run and report, not how fast anything is."""
import json
import math
import os
import subprocess
import sys

import pytest

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


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}  # a user's one-device process
    p = subprocess.run([sys.executable, "benchmarks/run.py", "all", "--quick", "--out", str(out)], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stderr[-3000:]
    res = {}
    for s in SUITES:
        with open(out / f"{s}.json", encoding="utf-8") as f:
            res[s] = json.load(f)
        assert (out / f"{s}.md").read_text().startswith(f"# benchmarks: {s}")
    return res


@pytest.mark.parametrize("suite", SUITES)
def test_suite_json_has_every_field(results, suite):
    r = results[suite]
    h = r["header"]
    assert f"run.py {suite}" in h["command"] and "--quick" in h["command"]
    assert h["machine"]["cpu"] and h["machine"]["cores"] >= 1
    assert isinstance(h["machine"]["avx2"], bool) and isinstance(h["machine"]["avx512"], bool)
    assert all(h["versions"][k] for k in ("python", "jax", "flax", "torch", "transformers")), h["versions"]
    assert h["date"][:2] == "20"
    # Every suite reads its rates against the one jax ceiling of the run (`all` measured it once).
    assert positive(r["ceiling"]["jax_float32_gflops"]) and positive(r["ceiling"]["torch_float32_gflops"])
    assert r["ceiling"] == results["ceiling"]["ceiling"]
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


def test_the_suites_measure_what_they_say(results):
    """Bucketing really cuts the padded length; the compile points cover scan and unrolled at every depth; the
    memory search found a batch; the ceiling was measured for all three libraries."""
    inf = {row["system"]: row for row in results["inference"]["tables"]["rt_sentiment dev classification forward"]}
    assert inf["albert_jax padded"]["mean_padded_len"] == 128
    assert inf["albert_jax bucketed"]["mean_padded_len"] < 128
    assert inf["hf_torch dynamic padding"]["mean_padded_len"] < 128
    comp = results["compile"]["tables"]["compile time and program size against depth"]
    assert {(row["layers"], row["depth"]) for row in comp} == {(m, d) for m in ("scan", "unrolled") for d in (1, 2)}
    unrolled = {row["depth"]: row["stablehlo_chars"] for row in comp if row["layers"] == "unrolled"}
    assert unrolled[2] > unrolled[1]  # an unrolled program grows with depth
    # Shares are of the ceiling GEMM timed in the same rounds as the systems, which each row reports.
    for row in results["train"]["tables"]["pretraining step"]:
        assert math.isclose(row["share_of_ceiling"], row["tflops_per_device"] * 1e3 / row["ceiling_gflops"])
    for row in results["inference"]["tables"]["encoder forward (batch 8, seq 128)"]:
        assert math.isclose(row["share_of_ceiling"], row["tflops"] * 1e3 / row["ceiling_gflops"])
    libs = {row["library"] for row in results["ceiling"]["tables"]["matmul ceiling"]}
    assert libs == {"jax", "numpy", "torch"}
