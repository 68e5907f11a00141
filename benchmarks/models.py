"""The model shapes the suites measure, by name: a preset, 'smoke4' (the 4-layer fine-tuning smoke model of
experiments/finetune.py), 'cpu' (the cpu scale's pretraining model as the recipe study chose it: smoke4 at E=H=128
with the cpu scale's vocabulary) or 'tiny' (a 2-layer H=32 model for --quick)."""
from __future__ import annotations

from albert_jax.config import preset


def model_config(name: str, **overrides):
    if name in ("smoke4", "cpu"):
        from albert_jax.configs.scales import DEFAULT_VOCAB, SMOKE_MODEL  # the one owner of its shape
        cpu = dict(embedding_size=128, vocab_size=DEFAULT_VOCAB["cpu"]) if name == "cpu" else {}
        return preset("smoke", **{**SMOKE_MODEL, **cpu, **overrides})
    if name == "tiny":
        return preset("smoke", **{**dict(embedding_size=16, hidden_size=32, num_hidden_layers=2,
                                         num_attention_heads=2, intermediate_size=64), **overrides})
    return preset(name, **overrides)


def names(text: str, default: str) -> list[str]:
    return [m.strip() for m in (text or default).split(",") if m.strip()]
