"""The pure pieces of pretraining: state, losses as the official code computes them, the sharded step.

`make_steps` returns jitted `train_step(state, batch, rng) -> (state, metrics)` and `eval_step(params, batch)`
compiled once with explicit shardings; the state is donated so parameters are updated in place.
"""
from __future__ import annotations

from typing import Any

import flax
import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from jax.sharding import NamedSharding, PartitionSpec

from albert_jax import sharding as shd
from albert_jax.modeling import AlbertForPreTraining

BATCH_KEYS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
              "masked_lm_weights", "next_sentence_labels")


@flax.struct.dataclass
class TrainState:
    step: jax.Array
    params: Any
    opt_state: Any


def pretraining_losses(outputs: dict, batch: dict) -> dict[str, jax.Array]:
    """MLM: weighted mean over masked positions (+1e-5 in the denominator, as official); SOP/NSP: mean CE."""
    logp = jax.nn.log_softmax(outputs["mlm_logits"].astype(jnp.float32), axis=-1)
    ids = batch["masked_lm_ids"].astype(jnp.int32)
    w = batch["masked_lm_weights"].astype(jnp.float32)
    nll = -jnp.take_along_axis(logp, ids[..., None], axis=-1)[..., 0]
    mlm_loss = jnp.sum(nll * w) / (jnp.sum(w) + 1e-5)
    mlm_correct = jnp.sum((jnp.argmax(logp, -1) == ids) * w)
    slogp = jax.nn.log_softmax(outputs["sop_logits"].astype(jnp.float32), axis=-1)
    labels = batch["next_sentence_labels"].reshape(-1).astype(jnp.int32)
    sent_loss = -jnp.mean(jnp.take_along_axis(slogp, labels[:, None], axis=-1))
    sent_correct = jnp.sum(jnp.argmax(slogp, -1) == labels)
    return {"mlm_loss": mlm_loss, "mlm_correct": mlm_correct, "mlm_count": jnp.sum(w),
            "sentence_loss": sent_loss, "sentence_correct": sent_correct.astype(jnp.float32),
            "sentence_count": jnp.float32(labels.shape[0])}


def _forward(model, params, batch, rng, deterministic):
    rngs = None if deterministic else {"dropout": rng}
    return model.apply({"params": params}, batch["input_ids"], batch["input_mask"], batch["segment_ids"],
                       masked_lm_positions=batch["masked_lm_positions"], deterministic=deterministic, rngs=rngs)


def _global_norm(tree) -> jax.Array:
    return jnp.sqrt(sum(jnp.sum(jnp.square(x.astype(jnp.float32))) for x in jax.tree.leaves(tree)))


def make_train_step(model, tx, task: str, grad_accum_steps: int = 1):
    """task: 'sop' or 'nsp' add the inter-sentence loss (official: unweighted sum); 'none' trains MLM only."""
    use_sentence_loss = task != "none"
    deterministic = (model.config.hidden_dropout_prob == 0 and model.config.attention_probs_dropout_prob == 0)

    def loss_fn(params, batch, rng):
        parts = pretraining_losses(_forward(model, params, batch, rng, deterministic), batch)
        loss = parts["mlm_loss"] + (parts["sentence_loss"] if use_sentence_loss else 0.0)
        return loss, parts

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    def train_step(state: TrainState, batch: dict, rng: jax.Array):
        rng = jax.random.fold_in(rng, state.step)  # randomness depends only on (seed, step): exact resume
        if grad_accum_steps == 1:
            (loss, parts), grads = grad_fn(state.params, batch, rng)
        else:
            # Micro-batch i takes rows i, i+k, i+2k...: every device keeps an equal share of each micro-batch.
            micro = jax.tree.map(lambda x: jnp.swapaxes(x.reshape((-1, grad_accum_steps) + x.shape[1:]), 0, 1),
                                 batch)

            def body(acc, xs):
                mb, i = xs
                (l, p), g = grad_fn(state.params, mb, jax.random.fold_in(rng, i))
                return jax.tree.map(jnp.add, acc, (l, p, g)), None

            shapes = jax.eval_shape(loss_fn, state.params, jax.tree.map(lambda x: x[0], micro), rng)
            zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), (*shapes, state.params))
            (loss, parts, grads), _ = jax.lax.scan(body, zeros, (micro, jnp.arange(grad_accum_steps)))
            loss, grads = loss / grad_accum_steps, jax.tree.map(lambda g: g / grad_accum_steps, grads)
            for k in ("mlm_loss", "sentence_loss"):
                parts[k] = parts[k] / grad_accum_steps
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = {"loss": loss, "mlm_loss": parts["mlm_loss"], "sentence_loss": parts["sentence_loss"],
                   "mlm_accuracy": parts["mlm_correct"] / jnp.maximum(parts["mlm_count"], 1.0),
                   "sentence_accuracy": parts["sentence_correct"] / parts["sentence_count"],
                   "grad_norm": _global_norm(grads), "param_norm": _global_norm(params)}
        return TrainState(step=state.step + 1, params=params, opt_state=opt_state), metrics

    return train_step


def make_eval_step(model):
    def eval_step(params, batch):
        parts = pretraining_losses(_forward(model, params, batch, None, True), batch)
        return {k: parts[k] for k in ("mlm_correct", "mlm_count", "sentence_correct", "sentence_count")} | {
            "mlm_loss_sum": parts["mlm_loss"] * parts["mlm_count"],
            "sentence_loss_sum": parts["sentence_loss"] * parts["sentence_count"]}
    return eval_step


def abstract_params(model_config, seq_len: int = 8):
    """Boxed abstract parameters (shapes + logical names), no memory allocated."""
    model = AlbertForPreTraining(model_config)
    dummy = jnp.zeros((1, seq_len), jnp.int32)
    return jax.eval_shape(lambda r: model.init(r, dummy)["params"], jax.random.PRNGKey(0))


def state_shardings(model_config, tx, mesh, boxed=None):
    """(abstract state, its NamedShardings): parameters by the logical rules, optimizer slots like their params.
    `boxed`: the abstract_params of model_config when the caller has them already (saves a trace)."""
    boxed = abstract_params(model_config) if boxed is None else boxed
    param_sh = shd.param_shardings(boxed, mesh)
    replicated = NamedSharding(mesh, PartitionSpec())
    abstract = jax.eval_shape(lambda p: TrainState(jnp.zeros((), jnp.int32), p, tx.init(p)), nn.unbox(boxed))
    opt_sh = optax.tree_utils.tree_map_params(tx, lambda _, s: s, abstract.opt_state, param_sh,
                                              transform_non_params=lambda _: replicated)
    shardings = TrainState(step=replicated, params=param_sh, opt_state=opt_sh)
    abstract = jax.tree.map(lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), abstract, shardings)
    return abstract, shardings


def init_state(model_config, tx, mesh, rng, shardings):
    """The initial state, created directly in its sharded layout (no host copy of the full model)."""
    model = AlbertForPreTraining(model_config)
    dummy = jnp.zeros((1, 8), jnp.int32)

    def init(r):
        params = nn.unbox(model.init(r, dummy)["params"])
        return TrainState(jnp.zeros((), jnp.int32), params, tx.init(params))

    with jax.set_mesh(mesh), nn.logical_axis_rules(shd.AXIS_RULES):
        return jax.jit(init, out_shardings=shardings)(rng)


def state_from_params(params, tx, mesh, shardings):
    """A fresh train state (step 0, new optimizer slots) around given parameters, laid out by `shardings`."""
    with jax.set_mesh(mesh), nn.logical_axis_rules(shd.AXIS_RULES):
        return jax.jit(lambda p: TrainState(jnp.zeros((), jnp.int32), p, tx.init(p)),
                       out_shardings=shardings)(params)


def jit_steps(model_config, tx, mesh, shardings, task: str, grad_accum_steps: int = 1):
    """Compile-once train and eval steps with explicit in/out shardings; the train state is donated."""
    model = AlbertForPreTraining(model_config)
    replicated = NamedSharding(mesh, PartitionSpec())
    batch_sh = shd.batch_sharding(mesh)
    train = jax.jit(make_train_step(model, tx, task, grad_accum_steps),
                    in_shardings=(shardings, batch_sh, replicated), out_shardings=(shardings, replicated),
                    donate_argnums=(0,))
    evaluate = jax.jit(make_eval_step(model), in_shardings=(shardings.params, batch_sh), out_shardings=replicated)

    def with_rules(fn):
        def run(*args):
            with jax.set_mesh(mesh), nn.logical_axis_rules(shd.AXIS_RULES):
                return fn(*args)
        run.jitted = fn
        return run

    return with_rules(train), with_rules(evaluate)
