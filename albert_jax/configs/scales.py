"""The scales every experiment config has, and the small model the smoke and cpu scales train.

smoke: seconds per row (the tests); cpu: minutes per row on 2 cores (docs/reproduction.md chose it from
measured curves); paper: the paper's models and schedule.
"""
from __future__ import annotations

SCALES = ("smoke", "cpu", "paper")

# A model that learns visibly in a few hundred CPU steps: 4 layers of width 128, E=64 (experiments/pretrain.py
# and experiments/finetune.py build on it; the ablations set E and sharing per row).
SMOKE_MODEL = dict(embedding_size=64, hidden_size=128, num_hidden_layers=4, num_attention_heads=4,
                   intermediate_size=256, max_position_embeddings=128)
