"""Train-step throughput, TFLOP/s, MFU, compile time and memory of our step, with HF PyTorch as the peer.

  python benchmarks/train_throughput.py --preset albert-base --seq 128 --batch 8 --steps 5
  python benchmarks/train_throughput.py --preset albert-large --seq 512 --batch 32 --dtype bfloat16 --remat dots

Prints one markdown row per measured system (ours; HF transformers AlbertForPreTraining + AdamW when torch is
installed and --peer is given) and the ratio ours/peer from the same run. FLOPs are counted from the config,
every applied layer included (reference: docs/benchmarks.md).
"""
from __future__ import annotations

import argparse
import functools
import json
import platform
import resource
import time

import jax
import numpy as np

from albert_jax.training import metrics as mx
from albert_jax.training import optim
from albert_jax import sharding as shd
from albert_jax.training import state as st
from albert_jax.training import step as ts
from albert_jax.tasks.pretraining.task import PretrainingTask
from albert_jax.config import parse_overrides, preset


def batch_for(cfg, batch, seq, preds, seed=0):
    rng = np.random.default_rng(seed)
    return {"input_ids": rng.integers(5, cfg.vocab_size, (batch, seq)).astype(np.int32),
            "input_mask": np.ones((batch, seq), np.int32), "segment_ids": np.zeros((batch, seq), np.int32),
            "masked_lm_positions": np.sort(rng.integers(1, seq, (batch, preds))).astype(np.int32),
            "masked_lm_ids": rng.integers(5, cfg.vocab_size, (batch, preds)).astype(np.int32),
            "masked_lm_weights": np.ones((batch, preds), np.float32),
            "next_sentence_labels": rng.integers(0, 2, (batch,)).astype(np.int32)}


def hf_config(cfg):
    """Our config as transformers' AlbertConfig (the peers build their models from it)."""
    import transformers
    return transformers.AlbertConfig(**{k: v for k, v in cfg.to_hf_json().items() if k not in ("architectures",)})


def mlm_labels(b: dict, ignore: int) -> np.ndarray:
    """HF's per-position MLM labels for a batch of ours: the masked ids at their positions, `ignore` elsewhere."""
    labels = np.full(b["input_ids"].shape, ignore, np.int64)
    np.put_along_axis(labels, b["masked_lm_positions"], b["masked_lm_ids"], 1)
    return labels


def peak_memory_mb() -> float:
    stats = getattr(jax.devices()[0], "memory_stats", lambda: None)()
    if stats and "peak_bytes_in_use" in stats:
        return stats["peak_bytes_in_use"] / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # CPU: process peak RSS


def ours_step(cfg, batch: int, seq: int, preds: int):
    """Our jitted pretraining step (SOP, LAMB) with its initial state, one batch and an rng: (train, state, b, rng)."""
    mesh = shd.make_mesh()
    boxed = st.abstract_params(PretrainingTask(), cfg)
    tx = optim.make_optimizer("lamb", 1e-4, 1000, 10, stacked_axes_fn=optim.stacked_axes_from_boxed(boxed))
    _, shardings = st.state_shardings(tx, mesh, boxed)
    state = st.init_state(PretrainingTask(), cfg, tx, mesh, jax.random.PRNGKey(0), shardings)
    train, _ = ts.jit_steps(PretrainingTask("sop"), cfg, tx, mesh, shardings)
    b = shd.shard_batch(batch_for(cfg, batch, seq, preds), mesh)
    return train, state, b, jax.random.PRNGKey(1)


def ours_runner(cfg, args):
    """Our step, compiled and run once: (a function running one more step, blocking; its facts). The peak
    memory is read here, before any peer is built in this process."""
    train, state, b, rng = ours_step(cfg, args.batch, args.seq, args.preds)
    t0 = time.perf_counter()
    state, m = train(state, b, rng)
    jax.block_until_ready(m)
    compile_s = time.perf_counter() - t0
    box = [state]

    def step():
        box[0], m = train(box[0], b, rng)
        jax.block_until_ready(m)

    step()
    return step, {"system": f"albert_jax ({'scan' if cfg.scan_layers else 'unrolled'}, remat={cfg.remat_policy}, "
                            f"{cfg.dtype})", "compile_s": compile_s, "peak_mb": peak_memory_mb()}


def torch_runner(cfg, args):
    """HF AlbertForPreTraining + torch AdamW, run once: (a function running one more step, synchronised; its
    facts, with the peak memory on a GPU)."""
    import torch
    import transformers
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = transformers.AlbertForPreTraining(hf_config(cfg)).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    b = batch_for(cfg, args.batch, args.seq, args.preds)
    labels = mlm_labels(b, -100)
    feed = {"input_ids": torch.tensor(b["input_ids"], dtype=torch.long, device=device),
            "attention_mask": torch.tensor(b["input_mask"], device=device),
            "labels": torch.tensor(labels, device=device),
            "sentence_order_label": torch.tensor(b["next_sentence_labels"], dtype=torch.long, device=device)}
    autocast = torch.autocast(device, dtype=torch.bfloat16, enabled=cfg.dtype == "bfloat16")
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def step():
        with autocast:
            loss = model(**feed).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()

    step()
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    step()
    peak = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else float("nan")
    return step, {"system": f"HF transformers {transformers.__version__} torch {torch.__version__} eager",
                  "compile_s": float("nan"), "peak_mb": peak}


def flax_runner(cfg, args):
    """HF transformers' Flax ALBERT (FlaxAlbertForPreTraining), jitted with optax AdamW at the torch peer's
    settings (clip 1.0, weight decay 0.01): our framework, HF's model code. Like HF's torch model it scores the MLM
    head at every position and takes the loss where a label is set. Run once: (one more step, blocking; facts)."""
    import jax.numpy as jnp
    import optax
    import transformers

    model = transformers.FlaxAlbertForPreTraining(hf_config(cfg), seed=0, dtype=jnp.dtype(cfg.dtype))
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-4, weight_decay=0.01))
    b = batch_for(cfg, args.batch, args.seq, args.preds)
    feed = {k: jnp.asarray(b[k]) for k in ("input_ids", "input_mask", "segment_ids", "next_sentence_labels")}
    labels = jnp.asarray(mlm_labels(b, -1), jnp.int32)

    def loss_fn(params, rng):
        out = model(feed["input_ids"], attention_mask=feed["input_mask"], token_type_ids=feed["segment_ids"],
                    params=params, dropout_rng=rng, train=True)
        known = labels >= 0
        nll = optax.softmax_cross_entropy_with_integer_labels(out.prediction_logits.astype(jnp.float32),
                                                              jnp.where(known, labels, 0))
        sop = optax.softmax_cross_entropy_with_integer_labels(out.sop_logits.astype(jnp.float32),
                                                              feed["next_sentence_labels"])
        return (nll * known).sum() / known.sum() + sop.mean()

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def train(params, opt_state, rng):
        loss, grads = jax.value_and_grad(loss_fn)(params, rng)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    box = [model.params, tx.init(model.params)]
    rng = jax.random.PRNGKey(1)

    def step():
        box[0], box[1], loss = train(box[0], box[1], rng)
        jax.block_until_ready(loss)

    t0 = time.perf_counter()
    step()
    compile_s = time.perf_counter() - t0
    step()
    return step, {"system": f"HF transformers {transformers.__version__} Flax (jit, optax AdamW)",
                  "compile_s": compile_s, "peak_mb": float("nan")}


def timed_steps(runner, steps: int) -> dict:
    """One system alone: its facts and the mean time of `steps` more steps (the train suite takes turns instead)."""
    step, facts = runner
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return {**facts, "step_s": (time.perf_counter() - t0) / steps}


def bench_ours(cfg, args):
    return timed_steps(ours_runner(cfg, args), args.steps)


def bench_torch_peer(cfg, args):
    return timed_steps(torch_runner(cfg, args), args.steps)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--preset", default="albert-base")
    p.add_argument("--set", default="", help="model overrides, e.g. num_hidden_layers=4,hidden_size=256")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--preds", type=int, default=20)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--remat", default="none")
    p.add_argument("--unrolled", action="store_true")
    p.add_argument("--peer", action="store_true", help="also time HF transformers (needs torch)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    cfg = preset(args.preset, **parse_overrides(args.set)).replace(
        dtype=args.dtype, remat_policy=args.remat, scan_layers=not args.unrolled,
        max_position_embeddings=max(512, args.seq))
    flops = cfg.flops_per_token(args.seq, masked_fraction=args.preds / args.seq)
    peak = mx.peak_flops_per_device()
    rows = [bench_ours(cfg, args)]
    if args.peer:
        rows.append(bench_torch_peer(cfg, args))
    kind = jax.devices()[0].device_kind
    print(f"\n{args.preset} {args.set} seq={args.seq} batch={args.batch} dtype={args.dtype} on "
          f"{jax.device_count()}x {kind} ({platform.machine()}, jax {jax.__version__})")
    print("| system | step (s) | seq/s | tokens/s | TFLOP/s/device | MFU | compile (s) | peak memory (MiB) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        tok_s = args.batch * args.seq / r["step_s"]
        tflops = mx.flops_per_second_per_device(flops, tok_s, jax.device_count()) / 1e12
        mfu = f"{mx.mfu(flops, tok_s, jax.device_count(), peak):.1%}" if peak else "n/a"
        r.update(tokens_per_s=tok_s, tflops_per_device=tflops)
        print(f"| {r['system']} | {r['step_s']:.4f} | {args.batch / r['step_s']:.2f} | {tok_s:,.0f} | {tflops:.3f} "
              f"| {mfu} | {r['compile_s']:.1f} | {r['peak_mb']:,.0f} |")
    if len(rows) == 2:
        print(f"\nratio ours/peer (throughput): {rows[1]['step_s'] / rows[0]['step_s']:.2f}x")
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
