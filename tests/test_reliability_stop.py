"""A run stopped by SIGINT or SIGTERM saves the step its message names, whenever the signal arrives: during a train
step, the data iterator's `next`, an evaluation, or a save (the best dev checkpoint's or a regular one); and the
rerun resumes from that step (issue 50: a signal during an evaluation once claimed a checkpoint that was never
written, and the rerun started again from step 0).

Each stage is a real `albert-jax` process that sends itself the signal inside the named call (tests/signal_main.py)
and is then rerun, as a user would, with the same command. One pretraining workdir goes through four stages and
one fine-tuning workdir (from it) through three, every stage resuming the one before."""
import os
import signal
import subprocess
import sys

import pytest

from procs import user_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIGNAL_MAIN = os.path.join(ROOT, "tests", "signal_main.py")
# 6 steps, an evaluation after every one (the reported setting), scheduled checkpoints at 4 and 6.
PRETRAIN = ["--config", "experiments/pretrain.py:scale=smoke", "--log-level", "INFO",
            "--set", "train.batch_size=8", "--set", "train.num_train_steps=6", "--set", "train.log_every=1",
            "--set", "train.eval_every=1", "--set", "train.eval_batches=1", "--set", "train.checkpoint_every=4",
            "--set", "data.max_seq_length=64", "--set", "model.num_hidden_layers=2"]
# 3 steps, the dev set evaluated after every one, no scheduled checkpoint before the last.
FINETUNE = ["--log-level", "INFO", "--set", "train.num_train_steps=3", "--set", "train.eval_every=1",
            "--set", "train.checkpoint_every=100", "--set", "train.log_every=1", "--set", "train.batch_size=16",
            "--set", "data.limit=32", "--set", "data.max_seq_length=32"]


def steps_of(directory):
    return sorted(int(n) for n in os.listdir(directory) if n.isdigit()) if os.path.isdir(directory) else []


def run(command, workdir, args, env, signal_at=None):
    """One `albert-jax` process; `signal_at` = (point, n, "INT" or "TERM") sends that signal during the n-th call of
    the point. Returns the process and the checkpoint steps on disk once it has exited."""
    prefix = [SIGNAL_MAIN, *map(str, signal_at)] if signal_at else ["-m", "albert_jax.main"]
    p = subprocess.run([sys.executable, *prefix, command, "--workdir", str(workdir), *args], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    seed = os.path.join(workdir, "seed-0") if command == "finetune" else str(workdir)
    return {"proc": p, "checkpoints": steps_of(os.path.join(seed, "checkpoints")),
            "best": steps_of(os.path.join(seed, "best"))}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    e = user_env(drop=("ALBERT_JAX_DEBUG",))
    e["JAX_COMPILATION_CACHE_DIR"] = str(tmp_path_factory.mktemp("jax_cache"))  # the same tiny model compiles once
    return e


@pytest.fixture(scope="module")
def pretraining(tmp_path_factory, env):
    """Stopped during the first evaluation, then (each a resume) during its first train step and during its first
    save, then finished."""
    wd = tmp_path_factory.mktemp("stop") / "pretrain"
    stages = {point: run("pretrain", wd, PRETRAIN, env, (point, 1, sig))
              for point, sig in (("eval", "INT"), ("step", "TERM"), ("save", "INT"))}
    stages["finish"] = run("pretrain", wd, PRETRAIN, env)
    return wd, stages


@pytest.fixture(scope="module")
def finetuning(pretraining, env):
    """From the finished pretraining run: stopped during the first save (the best dev checkpoint of step 1), then
    during the resume's first batch, then finished."""
    wd = pretraining[0].parent / "finetune"
    args = ["--config", f"experiments/finetune.py:task=rt_sentiment,init={pretraining[0]},scale=smoke", *FINETUNE]
    stages = {point: run("finetune", wd, args, env, (point, 1, sig)) for point, sig in (("save", "INT"),
                                                                                        ("data", "TERM"))}
    stages["finish"] = run("finetune", wd, args, env)
    return wd, stages


def check_stop(stage, resumed, command, sig, step, seed=""):
    """The stage exited as stopped by `sig` naming `step`, which was on disk when it exited, and the next stage
    resumed from exactly that step."""
    p = stage["proc"]
    assert p.returncode == 128 + sig, p.stderr[-3000:]
    where = f"seed {seed}, " if seed != "" else ""
    assert p.stderr.strip().splitlines()[-1] == (f"albert-jax {command}: stopped by {signal.Signals(sig).name} after "
                                                 f"checkpointing ({where}step {step}); run the same command to "
                                                 "continue"), p.stderr[-3000:]
    assert stage["checkpoints"] and stage["checkpoints"][-1] == step, (stage["checkpoints"], p.stderr[-3000:])
    r = resumed["proc"]
    assert f"resumed from step {step}\n" in r.stderr, r.stderr[-3000:]
    assert "set aside" not in r.stderr and "Traceback" not in r.stderr, r.stderr[-3000:]


def test_a_signal_during_an_evaluation_saves_the_step_it_names(pretraining):
    s = pretraining[1]
    check_stop(s["eval"], s["step"], "pretrain", signal.SIGINT, 1)


def test_a_signal_during_a_train_step_saves_the_step_it_names(pretraining):
    s = pretraining[1]
    check_stop(s["step"], s["save"], "pretrain", signal.SIGTERM, 2)


def test_a_signal_during_a_regular_save_stops_after_it(pretraining):
    s = pretraining[1]
    check_stop(s["save"], s["finish"], "pretrain", signal.SIGINT, 4)  # the first save of the resume: step 4's


def test_the_stopped_pretraining_run_finishes_with_every_step_once(pretraining):
    from albert_jax.training.rundir import read_metrics

    wd, s = pretraining
    assert s["finish"]["proc"].returncode == 0, s["finish"]["proc"].stderr[-3000:]
    steps = [r["step"] for r in read_metrics(os.path.join(wd, "metrics.jsonl")) if "loss" in r]
    assert steps == [1, 2, 3, 4, 5, 6]


def test_a_signal_during_the_best_checkpoint_save_saves_the_step_it_names(finetuning):
    s = finetuning[1]
    assert s["save"]["best"] == [1]  # the first save of a fine-tuning run is its first best dev checkpoint
    check_stop(s["save"], s["data"], "finetune", signal.SIGINT, 1, seed=0)


def test_a_signal_during_the_data_iterator_saves_the_step_it_names(finetuning):
    s = finetuning[1]
    check_stop(s["data"], s["finish"], "finetune", signal.SIGTERM, 2, seed=0)
    assert s["finish"]["proc"].returncode == 0, s["finish"]["proc"].stderr[-3000:]
    assert os.path.isfile(os.path.join(finetuning[0], "seed-0", "results.json"))
