"""Where the backward pass's time goes: forward vs forward+backward of the encoder, and the three GEMMs of a dense
layer (forward X·W, input gradient G·Wᵀ, weight gradient Xᵀ·G) timed alone.

  python benchmarks/backward_profile.py --preset albert-base --batch 8 --seq 128 [--dump DIR]

Prints, for scan and unrolled, all-shared and not-shared: the forward time, the forward+backward time and their
ratio (3.0 is the FLOP-model ideal: the backward costs twice the forward; the two programs are timed in turns,
so a change of this VM's load hits both alike), XLA's own FLOP count of each program
(cost_analysis) so a ratio above 3 can be told apart from extra work, and the GEMM rates against the machine's
f32 matmul ceiling measured in the same run. --dump writes the optimized HLO of every program for reading.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import common  # benchmarks/: turns the compilation cache off before jax is imported; times in turns
import jax
import jax.numpy as jnp
import numpy as np

from albert_jax.config import parse_overrides, preset
from albert_jax.modeling.model import AlbertModel


def timed(fn, *args, repeats: int = 5) -> float:
    jax.block_until_ready(fn(*args))  # compiles a jitted fn; warms a compiled one
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def flops_of(compiled) -> float:
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    return float(cost.get("flops", float("nan"))) if cost else float("nan")


def gemm_rates(m: int, k: int, n: int) -> dict[str, float]:
    """GFLOP/s of X[m,k]·W[k,n], G[m,n]·Wᵀ and Xᵀ·G under jit (the three products of a dense layer)."""
    rng = np.random.default_rng(0)
    x, w, g = (jnp.asarray(rng.standard_normal(s), jnp.float32) for s in ((m, k), (k, n), (m, n)))
    flops = 2.0 * m * k * n
    fns = {"forward X.W": (jax.jit(lambda a, b: a @ b), x, w),
           "input grad G.W^T": (jax.jit(lambda a, b: a @ b.T), g, w),
           "weight grad X^T.G": (jax.jit(lambda a, b: a.T @ b), x, g)}
    return {name: flops / timed(f, a, b) / 1e9 for name, (f, a, b) in fns.items()}


def encoder_programs(cfg, batch: int, seq: int):
    model = AlbertModel(cfg)
    rng = np.random.default_rng(0)
    ids = jnp.asarray(rng.integers(5, cfg.vocab_size, (batch, seq)), jnp.int32)
    mask = jnp.ones((batch, seq), jnp.int32)
    params = jax.jit(lambda r: model.init(r, ids, mask, deterministic=True))(jax.random.PRNGKey(0))["params"]

    def loss(p):
        seq_out = model.apply({"params": p}, ids, mask, deterministic=True)["sequence_output"]
        return jnp.mean(jnp.square(seq_out.astype(jnp.float32)))

    fwd = jax.jit(loss)
    both = jax.jit(jax.value_and_grad(loss))
    return params, fwd, both


def model_args(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The model and shape arguments this script and xla_cpu_flags.py share."""
    p.add_argument("--preset", default="albert-base")
    p.add_argument("--set", default="", help="model overrides, e.g. num_hidden_layers=4,hidden_size=256")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    return p


def model_config(preset_name: str, overrides: str):
    """The encoder under test, without dropout (the programs are deterministic)."""
    return preset(preset_name, **parse_overrides(overrides)).replace(hidden_dropout_prob=0.0,
                                                                     attention_probs_dropout_prob=0.0)


def main():
    p = model_args(argparse.ArgumentParser())
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--dump", default="")
    a = p.parse_args()
    base = model_config(a.preset, a.set)
    ceiling = gemm_rates(2048, 2048, 2048)["forward X.W"]
    print(f"jax f32 GEMM ceiling (2048^3): {ceiling:.1f} GFLOP/s on {jax.device_count()}x "
          f"{jax.devices()[0].device_kind}, jax {jax.__version__}")
    m, h, i = a.batch * a.seq, base.hidden_size, base.intermediate_size
    print("\nthe dense layers' GEMMs at this batch (GFLOP/s; share of the ceiling)")
    for shape in ((m, h, h), (m, h, i), (m, i, h)):
        rates = gemm_rates(*shape)
        print(f"  [{shape[0]}x{shape[1]}]·[{shape[1]}x{shape[2]}]: " + ", ".join(
            f"{k} {v:.0f} ({v / ceiling:.0%})" for k, v in rates.items()))
    print("\n| variant | forward s | fwd+bwd s | ratio | XLA GFLOP fwd | XLA GFLOP fwd+bwd | FLOP ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for sharing in ("all", "none"):
        for scan in (True, False):
            cfg = base.replace(sharing=sharing, scan_layers=scan)
            params, fwd, both = encoder_programs(cfg, a.batch, a.seq)
            c_f, c_b = fwd.lower(params).compile(), both.lower(params).compile()  # once: timed and counted
            med = common.interleaved({"fwd": lambda: jax.block_until_ready(c_f(params)),
                                      "both": lambda: jax.block_until_ready(c_b(params))}, a.repeats)
            t_f, t_b = med["fwd"], med["both"]
            f_f, f_b = flops_of(c_f) / 1e9, flops_of(c_b) / 1e9
            name = f"{sharing}-shared, {'scan' if scan else 'unrolled'}"
            print(f"| {name} | {t_f:.3f} | {t_b:.3f} | {t_b / t_f:.2f} | {f_f:.2f} | {f_b:.2f} | {f_b / f_f:.2f} |")
            if a.dump:
                os.makedirs(a.dump, exist_ok=True)
                for tag, c in (("fwd", c_f), ("fwd_bwd", c_b)):
                    with open(os.path.join(a.dump, f"{sharing}-{'scan' if scan else 'unrolled'}-{tag}.hlo"),
                              "w") as f:
                        f.write(c.as_text())


if __name__ == "__main__":
    main()
