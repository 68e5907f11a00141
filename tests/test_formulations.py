"""The model is written the way XLA runs it fastest (benchmarks/formulations.py): the attention with the heads
ahead of the positions, the LayerNorms and the activation keeping only their inputs for the backward pass. Neither
may change what the model computes: outputs and gradients equal those of the earlier formulation (kept in the
benchmark, which restores it for a build), with padding, packing's block-diagonal mask and dropout, scanned or
not, in several sharing modes."""
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "benchmarks")]

import formulations  # noqa: E402
from albert_jax.config import preset  # noqa: E402
from albert_jax.modeling.model import AlbertModel  # noqa: E402
from procs import user_env


def _loss_and_grads(cfg, ids, mask, pack_ids, positions):
    model = AlbertModel(cfg)
    params = nn.unbox(model.init(jax.random.PRNGKey(0), ids)["params"])

    def loss(p):
        out = model.apply({"params": p}, ids, mask, position_ids=positions, pack_ids=pack_ids,
                          deterministic=False, rngs={"dropout": jax.random.PRNGKey(7)})
        return jnp.sum(out["sequence_output"] ** 2) + jnp.sum(out["pooled_output"]), out["sequence_output"]

    (value, seq), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params)
    return value, seq, grads


@pytest.mark.parametrize("earlier", sorted(formulations.FORMULATIONS))
@pytest.mark.parametrize("sharing, scan, packed", [("all", True, False), ("none", False, False),
                                                   ("attention", True, True)])
def test_the_model_computes_what_its_earlier_formulation_did(earlier, sharing, scan, packed):
    cfg = preset("tiny", embedding_size=16, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                 intermediate_size=64, sharing=sharing, scan_layers=scan, hidden_dropout_prob=0.1,
                 attention_probs_dropout_prob=0.1)
    rng = np.random.default_rng(0)
    ids = jnp.asarray(rng.integers(5, cfg.vocab_size, (2, 24)), jnp.int32)
    mask = jnp.asarray(np.arange(24)[None] < np.array([[24], [15]]), jnp.int32)  # the second row is padded
    pack_ids = positions = None
    if packed:  # two examples in row 0 (12 + 9 tokens, 3 padding), one in row 1
        pack_ids = jnp.asarray([[1] * 12 + [2] * 9 + [0] * 3, [1] * 20 + [0] * 4], jnp.int32)
        positions = jnp.asarray([list(range(12)) + list(range(12)), list(range(24))], jnp.int32)
    ours = _loss_and_grads(cfg, ids, mask, pack_ids, positions)
    with formulations.FORMULATIONS[earlier]():
        before = _loss_and_grads(cfg, ids, mask, pack_ids, positions)
    np.testing.assert_allclose(ours[0], before[0], rtol=1e-6)
    np.testing.assert_allclose(ours[1], before[1], rtol=1e-5, atol=1e-6)
    flat_ours, flat_before = jax.tree.leaves_with_path(ours[2]), jax.tree.leaves(before[2])
    assert len(flat_ours) == len(flat_before)
    # Float rounding only: the two programs sum in different orders. Measured against the whole gradient's
    # scale, since some entries are zero but for rounding (the key bias: softmax ignores a shift of all scores).
    scale = max(float(np.abs(h).max()) for h in flat_before)
    for (path, g), h in zip(flat_ours, flat_before):
        np.testing.assert_allclose(g, h, rtol=1e-4, atol=1e-6 * scale, err_msg=jax.tree_util.keystr(path))
    # The earlier formulation is really another program (the backward's, where only what is saved differs).
    model = AlbertModel(cfg)
    params = nn.unbox(model.init(jax.random.PRNGKey(0), ids)["params"])
    # A new function each time: jax reuses a trace for the same function object.
    hlo = lambda: jax.jit(jax.grad(lambda p: jnp.sum(model.apply({"params": p}, ids, mask)["sequence_output"]))
                          ).lower(params).as_text()
    text_ours = hlo()
    with formulations.FORMULATIONS[earlier]():
        assert hlo() != text_ours


def test_the_benchmark_times_both_builds_and_finds_them_equal(tmp_path):
    env = user_env()  # a user's one-device process
    p = subprocess.run([sys.executable, "benchmarks/formulations.py", "--model", "tiny", "--batch", "2",
                        "--seq", "32", "--reps", "2", "--what", "core,forward,backward", "--out", str(tmp_path)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    result = json.loads((tmp_path / "formulations.json").read_text())
    heads, saved = result["tables"].values()
    # The step pair is left out (--what): its build is train_throughput.ours_step, which test_step_profile runs.
    common = ["encoder forward", "encoder forward+backward"]
    assert [r["what"] for r in heads[::2]] == ["attention core"] + common
    assert [r["what"] for r in saved[::2]] == common
    for r in heads + saved:
        assert r["median_s"] > 0 and r["gflops"] > 0 and r["share_of_ceiling"] > 0, r
        assert r["max_abs_diff"] < 1e-4, r  # the same arithmetic in both builds
    # Keeping only the inputs of the elementwise work is what shrinks the backward's buffers.
    now, before = (r["temp_mib"] for r in saved if r["what"] == "encoder forward+backward")
    assert now < before
    assert len(result["summary"]) == len(heads + saved) // 2 and all(v > 0 for v in result["summary"].values())
    assert (tmp_path / "formulations.md").read_text().startswith("# benchmarks: formulations")
