"""Multi-host training through JAX's own runtime: two processes on localhost (gloo CPU collectives), each with 2
simulated devices, run the sharded train step on their halves of each global batch and end where one process
running the same global batches ends."""
import json
import os
import socket
import subprocess
import sys

import numpy as np

from albert_jax import sharding
from procs import xla_flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKER = r"""
import json, sys
import numpy as np
from albert_jax import sharding
multi = sharding.init_distributed()  # from the ALBERT_JAX_* environment; False when single-process
import jax
from albert_jax.training import optim
from albert_jax.training import state as st
from albert_jax.training import step as ts
from albert_jax.tasks.pretraining.task import PretrainingTask
from albert_jax.config import preset
sys.path.insert(0, "tests")
from test_train import synthetic_batches

cfg = preset("tiny", num_hidden_layers=2, sharing="attention")
mesh = sharding.make_mesh(data=-1, fsdp=2 if jax.device_count() >= 4 else 1)
boxed = st.abstract_params(PretrainingTask(), cfg)
tx = optim.make_optimizer("lamb", 1e-3, 100, 2, stacked_axes_fn=optim.stacked_axes_from_boxed(boxed))
_, shardings = st.state_shardings(tx, mesh, st.abstract_params(PretrainingTask(), cfg))
state = st.init_state(PretrainingTask(), cfg, tx, mesh, jax.random.PRNGKey(0), shardings)
train, _ = ts.jit_steps(PretrainingTask("sop"), cfg, tx, mesh, shardings)
n, pid = jax.process_count(), jax.process_index()
losses = []
for b in synthetic_batches(3):
    rows = len(b["input_ids"]) // n
    local = {k: v[pid * rows:(pid + 1) * rows] for k, v in b.items()}  # this process's contiguous rows
    state, m = train(state, sharding.shard_batch(local, mesh), jax.random.PRNGKey(1))
    losses.append(float(m["loss"]))
norms = [float(x) for x in jax.tree.leaves(jax.tree.map(lambda a: np.linalg.norm(np.asarray(
    jax.experimental.multihost_utils.process_allgather(a, tiled=True))), state.params))]
print("RESULT " + json.dumps({"processes": n, "devices": jax.device_count(), "losses": losses, "norms": norms}))
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(n_processes, devices_per_process):
    port = _free_port()
    procs = []
    for pid in range(n_processes):
        env = {k: v for k, v in os.environ.items() if not k.startswith("ALBERT_JAX_")}
        env["XLA_FLAGS"] = xla_flags(devices=devices_per_process)
        if n_processes > 1:
            env.update({sharding.ENV_COORDINATOR: f"127.0.0.1:{port}", sharding.ENV_NUM_PROCESSES: str(n_processes),
                        sharding.ENV_PROCESS_ID: str(pid)})
        procs.append(subprocess.Popen([sys.executable, "-c", WORKER], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    results = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=240)
            assert p.returncode == 0, f"worker failed ({p.returncode}):\n{err[-3000:]}"
            results.append(json.loads(next(l for l in out.splitlines() if l.startswith("RESULT"))[7:]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return results


def test_two_processes_train_like_one():
    single = _run(1, 4)[0]
    multi = _run(2, 2)
    assert [r["processes"] for r in multi] == [2, 2] and all(r["devices"] == 4 for r in multi)
    assert multi[0]["losses"] == multi[1]["losses"]  # both processes see the same global step
    np.testing.assert_allclose(multi[0]["losses"], single["losses"], rtol=1e-5)
    np.testing.assert_allclose(multi[0]["norms"], single["norms"], rtol=1e-5, atol=1e-8)
