"""Claim (e) of our sources: NSP pretraining suits sentence-pair similarity better than SOP.

Run:
  albert-jax sweep claim_nsp_pairs --scale cpu --runs runs
  albert-jax table claim_nsp_pairs --scale cpu --runs runs

The Table 5 models, fine-tuned on our two sentence-pair tasks (paraphrase: verse_paraphrase; same sense:
wordnet_wic) instead of SST-2.
"""
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
    finetune=("verse_paraphrase", "wordnet_wic"), headline="verse_paraphrase")
get_config = config_getter("claim_nsp_pairs")
