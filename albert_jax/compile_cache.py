"""JAX's persistent compilation cache, on by default for our commands and the tests.

A run compiles one train step and one eval step per bucketed length (data/bucketing.py), and a sweep or a
several-seed fine-tuning compiles the same programs again in each row and seed: XLA's own on-disk cache turns every
repeat into a read. The cache is keyed by the program, the XLA flags and the jax version, so a changed model or
stack compiles afresh. `ALBERT_JAX_XLA_CACHE=off` disables it; a path moves it (default: <data cache>/xla).
Set through JAX's environment variables, before jax is imported, so nothing here imports jax.
"""
from __future__ import annotations

import os

from albert_jax.data.fetch import default_cache_dir  # standard library only

MAX_BYTES = 4 << 30  # JAX evicts the least recently used entries beyond this


def enable() -> str | None:
    """Point JAX's compilation cache at our directory, unless the user set one or turned it off."""
    spec = os.environ.get("ALBERT_JAX_XLA_CACHE", "")
    if spec.lower() == "off":
        return None

    path = os.path.expanduser(spec) if spec else str(default_cache_dir() / "xla")
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", path)
    # Our steps compile in 1-30 s; 0.5 s keeps the many tiny jits (initializers, casts) out of the cache.
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")
    os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(MAX_BYTES))
    return os.environ["JAX_COMPILATION_CACHE_DIR"]
