"""`python tests/signal_main.py POINT N SIGNAL <albert-jax arguments>`: the CLI, which sends itself SIGNAL (INT or
TERM) during the N-th call, in this process, of POINT, as a user's Ctrl-C or a scheduler's SIGTERM may arrive at any
moment: `step` (the jitted train step), `data` (the training batch iterator's `next`), `eval` (the loop's
evaluation) or `save` (a checkpoint save, the best dev checkpoint's or a regular one). The signal is raised inside
the call, after its work, so the loop's handler runs before the call returns. The hooks live here, not in the
package: each wraps the function the loop calls."""
from __future__ import annotations

import dataclasses
import functools
import signal
import sys


def _signalling(fn, n: int, signum: int):
    calls = 0

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        nonlocal calls
        out = fn(*args, **kwargs)
        calls += 1
        if calls == n:
            signal.raise_signal(signum)  # the Python handler runs before raise_signal returns
        return out
    return wrapper


def install(point: str, n: int, signum: int) -> None:
    from albert_jax.data import input_pipeline
    from albert_jax.training import checkpoints, loop, program

    if point == "step":
        build = program.build
        program.build = lambda *a, **k: (lambda p: dataclasses.replace(
            p, train_step=_signalling(p.train_step, n, signum)))(build(*a, **k))
    elif point == "data":
        input_pipeline.BatchIterator.__next__ = _signalling(input_pipeline.BatchIterator.__next__, n, signum)
    elif point == "eval":
        loop.evaluate = _signalling(loop.evaluate, n, signum)
    elif point == "save":
        checkpoints.Checkpointer.save = _signalling(checkpoints.Checkpointer.save, n, signum)
    else:
        raise SystemExit(f"unknown point {point!r}: step, data, eval or save")


if __name__ == "__main__":
    from albert_jax import main

    install(sys.argv[1], int(sys.argv[2]), getattr(signal, "SIG" + sys.argv[3]))
    sys.exit(main.main(sys.argv[4:]))
