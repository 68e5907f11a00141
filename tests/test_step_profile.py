"""benchmarks/step_profile.py traces real train steps with jax's profiler and sorts every XLA op of the trace
into a kind. It checks that the profile reads the trace (ops counted, time accounted, the scan's stacking found
where there is a scan and absent where there is none), not how fast anything is."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "benchmarks")]

import step_profile  # noqa: E402
from procs import user_env

MATMUL = "matmuls and what is fused into them"


@pytest.mark.parametrize("name, kind", [("ynn_fusion.7", MATMUL), ("dot.112", MATMUL),
                                        ("bitcast_dynamic-update-slice_fusion.20", "scan stacking"),
                                        ("transpose_copy_fusion", "copies and transposes"),
                                        ("wrapped_broadcast.9", "buffer initialisation"),
                                        ("multiply_add_fusion", "elementwise and reductions"),
                                        ("while.3", "loops and control"), ("mystery_op", "other"),
                                        # unfused, under the suite's XLA flags (tests/procs.py)
                                        ("broadcast_in_dim.53", "buffer initialisation"),
                                        ("convert.2246", "elementwise and reductions"),
                                        ("square.254", "elementwise and reductions")])
def test_ops_are_sorted_by_kind(name, kind):
    assert step_profile.kind_of(name) == kind


def test_profile_of_a_tiny_model_accounts_for_its_steps(tmp_path):
    env = user_env()  # a user's one-device process
    p = subprocess.run([sys.executable, "benchmarks/step_profile.py", "--model", "tiny", "--batch", "2", "--seq",
                        "32", "--steps", "2", "--variants", "scan,unrolled,unrolled:dots@bfloat16",
                        "--keep", str(tmp_path), "--json", str(tmp_path / "rows.json")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    rows = json.loads((tmp_path / "rows.json").read_text())
    for name, r in rows.items():
        assert r["step_s"] > 0 and r["ops_per_step"] > 10, (name, r)
        assert r["op_s"] == pytest.approx(sum(r["kinds"].values()))
        assert r["kinds"].get(MATMUL, 0) > 0, r["kinds"]
        assert r["kinds"].get("other", 0) < 0.2 * r["op_s"], r["kinds"]  # the rules still know XLA's names
        assert os.listdir(tmp_path / name.replace(":", "-"))  # --keep left the trace
    # The scanned encoder writes each layer's saved values into stacked buffers; the unrolled one has none.
    assert rows["scan"]["kinds"].get("scan stacking", 0) > 0
    assert rows["unrolled"]["kinds"].get("scan stacking", 0) == 0
    assert rows["scan"]["step_over_scan"] == 1 and rows["unrolled"]["step_over_scan"] > 0
    # A variant names its remat policy and compute dtype: the bf16 step casts where the f32 one has nothing to cast.
    assert rows["unrolled:dots@bfloat16"]["step_over_scan"] > 0
    assert rows["unrolled:dots@bfloat16"]["ops_per_step"] != rows["unrolled"]["ops_per_step"]
    assert "| scan stacking (ms, share) |" in p.stdout and "| cores busy (process CPU time / wall) |" in p.stdout
