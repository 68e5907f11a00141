"""Input-pipeline throughput over the built English pretraining source (albert_pretrain_en, train split).

Measures, on this machine's CPUs:
  source   random-access reads + TFDS decoding, records/s (the floor any pipeline pays)
  batches  source -> grain (shuffle, shard, transform, batch) -> numpy batches, records/s
with a tokenization-free stand-in transform (the document's UTF-8 bytes, padded) unless --transform names the
real one as module:callable (a record -> dict of fixed-shape numpy arrays). Prints one markdown table row.

    python benchmarks/input_pipeline_bench.py [--batch-size 32] [--seconds 10] [--worker-count 0]
    python benchmarks/input_pipeline_bench.py --transform albert_jax.tasks.pretraining.instances:make_transform
"""
from __future__ import annotations

import argparse
import importlib
import os
import platform
import time

import numpy as np


def _load_transform(spec: str | None):
    from albert_jax.data import input_pipeline as ip

    if not spec:
        return ip.TextBytesTransform(4096), "bytes stand-in (4096)"
    module, _, attr = spec.partition(":")
    obj = getattr(importlib.import_module(module), attr)
    # a factory (no-arg callable returning the transform) or the transform itself
    try:
        fn = obj()
        if callable(fn):
            return fn, spec
    except TypeError:
        pass
    return obj, spec


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--worker-count", type=int, default=0)
    p.add_argument("--transform", default=None, help="module:callable, the record -> arrays transform")
    p.add_argument("--config", default="default", help="albert_pretrain_en config (default | with_news)")
    args = p.parse_args(argv)

    import tensorflow_datasets as tfds

    from albert_jax.data import input_pipeline as ip
    from albert_jax.data import builders

    tfds.display_progress_bar(False)
    t0 = time.perf_counter()
    builder = builders.build(f"albert_pretrain_en/{args.config}")
    build_s = time.perf_counter() - t0
    src = builder.as_data_source("train")
    n = len(src)

    rng = np.random.default_rng(0)
    order = rng.permutation(n)
    t0, i, nbytes = time.perf_counter(), 0, 0
    while time.perf_counter() - t0 < args.seconds / 2:
        nbytes += len(src[int(order[i % n])]["text"])
        i += 1
    src_rate = i / (time.perf_counter() - t0)
    mb_rate = nbytes / 1e6 / (time.perf_counter() - t0)

    transform, tname = _load_transform(args.transform)
    it = ip.make_batch_iterator(src, transform, args.batch_size, seed=0, worker_count=args.worker_count,
                                process_index=0, process_count=1)
    next(it)  # start-up (worker processes, first reads) is not throughput
    t0, batches = time.perf_counter(), 0
    while time.perf_counter() - t0 < args.seconds / 2:
        next(it)
        batches += 1
    pipe_rate = batches * args.batch_size / (time.perf_counter() - t0)

    cores = max(1, args.worker_count) if args.worker_count else 1
    print("| machine | cores | source records | source read (rec/s) | source MB/s | transform | batch | workers "
          "| pipeline (rec/s) | pipeline rec/s/core | build (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {platform.machine()} {os.cpu_count()} CPU | {cores} | {n} | {src_rate:,.0f} | {mb_rate:,.1f} | {tname} "
          f"| {args.batch_size} | {args.worker_count} | {pipe_rate:,.0f} | {pipe_rate / cores:,.0f} | {build_s:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
