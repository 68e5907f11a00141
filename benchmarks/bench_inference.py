"""run.py inference: forward passes, ours (jit) against HF transformers (torch eager, inference_mode), same weights.

(a) The encoder at a fixed shape (batch 8, seq 128): AlbertModel, against HF's torch AlbertModel and its Flax
    FlaxAlbertModel (jitted), the systems interleaved, medians.
(b) Classification over the real rt_sentiment dev sentences (AlbertForSequenceClassification): ours padded to
    max_seq_length; ours length-bucketed (the split walked shortest first, each batch cut to its bucket,
    data/bucketing.py); HF with the usual dynamic padding (each batch, in order, cut to its longest row).
    One pass over the split per repetition; examples/s and useful (real, input_mask) tokens/s. On CPU the first
    256 dev examples by default (--examples; a whole pass of albert-base is minutes there).
Weights: one random init of ours, converted for HF by albert_jax.interop.hf.params_to_hf (the tested converter);
the Flax peer runs its own random init.
FLOP rates count the positions each system actually computes (padding included): forward = training / 3.
"""
from __future__ import annotations

import numpy as np

import common
import models


def _fwd_flops(cfg, seq: int) -> float:
    return cfg.flops_per_token(seq, masked_fraction=0.0) / 3


def _hf_model(cls_name: str, cfg, params, head: str, labels=None):
    import torch
    import transformers

    from albert_jax.interop.hf import hf_config_json, params_to_hf

    d = {k: v for k, v in hf_config_json(cfg, "albert", head, labels).items() if k not in ("model_type",)}
    model = getattr(transformers, cls_name)(transformers.AlbertConfig(**d)).eval()
    sd = params_to_hf(params, cfg, head=head)
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in sd.items()}, strict=True)
    return model


def encoder_forward(name: str, quick: bool, batch=8, seq=128) -> list[dict]:
    import jax
    import jax.numpy as jnp
    import torch
    from flax import linen as nn

    from albert_jax.modeling.model import AlbertModel

    cfg = models.model_config(name, max_position_embeddings=max(512, seq))
    model = AlbertModel(cfg)
    rng = np.random.default_rng(0)
    ids = rng.integers(5, cfg.vocab_size, (batch, seq)).astype(np.int32)
    mask, types = np.ones_like(ids), np.zeros_like(ids)
    params = nn.unbox(jax.jit(lambda r: model.init(r, jnp.asarray(ids))["params"])(jax.random.PRNGKey(0)))
    fwd = jax.jit(lambda p, i, m, t: model.apply({"params": p}, i, m, t))
    args = [jnp.asarray(a) for a in (ids, mask, types)]
    hf = _hf_model("AlbertModel", cfg, jax.device_get(params), "model")
    feed = {"input_ids": torch.from_numpy(ids).long(), "attention_mask": torch.from_numpy(mask).long(),
            "token_type_ids": torch.from_numpy(types).long()}

    def ours():
        out = fwd(params, *args)
        jax.block_until_ready((out["sequence_output"], out["pooled_output"]))

    def theirs():
        with torch.inference_mode():
            hf(**feed)

    med, ceil = common.interleaved_with_ceiling({"albert_jax": ours, "hf_torch": theirs,
                                                 "hf_flax": _flax_forward(cfg, *args)},
                                                reps=3 if quick else 10, warmup=2, quick=quick)
    rows = []
    for system, s in med.items():
        gflops = batch * seq * _fwd_flops(cfg, seq) / s / 1e9
        rows.append({"model": name, "layers": cfg.num_hidden_layers, "hidden": cfg.hidden_size, "batch": batch,
                     "seq": seq, "system": system, "median_s": s, "seq_per_s": batch / s,
                     "tflops": gflops / 1e3, "share_of_ceiling": common.share(gflops, ceil),
                     "ceiling_gflops": ceil["jax_float32_gflops"]})
    rows[0]["ours_over_hf"] = med["hf_torch"] / med["albert_jax"]
    rows[0]["ours_over_hf_flax"] = med["hf_flax"] / med["albert_jax"]
    return rows


def _flax_forward(cfg, ids, mask, types):
    """HF's FlaxAlbertModel (its own random init: the time does not depend on the values), jitted: one forward,
    blocking. Only at the fixed shape: with dynamic padding it would compile once per batch length."""
    import jax
    import transformers

    from train_throughput import hf_config

    model = transformers.FlaxAlbertModel(hf_config(cfg), seed=0)
    fwd = jax.jit(lambda p, i, m, t: model(i, attention_mask=m, token_type_ids=t, params=p, train=False))

    def go():
        out = fwd(model.params, ids, mask, types)
        jax.block_until_ready((out.last_hidden_state, out.pooler_output))
    return go


def classification(name: str, tok, quick: bool, limit: int, batch=32, max_len=128) -> list[dict]:
    import jax
    import jax.numpy as jnp
    import torch

    from albert_jax.data import bucketing
    from albert_jax.tasks import features
    from albert_jax.tasks.registry import make_task
    from albert_jax.training.state import fresh_params

    task = make_task("rt_sentiment")
    data = task.prepare(tok, max_len, limit=limit)  # the first `limit` examples of each split (0: all)
    dev = data.dev[task.dev_splits[0]]
    cfg = models.model_config(name, vocab_size=tok.vocab_size, max_position_embeddings=max(512, max_len),
                              classifier_dropout_prob=0.0)
    model = task.model(cfg)
    params = fresh_params(task, cfg, jax.random.PRNGKey(0))
    logits = jax.jit(lambda p, b: model.apply({"params": p}, b["input_ids"], b["input_mask"], b["segment_ids"]))
    keys = ("input_ids", "input_mask", "segment_ids")

    def ours_batches(buckets):
        return [{k: jnp.asarray(b[k]) for k in keys}
                for b in features.eval_batches(dev, batch, None, task.seq_keys, buckets)]

    padded = ours_batches(())
    bucketed = ours_batches(bucketing.bucket_lengths(max_len, "auto"))
    hf_batches = common.hf_dynamic_padding(features.eval_batches(dev, batch, None))  # in order, as HF would
    labels = [str(i) for i in range(task.num_labels)]
    hf = _hf_model("AlbertForSequenceClassification", cfg, params, "sequence", labels)

    def ours(batches):
        def go():
            jax.block_until_ready([logits(params, b) for b in batches])
        return go

    def theirs():
        with torch.inference_mode():
            for b in hf_batches:
                hf(**b)

    med, ceil = common.interleaved_with_ceiling({"albert_jax padded": ours(padded), "albert_jax bucketed": ours(
        bucketed), "hf_torch dynamic padding": theirs}, reps=1 if quick else 3, warmup=1, quick=quick)
    n_examples = len(dev)
    useful = float(np.asarray(dev.arrays["input_mask"]).sum())
    computed = {"albert_jax padded": [b["input_ids"].shape[-1] for b in padded],
                "albert_jax bucketed": [b["input_ids"].shape[-1] for b in bucketed],
                "hf_torch dynamic padding": [b["input_ids"].shape[-1] for b in hf_batches]}
    rows = []
    for system, s in med.items():
        rows.append({"model": name, "task": "rt_sentiment", "split": dev.split, "examples": n_examples,
                     "batch": batch, "system": system, "pass_s": s, "examples_per_s": n_examples / s,
                     **common.rate_fields(batch, computed[system], lambda n: _fwd_flops(cfg, n), s, useful, ceil),
                     "speedup_vs_padded": med["albert_jax padded"] / s,
                     "ours_bucketed_over_this": s / med["albert_jax bucketed"]})
    return rows


def run(args, ceil: dict) -> dict:
    names = models.names(args.models, "tiny" if args.quick else "albert-base,smoke4")
    tok = common.tokenizer(args.tokenizer, args.quick)
    import jax
    limit = args.examples if args.examples >= 0 else 96 if args.quick else 256 if jax.default_backend() == "cpu" else 0
    enc = [r for n in names for r in encoder_forward(n, args.quick)]
    cls = [r for n in names for r in classification(n, tok, args.quick, limit)]
    summary = {}
    for n in names:
        summary[f"encoder_ours_over_hf_{n}"] = next(r["ours_over_hf"] for r in enc if r["model"] == n
                                                    and "ours_over_hf" in r)
        summary[f"encoder_ours_over_hf_flax_{n}"] = next(r["ours_over_hf_flax"] for r in enc if r["model"] == n
                                                         and "ours_over_hf_flax" in r)
        rows = {r["system"]: r for r in cls if r["model"] == n}
        summary[f"rt_sentiment_bucketed_over_padded_{n}"] = rows["albert_jax bucketed"]["speedup_vs_padded"]
        summary[f"rt_sentiment_bucketed_over_hf_{n}"] = rows["hf_torch dynamic padding"]["ours_bucketed_over_this"]
    return {"tables": {"encoder forward (batch 8, seq 128)": enc,
                       "rt_sentiment dev classification forward": cls}, "summary": summary}
