"""A plan as text: the report of one compile, and the tables of a search or a sweep."""
from __future__ import annotations

from albert_jax.plan.compile import Report

GIB = 2**30


def _gib(x: float | None) -> str:
    return "-" if x is None else f"{x / GIB:.2f}"


def _duration(hours: float) -> str:
    return f"{hours:,.1f} h" if hours < 48 else f"{hours / 24:,.1f} days"


def report(r: Report) -> str:
    m = r.model
    lines = [f"plan: {r.kind} {m.get('preset') or ''} (E={m['E']} H={m['H']} L={m['L']} sharing={m['sharing']}, "
             f"{'scanned' if m['scan_layers'] else 'unrolled'}, remat {m['remat_policy']}, {m['dtype']}) on "
             f"{r.target} ({r.num_devices} x {r.device_kind}), mesh " + " ".join(f"{k}={v}" for k, v in r.mesh.items()),
             f"batch {r.global_batch:,} global ({r.per_device_batch:g} per batch shard"
             + (f", {r.grad_accum_steps} micro-batches" if r.grad_accum_steps > 1 else "")
             + f") x sequence {r.seq_len}, {r.num_train_steps:,} steps"]
    mem = r.memory
    if "arguments" in mem:
        lines.append(f"memory per device: arguments {_gib(mem['arguments'])} GiB, outputs {_gib(mem['outputs'])}, "
                     f"aliased {_gib(mem['aliases'])}, temporaries {_gib(mem['temporaries'])}, code "
                     f"{_gib(mem['code'])}")
    lines.append(r.verdict_line())
    if r.refused:
        lines.append(f"compiler: {r.refused}")
    f = r.flops
    if f:
        xla = f.get("xla_cost_analysis")
        lines.append(f"FLOPs per device per step: {f['per_device'] / 1e12:.3f} TFLOP (dots, loops times their trips; "
                     f"loop bodies once: {f['loop_bodies_once'] / 1e12:.3f}"
                     + (f"; XLA's cost analysis: {xla / 1e12:.3f}" if xla else "") + "); analytic model "
                     f"{f['model_per_device'] / 1e12:.3f} TFLOP, program/model {f['hardware_over_model']:.3f}")
    if r.collectives:
        lines.append("collectives per device per step: " + ", ".join(
            f"{k} x{v['count']:g} {v['bytes'] / 2**20:,.1f} MiB" for k, v in r.collectives.items()))
    elif f:
        lines.append("collectives: none")
    ro = r.roofline
    if ro:
        lines.append(f"roofline: {ro['step_seconds'] * 1e3:,.1f} ms/step, {ro['bound']}-bound (FLOPs "
                     f"{ro['flop_seconds'] * 1e3:,.1f} ms at {ro['peak_flops'] / 1e12:g} TFLOP/s, HBM "
                     f"{ro['hbm_seconds'] * 1e3:,.1f} ms for {ro['hbm_bytes'] / GIB:,.1f} GiB at "
                     f"{ro['hbm_bandwidth'] / 1e9:,.0f} GB/s)")
        if r.xla:
            lines.append(f"XLA optimal_seconds: {r.xla['optimal_seconds_corrected'] * 1e3:,.1f} ms corrected (raw "
                         f"{r.xla['optimal_seconds']:.4g} s with {r.xla['custom_calls']} custom calls at -1 each, "
                         "loop bodies once)")
        lines.append(f"predicted: MFU {ro['mfu']:.0%}, {ro['tokens_per_second']:,.0f} tokens/s; "
                     f"{r.num_train_steps:,} steps in {_duration(ro['train_hours'])}, "
                     f"{ro['chip_hours']:,.0f} chip-hours ({r.num_chips:g} chips)")
    if r.attention:
        lines.append(f"attention: {r.attention}")
    lines.append(f"compile: {r.compile_seconds:.1f} s")
    return "\n".join(lines)


def table(rows: list[tuple[str, Report | None, str]], best: int | None = None) -> str:
    """One line per compiled setting: (label, report or None, error)."""
    out = ["| setting | memory/device GiB | usable GiB | fits | step ms (roofline) | bound | MFU | days for the "
           "run | chip-hours |", "|---|---:|---:|---|---:|---|---:|---:|---:|"]
    for i, (label, r, err) in enumerate(rows):
        mark = " **best**" if i == best else ""
        if r is None:
            out.append(f"| {label}{mark} | - | - | {err} | - | - | - | - | - |")
            continue
        ro = r.roofline
        fits = "yes" if r.fits else "no"
        if ro:
            out.append(f"| {label}{mark} | {_gib(r.memory.get('total'))} | {_gib(r.usable_bytes)} | {fits} | "
                       f"{ro['step_seconds'] * 1e3:,.0f} | {ro['bound']} | {ro['mfu']:.0%} | "
                       f"{ro['train_hours'] / 24:,.2f} | {ro['chip_hours']:,.0f} |")
        else:
            out.append(f"| {label}{mark} | {_gib(r.memory.get('total'))} | {_gib(r.usable_bytes)} | {fits} | - | - "
                       "| - | - | - |")
    return "\n".join(out)
