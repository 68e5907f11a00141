"""The compiled program of a run: optimizer, abstract sharded state and the jitted steps, built once from
(task, model config, train section, mesh).

The training loop builds its steps here, and so does the planner (albert_jax/plan), which hands it a mesh of
devices that are not attached (a TPU slice from libtpu, GPUs from a target config): what the planner compiles
is the trainer's own step, not a copy of it.

A process keeps the last few programs it built (training/reuse.py): a run whose task, model, optimizer settings
and mesh equal an earlier run's (a sweep's next seed, a row that differs only in its data, a fine-tuning's next
seed) gets that program back, already traced and compiled.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import numpy as np

from albert_jax import sharding as shd
from albert_jax.training import optim, reuse
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
    init: Callable  # rng -> the initial state, in its sharded layout
    from_params: Callable  # params -> a fresh state around them (step 0, new optimizer slots)


_KEPT = reuse.Kept(8)  # each holds its compiled programs: a few MB at the smoke and cpu scales


def _optimizer_settings(train) -> tuple:
    """The train section's fields a program is built from: every one `build` reads, so also its key."""
    return (str(train.optimizer), float(train.learning_rate), int(train.num_train_steps), int(train.warmup_steps),
            float(train.weight_decay), int(train.grad_accum_steps))


def build(task, model_cfg, train, mesh) -> Program:
    """The run's program on `mesh`; `train` is the experiment's train section. The model's attention_impl='auto'
    is made concrete for the mesh's devices (cuDNN's fused attention on GPUs where the model allows it). The same
    program as a recent call's is that call's (training/reuse.py)."""
    settings = _optimizer_settings(train)
    found = reuse.fingerprint(task, model_cfg)
    key = None if found is None else (found, settings, mesh)
    return _KEPT.get(key, lambda: _build(task, model_cfg, settings, mesh))


def _build(task, model_cfg, settings: tuple, mesh) -> Program:
    optimizer, learning_rate, num_train_steps, warmup_steps, weight_decay, grad_accum_steps = settings
    model_cfg = model_cfg.for_platform(mesh.devices.flat[0].platform)
    boxed = train_state.abstract_params(task, model_cfg)
    tx = optim.make_optimizer(optimizer, learning_rate, num_train_steps, warmup_steps, weight_decay=weight_decay,
                              stacked_axes_fn=optim.stacked_axes_from_boxed(boxed))
    abstract, shardings = train_state.state_shardings(tx, mesh, boxed)
    step, evaluate = train_step.jit_steps(task, model_cfg, tx, mesh, shardings, grad_accum_steps)
    init = jax.jit(train_state.make_init(task, model_cfg, tx), out_shardings=shardings)
    from_params = jax.jit(train_state.make_from_params(tx), out_shardings=shardings)
    return Program(tx=tx, schedule=optim.make_schedule(learning_rate, num_train_steps, warmup_steps),
                   abstract_state=abstract, shardings=shardings, mesh=mesh, train_step=step, eval_step=evaluate,
                   batch_sh=shd.batch_sharding(mesh), init=train_step.with_rules(init, mesh),
                   from_params=train_step.with_rules(from_params, mesh))


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
