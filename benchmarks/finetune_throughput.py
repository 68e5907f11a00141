"""Fine-tuning throughput and peak memory per downstream task, on the real data, through the real training core.

  python benchmarks/finetune_throughput.py --init workdirs/demo --steps 60 --out ft_throughput.json
  python benchmarks/finetune_throughput.py --tasks rt_sentiment pd_pos --steps 12 --tokenizer W  # init=random

Each task runs `albert_jax.runs.finetune.finetune` (experiments/finetune.py, scale=cpu, one seed) in a fresh
child process, so its peak RSS is that task's alone. Step time is the median over the loop's own metrics.jsonl
windows (compile step excluded by the loop, first window excluded here); examples/s = batch / step time; useful
tokens/s counts the real (input_mask) tokens of the task's featurized train split, every option of a multiple-
choice example included. Compile and evaluation times come from thin timers around the loop's jitted steps.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASKS = ("rt_sentiment", "wordnet_wic", "verse_paraphrase", "hedge", "pd_pos", "wordnet_lemma_span",
         "next_sentence_choice")


# ------------------------------------------------------------------------------------------------ child
def _timed_steps(timings: dict):
    """Wrap `jit_steps` so the first train call (trace + compile + one step) and each eval are timed; the
    wrappers only add a clock, the loop still calls the real jitted functions."""
    import jax

    from albert_jax.training import step as ts

    real = ts.jit_steps

    def jit_steps(*a, **kw):
        train_step, eval_step = real(*a, **kw)
        first = {"train": True, "eval": True}

        def train(*args):
            if not first["train"]:
                return train_step(*args)
            first["train"] = False
            t0 = time.perf_counter()
            out = jax.block_until_ready(train_step(*args))  # compile is synchronous; block to include the run
            timings["compile_s"] = time.perf_counter() - t0
            timings["to_first_step_s"] = time.perf_counter() - timings["t_start"]
            return out

        def evaluate(*args):
            if not first["eval"]:
                return eval_step(*args)
            first["eval"] = False
            t0 = time.perf_counter()
            out = jax.block_until_ready(eval_step(*args))
            timings["eval_compile_s"] = time.perf_counter() - t0
            return out
        return train, evaluate
    ts.jit_steps = jit_steps


def child(args) -> None:
    timings = {"t_start": time.perf_counter()}
    import jax
    import numpy as np

    from albert_jax.cli.common import load_experiment
    from albert_jax.runs import finetune as ft
    from albert_jax.training import loop

    _timed_steps(timings)
    captured: dict = {}
    real_train, real_evaluate = loop.train, loop.evaluate

    def train(run, workdir):
        captured["data"], captured["batch"] = run.data, run.config.train.batch_size
        t0 = time.perf_counter()
        captured["in_train"] = True
        try:
            return real_train(run, workdir)
        finally:
            captured["in_train"] = False
            timings["train_loop_s"] = time.perf_counter() - t0

    def evaluate(*a, **kw):
        # Inside the loop this is the final dev evaluation (eval_every = steps); after it, the test split.
        t0 = time.perf_counter()
        out = real_evaluate(*a, **kw)
        key = "eval_s" if captured.get("in_train") else "test_eval_s"
        timings[key] = timings.get(key, 0.0) + time.perf_counter() - t0
        return out
    loop.train, loop.evaluate = train, evaluate

    n = args.steps
    spec = os.path.join(ROOT, f"experiments/finetune.py:task={args.task},init={args.init},scale=cpu,seeds=1")
    sets = [f"train.num_train_steps={n}", f"train.log_every={args.log_every}", f"train.eval_every={n}",
            f"train.checkpoint_every={n}", f"train.warmup_steps={max(1, n // 10)}"]
    if args.tokenizer:
        sets.append(f"data.tokenizer={args.tokenizer}")
    if args.seq:
        sets.append(f"data.max_seq_length={args.seq}")
        if args.init == "random":  # the random model's positions must cover the longer inputs
            sets.append(f"model.max_position_embeddings={max(128, args.seq)}")
    if args.batch:
        sets.append(f"train.batch_size={args.batch}")
    config = load_experiment(spec, sets + list(args.model_set or ()))
    ft.finetune(config, args.workdir)
    timings["total_s"] = time.perf_counter() - timings.pop("t_start")

    from albert_jax.training import rundir
    rows = rundir.read_metrics(rundir.seed_dir(args.workdir, config.train.seed) / rundir.METRICS)
    windows = [r["step_time"] for r in rows if "step_time" in r]
    steady = windows[1:] or windows  # the first window still warms caches and the input pipeline
    mask = np.asarray(captured["data"].train.arrays["input_mask"])
    real_len = float(mask.reshape(len(mask), -1).sum(axis=1).mean())  # all options of a multiple-choice example
    padded = int(np.prod(mask.shape[1:]))
    step = statistics.median(steady)
    batch = captured["batch"]
    out = {"task": args.task, "init": args.init, "max_len": int(mask.shape[-1]), "options": padded // mask.shape[-1],
           "train_examples": len(mask), "mean_real_tokens": real_len, "padded_tokens": padded, "batch": batch,
           "steps": n, "windows": len(windows), "step_time_s": step, "step_time_windows": windows,
           "examples_per_s": batch / step, "useful_tokens_per_s": real_len * batch / step,
           "padded_tokens_per_s": padded * batch / step, "padding_share": 1 - real_len / padded,
           "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # KiB on Linux
           "device_kind": jax.devices()[0].device_kind, "devices": jax.device_count(),
           **{k: round(v, 3) for k, v in timings.items()}}
    stats = getattr(jax.devices()[0], "memory_stats", lambda: None)()
    if stats and "peak_bytes_in_use" in stats:  # accelerators: device memory, which RSS does not show
        out["peak_device_mib"] = stats["peak_bytes_in_use"] / 2**20
    with open(args.result, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)


# ------------------------------------------------------------------------------------------------ parent
def machine_line() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    # jax is not imported here: on a GPU host the parent would grab device memory the children need.
    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, jax {metadata.version('jax')}, "
            f"{datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}")


def run_task(task: str, args, scratch: str) -> dict:
    workdir = os.path.join(scratch, task)
    result = os.path.join(scratch, f"{task}.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--task", task, "--init", args.init,
           "--steps", str(args.steps), "--log-every", str(args.log_every), "--workdir", workdir, "--result", result]
    for flag, value in (("--tokenizer", args.tokenizer), ("--seq", args.seq), ("--batch", args.batch)):
        if value:
            cmd += [flag, str(value)]
    for item in args.model_set or ():
        cmd += ["--model-set", item]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0 or not os.path.isfile(result):
        tail = proc.stderr.strip().splitlines()[-15:]
        print(f"[{task}] failed (exit {proc.returncode}):\n  " + "\n  ".join(tail), file=sys.stderr)
        return {"task": task, "error": "\n".join(tail), "exit": proc.returncode}
    with open(result, encoding="utf-8") as f:
        row = json.load(f)
    row["child_wall_s"] = round(time.perf_counter() - t0, 3)
    print(f"[{task}] {row['step_time_s']:.4f} s/step, {row['examples_per_s']:.1f} examples/s, "
          f"peak RSS {row['peak_rss_mib']:,.0f} MiB", file=sys.stderr)
    return row


def table(rows: list[dict]) -> str:
    head = ("| task | max len | mean real tokens | batch | step time s | examples/s | useful tokens/s | "
            "padding share | peak RSS MiB | compile s | eval s |")
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['task']} | failed (exit {r['exit']}) |" + " |" * 9)
            continue
        opts = f" ×{r['options']}" if r["options"] > 1 else ""
        lines.append(f"| {r['task']} | {r['max_len']}{opts} | {r['mean_real_tokens']:.1f} | {r['batch']} | "
                     f"{r['step_time_s']:.4f} | {r['examples_per_s']:.1f} | {r['useful_tokens_per_s']:,.0f} | "
                     f"{r['padding_share']:.1%} | {r['peak_rss_mib']:,.0f} | {r.get('compile_s', float('nan')):.1f} "
                     f"| {r.get('eval_s', float('nan')):.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", nargs="+", default=list(TASKS))
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--init", default="", help="a pretraining workdir (or any finetune init=); empty: random")
    p.add_argument("--tokenizer", default="", help="data.tokenizer (required with init=random)")
    p.add_argument("--seq", type=int, default=0, help="data.max_seq_length (0: scale=cpu's, min(task, 128))")
    p.add_argument("--batch", type=int, default=0, help="train.batch_size (0: scale=cpu's, 32)")
    p.add_argument("--model-set", action="append", metavar="KEY=VALUE", help="extra --set override (repeatable)")
    p.add_argument("--out", default="", help="write every row as JSON here")
    p.add_argument("--keep", default="", help="keep the workdirs under this directory instead of a temp dir")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for hidden in ("--task", "--workdir", "--result"):
        p.add_argument(hidden, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args)
        return 0
    args.init = args.init or "random"  # without a pretraining workdir: the random-init baseline
    if args.init == "random" and not args.tokenizer:
        p.error("give --init <pretraining workdir>, or --tokenizer <spiece.model or a workdir holding one> for "
                "init=random")
    steady = -(-args.steps // args.log_every) - 1  # windows end at each log_every multiple and at the last step
    if steady < 3:
        print(f"note: {args.steps} steps give {max(steady, 0)} logged window(s) after the first; use >= "
              f"{4 * args.log_every} for a stable median", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="ft_bench_") as tmp:
        scratch = args.keep or tmp
        os.makedirs(scratch, exist_ok=True)
        rows = [run_task(t, args, scratch) for t in args.tasks]  # sequential: tasks must not share the cores
    command = "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(__file__, ROOT)] + sys.argv[1:])
    kinds = sorted({f"{r['devices']}x {r['device_kind']}" for r in rows if "device_kind" in r})
    print(f"\n`{command}`\n\n{machine_line()}; device {', '.join(kinds) or '?'}; init={args.init}, "
          f"{args.steps} steps, median of the logged windows after the first\n")
    print(table(rows))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"command": command, "machine": machine_line(), "rows": rows}, f, indent=1)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
