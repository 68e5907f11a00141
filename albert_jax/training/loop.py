"""The one training loop, for pretraining and every fine-tuning task: `train(run, workdir)`.

Four phases, one function each: `_setup` (the run's identity checked against config.json and recorded, the
tokenizer copied, the optimizer and the jitted steps built) -> `_restore` (the newest good checkpoint, or the
caller's parameters, or fresh) -> `_train_steps` (dispatch step t, then read step t-1's metrics; log; evaluate;
keep the best dev checkpoint; checkpoint; stop on SIGTERM/SIGINT or a non-finite loss; the final evaluation and
checkpoint) -> `_finish` (checkpoint managers closed).

What a run guarantees (docs/training.md, "What a run guarantees"): one writer per workdir (workdir.lock); a resume
continues the recorded run or is refused before anything is written (workdir.reconcile); no checkpoint holds a
non-finite state; every checkpoint is verified against its sha256 manifest before it is trusted, and a step that
fails verification, restore, or loading its data-iterator state is set aside for the previous one; a failed
save stops the run at once with one line; the error for a non-finite run names the last good checkpoint, or says
there is none.

A `Run` carries what differs between callers: the task (model, loss, metrics), its data, the model config, the
train section of the experiment config, and optionally the initial parameters.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import signal
from typing import Any, Callable, Iterator, Protocol

import jax
import ml_collections
import numpy as np

from albert_jax import sharding as shd
from albert_jax.config import AlbertConfig
from albert_jax.configs.loader import jsonable
from albert_jax.training import checkpoints as ckpt
from albert_jax.training import examples, program, rundir
from albert_jax.training import metrics as mx
from albert_jax.training import workdir as wdir
from albert_jax.tasks.base import Task
from albert_jax.training.progress import NonFiniteLossError, Progress

log = logging.getLogger("albert_jax.train")


@dataclasses.dataclass(frozen=True)
class TrainResult:
    """What `train` returns: the last evaluation, the step reached, the signal that stopped it if one did, the best dev
    evaluation (runs with `select`), and two handles the fine-tuning driver scores its best checkpoint with:
    `evaluate(params, eval_sets, keep=None)` (every batch, the loop's own jitted step) and `abstract_state` (what
    a checkpoint of this run restores into)."""
    eval: dict
    step: int
    signal: int | None  # the signal (SIGTERM, SIGINT) that stopped the run after a checkpoint; None: it finished
    best: dict | None
    evaluate: Callable[..., dict]
    abstract_state: Any
    early_stop: dict | None = None  # train.early_stopping_patience ran out: where and why (see `patience_spent`)

    @property
    def stopped(self) -> bool:
        return self.signal is not None


class RunData(Protocol):
    """What the loop needs of a run's data (tasks/pretraining/input.py, tasks/features.py TaskData)."""
    summary: dict  # recorded in config.json
    eval_sets: dict  # name -> fn(batch_size, sharding) -> batches, scored by the task

    def train_iterator(self, batch_size: int, sharding, seed: int) -> Iterator[dict]:
        """Batches forever, with get_state()/set_state() for the checkpoint (its `tokenizer`, when it has one, is
        copied into the workdir)."""


@dataclasses.dataclass
class Run:
    task: Task
    data: RunData
    model_cfg: AlbertConfig
    config: ml_collections.ConfigDict  # the experiment config: config.train and config.mesh are read here
    init_params: Callable[[], Any] | None = None  # host parameters to start from when the workdir has none
    select: str | None = None  # keep the checkpoint with the best eval/<select> in workdir/best
    extra_meta: dict = dataclasses.field(default_factory=dict)


def check_resume(config, workdir: str) -> None:
    """Refuse, before any data is built, a resume whose config changes what the recorded run is (or its schedule,
    without the flag): `_setup` compares the whole record later, but a changed data field would first build the
    new data (minutes) only to be refused. This compares the part known now, the experiment config, the same way."""
    if not ckpt.has_steps(os.path.join(workdir, rundir.CHECKPOINTS)):
        return
    recorded = wdir.read_record(workdir)
    if recorded is None or "experiment" not in recorded:
        return
    wdir.reconcile(workdir, {"experiment": recorded["experiment"]},
                   {"experiment": json.loads(json.dumps(jsonable(config)))},
                   allow_changed_schedule=bool(config.train.allow_changed_schedule), at_step=None)


def _concat(chunks: list[dict]) -> dict | None:
    if not chunks:
        return None
    return {k: np.concatenate([np.asarray(c[k]) for c in chunks], axis=0) for k in chunks[0]}


def evaluate(eval_step, params, task, eval_sets: dict, batch_size: int, sharding, num_batches: int = 0,
             keep: dict | None = None) -> dict[str, float]:
    """Every eval set: sums added over batches, per-example predictions collected; the task turns them into
    metrics. num_batches > 0 caps the batches per set (pretraining); 0 reads each set whole (fine-tuning).
    keep: a dict that receives each set's per-example predictions (the tables' intervals bootstrap over them)."""
    out: dict[str, float] = {}
    for name, make_iter in eval_sets.items():
        sums, preds = None, []
        for i, batch in enumerate(make_iter(batch_size, sharding)):
            if num_batches and i >= num_batches:
                break
            s, p = jax.device_get(eval_step(params, batch))
            sums = s if sums is None else {k: sums[k] + s[k] for k in s}
            if p is not None:
                preds.append(p)
        if sums is not None:
            # an eval set of a fine-tuning task also carries the features its predictions decode against
            out.update(task.finalize(sums, _concat(preds), name, features=getattr(make_iter, "features", None)))
            if keep is not None and preds:
                keep[name] = _concat(preds)
    return out


def _last_good(step: int | None, directory: str) -> str:
    """The end of a non-finite error: which checkpoint a rerun would resume from (true at the moment it is said:
    only steps this run restored or saved after checking them count)."""
    if step is None:
        return (f"no checkpoint was saved in {directory}, so there is nothing to resume from: rerun with a lower "
                "train.learning_rate or more train.warmup_steps")
    return (f"the last good checkpoint is step {step} in {directory}; a rerun resumes there (to change course, "
            f"lower train.learning_rate with --set {wdir.FLAG}=true)")


def _resume_best(best_ckpt, start: int) -> dict:
    """The best dev checkpoint to carry on from, verified. One from a step past the resumed one (the walk-back
    rolled the run back) is set aside and the best is chosen again as those steps are repeated; a damaged one stops
    the run: the best evaluation it held cannot be recovered."""
    step = best_ckpt.steps()[-1]
    if step > start:
        log.warning("best checkpoint %s/%d set aside: it is from after the resumed step %d; the best is chosen again "
                    "as those steps are repeated", best_ckpt.directory, step, start)
        best_ckpt.set_aside([(step, f"from step {step}, after the resumed step {start}")], "rolled-back")
        return {"value": -math.inf, "step": 0}
    try:
        best_ckpt.verify(step)
    except ckpt.ChecksumError as e:
        raise ckpt.CheckpointError(f"the best checkpoint {best_ckpt.directory}/{step} is damaged ({e}): the best "
                                   "evaluation it held cannot be recovered; rerun in a fresh workdir") from e
    meta = ckpt.read_meta(best_ckpt.directory, step)
    return {"value": meta.get("best_value", -math.inf), "step": meta.get("step", 0)}


def patience_spent(t, best: dict, done: int) -> dict | None:
    """Early stopping: None, or why the run stops at step `done` (train.early_stopping_patience dev evaluations
    since the best one, by the run's `select` metric). The evaluations are counted from the steps (they fall on
    multiples of train.eval_every), so a run resumed from its last checkpoint counts as if it had not stopped."""
    patience = int(t.early_stopping_patience) if "early_stopping_patience" in t else 0  # a fine-tuning field
    if not patience or done >= t.num_train_steps:
        return None
    since = done // t.eval_every - best["step"] // t.eval_every
    if since < patience:
        return None
    return {"step": done, "reason": "early_stopping", "best_step": best["step"], "patience": patience,
            "evaluations_without_improvement": since}


def train(run: Run, workdir: str) -> TrainResult:
    """Train `run` in `workdir` (resuming what it holds); returns a TrainResult.

    Refused (WorkdirError, before anything is written) when another run holds the workdir or the workdir records
    another model/data, or a changed schedule without train.allow_changed_schedule=true."""
    os.makedirs(workdir, exist_ok=True)
    with wdir.lock(workdir):
        return _train(run, workdir)


@dataclasses.dataclass
class _Session:
    """What the setup phase builds for the others: the run's program (training/program.py: its schedule, abstract
    state, init and steps), the checkpoint directories and the data."""
    prog: program.Program
    checkpointer: Any  # ckpt.Checkpointer of workdir/checkpoints
    best_ckpt: Any  # of workdir/best, for runs with `select`; None otherwise
    batches: Any


def _train(run: Run, workdir: str) -> TrainResult:
    """The phases: setup (the run's identity checked and recorded, steps compiled), restore (the newest good
    checkpoint, or fresh parameters), train (the step loop with its evaluations and saves), finish (files closed)."""
    session = _setup(run, workdir)
    start, state, best = _restore(run, session)
    try:
        state, last_eval, best, stop_signal, early = _train_steps(run, workdir, session, start, state, best)
    finally:
        _finish(session)
    t, prog = run.config.train, session.prog
    return TrainResult(
        eval=last_eval, step=int(jax.device_get(state.step)), signal=stop_signal,
        best=best if session.best_ckpt is not None else None, abstract_state=prog.abstract_state, early_stop=early,
        evaluate=lambda params, sets, keep=None: evaluate(prog.eval_step, params, run.task, sets, t.batch_size,
                                                          prog.batch_sh, 0, keep=keep))


def _setup(run: Run, workdir: str) -> _Session:
    config, task, data, model_cfg = run.config, run.task, run.data, run.model_cfg
    t = config.train
    ckpt_dir, best_dir = os.path.join(workdir, rundir.CHECKPOINTS), os.path.join(workdir, rundir.BEST)
    record = {"experiment": jsonable(config), "model": model_cfg.to_dict(), "task": task.describe(),
              "data": data.summary, "jax": jax.__version__, "devices": jax.device_count(),
              "device_kind": jax.devices()[0].device_kind, **run.extra_meta}
    resuming = ckpt.has_steps(ckpt_dir) or (run.select is not None and ckpt.has_steps(best_dir))
    recorded = wdir.read_record(workdir) if resuming else None
    latest = rundir.latest_step(ckpt_dir)
    # Compare before anything is written: a refused resume leaves config.json as the run recorded it.
    record, changes = wdir.reconcile(workdir, recorded, json.loads(json.dumps(record)),
                                     allow_changed_schedule=bool(t.allow_changed_schedule),
                                     at_step=latest)
    if changes:
        log.warning("resuming with changed settings (recorded in config.json 'changes'): %s",
                    ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in changes.items()))
    mesh = shd.make_mesh(config.mesh.data, config.mesh.fsdp, config.mesh.tensor)
    if jax.process_index() == 0:
        wdir.write_record(workdir, record)
        tokenizer = getattr(data, "tokenizer", None)
        if tokenizer is not None and hasattr(tokenizer, "save"):
            tokenizer.save(workdir)  # the run's own copy: fine-tuning and export read it from here

    prog = program.build(task, model_cfg, t, mesh)
    return _Session(
        prog=prog,
        # Under the workdir lock this run is the only writer: unfinished writes left in either directory are stale.
        checkpointer=ckpt.Checkpointer(ckpt_dir, keep=t.keep_checkpoints, clean_temporaries=True),
        best_ckpt=ckpt.Checkpointer(best_dir, keep=1, clean_temporaries=True) if run.select else None,
        batches=data.train_iterator(t.batch_size, prog.batch_sh, seed=t.seed))


def _restore(run: Run, s: _Session):
    """(first step to run, state, best dev evaluation so far) from the newest good checkpoint, or a fresh start."""
    t = run.config.train
    # Loading the data-iterator state is part of restoring a step: a damaged one sends the walk back too.
    restored = s.checkpointer.restore_latest(s.prog.abstract_state, validate=lambda _s, d, _m: s.batches.set_state(d))
    best = {"value": -math.inf, "step": 0}
    if restored is None:
        start = 0
        if run.init_params is not None:
            state = s.prog.from_params(run.init_params())
        else:
            state = s.prog.init(jax.random.PRNGKey(t.seed))
    else:
        start, state, _, _ = restored  # its data-iterator state is loaded (the walk-back's `validate`)
        log.info("resumed from step %d", start)
    # Also on a fresh start: a run killed after its first best checkpoint but before its first regular one restarts
    # from step 0, and that best (from a step it will repeat) must be set aside, or saving the repeat fails.
    if s.best_ckpt is not None and s.best_ckpt.steps():
        best = _resume_best(s.best_ckpt, start)
    return start, state, best


def _finish(s: _Session) -> None:
    try:
        s.checkpointer.close()
    finally:
        if s.best_ckpt is not None:
            s.best_ckpt.close()


def _evaluate_at(run: Run, workdir: str, s: _Session, state, done: int, best: dict, writer, clock):
    """Step `done`'s evaluation, written to the metrics (the final one also keeps its examples); for a run with
    `select`, the best dev checkpoint so far, saved when this evaluation beats it. Returns (evaluation, best)."""
    t = run.config.train
    kept = {} if done == t.num_train_steps else None
    last_eval = evaluate(s.prog.eval_step, state.params, run.task, run.data.eval_sets, t.batch_size, s.prog.batch_sh,
                         t.eval_batches, keep=kept)
    if kept and jax.process_index() == 0:
        examples.save_examples(os.path.join(workdir, examples.EXAMPLES_FILE), kept)
    writer.write(done, {**{f"eval/{k}": v for k, v in last_eval.items()}, **clock.elapsed()})
    if s.best_ckpt is None:
        return last_eval, best
    value = last_eval.get(run.select)
    if value is None:
        raise ValueError(f"train.select={run.select!r} is not among the eval metrics {sorted(last_eval)}")
    score = value if math.isfinite(value) else -math.inf  # a NaN metric never wins later
    if best["step"] == 0 or score > best["value"]:
        best = {"value": score, "step": done}
        s.best_ckpt.save(done, state, s.batches.get_state(),
                         _meta(run, done, best_metric=run.select, best_value=score, eval=last_eval),
                         check_finite=False)  # the caller checked the state
        # Synchronous: once the step's regular checkpoint exists, the best up to it is on disk, so a run killed at
        # any moment resumes with the same best.
        s.best_ckpt.wait()
    return last_eval, best


class _Signals:
    """SIGTERM and SIGINT noted, not acted on, while the steps run: the loop checkpoints the step it is at, then
    stops (`signal` is the one that came, or None). The previous handlers come back on exit."""

    def __enter__(self):
        self.signal = None
        self._old = {sig: signal.signal(sig, self._note) for sig in (signal.SIGTERM, signal.SIGINT)}
        return self

    def _note(self, signum, _frame):
        self.signal = signum

    def __exit__(self, *exc):
        for sig, handler in self._old.items():
            signal.signal(sig, handler)


def _train_steps(run: Run, workdir: str, s: _Session, start: int, state, best: dict):
    """Steps `start`..num_train_steps with logging, evaluation, the best checkpoint and saves; stops early at a
    signal or when early stopping's patience is spent (after checkpointing). Returns (state, last evaluation, best,
    the signal that stopped it or None, `patience_spent`'s record or None)."""
    t = run.config.train
    last_good = [start if start else None]  # the newest checked checkpoint on disk
    kept = rundir.truncate_metrics(os.path.join(workdir, rundir.METRICS), start) if jax.process_index() == 0 else []
    clock, writer = mx.RunClock.resumed_from(kept), mx.MetricWriter(workdir)
    progress = Progress(run, s.prog.schedule, writer, clock, start,
                        lambda: _last_good(last_good[0], s.checkpointer.directory))
    rng = jax.random.PRNGKey(t.seed + 1)  # folded with the step inside train_step
    pending = None  # (step number, metrics, batch length) of the step dispatched last, read one step later
    last_eval: dict[str, float] = {}
    # A run killed after its early-stopping checkpoint and before its caller finished resumes stopped.
    early = patience_spent(t, best, start) if s.best_ckpt is not None and start else None
    with _Signals() as stop:
        try:
            for step in range(start, start if early else t.num_train_steps):
                batch = next(s.batches)
                state, new_metrics = s.prog.train_step(state, batch, rng)
                s.checkpointer.poll()  # a failed background save stops the run here, not several saves later
                if pending is not None:
                    progress.step(*pending)  # step t-1's metrics, read while step t runs
                done = step + 1
                pending = (done, new_metrics, int(batch["input_ids"].shape[-1]))
                do_eval = done % t.eval_every == 0 or done == t.num_train_steps
                do_save = done % t.checkpoint_every == 0 or done == t.num_train_steps
                if not (do_eval or do_save or stop.signal):
                    continue
                progress.step(*pending)
                pending = None
                _check_state(state, done, progress.last_good())
                if do_eval:
                    last_eval, best = _evaluate_at(run, workdir, s, state, done, best, writer, clock)
                    if s.best_ckpt is not None:
                        early = patience_spent(t, best, done)
                # The signal is read after the evaluation, so one that came during it or the best checkpoint's save
                # is seen, and a run stops only from inside this save: the step it names is always saved. One that
                # comes after the check below (during the save itself excepted) stops the run at the next step.
                if do_save or stop.signal or early:
                    s.checkpointer.save(done, state, s.batches.get_state(), _meta(run, done), check_finite=False)
                    last_good[0] = done
                    writer.flush()
                    if _stopping(run, stop.signal, early, done):
                        break
                progress.meter.pause()
        finally:
            progress.close()
            writer.close()
    return state, last_eval, best, stop.signal, early


def _meta(run: Run, step_done: int, **extra) -> dict:
    """What a checkpoint records beside the state."""
    return {"step": step_done, "config": jsonable(run.config), "model": run.model_cfg.to_dict(),
            "task": run.task.describe(), "versions": {"jax": jax.__version__}, **extra}


def _check_state(state, done: int, last_good: str) -> None:
    """`state` is exactly step `done`: finite before it is evaluated or saved. The loss and gradient can be finite
    while the update already made the parameters NaN."""
    bad = ckpt.nonfinite_leaves(state)
    if bad:
        raise NonFiniteLossError(f"non-finite values in the train state at step {done} ({ckpt.describe_leaves(bad)}) "
                                 f"although the loss and gradient were finite; it was not saved; {last_good}")


def _stopping(run: Run, signum, early, done: int) -> bool:
    """Whether the run stops after the save of step `done`, said in one line: a signal, or early stopping."""
    if signum:
        log.warning("signal %d: checkpointed step %d, stopping", signum, done)
        return True
    if early:
        log.warning("early stopping at step %d: %d dev evaluations without a better %s than step %d's "
                    "(train.early_stopping_patience=%d)", done, early["evaluations_without_improvement"],
                    run.select, early["best_step"], early["patience"])
        return True
    return False
