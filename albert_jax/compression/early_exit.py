"""Early-exit inference that really stops computing: the shared layer applied one step at a time.

`make_predict(cfg)` returns a jittable `predict(params, input_ids, input_mask, segment_ids, patience)` for a
PABEE model (modeling/heads.AlbertForEarlyExit): a `lax.while_loop` applies layer j, scores exit j, updates each
row's patience counter (tasks/early_exit.py states the rule) and stops as soon as every row of the batch has
exited, or after the last layer. Rows that exited earlier ride along until the batch is done (their answer is
frozen), so the saving per batch is set by its slowest row; with batch 1 each example stops at its own exit.

It applies the model's own pieces, not a copy of them: `Embeddings` (the module), `encoder.hidden_input` (the
E->H projection), `encoder.apply_layer` (the scan's step on the scan's slice), `model.pool` and
`heads.exit_logits`. `tests/test_early_exit.py` checks that it gives the predictions and exit layers that the
all-layers evaluation derives.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from albert_jax.modeling import layers
from albert_jax.modeling.encoder import apply_layer, hidden_input
from albert_jax.modeling.heads import exit_logits
from albert_jax.modeling.model import Embeddings, pool


def make_predict(cfg):
    """predict(params, input_ids, input_mask, segment_ids, patience) -> (predictions [B], exit layers [B],
    1-based). `patience` (>= 1) may be traced: one compiled function serves every patience."""
    num_layers, dtype = cfg.num_hidden_layers, jnp.dtype(cfg.dtype)

    def predict(params, input_ids, input_mask, segment_ids, patience):
        albert, B = params["albert"], input_ids.shape[0]
        positions = jnp.broadcast_to(jnp.arange(input_ids.shape[-1]), input_ids.shape)
        emb = Embeddings(cfg).apply({"params": albert["embeddings"]}, input_ids, segment_ids, positions, True)
        x = hidden_input(cfg, albert["encoder"].get("embedding_hidden_mapping_in"), emb)
        mask_bias = layers.mask_to_bias(input_mask)
        zeros = jnp.zeros((B,), jnp.int32)

        def cond(state):
            j, _, _, _, done, _, _ = state
            return (j < num_layers) & ~jnp.all(done)

        def body(state):
            j, x, prev, counter, done, exit_layer, exit_pred = state
            x = apply_layer(cfg, albert["encoder"], j, x, mask_bias)
            pred = jnp.argmax(exit_logits(params["exits"], pool(albert["pooler"], x[:, 0], cfg), j, dtype), -1)
            counter = jnp.where((j > 0) & (pred == prev), counter + 1, 0)
            hit = ~done & ((counter >= patience) | (j == num_layers - 1))
            return (j + 1, x, pred.astype(jnp.int32), counter, done | hit, jnp.where(hit, j + 1, exit_layer),
                    jnp.where(hit, pred, exit_pred).astype(jnp.int32))

        init = (jnp.int32(0), x, zeros, zeros, jnp.zeros((B,), bool), zeros, zeros)
        *_, exit_layer, exit_pred = jax.lax.while_loop(cond, body, init)
        return exit_pred, exit_layer

    return predict
