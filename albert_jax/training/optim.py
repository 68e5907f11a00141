"""Optimizers exactly as the official ALBERT code defines them (reference/albert.md §2.4).

The official `create_optimizer` (google-research/albert `optimization.py`, `lamb_optimizer.py`) differs from the
textbook versions that optax ships, so the pieces that differ are written here as small optax transforms:

- Adam moments WITHOUT bias correction (BERT style): the first update is ~3.16x larger than bias-corrected Adam's
  (0.1 g / (sqrt(0.001) |g|)), and that is how ALBERT was trained. `optax.adam`/`optax.lamb` always correct.
- epsilon outside the square root: update = m / (sqrt(v) + eps), eps 1e-6.
- Decoupled weight decay ADDED to the Adam update before the learning rate (update += wd * w), skipped for
  LayerNorm parameters and biases.
- LAMB trust ratio ||w|| / ||update|| over the whole variable (1.0 when either norm is 0), skipped for the same
  excluded parameters, applied to the update that already includes weight decay. "Variable" means the official
  TF variable: our stacked arrays (leading 'groups' / 'sets' / 'layers' / 'inner' axes) hold several of them, so norms
  are taken per slice of those axes (see `stacked_axes_from_boxed`).
- Gradients clipped to global norm 1.0 first, over the trained variables only.
- The learning-rate schedule: see `make_schedule`.

Parameter names. The official code matches the regexes "LayerNorm", "layer_norm", "bias" against TF variable names.
Here the same regexes are searched in the parameter's path joined with "/" (e.g. "encoder/ffn_norm/bias"), and, since
a flax `nn.LayerNorm` names its gain "scale" (TF: "gamma"), a parameter whose last path component is exactly "scale"
is excluded too. So `attention_norm`/`ffn_norm`/`LayerNorm` modules are excluded by their leaf names ("scale",
"bias") whatever the module is called, and every bias (including the MLM `output_bias`) is excluded, as officially.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax

from albert_jax.configs.schema import OPTIMIZERS, WEIGHT_DECAY

# The official `exclude_from_weight_decay` list (also its default `exclude_from_layer_adaptation`).
OFFICIAL_EXCLUDE_PATTERNS = ("LayerNorm", "layer_norm", "bias")
# Leaf names flax normalisation layers give their gain; matched exactly, on the last path component only.
FLAX_NORM_LEAF_NAMES = ("scale",)

PathPredicate = Callable[[str], bool]


def path_to_str(path: tuple[Any, ...]) -> str:
    """'a/b/c' for a jax key path (dict keys, attributes, sequence indices)."""
    parts = []
    for key in path:
        for attr in ("key", "name", "idx"):  # DictKey / FlattenedIndexKey, GetAttrKey, SequenceKey
            if hasattr(key, attr):
                parts.append(str(getattr(key, attr)))
                break
        else:
            parts.append(str(key))
    return "/".join(parts)


def default_decay_mask(path: str) -> bool:
    """True when the parameter at `path` gets weight decay (and LAMB layer adaptation)."""
    if any(re.search(pattern, path) for pattern in OFFICIAL_EXCLUDE_PATTERNS):
        return False
    return path.rsplit("/", 1)[-1] not in FLAX_NORM_LEAF_NAMES


def _map_with_path(fn: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    return jax.tree_util.tree_map_with_path(lambda p, *xs: fn(path_to_str(p), *xs), tree, *rest)


# ----------------------------------------------------------------------------------------------------------------
# The learning-rate schedule


def make_schedule(
    learning_rate: float,
    num_train_steps: int,
    num_warmup_steps: int = 0,
    *,
    start_warmup_step: int = 0,
    poly_power: float = 1.0,
    end_learning_rate: float = 0.0,
) -> optax.Schedule:
    """The official schedule, as a function of the global step (optax's update count: 0 at the first update).

    Officially the LR is `polynomial_decay(init_lr, global_step, num_train_steps, end_lr=0, power)` -- evaluated at the
    *unshifted* global step and clamped at num_train_steps -- and while `global_step - start_warmup_step <
    num_warmup_steps` it is replaced by `init_lr * (global_step - start_warmup_step) / num_warmup_steps`. Two
    consequences reproduced on purpose: the first update (step 0) has LR 0, and at the end of warmup the LR drops from
    ~init_lr to the decayed value init_lr * (1 - step / num_train_steps)^power, not to init_lr.

    One deliberate guard: for steps before `start_warmup_step` the official formula gives a *negative* warmup LR
    (gradient ascent); here it is 0. Whenever step >= start_warmup_step (the official use: resuming at that step)
    the two agree exactly.
    """
    if num_train_steps <= 0:
        raise ValueError(f"num_train_steps must be > 0 (the decay horizon), got {num_train_steps}")
    if num_warmup_steps < 0:
        raise ValueError(f"num_warmup_steps must be >= 0, got {num_warmup_steps}")
    if start_warmup_step < 0:
        raise ValueError(f"start_warmup_step must be >= 0, got {start_warmup_step}")
    if learning_rate < 0:
        raise ValueError(f"learning_rate must be >= 0, got {learning_rate}")

    def schedule(step):
        step = jnp.asarray(step, jnp.int32)
        # float32 like the TF graph; step counts up to 125k are exact in float32.
        decay_step = jnp.minimum(step, num_train_steps).astype(jnp.float32)
        frac_left = 1.0 - decay_step / float(num_train_steps)
        lr = (learning_rate - end_learning_rate) * frac_left ** poly_power + end_learning_rate
        if num_warmup_steps:
            warm_step = step - start_warmup_step
            warmup_lr = learning_rate * jnp.maximum(warm_step, 0).astype(jnp.float32) / float(num_warmup_steps)
            lr = jnp.where(warm_step < num_warmup_steps, warmup_lr, lr)
        return lr

    return schedule


# ----------------------------------------------------------------------------------------------------------------
# Transforms that differ from optax's built-ins


class ScaleByAdamNoBiasCorrectionState(NamedTuple):
    mu: Any  # the official `adam_m` slot
    nu: Any  # the official `adam_v` slot


def scale_by_adam_no_bias_correction(b1: float = 0.9, b2: float = 0.999,
                                     eps: float = 1e-6) -> optax.GradientTransformation:
    """m / (sqrt(v) + eps) with m, v the raw moving averages (no 1 - b^t correction)."""

    def init_fn(params):
        zeros = jax.tree.map(lambda p: jnp.zeros(jnp.shape(p), jnp.float32), params)
        return ScaleByAdamNoBiasCorrectionState(mu=zeros, nu=jax.tree.map(jnp.copy, zeros))

    def update_fn(updates, state, params=None):
        del params
        mu = jax.tree.map(lambda m, g: b1 * m + (1.0 - b1) * g.astype(jnp.float32), state.mu, updates)
        nu = jax.tree.map(lambda v, g: b2 * v + (1.0 - b2) * jnp.square(g.astype(jnp.float32)), state.nu, updates)
        new_updates = jax.tree.map(lambda m, v, g: (m / (jnp.sqrt(v) + eps)).astype(g.dtype), mu, nu, updates)
        return new_updates, ScaleByAdamNoBiasCorrectionState(mu=mu, nu=nu)

    return optax.GradientTransformation(init_fn, update_fn)


def add_decoupled_weight_decay(rate: float,
                               decay_mask_fn: PathPredicate = default_decay_mask) -> optax.GradientTransformation:
    """update += rate * param for parameters whose path `decay_mask_fn` accepts (official: before the LR)."""

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("weight decay needs the parameters: call tx.update(grads, state, params)")
        if not rate:  # official `_do_use_weight_decay`: no decay at all when the rate is 0
            return updates, state
        new = _map_with_path(lambda path, u, p: u + rate * p if decay_mask_fn(path) else u, updates, params)
        return new, state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update_fn)


def scale_by_layer_trust_ratio(
    adaptation_mask_fn: PathPredicate = default_decay_mask,
    stacked_axes_fn: Callable[[str], int] | None = None,
) -> optax.GradientTransformation:
    """LAMB: update *= ||w|| / ||update|| per variable (1.0 when either norm is 0; skipped where the mask says no).

    The official norms are over a whole TF variable. A scanned stack of layers, groups or inner blocks is one
    array here, so `stacked_axes_fn(path)` may say how many leading axes index separate TF variables (e.g. 1 for
    a `layers` or `groups` or `inner` axis, 2 for `groups, inner` or `layers, inner`); norms are then taken per
    slice of those axes, which is what the official per-variable norms amount to. optax.scale_by_trust_ratio has
    neither the path mask nor per-slice norms.
    """

    def ratio_for(path, u, p):
        if not adaptation_mask_fn(path):
            return u
        n_stack = stacked_axes_fn(path) if stacked_axes_fn is not None else 0
        if not 0 <= n_stack <= jnp.ndim(p):
            raise ValueError(f"stacked_axes_fn({path!r}) = {n_stack}; allowed 0..{jnp.ndim(p)} (the array's rank)")
        axes = tuple(range(n_stack, jnp.ndim(p)))
        w_norm = jnp.sqrt(jnp.sum(jnp.square(p.astype(jnp.float32)), axis=axes, keepdims=True))
        u_norm = jnp.sqrt(jnp.sum(jnp.square(u.astype(jnp.float32)), axis=axes, keepdims=True))
        safe_u = jnp.where(u_norm > 0, u_norm, 1.0)  # keep the unused branch finite
        ratio = jnp.where((w_norm > 0) & (u_norm > 0), w_norm / safe_u, 1.0)
        return (ratio * u).astype(u.dtype)

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("the LAMB trust ratio needs the parameters: call tx.update(grads, state, params)")
        return _map_with_path(ratio_for, updates, params), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update_fn)


# ----------------------------------------------------------------------------------------------------------------
# The optimizer

# The optimizers by name and the official weight decay (0.01, every weight but LayerNorm and biases) are declared
# with the config fields that choose them (configs/schema.py).


def make_optimizer(
    name: str,
    learning_rate: float,
    num_train_steps: int,
    num_warmup_steps: int,
    *,
    weight_decay: float = WEIGHT_DECAY,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-6,
    clip_norm: float | None = 1.0,
    poly_power: float = 1.0,
    start_warmup_step: int = 0,
    end_learning_rate: float = 0.0,
    decay_mask_fn: PathPredicate = default_decay_mask,
    adaptation_mask_fn: PathPredicate | None = None,
    frozen_fn: PathPredicate | None = None,
    stacked_axes_fn: Callable[[str], int] | None = None,
) -> optax.GradientTransformation:
    """The official `create_optimizer`: clip (global norm) -> Adam moments -> + decay -> [LAMB ratio] -> * -LR.

    decay_mask_fn(path) -> True where weight decay applies; adaptation_mask_fn likewise for the LAMB trust ratio
    (defaults to decay_mask_fn, as officially). frozen_fn(path) -> True for parameters not to train (the official
    `excluded_tvars`): they get zero updates, no optimizer slots, and do not count in the clipping norm (officially
    their gradients are never computed). Call `tx.update(grads, state, params)`: decay and LAMB need params.
    """
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer name {name!r} is not supported; allowed: {', '.join(OPTIMIZERS)}")
    if clip_norm is not None and clip_norm <= 0:
        raise ValueError(f"clip_norm must be > 0 or None (no clipping), got {clip_norm}")
    schedule = make_schedule(learning_rate, num_train_steps, num_warmup_steps, start_warmup_step=start_warmup_step,
                             poly_power=poly_power, end_learning_rate=end_learning_rate)
    parts = []
    if clip_norm is not None:
        # optax's rule g * c / ||g|| when ||g|| >= c equals tf.clip_by_global_norm's g * c / max(||g||, c).
        parts.append(optax.clip_by_global_norm(clip_norm))
    parts += [scale_by_adam_no_bias_correction(b1, b2, eps), add_decoupled_weight_decay(weight_decay, decay_mask_fn)]
    if name == "lamb":
        parts.append(scale_by_layer_trust_ratio(adaptation_mask_fn or decay_mask_fn, stacked_axes_fn))
    parts.append(optax.scale_by_learning_rate(schedule))
    tx = optax.chain(*parts)
    if frozen_fn is None:
        return tx

    def labels(params):
        return _map_with_path(lambda path, _: "frozen" if frozen_fn(path) else "trained", params)

    # The clipping inside `tx` sees only the "trained" subtree, matching the official global norm over tvars.
    return optax.multi_transform({"trained": tx, "frozen": optax.set_to_zero()}, labels)


# Logical axis names whose every index is a separate official TF variable: 'groups' (`group_g`, shared parts
# with num_hidden_groups > 1), 'sets' (the parameter sets of a sharing_map: each set is its own variable, as a
# group is), 'layers' (parts kept per layer: each layer has its own variables) and 'inner' (`inner_group_k`,
# inner_group_num > 1). The encoder puts 'inner' right after 'groups'/'sets'/'layers', or first when a shared
# part has no stack axis (modeling/layout.py); counting the leading run of these names covers all those layouts.
STACK_AXIS_NAMES = ("layers", "groups", "sets", "inner")


def stacked_axes_from_boxed(boxed_params: Any, stack_names: tuple[str, ...] = STACK_AXIS_NAMES) -> Callable[[str], int]:
    """A `stacked_axes_fn` read from flax partitioning metadata: the count of leading axes named in `stack_names`.

    E.g. ('groups', 'inner', 'hidden', ...) -> 2, ('inner', 'hidden', ...) -> 1, ('vocab', 'embed') -> 0, so LAMB
    takes one trust ratio per (group, inner block), as the official per-`group_g/inner_group_k` variables get.

    Pass the boxed tree (e.g. `jax.eval_shape(model.init, ...)`) with the same nesting as the unboxed params the
    optimizer sees: the path to a box is the path its unboxed value will have.
    """
    import flax.linen as nn  # noqa: PLC0415  heavy: flax (optim has no other flax dependency)

    counts: dict[str, int] = {}

    def visit(path, leaf):
        n = 0
        for axis_name in (leaf.names if isinstance(leaf, nn.Partitioned) else ()):  # a leaf without names: 0
            if axis_name not in stack_names:
                break
            n += 1
        counts[path_to_str(path)] = n

    jax.tree_util.tree_map_with_path(visit, boxed_params, is_leaf=lambda x: isinstance(x, nn.Partitioned))

    def lookup(path: str) -> int:
        # A path the boxed tree does not hold used to fall back to 0 stacked axes without a word: a scanned stack
        # would then get one trust ratio for all its layers. Refuse it instead (issue 24).
        if path not in counts:
            raise KeyError(f"stacked_axes_from_boxed: no parameter {path!r} in the boxed tree the optimizer was "
                           f"built from ({len(counts)} leaves, e.g. {next(iter(counts), '')!r}); pass the boxed "
                           "tree with the same nesting as the parameters the optimizer updates")
        return counts[path]
    return lookup


# ----------------------------------------------------------------------------------------------------------------
# Presets


@dataclasses.dataclass(frozen=True)
class OptimizerSpec:
    """The numbers that define an official optimizer run; `build()` and `schedule()` share them."""

    name: str
    learning_rate: float
    num_train_steps: int
    num_warmup_steps: int
    weight_decay: float = WEIGHT_DECAY
    poly_power: float = 1.0
    start_warmup_step: int = 0
    clip_norm: float | None = 1.0

    def schedule(self) -> optax.Schedule:
        return make_schedule(self.learning_rate, self.num_train_steps, self.num_warmup_steps,
                             start_warmup_step=self.start_warmup_step, poly_power=self.poly_power)

    def build(self, **kwargs: Any) -> optax.GradientTransformation:
        """kwargs: the path predicates of `make_optimizer` (decay_mask_fn, frozen_fn, stacked_axes_fn, ...)."""
        return make_optimizer(**dataclasses.asdict(self), **kwargs)


# The paper's pretraining (albert.md §2.4: run_pretraining.py defaults; batch 4096, seq 512).
PAPER_PRETRAINING = OptimizerSpec("lamb", learning_rate=0.00176, num_train_steps=125_000, num_warmup_steps=3125)

def official_finetuning(learning_rate: float, num_train_steps: int, num_warmup_steps: int) -> OptimizerSpec:
    """The official fine-tuning optimizer: AdamW (same decay, clipping, no bias correction, linear decay)."""
    return OptimizerSpec("adamw", learning_rate, num_train_steps, num_warmup_steps)
