"""Programs built once per process: a sweep's stages and a several-seed fine-tuning build the same programs again.

A small run's time is mostly JAX tracing, lowering and compiling its programs (init, train step, eval step, a
fine-tuning's fresh head), not running them (a smoke row: about 3 of its 4 seconds). JAX keeps a jitted function's
compiled programs only for that function object, and the persistent compilation cache (compile_cache.py) skips
only the XLA compile, not the tracing and lowering before it. So a stage that needs the programs of a stage
before it (the next pretraining seed of a row, a row that differs only in its data, a random-init twin beside
its row's fine-tuning) takes them from here, by `fingerprint`: everything the programs are traced from.

The fingerprint is built from the task's own attributes (its class and every instance field) and the model
config. A task holding anything but plain values (arrays, models, tokenizers: a distillation's teacher) has no
fingerprint, and its programs are built afresh every time, as they were before this module.
"""
from __future__ import annotations

import collections
import dataclasses
import json
import types
from typing import Any, Callable, Hashable

from albert_jax.tasks.base import Task, TaskWrapper


class _NotPlain(Exception):
    pass


def _freeze(value: Any) -> Hashable:
    """`value` as a hashable value that equals another exactly when the two are the same plain data."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return (type(value), repr(value))  # repr: -0.0 and 0.0 differ, as they would in a traced constant
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_freeze(v) for v in value))
    if isinstance(value, dict):
        return (dict, tuple(sorted((repr(k), _freeze(v)) for k, v in value.items())))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value), tuple((f.name, _freeze(getattr(value, f.name))) for f in dataclasses.fields(value)))
    if isinstance(value, types.FunctionType) and value.__closure__ is None:
        return value  # a module's function (a task's adapter): the same object is the same code
    if isinstance(value, (Task, TaskWrapper)):  # a wrapper's base task
        return (type(value), _freeze(vars(value)))
    raise _NotPlain(type(value).__name__)


def fingerprint(task, model_cfg) -> Hashable | None:
    """What the programs of `task` on `model_cfg` are traced from; None where the task holds more than plain data."""
    try:
        return (_freeze(task), json.dumps(model_cfg.to_dict(), sort_keys=True, default=repr))
    except _NotPlain:
        return None


class Kept:
    """The last `size` values made, by key (the least recently used goes first). A key of None is never kept."""

    def __init__(self, size: int):
        self.size = size
        self._values: collections.OrderedDict = collections.OrderedDict()

    def get(self, key: Hashable | None, make: Callable[[], Any]) -> Any:
        if key is None:
            return make()
        if key in self._values:
            self._values.move_to_end(key)
            return self._values[key]
        value = self._values[key] = make()
        while len(self._values) > self.size:
            self._values.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        self._values.clear()
