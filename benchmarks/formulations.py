"""The model's formulation against the earlier ones it replaced: the same arithmetic, written so that XLA runs
it faster. Each earlier formulation is restored for one build, in the same process, and both are timed in turns.

  python benchmarks/formulations.py [--model albert-base] [--batch 8] [--seq 128] [--reps 9]
      [--against heads_last,saved_elementwise] [--what core,forward,backward,step] [--out DIR]

- heads_last: the attention's dots on [B, L, N, D] operands (`bqnd,bknd->bnqk`), as the model wrote them
  before; now the heads move ahead of the positions first (layers.attention_block).
- saved_elementwise: the LayerNorms and the activation differentiated through, saving their intermediates for
  the backward pass; now they keep only their inputs and recompute the rest (layers.lean_backward).

Per formulation: the attention core alone (heads_last only), the encoder forward, the encoder's forward and
backward (with the temporary memory XLA assigns it, from the compiled program) and our pretraining step
(train_throughput.ours_step: SOP, LAMB), all scanned. Each pair reports the largest difference between the
two builds' outputs (sequence output, loss), which should be 0 or rounding: the formulations differ in layout
and in what is kept for the backward, not in what is computed.
"""
from __future__ import annotations

import argparse
import contextlib
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
    """The same with the heads moved ahead of the positions: `layers.attention_core`, as the model calls it."""
    import jax.numpy as jnp
    from albert_jax.modeling import layers
    q, k, v = (jnp.swapaxes(x, 1, 2) for x in (q_BLND, k_BLND, v_BLND))
    return jnp.swapaxes(layers.attention_core(q, k, v, bias_B11L), 1, 2)


def heads_last_block(p, x_BLH, mask_bias_B11L, config, dtype, rngs=(None, None), deterministic=True):
    """`layers.attention_block` with the core on [B, L, N, D] operands."""
    from albert_jax.modeling import layers
    q, k, v = (layers.project("blh,hnd->blnd", x_BLH, p[n]["kernel"], dtype) + p[n]["bias"].astype(dtype)
               for n in ("query", "key", "value"))
    ctx = heads_last_core(q, k, v, mask_bias_B11L, lambda probs: layers.dropout(
        probs, config.attention_probs_dropout_prob, rngs[0], deterministic))
    out = layers.project("blnd,ndh->blh", ctx, p["output"]["kernel"], dtype) + p["output"]["bias"].astype(dtype)
    out = layers.dropout(out, config.hidden_dropout_prob, rngs[1], deterministic)
    return layers.post_norm(p["LayerNorm"], x_BLH.astype(dtype) + out, config)


@contextlib.contextmanager
def _swapped(name: str, value):
    from albert_jax.modeling import layers
    saved = getattr(layers, name)
    setattr(layers, name, value)  # the blocks look these up when the model is traced
    try:
        yield
    finally:
        setattr(layers, name, saved)


def heads_last():
    """Trace the model with the attention's dots on [B, L, N, D] operands."""
    return _swapped("attention_block", heads_last_block)


def saved_elementwise():
    """Trace the model with its LayerNorms and activation differentiated through (all intermediates saved)."""
    return _swapped("lean_backward", lambda fn, config: fn)


FORMULATIONS = {"heads_last": heads_last, "saved_elementwise": saved_elementwise}
WHAT = ("core", "forward", "backward", "step")  # the attention core is built against heads_last only


def pair(label: str, build, earlier, reps: int, flops: float, ceil: dict) -> list[dict]:
    """`build()` -> (run, first_output, extra fields): built as the model is and under `earlier`, run in turns."""
    import numpy as np
    now = build()
    with earlier():
        before = build()
    diff = float(np.max(np.abs(np.asarray(now[1]) - np.asarray(before[1]))))
    med = common.interleaved({"now": now[0], "before": before[0]}, reps, warmup=2)
    rows = []
    for (which, sec), extra in zip(med.items(), (now[2], before[2])):
        gflops = flops / sec / 1e9
        rows.append({"what": label, "build": which, "median_s": sec, "gflops": gflops,
                     "share_of_ceiling": common.share(gflops, ceil), **extra, "max_abs_diff": diff})
    rows[0]["now_over_before"] = med["now"] / med["before"]
    return rows


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="albert-base", help="a preset, smoke4 or tiny (benchmarks/models.py)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--reps", type=int, default=9, help="timed calls of each build (the attention core: 5x)")
    p.add_argument("--against", default=",".join(FORMULATIONS), help="comma list of " + ", ".join(FORMULATIONS))
    p.add_argument("--what", default=",".join(WHAT), help="which pairs to build, a comma list of " + ", ".join(WHAT))
    p.add_argument("--out", default="", help="write DIR/formulations.json and .md")
    a = p.parse_args(argv)
    against = [f.strip() for f in a.against.split(",") if f.strip()]
    if not against or any(f not in FORMULATIONS for f in against):
        p.error(f"--against {a.against!r}: choose from {', '.join(FORMULATIONS)}")
    what = {w.strip() for w in a.what.split(",") if w.strip()}
    if not what or what - set(WHAT):
        p.error(f"--what {a.what!r}: choose from {', '.join(WHAT)}")
    import jax
    import jax.numpy as jnp
    import numpy as np
    from flax import linen as nn

    import models
    import train_throughput as tt
    from albert_jax.modeling import layers
    from albert_jax.modeling.model import AlbertModel

    cfg = models.model_config(a.model, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                              max_position_embeddings=max(512, a.seq))
    b, s, n = a.batch, a.seq, cfg.num_attention_heads
    d = cfg.hidden_size // n
    ceil = common.ceiling(quick=a.reps < 3)
    rng = np.random.default_rng(0)
    qkv = [jnp.asarray(rng.standard_normal((b, s, n, d)), jnp.float32) for _ in range(3)]
    bias = jnp.zeros((b, 1, 1, s), jnp.float32)
    model = AlbertModel(cfg)
    ids = rng.integers(5, cfg.vocab_size, (b, s)).astype(np.int32)
    feed = [jnp.asarray(x) for x in (ids, np.ones_like(ids), np.zeros_like(ids))]
    params = nn.unbox(jax.jit(lambda r: model.init(r, feed[0])["params"])(jax.random.PRNGKey(0)))

    def core_build():
        f = jax.jit(heads_last_core if layers.attention_block is heads_last_block else heads_first_core)
        return (lambda: jax.block_until_ready(f(*qkv, bias))), jax.device_get(f(*qkv, bias)), {}

    def compiled(fn):  # traced now, under the formulation in force
        c = jax.jit(fn).lower(params, *feed).compile()
        mem = c.memory_analysis()
        temp = getattr(mem, "temp_size_in_bytes", None) if mem is not None else None
        return c, ({"temp_mib": temp / 2 ** 20} if temp is not None else {})

    def forward_build():
        c, mem = compiled(lambda p_, *x: model.apply({"params": p_}, *x)["sequence_output"])
        return (lambda: jax.block_until_ready(c(params, *feed))), jax.device_get(c(params, *feed)), mem

    def backward_build():
        c, mem = compiled(jax.value_and_grad(
            lambda p_, *x: jnp.sum(model.apply({"params": p_}, *x)["sequence_output"] ** 2)))
        return (lambda: jax.block_until_ready(c(params, *feed))), jax.device_get(c(params, *feed)[0]), mem

    def step_build():
        train, state, batch, key = tt.ours_step(cfg, b, s, max(1, round(0.15 * s)))
        held = {"state": state}

        def run():  # the state is donated: each step feeds the next, as in training
            held["state"], m = train(held["state"], batch, key)
            return jax.block_until_ready(m)

        return run, jax.device_get(run()["loss"]), {}  # traced by this first call; the same initial state

    fwd = b * s * cfg.flops_per_token(s, masked_fraction=0.0) / 3
    tables, summary = {}, {}
    for name in against:
        earlier = FORMULATIONS[name]
        pairs = [("core", "attention core", core_build, a.reps * 5, 4 * b * n * s * s * d),
                 ("forward", "encoder forward", forward_build, a.reps, fwd),
                 ("backward", "encoder forward+backward", backward_build, a.reps, 3 * fwd),
                 ("step", "pretraining step (SOP, LAMB)", step_build, a.reps, b * s * cfg.flops_per_token(s))]
        rows = [r for key, label, build, reps, flops in pairs
                if key in what and (key != "core" or name == "heads_last")
                for r in pair(label, build, earlier, reps, flops, ceil)]
        tables[f"now against {name}: {a.model}, batch {b}, seq {s}, scanned"] = rows
        summary.update({f"{name}: {r['what']}": r["now_over_before"] for r in rows if "now_over_before" in r})
    result = {"header": common.header(argv), "ceiling": ceil, "tables": tables, "summary": summary}
    print(common.markdown("formulations", result))
    if a.out:
        common.write(a.out, "formulations", result)
    return result


if __name__ == "__main__":
    main()
