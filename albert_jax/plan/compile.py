"""Plan a run for a target it cannot see: the trainer's own step compiled for that target's devices, with its memory
per device and a fit verdict, FLOPs counted through every loop, collectives, and a roofline step time.

`plan(config, target)` takes the config `pretrain`, `finetune` or `distill` would take. The step comes from
`training.program.build`, the builder the training loop uses, over a mesh of the target's compile-only devices.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import re
import time
from typing import Any

from albert_jax.configs import schema
from albert_jax.plan import chips as chip_table
from albert_jax.plan import hlo
from albert_jax.plan.targets import Target
from albert_jax.runs import validate

# The TPU compiler's words when a program does not fit: "Used 20.51G of 15.48G hbm. Exceeded hbm capacity by 5.03G."
# or "the total memory required for HLO temporaries (15.83G) exceeds available HBM (15.75G)".
_OOM = (re.compile(r"Used ([\d.]+)([KMGT]?) of ([\d.]+)([KMGT]?) hbm"),
        re.compile(r"required for [^(]*\(([\d.]+)([KMGT]?)\) exceeds available HBM \(([\d.]+)([KMGT]?)\)"))
_UNIT = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


class DoesNotFit(ValueError):
    """The compiler refused the program for lack of memory; `report` holds what is known."""

    def __init__(self, report: "Report"):
        super().__init__(report.verdict_line())
        self.report = report


@dataclasses.dataclass
class Report:
    target: str
    device_kind: str
    num_devices: int
    num_chips: float
    mesh: dict
    kind: str  # pretrain | finetune | distill
    model: dict  # E, H, L, sharing, scan_layers, remat_policy, dtype
    global_batch: int
    seq_len: int
    grad_accum_steps: int
    num_train_steps: int
    usable_bytes: float
    memory: dict = dataclasses.field(default_factory=dict)  # per device: arguments, outputs, aliases, temporaries
    fits: bool | None = None
    margin_bytes: float | None = None
    refused: str = ""  # the compiler's out-of-memory message, when it refused
    flops: dict = dataclasses.field(default_factory=dict)
    hbm_bytes: float = 0.0
    collectives: dict = dataclasses.field(default_factory=dict)
    roofline: dict = dataclasses.field(default_factory=dict)
    xla: dict = dataclasses.field(default_factory=dict)
    custom_call_targets: dict = dataclasses.field(default_factory=dict)
    attention: str = ""
    compile_seconds: float = 0.0
    step_sha256: str = ""  # of the lowered program (StableHLO): equal for the same step on any device kind

    @property
    def per_device_batch(self) -> float:
        return self.global_batch / (self.mesh["data"] * self.mesh["fsdp"])

    def verdict_line(self) -> str:
        used = self.memory.get("total", 0.0)
        gib = 2**30
        if self.fits:
            return (f"fits: {used / gib:.2f} GiB of {self.usable_bytes / gib:.2f} GiB per device "
                    f"({self.margin_bytes / gib:.2f} GiB to spare)")
        return (f"does not fit: {used / gib:.2f} GiB per device, {self.usable_bytes / gib:.2f} GiB usable on "
                f"{self.target} ({-self.margin_bytes / gib:.2f} GiB over)"
                + (" (the TPU compiler's own out-of-memory refusal)" if self.refused else ""))

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["per_device_batch"] = self.per_device_batch
        d["verdict"] = self.verdict_line()
        return d


def task_and_model(config) -> tuple[Any, Any]:
    """The task and model the run would train, from its config alone (no data read)."""
    kind = schema.kind_of(config)
    if kind == "pretrain":
        from albert_jax.runs.pretrain import task_and_model as pretrain_inputs  # noqa: PLC0415  heavy: jax, optax
        return pretrain_inputs(config, config.data.vocab_size)
    # distill: the student's step; its soft-target term adds elementwise work only (runs/distill.py)
    from albert_jax.runs.finetune import planned_task_and_model  # noqa: PLC0415  heavy: grain, jax
    return planned_task_and_model(config)


def _memory(compiled) -> dict:
    m = compiled.memory_analysis()
    out = {"arguments": float(m.argument_size_in_bytes), "outputs": float(m.output_size_in_bytes),
           "aliases": float(m.alias_size_in_bytes), "temporaries": float(m.temp_size_in_bytes),
           "code": float(getattr(m, "generated_code_size_in_bytes", 0) or 0)}
    # The donated state's outputs reuse its argument buffers (aliases): counted once.
    out["total"] = out["arguments"] + out["outputs"] - out["aliases"] + out["temporaries"] + out["code"]
    return out


def program_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def plan(config, target: Target) -> Report:
    """Compile the run `config` describes for `target`. Raises DoesNotFit when the TPU compiler refuses it."""
    from albert_jax import sharding as shd  # noqa: PLC0415  heavy: jax
    from albert_jax.training import program  # noqa: PLC0415  heavy: jax, optax

    kind = schema.kind_of(config)
    validate.check_devices(config, num_devices=target.num_devices, num_processes=1)
    task, model_cfg = task_and_model(config)
    t, seq = config.train, int(config.data.max_seq_length)
    mesh = shd.make_mesh(config.mesh.data, config.mesh.fsdp, config.mesh.tensor, devices=target.devices)
    sizes = dict(mesh.shape)
    if target.slices > 1 and sizes["data"] % target.slices:
        raise ValueError(f"mesh.data={sizes['data']} does not divide by the {target.slices} slices of {target.spec}: "
                         "the data axis spans the slices")
    report = Report(
        target=target.spec, device_kind=str(getattr(target.devices[0], "device_kind", "?")),
        num_devices=target.num_devices, num_chips=target.num_chips, mesh=sizes, kind=kind,
        model={"preset": config.get("model_preset", ""), "E": model_cfg.embedding_size, "H": model_cfg.hidden_size,
               "L": model_cfg.num_hidden_layers, "sharing": model_cfg.sharing, "scan_layers": model_cfg.scan_layers,
               "remat_policy": model_cfg.remat_policy, "dtype": model_cfg.dtype},
        global_batch=int(t.batch_size), seq_len=seq, grad_accum_steps=int(t.grad_accum_steps),
        num_train_steps=int(t.num_train_steps), usable_bytes=target.chip.usable_bytes)
    prog = program.build(task, model_cfg, t, mesh)
    batch = program.abstract_batch(task, int(t.batch_size), seq, prog.batch_sh)
    lowered = prog.train_step.lower(prog.abstract_state, batch, program.abstract_rng(mesh))
    report.step_sha256 = program_hash(lowered.as_text())
    started = time.perf_counter()
    try:
        compiled = lowered.compile()
    except Exception as e:  # noqa: BLE001 - XlaRuntimeError; anything but an out-of-memory refusal is re-raised
        m = _OOM[0].search(str(e)) or _OOM[1].search(str(e))
        if "RESOURCE_EXHAUSTED" not in str(e) or not m:
            raise
        report.compile_seconds = time.perf_counter() - started
        used = float(m.group(1)) * _UNIT[m.group(2)]
        report.usable_bytes = float(m.group(3)) * _UNIT[m.group(4)]
        report.memory = {"total": used}
        report.fits, report.margin_bytes = False, report.usable_bytes - used
        report.refused = str(e).strip().splitlines()[0][:300]
        raise DoesNotFit(report) from None
    report.compile_seconds = time.perf_counter() - started
    report.memory = _memory(compiled)
    report.margin_bytes = report.usable_bytes - report.memory["total"]
    report.fits = report.margin_bytes >= 0
    _costs(report, compiled, task, model_cfg, target)
    return report


def _costs(report: Report, compiled, task, model_cfg, target: Target) -> None:
    a = hlo.analyse(compiled.as_text())
    xla = hlo.xla_costs(compiled)
    tokens = report.global_batch * report.seq_len
    # the FLOP model the training loop's MFU uses (AlbertConfig.flops_per_token with the task's options)
    model_flops = model_cfg.flops_per_token(report.seq_len, **task.flop_options()) * tokens / report.num_devices
    report.flops = {"per_device": a.flops, "loop_bodies_once": a.flops_once, "model_per_device": model_flops,
                    "hardware_over_model": a.flops / model_flops if model_flops else math.nan,
                    "xla_cost_analysis": xla.get("flops")}
    report.hbm_bytes = a.bytes
    report.collectives = a.collectives
    report.custom_call_targets = a.custom_call_targets
    report.attention = attention_kind(a.custom_call_targets, target.chip.platform)
    peak = chip_table.peak(target.chip, model_cfg.dtype)
    # HBM bytes: XLA's own count where it has one (it knows which buffers stay on chip), its loop bodies scaled by
    # their trips as our own count of the same program scales; ours alone otherwise (the GPU compile).
    bytes_ = xla["bytes accessed"] * a.bytes / a.bytes_once if xla.get("bytes accessed") and a.bytes_once else a.bytes
    flop_s, byte_s = a.flops / peak, bytes_ / target.chip.hbm_bandwidth
    step = max(flop_s, byte_s)
    report.roofline = {"peak_flops": peak, "hbm_bandwidth": target.chip.hbm_bandwidth, "flop_seconds": flop_s,
                       "hbm_bytes": bytes_, "hbm_seconds": byte_s, "step_seconds": step,
                       "bound": "compute" if flop_s >= byte_s else "memory",
                       "mfu": model_flops / (step * peak) if step else math.nan,
                       "tokens_per_second": tokens / step if step else math.nan,
                       "train_hours": report.num_train_steps * step / 3600,
                       "chip_hours": report.num_train_steps * step / 3600 * report.num_chips}
    if "optimal_seconds" in xla:
        raw = xla["optimal_seconds"]
        # each custom call was priced -1; the loop bodies once, as their FLOPs were
        fixed = (raw + a.custom_calls) * (a.flops / a.flops_once if a.flops_once else 1.0)
        report.xla = {"optimal_seconds": raw, "custom_calls": a.custom_calls, "optimal_seconds_corrected": fixed}


def attention_kind(targets: dict, platform: str) -> str:
    """Which attention the program holds: a fused custom call (cuDNN flash attention on GPU), or XLA's own ops."""
    fused = [t for t in targets if "fmha" in t.lower() or "flash" in t.lower() or "attention" in t.lower()]
    if fused:
        return f"fused custom call ({', '.join(sorted(fused))})"
    return "XLA dot + softmax + dot (no fused attention kernel)"
