"""Do XLA:CPU's other dot paths (XNNPACK, oneDNN) or runtimes speed up our step? Each setting runs in a fresh
process (XLA reads its flags once), all in the same run, against the same baseline.

  python benchmarks/xla_cpu_flags.py [--preset albert-base] [--batch 8] [--seq 128] [--quick]

Per setting: the [M×768]·[768×768] projection GEMM and its weight gradient (the slowest products of the backward,
docs/benchmarks.md), and jit(value_and_grad) of the encoder: median seconds, and the ratio to the baseline.
A setting whose flags this jaxlib refuses is reported as such.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

# Compile times are not what is compared, but a cached program would skip the flags' own compilation: off, before
# jax is imported (backward_profile, beside this file, imports it).
os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"
from backward_profile import encoder_programs, model_args, model_config, timed  # noqa: E402

SETTINGS = {
    "baseline": "",
    "xnnpack": "--xla_cpu_use_xnnpack=true",
    "xnn greedy fusion": "--xla_cpu_use_xnnpack=true --xla_cpu_experimental_xnn_graph_fusion_mode="
                         "XNN_GRAPH_FUSION_MODE_GREEDY",
    "onednn": "--xla_cpu_use_onednn=true",
    "legacy runtime": "--xla_cpu_use_thunk_runtime=false",
}


def child(spec: dict) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    cfg = model_config(spec["preset"], spec["set"])
    m, h = spec["batch"] * spec["seq"], cfg.hidden_size
    rng = np.random.default_rng(0)
    x, w, g = (jnp.asarray(rng.standard_normal(s), jnp.float32) for s in ((m, h), (h, h), (m, h)))
    params, _, both = encoder_programs(cfg, spec["batch"], spec["seq"])
    reps = spec["reps"]
    return {"gemm_s": timed(jax.jit(lambda a, b: a @ b), x, w, repeats=reps),
            "weight_grad_s": timed(jax.jit(lambda a, b: a.T @ b), x, g, repeats=reps),
            "fwd_bwd_s": timed(both, params, repeats=reps)}


def main():
    p = model_args(argparse.ArgumentParser())
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="a tiny model: checks that it runs")
    p.add_argument("--child", default="", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        print(json.dumps(child(json.loads(a.child))))
        return
    spec = {"preset": a.preset, "set": a.set, "batch": a.batch, "seq": a.seq, "reps": a.reps}
    if a.quick:
        spec.update(set="num_hidden_layers=2,hidden_size=64,intermediate_size=128,num_attention_heads=2", batch=2,
                    seq=32, reps=2)
    print(f"{a.preset} {spec['set']} batch={spec['batch']} seq={spec['seq']}, f32, one process per setting")
    print("| setting | XLA_FLAGS | GEMM [M×H]·[H×H] s | weight grad s | encoder fwd+bwd s | fwd+bwd vs baseline |")
    print("|---|---|---:|---:|---:|---:|")
    base = None
    for name, flags in SETTINGS.items():
        env = {**os.environ, "XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)], env=env,
                           capture_output=True, text=True, timeout=1800)
        try:
            out = json.loads(r.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            tail = (r.stderr.strip().splitlines() or ["no output"])[-1][:100]
            print(f"| {name} | `{flags}` | – | – | – | failed: {tail} |")
            continue
        base = base or out
        print(f"| {name} | `{flags or '(none)'}` | {out['gemm_s']:.4f} | {out['weight_grad_s']:.4f} | "
              f"{out['fwd_bwd_s']:.3f} | {base['fwd_bwd_s'] / out['fwd_bwd_s']:.2f}× |")


if __name__ == "__main__":
    main()
