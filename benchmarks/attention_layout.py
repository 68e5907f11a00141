"""Does the attention's layout matter? The model's attention (heads first, [B, N, L, D]) against the same
arithmetic written on [B, L, N, D] operands (the layout the model used before), in one process, interleaved.

  python benchmarks/attention_layout.py [--model albert-base] [--batch 8] [--seq 128] [--reps 9] [--json F]

Three pairs, each jitted twice, once per layout, and timed taking turns (medians): the attention core alone
(scores, softmax, context) at the model's head shape, the encoder forward and our pretraining step
(train_throughput.ours_step: SOP, LAMB), both scanned. Each pair also reports the largest difference between the
two layouts' outputs (the encoder's sequence output, the step's loss), which should be 0: the layouts differ
in where XLA puts transposes and how it fuses, not in what it adds up.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys

sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(os.path.abspath(__file__))]
import common  # noqa: E402  (turns the compilation cache off before jax is imported)


def heads_last_core(q_BLND, k_BLND, v_BLND, bias_B11L, drop=lambda probs: probs):
    """The attention core on [B, L, N, D] operands, as the model wrote it before."""
    import jax
    import jax.numpy as jnp
    scores = jnp.einsum("bqnd,bknd->bnqk", q_BLND, k_BLND) / math.sqrt(q_BLND.shape[-1])
    probs = drop(jax.nn.softmax(scores.astype(jnp.float32) + bias_B11L, axis=-1))
    return jnp.einsum("bnqk,bknd->bqnd", probs.astype(q_BLND.dtype), v_BLND)


def heads_first_core(q_BLND, k_BLND, v_BLND, bias_B11L):
    """The same with the heads moved ahead of the positions, as `layers.attention_block` does."""
    import jax
    import jax.numpy as jnp
    q, k, v = (jnp.swapaxes(x, 1, 2) for x in (q_BLND, k_BLND, v_BLND))
    scores = jnp.einsum("bnqd,bnkd->bnqk", q, k) / math.sqrt(q.shape[-1])
    probs = jax.nn.softmax(scores.astype(jnp.float32) + bias_B11L, axis=-1)
    return jnp.swapaxes(jnp.einsum("bnqk,bnkd->bnqd", probs.astype(q.dtype), v), 1, 2)


def heads_last_block(p, x_BLH, mask_bias_B11L, config, dtype, rngs=(None, None), deterministic=True):
    """`layers.attention_block` with the core on [B, L, N, D] operands (the reference of this benchmark)."""
    from flax import linen as nn
    from albert_jax.modeling import layers as L
    q, k, v = (L.project("blh,hnd->blnd", x_BLH, p[n]["kernel"], dtype) + p[n]["bias"].astype(dtype)
               for n in ("query", "key", "value"))
    ctx = heads_last_core(q, k, v, mask_bias_B11L, lambda probs: L.dropout(
        probs, config.attention_probs_dropout_prob, rngs[0], deterministic))
    out = L.project("blnd,ndh->blh", ctx, p["output"]["kernel"], dtype) + p["output"]["bias"].astype(dtype)
    out = L.dropout(out, config.hidden_dropout_prob, rngs[1], deterministic)
    y = L.layer_norm(p["LayerNorm"], x_BLH.astype(dtype) + out, config.layer_norm_eps)
    return nn.with_logical_constraint(y, L.ACT_BLH)


@contextlib.contextmanager
def heads_last():
    """Trace the model with the reference attention (the encoder looks the block up at trace time)."""
    from albert_jax.modeling import layers as L
    saved, L.attention_block = L.attention_block, heads_last_block
    try:
        yield
    finally:
        L.attention_block = saved


def pair(label: str, build, reps: int, flops: float, ceil: dict) -> list[dict]:
    """`build()` -> (run, first_output): built as the model is and under `heads_last`, then run in turns."""
    import numpy as np
    first = build()
    with heads_last():
        last = build()
    diff = float(np.max(np.abs(np.asarray(first[1]) - np.asarray(last[1]))))
    med = common.interleaved({"heads first (the model)": first[0], "heads last (before)": last[0]}, reps, warmup=2)
    rows = []
    for layout, sec in med.items():
        gflops = flops / sec / 1e9
        rows.append({"what": label, "layout": layout, "median_s": sec, "gflops": gflops,
                     "share_of_ceiling": common.share(gflops, ceil), "max_abs_diff": diff})
    rows[0]["first_over_last"] = med["heads first (the model)"] / med["heads last (before)"]
    return rows


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="albert-base", help="a preset, smoke4 or tiny (benchmarks/models.py)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--reps", type=int, default=9, help="timed calls of each layout (the core: 5x as many)")
    p.add_argument("--out", default="", help="write DIR/attention_layout.json and .md")
    a = p.parse_args(argv)
    import jax
    import jax.numpy as jnp
    import numpy as np
    from flax import linen as nn

    import models
    import train_throughput as tt
    from albert_jax.modeling import layers as L
    from albert_jax.modeling.model import AlbertModel

    cfg = models.model_config(a.model, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                              max_position_embeddings=max(512, a.seq))
    b, s, n = a.batch, a.seq, cfg.num_attention_heads
    d = cfg.hidden_size // n
    ceil = common.ceiling(quick=a.reps < 3)
    rng = np.random.default_rng(0)
    qkv = [jnp.asarray(rng.standard_normal((b, s, n, d)), jnp.float32) for _ in range(3)]
    bias = jnp.zeros((b, 1, 1, s), jnp.float32)

    def core_build():
        # heads_last() swaps the model's block: the core follows it.
        f = jax.jit(heads_last_core if L.attention_block is heads_last_block else heads_first_core)
        return (lambda: jax.block_until_ready(f(*qkv, bias))), jax.device_get(f(*qkv, bias))

    model = AlbertModel(cfg)
    ids = rng.integers(5, cfg.vocab_size, (b, s)).astype(np.int32)
    feed = [jnp.asarray(x) for x in (ids, np.ones_like(ids), np.zeros_like(ids))]
    params = nn.unbox(jax.jit(lambda r: model.init(r, feed[0])["params"])(jax.random.PRNGKey(0)))

    def forward_build():
        f = jax.jit(lambda p_, *x: model.apply({"params": p_}, *x)["sequence_output"])
        f = f.lower(params, *feed).compile()  # traced now, under the layout in force
        return (lambda: jax.block_until_ready(f(params, *feed))), jax.device_get(f(params, *feed))

    def step_build():
        train, state, batch, key = tt.ours_step(cfg, b, s, max(1, round(0.15 * s)))
        held = {"state": state}

        def run():  # the state is donated: each step feeds the next, as in training
            held["state"], m = train(held["state"], batch, key)
            return jax.block_until_ready(m)

        return run, jax.device_get(run()["loss"])  # traced here, under the layout in force; same initial state

    rows = (pair("attention core", core_build, a.reps * 5, 4 * b * n * s * s * d, ceil)
            + pair("encoder forward (scan)", forward_build, a.reps,
                   b * s * cfg.flops_per_token(s, masked_fraction=0.0) / 3, ceil)
            + pair("pretraining step (scan, SOP, LAMB)", step_build, a.reps, b * s * cfg.flops_per_token(s), ceil))
    result = {"header": common.header(argv), "ceiling": ceil, "tables": {
        f"{a.model}, batch {b}, seq {s}, {n} heads of {d}": rows},
        "summary": {r["what"]: r["first_over_last"] for r in rows if "first_over_last" in r}}
    print(common.markdown("attention_layout", result))
    if a.out:
        common.write(a.out, "attention_layout", result)
    return result


if __name__ == "__main__":
    main()
