"""The model shapes the suites measure, by name: a preset, 'smoke4' (the 4-layer fine-tuning smoke model of
experiments/finetune.py) or 'tiny' (a 2-layer H=32 model for --quick)."""
from __future__ import annotations

from albert_jax.config import preset


def model_config(name: str, **overrides):
    if name == "smoke4":
        from experiments.finetune import SMOKE_MODEL  # the one owner of its shape
        return preset("smoke", **{**SMOKE_MODEL, **overrides})
    if name == "tiny":
        return preset("smoke", **{**dict(embedding_size=16, hidden_size=32, num_hidden_layers=2,
                                         num_attention_heads=2, intermediate_size=64), **overrides})
    return preset(name, **overrides)


def names(text: str, default: str) -> list[str]:
    return [m.strip() for m in (text or default).split(",") if m.strip()]
