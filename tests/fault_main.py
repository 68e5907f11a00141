"""`python tests/fault_main.py STEP <albert-jax arguments>`: the CLI, SIGKILLed once training step STEP is complete
(its metrics written, the checkpoint saves begun so far committed), with no clean-up at all: what a power cut or the
OOM killer leaves, for the resume tests.

The hook lives here, not in the package: it wraps what the loop calls. The loop reads a step's metrics one step
behind (while the next runs), so step STEP's row is written once step STEP+1 is dispatched; the kill comes as the loop
dispatches step STEP+2, after every checkpoint save begun by then has been waited for."""
from __future__ import annotations

import dataclasses
import os
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def command(kill_at: int | None = None) -> list[str]:
    """The argv prefix that runs `albert-jax` in a fresh process, killed after step `kill_at` when given."""
    if kill_at is None:
        return [sys.executable, "-m", "albert_jax.main"]
    return [sys.executable, str(ROOT / "tests" / "fault_main.py"), str(kill_at)]


def install(kill_at: int) -> None:
    from albert_jax.training import checkpoints, program

    checkpointers = []
    init, build = checkpoints.Checkpointer.__init__, program.build

    def remember(self, *args, **kwargs):
        init(self, *args, **kwargs)
        checkpointers.append(self)

    def killing(*args, **kwargs):
        prog = build(*args, **kwargs)
        step = prog.train_step

        def train_step(state, batch, rng):
            if int(state.step) == kill_at + 1:  # step kill_at's metrics are written by now
                for c in checkpointers:
                    c.wait()
                os.kill(os.getpid(), signal.SIGKILL)
            return step(state, batch, rng)
        return dataclasses.replace(prog, train_step=train_step)

    checkpoints.Checkpointer.__init__ = remember
    program.build = killing


if __name__ == "__main__":
    from albert_jax import main

    install(int(sys.argv[1]))
    sys.exit(main.main(sys.argv[2:]))
