"""Mesh shapes, the logical rules on a real flax module, batch sharding, and a real two-process run."""
import logging
import os
import socket
import subprocess
import sys
import textwrap

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, PartitionSpec

from albert_jax import sharding
from procs import xla_flags

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("sizes, shape", [
    (dict(), (8, 1, 1)), (dict(data=2, fsdp=2, tensor=2), (2, 2, 2)), (dict(data=1, fsdp=4, tensor=2), (1, 4, 2)),
    (dict(data=1, fsdp=-1, tensor=2), (1, 4, 2)),
])
def test_mesh_shapes(sizes, shape):
    mesh = sharding.make_mesh(**sizes)
    assert mesh.axis_names == ("data", "fsdp", "tensor")
    assert tuple(mesh.shape.values()) == shape
    assert mesh.axis_types == (AxisType.Auto,) * 3
    assert sorted(d.id for d in mesh.devices.flat) == sorted(d.id for d in jax.devices())


def test_mesh_errors():
    with pytest.raises(ValueError, match="need 12 devices; there are 8"):
        sharding.make_mesh(data=3, fsdp=4)
    with pytest.raises(ValueError, match="at most one may be -1"):
        sharding.make_mesh(data=-1, fsdp=-1)
    with pytest.raises(ValueError, match="do not divide by the fixed axes' product 3"):
        sharding.make_mesh(fsdp=3)


class TinyBlock(nn.Module):
    """Kernels named like the model's: embeddings (vocab, embed), projection (embed, hidden), attention
    (hidden, heads, kv), FFN (hidden, mlp), a stacked unshared kernel (layers, hidden, mlp), a LayerNorm."""
    vocab: int = 16
    E: int = 4
    H: int = 8
    heads: int = 2
    I: int = 12

    @nn.compact
    def __call__(self, ids):
        init = nn.initializers.normal(0.02)
        table = self.param("word_embeddings", nn.with_logical_partitioning(init, ("vocab", "embed")),
                           (self.vocab, self.E))
        x = jnp.take(table, ids, axis=0)
        x = nn.Dense(self.H, kernel_init=nn.with_logical_partitioning(init, ("embed", "hidden")),
                     bias_init=nn.with_logical_partitioning(nn.initializers.zeros, ("hidden",)), name="projection")(x)
        # Not nn.DenseGeneral: it calls a boxed kernel_init with a flattened 2-D shape, and flax re-runs the init
        # (eval_shape) at apply to check shapes, so under a mesh the 3-name constraint hits a rank-2 array.
        query = self.param("query", nn.with_logical_partitioning(init, ("hidden", "heads", "kv")),
                           (self.H, self.heads, self.H // self.heads))
        x = x + jnp.einsum("blh,hnd->blnd", x, query).reshape(x.shape)
        stacked = self.param("ffn_stack", nn.with_logical_partitioning(init, ("layers", "hidden", "mlp")),
                             (3, self.H, self.I))
        x = x + (x @ stacked[0]) @ stacked[0].T
        x = nn.LayerNorm(scale_init=nn.with_logical_partitioning(nn.initializers.ones, ("hidden",)),
                         bias_init=nn.with_logical_partitioning(nn.initializers.zeros, ("hidden",)),
                         name="LayerNorm")(x)
        return nn.with_logical_constraint(x, ("batch", "length", "hidden"))


def _specs(mesh, module=None):
    module = module or TinyBlock()
    abstract = jax.eval_shape(module.init, jax.random.key(0), jnp.zeros((2, 5), jnp.int32))
    shardings = sharding.param_shardings(abstract, mesh)
    return jax.tree.map(lambda s: s.spec, shardings["params"],
                        is_leaf=lambda x: isinstance(x, jax.sharding.NamedSharding))


def test_rules_on_a_flax_module():
    specs = _specs(sharding.make_mesh(data=2, fsdp=2, tensor=2))
    assert specs["word_embeddings"] == PartitionSpec("tensor", None)
    assert specs["projection"]["kernel"] == PartitionSpec(None, "fsdp")
    assert specs["projection"]["bias"] == PartitionSpec("fsdp")
    assert specs["query"] == PartitionSpec("fsdp", "tensor", None)
    assert specs["ffn_stack"] == PartitionSpec(None, "fsdp", "tensor")
    assert specs["LayerNorm"]["scale"] == PartitionSpec("fsdp")


def test_non_divisible_dimension_is_replicated(caplog):
    # heads=3 does not divide by tensor=2; vocab 15 neither: those dims fall back, the rest stay sharded.
    with caplog.at_level(logging.INFO, logger="albert_jax.sharding"):
        specs = _specs(sharding.make_mesh(data=2, fsdp=2, tensor=2), TinyBlock(vocab=15, heads=3, H=6, I=8))
    assert specs["query"] == PartitionSpec("fsdp", None, None)
    assert specs["word_embeddings"] == PartitionSpec(None, None)
    assert specs["ffn_stack"] == PartitionSpec(None, "fsdp", "tensor")
    assert "word_embeddings" in caplog.text and "replicated" in caplog.text
    # And the whole model then initialises, sharded, on a mesh that divides almost nothing.
    mesh = sharding.make_mesh(data=1, fsdp=4, tensor=2)
    module = TinyBlock(vocab=15, heads=3, H=6, I=9)
    ids = jnp.zeros((4, 5), jnp.int32)
    abstract = jax.eval_shape(module.init, jax.random.key(0), ids)
    out_shardings = sharding.param_shardings(abstract, mesh)
    params = jax.jit(lambda k: nn.meta.unbox(module.init(k, ids)), out_shardings=out_shardings)(jax.random.key(0))
    with nn.logical_axis_rules(sharding.AXIS_RULES), jax.set_mesh(mesh):
        y = jax.jit(module.apply)(params, ids)
    assert y.shape == (4, 5, 6) and np.all(np.isfinite(np.asarray(y)))


def test_logical_spec_rules_and_errors():
    mesh = sharding.make_mesh(data=2, fsdp=2, tensor=2)
    # Activations: the batch takes fsdp first, so hidden stays whole (a mesh axis is used once per array).
    assert sharding.logical_to_spec(("batch", "length", "hidden"), (8, 4, 8), mesh) == PartitionSpec(
        ("data", "fsdp"), None, None)
    assert sharding.logical_to_spec(("batch", "length", "heads", "kv"), (8, 4, 2, 4), mesh) == PartitionSpec(
        ("data", "fsdp"), None, "tensor", None)
    with pytest.raises(ValueError, match="logical axis 'hiden' has no rule"):
        sharding.logical_to_spec(("hiden",), (8,), mesh)


def test_batch_split_over_data_and_fsdp():
    mesh = sharding.make_mesh(data=2, fsdp=2, tensor=2)
    local = {"input_ids": np.arange(8 * 3).reshape(8, 3), "labels": np.arange(8)}
    batch = sharding.shard_batch(local, mesh)
    ids = batch["input_ids"]
    assert ids.sharding.spec == PartitionSpec(("data", "fsdp"))
    assert {s.data.shape for s in ids.addressable_shards} == {(2, 3)}  # 8 rows over data x fsdp = 4
    # tensor devices hold replicas: each row block appears on exactly 2 devices.
    starts = sorted(s.index[0].start for s in ids.addressable_shards)
    assert starts == [0, 0, 2, 2, 4, 4, 6, 6]
    np.testing.assert_array_equal(np.asarray(ids), local["input_ids"])
    with pytest.raises(ValueError,
                       match="batch field \\['labels'\\]: global batch 6 does not divide by data x fsdp = 4"):
        sharding.shard_batch({"labels": np.arange(6)}, mesh)


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in (sharding.ENV_COORDINATOR, sharding.ENV_NUM_PROCESSES, sharding.ENV_PROCESS_ID)}
    env.update({"JAX_PLATFORMS": "cpu", "PYTHONPATH": REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")}, **extra)
    return env


def test_init_distributed_single_process_is_a_no_op():
    # A fresh interpreter: no arguments, no env, no cluster -> False, and JAX still works as one process.
    code = ("import jax; from albert_jax import sharding; print(sharding.init_distributed(), jax.process_count(), "
            "jax.config.jax_cpu_collectives_implementation)")
    out = subprocess.run([sys.executable, "-c", code], env=_clean_env(), cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["False", "1", "gloo"]


def test_init_distributed_errors():
    jax.devices()  # this process's backend is up (conftest): too late to go multi-process
    with pytest.raises(RuntimeError, match="must run before anything touches a JAX device"):
        sharding.init_distributed("127.0.0.1:1", 2, 0)
    with pytest.raises(ValueError, match="process_id 2 / num_processes 2"):
        sharding.init_distributed("127.0.0.1:1", 2, 2)


_WORKER = textwrap.dedent("""
    import jax, numpy as np
    from albert_jax import sharding
    assert sharding.init_distributed() is True
    pid = jax.process_index()
    mesh = sharding.make_mesh()  # data = all 4 global devices
    # Process p holds rows 4p..4p+3 of an (8, 3) global batch.
    local = np.arange(12, dtype=np.float32).reshape(4, 3) + 12 * pid
    x = sharding.shard_batch(local, mesh)
    weights = np.arange(8, dtype=np.float32)[:, None]  # position-dependent: catches misplaced rows
    total = jax.jit(lambda a, w: (a * w).sum(), out_shardings=jax.sharding.NamedSharding(mesh, jax.P()))(x, weights)
    print(f"RESULT pid={pid} processes={jax.process_count()} devices={jax.device_count()} "
          f"local={jax.local_device_count()} shape={x.shape} total={float(total)}", flush=True)
""")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_reduce_globally():
    port = _free_port()
    procs = []
    for pid in range(2):
        env = _clean_env(**{
            "XLA_FLAGS": xla_flags(devices=2),
            sharding.ENV_COORDINATOR: f"127.0.0.1:{port}", sharding.ENV_NUM_PROCESSES: "2",
            sharding.ENV_PROCESS_ID: str(pid),
        })
        procs.append(subprocess.Popen([sys.executable, "-c", _WORKER], env=env, cwd=REPO_ROOT,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            outputs.append((proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for rc, out, err in outputs:
        assert rc == 0, f"worker failed (rc {rc}):\n{out}\n{err[-3000:]}"
    global_batch = np.arange(24, dtype=np.float64).reshape(8, 3)
    want = float((global_batch * np.arange(8)[:, None]).sum())
    lines = [next(l for l in out.splitlines() if l.startswith("RESULT")) for _, out, _ in outputs]
    for pid, line in enumerate(lines):
        assert line == (f"RESULT pid={pid} processes=2 devices=4 local=2 shape=(8, 3) total={want}"), line
