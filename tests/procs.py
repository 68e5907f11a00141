"""How the suite starts JAX: its own processes and the `albert-jax` processes it launches.

The tests check behaviour, never speed (benchmarks measure that, docs/benchmarks.md), and most of a test's time is
XLA compiling tiny programs on one core. LLVM's optimisation level 0 compiles the same programs about a third faster
(tests/test_formulations.py with test_model.py: 167 s of CPU at the default level, 109 s at 0) and computes the same
functions. Turning XLA's CPU fusion emitters off as well (`--xla_cpu_use_fusion_emitters=false`) takes a third less
again: test_model.py 52 s of CPU -> 36 s, test_formulations.py with test_layers.py 68 s -> 46 s (2026-12-04, one
core, empty XLA cache). One LLVM module per program (`--xla_cpu_parallel_codegen_split_count=1`) takes another eighth:
XLA splits a program's code generation into parallel parts for a machine with idle cores, and under the suite's workers
there are none (Table 3's smoke sweep, one core, empty XLA cache: 74.8 s -> 64.0 s). Every comparison a test makes runs
both sides under the same flags.

The `albert-jax` processes the tests start also keep every compiled program in the persistent compilation cache
(`CACHE_EVERY_PROGRAM`), not only those over the CLI's 0.5 s: at these flags most of a run's programs compile in less,
and the same tiny models recur in test after test and row after row (Table 3's smoke sweep, empty cache: 78.6 s ->
72.5 s). Not the pytest processes themselves: a test computing op by op would write a cache entry per operation
(test_optim.py with test_packing.py, one core: 34 s -> 61 s).

Every test process, and every process a test starts, runs its BLAS and OpenMP on one thread (`ONE_THREAD`, set by
conftest.py before numpy is imported): the suite's three workers and their children already ask more of the 2
cores than they have, and OpenBLAS's extra threads spin while they wait for work. Five of the heaviest files under
three workers: 315 and 318 s -> 288 and 281 s of wall time, 572 -> 512 s of CPU (docs/benchmarks.md, "Test suite").
XLA's own thread pool was left as it is: one thread there changed nothing measurable (279 s).
Standard library only: conftest.py imports this before jax."""
from __future__ import annotations

import os

FAST_COMPILE = ("--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false "
                "--xla_cpu_parallel_codegen_split_count=1")
CACHE_EVERY_PROGRAM = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def xla_flags(devices: int | None = None) -> str:
    """The XLA_FLAGS of a test process: `devices` simulated CPU devices (None: one, a user's laptop)."""
    return FAST_COMPILE if devices is None else f"--xla_force_host_platform_device_count={devices} {FAST_COMPILE}"


def user_env(drop: tuple[str, ...] = ()) -> dict[str, str]:
    """This process's environment for a child `albert-jax` process on one CPU device, as a user runs it but for the
    suite's compile settings above, without the variables in `drop`."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS" and k not in drop}
    env["XLA_FLAGS"] = xla_flags()
    env.update(CACHE_EVERY_PROGRAM)
    return env
