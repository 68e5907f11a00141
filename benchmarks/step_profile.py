"""Where a pretraining step's time goes, op by op: a jax.profiler trace of our train step, grouped by kind of op.

  python benchmarks/step_profile.py --model smoke4 --batch 8 --seq 128 [--steps 5] [--variants scan,unrolled]
      [--keep DIR]

For each variant (default: the scanned and the unrolled encoder; `--variants scan,scan:dots,unrolled` adds remat
policies): times `--steps` steps of each, interleaved (medians), then traces `--steps` steps of each, of the same
jitted step the train suite times (train_throughput.ours_step: SOP, LAMB), and sums the duration of every XLA:CPU
thunk in the trace by kind: matmuls (XLA's dots and the YNNPACK fusions, which also take the elementwise ops fused
into them), the scan's stacking of per-layer values (dynamic-update-slice into, and dynamic-slice out of, the
[L, ...] buffers the backward pass reads), copies and transposes, buffer initialisation (broadcasts), and the
remaining elementwise fusions. Prints the step's wall time, the summed op time, their ratio (how many ops ran at
once on average: a kernel that runs on several threads counts once), the process's CPU time over the wall time
(how many cores were busy) and the share of each kind.
The trace itself is jax's own (`create_perfetto_trace`); --keep leaves it for a trace viewer.
"""
from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import re
import statistics
import sys
import tempfile
import time

sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(os.path.abspath(__file__))]

# Kind of op, by the XLA thunk's name (first match wins). Names are XLA's (fusion kinds, op names) and change
# between jax versions: what no rule matches counts as "other", so a rename shows as a growing "other".
KINDS = (
    ("matmuls and what is fused into them", r"^(ynn_fusion|dot|.*convolution|onednn|xnn)"),
    ("scan stacking", r"dynamic-update-slice|dynamic-slice|dynamic_update_slice|dynamic_slice"),
    ("copies and transposes", r"copy|transpose"),
    ("buffer initialisation", r"broadcast$|^wrapped_broadcast|^broadcast\.|^broadcast_in_dim|iota"),
    # Unfused ops keep their HLO names (`convert.12`, `square.3`): XLA without its CPU fusion emitters, as the tests
    # run it (tests/procs.py).
    ("elementwise and reductions", r"fusion|^wrapped_|reduce|add|multiply|select|exp|tanh|divide|subtract|^convert"
                                   r"|^square|sqrt|^negate|^maximum|^minimum|^compare|^power|^abs|^log"),
    ("loops and control", r"^while|^conditional|^call"),
)
# Spans that enclose others (the executor, python frames, the thread pool's waits) are not ops.
ENCLOSING = ("ThunkExecutor", "$", "PjitFunction", "SlinkyThreadPool", "CommonPjRt", "ParseArguments", "end: ")


def kind_of(name: str) -> str:
    base = re.sub(r"\.\d+$", "", name)
    for kind, pattern in KINDS:
        if re.search(pattern, base):
            return kind
    return "other"


def op_times(trace_dir: str) -> tuple[dict[str, float], int]:
    """Summed duration (s) of the trace's ops per kind, and the number of ops."""
    files = sorted(glob.glob(os.path.join(trace_dir, "**", "*.json.gz"), recursive=True))
    if not files:
        raise SystemExit(f"no perfetto trace under {trace_dir}: jax.profiler wrote nothing")
    with gzip.open(files[-1], "rt", encoding="utf-8") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    out, n = collections.Counter(), 0
    for e in events:
        if e.get("ph") == "X" and not e["name"].startswith(ENCLOSING):
            out[kind_of(e["name"])] += e["dur"] / 1e6
            n += 1
    return dict(out), n


class Prepared:
    """One variant's compiled step with a warm state; `step()` runs and times one more step."""

    def __init__(self, cfg, batch: int, seq: int):
        import train_throughput as tt
        self.train, self.state, self.batch, self.rng = tt.ours_step(cfg, batch, seq, max(1, round(0.15 * seq)))
        for _ in range(2):  # compile, then one warm step
            self.step()

    def step(self) -> float:
        import jax
        t0 = time.perf_counter()
        self.state, m = self.train(self.state, self.batch, self.rng)
        jax.block_until_ready(m)
        return time.perf_counter() - t0


def profile(prep: Prepared, steps: int, keep: str = "") -> dict:
    """Trace `steps` steps of one prepared step and sum its ops by kind (per step); --keep leaves the trace."""
    import jax
    with tempfile.TemporaryDirectory(prefix="step_profile_") as scratch:
        trace_dir = keep or scratch
        with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(steps):
                prep.step()
            wall, cpu = (time.perf_counter() - t0) / steps, (time.process_time() - c0) / steps
        kinds, n = op_times(trace_dir)
    kinds = {k: v / steps for k, v in kinds.items()}
    total = sum(kinds.values())
    return {"traced_step_s": wall, "op_s": total, "ops_in_flight": total / wall, "busy_cores": cpu / wall,
            "ops_per_step": n // steps, "kinds": kinds}


def table(rows: dict[str, dict]) -> str:
    def line(label, cell):
        return f"| {label} | " + " | ".join(cell(r) for r in rows.values()) + " |"

    lines = ["| kind | " + " | ".join(rows) + " |", "|---|" + "---:|" * len(rows),
             line("step wall time, interleaved median (ms)", lambda r: f"{r['step_s'] * 1e3:.1f}"),
             line("traced step wall time (ms)", lambda r: f"{r['traced_step_s'] * 1e3:.1f}"),
             line("summed op time (ms)", lambda r: f"{r['op_s'] * 1e3:.1f}"),
             line("ops in flight on average", lambda r: f"{r['ops_in_flight']:.2f}"),
             line("cores busy (process CPU time / wall)", lambda r: f"{r['busy_cores']:.2f}"),
             line("ops per step", lambda r: str(r["ops_per_step"]))]
    for k in [k for k, _ in KINDS] + ["other"]:
        lines.append(line(f"{k} (ms, share)", lambda r, k=k: f"{r['kinds'].get(k, 0.0) * 1e3:.1f} "
                                                             f"({r['kinds'].get(k, 0.0) / r['op_s']:.0%})"))
    return "\n".join(lines)


def main(argv=None):
    import models
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smoke4", help="a preset, smoke4, cpu or tiny (benchmarks/models.py)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--variants", default="scan,unrolled",
                   help="comma list of scan|unrolled, each with an optional :REMAT policy (none, dots, "
                        "dots_no_batch, full) and an optional @DTYPE of the compute (float32, bfloat16), e.g. "
                        "scan,scan:dots,unrolled,scan@bfloat16")
    p.add_argument("--keep", default="", help="leave each variant's trace in DIR/<variant>")
    p.add_argument("--json", default="", help="also write the numbers to this file")
    a = p.parse_args(argv)
    import jax
    variants = [v.strip() for v in a.variants.split(",") if v.strip()]
    prepared = {}
    for v in variants:
        head, _, dtype = v.partition("@")
        loop, _, remat = head.partition(":")
        if loop not in ("scan", "unrolled"):
            p.error(f"--variants: {v!r} is not scan or unrolled (with an optional :REMAT and @DTYPE)")
        prepared[v] = Prepared(models.model_config(
            a.model, scan_layers=loop == "scan", remat_policy=remat or "none", dtype=dtype or "float32",
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, max_position_embeddings=max(512, a.seq)), a.batch, a.seq)
    # Wall time with the steps interleaved, so that this VM's drift over minutes hits every variant alike.
    times = {name: [] for name in prepared}
    for _ in range(a.steps):
        for name, prep in prepared.items():
            times[name].append(prep.step())
    rows = {name: {"step_s": statistics.median(times[name]),
                   **profile(prep, a.steps, os.path.join(a.keep, name.replace(":", "-")) if a.keep else "")}
            for name, prep in prepared.items()}
    first = variants[0]
    for r in rows.values():
        r[f"step_over_{first}"] = r["step_s"] / rows[first]["step_s"]
    print(f"{a.model} pretraining step, batch {a.batch}, seq {a.seq}, {a.steps} traced steps, "
          f"{jax.device_count()}x {jax.devices()[0].device_kind}, jax {jax.__version__}, {os.cpu_count()} cores\n")
    print(table(rows))
    print(f"\nstep time / {first}'s (interleaved medians): "
          + ", ".join(f"{name} {r[f'step_over_{first}']:.2f}" for name, r in rows.items()))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
