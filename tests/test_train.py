"""Training: sharded equals single-device, compile once, exact resume after SIGKILL, corrupt-checkpoint walk-back,
non-finite stop, and a smoke run on the real English corpus whose loss falls."""
import json
import os
import re
import shutil
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from albert_jax import sharding as shd
from albert_jax.config import preset
from albert_jax.runs.pretrain import params_from_workdir
from albert_jax.tasks.pretraining.task import PretrainingTask
from albert_jax.training import checkpoints as ckpt
from albert_jax.training import optim
from albert_jax.training import state as st
from albert_jax.training import step as ts
from albert_jax.training.rundir import read_metrics
from fault_main import command
from procs import user_env

CFG = preset("tiny", num_hidden_layers=2, sharing="attention")
B, S, P = 16, 16, 3


def synthetic_batches(n, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        ids = rng.integers(5, CFG.vocab_size, (B, S)).astype(np.int32)
        mask = np.ones((B, S), np.int32)
        mask[::3, 12:] = 0
        out.append({"input_ids": ids, "input_mask": mask, "segment_ids": (np.arange(S) >= 8).astype(np.int32)[None]
                    .repeat(B, 0), "masked_lm_positions": rng.integers(1, 12, (B, P)).astype(np.int32),
                    "masked_lm_ids": rng.integers(5, CFG.vocab_size, (B, P)).astype(np.int32),
                    "masked_lm_weights": np.ones((B, P), np.float32),
                    "next_sentence_labels": rng.integers(0, 2, (B,)).astype(np.int32)})
    return out


def run_steps(mesh, batches, accum=1, cfg=CFG):
    boxed = st.abstract_params(PretrainingTask(), cfg)
    tx = optim.make_optimizer("lamb", 1e-3, 100, 2, stacked_axes_fn=optim.stacked_axes_from_boxed(boxed))
    abstract, shardings = st.state_shardings(tx, mesh, st.abstract_params(PretrainingTask(), cfg))
    state = st.init_state(PretrainingTask(), cfg, tx, mesh, jax.random.PRNGKey(0), shardings)
    train, _ = ts.jit_steps(PretrainingTask("sop"), cfg, tx, mesh, shardings, accum)
    losses = []
    for b in batches:
        state, m = train(state, shd.shard_batch(b, mesh), jax.random.PRNGKey(1))
        losses.append(float(m["loss"]))
    return jax.device_get(state.params), losses, train


@pytest.fixture(scope="module")
def single_device_run():
    batches = synthetic_batches(3)
    return batches, run_steps(shd.make_mesh(devices=jax.devices()[:1]), batches)


@pytest.mark.parametrize("shape", [(8, 1, 1), (2, 2, 2), (1, 4, 2), (1, 8, 1)])
def test_sharded_equals_single_device(single_device_run, shape):
    batches, (ref_params, ref_losses, _) = single_device_run
    params, losses, train = run_steps(shd.make_mesh(*shape), batches)
    # Sharded reductions sum in another order: equal to float32 rounding, not bitwise.
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=2e-5, rtol=1e-4), params, ref_params)
    assert train.jitted._cache_size() == 1  # the step compiled once for the whole run


def test_gradient_accumulation_matches_one_big_batch(single_device_run):
    batches, (ref_params, ref_losses, _) = single_device_run
    params, losses, _ = run_steps(shd.make_mesh(8, 1, 1), batches, accum=2)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=2e-5, rtol=1e-4), params, ref_params)


def test_accumulation_is_exact_when_micro_batches_hold_different_token_counts():
    """Micro-batches with very different numbers of masked tokens: a mean of micro-batch means would weight
    them equally and differ from the full batch; sums over the whole batch's counts do not."""
    batches = synthetic_batches(2, seed=3)
    for b in batches:
        w = np.ones_like(b["masked_lm_weights"])
        w[0::4, 1:] = 0.0  # micro-batch 0 of 4 (rows 0, 4, 8...) has 1 masked token per row, the others 3
        b["masked_lm_weights"] = w
    mesh = shd.make_mesh(devices=jax.devices()[:1])
    ref_params, ref_losses, _ = run_steps(mesh, batches)
    params, losses, _ = run_steps(mesh, batches, accum=4)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=2e-5, rtol=1e-4), params, ref_params)


# ---------------------------------------------------------------- end-to-end runs of `albert-jax pretrain`
# The smoke data; warm-up past the last step keeps the learning rate independent of num_train_steps, so a run
# lengthened on resume (below) retraces the recorded steps exactly.
SMOKE = ["--config", "experiments/pretrain.py:scale=smoke", "--set", "train.warmup_steps=200",
         "--set", "train.batch_size=8", "--set", "train.num_train_steps=12", "--set", "train.log_every=1",
         "--set", "train.eval_every=6", "--set", "train.eval_batches=2", "--set", "train.checkpoint_every=4",
         "--set", "data.max_seq_length=64", "--set", "model.num_hidden_layers=2"]
DETERMINISTIC = ("loss", "mlm_loss", "sentence_loss", "mlm_accuracy", "sentence_accuracy", "grad_norm",
                 "param_norm", "learning_rate", "eval/mlm_accuracy", "eval/sop_accuracy", "eval/nsp_accuracy")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pretrain(workdir, *extra, env=None, check=True, kill_at=None):
    # A fresh process: one CPU device, as a user's laptop run.
    e = user_env()
    e.update(env or {})
    p = subprocess.run([*command(kill_at), "pretrain", "--workdir", str(workdir), *SMOKE,
                        *extra], cwd=ROOT, env=e, capture_output=True, text=True, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"pretrain failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return p


def by_step(workdir):
    rows = {}
    for r in read_metrics(os.path.join(workdir, "metrics.jsonl")):
        rows.setdefault(r["step"], {}).update({k: v for k, v in r.items() if k in DETERMINISTIC})
    return rows


def final_params(workdir, step):
    return params_from_workdir(str(workdir), step)[2]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    wd = tmp_path_factory.mktemp("run") / "uninterrupted"
    pretrain(wd)
    return wd


def test_sigkill_and_resume_is_bitwise_identical(uninterrupted, tmp_path):
    wd = tmp_path / "killed"
    p = pretrain(wd, check=False, kill_at=6)
    assert p.returncode == -9  # really killed, no clean-up ran
    assert ckpt.Checkpointer(str(wd / "checkpoints")).steps() == [4]
    pretrain(wd)  # resumes from step 4 on its own
    ref, got = by_step(uninterrupted), by_step(wd)
    assert sorted(got) == sorted(ref) == list(range(1, 13))
    for step in ref:
        assert got[step] == ref[step], step
    a, b = final_params(uninterrupted, 12), final_params(wd, 12)
    jax.tree.map(np.testing.assert_array_equal, a, b)


def test_corrupt_latest_checkpoint_falls_back_with_a_warning(uninterrupted, tmp_path):
    wd = tmp_path / "corrupt"
    shutil.copytree(uninterrupted, wd)
    state_dir = wd / "checkpoints" / "12" / "state"
    for root, _, files in os.walk(state_dir):
        for f in files:
            with open(os.path.join(root, f), "r+b") as fh:
                fh.truncate(max(0, os.path.getsize(os.path.join(root, f)) // 3))
    # A longer schedule than the run recorded: allowed because asked for (and recorded in config.json).
    p = pretrain(wd, "--set", "train.num_train_steps=14", "--set", "train.allow_changed_schedule=true")
    assert "checkpoint at step 12" in p.stderr and "cannot be restored" in p.stderr
    rows = by_step(wd)
    assert max(rows) == 14
    assert rows[9] == by_step(uninterrupted)[9]  # steps 9.. were re-run from step 8's checkpoint, identically
    assert 8 in ckpt.Checkpointer(str(wd / "checkpoints")).steps()


def test_non_finite_loss_stops_with_the_step_and_keeps_the_last_good_checkpoint(tmp_path):
    wd = tmp_path / "nan"
    p = pretrain(wd, "--set", "train.optimizer='adamw'", "--set", "train.learning_rate=1e30",
                 "--set", "train.warmup_steps=0", "--set", "train.checkpoint_every=1", check=False)
    assert p.returncode != 0
    assert "non-finite loss or gradient at step" in p.stderr
    step = int(p.stderr.split("non-finite loss or gradient at step ")[1].split()[0])
    steps = ckpt.Checkpointer(str(wd / "checkpoints")).steps()
    assert steps and max(steps) == step - 1  # the bad state was never saved


def test_init_from_group0_through_the_trainer(uninterrupted, tmp_path):
    from albert_jax.config import AlbertConfig
    from albert_jax.modeling.init_tricks import init_from_group0

    wd = tmp_path / "unshared"
    pretrain(wd, "--set", "model.num_hidden_layers=2", "--set", "model.sharing=none",
             "--set", "train.num_train_steps=1", "--set", f"train.init_from='{uninterrupted}'",
             "--set", "train.init_mode='group0'", "--set", "train.learning_rate=0.0", "--set", "train.warmup_steps=0")
    src_cfg = AlbertConfig.from_dict(json.load(open(uninterrupted / "config.json"))["model"])
    dst_cfg = AlbertConfig.from_dict(json.load(open(wd / "config.json"))["model"])
    assert dst_cfg.sharing == "none"
    expected = init_from_group0(final_params(uninterrupted, 12), src_cfg, dst_cfg)
    got = final_params(wd, 1)  # one step at learning rate 0 leaves the initial parameters untouched
    jax.tree.map(np.testing.assert_array_equal, got, expected)


def test_own_corpus_with_dynamic_masking(tmp_path):
    """A user's corpus in the official format, masks re-drawn each epoch inside the pipeline."""
    fixture = os.path.join(ROOT, "tests", "fixtures", "sotu_sample.txt")
    wd = tmp_path / "own"
    pretrain(wd, "--set", "data.corpus='text_corpus/sotu_sample'", "--set", f"data.corpus_paths='{fixture}'",
             "--set", "data.masking='dynamic'", "--set", "data.vocab_size=2000", "--set", "data.max_docs=0",
             "--set", "data.held_out_fraction=0.2",
             "--set", "train.num_train_steps=4", "--set", "train.eval_every=4")
    summary = json.load(open(wd / "config.json"))["data"]
    assert summary["corpus"] == "text_corpus/sotu_sample" and summary["pretraining"]["masking"] == "dynamic"
    rows = by_step(wd)
    # Masks were drawn (an empty mask would give an MLM loss of 0): about ln(2000) = 7.6 at the start.
    assert max(rows) == 4 and 6.0 < rows[4]["mlm_loss"] < 9.0


def test_sigterm_checkpoints_and_exits_as_interrupted(tmp_path):
    import signal
    import time
    wd = tmp_path / "term"
    e = user_env()
    proc = subprocess.Popen([sys.executable, "-m", "albert_jax.main", "pretrain", "--workdir", str(wd), *SMOKE,
                             "--set", "train.num_train_steps=100000", "--set", "train.checkpoint_every=100000",
                             "--set", "train.eval_every=100000"], cwd=ROOT, env=e, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    metrics = wd / "metrics.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and not (metrics.exists() and len(metrics.read_text().splitlines()) >= 3):
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    # Not a finished run: exit 128 + SIGTERM (the shells' convention), so `pretrain && finetune` in a script stops
    # here; its results JSON says so.
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    steps = ckpt.Checkpointer(str(wd / "checkpoints")).steps()
    assert len(steps) == 1 and 3 <= steps[0] < 100000  # saved where it stopped, not at a scheduled step
    assert f"checkpointed step {steps[0]}" in err
    assert err.strip().splitlines()[-1] == (f"albert-jax pretrain: stopped by SIGTERM after checkpointing (step "
                                            f"{steps[0]}); run the same command to continue")
    assert json.loads(out) == {"workdir": str(wd), "finished": False, "step": steps[0], "signal": "SIGTERM"}
    # Output redirected (no terminal, no progress bar): a plain metric line every log_every steps instead.
    assert re.search(r"seed 0: step 2/100000, loss \d+\.\d{3}.*tokens/s", err), err[-2000:]
    # `--resume` continues it with the config it recorded (its --set fields included: a differing model would be
    # refused), here finishing one step later.
    p = subprocess.run([sys.executable, "-m", "albert_jax.main", "pretrain", "--resume", str(wd), "--set",
                        f"train.num_train_steps={steps[0] + 1}", "--set", "train.allow_changed_schedule=true"],
                       cwd=ROOT, env=e, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert ckpt.Checkpointer(str(wd / "checkpoints")).steps()[-1] == steps[0] + 1
    assert json.loads(p.stdout)["workdir"] == str(wd)


def test_bf16_compute_trains(single_device_run):
    batches, (_, ref_losses, _) = single_device_run
    params, losses, _ = run_steps(shd.make_mesh(2, 2, 2), batches, cfg=CFG.replace(dtype="bfloat16"))
    assert all(x.dtype == jnp.float32 for x in jax.tree.leaves(params))  # f32 parameters, bf16 compute
    np.testing.assert_allclose(losses, ref_losses, rtol=0.02)
