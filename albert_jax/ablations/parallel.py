"""`albert-jax sweep ... --jobs N`: the local launcher's stages, N processes at a time.

Why: a cpu-scale row is a dozen small stages (pretraining seeds, fine-tuning seeds per task, the random-init twins),
and one small model leaves most of a machine idle; `--launcher local` runs them one after another. Here every stage
is the very command the in-process launcher would run (`Stage.command`), in its own process, with its output in
`<workdir>.log`, started as soon as what it reads is there:
- a fine-tuning stage after the pretraining it starts from; a warm-started row's pretraining after its source's;
- of two stages of this sweep with one fingerprint (the random-init twins of rows with one architecture and
  tokenizer), the first runs and the second waits for it and then links to it (sweep.reuse), as a sequential
  sweep would.
SIGINT and SIGTERM are passed on to every running stage, which checkpoints and stops: the same command continues.
Each stage runs in a session of its own, so that a terminal's Ctrl-C reaches it once, through the sweep; on Linux a
sweep killed outright (SIGKILL) still stops its stages the same way, as each asked the kernel for a SIGTERM when
the sweep ends (lifeline.py).
A stage that fails stops only the stages that need it; the others run on, and the sweep ends with an error that
names every failed stage and its log.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from albert_jax import lifeline
from albert_jax.ablations.sweep import (RowPlan, Stage, SweepError, fingerprint, keep_params, prepare, restore_source,
                                        reuse, save_evidence, stages_state, write_row_json)

POLL_S = 0.5


def stage_argv(stage: Stage, log_level: str = "INFO") -> list[str]:
    """`Stage.command()` for this interpreter (a venv's albert-jax need not be on PATH). At INFO by default: the
    log is a file, where the trainer draws no progress bar, so its "step N/M, loss ..." lines are the progress."""
    return [sys.executable, "-m", "albert_jax.main", *stage.args(), "--log-level", log_level]


def log_path(stage: Stage) -> Path:
    return stage.workdir.with_name(stage.workdir.name + ".log")


def _twins(todo: list[tuple[RowPlan, Stage]]) -> dict[Path, Path]:
    """{workdir: the workdir of the earlier stage it is identical to} among the stages still to run."""
    first: dict[tuple[str, str], Path] = {}
    out = {}
    for _, s in todo:
        key = (s.name, fingerprint(s))
        if key in first:
            out[s.workdir] = first[key]
        else:
            first[key] = s.workdir
    return out


def run_parallel(plans: list[RowPlan], jobs: int, out=sys.stdout, reuse_stages: bool = True,
                 env: dict | None = None, log_level: str = "INFO") -> int | None:
    """Run (or resume) every stage of `plans`, at most `jobs` at a time; None when every row finished, else the
    signal that stopped the sweep (0: none known). Raises SweepError naming the stages that failed."""
    if jobs < 1:
        raise SweepError(f"--jobs {jobs}: at least 1")
    runs = plans[0].directory.parents[2] if plans else Path(".")
    prepare(plans)
    q = _Queue([(p, s) for p in plans for s in p.stages if not s.done()], reuse_stages)
    for p in plans:  # a row whose every stage is done (here or in the evidence) is not running
        state = stages_state(p)
        write_row_json(p, {"state": "done" if set(state.values()) == {"done"} else "running", "stages_state": state})
    running: dict[subprocess.Popen, tuple[RowPlan, Stage, float]] = {}
    stop: list[int] = []

    def on_signal(signum, _frame):
        if not stop:
            print(f"signal {signum}: passed to the {len(running)} running stage(s), which checkpoint and stop",
                  file=out, flush=True)
        stop.append(signum)
        for proc in running:
            proc.send_signal(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while running or (q.todo and not stop):
            while not stop and len(running) < jobs and (item := q.next_ready()) is not None:
                p, s = item
                src = reuse(s, runs) if reuse_stages else None
                if src is not None:
                    q.finished.add(s.workdir)
                    print(f"{q.count()} {p.row.name} · {s.name}: identical to the finished {src}: linked, not rerun",
                          file=out, flush=True)
                    save_evidence(s)
                    continue
                restore_source(s, plans)
                running[_launch(s, env, log_level)] = (p, s, time.time())
                print(f"{q.count()} {p.row.name} · {s.name}: {s.progress()} -> running (log {log_path(s)})",
                      file=out, flush=True)
            for proc in [x for x in running if x.poll() is not None]:
                p, s, t0 = running.pop(proc)
                if s.done():
                    q.finished.add(s.workdir)
                    print(f"{q.count()} {p.row.name} · {s.name}: done in {time.time() - t0:.0f} s", file=out,
                          flush=True)
                    save_evidence(s)
                    keep_params(plans)
                elif not stop:
                    q.failed[s.workdir] = f"exit status {proc.returncode}, see {log_path(s)}"
                    print(f"{p.row.name} · {s.name}: failed ({q.failed[s.workdir]})", file=out, flush=True)
            if not running and not stop and q.todo and not q.any_ready():
                break  # what is left needs a stage that failed
            time.sleep(POLL_S)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    for p in plans:
        stages = stages_state(p)
        state = "done" if set(stages.values()) == {"done"} else "interrupted" if stop else "failed"
        write_row_json(p, {"state": state, "stages_state": stages})
    if stop:
        print("stopped: rerun the same command to continue", file=out, flush=True)
        return stop[0]
    if q.failed or q.todo:
        blocked = [str(s.workdir) for _, s in q.todo]
        raise SweepError("stages failed: " + "; ".join(f"{w}: {why}" for w, why in q.failed.items())
                         + (f"; not started, as a stage they need failed: {', '.join(blocked)}" if blocked else ""))
    return None


def _launch(stage: Stage, env: dict | None, log_level: str) -> subprocess.Popen:
    stage.workdir.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path(stage), "a", encoding="utf-8") as log:
        # Its own session: a terminal's Ctrl-C reaches it once, through this sweep, like a scheduler's SIGTERM.
        # Tied to this process all the same (lifeline.py): killed outright, the sweep takes its stages with it.
        return subprocess.Popen(stage_argv(stage, log_level), stdout=log, stderr=subprocess.STDOUT,
                                env=lifeline.env_for_child(env), start_new_session=True)


class _Queue:
    """The stages still to start, in plan order, and what each waits for: the stage it reads (`Stage.after`) and
    the earlier identical stage it will link to."""

    def __init__(self, todo: list[tuple[RowPlan, Stage]], reuse_stages: bool):
        self.todo, self.total = todo, len(todo)
        self.scheduled = {s.workdir for _, s in todo}  # a need outside it is finished, or not this sweep's
        self.twins = _twins(todo) if reuse_stages else {}
        self.finished: set[Path] = set()
        self.failed: dict[Path, str] = {}  # workdir -> why

    def count(self) -> str:
        return f"[{len(self.finished) + len(self.failed)}/{self.total} stages]"

    def _state(self, s: Stage) -> bool | None:
        """True: can start; False: waits; None: never (what it needs failed)."""
        needs = [n for n in (s.after, self.twins.get(s.workdir)) if n is not None]
        if any(n in self.failed for n in needs):
            return None
        return all(n in self.finished or n not in self.scheduled for n in needs)

    def any_ready(self) -> bool:
        return any(self._state(s) for _, s in self.todo)

    def next_ready(self) -> tuple[RowPlan, Stage] | None:
        for item in list(self.todo):
            state = self._state(item[1])
            if state is None:
                self.todo.remove(item)
                self.failed[item[1].workdir] = "not started: a stage it needs failed"
            elif state:
                self.todo.remove(item)
                return item
        return None
