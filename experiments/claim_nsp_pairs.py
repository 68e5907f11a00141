"""Claim (e) of our sources: NSP pretraining suits sentence-pair similarity better than SOP.

Run:
  albert-jax sweep claim_nsp_pairs --scale cpu --runs runs
  albert-jax table claim_nsp_pairs --scale cpu --runs runs

The Table 5 models, fine-tuned on our sentence-pair tasks instead of SST-2: paraphrase (verse_paraphrase_near, whose
negatives are all neighbouring verses of the same chapter: NSP's own negative type, a random other text, never
occurs, so its topic-shift cue cannot decide a pair; verse_paraphrase has half random negatives) and same sense
(wordnet_wic). The sweep links the Table 5 rows' pretraining.
"""
from albert_jax.ablations.readings import Check
from albert_jax.ablations.registry import Experiment, Row, base_fields
from albert_jax.ablations.sweep import config_getter


def rows(scale):
    # Table 5's models, E=H below the paper scale as there (experiments/table5.py says why): the claim needs an SOP
    # model that has learnt SOP.
    embedding = 128 if scale == "paper" else 768
    return [Row(name, base_fields(scale, embedding, "all", task)) for name, task in (("None", "none"),
                                                                                      ("NSP", "nsp"), ("SOP", "sop"))]


EXPERIMENT = Experiment(
    name="claim_nsp_pairs", title="Claim (e): NSP pretraining suits sentence-pair similarity better",
    reading="source: a model pretrained with NSP does better on sentence-pair similarity than one pretrained "
            "with SOP", columns=("mlm", "nsp", "sop"), rows=rows,
    finetune=("verse_paraphrase_near", "wordnet_wic"), headline="verse_paraphrase_near", reference="SOP",
    checks=(
        Check("NSP pretraining beats SOP on paraphrase with topic-matched negatives", "ft:verse_paraphrase_near",
              "NSP", "SOP", "higher"),
        Check("NSP pretraining beats SOP on word-sense pairs", "ft:wordnet_wic", "NSP", "SOP", "higher"),
    ))
get_config = config_getter("claim_nsp_pairs")
