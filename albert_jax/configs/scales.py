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

# The paper scale runs each scanned layer under remat "dots_no_ffn_in" (save the weight matmuls' outputs except the
# FFN's [B, L, I] expansion; recompute that, the attention scores and the elementwise work in the backward pass): the
# cheapest of our policies under which every Table 2 model, scanned, needs no more memory than the same model
# unrolled with no remat. Without remat the loop stacks, per layer, bf16 copies of the float32 attention
# probabilities and FFN activations beside the float32 ones, which an unrolled program converts inside the backward
# matmuls instead. Measured with `albert-jax plan` on TPU v3, 8 sequences of 512 per core (batch 4096 on 512 cores),
# GiB per core, scanned / unrolled / scanned dots_no_batch / scanned dots_no_ffn_in (FLOPs over the model's):
#   albert-base     3.85 / 2.80 / 2.34 (1.033) / 1.87 (1.133)
#   bert-base       6.27 / 3.98 / 4.28 (1.033) / 3.72 (1.132)   dots_no_batch is above unrolled here
#   albert-xxlarge 21.76 (does not fit) / 14.54 / 15.44 (1.007) / 13.13 (1.116)   and here
# Every row: docs/accelerators.md, "The scan's memory". Speed and memory only: the same numbers come out.
PAPER_REMAT = "dots_no_ffn_in"
