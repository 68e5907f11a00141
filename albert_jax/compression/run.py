"""`quantize_run(workdir, out)`: a fine-tuned run -> its int8 model (qwix PTQ, quantize.py), scored beside
float32 on the run's own dev and test splits with the fine-tuning metrics, with checkpoint bytes and inference
throughput; what `albert-jax quantize` calls.

The float32 model is the run's best dev checkpoint, read as `albert-jax export` reads it (a parent workdir: its
best seed by dev score), and scored by the training loop's `evaluate` on the splits fine-tuning built (same
tokenizer, max length and limit), so its numbers reproduce the run's results.json (checked, recorded).
Throughput is measured with both models compiled in one process, timed batches interleaved (the order
alternating every round) so that a loaded machine slows both alike; the median of the rounds is reported.
"""
from __future__ import annotations

import json
import logging
import math
import os
import statistics
import tempfile
import time
from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp

from albert_jax import sharding as shd
from albert_jax.compression import quantize
from albert_jax.compression.quantize import QuantizeError
from albert_jax.runs.export import resolve_run as find
from albert_jax.training import checkpoints as ckpt
from albert_jax.training import loop, rundir
from albert_jax.training import step as ts

log = logging.getLogger("albert_jax.quantize")


def finetuned_run(workdir: str, seed: int | None = None):
    """The fine-tuned run to quantize, read as `albert-jax export` reads it (runs/export.resolve_run: a parent
    workdir gives its best seed by dev score, or `seed`; the best/ checkpoint), refusing a pretraining run."""
    run = find(workdir, None, seed)
    if run.kind != "finetune":
        raise QuantizeError(f"--workdir {run.workdir}: a pretraining run; quantize a fine-tuned one (its best dev "
                            "checkpoint is what is scored)")
    return run


def _throughput(fns: dict, batch: dict, batch_size: int, repeats: int) -> dict:
    """examples/s of each fn(batch): compiled first, then `repeats` rounds, every fn once per round, in an
    order that alternates; the median round time."""
    for fn in fns.values():
        for _ in range(2):  # compile, then one warm call
            jax.block_until_ready(fn(batch))
    times = {k: [] for k in fns}
    names = list(fns)
    for r in range(repeats):
        for k in (names if r % 2 == 0 else names[::-1]):
            t = time.perf_counter()
            jax.block_until_ready(fns[k](batch))
            times[k].append(time.perf_counter() - t)
    return {k: batch_size / statistics.median(v) for k, v in times.items()}


def _delta_points(f32: dict, q: dict) -> dict:
    """int8 - float32 in points (x100) for every metric both report in [0, 1] terms."""
    return {k: round(100 * (q[k] - f32[k]), 3) for k in f32
            if k in q and isinstance(f32[k], float) and not k.endswith("loss") and math.isfinite(f32[k])}


def _reproduces(run_dir: Path, dev: dict, test: dict) -> bool | None:
    """Whether our float32 scores equal the run's own results.json (None when it has none)."""
    path = run_dir / rundir.RESULTS
    if not path.is_file():
        return None
    theirs = rundir.read_json(path, required=True)
    pairs = [(dev, theirs.get("dev", {})), (test, theirs.get("test", {}))]
    return all(abs(ours[k] - v) <= 1e-6 for ours, t in pairs for k, v in t.items()
               if isinstance(v, float) and k in ours)


def quantize_run(workdir: str, out: str, activations: str = "float32", seed: int | None = None,
                 batch_size: int = 0, repeats: int = 20) -> dict:
    from albert_jax.runs.pretrain import read_run_config  # noqa: PLC0415  heavy: sentencepiece
    from albert_jax.tasks.registry import head_of, task_of_run  # noqa: PLC0415  heavy: grain

    rules = quantize.default_rules(activations)  # a bad value fails before anything is read
    run = finetuned_run(workdir, seed)
    run_dir, cfg = Path(run.workdir), run.config
    if head_of(run.task) != "default":
        # PABEE's one pretrained pooler serves every layer's exit (a [B, H] and an [L, B, H] product), which the
        # int8 rules below would have to quantize as two; not done, so refused rather than half-quantized.
        raise QuantizeError(f"--workdir {run.workdir}: a run with the {run.task['head']} head (one classifier per "
                            "layer) is not quantized here; quantize a run with the default head")
    task = task_of_run(run.task, cfg)
    exp = read_run_config(run.workdir).get("experiment", {})
    data_cfg, train_cfg = exp.get("data", {}), exp.get("train", {})
    bs = batch_size or int(train_cfg.get("batch_size", 32))
    mesh = shd.make_mesh()
    if bs % mesh.devices.size:
        raise QuantizeError(f"--batch-size {bs} does not divide over the {mesh.devices.size} devices")
    params = jax.device_get(run.params)  # host arrays: jit lays them out on this process's mesh
    how = quantize.plan(task, cfg, rules)
    qparams = quantize.quantize_params(params, how)
    os.makedirs(out, exist_ok=True)
    source = run.describe()
    ckpt_path = quantize.save(out, qparams, quantize.quantized_meta(task, cfg, rules, how, source))

    with tempfile.TemporaryDirectory(dir=out) as tmp:  # the float32 params saved the same way, for the bytes
        with ocp.StandardCheckpointer() as c:
            c.save(os.path.join(os.path.abspath(tmp), "f32"), jax.tree.map(np.asarray, params))
        f32_disk = quantize.dir_bytes(os.path.join(tmp, "f32"))
    q_disk = quantize.dir_bytes(ckpt_path) - os.path.getsize(os.path.join(ckpt_path, ckpt.MANIFEST))

    log.info("preparing %s (max_seq_length=%s, limit=%s)", task.name, data_cfg.get("max_seq_length"),
             data_cfg.get("limit", 0))
    data = task.prepare(run.tokenizer, int(data_cfg["max_seq_length"]), limit=int(data_cfg.get("limit", 0)))
    batch_sh = shd.batch_sharding(mesh)
    model = task.model(cfg)
    eval_step = ts.with_rules(jax.jit(ts.make_eval_step(task, model)), mesh)

    def score(p) -> dict:
        return {"dev": loop.evaluate(eval_step, p, task, data.eval_sets, bs, batch_sh),
                "test": loop.evaluate(eval_step, p, task, data.test_sets, bs, batch_sh) if data.test else {}}

    f32, q8 = score(params), score(qparams)
    first = next(iter(data.eval_sets.values()))
    batch = next(iter(first(bs, batch_sh)))
    fwd = {name: ts.with_rules(jax.jit(lambda b, p=p: task.apply(model, p, b, None, True)), mesh)
           for name, p in (("float32", params), ("int8", qparams))}
    speed = _throughput(fwd, batch, bs, repeats)

    f32_k, q_k = quantize.kernel_bytes(params, how), quantize.kernel_bytes(qparams, how)
    result = {
        "source": source, "task": task.name,
        "quantization": {"library": f"qwix {quantize.qwix.__version__}", "weights": "int8", "activations": activations,
                         "kernels_quantized": len(how), "rules": quantize.rules_to_json(rules)},
        "float32": f32, "int8": q8,
        "delta_points": {"dev": _delta_points(f32["dev"], q8["dev"]), "test": _delta_points(f32["test"], q8["test"])},
        "float32_reproduces_run": _reproduces(run_dir, f32["dev"], f32["test"]),
        "bytes": {"kernels": {"float32": f32_k, "int8": q_k, "ratio": round(f32_k / q_k, 3)},
                  "params": {"float32": quantize.tree_bytes(params), "int8": quantize.tree_bytes(qparams),
                             "ratio": round(quantize.tree_bytes(params) / quantize.tree_bytes(qparams), 3)},
                  "checkpoint_on_disk": {"float32": f32_disk, "int8": q_disk, "ratio": round(f32_disk / q_disk, 3)}},
        "throughput": {"examples_per_second": {k: round(v, 1) for k, v in speed.items()},
                       "int8_over_float32": round(speed["int8"] / speed["float32"], 3),
                       "batch_size": bs, "seq_len": int(data_cfg["max_seq_length"]), "rounds": repeats,
                       "devices": mesh.devices.size, "device_kind": jax.devices()[0].device_kind,
                       "host_cpus": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 2)},
        "checkpoint": ckpt_path,
    }
    if result["float32_reproduces_run"] is False:
        log.warning("the float32 scores differ from %s/results.json: the data or code changed since the run",
                    run_dir)
    with open(os.path.join(out, rundir.RESULTS), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    return result

