"""Pretraining input pipeline: examples/s per CPU core at seq 128 and 512 (static and dynamic masking), and how
many cores it takes to feed an albert-base train step on an H200 at 40% MFU.

  python benchmarks/pretrain_pipeline_bench.py [--batches 200]

Uses the real English mix (smoke subset, as `make demo` prepares it) through the trainer's own data path:
ArrayRecord pretraining records -> grain (shuffle, decode, [mask], batch) -> numpy batches on one core.
"""
from __future__ import annotations

import argparse
import time

from albert_jax.tasks.pretraining import input as pretrain_input
from albert_jax.config import preset


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batches", type=int, default=200)
    p.add_argument("--batch", type=int, default=32)
    args = p.parse_args()
    import experiments.pretrain as exp
    print("| seq | masking | examples/s (1 core) | albert-base seq/s at 40% MFU on H200 | cores to feed it |")
    print("|---:|---|---:|---:|---:|")
    for seq in (128, 512):
        for masking in ("static", "dynamic"):
            cfg = exp.get_config("scale=cpu")
            cfg.data.max_seq_length, cfg.data.masking = seq, masking
            data = pretrain_input.prepare(cfg)
            it = data.train_iterator(args.batch, None, seed=0)
            next(it)  # start-up
            t0 = time.process_time()
            for _ in range(args.batches):
                next(it)
            ex_s = args.batches * args.batch / (time.process_time() - t0)  # CPU time: per core
            base = preset("albert-base")
            need = 0.4 * 989e12 / (base.flops_per_token(seq) * seq)
            print(f"| {seq} | {masking} | {ex_s:,.0f} | {need:,.0f} | {need / ex_s:.2f} |")


if __name__ == "__main__":
    main()
