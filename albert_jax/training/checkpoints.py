"""Checkpoints: one orbax CheckpointManager holding the train state, the data-iterator state and metadata.

- Composite items from the first save on ('state', 'data', 'meta'): orbax cannot switch a manager between a
  single item and a Composite once it has saved (reference/stack.md).
- Saves are async; `wait()` before exit. Orbax writes each step into a temporary directory and renames it when
  complete, so a save killed half-way never looks like a checkpoint; keep-N deletion happens only after the
  successor is committed. Temporary directories left by a killed or failed save are removed when the
  training loop opens the directory (`clean_temporaries`; the workdir lock makes it the only writer).
- Every step carries a manifest, `<step>/sha256.json`: the size and sha256 of every file orbax wrote. It is
  written inside orbax's temporary directory just before the rename that commits the step (orbax's
  post-finalization callback), so a committed step always has one. A step without a manifest was written by
  an older version of this code: it is restored with a warning that it is unverified.
- A state holding NaN or inf is refused by `save` (`NonFiniteStateError`) and by `restore`.
- A save that fails (disk full, permissions) raises `CheckpointSaveError` at the next step boundary (`poll`),
  one line naming the directory and the cause; the half-written temporary directory is removed.
- `restore_latest` walks back from the newest step: a checkpoint that fails verification, fails to restore
  (corrupt, truncated), holds non-finite values, or whose data-iterator state the caller cannot load
  (`validate`) is reported with a warning and the previous one is used. The bad step is moved aside to
  `unrestorable-<step>` (never deleted: it may still hold something a person wants; `REASON.txt` says why),
  so training can save that step again.
"""
from __future__ import annotations

import glob
import json
import logging
import os
import re
import shutil
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from albert_jax.data.fetch import sha256_file  # the one file hasher
from albert_jax.training import reuse, rundir

log = logging.getLogger(__name__)

MANIFEST = "sha256.json"
TMP_MARK = ".orbax-checkpoint-tmp"
# Written by orbax after the post-finalization callback (the commit marker) or rewritten after it (its step
# metadata, with the commit time): not covered by the manifest.
_UNHASHED_TOP = {"commit_success.txt", "_CHECKPOINT_METADATA", MANIFEST}


class CheckpointError(RuntimeError, ValueError):
    """A checkpoint problem the user must act on. A ValueError too, so the CLI prints it as one line."""


class ChecksumError(CheckpointError):
    """A step whose files differ from what was written."""


class NonFiniteStateError(CheckpointError):
    """A state holding NaN or inf: it is never saved, and a restored one is not trusted."""

    def __init__(self, message: str, leaves: list[str]):
        super().__init__(message)
        self.leaves = leaves


class CheckpointSaveError(CheckpointError):
    """A save that did not complete; the message names the directory and the cause."""


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


# ---------------------------------------------------------------- finiteness
_FINITE_FNS = reuse.Kept(16)  # by the state's structure and mesh: a long sweep keeps the last few


def _finite_flags(leaves):
    """One flag per leaf: all its values finite. x * 0 is 0 for every finite x and NaN for an inf or a NaN, so the
    sum is NaN exactly when a value is not finite (a sum of the values themselves could overflow). The same answer
    as all(isfinite(x)), in a program that compiles in a third of the time: one of a run's programs, compiled
    anew for each model and task (docs/benchmarks.md, 2026-12-07)."""
    return jnp.isfinite(jnp.stack([jnp.sum(x * 0) for x in leaves]))


def nonfinite_leaves(tree: Any) -> list[str]:
    """Paths of the floating-point leaves of `tree` that hold a NaN or an inf (one jitted pass, any sharding)."""
    flat = [(jax.tree_util.keystr(p, simple=True, separator="/"), x)
            for p, x in jax.tree_util.tree_flatten_with_path(tree)[0]
            if hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.inexact)]
    if not flat:
        return []
    xs = tuple(x for _, x in flat)
    sharding = getattr(xs[0], "sharding", None)
    mesh = getattr(sharding, "mesh", None)
    out_sh = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec()) \
        if isinstance(sharding, jax.sharding.NamedSharding) else None
    check = _FINITE_FNS.get((jax.tree_util.tree_structure(xs), mesh),
                            lambda: jax.jit(_finite_flags, out_shardings=out_sh))
    flags = check(xs)
    flags = np.asarray(flags if flags.is_fully_addressable else flags.addressable_data(0))
    return [name for (name, _), ok in zip(flat, flags) if not ok]


def describe_leaves(leaves: list[str], shown: int = 3) -> str:
    more = f" and {len(leaves) - shown} more" if len(leaves) > shown else ""
    return ", ".join(leaves[:shown]) + more


# ---------------------------------------------------------------- manifests
def write_manifest(step_dir: str) -> dict:
    """sha256 and size of every file in `step_dir` (except orbax's commit marker and step metadata)."""
    files = {}
    for root, _, names in os.walk(step_dir):
        for name in names:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, step_dir)
            if rel in _UNHASHED_TOP:
                continue
            files[rel] = {"size": os.path.getsize(path), "sha256": sha256_file(path)}
    manifest = {"version": 1, "algorithm": "sha256", "files": dict(sorted(files.items()))}
    tmp = os.path.join(step_dir, MANIFEST + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=0)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(step_dir, MANIFEST))
    return manifest


def verify_step_dir(step_dir: str) -> bool:
    """True if `step_dir` matches its manifest, False if it has none; ChecksumError naming a file otherwise."""
    path = os.path.join(step_dir, MANIFEST)
    if not os.path.isfile(path):
        return False
    try:
        with open(path, encoding="utf-8") as f:
            files = json.load(f)["files"]
    except (OSError, ValueError, KeyError) as e:
        raise ChecksumError(f"its manifest {MANIFEST} is unreadable ({type(e).__name__})") from e
    for rel, info in files.items():
        p = os.path.join(step_dir, rel)
        if not os.path.isfile(p):
            raise ChecksumError(f"{rel} is missing")
        if os.path.getsize(p) != info["size"]:
            raise ChecksumError(f"{rel} has {os.path.getsize(p)} bytes, {info['size']} were written")
        if sha256_file(p) != info["sha256"]:
            raise ChecksumError(f"{rel} differs from what was written (sha256 mismatch)")
    return True


# ---------------------------------------------------------------- save errors
class _QuietOrbaxErrors(logging.Filter):
    """Orbax logs a failed background save several times, each with a long traceback; our one-line
    CheckpointSaveError says it all. ALBERT_JAX_DEBUG=1 keeps the tracebacks."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and "orbax" in (record.pathname or "") and not os.environ.get("ALBERT_JAX_DEBUG"):
            record.exc_info, record.exc_text = None, None
        return True


_QUIET = _QuietOrbaxErrors()


def _cause(e: BaseException) -> str:
    """The OS-level reason inside an orbax/tensorstore error ('No space left on device'), else its first line."""
    chain, c = [], e
    while c is not None and len(chain) < 10:
        chain.append(c)
        c = c.__cause__ or c.__context__
    for c in chain:
        if isinstance(c, OSError) and c.strerror:
            return f"{c.strerror} (errno {c.errno})"
    for c in chain:
        m = re.search(r":\s*([A-Za-z][^:\[\]\"]*?)\s*\[os_error_code='?(\d+)'?\]", str(c))
        if m:
            return f"{m.group(1)} (errno {m.group(2)})"
    first = (str(e).splitlines() or [""])[0]
    return f"{type(e).__name__}: {first[:300]}"


class Checkpointer:
    def __init__(self, directory: str, keep: int = 3, async_save: bool = True, clean_temporaries: bool = False):
        """`clean_temporaries`: remove unfinished writes left in `directory`; only for the one writer (the
        training loop, holding the workdir lock): a reader would delete a live run's save in progress."""
        if not isinstance(keep, int) or isinstance(keep, bool) or keep < 1:
            raise CheckpointError(f"keep={keep!r}: a checkpoint directory must keep at least 1 step")
        self.directory = os.path.abspath(directory)
        self.async_save = async_save
        self._saving: int | None = None  # the step whose save was started and not yet seen to finish
        self._failed = False
        self.last_unverified: list[int] = []
        logging.getLogger("absl").addFilter(_QUIET)
        self.removed_temporaries = self._clean_temporaries() if clean_temporaries else []
        options = ocp.CheckpointManagerOptions(
            max_to_keep=keep, create=True, enable_async_checkpointing=async_save,
            async_options=ocp.AsyncOptions(post_finalization_callback=self._before_commit) if async_save else None)
        self.manager = ocp.CheckpointManager(self.directory, options=options, item_names=("state", "data", "meta"))

    # ------------------------------------------------------------ housekeeping
    def _clean_temporaries(self) -> list[str]:
        """Remove unfinished writes (`<step>.orbax-checkpoint-tmp*`) left by a killed or failed save."""
        if jax.process_index() != 0 or not os.path.isdir(self.directory):
            return []
        stale = sorted(glob.glob(os.path.join(self.directory, f"*{TMP_MARK}*")))
        for path in stale:
            shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.remove(path)
        if stale:
            log.warning("removed %d unfinished checkpoint write(s) in %s left by an earlier run: %s", len(stale),
                        self.directory, ", ".join(os.path.basename(p) for p in stale))
        return stale

    def steps(self) -> list[int]:
        return sorted(self.manager.all_steps())

    def step_dir(self, step: int) -> str:
        return os.path.join(self.directory, str(step))

    # ------------------------------------------------------------ saving
    def _before_commit(self) -> None:
        """Orbax's post-finalization callback: the step's files are complete in the temporary directory, which
        is renamed right after; the manifest goes in first, so it is committed with the step."""
        if jax.process_index() != 0 or self._saving is None:
            return
        step = self._saving
        candidates = [p for p in glob.glob(os.path.join(self.directory, f"{step}{TMP_MARK}*")) if os.path.isdir(p)]
        target = max(candidates, key=os.path.getmtime) if candidates else self.step_dir(step)
        write_manifest(target)

    def save(self, step: int, state: Any, data_state: Any, meta: dict[str, Any], force: bool = True,
             check_finite: bool = True) -> bool:
        """Start saving `step` (async). Refuses a non-finite state; raises CheckpointSaveError if the previous
        save failed or this one cannot start."""
        if check_finite:
            bad = nonfinite_leaves(state)
            if bad:
                raise NonFiniteStateError(f"the state at step {step} holds non-finite values ({describe_leaves(bad)}); "
                                          f"it is not saved to {self.directory}", bad)
        self._finish()
        args = ocp.args.Composite(state=ocp.args.StandardSave(state),
                                  data=ocp.args.JsonSave(_to_jsonable(data_state)),
                                  meta=ocp.args.JsonSave(meta))
        self._saving = step
        try:
            saved = self.manager.save(step, args=args, force=force)
            if not self.async_save:
                self._finish()
        except CheckpointError:
            raise
        except Exception as e:
            self._fail(step, e)
        return saved

    def _finish(self) -> None:
        """Wait for the save in flight; surface its failure as one CheckpointSaveError."""
        step = self._saving
        try:
            self.manager.wait_until_finished()
        except Exception as e:
            if self._failed and step is None:
                return  # orbax re-raises a failure that was already reported
            self._fail(step, e)
        if step is not None and not self.async_save and jax.process_index() == 0 \
                and os.path.isdir(self.step_dir(step)) and not os.path.isfile(os.path.join(self.step_dir(step),
                                                                                         MANIFEST)):
            write_manifest(self.step_dir(step))  # synchronous saves: just after the commit
        self._saving = None

    def _fail(self, step: int | None, e: BaseException) -> None:
        self._failed, self._saving = True, None
        if jax.process_index() == 0 and step is not None:
            for p in glob.glob(os.path.join(self.directory, f"{step}{TMP_MARK}*")):
                shutil.rmtree(p, ignore_errors=True)
        raise CheckpointSaveError(f"saving checkpoint step {step} to {self.directory} failed: {_cause(e)}") from e

    def poll(self) -> None:
        """Cheap, once per step: raise CheckpointSaveError as soon as a background save has failed."""
        if self._saving is not None and not self.manager.is_saving_in_progress():
            self._finish()

    def wait(self) -> None:
        self._finish()

    # ------------------------------------------------------------ restoring
    def verify(self, step: int) -> bool:
        """True if step matches its manifest, False if it has none; ChecksumError otherwise."""
        return verify_step_dir(self.step_dir(step))

    def restore(self, step: int, abstract_state: Any) -> tuple[Any, Any, dict[str, Any]]:
        verified = self.verify(step)
        if not verified:
            self.last_unverified.append(step)
        args = ocp.args.Composite(state=ocp.args.StandardRestore(abstract_state), data=ocp.args.JsonRestore(),
                                  meta=ocp.args.JsonRestore())
        out = self.manager.restore(step, args=args)
        bad = nonfinite_leaves(out["state"])
        if bad:
            raise NonFiniteStateError(f"it holds non-finite values ({describe_leaves(bad)})", bad)
        return out["state"], _from_jsonable(out["data"]), out["meta"]

    def restore_latest(self, abstract_state: Any, warn: Callable[[str], None] = log.warning,
                       validate: Callable[[Any, Any, dict], None] | None = None
                       ) -> tuple[int, Any, Any, dict] | None:
        """The newest checkpoint that verifies, restores, is finite and passes `validate(state, data, meta)`
        (e.g. loading its data-iterator state); None if the directory holds none. Newer steps that fail are
        moved aside; if every step fails, CheckpointError lists why and nothing is moved."""
        steps = self.steps()
        failures: list[tuple[int, str]] = []
        for step in reversed(steps):
            try:
                state, data, meta = self.restore(step, abstract_state)
                if validate is not None:
                    validate(state, data, meta)
            except Exception as e:  # orbax raises many types for a damaged step; any of them means "skip it"
                reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                failures.append((step, reason))
                warn(f"checkpoint at step {step} in {self.directory} cannot be restored ({reason}); "
                     "trying the previous one")
                continue
            if step in self.last_unverified:
                warn(f"checkpoint at step {step} in {self.directory} has no {MANIFEST} (written before checkpoints "
                     "carried checksums): restored unverified")
            self.set_aside([(s, r) for s, r in failures], "unrestorable")
            return step, state, data, meta
        if failures:
            raise CheckpointError(f"no checkpoint in {self.directory} could be restored: "
                                  + "; ".join(f"step {s}: {r}" for s, r in failures))
        return None

    def set_aside(self, steps: list[tuple[int, str]], prefix: str) -> None:
        """Move steps to `<prefix>-<step>` (with REASON.txt) so the manager no longer sees them."""
        if not steps:
            return
        if jax.process_index() == 0:
            for s, reason in steps:
                src = self.step_dir(s)
                dst = os.path.join(self.directory, f"{prefix}-{s}")
                n = 1
                while os.path.exists(dst):
                    dst, n = os.path.join(self.directory, f"{prefix}-{s}.{n}"), n + 1
                os.replace(src, dst)
                with open(os.path.join(dst, "REASON.txt"), "w", encoding="utf-8") as f:
                    f.write(reason + "\n")
        self.manager.reload()

    def close(self) -> None:
        """Wait for the last save and close. A failure already reported is not raised twice."""
        try:
            self._finish()
        finally:
            try:
                self.manager.close()
            except Exception:  # the failed save that was already reported, re-raised by orbax's own wait
                if not self._failed:
                    raise


def has_steps(directory: str) -> bool:
    """Whether `directory` holds a committed step (without opening a manager)."""
    return bool(rundir.steps(directory))


def read_meta(directory: str, step: int) -> dict[str, Any]:
    """The metadata saved with a step, read without building a model (for tools and tests)."""
    path = os.path.join(directory, str(step), "meta", "metadata")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def restore_params_only(directory: str, abstract_params: Any, step: int | None = None,
                        sharding: Any = None) -> tuple[int, Any]:
    """Parameters alone from a pretraining checkpoint (for fine-tuning, export, init tricks); the step is
    verified against its manifest first. `sharding` (e.g. one device) lays every array out so, whatever the
    devices of the run that saved it; None keeps the abstract leaves' shardings (or the saved ones)."""
    if sharding is not None:
        abstract_params = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding),
                                       abstract_params)
    mgr = ocp.CheckpointManager(os.path.abspath(directory), item_names=("state", "data", "meta"),
                                options=ocp.CheckpointManagerOptions(read_only=True))
    step = mgr.latest_step() if step is None else step
    if step is None:
        raise CheckpointError(f"{directory}: no checkpoint found")
    try:
        if not verify_step_dir(os.path.join(os.path.abspath(directory), str(step))):
            log.warning("checkpoint at step %d in %s has no %s: read unverified", step, directory, MANIFEST)
    except ChecksumError as e:
        raise ChecksumError(f"checkpoint at step {step} in {directory} is damaged: {e}") from e
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
