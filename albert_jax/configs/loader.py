"""Load an experiment config: `path/to/file.py[:args]` whose `get_config(args)` returns a ConfigDict, with every
declared field it leaves out filled in at its default (schema.complete)."""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

from albert_jax.configs import schema
from albert_jax.configs.overrides import apply_override, apply_overrides  # noqa: F401  (the one parser)


def jsonable(config) -> dict:
    """A config as plain JSON values (what config.json records, and what a sweep fingerprints)."""
    return json.loads(config.to_json_best_effort()) if hasattr(config, "to_json_best_effort") else dict(config)


def experiments_dir() -> Path:
    """The repository's experiments/ folder (beside the package: the install is editable), or
    $ALBERT_JAX_EXPERIMENTS."""
    return Path(os.environ.get("ALBERT_JAX_EXPERIMENTS", Path(__file__).resolve().parents[2] / "experiments"))


def find_config_file(path: str) -> str:
    """`path` as given, or, for `experiments/<file>.py` run from another folder, the repository's own file."""
    if os.path.isfile(path):
        return path
    parts = Path(path).parts
    if not Path(path).is_absolute() and parts and parts[0] == "experiments":
        ours = experiments_dir().joinpath(*parts[1:])
        if ours.is_file():
            return str(ours)
    raise FileNotFoundError(f"experiment config {path} does not exist (expected experiments/<file>.py[:args]; "
                            f"the repository's are in {experiments_dir()})")


def load_module(path):
    """An experiment file as a module of its own (the folder is not a package on sys.path)."""
    name = "albert_jax_experiment_" + os.path.splitext(os.path.basename(path))[0]
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def load_config(spec: str):
    path, _, arg = spec.partition(":")
    path = find_config_file(path)
    module = load_module(path)
    if not hasattr(module, "get_config"):
        raise ValueError(f"{path}: an experiment config must define get_config(arg: str)")
    return schema.complete(module.get_config(arg))
