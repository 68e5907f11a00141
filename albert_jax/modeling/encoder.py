"""The encoder stack: one scanned layer step serves every sharing mode and every layer -> set map.

How sharing works (docs/architecture.md has the long form; `layout.py` owns the tree's axes):
- Each layer has two parts, attention and FFN. A part is *shared* when the sharing mode says so; shared parts
  are declared once per parameter set (a leading 'sets' axis with a sharing_map, 'groups' when
  num_hidden_groups > 1, none otherwise), the others once per layer (a leading 'layers' axis).
- The step function is pure: it receives this layer's slice of the per-layer parameters and its set index as
  the scanned input and the shared parameters as a broadcast input, and gathers its set with that index
  (`layout.shared_index`: the map's ids, or i * G // L as the official code). A set used by k layers is
  gathered k times, so its gradient is the sum of k contributions.
- `nn.scan` drives the step over the layers (compile time flat in depth); `scan_layers=False` runs the same
  step in a Python loop over the same parameter tree. `remat_policy` wraps the step, independently of both.
- inner_group_num > 1 adds an 'inner' axis after the set/group/layer axis: each layer applies its inner blocks
  in sequence, each with its own parameters (official `inner_group_k`).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import linen as nn

from albert_jax.modeling import layers
from albert_jax.modeling import layout
from albert_jax.modeling.params import Params, attention_spec, dense_spec, ffn_spec, freeze_spec

def _dots_but_ffn_in(cfg):
    """The weight matmuls' outputs (dots_no_batch) except the FFN's expansion, the widest of them ([B, L, I]): the
    backward recomputes it and the activation (2HI FLOPs per token forward, a ninth of a layer's matmuls at I=4H)."""
    def policy(prim, *avals, **params):
        if not jax.checkpoint_policies.dots_with_no_batch_dims_saveable(prim, *avals, **params):
            return False
        return tuple(getattr(avals[1], "shape", ())) != (cfg.hidden_size, cfg.intermediate_size)
    return policy


# What each of config.REMAT_POLICIES saves for the backward pass ("none" is no remat at all).
_SAVED = {
    "full": lambda cfg: None,  # save nothing: recompute the whole layer in the backward pass
    "dots": lambda cfg: jax.checkpoint_policies.dots_saveable,
    "dots_no_batch": lambda cfg: jax.checkpoint_policies.dots_with_no_batch_dims_saveable,
    "dots_no_ffn_in": _dots_but_ffn_in,
}


def _take(tree, index):
    """Entry `index` (a non-negative int or traced scalar: a dynamic slice clamps, it does not wrap) of every leaf's
    leading axis. A dynamic slice, not jnp's `a[i]`: the same values, but indexing traces a gather through jnp's
    general indexing path, several milliseconds per leaf, which made it half of a grouped layer's tracing (numpy
    leaves are fine: lax converts them)."""
    return jax.tree.map(lambda a: jax.lax.dynamic_index_in_dim(a, index, keepdims=False), tree)


def hidden_input(cfg, proj, emb_BLE):
    """The first layer's input: the E->H projection of the embeddings (when configured), in the compute dtype."""
    x_BLH = emb_BLE if proj is None else layers.dense(proj, emb_BLE, jnp.dtype(cfg.dtype))
    return nn.with_logical_constraint(x_BLH.astype(jnp.dtype(cfg.dtype)), layers.ACT_BLH)


def apply_layer(cfg, encoder_params, layer, x_BLH, mask_bias):
    """Layer `layer` (an int or a traced index) of a built encoder tree, outside the scan: the same step on the
    same slice the scan gives it. Early-exit inference applies the stack one layer at a time with it."""
    per_layer = _take(encoder_params.get("layers", {}), layer)
    index = layout.shared_index(cfg)
    set_index = jnp.asarray(index, jnp.int32)[layer] if index is not None else layer
    x_BLH, _ = LayerStep(cfg).apply({}, x_BLH, (per_layer, set_index), encoder_params.get("shared", {}),
                                    mask_bias)
    return x_BLH


class LayerStep(nn.Module):
    """One layer application (inner_group_num blocks). Holds no parameters of its own."""

    config: object
    deterministic: bool = True
    collect: bool = False  # also return this layer's output (for output_hidden_states)

    @nn.compact
    def __call__(self, x_BLH, xs, shared, mask_bias):
        cfg = self.config
        per_layer, set_index = xs
        if shared and layout.shared_index(cfg) is not None:
            shared = _take(shared, set_index)
        params = {**shared, **per_layer}
        dtype = jnp.dtype(cfg.dtype)
        need_rng = not self.deterministic and (cfg.hidden_dropout_prob > 0 or cfg.attention_probs_dropout_prob > 0)
        rngs = jax.random.split(self.make_rng("dropout"), 3 * cfg.inner_group_num) if need_rng else None
        for k in range(cfg.inner_group_num):
            p = _take(params, k) if cfg.inner_group_num > 1 else params
            r = rngs[3 * k: 3 * k + 3] if need_rng else (None, None, None)
            x_BLH = layers.attention_block(p["attention"], x_BLH, mask_bias, cfg, dtype, (r[0], r[1]),
                                           self.deterministic)
            x_BLH = layers.ffn_block(p["ffn"], x_BLH, cfg, dtype, r[2], self.deterministic)
        return x_BLH, (x_BLH if self.collect else None)


class Encoder(nn.Module):
    """E->H projection (when configured) followed by L layers; returns (sequence output, per-layer outputs)."""

    config: object

    @nn.compact
    def __call__(self, emb_BLE, mask_bias, deterministic=True, output_hidden_states=False):
        cfg = self.config
        decl = dict(stddev=cfg.initializer_range, param_dtype=jnp.dtype(cfg.param_dtype))
        proj = None
        if cfg.use_projection:
            proj = Params(freeze_spec(dense_spec(cfg.embedding_size, cfg.hidden_size, ("embed", "hidden"))),
                          **decl, name="embedding_hidden_mapping_in")()
        x_BLH = hidden_input(cfg, proj, emb_BLE)
        hidden = [x_BLH]  # as HuggingFace: the projected embeddings, then one entry per layer

        shared_spec, layer_spec = {}, {}
        specs = {"attention": attention_spec, "ffn": ffn_spec}  # one per layout.PARTS
        for part in layout.PARTS:
            spec = specs[part](cfg)
            (shared_spec if layout.is_shared(cfg, part) else layer_spec)[part] = spec
        shared = (Params(freeze_spec(shared_spec), layout.shared_prefix(cfg), **decl, name="shared")()
                  if shared_spec else {})
        per_layer = (Params(freeze_spec(layer_spec), layout.layer_prefix(cfg), **decl, name="layers")()
                     if layer_spec else {})

        step = LayerStep
        if cfg.remat_policy != "none":
            # prevent_cse only matters outside scan, where XLA could otherwise merge the recomputation away.
            step = nn.remat(step, policy=_SAVED[cfg.remat_policy](cfg), prevent_cse=not cfg.scan_layers)
        # Layer i's index into the shared sets; unused (layer numbers) when the shared tree has no stack axis.
        set_index = layout.shared_index(cfg) or tuple(range(cfg.num_hidden_layers))
        if cfg.scan_layers:
            scan = nn.scan(step, variable_broadcast="params", split_rngs={"params": False, "dropout": True},
                           in_axes=(0, nn.broadcast, nn.broadcast), length=cfg.num_hidden_layers)
            layer = scan(cfg, deterministic, output_hidden_states, name="layer")
            x_BLH, hidden_LBLH = layer(x_BLH, (per_layer, jnp.asarray(set_index, jnp.int32)), shared,
                                   mask_bias)
            if output_hidden_states:
                hidden += [hidden_LBLH[i] for i in range(cfg.num_hidden_layers)]
        else:
            layer = step(cfg, deterministic, name="layer")
            for i in range(cfg.num_hidden_layers):
                x_BLH, _ = layer(x_BLH, (_take(per_layer, i), set_index[i]), shared, mask_bias)
                hidden.append(x_BLH)
        return x_BLH, (hidden if output_hidden_states else None)
