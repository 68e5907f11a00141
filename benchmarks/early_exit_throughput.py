"""PABEE early exit on CPU: examples/s of the while_loop path that stops computing, against the full-depth forward.

  python benchmarks/early_exit_throughput.py --run RUN/seed-0 --out early_exit.json [--examples 256] [--repeats 3]

RUN is a fine-tuning run with head=pabee. The first `--examples` dev examples (real text, the run's tokenizer and
max_seq_length) are scored at batch 1 (each example stops at its own exit) and at batch 32 (a batch stops when
its last row exits). For each patience 1..L-1 the row reports examples/s, the layers the loop actually ran per
example (batch 1: the exit layer; batch 32: the batch's deepest exit, for every row), the mean exit layer, and
whether the loop's predictions equal those derived from the full forward's per-layer predictions. Every function
is compiled and warmed first; then `--repeats` rounds run each over all batches, in an order alternating by
round, and the median round time is used.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, help="one seed's directory of a head=pabee fine-tuning run")
    ap.add_argument("--out", required=True)
    ap.add_argument("--examples", type=int, default=256)
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()

    import jax
    import jax.numpy as jnp
    import numpy as np

    from albert_jax.compression.early_exit import make_predict
    from albert_jax.data.tokenization import load_tokenizer
    from albert_jax.runs.finetune import finetuned_params
    from albert_jax.runs.pretrain import read_run_config
    from albert_jax.tasks.early_exit import patience_exit
    from albert_jax.tasks.features import eval_batches
    from albert_jax.tasks.registry import task_of_run

    step, _, cfg, info, params = finetuned_params(a.run)
    if info.get("head") != "pabee":
        raise SystemExit(f"--run {a.run}: a run with head={info.get('head', 'default')}; pass a head=pabee run")
    params = jax.device_put(jax.device_get(params))
    task = task_of_run(info, cfg)
    max_len = int(read_run_config(a.run)["experiment"]["data"]["max_seq_length"])
    data = task.prepare(load_tokenizer(a.run), max_len)
    dev = data.dev[task.dev_splits[0]]
    n = min(a.examples, len(dev))
    model = task.model(cfg)
    full = jax.jit(lambda p, i, m, s: jnp.argmax(model.apply({"params": p}, i, m, s), -1))
    predict = jax.jit(make_predict(cfg))
    L = cfg.num_hidden_layers
    result = {"run": os.path.abspath(a.run), "step": step, "examples": n, "max_seq_length": max_len,
              "model": {k: getattr(cfg, k) for k in ("num_hidden_layers", "hidden_size", "embedding_size",
                                                    "sharing", "intermediate_size")},
              "jax": jax.__version__, "device": jax.devices()[0].device_kind, "cpus": os.cpu_count(),
              "load_average": os.getloadavg(), "platform": platform.platform(),
              "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "rows": []}
    for bs in a.batch_sizes:
        batches = []
        for b in eval_batches(dev, bs, None):
            if len(batches) * bs >= n:
                break
            batches.append({k: jnp.asarray(b[k]) for k in ("input_ids", "input_mask", "segment_ids")})
        count = len(batches) * bs
        fns = {"full": lambda b: full(params, b["input_ids"], b["input_mask"], b["segment_ids"])}
        for t in range(1, L):
            fns[f"patience{t}"] = (lambda b, t=t: predict(params, b["input_ids"], b["input_mask"],
                                                          b["segment_ids"], t))
        outs = {k: [jax.block_until_ready(f(b)) for b in batches] for k, f in fns.items()}  # compile + warm
        times = {k: [] for k in fns}
        names = list(fns)
        for r in range(a.repeats):
            for k in (names if r % 2 == 0 else names[::-1]):
                t0 = time.perf_counter()
                for b in batches:
                    jax.block_until_ready(fns[k](b))
                times[k].append(time.perf_counter() - t0)
        full_preds = np.concatenate([np.asarray(o) for o in outs["full"]])  # [N, L] per-layer predictions
        full_rate = count / statistics.median(times["full"])
        result["rows"].append({"batch": bs, "mode": "full depth", "examples_per_s": full_rate,
                               "layers_run": float(L), "mean_exit": float(L), "speedup": 1.0})
        for t in range(1, L):
            pred = np.concatenate([np.asarray(o[0]) for o in outs[f"patience{t}"]])
            exit_layer = [np.asarray(o[1]) for o in outs[f"patience{t}"]]
            want = patience_exit(full_preds, t)
            run_layers = np.concatenate([np.full(len(e), e.max()) for e in exit_layer])
            rate = count / statistics.median(times[f"patience{t}"])
            result["rows"].append({
                "batch": bs, "mode": f"patience {t}", "examples_per_s": rate, "speedup": rate / full_rate,
                "layers_run": float(run_layers.mean()), "mean_exit": float(np.concatenate(exit_layer).mean()),
                "equals_derived": bool((np.concatenate(exit_layer) == want).all()
                                       and (pred == full_preds[np.arange(count), want - 1]).all())})
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    print("| batch | mode | examples/s | speed-up | layers run / example | mean exit layer | = derived |")
    print("|---|---|---|---|---|---|---|")
    for r in result["rows"]:
        print(f"| {r['batch']} | {r['mode']} | {r['examples_per_s']:.0f} | {r['speedup']:.2f}x | "
              f"{r['layers_run']:.2f} | {r['mean_exit']:.2f} | {r.get('equals_derived', '')} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
