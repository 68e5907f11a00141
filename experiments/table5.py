"""Table 5: the inter-sentence loss: none, NSP or SOP (ALBERT-base, E=128, all-shared).

Run:
  albert-jax sweep table5 --scale cpu --runs runs
  albert-jax table table5 --scale cpu --runs runs

Every row's final held-out evaluation measures MLM, NSP and SOP accuracy whatever loss it trained with (the
paper's intrinsic columns): an NSP-trained model near chance on SOP is the paper's sharpest finding.
"""
from albert_jax.ablations.readings import Check
from albert_jax.ablations.registry import Experiment, Row, base_fields
from albert_jax.ablations.sweep import config_getter

COLS = ("mlm", "nsp", "sop", "squad11", "squad20", "mnli", "sst2", "race", "avg")
PAPER = {  # task -> MLM, NSP, SOP, SQuAD1.1, SQuAD2.0, MNLI, SST-2, RACE, Avg (albert.md 1.7)
    "none": (54.9, 52.4, 53.3, "88.6/81.5", "78.1/75.3", 81.5, 89.9, 61.7, 79.0),
    "nsp": (54.5, 90.5, 52.0, "88.4/81.5", "77.2/74.6", 81.6, 91.1, 62.3, 79.2),
    "sop": (54.0, 78.9, 86.5, "89.3/82.3", "80.0/77.1", 82.0, 90.3, 64.0, 80.1),
}
LABEL = {"none": "None", "nsp": "NSP", "sop": "SOP"}


def rows(scale):
    # The paper's E=128 (H=768) keeps its ratio to H as E=16 at H=128, where no row learns SOP at all: the SOP
    # row stayed at chance (49.0%) at the old cpu scale, and the recipe study's E=32 model was at chance for its
    # first 1,000 steps while E=H learnt SOP from step 500 (docs/reproduction.md). Below the paper scale this table
    # is about the inter-sentence loss, not E, so its rows use E=H.
    embedding = 128 if scale == "paper" else 768
    return [Row(LABEL[task], base_fields(scale, embedding, "all", task), dict(zip(COLS, values)))
            for task, values in PAPER.items()]


EXPERIMENT = Experiment(
    name="table5", title="Table 5: inter-sentence loss (ALBERT-base)",
    reading="an NSP-trained model is at chance on SOP (it learns topic shift only); an SOP-trained model solves "
            "NSP reasonably and SOP well, and fine-tunes about 1 Avg point better",
    columns=COLS, rows=rows, headline="eval/sop_accuracy", curve="eval/sop_accuracy", reference="NSP",
    checks=(
        Check("an SOP-trained model is better at SOP than an NSP-trained one (paper: 86.5 vs 52.0)",
              "eval/sop_accuracy", "SOP", "NSP", "higher", size=0.345),
        Check("an NSP-trained model is at chance on SOP: it learns topic shift, not order (paper: 52.0)",
              "eval/sop_accuracy", "NSP", "chance", "chance"),
        Check("an SOP-trained model solves NSP reasonably, above chance (paper: 78.9)", "eval/nsp_accuracy", "SOP",
              "chance", "higher", size=0.289),
        Check("NSP pretraining makes a model better at NSP than MLM alone (paper: 90.5 vs 52.4)",
              "eval/nsp_accuracy", "NSP", "None", "higher", size=0.381),
        Check("SOP pretraining fine-tunes better than NSP (paper: Avg 80.1 vs 79.2; SST-2 alone 90.3 vs 91.1)",
              "ft:rt_sentiment", "SOP", "NSP", "higher"),
    ))
get_config = config_getter("table5")
