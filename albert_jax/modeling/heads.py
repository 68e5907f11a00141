"""Task heads and the models that put them on AlbertModel.

Parameter names follow the official/HF layout where one exists (predictions/..., seq_relationship/...), which
keeps the converters to simple renames.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import linen as nn

from albert_jax.modeling import layers
from albert_jax.modeling.model import AlbertModel
from albert_jax.modeling.params import Params, dense_spec, freeze_spec, layer_norm_spec


def _decl(cfg):
    return dict(stddev=cfg.initializer_range, param_dtype=jnp.dtype(cfg.param_dtype))


def _dense(cfg, n_in, n_out, names, name):
    return Params(freeze_spec(dense_spec(n_in, n_out, names)), **_decl(cfg), name=name)


def gather_positions(seq_BLH, positions_BP):
    """seq[b, positions[b, p]] -> [B, P, H]: the official MLM head scores only the masked positions."""
    return jnp.take_along_axis(seq_BLH, positions_BP[..., None].astype(jnp.int32), axis=1)


class MLMHead(nn.Module):
    """Dense H->E, activation, LayerNorm(E), logits against the tied E-dim word table + output bias."""

    config: object

    @nn.compact
    def __call__(self, x_BPH, attend):
        cfg = self.config
        dtype = jnp.dtype(cfg.dtype)
        h = layers.activation(cfg.hidden_act)(layers.dense(_dense(cfg, cfg.hidden_size, cfg.embedding_size,
                                                        ("hidden", "embed"), "dense")(), x_BPH, dtype))
        ln = Params(freeze_spec(layer_norm_spec(cfg.embedding_size, "embed")), **_decl(cfg), name="LayerNorm")()
        h = layers.layer_norm(ln, h, cfg.layer_norm_eps)
        bias = self.param("bias", nn.with_logical_partitioning(nn.initializers.zeros, ("vocab",)),
                          (cfg.vocab_size,), jnp.dtype(cfg.param_dtype))
        return (attend(h) + bias.astype(dtype)).astype(jnp.float32)


class Classifier(nn.Module):
    """Dropout + dense to `num_labels` (official GLUE/SOP/RACE heads are a single dense layer)."""

    config: object
    num_labels: int
    dropout_rate: float = 0.0

    @nn.compact
    def __call__(self, x, deterministic=True):
        cfg = self.config
        rng = None if deterministic or self.dropout_rate == 0 else self.make_rng("dropout")
        x = layers.dropout(x, self.dropout_rate, rng, deterministic)
        init = nn.initializers.truncated_normal(cfg.initializer_range)
        pdtype = jnp.dtype(cfg.param_dtype)
        p = {"kernel": self.param("kernel", nn.with_logical_partitioning(init, ("hidden", None)),
                                  (cfg.hidden_size, self.num_labels), pdtype),
             "bias": self.param("bias", nn.with_logical_partitioning(nn.initializers.zeros, (None,)),
                                (self.num_labels,), pdtype)}
        return layers.dense(p, x, jnp.dtype(cfg.dtype)).astype(jnp.float32)


class AlbertForPreTraining(nn.Module):
    """MLM head + inter-sentence (SOP or NSP: the same 2-way head on the pooled output, no dropout)."""

    config: object

    def setup(self):
        self.albert = AlbertModel(self.config)
        self.predictions = MLMHead(self.config)
        self.seq_relationship = Classifier(self.config, 2)

    def __call__(self, input_ids, attention_mask=None, token_type_ids=None, masked_lm_positions=None,
                 deterministic=True, output_hidden_states=False, pack_ids=None, position_ids=None,
                 cls_positions=None):
        """Packed rows (tasks/pretraining/packing.py) pass pack_ids, position_ids and cls_positions [B, K]:
        the sentence logits are then [B, K, 2], one per packed example from its own [CLS]."""
        out = self.albert(input_ids, attention_mask, token_type_ids, position_ids, deterministic=deterministic,
                          output_hidden_states=output_hidden_states, pack_ids=pack_ids)
        seq = out["sequence_output"]
        pooled = out["pooled_output"]
        if cls_positions is not None:
            pooled = self.albert.pool(gather_positions(seq, cls_positions))
        if masked_lm_positions is not None:
            seq = gather_positions(seq, masked_lm_positions)
        out["mlm_logits"] = self.predictions(seq, self.albert.attend)
        out["sop_logits"] = self.seq_relationship(pooled)
        return out


class AlbertForSequenceClassification(nn.Module):
    """Classification (num_labels > 1) or regression (num_labels == 1) on the pooled output."""

    config: object
    num_labels: int = 2

    @nn.compact
    def __call__(self, input_ids, attention_mask=None, token_type_ids=None, deterministic=True,
                 return_pooled=False):
        out = AlbertModel(self.config, name="albert")(input_ids, attention_mask, token_type_ids,
                                                        deterministic=deterministic)
        logits = Classifier(self.config, self.num_labels, self.config.classifier_dropout_prob,
                            name="classifier")(out["pooled_output"], deterministic)
        # (logits, pooled): distillation reads the vector the classifier reads (runs/distill.py).
        return (logits, out["pooled_output"]) if return_pooled else logits


class AlbertForTokenClassification(nn.Module):
    config: object
    num_labels: int = 2

    @nn.compact
    def __call__(self, input_ids, attention_mask=None, token_type_ids=None, deterministic=True):
        out = AlbertModel(self.config, add_pooling_layer=False, name="albert")(
            input_ids, attention_mask, token_type_ids, deterministic=deterministic)
        return Classifier(self.config, self.num_labels, self.config.classifier_dropout_prob,
                          name="classifier")(out["sequence_output"], deterministic)


class AlbertForMultipleChoice(nn.Module):
    """Inputs [B, C, L]: each choice is encoded, its pooled output scored by a dense H->1; softmax over C."""

    config: object

    @nn.compact
    def __call__(self, input_ids, attention_mask=None, token_type_ids=None, deterministic=True):
        B, C, S = input_ids.shape
        flat = lambda a: None if a is None else a.reshape(B * C, S)
        out = AlbertModel(self.config, name="albert")(flat(input_ids), flat(attention_mask), flat(token_type_ids),
                                                       deterministic=deterministic)
        scores = Classifier(self.config, 1, self.config.classifier_dropout_prob, name="classifier")(
            out["pooled_output"], deterministic)
        return scores.reshape(B, C)


class AlbertForQuestionAnswering(nn.Module):
    """SQuAD v1: a linear span head H->2 giving start and end logits over the sequence."""

    config: object

    @nn.compact
    def __call__(self, input_ids, attention_mask=None, token_type_ids=None, deterministic=True):
        out = AlbertModel(self.config, add_pooling_layer=False, name="albert")(
            input_ids, attention_mask, token_type_ids, deterministic=deterministic)
        logits = Classifier(self.config, 2, name="qa_outputs")(out["sequence_output"])
        return logits[..., 0], logits[..., 1]


class AlbertForSquadV2(nn.Module):
    """SQuAD v2 as the official run_squad_v2.py: start logits, end logits conditioned on a start position,
    and an answerability classifier on [start-weighted feature, CLS].

    In training, pass the gold `start_positions`; at inference the end logits are computed for the top
    `start_n_top` starts, as the official code does.
    """

    config: object
    start_n_top: int = 5

    @nn.compact
    def __call__(self, input_ids, attention_mask=None, token_type_ids=None, p_mask=None, start_positions=None,
                 deterministic=True):
        cfg = self.config
        dtype, H = jnp.dtype(cfg.dtype), cfg.hidden_size
        seq = AlbertModel(cfg, add_pooling_layer=False, name="albert")(
            input_ids, attention_mask, token_type_ids, deterministic=deterministic)["sequence_output"]
        # p_mask: 1 marks positions that cannot be in an answer (question, special tokens).
        neg = 0.0 if p_mask is None else p_mask.astype(jnp.float32) * -1e30
        start = layers.dense(_dense(cfg, H, 1, ("hidden", None), "start_logits")(), seq, dtype)[..., 0]
        start_logits = start.astype(jnp.float32) + neg
        end_0 = _dense(cfg, 2 * H, H, (None, "hidden"), "end_logits_dense_0")
        end_ln = Params(freeze_spec(layer_norm_spec(H, "hidden")), **_decl(cfg), name="end_logits_LayerNorm")
        end_1 = _dense(cfg, H, 1, ("hidden", None), "end_logits_dense_1")

        def end_logits_for(start_feature_BH):
            feat = jnp.broadcast_to(start_feature_BH[:, None], seq.shape)
            h = jnp.tanh(layers.dense(end_0(), jnp.concatenate([seq, feat], -1), dtype))
            h = layers.layer_norm(end_ln(), h, cfg.layer_norm_eps)
            return layers.dense(end_1(), h, dtype)[..., 0].astype(jnp.float32) + neg

        if start_positions is not None:
            start_feature = gather_positions(seq, start_positions[:, None])[:, 0]
            end_logits = end_logits_for(start_feature)  # [B, L]
        else:
            top_starts = jax.lax.top_k(start_logits, self.start_n_top)[1]  # [B, k]
            feats = gather_positions(seq, top_starts)  # [B, k, H]
            end_logits = jax.vmap(end_logits_for, in_axes=1, out_axes=1)(feats)  # [B, k, L]
        # Answerability: attention-pooled start feature + the CLS state (official answer_class).
        weights = jax.nn.softmax(start_logits, axis=-1)
        start_summary = jnp.einsum("bl,blh->bh", weights.astype(dtype), seq.astype(dtype))
        h = jnp.tanh(layers.dense(_dense(cfg, 2 * H, H, (None, "hidden"), "answer_class_dense_0")(),
                             jnp.concatenate([start_summary, seq[:, 0]], -1), dtype))
        rng = None if deterministic or cfg.classifier_dropout_prob == 0 else self.make_rng("dropout")
        h = layers.dropout(h, cfg.classifier_dropout_prob, rng, deterministic)
        w = self.param("answer_class_dense_1", nn.with_logical_partitioning(
            nn.initializers.truncated_normal(cfg.initializer_range), ("hidden", None)), (H, 1),
            jnp.dtype(cfg.param_dtype))
        cls_logits = layers.project(layers.DENSE, h, w, dtype)[..., 0].astype(jnp.float32)
        return {"start_logits": start_logits, "end_logits": end_logits, "cls_logits": cls_logits,
                "top_starts": None if start_positions is not None else top_starts}


def exit_logits(exits, pooled_BH, layer, dtype):
    """Exit `layer`'s classifier (an int or a traced index) on pooled [CLS] states: one dense of the stacked
    per-layer kernels, as the step-by-step inference path scores one layer at a time (AlbertForEarlyExit scores
    all layers at once with the same kernels in one einsum; the test checks the two agree)."""
    p = {"kernel": exits["kernel"][layer], "bias": exits["bias"][layer]}
    return layers.dense(p, pooled_BH, dtype).astype(jnp.float32)


class AlbertForEarlyExit(nn.Module):
    """PABEE (Zhou et al. 2020): an internal classifier after EVERY layer; returns logits [B, L, num_labels].

    As the authors' ALBERT code (and HF's bert-loses-patience port), the pooler is the model's one pretrained
    pooler applied to every layer's [CLS] state, and each layer has its own dense classifier (dropout + H->C):
    a per-layer pooler would add L*H*H fresh parameters that no pretraining trained. The classifiers are one
    stacked kernel with a leading 'layers' axis, like every other per-layer parameter."""

    config: object
    num_labels: int = 2

    def setup(self):
        cfg = self.config
        self.albert = AlbertModel(cfg)
        spec = {"kernel": ((cfg.hidden_size, self.num_labels), ("hidden", None), "normal"),
                "bias": ((self.num_labels,), (None,), "zeros")}
        self.exits = Params(freeze_spec(spec), ((cfg.num_hidden_layers, "layers"),), **_decl(cfg))

    def __call__(self, input_ids, attention_mask=None, token_type_ids=None, deterministic=True):
        cfg = self.config
        out = self.albert(input_ids, attention_mask, token_type_ids, deterministic=deterministic,
                          output_hidden_states=True)
        cls_BLH = jnp.stack([h[:, 0] for h in out["hidden_states"][1:]], axis=1)  # every layer's [CLS]
        pooled = self.albert.pool(cls_BLH)
        rate = cfg.classifier_dropout_prob
        rng = None if deterministic or rate == 0 else self.make_rng("dropout")
        pooled = layers.dropout(pooled, rate, rng, deterministic)  # one mask per layer's copy, as separate heads
        exits = self.exits()
        logits = layers.project("blh,lhc->blc", pooled, exits["kernel"], jnp.dtype(cfg.dtype))
        return (logits + exits["bias"].astype(logits.dtype)).astype(jnp.float32)
