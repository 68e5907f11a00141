"""A process that `sweep --jobs` starts stops when the sweep dies, even by SIGKILL.

Why: each stage runs in a session of its own (so a terminal's Ctrl-C reaches it once, through the sweep), so
nothing else ends it when its sweep is killed outright: a scheduler's hard kill at the end of an allocation, an OOM
kill, `kill -9`. Left alone it would train on, unseen, and a rerun of the sweep would find its workdir locked.
The sweep names itself in the stage's environment; the stage asks Linux to send it SIGTERM when that process
ends (prctl PR_SET_PDEATHSIG), which the trainer takes as it takes a scheduler's: checkpoint, stop, exit 143, and
the same sweep command continues it. Elsewhere (macOS) this is a no-op, and the old behaviour stands.
Standard library only: `albert_jax.main` calls `hold()` before anything heavy is imported.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys

ENV = "ALBERT_JAX_STOP_WITH"  # the pid of the process whose death stops this one
_PR_SET_PDEATHSIG = 1


def env_for_child(env: dict | None = None) -> dict:
    """`env` (default: this process's) plus the variable that ties a child to this process."""
    return {**(os.environ if env is None else env), ENV: str(os.getpid())}


def hold() -> bool:
    """If a parent asked for it, SIGTERM this process when that parent ends. True when armed. The variable is
    removed here, so the processes this one starts (data builders, their workers) are not tied to it."""
    parent = os.environ.pop(ENV, None)
    if parent is None or not parent.isdigit() or not sys.platform.startswith("linux"):
        return False  # not a sweep's stage (a stray value is ignored: never fail a command for it)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        return False  # a kernel that refuses: behave as before, never fail the stage for it
    if os.getppid() != int(parent):  # the parent died before the request took hold
        os.kill(os.getpid(), signal.SIGTERM)
    return True
