"""Checkpoints: one orbax CheckpointManager holding the train state, the data-iterator state and metadata.

- Composite items from the first save on ('state', 'data', 'meta'): orbax cannot switch a manager between a
  single item and a Composite once it has saved (reference/stack.md).
- Saves are async; `wait()` before exit. Orbax writes each step into a temporary directory and renames it when
  complete, so a save killed half-way never looks like a checkpoint; keep-N deletion happens only after the
  successor is committed.
- `restore_latest` walks back from the newest step: a checkpoint that fails to restore (corrupt, truncated) is
  reported with a warning and the previous good one is used. The bad step is moved aside to
  `unrestorable-<step>` (never deleted: it may still hold something a person wants), so training can save
  that step again.
"""
from __future__ import annotations

import json
import logging
import os
from typing import Any, Callable

import jax
import orbax.checkpoint as ocp

log = logging.getLogger(__name__)


class CheckpointError(RuntimeError):
    pass


def _to_jsonable(tree: Any) -> Any:
    """Iterator states may hold bytes; JSON keeps them as latin-1 strings tagged so they come back as bytes."""
    if isinstance(tree, bytes):
        return {"__bytes__": tree.decode("latin-1")}
    if isinstance(tree, dict):
        return {k: _to_jsonable(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_to_jsonable(v) for v in tree]
    return tree


def _from_jsonable(tree: Any) -> Any:
    if isinstance(tree, dict):
        if set(tree) == {"__bytes__"}:
            return tree["__bytes__"].encode("latin-1")
        return {k: _from_jsonable(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_from_jsonable(v) for v in tree]
    return tree


class Checkpointer:
    def __init__(self, directory: str, keep: int = 3, async_save: bool = True):
        self.directory = os.path.abspath(directory)
        options = ocp.CheckpointManagerOptions(max_to_keep=keep, create=True,
                                               enable_async_checkpointing=async_save)
        self.manager = ocp.CheckpointManager(self.directory, options=options, item_names=("state", "data", "meta"))

    def steps(self) -> list[int]:
        return sorted(self.manager.all_steps())

    def save(self, step: int, state: Any, data_state: Any, meta: dict[str, Any], force: bool = True) -> bool:
        args = ocp.args.Composite(state=ocp.args.StandardSave(state),
                                  data=ocp.args.JsonSave(_to_jsonable(data_state)),
                                  meta=ocp.args.JsonSave(meta))
        return self.manager.save(step, args=args, force=force)

    def wait(self) -> None:
        self.manager.wait_until_finished()

    def restore(self, step: int, abstract_state: Any) -> tuple[Any, Any, dict[str, Any]]:
        args = ocp.args.Composite(state=ocp.args.StandardRestore(abstract_state), data=ocp.args.JsonRestore(),
                                  meta=ocp.args.JsonRestore())
        out = self.manager.restore(step, args=args)
        return out["state"], _from_jsonable(out["data"]), out["meta"]

    def restore_latest(self, abstract_state: Any,
                       warn: Callable[[str], None] = log.warning) -> tuple[int, Any, Any, dict] | None:
        """The newest checkpoint that restores; None if the directory holds none."""
        steps = self.steps()
        failures = []
        for step in reversed(steps):
            try:
                state, data, meta = self.restore(step, abstract_state)
            except Exception as e:  # orbax raises many types for a damaged step; any of them means "skip it"
                failures.append(f"step {step}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                warn(f"checkpoint at step {step} in {self.directory} cannot be restored ({failures[-1]}); "
                     "trying the previous one")
                continue
            self._quarantine([s for s in steps if s > step])
            return step, state, data, meta
        if failures:
            raise CheckpointError(f"no checkpoint in {self.directory} could be restored:\n  " + "\n  ".join(failures))
        return None

    def _quarantine(self, steps: list[int]) -> None:
        if not steps or jax.process_index() != 0:
            return
        for s in steps:
            src = os.path.join(self.directory, str(s))
            dst = os.path.join(self.directory, f"unrestorable-{s}")
            n = 1
            while os.path.exists(dst):
                dst, n = os.path.join(self.directory, f"unrestorable-{s}.{n}"), n + 1
            os.replace(src, dst)
        self.manager.reload()

    def close(self) -> None:
        self.manager.wait_until_finished()
        self.manager.close()


def read_meta(directory: str, step: int) -> dict[str, Any]:
    """The metadata saved with a step, read without building a model (for tools and tests)."""
    path = os.path.join(directory, str(step), "meta", "metadata")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def restore_params_only(directory: str, abstract_params: Any, step: int | None = None) -> tuple[int, Any]:
    """Parameters alone from a pretraining checkpoint (for fine-tuning, export, init tricks)."""
    mgr = ocp.CheckpointManager(os.path.abspath(directory), item_names=("state", "data", "meta"),
                                options=ocp.CheckpointManagerOptions(read_only=True))
    step = mgr.latest_step() if step is None else step
    if step is None:
        raise CheckpointError(f"{directory}: no checkpoint found")
    # Partial restore: only the params subtree of the state.
    restored = mgr.restore(step, args=ocp.args.Composite(
        state=ocp.args.PyTreeRestore(item={"params": abstract_params},
                                     restore_args=jax.tree.map(_restore_args, {"params": abstract_params}),
                                     partial_restore=True)))
    mgr.close()
    return step, restored["state"]["params"]


def _restore_args(x):
    sharding = getattr(x, "sharding", None)
    if sharding is None:
        return ocp.RestoreArgs()
    return ocp.ArrayRestoreArgs(sharding=sharding)
