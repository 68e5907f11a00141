"""A workdir belongs to one run: one writer at a time, and a resume continues the run the workdir records.

- `lock(workdir)`: an exclusive `fcntl.flock` on `workdir/run.lock`, which records the holder's pid, host, start
  time and command. A second run on the same workdir is refused with a message naming the holder. The OS drops
  the lock when the holder exits in any way (SIGKILL included), so a killed run never leaves it stuck; the
  file's old contents are then simply overwritten. In a multi-process run process 0 takes the lock and every
  process learns the outcome.
- `reconcile(old, new, ...)`: a resume compares the run's recorded config.json with the new one before anything
  is written. A changed model, task or data (role `identity` in configs/schema.py) is refused with the differing
  fields listed; a changed schedule (role `schedule`: steps, learning rate, warmup, batch, accumulation, weight
  decay) only with `train.allow_changed_schedule=true`, and every change is appended to config.json's `changes`
  list. Fields that only say how the run is watched or laid out (logging, eval and checkpoint cadence, mesh,
  versions) may change freely and are recorded too.
"""
from __future__ import annotations

import dataclasses
import datetime
import errno
import fcntl
import json
import os
import socket
import sys
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils

from albert_jax.config import AlbertConfig
from albert_jax.configs import schema
from albert_jax.training import rundir

LOCK_NAME = "run.lock"

# The experiment config's roles (identity, schedule, speed, free) and the fields added since runs were first recorded
# are declared with its fields in configs/schema.py. Besides the experiment config, config.json records the
# resolved run: its model, task, data and init sections are what the run is.
RECORD_IDENTITY = ("model.", "task.", "data.", "init.")
SCHEDULE = tuple(f"experiment.{k}" for k in schema.keys_with_role("schedule"))
FLAG = "train.allow_changed_schedule"
_NOT_COMPARED = ("changes",)
# A record without a field added since it was written reads the field's default.
ADDED_DEFAULTS = {f"experiment.{k}": v for k, v in schema.ADDED_DEFAULTS.items()}


class WorkdirError(ValueError):
    """This run may not use the workdir as asked; the message says why and what to do (printed as one line)."""


# ---------------------------------------------------------------- the lock
class WorkdirLock:
    def __init__(self, workdir: str):
        self.path = os.path.join(os.path.abspath(workdir), LOCK_NAME)
        self.fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise WorkdirError(f"{os.path.dirname(self.path)} is in use by another run ({self.holder()}); one run "
                               "writes a workdir at a time: wait for it to finish, stop it, or use another "
                               "--workdir") from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                                 "command": " ".join(sys.argv)}).encode())
        os.fsync(fd)
        self.fd = fd

    def holder(self) -> str:
        try:
            with open(self.path, encoding="utf-8") as f:
                h = json.load(f)
            return f"pid {h['pid']} on {h['host']}, started {h['started']}; lock file {self.path}"
        except (OSError, ValueError, KeyError):
            return f"lock file {self.path}"

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.ftruncate(self.fd, 0)  # nobody holds it: no stale holder to show
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "WorkdirLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def lock(workdir: str) -> WorkdirLock:
    """The workdir's lock, held by this run (process 0 holds the file; every process raises if it is taken)."""
    lk = WorkdirLock(workdir)
    error = None
    if jax.process_index() == 0:
        try:
            lk.acquire()
        except WorkdirError as e:
            error = e
    if jax.process_count() > 1:
        ok = int(multihost_utils.broadcast_one_to_all(np.int32(error is None)))
        if not ok and error is None:
            error = WorkdirError(f"{workdir} is in use by another run (process 0 could not lock {lk.path})")
    if error is not None:
        raise error
    return lk


# ---------------------------------------------------------------- which command's run
def claim_kind(workdir: str, kind: str) -> None:
    """The workdir holds runs of `kind` (pretrain | finetune | distill): a workdir another command wrote is refused
    in one line, before anything is written; a new one records its kind (kind.json)."""
    if not workdir or "://" in workdir:
        return  # a remote path: not inspected here
    found, how = rundir.run_kind(workdir)
    if found is not None and found != kind:
        hint = ""
        if found == "pretrain" and kind in ("finetune", "distill"):
            hint = f" (to start from that run, pass init={workdir} and a new --workdir)"
        raise WorkdirError(f"--workdir {workdir} holds a {found} run ({how}), not a {kind} run: use another "
                           f"--workdir{hint}")
    path = os.path.join(workdir, rundir.KIND)
    if jax.process_index() == 0 and not os.path.isfile(path):
        os.makedirs(workdir, exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"kind": kind}, f)
        os.replace(tmp, path)


# ---------------------------------------------------------------- comparing a resume with the recorded run
def _flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(tree, dict):
        out: dict[str, Any] = {}
        for k, v in tree.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        if not tree and prefix:
            out[prefix[:-1]] = {}
        return out
    return {prefix[:-1]: tree}


def _comparable(key: str, value: Any) -> Any:
    """Files of the data summary compare by their last two path components (the content-hashed cache directory
    and the file): the same data found under another cache root is the same data."""
    if key.startswith("data.") and isinstance(value, (list, str)):
        vals = value if isinstance(value, list) else [value]
        if all(isinstance(v, str) and os.path.isabs(v) for v in vals):
            norm = ["/".join(v.rstrip("/").split("/")[-2:]) for v in vals]
            return norm if isinstance(value, list) else norm[0]
    if isinstance(value, list):
        return json.loads(json.dumps(value))
    return value


def kind_of(key: str) -> str:
    """'identity' (refused), 'schedule' (needs the flag) or 'free' for a flattened config.json key."""
    if key.startswith(RECORD_IDENTITY):
        speed = key.startswith("model.") and key.rsplit(".", 1)[-1] in schema.MODEL_SPEED
        return "free" if speed else "identity"
    if key.startswith("experiment."):
        role = schema.role_of(key[len("experiment."):])
        return role if role in ("identity", "schedule") else "free"
    return "free"


def _model_default(key: str) -> Any:
    """The value a model field has when a record predates it: its AlbertConfig default (a field is only ever
    added with a default that keeps the old behaviour, e.g. `sharing_map=""`), else None."""
    if key in ADDED_DEFAULTS:
        return ADDED_DEFAULTS[key]
    if key.startswith(("model.", "experiment.model.")):
        for f in dataclasses.fields(AlbertConfig):
            if f.name == key.rsplit(".", 1)[-1] and f.default is not dataclasses.MISSING:
                return f.default
    return None


def differences(old: dict, new: dict) -> dict[str, tuple[Any, Any]]:
    """Flattened key -> (recorded, new) for every key whose value differs. A key missing from the record reads
    as None, except a model field added since the run began, which reads as its default: a run recorded before
    a field existed resumes under a newer version as long as that field is left at its default."""
    a = {k: v for k, v in _flatten(old).items() if k.split(".")[0] not in _NOT_COMPARED}
    b = {k: v for k, v in _flatten(new).items() if k.split(".")[0] not in _NOT_COMPARED}
    a.update({k: _model_default(k) for k in set(b) - set(a)})
    return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b))
            if _comparable(k, a.get(k)) != _comparable(k, b.get(k)) and not _same_path(a.get(k), b.get(k))}


def _same_path(old: Any, new: Any) -> bool:
    """A path a run recorded as typed (relative, before paths were recorded resolved) and the same path resolved:
    the absolute one ends with the relative one."""
    if not (isinstance(old, str) and isinstance(new, str) and old and new) or old == new:
        return False
    olds, news = old.split(","), new.split(",")
    if len(olds) != len(news):
        return False
    for o, n in zip(olds, news):
        o, n = o.strip(), n.strip()
        if o == n:
            continue
        rel, full = (o, n) if os.path.isabs(n) and not os.path.isabs(o) else (n, o)
        if os.path.isabs(rel) or not os.path.isabs(full):
            return False
        rel = os.path.normpath(rel)
        if rel.startswith("..") or not os.path.normpath(full).endswith(os.sep + rel):
            return False
    return True


def _short(v: Any) -> str:
    s = json.dumps(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _listing(diffs: dict[str, tuple[Any, Any]]) -> str:
    return ", ".join(f"{k}: {_short(a)} -> {_short(b)}" for k, (a, b) in diffs.items())


def reconcile(workdir: str, old: dict | None, new: dict, *, allow_changed_schedule: bool,
              at_step: int | None) -> tuple[dict, dict[str, tuple[Any, Any]]]:
    """The record to write to config.json for a run resuming in `workdir` (recorded as `old`), and the changes.

    Raises WorkdirError, before anything is written, when the model/task/data differ, or when the schedule
    differs without `train.allow_changed_schedule=true`."""
    if old is None:
        return new, {}
    diffs = differences(old, new)
    identity = {k: v for k, v in diffs.items() if kind_of(k) == "identity"}
    # The experiment's model section mirrors the resolved model: list a field once.
    identity = {k: v for k, v in identity.items()
                if not (k.startswith("experiment.model.") and "model." + k[len("experiment.model."):] in identity)}
    if identity:
        raise WorkdirError(f"{workdir} holds a run of another model or data, so its checkpoints cannot continue "
                           f"this one: {_listing(identity)} (recorded in {os.path.join(workdir, 'config.json')}); "
                           "use another --workdir, or set these back to the recorded values")
    schedule = {k: v for k, v in diffs.items() if kind_of(k) == "schedule"}
    if schedule and not allow_changed_schedule:
        raise WorkdirError(f"resuming {workdir} with a changed schedule: {_listing(schedule)}; rerun with "
                           f"--set {FLAG}=true to continue with the new values (the change is recorded in "
                           "config.json 'changes'), or set them back to the recorded values")
    record = dict(new)
    changes = list(old.get("changes", []))
    if diffs:
        changes.append({"at_step": at_step, "time": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                        "fields": {k: {"from": a, "to": b, "kind": kind_of(k)} for k, (a, b) in diffs.items()}})
    if changes:
        record["changes"] = changes
    return record, diffs


def read_record(workdir: str) -> dict | None:
    """The workdir's config.json (its experiment config filled in from the schema), or None for a new workdir."""
    return rundir.read_config(workdir, required=False)


def write_record(workdir: str, record: dict) -> None:
    path = os.path.join(workdir, rundir.CONFIG)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    os.replace(tmp, path)
