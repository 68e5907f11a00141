"""Pretraining input pipeline: examples/s per CPU core, against what the train step consumes.

  python benchmarks/pretrain_pipeline_bench.py [--batches 40] [--seqs 64,128,512] [--step-steps 10]

The trainer's own data path on the cpu-scale English records (experiments/pretrain.py:scale=cpu, the records
`make demo` builds): ArrayRecord -> grain (shuffle, [batched] read, decode, [dynamic masking], batch of 64) ->
numpy. Three read paths, in the same process: grain's defaults (16 read threads, 500 records ahead, one read a
record), no read threads with one read a record, and ours (no read threads, one batched read a batch). Rates are
CPU time of the whole process (every thread), so "per core".

Demand: the cpu-scale jitted LAMB train step (batch 64, seq 64) timed in the same process on every core
(examples/s), and albert-base on one H200 at 40% MFU (examples/s from the FLOP model) with the cores it takes.
"""
from __future__ import annotations

import argparse
import time

from albert_jax.config import preset
from albert_jax.data import input_pipeline as ip
from albert_jax.tasks.pretraining import input as pretrain_input

PATHS = {  # name -> make_batch_iterator read settings
    "grain defaults, per-record reads": dict(batched_reads=False, read_threads=16, prefetch_records=500),
    "no read threads, per-record reads": dict(batched_reads=False),
    "no read threads, batched reads (ours)": dict(),
}


def config(seq: int, masking: str):
    import experiments.pretrain as exp
    c = exp.get_config("scale=cpu")
    c.data.max_seq_length, c.data.masking = seq, masking
    return c


def rate(data, batch: int, batches: int, read: dict) -> float:
    make = ip.make_batch_iterator
    pretrain_input.input_pipeline.make_batch_iterator = lambda *a, **k: make(*a, **read, **k)
    try:
        it = data.train_iterator(batch, None, seed=0)
        for _ in range(3):  # readers opened, buffers filled
            next(it)
        t0 = time.process_time()
        for _ in range(batches):
            next(it)
        return batches * batch / (time.process_time() - t0)
    finally:
        pretrain_input.input_pipeline.make_batch_iterator = make


def step_rate(steps: int) -> float:
    """Examples/s of the cpu-scale train step (the trainer's jitted LAMB step, one device, every core)."""
    import jax

    from albert_jax import sharding as shd
    from common import pretrain_step

    c = config(64, "static")
    data = pretrain_input.prepare(c)
    train, state, mesh = pretrain_step(c, data.vocab_size)
    it = data.train_iterator(c.train.batch_size, shd.batch_sharding(mesh), seed=0)
    feed = [next(it) for _ in range(steps + 1)]
    rng = jax.random.PRNGKey(1)
    state, m = train(state, feed[0], rng)  # compile
    jax.block_until_ready(m)
    t0 = time.perf_counter()
    for b in feed[1:]:
        state, m = train(state, b, rng)
    jax.block_until_ready(m)
    return steps * c.train.batch_size / (time.perf_counter() - t0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batches", type=int, default=40)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seqs", default="64,128,512")
    p.add_argument("--step-steps", type=int, default=10, help="timed cpu-scale train steps (0: skip)")
    args = p.parse_args()
    demand = step_rate(args.step_steps) if args.step_steps else 0.0
    if demand:
        print(f"cpu-scale train step (batch 64, seq 64, every core): {demand:,.0f} examples/s")
    print("| seq | masking | read path | examples/s per core | x the cpu-scale step | albert-base on one H200 at "
          "40% MFU (examples/s) | cores to feed it |")
    print("|---:|---|---|---:|---:|---:|---:|")
    for seq in (int(s) for s in args.seqs.split(",")):
        base = preset("albert-base")
        need = 0.4 * 989e12 / (base.flops_per_token(seq) * seq)
        for masking in ("static", "dynamic"):
            data = pretrain_input.prepare(config(seq, masking))
            for name, read in PATHS.items():
                ex_s = rate(data, args.batch, args.batches, read)
                times = f"{ex_s / demand:.1f}" if demand and seq == 64 else ""
                print(f"| {seq} | {masking} | {name} | {ex_s:,.0f} | {times} | {need:,.0f} | {need / ex_s:.2f} |",
                      flush=True)


if __name__ == "__main__":
    main()
