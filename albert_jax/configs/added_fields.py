"""Fields added to the pretraining `data` section after runs were first recorded: the one owner of their defaults.

Each default keeps the behaviour from before the field existed. experiments/pretrain.py writes them into every new
config; a recorded config without them (an older run's config.json) reads them as these, whether it is resumed
(training/workdir.ADDED_DEFAULTS), validated (runs/validate.py) or prepared (tasks/pretraining/input.py): read
them with `data_field(d, name)`. The comments are the fields' documentation.
"""
from __future__ import annotations

from typing import Any

PRETRAIN_DATA: dict[str, Any] = {
    # Several short instances per row with block-diagonal attention (docs/training.md, "Sequence packing"): exact,
    # but our instances are ~96% full, so it saves ~3% of rows here; on for corpora of short documents.
    "packing": False,
    "packing_max_examples": 3,  # examples packed into one row at most
    "packing_max_predictions": 0,  # masked predictions per packed row; 0: data.max_predictions_per_seq
    # Instances `albert-jax pretraining-data create` wrote (local or Beam): its --output-dir for training, a second
    # one built from held-out text for evaluation, and data.spm_model the tokenizer both used (docs/training.md).
    "instances": "",
    "eval_instances": "",
    # spm (SentencePiece, the English models) | wordpiece (a BERT-Chinese style vocab.txt, as the official Chinese
    # models: trained on the corpus, or data.wordpiece_vocab); docs/chinese.md.
    "tokenizer_kind": "spm",
    "wordpiece_vocab": "",
    "zh_masking": "char",  # Chinese whole words for the n-gram mask: char | jieba | gold (data/zh_segment.py)
}
# The ones added after sweeps began recording stage fingerprints: at these values a sweep's fingerprint leaves them
# out (ablations/sweep.py), so a stage trained before they existed is still found and linked.
FINGERPRINT_OMITS_AT_DEFAULT = ("instances", "eval_instances", "tokenizer_kind", "wordpiece_vocab", "zh_masking")


def data_field(d, name: str) -> Any:
    """data.<name> of a pretraining config, or its default when the config predates the field."""
    return d.get(name, PRETRAIN_DATA[name])
