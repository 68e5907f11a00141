"""The pure, jitted steps: `train_step(state, batch, rng) -> (state, metrics)` and `eval_step(params, batch)`.

The loss comes from the task as sums over examples and denominators computed from the batch alone
(tasks/base.py). The step takes the denominators of the WHOLE global batch first, so each micro-batch's
contribution is `sum_i / total`: gradient accumulation and multi-device reduction give exactly the full-batch
gradient, whatever each micro-batch holds. Metrics leave the step as sums and counts; means are formed on the host.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from jax.sharding import NamedSharding, PartitionSpec

from albert_jax import sharding as shd
from albert_jax.training.state import TrainState


def is_deterministic(model_cfg) -> bool:
    """No dropout anywhere: the step then draws no random numbers at all."""
    return (model_cfg.hidden_dropout_prob == 0 and model_cfg.attention_probs_dropout_prob == 0
            and model_cfg.classifier_dropout_prob == 0)


def global_norm(tree) -> jax.Array:
    return jnp.sqrt(sum(jnp.sum(jnp.square(x.astype(jnp.float32))) for x in jax.tree.leaves(tree)))


def make_train_step(task, model, tx, grad_accum_steps: int = 1, deterministic: bool = True):
    def loss_fn(params, batch, rng, totals):
        rngs = None if deterministic else {"dropout": rng}
        sums = task.sums(task.apply(model, params, batch, rngs, deterministic), batch)
        return task.loss(sums, totals), sums

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    def train_step(state: TrainState, batch: dict, rng: jax.Array):
        rng = jax.random.fold_in(rng, state.step)  # randomness depends only on (seed, step): exact resume
        totals = task.counts(batch)
        if grad_accum_steps == 1:
            (loss, sums), grads = grad_fn(state.params, batch, rng, totals)
        else:
            # Micro-batch i takes rows i, i+k, i+2k...: every device keeps an equal share of each micro-batch.
            micro = jax.tree.map(lambda x: jnp.swapaxes(x.reshape((-1, grad_accum_steps) + x.shape[1:]), 0, 1),
                                 batch)

            def body(acc, xs):
                mb, i = xs
                (l, s), g = grad_fn(state.params, mb, jax.random.fold_in(rng, i), totals)
                return jax.tree.map(jnp.add, acc, (l, s, g)), None

            first = jax.tree.map(lambda x: x[0], micro)
            shapes = jax.eval_shape(loss_fn, state.params, first, rng, totals)
            zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), (*shapes, state.params))
            # Each micro-batch is already divided by the global totals: the plain sum is the full-batch value.
            (loss, sums, grads), _ = jax.lax.scan(body, zeros, (micro, jnp.arange(grad_accum_steps)))
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = {"loss": loss, **sums, **totals, "grad_norm": global_norm(grads), "param_norm": global_norm(params)}
        return TrainState(step=state.step + 1, params=params, opt_state=opt_state), metrics

    return train_step


def make_eval_step(task, model):
    def eval_step(params, batch):
        return task.eval_outputs(task.apply(model, params, batch, None, True), batch)
    return eval_step


def with_rules(fn, mesh):
    """Run `fn` under the mesh and the logical axis rules (flax's constraints need both at trace time).
    `.lower(*abstract_args)` lowers the same jitted function under them (the planner compiles it for devices that
    are not attached)."""
    def run(*args):
        with jax.set_mesh(mesh), nn.logical_axis_rules(shd.AXIS_RULES):
            return fn(*args)

    def lower(*args):
        with jax.set_mesh(mesh), nn.logical_axis_rules(shd.AXIS_RULES):
            return fn.lower(*args)
    run.jitted = fn
    run.lower = lower
    return run


def jit_steps(task, model_cfg, tx, mesh, shardings, grad_accum_steps: int = 1):
    """Compile-once train and eval steps with explicit in/out shardings; the train state is donated."""
    model = task.model(model_cfg)
    replicated = NamedSharding(mesh, PartitionSpec())
    batch_sh = shd.batch_sharding(mesh)
    train = jax.jit(make_train_step(task, model, tx, grad_accum_steps, is_deterministic(model_cfg)),
                    in_shardings=(shardings, batch_sh, replicated), out_shardings=(shardings, replicated),
                    donate_argnums=(0,))
    evaluate = jax.jit(make_eval_step(task, model), in_shardings=(shardings.params, batch_sh),
                       out_shardings=replicated)
    return with_rules(train, mesh), with_rules(evaluate, mesh)
