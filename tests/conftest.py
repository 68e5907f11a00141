"""Test setup: 8 simulated CPU devices, set before JAX picks its backend; one tiny real pretraining run shared by
the tests that only read one (fine-tuning, layer analysis)."""
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from procs import ONE_THREAD, user_env, xla_flags  # standard library only

os.environ.setdefault("XLA_FLAGS", xla_flags(devices=8))
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("USE_TF", "0")  # as albert_jax sets it: transformers on PyTorch even with TF installed
for _name, _value in ONE_THREAD.items():  # before numpy loads OpenBLAS; the processes tests start inherit it
    os.environ.setdefault(_name, _value)
from albert_jax import compile_cache  # noqa: E402  (nothing but os: jax is not imported yet)

compile_cache.enable()  # the CLI's default: the suite's many identical programs compile once

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session", autouse=True)
def temp_files_under_basetemp(tmp_path_factory):
    """Every temporary file of a test process and of the processes it starts goes under pytest's own base
    directory, which pytest prunes (it keeps the last 3 runs): TFDS makes an empty directory in the system's temporary
    directory each time it builds a dataset into a new data directory and never removes it (its
    `DatasetInfo.initialize_from_bucket`), and the suite does that about 200 times a run."""
    scratch = tmp_path_factory.getbasetemp() / "tmp"
    scratch.mkdir(exist_ok=True)
    os.environ["TMPDIR"] = str(scratch)  # the processes tests start inherit it (procs.user_env copies os.environ)
    tempfile.tempdir = str(scratch)
    return scratch


@pytest.fixture(scope="session")
def tiny_pretrained(tmp_path_factory, worker_id):
    """A real (tiny) pretraining run on the smoke scale's English data: 8 LAMB steps inside a 200-step warm-up
    (weights still near their initialisation, whose spread the early-exit tests rely on), 2 layers, all-shared.
    Trained once per suite: xdist's workers share their base directory's parent, the first to ask trains it and
    the others wait on the lock, then read it. Read-only for its users: a test that writes into a workdir makes
    its own."""
    from albert_jax.data.cache_lock import prepare_lock

    root = tmp_path_factory.getbasetemp()
    root = root if worker_id == "master" else root.parent
    wd, done = root / "shared-tiny-pretrained", root / "shared-tiny-pretrained.done"
    with prepare_lock(root / "shared-tiny-pretrained.lock", "the shared tiny pretraining run", print):
        if not done.exists():
            shutil.rmtree(wd, ignore_errors=True)  # a worker that failed half-way left it
            cmd = [sys.executable, "-m", "albert_jax.main", "pretrain", "--workdir", str(wd), "--config",
                   "experiments/pretrain.py:scale=smoke", "--set", "train.warmup_steps=200",
                   "--set", "train.batch_size=8", "--set", "train.num_train_steps=8", "--set", "train.eval_every=8",
                   "--set", "train.eval_batches=1", "--set", "train.checkpoint_every=8",
                   "--set", "model.num_hidden_layers=2"]
            p = subprocess.run(cmd, cwd=ROOT, env=user_env(), capture_output=True, text=True, timeout=600)
            assert p.returncode == 0, p.stderr[-3000:]
            done.touch()
    return wd


# The longest files first (under `make test`; the two smoke-sweep files 4-5 minutes each of one core, the others 1-2,
# measured 2026-12-04 with an empty XLA cache): `make test`'s xdist workers take a file each at a time in collection
# order (the Makefile turns off xdist's own reordering by test count), and a long file started last runs alone while
# the other workers idle.
LONGEST_FIRST = ("test_smoke_sweeps_sizes.py", "test_smoke_sweeps_ablations.py", "test_train.py", "test_finetune.py",
                 "test_sweeps.py", "test_benchmarks.py", "test_sweeps_jobs.py", "test_reliability_ckpt.py",
                 "test_reliability_stop.py", "test_export.py",
                 "test_own_data.py", "test_pretraining_data.py", "test_sharing_map.py", "test_labeled_tasks.py",
                 "test_catalog_tasks.py", "test_formulations.py", "test_model.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file keeps its own order
