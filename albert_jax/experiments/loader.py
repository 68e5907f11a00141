"""Load an experiment config: `path/to/file.py[:args]` whose `get_config(args)` returns a ConfigDict."""
from __future__ import annotations

import ast
import importlib.util
import os


def load_config(spec: str):
    path, _, arg = spec.partition(":")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"experiment config {path} does not exist (expected experiments/<file>.py[:args])")
    module_name = "albert_jax_experiment_" + os.path.splitext(os.path.basename(path))[0]
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    if not hasattr(module, "get_config"):
        raise ValueError(f"{path}: an experiment config must define get_config(arg: str)")
    return module.get_config(arg)


def apply_override(config, item: str) -> None:
    """'train.num_train_steps=50': the value is parsed as a Python literal when it is one, else kept as text."""
    if "=" not in item:
        raise ValueError(f"override {item!r}: expected dotted.key=value")
    key, raw = item.split("=", 1)
    *parents, leaf = key.strip().split(".")
    node = config
    for name in parents:
        if name not in node:
            raise ValueError(f"override {key}: no section {name!r}; sections are {sorted(node.keys())}")
        node = node[name]
    if leaf not in node:
        raise ValueError(f"override {key}: no field {leaf!r}; fields are {sorted(node.keys())}")
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        value = raw.strip()
    old = node[leaf]
    if isinstance(old, float) and isinstance(value, int):
        value = float(value)
    if old is not None and not isinstance(value, type(old)):
        raise ValueError(f"override {key}={raw!r}: expected a value of type {type(old).__name__}")
    node[leaf] = value
