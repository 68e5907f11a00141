"""The accelerators a plan targets: per-device memory the compiler lets a program use, peak matmul rate and HBM
bandwidth. The one place these numbers live; each carries its source.

A "device" is what JAX sees: a TPU v2/v3 core (two per chip), a v4/v5p megacore chip, a v5e/v6e chip, one GPU.
"""
from __future__ import annotations

import dataclasses

GIB = 2**30


@dataclasses.dataclass(frozen=True)
class Chip:
    name: str
    platform: str  # tpu | gpu
    devices_per_chip: int
    usable_bytes: float  # per device: what a program may use (the TPU compiler's limit; GPUs: see below)
    hbm_bytes: float  # per device, as sold
    peak_bf16: float  # FLOP/s per device, dense
    peak_f32: float  # FLOP/s per device for float32 matmuls at JAX's default precision
    hbm_bandwidth: float  # bytes/s per device
    price_note: str = ""


# A GPU program gets the memory XLA's allocator takes at start: 75% of the device by default
# (XLA_PYTHON_CLIENT_MEM_FRACTION, jax docs "GPU memory allocation"). The verdict is against that.
GPU_MEM_FRACTION = 0.75

CHIPS = {c.name: c for c in (
    # TPU usable memory: the per-device limit in the compiler's own RESOURCE_EXHAUSTED message ("Used X of 15.48G
    # hbm", binary units), read from forced out-of-memory compiles with libtpu 0.0.42.1. Peaks and bandwidth: Cloud
    # TPU system-architecture pages, per chip, divided by the devices per chip. On TPU, JAX's default precision
    # multiplies float32 in one bf16 pass, so f32 matmuls run at the bf16 peak.
    # v2: 45 TFLOP/s and 600 GB/s per chip (2 cores, 8 GiB each); cloud.google.com/tpu/docs/v2
    Chip("v2", "tpu", 2, 7.48 * GIB, 8 * GIB, 22.5e12, 22.5e12, 300e9),
    # v3: 123 TFLOP/s and 900 GB/s per chip (2 cores, 16 GiB each); cloud.google.com/tpu/docs/v3
    Chip("v3", "tpu", 2, 15.48 * GIB, 16 * GIB, 61.5e12, 61.5e12, 450e9),
    # v4: 275 TFLOP/s, 32 GiB, 1,200 GB/s per chip; cloud.google.com/tpu/docs/v4. libtpu 0.0.42.1's v4
    # topologies expose each of the chip's two cores as a device (v4:4x4x8: 256 devices), 15.25 GiB each.
    Chip("v4", "tpu", 2, 15.25 * GIB, 16 * GIB, 137.5e12, 137.5e12, 600e9),
    # v5e: 197 TFLOP/s, 16 GB, 819 GB/s; cloud.google.com/tpu/docs/v5e
    Chip("v5e", "tpu", 1, 15.75 * GIB, 16e9, 197e12, 197e12, 819e9),
    # v5p: 459 TFLOP/s, 95 GB, 2,765 GB/s; cloud.google.com/tpu/docs/v5p
    Chip("v5p", "tpu", 1, 95.74 * GIB, 95e9, 459e12, 459e12, 2765e9),
    # v6e (Trillium): 918 TFLOP/s, 32 GB, 1,640 GB/s; cloud.google.com/tpu/docs/v6e
    Chip("v6e", "tpu", 1, 31.25 * GIB, 32e9, 918e12, 918e12, 1640e9),
    # H100 SXM: 989 TFLOP/s dense bf16, 495 dense TF32 (JAX's default for float32 matmuls on GPU), 80 GB at
    # 3.35 TB/s; NVIDIA H100 product page. Memory: the device_memory_size of its target config (79.1 GiB).
    Chip("h100", "gpu", 1, GPU_MEM_FRACTION * 84942979072, 84942979072, 989e12, 494.5e12, 3.35e12),
    # H200 SXM: the H100's compute with 141 GB at 4.8 TB/s; NVIDIA H200 product page. 143,771,336,704 bytes as
    # the device reports it.
    Chip("h200", "gpu", 1, GPU_MEM_FRACTION * 143771336704, 143771336704, 989e12, 494.5e12, 4.8e12),
)}


def peak(chip: Chip, dtype: str) -> float:
    """The matmul peak for a model computing in `dtype`."""
    return chip.peak_f32 if dtype == "float32" else chip.peak_bf16
