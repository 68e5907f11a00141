"""Honest training metrics: MFU from a FLOP model and a peak table, JSONL + TensorBoard writers, throughput.

MFU (reference/performance.md §0) = flops_per_token * tokens_per_second / (n_devices * peak_dense_flops). The FLOP
count per token comes from the model config (shared layers counted once per *applied* layer: sharing saves
parameters, not compute). Peaks are dense bf16 spec numbers (performance.md §4.2), never measured ceilings, so MFU
is comparable with MaxText / llm-foundry tables.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import sys
import time
from typing import Any, Mapping, TextIO

import numpy as np
from tqdm import tqdm

from albert_jax.training import rundir

log = logging.getLogger(__name__)

PEAK_FLOPS_ENV = "ALBERT_JAX_PEAK_FLOPS"

# (regex searched in the lower-cased jax `device_kind`, dense bf16 FLOP/s per device). First match wins, so the
# variants with a different peak come before the family name. H100/H200 PCIe and NVL parts have lower clocks than
# the SXM figure below, and TPU v5e ("TPU v5 lite") is a different chip from v5p ("TPU v5"): those map to None
# (unknown: set the peak explicitly) rather than to a wrong number that would misstate MFU.
_PEAK_RULES: tuple[tuple[str, float | None], ...] = (
    (r"h[12]00.*(pcie|nvl)", None),
    (r"h100", 989e12),
    (r"h200", 989e12),
    (r"a100", 312e12),
    (r"tpu v5 ?lite|tpu v5e", None),
    (r"tpu v5p|tpu v5$", 459e12),
    (r"tpu v6 ?lite|tpu v6e", 918e12),
    (r"tpu v4", 275e12),
    (r"tpu v3", 123e12),
)


def peak_flops_per_device(device_kind: str | None = None, override: float | None = None) -> float | None:
    """Dense bf16 peak FLOP/s of one device: `override`, else $ALBERT_JAX_PEAK_FLOPS, else the table.

    device_kind defaults to `jax.devices()[0].device_kind`. Returns None (and logs why) when the device is not in
    the table -- CPUs included, whose peak depends on the host and on how many simulated devices share its cores --
    so callers report no MFU instead of an invented one.
    """
    if override is not None:
        return _positive(override, "peak override")
    env = os.environ.get(PEAK_FLOPS_ENV)
    if env:
        try:
            return _positive(float(env), f"${PEAK_FLOPS_ENV}")
        except ValueError as e:
            raise ValueError(f"${PEAK_FLOPS_ENV}={env!r}: expected a positive FLOP/s number like 157e9 ({e})") from None
    if device_kind is None:
        import jax  # noqa: PLC0415  heavy: jax

        device_kind = jax.devices()[0].device_kind
    kind = device_kind.lower().strip()
    for pattern, peak in _PEAK_RULES:
        if re.search(pattern, kind):
            if peak is None:
                break
            return peak
    if device_kind not in _WARNED:  # once per process: a fine-tuning run would otherwise say it for every seed
        _WARNED.add(device_kind)
        log.warning("no peak FLOP/s known for device kind %r: MFU is not reported; set $%s (FLOP/s per device) or "
                    "pass the peak explicitly", device_kind, PEAK_FLOPS_ENV)
    return None


_WARNED: set = set()


def _positive(value: float, what: str) -> float:
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{what} must be a positive finite number, got {value}")
    return float(value)


def flops_per_second_per_device(flops_per_token: float, tokens_per_second: float, n_devices: int) -> float:
    """Achieved model FLOP/s per device."""
    if n_devices <= 0:
        raise ValueError(f"n_devices must be >= 1, got {n_devices}")
    return flops_per_token * tokens_per_second / n_devices


def mfu(flops_per_token: float, tokens_per_second: float, n_devices: int, peak_flops_per_device: float) -> float:
    """Model FLOP utilisation, a fraction (0.4 = 40%)."""
    _positive(peak_flops_per_device, "peak_flops_per_device")
    return flops_per_second_per_device(flops_per_token, tokens_per_second, n_devices) / peak_flops_per_device


# ----------------------------------------------------------------------------------------------------------------
# Writers


def _scalar(key: str, value: Any) -> int | float | bool:
    """A plain Python number; device arrays are fetched here (so write only what is already computed)."""
    if isinstance(value, (bool, int, float)):
        return value
    arr = np.asarray(value)
    if arr.shape != () or arr.dtype.kind not in "biuf":
        raise TypeError(f"metric {key!r} must be a real scalar; got dtype {arr.dtype}, shape {arr.shape}")
    return arr.item()


def _summary_writer():
    """tensorboardX's SummaryWriter, imported without torch. tensorboardX imports torch whenever it is installed
    (it is, for the HF parity tests and export) only to accept torch tensors; we log floats, and the import cost
    ~4 s on every run. Where torch is already loaded this changes nothing."""
    hidden = "torch" not in sys.modules
    if hidden:
        sys.modules["torch"] = None  # `import torch` raises ImportError: tensorboardX takes its numpy-only path
    try:
        from tensorboardX import SummaryWriter  # noqa: PLC0415  heavy: tensorboardX, imported with torch hidden
    finally:
        if hidden and sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return SummaryWriter


class MetricWriter:
    """One JSON object per line (`{"step": s, ...}`) in workdir/metrics.jsonl plus TensorBoard scalars in workdir/tb.

    The JSONL file is appended to, so a resumed run continues it. Only the writing process (by default process 0)
    touches the disk; on other processes every call is a no-op, so the loop can call it unconditionally.
    NaN/inf are written as JSON's NaN/Infinity tokens (Python's json reads them back): a diverged loss stays visible.
    """

    def __init__(self, workdir: str | os.PathLike, *, filename: str = rundir.METRICS, tensorboard: bool = True,
                 enabled: bool | None = None):
        if enabled is None:
            import jax  # noqa: PLC0415  heavy: jax

            enabled = jax.process_index() == 0
        self.enabled = enabled
        self.path = os.path.join(os.fspath(workdir), filename)
        self._file: TextIO | None = None
        self._tb = None
        if not enabled:
            return
        os.makedirs(workdir, exist_ok=True)
        # Line-buffered: a record is on disk once written, so a killed run loses no logged step.
        self._file = open(self.path, "a", encoding="utf-8", buffering=1)
        if tensorboard:
            self._tb = _summary_writer()(logdir=os.path.join(os.fspath(workdir), "tb"), flush_secs=30)

    def write(self, step: int, metrics: Mapping[str, Any]) -> None:
        if not self.enabled:
            return
        if self._file is None:
            raise RuntimeError(f"MetricWriter for {self.path} is closed")
        if "step" in metrics:
            raise ValueError("metric name 'step' is reserved (it is the record's key)")
        record = {"step": int(step)}
        record.update({k: _scalar(k, v) for k, v in metrics.items()})
        self._file.write(json.dumps(record) + "\n")
        if self._tb is not None:
            for k, v in record.items():
                if k != "step":
                    self._tb.add_scalar(k, float(v), global_step=record["step"])

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()
        if self._tb is not None:
            self._tb.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._tb is not None:
            self._tb.close()
            self._tb = None

    def __enter__(self) -> "MetricWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ----------------------------------------------------------------------------------------------------------------
# Throughput


class RunClock:
    """Wall-clock and CPU seconds a run has spent, carried across resumes: `elapsed()` adds what this process spent
    to what the run's earlier processes recorded (`wall_s`/`cpu_s` of the last kept metrics record). CPU seconds are
    the process's user + system time over all its threads (XLA's included), so a run that shares the machine reads
    about the same cost as one that has it alone: learning curves are plotted against them (docs/reproduction.md,
    "Choosing the cpu scale"). Compilation and evaluation count: they are part of what a recipe costs."""

    def __init__(self, wall_s: float = 0.0, cpu_s: float = 0.0):
        self._wall0, self._cpu0 = time.perf_counter() - wall_s, time.process_time() - cpu_s

    @classmethod
    def resumed_from(cls, records: list[dict[str, Any]]) -> "RunClock":
        timed = [r for r in records if "wall_s" in r]
        last = timed[-1] if timed else {}
        return cls(float(last.get("wall_s", 0.0)), float(last.get("cpu_s", 0.0)))

    def elapsed(self) -> dict[str, float]:
        return {"wall_s": time.perf_counter() - self._wall0, "cpu_s": time.process_time() - self._cpu0}


class ThroughputMeter:
    """Tokens/s, sequences/s and step time over the steps since the last `rates()`, excluding compile steps.

    Call `step(tokens, sequences)` when a step has *finished* (its outputs fetched); with asynchronous dispatch a
    timestamp taken before that measures dispatch, not compute. The first `skip_first` steps only set the clock:
    they include tracing and compilation.
    """

    def __init__(self, skip_first: int = 1):
        if skip_first < 0:
            raise ValueError(f"skip_first must be >= 0, got {skip_first}")
        self._skip = skip_first
        self._last: float | None = None if skip_first else time.perf_counter()
        self._reset_window()

    def _reset_window(self) -> None:
        self._steps = 0
        self._tokens = 0
        self._real_tokens: float | None = None
        self._sequences = 0
        self._flops = 0.0
        self._seconds = 0.0

    def step(self, tokens: int, sequences: int, flops: float = 0.0, real_tokens: float | None = None,
             new_program: bool = False) -> None:
        """One finished step of `tokens` (as computed, padding included), `sequences` and model `flops`.
        real_tokens: the step's unpadded tokens, when the task counts them (padding and packing show).
        new_program: the step compiled (or read from the cache) a program of a new shape, as a bucketed run's first
        batch of each length does; like the first steps it only sets the clock."""
        now = time.perf_counter()
        if self._skip > 0 or new_program:
            self._skip = max(self._skip - 1, 0)
            self._last = now
            return
        self._steps += 1
        self._tokens += tokens
        if real_tokens is not None:
            self._real_tokens = (self._real_tokens or 0.0) + real_tokens
        self._sequences += sequences
        self._flops += flops
        self._seconds += now - self._last
        self._last = now

    def rates(self, reset: bool = True) -> dict[str, float] | None:
        """{'tokens_per_second', 'sequences_per_second', 'step_time'} for the window, with 'flops_per_second' and
        'real_tokens_per_second' when steps gave them; None if nothing measured."""
        if self._steps == 0 or self._seconds <= 0:
            return None
        out = {
            "tokens_per_second": self._tokens / self._seconds,
            "sequences_per_second": self._sequences / self._seconds,
            "step_time": self._seconds / self._steps,
        }
        if self._flops:
            out["flops_per_second"] = self._flops / self._seconds
        if self._real_tokens is not None:
            out["real_tokens_per_second"] = self._real_tokens / self._seconds
        if reset:
            self._reset_window()
        return out

    def pause(self) -> None:
        """Restart the clock (call after evaluation or a checkpoint save, so it is not counted as training time)."""
        if self._last is not None:
            self._last = time.perf_counter()


# ----------------------------------------------------------------------------------------------------------------
# Progress bar


def progress_bar(total: int, initial: int = 0, desc: str = "train", stream: TextIO | None = None,
                 enabled: bool | None = None):
    """A tqdm bar on a terminal; a silent no-op bar (same methods) when output is a file/pipe or not process 0.

    Logs redirected to a file then hold the metric lines, not carriage-return noise.
    """
    stream = sys.stdout if stream is None else stream
    if enabled is None:
        import jax  # noqa: PLC0415  heavy: jax

        enabled = jax.process_index() == 0
    is_tty = hasattr(stream, "isatty") and stream.isatty()
    return tqdm(total=total, initial=initial, desc=desc, file=stream, disable=not (enabled and is_tty),
                dynamic_ncols=True, smoothing=0.1)

