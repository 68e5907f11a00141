"""`python tests/fault_main.py STEP <albert-jax arguments>`: the CLI, SIGKILLed once training step STEP is complete
(its metrics written, its checkpoint saves committed), with no clean-up at all: what a power cut or the OOM killer
leaves, for the resume tests. The hook lives here, not in the package (training/loop.AFTER_STEP)."""
from __future__ import annotations

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


if __name__ == "__main__":
    from albert_jax import main
    from albert_jax.training import loop

    step = int(sys.argv[1])
    loop.AFTER_STEP.setdefault(step, []).append(lambda done: os.kill(os.getpid(), signal.SIGKILL))
    sys.exit(main.main(sys.argv[2:]))
