"""run.py compile: compile time and program size of jit(value_and_grad(pretraining loss)) against depth.

Points: depth x (scan, unrolled) x (sharing all, none) at albert-base width (--quick: a tiny width, depths 1
 and 2, sharing all only), batch 2,
seq 128. Trace+lower and XLA compile are timed apart, each point after jax.clear_caches() (no jit, tracing or
lowering cache survives from the point before; the persistent compilation cache is off unless the user set it).
Program size: characters of the lowered StableHLO text and of the optimized HLO XLA compiled. Parameters are
abstract (ShapeDtypeStructs): nothing is allocated, so depth 48 unrolled costs compile time, not memory.
Target (issue): with scan, depth-48 / depth-12 compile time <= 1.2. A scanned point takes seconds and the
ratio is read against that target, so each is the median of 3 samples (this VM's speed drifts by 10-25% within
minutes); an unrolled point takes up to minutes and grows several-fold with depth, so it is measured once
(--quick: every point once).
"""
from __future__ import annotations

import statistics
import time

import models
import train_throughput as tt


def point(cfg, batch=2, seq=128, preds=20) -> dict:
    import jax
    from flax import linen as nn

    from albert_jax.tasks.pretraining.task import PretrainingTask
    from albert_jax.training import state as st

    jax.clear_caches()
    task = PretrainingTask("sop", max_seq_length=seq, max_predictions_per_seq=preds)
    model = task.model(cfg)
    params = nn.unbox(st.abstract_params(task, cfg))
    b = tt.batch_for(cfg, batch, seq, preds)

    def loss(p, b):
        sums = task.sums(task.apply(model, p, b, None, True), b)
        return task.loss(sums, task.counts(b))

    t0 = time.perf_counter()
    lowered = jax.jit(jax.value_and_grad(loss)).lower(params, b)
    t1 = time.perf_counter()
    compiled = lowered.compile()
    t2 = time.perf_counter()
    return {"trace_lower_s": t1 - t0, "compile_s": t2 - t1, "total_s": t2 - t0,
            "stablehlo_chars": len(lowered.as_text()), "hlo_chars": len(compiled.as_text())}


def run(args, ceil: dict) -> dict:
    quick = args.quick
    depths = [int(d) for d in (args.depths or ("1,2" if quick else "6,12,24,48")).split(",")]
    ref = 1 if quick else 12  # the depth the deepest is compared with
    base = "tiny" if quick else "albert-base"
    rows = []
    for scan in (True, False):
        for sharing in ("all",) if quick else ("all", "none"):
            for depth in depths:
                cfg = models.model_config(base, num_hidden_layers=depth, sharing=sharing, scan_layers=scan,
                                          max_position_embeddings=512)
                samples = [point(cfg) for _ in range(3 if scan and not quick else 1)]
                median = {k: statistics.median(x[k] for x in samples) for k in samples[0]}
                rows.append({"model": base, "depth": depth, "layers": "scan" if scan else "unrolled",
                             "sharing": sharing, "samples": len(samples), **median})
    summary = {}
    if ref in depths and max(depths) != ref:
        for r in rows:
            if r["depth"] != max(depths):
                continue
            r0 = next(x for x in rows if x["depth"] == ref and x["layers"] == r["layers"]
                      and x["sharing"] == r["sharing"])
            key = f"{r['layers']}_{r['sharing']}_d{max(depths)}_over_d{ref}"
            summary[f"{key}_total_s"] = r["total_s"] / r0["total_s"]
            summary[f"{key}_hlo_chars"] = r["hlo_chars"] / r0["hlo_chars"]
    return {"tables": {"compile time and program size against depth": rows}, "summary": summary,
            "notes": "target: scan depth-48/depth-12 total_s <= 1.2"}
