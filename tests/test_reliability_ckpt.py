"""What a run guarantees about its workdir and checkpoints (docs/training.md, "What a run guarantees"): checksummed
checkpoints that fall back when damaged, no non-finite state saved, a true one-line error for a non-finite run,
keep_checkpoints=0 refused, one writer per workdir with a lock a killed run does not leave stuck, a resume that
matches the recorded run, a damaged data-iterator state falling back, stale orbax temporaries removed, a failed
save reported at once in one line, and the same for fine-tuning's best/ checkpoint."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from albert_jax.training import checkpoints as ckpt
from albert_jax.training.rundir import read_metrics
from fault_main import command as albert_jax_cli
from procs import user_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# 8 steps, checkpoints at 4 and 8, one evaluation at the end.
TINY = ["--config", "experiments/pretrain.py:scale=smoke", "--log-level", "WARNING",
        "--set", "train.batch_size=8", "--set", "train.num_train_steps=8", "--set", "train.log_every=1",
        "--set", "train.eval_every=8", "--set", "train.eval_batches=1", "--set", "train.checkpoint_every=4",
        "--set", "data.max_seq_length=64", "--set", "model.num_hidden_layers=2"]


JAX_CACHE = {}  # one persistent compilation cache for the module's runs: the same tiny model compiles once


@pytest.fixture(scope="module", autouse=True)
def _compile_cache(tmp_path_factory):
    JAX_CACHE["JAX_COMPILATION_CACHE_DIR"] = str(tmp_path_factory.mktemp("jax_cache"))
    yield
    JAX_CACHE.clear()


def _env(extra=None):
    e = user_env(drop=("ALBERT_JAX_DEBUG",))
    e.update(JAX_CACHE)
    e.update(extra or {})
    return e


def _cmd(workdir, *extra, command="pretrain", kill_at=None):
    return [*albert_jax_cli(kill_at), command, "--workdir", str(workdir), *TINY, *extra]


def pretrain(workdir, *extra, env=None, check=True, kill_at=None):
    p = subprocess.run(_cmd(workdir, *extra, kill_at=kill_at), cwd=ROOT, env=_env(env), capture_output=True, text=True,
                       timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"pretrain failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return p


def sets(*pairs):
    return [x for p in pairs for x in ("--set", p)]


def error_line(p):
    """The CLI's one-line error: the last stderr line, which must be the only line mentioning 'error:'."""
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    errors = [ln for ln in lines if "error:" in ln]
    assert len(errors) == 1 and lines[-1] == errors[0], p.stderr[-3000:]
    return errors[0]


def rows(workdir):
    return {r["step"]: r for r in read_metrics(os.path.join(workdir, "metrics.jsonl")) if "loss" in r}


def steps_of(directory):
    return sorted(int(n) for n in os.listdir(directory) if n.isdigit())


def biggest_file(directory):
    return max((os.path.join(r, f) for r, _, fs in os.walk(directory) for f in fs), key=os.path.getsize)


def flip_16_bytes(path):
    """Invert 16 bytes in the middle of a file (inside the compressed array data of the biggest state file)."""
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        chunk = f.read(16)
        f.seek(os.path.getsize(path) // 2)
        f.write(bytes(b ^ 0xFF for b in chunk))


def saved_params_finite(workdir):
    import jax
    import numpy as np

    from albert_jax.runs.pretrain import params_from_workdir
    for step in steps_of(os.path.join(workdir, "checkpoints")):
        params = params_from_workdir(str(workdir), step)[2]
        assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves(params)), step


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    wd = tmp_path_factory.mktemp("rel") / "base"
    pretrain(wd)
    return wd


def copy_of(base, tmp_path, name):
    wd = tmp_path / name
    shutil.copytree(base, wd)
    return wd


def test_every_step_has_a_manifest_that_verifies(base):
    c = os.path.join(base, "checkpoints")
    assert steps_of(c) == [4, 8]
    for s in (4, 8):
        files = json.load(open(os.path.join(c, str(s), ckpt.MANIFEST)))["files"]
        assert any(k.startswith("state/") for k in files) and "data/metadata" in files
        assert ckpt.verify_step_dir(os.path.join(c, str(s)))
    assert not [n for n in os.listdir(c) if ckpt.TMP_MARK in n]


def test_flipped_bytes_fall_back_to_the_previous_step_and_stale_temporaries_go(base, tmp_path):
    wd = copy_of(base, tmp_path, "flipped")
    flip_16_bytes(biggest_file(wd / "checkpoints" / "8" / "state"))  # orbax alone restores this without a word
    stale = [wd / "checkpoints" / "9.orbax-checkpoint-tmp", wd / "checkpoints" / "12.orbax-checkpoint-tmp-1764000000"]
    for d in stale:
        (d / "state").mkdir(parents=True)
    p = pretrain(wd)
    assert "checkpoint at step 8" in p.stderr and "sha256 mismatch" in p.stderr, p.stderr[-3000:]
    assert "removed 2 unfinished checkpoint write(s)" in p.stderr
    assert not any(d.exists() for d in stale)
    c = wd / "checkpoints"
    assert (c / "unrestorable-8").is_dir() and "sha256" in (c / "unrestorable-8" / "REASON.txt").read_text()
    assert steps_of(c) == [4, 8]  # steps 5..8 were trained again from step 4 and saved, verified
    assert ckpt.verify_step_dir(str(c / "8"))
    assert rows(wd)[8]["loss"] == rows(base)[8]["loss"]  # the re-run is the same run, and finite
    saved_params_finite(wd)


def test_damaged_data_iterator_state_falls_back(base, tmp_path):
    """A workdir written before manifests (none here): the damaged iterator state is found when it is loaded."""
    wd = copy_of(base, tmp_path, "data")
    for s in (4, 8):
        os.remove(wd / "checkpoints" / str(s) / ckpt.MANIFEST)
    meta = wd / "checkpoints" / "8" / "data" / "metadata"
    inner = json.loads(meta.read_text())["__bytes__"]
    meta.write_text(json.dumps({"__bytes__": inner[: len(inner) // 2]}))  # valid JSON, a cut iterator state
    p = pretrain(wd)
    assert "checkpoint at step 8" in p.stderr and "cannot be restored" in p.stderr, p.stderr[-3000:]
    assert "step 4" in p.stderr and "restored unverified" in p.stderr
    assert (wd / "checkpoints" / "unrestorable-8").is_dir()
    assert rows(wd)[8]["loss"] == rows(base)[8]["loss"]


def test_nonfinite_state_is_never_saved_and_the_error_names_the_last_good_step(tmp_path):
    """Warmup makes step 1's rate 0 (a good checkpoint); step 2's rate, 1.5e38, times AdamW's first update (about
    3 for every parameter with a gradient) overflows float32: the parameters become inf while that step's loss and
    gradient, computed before the update, are finite."""
    wd = tmp_path / "nan"
    p = pretrain(wd, *sets("train.optimizer='adamw'", "train.learning_rate=3e38", "train.warmup_steps=2",
                           "train.checkpoint_every=1", "train.num_train_steps=4"), check=False)
    assert p.returncode == 2
    line = error_line(p)
    assert "non-finite values in the train state at step 2" in line and "params/" in line
    assert f"the last good checkpoint is step 1 in {wd / 'checkpoints'}" in line
    assert steps_of(wd / "checkpoints") == [1]  # step 2 was never written
    assert rows(wd)[2]["loss"] < 100  # its loss was finite: only the state check caught it
    saved_params_finite(wd)


def test_nonfinite_with_nothing_saved_says_so_in_one_line(tmp_path):
    """lr=1e39 is inf in float32: step 1's parameters are already NaN/inf, with a finite loss and gradient."""
    wd = tmp_path / "nan0"
    p = pretrain(wd, *sets("train.optimizer='adamw'", "train.learning_rate=1e39", "train.warmup_steps=0",
                           "train.checkpoint_every=1", "train.num_train_steps=3"), check=False)
    assert p.returncode == 2
    line = error_line(p)
    assert "at step 1" in line and "no checkpoint was saved" in line and "is kept" not in line
    assert steps_of(wd / "checkpoints") == []


def test_keep_checkpoints_zero_is_refused(tmp_path):
    wd = tmp_path / "keep0"
    p = pretrain(wd, *sets("train.keep_checkpoints=0"), check=False)
    assert p.returncode == 2
    assert "train.keep_checkpoints=0" in error_line(p)
    assert not (wd / "checkpoints").exists() or steps_of(wd / "checkpoints") == []


def test_one_writer_per_workdir_and_a_killed_holder_does_not_leave_it_locked(tmp_path):
    wd = tmp_path / "locked"
    first = subprocess.Popen(_cmd(wd, *sets("train.num_train_steps=100000", "train.checkpoint_every=100000",
                                            "train.eval_every=100000")),
                             cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        lock, deadline = wd / "run.lock", time.time() + 300
        while time.time() < deadline and not (lock.exists() and f'"pid": {first.pid}' in lock.read_text()):
            assert first.poll() is None, first.stderr.read()[-3000:]
            time.sleep(0.5)
        second = pretrain(wd, check=False)
        assert second.returncode == 2
        line = error_line(second)
        assert f"pid {first.pid}" in line and "in use by another run" in line
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
        first.stderr.close()
    # The kernel dropped the dead holder's lock: a new run trains (and kills itself after its first step).
    third = pretrain(wd, check=False, kill_at=1)
    assert third.returncode == -9, third.stderr[-3000:]
    assert 1 in rows(wd)


def test_resume_with_another_model_is_refused_and_config_json_is_untouched(base, tmp_path):
    wd = copy_of(base, tmp_path, "model")
    before = (wd / "config.json").read_bytes()
    p = pretrain(wd, *sets("model.hidden_size=64"), check=False)
    assert p.returncode == 2
    line = error_line(p)
    assert "model.hidden_size: 128 -> 64" in line and "another model or data" in line
    assert (wd / "config.json").read_bytes() == before
    assert steps_of(wd / "checkpoints") == [4, 8]  # nothing set aside


def test_resume_with_changed_data_is_refused_before_the_new_data_is_built(base, tmp_path):
    """A changed data field (here the n-gram length) would build new pretraining instances, minutes on a real
    corpus, before the full record comparison refused it: the experiment config is compared first."""
    from albert_jax.data.fetch import default_cache_dir

    wd = copy_of(base, tmp_path, "data")
    before = (wd / "config.json").read_bytes()
    cache = default_cache_dir() / "pretrain"
    built = sorted(p.name for p in cache.glob("*/train-*"))
    p = pretrain(wd, *sets("data.ngram=2"), check=False)
    assert p.returncode == 2
    line = error_line(p)
    assert "experiment.data.ngram: 3 -> 2" in line and "another model or data" in line
    assert sorted(p.name for p in cache.glob("*/train-*")) == built  # no instances were made for ngram=2
    assert (wd / "config.json").read_bytes() == before


def test_changed_schedule_needs_the_flag_and_is_recorded(base, tmp_path):
    wd = copy_of(base, tmp_path, "schedule")
    before = (wd / "config.json").read_bytes()
    p = pretrain(wd, *sets("train.num_train_steps=10"), check=False)
    assert p.returncode == 2
    line = error_line(p)
    assert "experiment.train.num_train_steps: 8 -> 10" in line and "train.allow_changed_schedule=true" in line
    assert (wd / "config.json").read_bytes() == before
    pretrain(wd, *sets("train.num_train_steps=10", "train.allow_changed_schedule=true"))
    record = json.loads((wd / "config.json").read_text())
    assert record["experiment"]["train"]["num_train_steps"] == 10
    change = record["changes"][-1]
    assert change["at_step"] == 8
    assert change["fields"]["experiment.train.num_train_steps"] == {"from": 8, "to": 10, "kind": "schedule"}
    assert max(rows(wd)) == 10 and steps_of(wd / "checkpoints") == [4, 8, 10]


FULL_DISK = r"""
import os, resource, sys, time
import jax
from albert_jax.training import checkpoints as ckpt
d = sys.argv[1]
c = ckpt.Checkpointer(d, keep=3)
state = {"w": jax.random.normal(jax.random.PRNGKey(0), (600, 600))}
c.save(1, state, {}, {})
c.wait()
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, resource.RLIM_INFINITY))  # writes past 200 kB fail
c.save(2, state, {}, {})
try:
    for _ in range(300):
        time.sleep(0.05)
        c.poll()
    print("NO ERROR")
except ckpt.CheckpointSaveError as e:
    print("ERROR " + str(e))
c.close()
"""


def test_a_failed_save_is_one_line_naming_the_directory_and_leaves_no_temporaries(tmp_path):
    d = tmp_path / "full"
    p = subprocess.run([sys.executable, "-c", FULL_DISK, str(d)], cwd=ROOT, env=_env(), capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    out = p.stdout.strip().splitlines()
    assert len(out) == 1 and out[0].startswith(f"ERROR saving checkpoint step 2 to {d} failed: File too large"), out
    assert "Traceback" not in p.stderr
    assert sorted(os.listdir(d)) == ["1"]  # the half-written step is gone, the good one kept


def test_finetune_keeps_verified_checkpoints_and_best(base, tmp_path):
    wd = tmp_path / "ft"
    args = ["--config", f"experiments/finetune.py:task=rt_sentiment,init={base},scale=smoke", "--log-level",
            "WARNING", *sets("train.num_train_steps=4", "train.eval_every=2", "train.checkpoint_every=2",
                             "train.log_every=2", "train.batch_size=16", "data.limit=32", "data.max_seq_length=32")]
    p = subprocess.run([sys.executable, "-m", "albert_jax.main", "finetune", "--workdir", str(wd), *args], cwd=ROOT,
                       env=_env(), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    seed = wd / "seed-0"
    best = steps_of(seed / "best")
    assert len(best) == 1 and steps_of(seed / "checkpoints") == [4]
    assert ckpt.verify_step_dir(str(seed / "best" / str(best[0])))
    assert ckpt.verify_step_dir(str(seed / "checkpoints" / "4"))
    assert (seed / "run.lock").read_text() == ""  # released
    flip_16_bytes(biggest_file(seed / "best" / str(best[0]) / "state"))
    with pytest.raises(ckpt.ChecksumError, match="sha256 mismatch"):
        ckpt.verify_step_dir(str(seed / "best" / str(best[0])))


def test_a_run_recorded_before_a_model_field_existed_resumes_at_its_default(base, tmp_path):
    """A model field added later (sharing_map) reads as its default in an older record, so upgrading the code
    does not strand a run; a non-default value for it is still another model."""
    from albert_jax.training.workdir import differences

    wd = copy_of(base, tmp_path, "older")
    record = json.loads((wd / "config.json").read_text())
    for section in (record["model"], record["experiment"]["model"]):
        del section["sharing_map"]
    (wd / "config.json").write_text(json.dumps(record))
    pretrain(wd)  # resumes (finished: nothing to train) instead of refusing "sharing_map: null -> ''"
    assert steps_of(wd / "checkpoints") == [4, 8]
    new = json.loads((base / "config.json").read_text())
    assert differences(record, new) == {}
    new["model"]["sharing_map"] = "0-1.2x2"
    assert differences(record, new) == {"model.sharing_map": ("", "0-1.2x2")}
