"""The model shapes the suites measure, by name: a preset, 'smoke4' (the 4-layer fine-tuning smoke model of
experiments/finetune.py: the `smoke` preset), 'cpu' (the cpu scale's pretraining model as the recipe study chose it:
smoke4 at E=H=128 with the cpu scale's vocabulary) or 'tiny' (the `tiny` preset, 2 layers of H=32, at 2 heads, for
--quick)."""
from __future__ import annotations

from albert_jax.config import preset


def model_config(name: str, **overrides):
    if name in ("smoke4", "cpu"):
        from albert_jax.configs.scales import DEFAULT_VOCAB
        cpu = dict(embedding_size=128, vocab_size=DEFAULT_VOCAB["cpu"]) if name == "cpu" else {}
        return preset("smoke", **{**cpu, **overrides})
    if name == "tiny":
        return preset("tiny", **{"num_attention_heads": 2, **overrides})
    return preset(name, **overrides)


def names(text: str, default: str) -> list[str]:
    return [m.strip() for m in (text or default).split(",") if m.strip()]
