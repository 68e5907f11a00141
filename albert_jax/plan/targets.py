"""Compile targets that are not attached: TPU slices from libtpu's compile-only devices, GPUs from a target config.

Spellings: `tpu:<gen>:<topology>` (`tpu:v3:8x8`, `tpu:v5e:16x16`, `tpu:v4:4x4x8`), several slices with
`tpu:v5e:16x16:slices=2` (the data axis then spans the slices, as multislice training lays it out), and
`gpu:<chip>x<count>` (`gpu:h100x8`, `gpu:h200x8`; `gpu:h100` is one).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
from pathlib import Path
from typing import Any

from albert_jax.plan.chips import CHIPS, Chip

GPU_TARGETS = Path(__file__).parent / "gpu_targets"
_TPU = re.compile(r"^tpu:(v\d+[a-z]?):(\d+(?:x\d+)+)(?::slices=(\d+))?$")
_GPU = re.compile(r"^gpu:([a-z]\d+)(?:x(\d+))?$")
EXAMPLES = "tpu:v3:8x8, tpu:v5e:16x16, tpu:v4:4x4x8, tpu:v5e:16x16:slices=2, gpu:h100x8, gpu:h200x8"
TPU_INSTALL = "pip install 'jax[tpu]==0.10.2' (libtpu 0.0.42.1), or `make accel` and use .venv-accel/bin/albert-jax"
GPU_INSTALL = ("pip install --no-deps jax-cuda12-plugin==0.10.2 jax-cuda12-pjrt==0.10.2 nvidia-cuda-nvcc-cu12==12.9.86,"
               " or `make accel` and use .venv-accel/bin/albert-jax")


class TargetError(ValueError):
    """A target that cannot be spelled or compiled for here; the message says what to install or type."""


@dataclasses.dataclass(frozen=True)
class Target:
    spec: str
    chip: Chip
    devices: tuple  # compile-only devices
    slices: int = 1

    @property
    def num_devices(self) -> int:
        return len(self.devices)

    @property
    def num_chips(self) -> float:
        return self.num_devices / self.chip.devices_per_chip


@dataclasses.dataclass(frozen=True)
class Spec:
    platform: str
    chip: str
    topology: str  # TPU: '8x8'; GPU: the device count
    slices: int = 1


def parse(spec: str) -> Spec:
    m = _TPU.match(spec)
    if m:
        gen, topo, slices = m.group(1), m.group(2), int(m.group(3) or 1)
        if gen not in CHIPS or CHIPS[gen].platform != "tpu":
            raise TargetError(f"--target {spec}: unknown TPU generation {gen!r}; known: "
                              f"{', '.join(k for k, c in CHIPS.items() if c.platform == 'tpu')}")
        if slices < 1:
            raise TargetError(f"--target {spec}: slices must be at least 1")
        return Spec("tpu", gen, topo, slices)
    m = _GPU.match(spec)
    if m:
        chip, count = m.group(1), int(m.group(2) or 1)
        if chip not in CHIPS or CHIPS[chip].platform != "gpu":
            raise TargetError(f"--target {spec}: unknown GPU {chip!r}; known: "
                              f"{', '.join(k for k, c in CHIPS.items() if c.platform == 'gpu')}")
        if count < 1 or (count > 8 and count % 8):
            raise TargetError(f"--target {spec}: a GPU count of 1 to 8, or a multiple of 8 (whole 8-GPU hosts)")
        return Spec("gpu", chip, str(count))
    raise TargetError(f"--target {spec!r}: expected tpu:<gen>:<topology>[:slices=N] or gpu:<chip>x<count>, "
                      f"e.g. {EXAMPLES}")


def _require(module: str, what: str, install: str) -> None:
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package (jax_plugins, nvidia) is missing too
        found = False
    if not found:
        raise TargetError(f"{what} is not installed in this environment ({module}): {install}")


def resolve(spec: str) -> Target:
    """The compile-only devices of `spec`. Needs libtpu (TPU) or the CUDA plugin and ptxas (GPU)."""
    s = parse(spec)
    # The CPU backend stays the default: these devices are only compiled for, never run on.
    import jax  # noqa: PLC0415  heavy: jax
    from jax.experimental import topologies  # noqa: PLC0415  heavy: jax

    # A compile-only executable cannot be read back from JAX's persistent cache (no client to load it into): each
    # entry would be written, fail to load next time ("PjRtCompiler must be constructed with a Client") and be
    # compiled again. Plans compile without it.
    jax.config.update("jax_enable_compilation_cache", False)
    if not jax.config.jax_platforms:
        jax.config.update("jax_platforms", "cpu")  # never probe for the TPU or GPU runtime: only their compilers

    if s.platform == "tpu":
        _require("libtpu", "the TPU compiler libtpu", TPU_INSTALL)
        # a second process that loads libtpu at the same time (a test worker, another plan) needs this
        os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
        try:
            topo = topologies.get_topology_desc(platform="tpu", topology_name=f"{s.chip}:{s.topology}",
                                                num_slices=s.slices)
        except Exception as e:  # noqa: BLE001 - libtpu's errors are RuntimeErrors/XlaRuntimeErrors with its words
            raise TargetError(f"--target {spec}: libtpu has no such topology ({str(e).splitlines()[0]}); "
                              f"e.g. {EXAMPLES}") from None
        return Target(spec, CHIPS[s.chip], tuple(topo.devices), s.slices)
    _require("jax_plugins.xla_cuda12", "the CUDA plugin for jax (jax-cuda12-plugin, jax-cuda12-pjrt)", GPU_INSTALL)
    _require("nvidia.cuda_nvcc", "ptxas (nvidia-cuda-nvcc-cu12)", GPU_INSTALL)
    count = int(s.topology)
    hosts, per_host = (count // 8, 8) if count > 8 else (1, count)
    config = (GPU_TARGETS / f"{s.chip}.txtpb").read_text(encoding="utf-8")
    topo = topologies.get_topology_desc(platform="cuda", target_config=config, topology=f"1x{hosts}x{per_host}")
    return Target(spec, CHIPS[s.chip], tuple(topo.devices))


def describe(devices: Any) -> str:
    d = devices[0]
    return f"{len(devices)} x {getattr(d, 'device_kind', '?')}"
