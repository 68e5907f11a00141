"""run.py train: the pretraining step (ours, LAMB) against HF AlbertForPreTraining + torch AdamW and HF's Flax
ALBERT (FlaxAlbertForPreTraining, jitted, optax AdamW), per model and length.

The steps are train_throughput.py's (ours_runner, torch_runner, flax_runner); this suite loops them over models
and lengths, times ours, the peers and the ceiling's GEMM in turns, step by step (medians;
common.interleaved_with_ceiling), and adds TFLOP/s, MFU (against the device's table peak, none on CPU) and the
share of the ceiling of those same rounds. FLOPs per token count every applied layer
(AlbertConfig.flops_per_token), for every system; HF's models score the MLM head on every position, ours on the
masked ones only, so HF does slightly more work than it is credited for.
"""
from __future__ import annotations

import argparse

import common
import models
import train_throughput as tt


def run(args, ceil: dict) -> dict:
    import jax

    from albert_jax.training import metrics as mx

    quick = args.quick
    names = models.names(args.models, "tiny" if quick else "albert-base,smoke4")
    seqs = [int(s) for s in (args.seqs or ("32" if quick else "128")).split(",")]
    tokens = args.tokens or (128 if quick else 1024)
    steps = args.steps or (2 if quick else 5)
    on_cpu = jax.default_backend() == "cpu"
    peak = mx.peak_flops_per_device()
    rows = []
    for name in names:
        for seq in seqs:
            batch = max(1, tokens // seq)
            cfg = models.model_config(name, dtype=args.dtype, remat_policy=args.remat or "none",
                                      max_position_embeddings=max(512, seq))
            # the attention the trainer would take here: cuDNN's fused kernel on a GPU for a bf16 model
            cfg = cfg.for_platform(jax.default_backend())
            ns = argparse.Namespace(batch=batch, seq=seq, preds=max(1, round(0.15 * seq)), steps=steps)
            flops = cfg.flops_per_token(seq, masked_fraction=ns.preds / seq)
            peer = args.peer == "on" or (args.peer == "auto" and (on_cpu or name == "albert-base"))
            runners = {"albert_jax": tt.ours_runner(cfg, ns)}
            if peer:
                runners["hf_torch"] = tt.torch_runner(cfg, ns)
            if args.peer == "on" or (args.peer == "auto" and on_cpu):  # one more compile: left off the GPU script
                runners["hf_flax"] = tt.flax_runner(cfg, ns)
            med, ceil_now = common.interleaved_with_ceiling({k: fn for k, (fn, _) in runners.items()}, steps,
                                                            warmup=0, quick=quick, dtype=args.dtype)
            for system, (_, facts) in runners.items():
                r = {**facts, "step_s": med[system]}
                tok_s = batch * seq / r["step_s"]
                gflops = mx.flops_per_second_per_device(flops, tok_s, jax.device_count()) / 1e9
                rows.append({"model": name, "layers": cfg.num_hidden_layers, "hidden": cfg.hidden_size,
                             "seq": seq, "batch": batch, "dtype": args.dtype, "system": system,
                             "step_s": r["step_s"], "seq_per_s": batch / r["step_s"], "tokens_per_s": tok_s,
                             "tflops_per_device": gflops / 1e3,
                             "mfu": mx.mfu(flops, tok_s, jax.device_count(), peak) if peak else float("nan"),
                             "share_of_ceiling": common.share(gflops, ceil_now, args.dtype),
                             "ceiling_gflops": ceil_now[f"jax_{args.dtype}_gflops"],
                             "compile_s": r["compile_s"], "peak_mib": r["peak_mb"]})
    summary = {}
    for name in names:
        for seq in seqs:
            pair = {r["system"]: r for r in rows if r["model"] == name and r["seq"] == seq}
            if "hf_torch" in pair:
                summary[f"ours_over_hf_{name}_s{seq}"] = pair["hf_torch"]["step_s"] / pair["albert_jax"]["step_s"]
            if "hf_flax" in pair:
                summary[f"ours_over_hf_flax_{name}_s{seq}"] = (pair["hf_flax"]["step_s"]
                                                               / pair["albert_jax"]["step_s"])
    return {"tables": {"pretraining step": rows}, "summary": summary,
            "notes": "throughput ratio ours/HF = HF step time / ours; FLOPs per applied layer"}
