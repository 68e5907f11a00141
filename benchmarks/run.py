"""One entry point for the benchmarks: `python benchmarks/run.py SUITE [--quick] --out DIR`.

Suites: ceiling (the machine's matmul rate: jax, numpy, torch), train (pretraining step vs HF, TFLOP/s, MFU),
inference (encoder forward and real-data classification vs HF, bucketing), finetune (real-task fine-tuning steps
vs HF, bucketing), compile (trace/compile time and program size against depth), memory (step time and peak
memory per sharing mode x remat policy, largest batch under a budget), all (each of them in turn).
Each writes DIR/<suite>.json and DIR/<suite>.md headed by the command, machine, versions and date. Every suite
reports its FLOP rate as a share of the jax matmul ceiling measured in the same run (`all` measures it once and
hands it on). `--quick` is smoke sizes (seconds per suite): a check that everything runs, not a measurement.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

# This checkout first (its package and experiments/), then the benchmark modules beside this file.
sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(os.path.abspath(__file__))]
import common  # noqa: E402

SUITES = ("ceiling", "train", "inference", "finetune", "compile", "memory")
MODULES = {"train": "bench_train", "inference": "bench_inference", "finetune": "bench_finetune",
           "compile": "bench_compile", "memory": "bench_memory"}
# Suites whose parent must not hold the accelerator (they measure in child processes).
CHILD_SUITES = ("memory",)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("suite", help=f"one of {', '.join(SUITES)}; all; or a comma list (e.g. ceiling,compile)")
    p.add_argument("--quick", action="store_true", help="smoke sizes: seconds per suite")
    p.add_argument("--out", required=True, help="directory for <suite>.json and <suite>.md")
    p.add_argument("--tag", default="", help="file name suffix: <suite>-<tag>.json (several runs of one suite)")
    p.add_argument("--ceiling", default="", help=argparse.SUPPRESS)  # a ceiling.json to reuse (run.py all)
    p.add_argument("--tokenizer", default="", help="SentencePiece .model (or a workdir); default: the cpu-scale "
                                                   "pretraining tokenizer of the English mix")
    p.add_argument("--models", default="", help="comma list of presets (or 'smoke4'); default per suite")
    p.add_argument("--seqs", default="", help="train: comma list of sequence lengths (default 128)")
    p.add_argument("--dtype", default="float32", help="train/memory: compute dtype (bfloat16 on accelerators)")
    p.add_argument("--tokens", type=int, default=0, help="train: tokens per batch (batch = tokens / seq)")
    p.add_argument("--steps", type=int, default=0, help="timed steps per point (0: the suite's default)")
    p.add_argument("--remat", default="", help="train: remat policy; memory: comma list (default: all)")
    p.add_argument("--peer", default="auto", choices=("auto", "on", "off"),
                   help="train: time HF transformers too (auto: torch on CPU and for albert-base on accelerators, "
                        "HF's Flax ALBERT on CPU; on: both everywhere)")
    p.add_argument("--examples", type=int, default=-1,
                   help="inference: dev examples of rt_sentiment (0: the whole split; default 256 on CPU, all on "
                        "accelerators; --quick: 96)")
    p.add_argument("--sharing", default="", help="memory: comma list of sharing modes (default: all four)")
    p.add_argument("--depths", default="", help="compile: comma list of depths (default 6,12,24,48)")
    p.add_argument("--budget-gb", type=float, default=0.0,
                   help="memory: budget for the largest-batch search (default 16 on CPU, the device's memory "
                        "on accelerators; --quick: 1.5)")
    p.add_argument("--max-batch", type=int, default=0, help="memory: stop the doubling here (default 1024)")
    return p


def run_suite(name: str, args, ceil: dict | None) -> dict:
    if name == "ceiling":
        ceil = common.ceiling(args.quick)
        return {"ceiling": ceil, "tables": {"matmul ceiling": [
            {"library": k[:-7].rsplit("_", 1)[0], "dtype": k[:-7].rsplit("_", 1)[1], "gflops": v}
            for k, v in ceil.items() if k.endswith("_gflops")]}, "summary": {}}
    if ceil is None:  # measured here (seconds), so the share of ceiling is of this run's machine state
        ceil = common.ceiling_in_child(args.quick) if name in CHILD_SUITES else common.ceiling(args.quick)
    out = importlib.import_module(MODULES[name]).run(args, ceil)
    out["ceiling"] = ceil
    return out


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = parser()
    args = p.parse_args(argv)
    suffix = f"-{args.tag}" if args.tag else ""
    names = SUITES if args.suite == "all" else tuple(n for n in args.suite.split(",") if n)
    unknown = [n for n in names if n not in SUITES]
    if unknown or not names:
        p.error(f"suite {args.suite!r}: unknown {unknown or 'empty'}; allowed: {', '.join(SUITES)}, all, or a "
                "comma list of them")
    if len(names) > 1:
        # Each suite in its own process: peak memory is per suite, and a suite that must not hold the GPU
        # (memory) gets a parent that holds none. The ceiling, when listed, is measured first and handed on.
        names = tuple(sorted(names, key=SUITES.index))
        os.makedirs(args.out, exist_ok=True)
        rest = [a for a in argv if a != args.suite]
        failed = []
        for name in names:
            extra = [] if name == "ceiling" or "ceiling" not in names else [
                "--ceiling", os.path.join(args.out, f"ceiling{suffix}.json")]
            code = os.spawnv(os.P_WAIT, sys.executable, [sys.executable, os.path.abspath(__file__), name]
                             + rest + extra)
            if code:
                failed.append(name)
                print(f"suite {name} failed (exit {code})", file=sys.stderr)
        return 1 if failed else 0
    args.suite = names[0]
    ceil = None
    if args.ceiling:
        with open(args.ceiling, encoding="utf-8") as f:
            ceil = json.load(f)["ceiling"]
    result = {"header": common.header(argv), "suite": args.suite, "quick": args.quick,
              **run_suite(args.suite, args, ceil)}
    common.write(args.out, args.suite + suffix, result)
    print(common.markdown(args.suite, result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
