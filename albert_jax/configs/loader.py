"""Load an experiment config: `path/to/file.py[:args]` whose `get_config(args)` returns a ConfigDict."""
from __future__ import annotations

import importlib.util
import os

from albert_jax.configs.overrides import apply_override, apply_overrides  # noqa: F401  (the one parser)


def load_module(path):
    """An experiment file as a module of its own (the folder is not a package on sys.path)."""
    name = "albert_jax_experiment_" + os.path.splitext(os.path.basename(path))[0]
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def load_config(spec: str):
    path, _, arg = spec.partition(":")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"experiment config {path} does not exist (expected experiments/<file>.py[:args])")
    module = load_module(path)
    if not hasattr(module, "get_config"):
        raise ValueError(f"{path}: an experiment config must define get_config(arg: str)")
    return module.get_config(arg)
