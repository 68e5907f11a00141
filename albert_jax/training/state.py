"""The train state, built from a task's model and example batch: abstract, sharded, initialised in place.

Nothing here knows which task it serves: the model and the input shapes come from `task.model(model_cfg)` and
`task.example_batch()`, so pretraining and every fine-tuning task share one state builder.
"""
from __future__ import annotations

from typing import Any

import flax
import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from flax import traverse_util
from jax.sharding import NamedSharding, PartitionSpec

from albert_jax import sharding as shd
from albert_jax.training import reuse


@flax.struct.dataclass
class TrainState:
    step: jax.Array
    params: Any
    opt_state: Any


def _init_fn(task, model_cfg):
    model = task.model(model_cfg)
    inputs = task.init_inputs(jax.tree.map(jnp.asarray, task.example_batch()))
    return lambda rng: model.init(rng, **inputs)["params"]


_ABSTRACT = reuse.Kept(16)  # shapes only: small
_FRESH = reuse.Kept(8)  # jitted initialisers (each keeps its compiled program)


def abstract_params(task, model_cfg):
    """Boxed abstract parameters (shapes + logical axis names); nothing is allocated."""
    return _ABSTRACT.get(reuse.fingerprint(task, model_cfg),
                         lambda: jax.eval_shape(_init_fn(task, model_cfg), jax.random.PRNGKey(0)))


def state_shardings(tx, mesh, boxed):
    """(abstract state, its NamedShardings): parameters by the logical rules, optimizer slots like their params."""
    param_sh = shd.param_shardings(boxed, mesh)
    replicated = NamedSharding(mesh, PartitionSpec())
    abstract = jax.eval_shape(make_from_params(tx), nn.unbox(boxed))
    opt_sh = optax.tree_utils.tree_map_params(tx, lambda _, s: s, abstract.opt_state, param_sh,
                                              transform_non_params=lambda _: replicated)
    shardings = TrainState(step=replicated, params=param_sh, opt_state=opt_sh)
    abstract = jax.tree.map(lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), abstract, shardings)
    return abstract, shardings


def make_init(task, model_cfg, tx):
    """rng -> the initial state (step 0, the model's initial parameters, new optimizer slots); jit it with the
    state's shardings to create it directly in its sharded layout (no host copy of the full model)."""
    init_params = _init_fn(task, model_cfg)

    def init(rng):
        params = nn.unbox(init_params(rng))
        return TrainState(jnp.zeros((), jnp.int32), params, tx.init(params))
    return init


def make_from_params(tx):
    """params -> a fresh train state around them (step 0, new optimizer slots)."""
    return lambda params: TrainState(jnp.zeros((), jnp.int32), params, tx.init(params))


def init_state(task, model_cfg, tx, mesh, rng, shardings):
    """The initial state, created directly in its sharded layout. (The training loop uses its program's own
    jitted `make_init`, training/program.py, which a later run of the same program reuses.)"""
    with jax.set_mesh(mesh), nn.logical_axis_rules(shd.AXIS_RULES):
        return jax.jit(make_init(task, model_cfg, tx), out_shardings=shardings)(rng)


def fresh_params(task, model_cfg, rng, only: tuple[tuple[str, ...], ...] | None = None):
    """Unboxed host parameters of a new model: the whole tree, or with `only` (paths of leaves) a dict of just those
    leaves, each with the very values the whole tree would give it. A fine-tuning that loads its encoder needs
    only the new head's few leaves: its program then leaves out the encoder's initialisers (XLA removes what no
    output reads), which made it one of a fine-tuning's dearest compiles (docs/benchmarks.md, 2026-12-07)."""
    init = _init_fn(task, model_cfg)
    if only is None:
        make = lambda: jax.jit(init)  # noqa: E731
    else:
        def picked(r):  # one init traced, its leaves picked: XLA drops the rest
            flat = traverse_util.flatten_dict(init(r))
            return [flat[path] for path in only]

        make = lambda: jax.jit(picked)  # noqa: E731
    found = reuse.fingerprint(task, model_cfg)
    fn = _FRESH.get(None if found is None else (found, only), make)
    out = jax.device_get(nn.unbox(fn(rng)))
    return out if only is None else dict(zip(only, out))
