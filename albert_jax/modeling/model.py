"""AlbertModel: factorized embeddings (width E) -> encoder (width H) -> tanh pooler.

BERT is the same code with sharing='none', E == H and no projection.
"""
from __future__ import annotations

import jax.numpy as jnp
from flax import linen as nn

from albert_jax.modeling import layers
from albert_jax.modeling.encoder import Encoder
from albert_jax.modeling.params import Params, dense_spec, freeze_spec, layer_norm_spec


class Embeddings(nn.Module):
    """Word + position + token-type tables of width E, LayerNorm in width E (before the E->H projection)."""

    config: object

    def setup(self):
        cfg = self.config
        E = cfg.embedding_size
        decl = dict(stddev=cfg.initializer_range, param_dtype=jnp.dtype(cfg.param_dtype))

        def table(rows, row_name):
            return Params(freeze_spec({"embedding": ((rows, E), (row_name, "embed"), "normal")}), **decl)

        self.word_embeddings = table(cfg.vocab_size, "vocab")
        self.position_embeddings = table(cfg.max_position_embeddings, None)
        self.token_type_embeddings = table(cfg.type_vocab_size, None)
        self.LayerNorm = Params(freeze_spec(layer_norm_spec(E, "embed")), **decl)

    def __call__(self, input_ids_BL, token_type_ids_BL, position_ids_BL, deterministic=True):
        cfg = self.config
        seq_len = input_ids_BL.shape[-1]
        if seq_len > cfg.max_position_embeddings:
            raise ValueError(f"sequence length {seq_len} exceeds max_position_embeddings="
                             f"{cfg.max_position_embeddings}")
        x = jnp.take(self.word_embeddings()["embedding"], input_ids_BL, axis=0)
        x = x + jnp.take(self.position_embeddings()["embedding"], position_ids_BL, axis=0)
        x = x + jnp.take(self.token_type_embeddings()["embedding"], token_type_ids_BL, axis=0)
        x = layers.layer_norm(self.LayerNorm(), x, cfg.layer_norm_eps)
        rng = None if deterministic or cfg.hidden_dropout_prob == 0 else self.make_rng("dropout")
        x = layers.dropout(x, cfg.hidden_dropout_prob, rng, deterministic)
        return nn.with_logical_constraint(x, layers.ACT_BLE)

    def attend(self, x_BLE):
        """Logits against the E-dim word table: the MLM decoder is tied to the input embeddings."""
        table = self.word_embeddings()["embedding"]
        dtype = jnp.dtype(self.config.dtype)
        return jnp.dot(x_BLE.astype(dtype), table.astype(dtype).T)


def pool(pooler, cls_BH, cfg):
    """tanh(dense) on [CLS] states: the one pooler formula (the early-exit inference path calls it too)."""
    return jnp.tanh(layers.dense(pooler, cls_BH, jnp.dtype(cfg.dtype)))


class AlbertModel(nn.Module):
    config: object
    add_pooling_layer: bool = True

    def setup(self):
        # Explicit names keep the tree flat (albert/embeddings/word_embeddings/...), as the HF/official layout.
        self.embeddings = Embeddings(self.config)
        self.encoder = Encoder(self.config)
        if self.add_pooling_layer:
            H = self.config.hidden_size
            self.pooler = Params(freeze_spec(dense_spec(H, H, ("hidden", None))),
                                 stddev=self.config.initializer_range,
                                 param_dtype=jnp.dtype(self.config.param_dtype))

    def __call__(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                 deterministic=True, output_hidden_states=False, pack_ids=None):
        """Returns dict(sequence_output [B,L,H], pooled_output [B,H] or None, hidden_states list or None).

        `pack_ids` (packed rows: 1..k per example, 0 on padding) replace `attention_mask` with a block-diagonal
        mask; pass the examples' own `position_ids` with them."""
        if attention_mask is None:
            attention_mask = jnp.ones_like(input_ids)
        if token_type_ids is None:
            token_type_ids = jnp.zeros_like(input_ids)
        if position_ids is None:
            position_ids = jnp.broadcast_to(jnp.arange(input_ids.shape[-1]), input_ids.shape)
        emb = self.embeddings(input_ids, token_type_ids, position_ids, deterministic)
        bias = layers.mask_to_bias(attention_mask) if pack_ids is None else layers.pack_mask_bias(pack_ids)
        seq, hidden = self.encoder(emb, bias, deterministic, output_hidden_states)
        pooled = self.pool(seq[:, 0]) if self.add_pooling_layer else None
        return {"sequence_output": seq, "pooled_output": pooled, "hidden_states": hidden}

    def pool(self, cls_BH):
        """The tanh pooler on [CLS] states (any leading axes: early exit pools every layer's)."""
        return pool(self.pooler(), cls_BH, self.config)

    def attend(self, x_BLE):
        return self.embeddings.attend(x_BLE)
