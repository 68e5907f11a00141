"""Sequence packing for pretraining: rows per epoch, padding share, and real (unpadded) tokens per second of the
train step, packed vs unpacked, on real records.

  python benchmarks/packing_bench.py                       # every scenario below, cpu-scale model
  python benchmarks/packing_bench.py --scenarios en64,sotu128 --rounds 3 --steps 5

Each scenario is the cpu-scale pretraining config (experiments/pretrain.py:scale=cpu: 4 layers, H=128, E=64,
batch 64) with a few overrides; its records are prepared (cached) exactly as `albert-jax pretrain` prepares them.
The step is the trainer's own jitted step; batches are read from the trainer's own iterator beforehand, so the
timing is the step alone. Packed and unpacked steps run in the same process, interleaved round by round, and
the ratios are taken from the medians. Real tokens are counted from input_mask; both steps see rows of the same
length, so what packing buys is the share of rows that held padding.
"""
from __future__ import annotations

import argparse
import statistics
import time

import jax
import numpy as np

SCENARIOS = {
    # The default data: the English mix at seq 64, instances ~96% full (short_seq_prob=0.1, document ends).
    "en64": [],
    # The same corpus at seq 128 with half the instances drawn short: the official setup's short_seq_prob
    # turned up, as for a model that must also see short inputs.
    "en128_short": ["data.max_seq_length=128", "data.short_seq_prob=0.5"],
    # A corpus of short documents: People's Daily (1998-01), one article per document.
    "zh64": ["data.corpus='albert_pretrain_zh'"],
}


def config_for(overrides):
    import experiments.pretrain as exp
    from albert_jax.configs.overrides import apply_overrides
    c = exp.get_config("scale=cpu")
    apply_overrides(c, list(overrides))
    return c


def batches(data, n, batch_size, sharding):
    it = data.train_iterator(batch_size, sharding, seed=0)
    t0 = time.process_time()
    out = [next(it) for _ in range(n)]
    return out, (time.process_time() - t0) / n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--scenarios", default=",".join(SCENARIOS))
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds of packed and unpacked timing")
    p.add_argument("--steps", type=int, default=5, help="timed steps per round and mode")
    p.add_argument("--max_examples", type=int, default=3)
    args = p.parse_args()

    from common import pretrain_step

    from albert_jax import sharding as shd
    from albert_jax.tasks.pretraining import input as pretrain_input
    from albert_jax.tasks.pretraining import packing

    print(f"jax {jax.__version__}, {jax.device_count()} x {jax.devices()[0].device_kind}")
    # "ideal" is the gain if a packed step cost what an unpacked one does: the ratio of real tokens per row.
    print("| scenario | seq | records | rows packed | rows ratio | padding unpacked | padding packed | ideal | "
          "step time packed/unpacked | real tok/s unpacked | real tok/s packed | ratio | examples/s ratio | "
          "host ms/batch unpacked, packed |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in args.scenarios.split(","):
        c = config_for(SCENARIOS[name])
        d = c.data
        data = pretrain_input.prepare(c)
        c.data.packing, c.data.packing_max_examples = True, args.max_examples
        packed_data = pretrain_input.prepare(c)  # the same records (cached), read packed
        sizes = packing.record_sizes(data.train_shards)
        rows = len(packed_data.packed_source(_source(data.train_shards)))
        S, B = d.max_seq_length, c.train.batch_size

        train, state, mesh = pretrain_step(c, data.vocab_size)
        rng = jax.random.PRNGKey(1)
        n = args.rounds * args.steps + 1
        feeds, host = {}, {}
        for mode, src in (("unpacked", data), ("packed", packed_data)):
            feeds[mode], host[mode] = batches(src, n, B, shd.batch_sharding(mesh))
            state, m = train(state, feeds[mode][0], rng)  # compile
            jax.block_until_ready(m)
        times = {"unpacked": [], "packed": []}
        for r in range(args.rounds):
            for mode in ("unpacked", "packed") if r % 2 == 0 else ("packed", "unpacked"):
                chunk = feeds[mode][1 + r * args.steps: 1 + (r + 1) * args.steps]
                t0 = time.perf_counter()
                for b in chunk:
                    state, m = train(state, b, rng)
                jax.block_until_ready(m)
                times[mode].append((time.perf_counter() - t0) / args.steps)
        step = {k: statistics.median(v) for k, v in times.items()}
        real = {k: float(np.mean([np.asarray(b["input_mask"]).sum() for b in feeds[k][1:]])) for k in feeds}
        ex = {"unpacked": float(B), "packed": float(np.mean([np.asarray(b["next_sentence_weights"]).sum()
                                                               for b in feeds["packed"][1:]]))}
        tok_s = {k: real[k] / step[k] for k in step}
        ex_ratio = (ex["packed"] / step["packed"]) / (ex["unpacked"] / step["unpacked"])
        pad_u, pad_p = (packing.padding_share(sizes[:, 0], r, S) for r in (len(sizes), rows))
        print(f"| {name} | {S} | {len(sizes):,} | {rows:,} | {rows / len(sizes):.3f} | {pad_u:.1%} | "
              f"{pad_p:.1%} | {(1 - pad_p) / (1 - pad_u):.3f} | {step['packed'] / step['unpacked']:.2f} | "
              f"{tok_s['unpacked']:,.0f} | "
              f"{tok_s['packed']:,.0f} | {tok_s['packed'] / tok_s['unpacked']:.2f} | {ex_ratio:.2f} | "
              f"{1e3 * host['unpacked']:.0f}, {1e3 * host['packed']:.0f} |")
        print(f"  step s/step (median of {args.rounds}): unpacked {step['unpacked']:.4f} "
              f"{[round(t, 4) for t in times['unpacked']]}, packed {step['packed']:.4f} "
              f"{[round(t, 4) for t in times['packed']]}", flush=True)


def _source(shards):
    import grain
    return grain.sources.ArrayRecordDataSource(shards)


if __name__ == "__main__":
    main()
