"""The scales every experiment config has (the model the smoke and cpu scales train is albert_jax/config.py's
`smoke` preset).

smoke: seconds per row (the tests); cpu: minutes per row on 2 cores (docs/reproduction.md chose it from
measured curves); paper: the paper's models and schedule.
"""
from __future__ import annotations

SCALES = ("smoke", "cpu", "paper")

# The SentencePiece vocabulary trained on the corpus when no data.spm_model is given: the paper's 30,000; 4,000 below
# it, where a small model's embedding would otherwise be most of its parameters.
DEFAULT_VOCAB = {"smoke": 4000, "cpu": 4000, "paper": 30000}

# The smoke scale's documents per source: enough for a tokenizer, held-out pairs and a few steps. 100 English
# documents a source build in a third of the time 400 did (nearly the whole mix); People's Daily needs its 400 (2 MB)
# for a validation split at all. Experiments that switch the corpus per row (zh_masking) read it from here.
SMOKE_DOCS = {"albert_pretrain_en": 100, "albert_pretrain_zh": 400}

# The paper scale's remat policy: "auto" (AlbertConfig.remat), under which a scanned model needs no more memory
# than the same model unrolled with no remat. Speed and memory only: the same numbers come out.
PAPER_REMAT = "auto"
