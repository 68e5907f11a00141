"""One preparer at a time for an entry of the shared data cache.

Several processes share the cache (two sweeps pinned one per core, a sweep beside `make test`). Preparing a TFDS
dataset or unpacking a fetched source writes a temporary tree and moves it into place, so two processes doing it
at once collide: TFDS's rename fails with FileExistsError, and a second fetch deletes the first one's
half-unpacked tree. `prepare_lock` serialises them with a blocking `fcntl.flock`; the one that waited then finds
the entry ready and reuses it. The OS drops the lock when its holder exits in any way, so a killed process never
leaves it stuck. The lock is re-entrant within a thread (a preparation may call another that takes the same
lock); another thread of the same process waits like another process would.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from pathlib import Path
from typing import Callable, Iterator

_held = threading.local()  # the lock paths this thread holds


@contextlib.contextmanager
def prepare_lock(path: str | Path, what: str, log: Callable[[str], None]) -> Iterator[None]:
    """Hold the lock file `path` while preparing `what`; says so through `log` when another process holds it."""
    path = Path(path).absolute()
    held = _held.__dict__.setdefault("paths", set())
    if path in held:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another process that is preparing {what} (lock {path})")
            fcntl.flock(fd, fcntl.LOCK_EX)
        held.add(path)
        yield
    finally:
        held.discard(path)
        os.close(fd)  # closing the descriptor releases the lock
