"""What every suite of benchmarks/run.py shares: the run header, timers, the matmul ceiling, tables, children.

A suite module has `run(args, ceiling) -> dict` returning {"tables": {name: [row, ...]}, "summary": {...}}; run.py
adds the header and writes DIR/<suite>.json and DIR/<suite>.md. Rows are flat dicts of numbers and short strings.
"""
from __future__ import annotations

import datetime
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from importlib import metadata

# Compile times are measured, so JAX's persistent compilation cache (albert_jax/compile_cache.py, which the
# commands and the tests turn on through the environment) is off here and in every child a suite starts.
os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")


# ------------------------------------------------------------------------------------------------ header
def machine() -> dict:
    """CPU model, cores and SIMD flags, from /proc/cpuinfo (no jax import: a parent must not grab a GPU)."""
    info = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(), "avx2": False,
            "avx512": False}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            text = f.read()
        for ln in text.splitlines():
            if ln.startswith("model name"):
                info["cpu"] = ln.split(":", 1)[1].strip()
            if ln.startswith("flags"):
                flags = set(ln.split(":", 1)[1].split())
                info["avx2"], info["avx512"] = "avx2" in flags, any(f.startswith("avx512") for f in flags)
                break
    except OSError:
        pass
    try:  # the accelerator, if any, without initialising a JAX backend
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        if out.returncode == 0 and out.stdout.strip():
            info["gpu"] = out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired):
        pass
    return info


def versions() -> dict:
    out = {"python": platform.python_version()}
    for pkg in ("jax", "jaxlib", "flax", "optax", "torch", "transformers"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def header(argv: list[str]) -> dict:
    cmd = "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], ROOT)] + argv)
    return {"command": cmd, "machine": machine(), "versions": versions(),
            "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")}


# ------------------------------------------------------------------------------------------------ timing
def interleaved_times(fns: dict, reps: int, warmup: int = 1) -> dict[str, list[float]]:
    """Seconds of every call of each function, the systems taking turns (a load change hits all alike).
    Each fn must block until its result is ready."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return times


def interleaved(fns: dict, reps: int, warmup: int = 1) -> dict[str, float]:
    """Median seconds per call of each function, the systems taking turns (`interleaved_times`)."""
    return {k: statistics.median(v) for k, v in interleaved_times(fns, reps, warmup).items()}


def finite_positive(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


# ------------------------------------------------------------------------------------------------ ceiling
def gemm_size(quick: bool) -> int:
    """The ceiling GEMM's side: large enough to run at the library's best rate on the backend."""
    import jax

    on_cpu = jax.default_backend() == "cpu"
    return (512 if quick else 2048) if on_cpu else (1024 if quick else 8192)


def ceiling(quick: bool, dtypes=None) -> dict:
    """The machine's matmul rate in this run: a square GEMM under jax.jit, numpy and torch, median of several.

    The other suites report their FLOP rate as a share of `jax_<dtype>_gflops` (what our code can reach at
    best on this machine, measured now, under the same load)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    on_cpu = jax.default_backend() == "cpu"
    dtypes = tuple(dtypes or (("float32",) if on_cpu else ("float32", "bfloat16")))
    n = gemm_size(quick)
    reps = 3 if quick else 7
    flops = 2.0 * n ** 3
    out = {"n": n, "reps": reps, "backend": jax.default_backend(), "device_kind": jax.devices()[0].device_kind}
    rng = np.random.default_rng(0)
    a32, b32 = rng.standard_normal((n, n), np.float32), rng.standard_normal((n, n), np.float32)
    mm = jax.jit(jnp.matmul)
    fns = {}
    for dt in dtypes:
        a, b = jnp.asarray(a32, dt), jnp.asarray(b32, dt)
        fns[f"jax_{dt}"] = lambda a=a, b=b: mm(a, b).block_until_ready()
    if on_cpu:
        fns["numpy_float32"] = lambda: a32 @ b32
    try:
        import torch
        dev = "cpu" if on_cpu else "cuda"
        ta, tb = torch.from_numpy(a32).to(dev), torch.from_numpy(b32).to(dev)
        sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
        for dt in dtypes:
            x, y = ta.to(getattr(torch, dt)), tb.to(getattr(torch, dt))
            fns[f"torch_{dt}"] = lambda x=x, y=y: (x @ y, sync())
    except ImportError:
        pass
    for k, s in interleaved(fns, reps).items():
        out[f"{k}_gflops"] = flops / s / 1e9
    return out


def gemm_probe(quick: bool = False, dtype: str = "float32"):
    """The ceiling's square jax GEMM as a timed call, compiled and warm: (fn, its FLOPs, n)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    n = gemm_size(quick)
    rng = np.random.default_rng(0)
    a, b = (jnp.asarray(rng.standard_normal((n, n), np.float32), dtype) for _ in range(2))
    mm = jax.jit(jnp.matmul)
    fn = lambda: mm(a, b).block_until_ready()  # noqa: E731
    fn()
    return fn, 2.0 * n ** 3, n


def interleaved_with_ceiling(fns: dict, reps: int, warmup: int = 1, quick: bool = False,
                             dtype: str = "float32") -> tuple[dict[str, float], dict]:
    """`interleaved`, with the ceiling's GEMM (`gemm_probe`) taking its turn in every round: (medians of `fns`,
    a ceiling dict for `share`). This VM's matmul rate drifts by 10-25% within minutes: a ceiling measured once
    before the suites read 315 GFLOP/s where the same GEMM ran at 386-429 minutes later (2026-12-03), which put
    a forward at 116% "of the ceiling". Timed in the same rounds, the two rates share the machine's state.
    The ceiling is the GEMM's best round, not its median: a ceiling is the most the machine gave, and in one
    run the GEMM's median read 176 GFLOP/s, half its rate everywhere else, in the rounds of albert-base's steps."""
    probe, flops, n = gemm_probe(quick, dtype)
    key = f"jax_{dtype}"
    times = interleaved_times({**fns, key: probe}, reps, warmup)
    probe_s = times.pop(key)
    return {k: statistics.median(v) for k, v in times.items()}, probe_ceiling(flops, n, probe_s, dtype)


def probe_ceiling(flops: float, n: int, seconds: list[float], dtype: str = "float32") -> dict:
    """The ceiling dict (for `share`) of a probe GEMM timed in the rounds `seconds`: its best round."""
    return {"n": n, "reps": len(seconds), "interleaved": True, f"jax_{dtype}_gflops": flops / min(seconds) / 1e9}


def share(gflops: float, ceil: dict, dtype: str = "float32") -> float:
    """Achieved rate as a share of the jax matmul ceiling of this run (nan without one)."""
    c = ceil.get(f"jax_{dtype}_gflops") or ceil.get("jax_float32_gflops")
    return gflops / c if c else float("nan")


def rate_fields(batch: int, lengths: list[int], flops_per_token, seconds: float, useful_tokens: float,
                ceil: dict) -> dict:
    """The columns every padded-length comparison reports: batches of `batch` rows at the padded `lengths` took
    `seconds` in all; FLOPs as computed (padding included) at each batch's own length."""
    gflops = sum(batch * n * flops_per_token(n) for n in lengths) / seconds / 1e9
    return {"mean_padded_len": float(sum(lengths) / len(lengths)), "useful_tokens_per_s": useful_tokens / seconds,
            "tflops": gflops / 1e3, "share_of_ceiling": share(gflops, ceil),
            "ceiling_gflops": ceil.get("jax_float32_gflops", float("nan"))}


def hf_dynamic_padding(batches, labels: bool = False) -> list[dict]:
    """HF's usual dynamic padding: each batch of ours cut to its longest row, as torch tensors."""
    import torch

    from albert_jax.data import bucketing

    out = []
    for b in batches:
        n = int(bucketing.row_lengths(b["input_mask"]).max())
        t = {"input_ids": torch.from_numpy(b["input_ids"][:, :n]).long(),
             "attention_mask": torch.from_numpy(b["input_mask"][:, :n]).long(),
             "token_type_ids": torch.from_numpy(b["segment_ids"][:, :n]).long()}
        if labels:
            t["labels"] = torch.from_numpy(b["label"]).long()
        out.append(t)
    return out


# ------------------------------------------------------------------------------------------------ children
def run_child(cmd: list[str], timeout: float, env: dict | None = None) -> tuple[dict | None, str]:
    """Run a child that prints one JSON object as its last stdout line; (that object or None, error tail)."""
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, "PYTHONPATH": ROOT + os.pathsep + BENCH, **(env or {})})
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:.0f} s"
    lines = [ln for ln in p.stdout.strip().splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        return None, f"exit {p.returncode}: " + " | ".join(p.stderr.strip().splitlines()[-4:])
    return json.loads(lines[-1]), ""


def ceiling_in_child(quick: bool, dtypes=None) -> dict:
    """The ceiling measured in a child process, for parents that must not hold the accelerator themselves."""
    code = ("import json, sys; sys.path.insert(0, 'benchmarks'); import common; "
            f"print(json.dumps(common.ceiling({quick!r}, {dtypes!r})))")
    out, err = run_child([sys.executable, "-c", code], timeout=600)
    if out is None:
        raise RuntimeError(f"ceiling child failed: {err}")
    return out


# ------------------------------------------------------------------------------------------------ tokenizer
def tokenizer(path: str = "", quick: bool = False):
    """A SentencePiece model of ours: `path` (a .model, or a workdir holding one), else the one the cpu-scale
    pretraining recipe trains on the English mix (cached by corpus and vocab size: deterministic, and instant
    once built), so sentence lengths, hence padding and bucketing, are those of the project's own runs. `quick`
    (a plumbing check, not a measurement) takes the smoke scale's, trained on its subset: the same vocabulary size
    without the minute the whole mix's training takes on a cold cache."""
    from albert_jax.data.tokenization import load_tokenizer
    if path:
        return load_tokenizer(path)
    from albert_jax.configs.loader import load_config
    from albert_jax.tasks.pretraining import input as pin
    scale = "smoke" if quick else "cpu"
    return pin.corpus_tokenizer(load_config(f"experiments/pretrain.py:scale={scale}").data)


# ------------------------------------------------------------------------------------------------ output
def _fmt(v) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if not math.isfinite(v):
            return "–"
        a = abs(v)
        return f"{v:,.0f}" if a >= 1000 else f"{v:.1f}" if a >= 100 else f"{v:.3g}" if a >= 0.01 else f"{v:.2e}"
    return str(v)


def markdown(suite: str, result: dict) -> str:
    h = result["header"]
    m, v = h["machine"], h["versions"]
    lines = [f"# benchmarks: {suite}", "", f"`{h['command']}`", "",
             f"{h['date']}; {m['cpu']}, {m['cores']} cores, avx2={m['avx2']}, avx512={m['avx512']}"
             + (f"; GPU {m['gpu']}" if m.get("gpu") else ""),
             "; ".join(f"{k} {val}" for k, val in v.items() if val), ""]
    c = result.get("ceiling") or {}
    rates = ", ".join(f"{k[:-7]} {val:,.1f}" for k, val in c.items() if k.endswith("_gflops"))
    if rates:
        lines += [f"Matmul ceiling ({c['n']}² GEMM, median of {c['reps']}, GFLOP/s): {rates}"]
        if any("ceiling_gflops" in row for rows in result.get("tables", {}).values() for row in rows):
            lines += ["(measured before the suite; each row's share_of_ceiling is of the same GEMM timed in that "
                      "row's own rounds, its ceiling_gflops)"]
        lines += [""]
    for name, rows in result["tables"].items():
        if not rows:
            continue
        cols = list(dict.fromkeys(k for r in rows for k in r))
        lines += [f"## {name}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |" for r in rows]
        lines.append("")
    if result.get("summary"):
        lines += ["## summary", ""] + [f"- {k}: {_fmt(val)}" for k, val in result["summary"].items()] + [""]
    return "\n".join(lines)


def write(out_dir: str, suite: str, result: dict) -> None:
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, f"{suite}.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, allow_nan=True)
    with open(os.path.join(out_dir, f"{suite}.md"), "w", encoding="utf-8") as f:
        f.write(markdown(suite, result))


def pretrain_step(c, vocab_size: int):
    """The trainer's jitted LAMB pretraining step for config `c` on one data-parallel mesh of this process's
    devices, and a fresh state: (train(state, batch, rng) -> (state, metrics), state, mesh)."""
    import jax

    from albert_jax import sharding as shd
    from albert_jax.runs.pretrain import model_config_from
    from albert_jax.tasks.pretraining.task import PretrainingTask
    from albert_jax.training import optim
    from albert_jax.training import state as st
    from albert_jax.training import step as ts

    model_cfg = model_config_from(c, vocab_size)
    task = PretrainingTask(c.data.task, c.data.max_seq_length, c.data.max_predictions_per_seq)
    mesh = shd.make_mesh()
    boxed = st.abstract_params(task, model_cfg)
    tx = optim.make_optimizer("lamb", 1e-3, 1000, 10, stacked_axes_fn=optim.stacked_axes_from_boxed(boxed))
    _, shardings = st.state_shardings(tx, mesh, boxed)
    train, _ = ts.jit_steps(task, model_cfg, tx, mesh, shardings)
    return train, st.init_state(task, model_cfg, tx, mesh, jax.random.PRNGKey(0), shardings), mesh
