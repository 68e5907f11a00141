"""The compiled program of a run: optimizer, abstract sharded state and the jitted steps, built once from
(task, model config, train section, mesh).

The training loop builds its steps here, and so does the planner (albert_jax/plan), which hands it a mesh of
devices that are not attached (a TPU slice from libtpu, GPUs from a target config): what the planner compiles
is the trainer's own step, not a copy of it.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import numpy as np

from albert_jax import sharding as shd
from albert_jax.training import optim
from albert_jax.training import state as train_state
from albert_jax.training import step as train_step


@dataclasses.dataclass(frozen=True)
class Program:
    tx: Any
    schedule: Callable
    abstract_state: Any  # ShapeDtypeStructs carrying their shardings
    shardings: Any
    mesh: Any
    train_step: Callable  # (state, batch, rng) -> (state, metrics); `.lower(...)` gives its lowered form
    eval_step: Callable
    batch_sh: Any


def build(task, model_cfg, train, mesh) -> Program:
    """The run's program on `mesh`; `train` is the experiment's train section. The model's attention_impl='auto'
    is made concrete for the mesh's devices (cuDNN's fused attention on GPUs where the model allows it)."""
    model_cfg = model_cfg.for_platform(mesh.devices.flat[0].platform)
    boxed = train_state.abstract_params(task, model_cfg)
    tx = optim.make_optimizer(train.optimizer, train.learning_rate, train.num_train_steps, train.warmup_steps,
                              weight_decay=train.weight_decay,
                              stacked_axes_fn=optim.stacked_axes_from_boxed(boxed))
    abstract, shardings = train_state.state_shardings(tx, mesh, boxed)
    step, evaluate = train_step.jit_steps(task, model_cfg, tx, mesh, shardings, train.grad_accum_steps)
    return Program(tx=tx, schedule=optim.make_schedule(train.learning_rate, train.num_train_steps,
                                                       train.warmup_steps),
                   abstract_state=abstract, shardings=shardings, mesh=mesh, train_step=step, eval_step=evaluate,
                   batch_sh=shd.batch_sharding(mesh))


def abstract_batch(task, batch_size: int, seq_len: int, sharding) -> dict:
    """A global batch of `task` as ShapeDtypeStructs: the task's example batch with `batch_size` rows and its
    sequence arrays (`task.seq_keys`) at `seq_len`."""
    def one(key, x):
        shape = (batch_size,) + tuple(np.shape(x)[1:])
        if key in task.seq_keys:
            shape = shape[:-1] + (seq_len,)
        return jax.ShapeDtypeStruct(shape, np.asarray(x).dtype, sharding=sharding)
    return {k: one(k, v) for k, v in task.example_batch().items()}


def abstract_rng(mesh) -> jax.ShapeDtypeStruct:
    """The step's key argument (jax.random.PRNGKey's shape and dtype), replicated."""
    key = jax.eval_shape(lambda: jax.random.PRNGKey(0))
    return jax.ShapeDtypeStruct(key.shape, key.dtype,
                                sharding=jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec()))
