"""The encoder stack: one scanned layer step serves every sharing mode.

How sharing works (docs/architecture.md has the long form):
- Each layer has two parts, attention and FFN. A part is *shared* when the sharing mode says so; shared parts
  are declared once per group (no layer axis; a leading 'groups' axis only when num_hidden_groups > 1), the
  others once per layer (a leading 'layers' axis).
- The step function is pure: it receives this layer's slice of the per-layer parameters as the scanned input
  and the shared parameters as a broadcast input, and picks its group with i * G // L as the official code.
- `nn.scan` drives the step over the layers (compile time flat in depth); `scan_layers=False` runs the same
  step in a Python loop over the same parameter tree. `remat_policy` wraps the step, independently of both.
- inner_group_num > 1 adds an 'inner' axis after the group/layer axis: each layer applies its inner blocks in
  sequence, each with its own parameters (official `inner_group_k`).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import linen as nn

from albert_jax.modeling import layers as L
from albert_jax.modeling.params import Params, attention_spec, dense_spec, ffn_spec, freeze_spec

REMAT_POLICIES = {
    "full": None,  # save nothing: recompute the whole layer in the backward pass
    "dots": jax.checkpoint_policies.dots_saveable,
    "dots_no_batch": jax.checkpoint_policies.dots_with_no_batch_dims_saveable,
}


def group_of(cfg, layer):
    """The group layer `layer` runs: i * G // L, as the official code (a group's layers are contiguous). Works on
    Python and traced ints alike."""
    return layer * cfg.num_hidden_groups // cfg.num_hidden_layers


def param_set(cfg, part: str, layer: int, inner: int = 0) -> tuple[str, tuple[int, ...]]:
    """Where the parameters that layer `layer` (inner block `inner`) applies for `part` ('attention' or 'ffn')
    live: ('shared' | 'layers', the index into that subtree's leading axes). Exporters and importers of other
    layouts ask this rather than repeat the rule."""
    shared = cfg.attention_shared if part == "attention" else cfg.ffn_shared
    if shared:
        lead = (group_of(cfg, layer),) if cfg.num_hidden_groups > 1 else ()
    else:
        lead = (layer,)
    return ("shared" if shared else "layers"), lead + ((inner,) if cfg.inner_group_num > 1 else ())


def _take(tree, index):
    return jax.tree.map(lambda a: jnp.asarray(a)[index], tree)  # numpy leaves cannot take a traced index


class LayerStep(nn.Module):
    """One layer application (inner_group_num blocks). Holds no parameters of its own."""

    config: object
    deterministic: bool = True
    collect: bool = False  # also return this layer's output (for output_hidden_states)

    @nn.compact
    def __call__(self, x_BLH, xs, shared, mask_bias):
        cfg = self.config
        per_layer, layer_index = xs
        if cfg.num_hidden_groups > 1 and shared:
            shared = _take(shared, group_of(cfg, layer_index))
        params = {**shared, **per_layer}
        dtype = jnp.dtype(cfg.dtype)
        need_rng = not self.deterministic and (cfg.hidden_dropout_prob > 0 or cfg.attention_probs_dropout_prob > 0)
        rngs = jax.random.split(self.make_rng("dropout"), 3 * cfg.inner_group_num) if need_rng else None
        for k in range(cfg.inner_group_num):
            p = _take(params, k) if cfg.inner_group_num > 1 else params
            r = rngs[3 * k: 3 * k + 3] if need_rng else (None, None, None)
            x_BLH = L.attention_block(p["attention"], x_BLH, mask_bias, cfg, dtype, (r[0], r[1]), self.deterministic)
            x_BLH = L.ffn_block(p["ffn"], x_BLH, cfg, dtype, r[2], self.deterministic)
        return x_BLH, (x_BLH if self.collect else None)


class Encoder(nn.Module):
    """E->H projection (when configured) followed by L layers; returns (sequence output, per-layer outputs)."""

    config: object

    @nn.compact
    def __call__(self, emb_BLE, mask_bias, deterministic=True, output_hidden_states=False):
        cfg = self.config
        pdtype, dtype = jnp.dtype(cfg.param_dtype), jnp.dtype(cfg.dtype)
        decl = dict(stddev=cfg.initializer_range, param_dtype=pdtype)
        x_BLH = emb_BLE
        if cfg.use_projection:
            proj = Params(freeze_spec(dense_spec(cfg.embedding_size, cfg.hidden_size, ("embed", "hidden"))),
                          **decl, name="embedding_hidden_mapping_in")()
            x_BLH = L.dense(proj, emb_BLE, dtype)
        x_BLH = nn.with_logical_constraint(x_BLH.astype(dtype), L.ACT_BLH)
        hidden = [x_BLH]  # as HuggingFace: the projected embeddings, then one entry per layer

        inner = ((cfg.inner_group_num, "inner"),) if cfg.inner_group_num > 1 else ()
        groups = ((cfg.num_hidden_groups, "groups"),) if cfg.num_hidden_groups > 1 else ()
        shared_spec, layer_spec = {}, {}
        (shared_spec if cfg.attention_shared else layer_spec)["attention"] = attention_spec(cfg)
        (shared_spec if cfg.ffn_shared else layer_spec)["ffn"] = ffn_spec(cfg)
        shared = Params(freeze_spec(shared_spec), groups + inner, **decl, name="shared")() if shared_spec else {}
        per_layer = (Params(freeze_spec(layer_spec), ((cfg.num_hidden_layers, "layers"),) + inner, **decl,
                            name="layers")() if layer_spec else {})

        step = LayerStep
        if cfg.remat_policy != "none":
            # prevent_cse only matters outside scan, where XLA could otherwise merge the recomputation away.
            step = nn.remat(step, policy=REMAT_POLICIES[cfg.remat_policy], prevent_cse=not cfg.scan_layers)
        indices = jnp.arange(cfg.num_hidden_layers)
        if cfg.scan_layers:
            scan = nn.scan(step, variable_broadcast="params", split_rngs={"params": False, "dropout": True},
                           in_axes=(0, nn.broadcast, nn.broadcast), length=cfg.num_hidden_layers)
            layer = scan(cfg, deterministic, output_hidden_states, name="layer")
            x_BLH, hidden_LBLH = layer(x_BLH, (per_layer, indices), shared, mask_bias)
            if output_hidden_states:
                hidden += [hidden_LBLH[i] for i in range(cfg.num_hidden_layers)]
        else:
            layer = step(cfg, deterministic, name="layer")
            for i in range(cfg.num_hidden_layers):
                x_BLH, _ = layer(x_BLH, (_take(per_layer, i), i), shared, mask_bias)
                hidden.append(x_BLH)
        return x_BLH, (hidden if output_hidden_states else None)
