"""run.py memory: step time and peak memory per sharing mode x remat policy, and the largest batch under a budget.

Every point is one child process (this file with --child), so its peak is its own: CPU the process's peak RSS
(ru_maxrss), accelerators the device's peak_bytes_in_use. The step is train_throughput.bench_ours (the
pretraining step of our training core, LAMB). The model is albert-base (12 layers) at seq 128, batch 8 (--quick:
the tiny model, seq 32). The largest batch: powers of two from 1, doubling while a child fits the budget; a
child that fails (out of memory, or over the budget: on CPU a watchdog ends it as soon as its RSS passes the
budget, before the machine swaps) ends the search.
Claim under test (issue): "a 12-layer all-shared model trains ~15% slower than an unshared one at equal FLOPs"
(summary: all_over_none_step_<remat>, step time of sharing=all over sharing=none).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

import common

SHARING = ("all", "attention", "ffn", "none")


def _watchdog(budget_bytes: float) -> None:
    page = os.sysconf("SC_PAGE_SIZE")

    def watch():
        while True:
            with open("/proc/self/statm") as f:
                rss = int(f.read().split()[1]) * page
            if rss > budget_bytes:
                print(json.dumps({"over_budget": True, "rss_mib": rss / 2**20}), flush=True)
                os._exit(3)
            time.sleep(0.05)
    threading.Thread(target=watch, daemon=True).start()


def child(spec: dict) -> None:
    import jax

    import models
    import train_throughput as tt

    if jax.default_backend() == "cpu" and spec.get("budget_bytes"):
        _watchdog(spec["budget_bytes"])
    cfg = models.model_config(spec["model"], sharing=spec["sharing"], remat_policy=spec["remat"],
                              dtype=spec["dtype"], max_position_embeddings=max(512, spec["seq"]))
    ns = argparse.Namespace(batch=spec["batch"], seq=spec["seq"], preds=max(1, round(0.15 * spec["seq"])),
                            steps=spec["steps"])
    r = tt.bench_ours(cfg, ns)
    flops = cfg.flops_per_token(ns.seq, masked_fraction=ns.preds / ns.seq)
    stats = getattr(jax.devices()[0], "memory_stats", lambda: None)() or {}
    print(json.dumps({"step_s": r["step_s"], "compile_s": r["compile_s"], "peak_mib": r["peak_mb"],
                      "gflops": flops * ns.batch * ns.seq / r["step_s"] / 1e9, "backend": jax.default_backend(),
                      "device_limit_mib": stats.get("bytes_limit", 0) / 2**20 or None}))


def _child(spec: dict, timeout: float) -> tuple[dict | None, str]:
    return common.run_child([sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)], timeout)


def run(args, ceil: dict) -> dict:
    quick = args.quick
    on_cpu = ceil.get("backend", "cpu") == "cpu"
    model, seq, batch = ("tiny", 32, 4) if quick else ("albert-base", 128, 8)
    sharings = [s for s in (args.sharing or ("all,none" if quick else ",".join(SHARING))).split(",") if s]
    from albert_jax.config import REMAT_POLICIES
    remats = [r for r in (args.remat or ("none" if quick else ",".join(REMAT_POLICIES))).split(",") if r]
    steps = args.steps or (1 if quick else 3)
    budget_gb = args.budget_gb or (1.5 if quick else 16.0 if on_cpu else 0.0)  # 0: the device's own limit
    budget = budget_gb * 2**30 if budget_gb else None
    timeout = 300 if quick else 1800
    base = {"model": model, "seq": seq, "dtype": args.dtype, "steps": steps}
    rows = []
    for sharing in sharings:
        for remat in remats:
            out, err = _child({**base, "sharing": sharing, "remat": remat, "batch": batch}, timeout)
            row = {"model": model, "seq": seq, "batch": batch, "sharing": sharing, "remat": remat}
            if out is None or "step_s" not in out:
                rows.append({**row, "error": err or "over budget"})
                continue
            rows.append({**row, "step_s": out["step_s"], "tokens_per_s": batch * seq / out["step_s"],
                         "gflops": out["gflops"], "share_of_ceiling": common.share(out["gflops"], ceil, args.dtype),
                         "compile_s": out["compile_s"], "peak_mib": out["peak_mib"]})
    largest = []
    cap = args.max_batch or (1 if quick else 1024)  # quick: one child, the search's machinery only
    for remat in (["none"] if quick else [r for r in ("none", "full") if r in remats] or remats[:1]):
        fit, fit_peak, failed, b = 0, float("nan"), None, 1
        while b <= cap:
            out, err = _child({**base, "steps": 1, "sharing": "all", "remat": remat, "batch": b,
                               "budget_bytes": budget}, timeout)
            if out is None or "step_s" not in out or (budget and out["peak_mib"] * 2**20 > budget):
                failed = b
                break
            fit, fit_peak, b = b, out["peak_mib"], b * 2
        largest.append({"model": model, "seq": seq, "sharing": "all", "remat": remat,
                        "budget_gb": budget_gb or "device", "largest_batch": fit, "peak_mib": fit_peak,
                        "first_failing_batch": failed if failed else f"> {cap} (cap)"})
    summary = {}
    for remat in remats:
        step = {r["sharing"]: r.get("step_s") for r in rows if r["remat"] == remat}
        if step.get("all") and step.get("none"):
            summary[f"all_over_none_step_{remat}"] = step["all"] / step["none"]
    return {"tables": {"sharing x remat": rows, "largest batch under the budget": largest}, "summary": summary,
            "notes": "claim: all-shared ~15% slower than unshared at equal FLOPs -> all_over_none_step ~ 1.15"}


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(json.loads(sys.argv[2]))
    else:
        sys.exit("run it through benchmarks/run.py memory")
