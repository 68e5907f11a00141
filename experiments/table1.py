"""Table 1: BERT and ALBERT model configurations (ALBERT-base ... xxlarge, BERT base/large).

Run:
  albert-jax sweep table1 --scale cpu --runs runs      # sizes (params) and our intrinsic accuracies
  albert-jax table table1 --scale cpu --runs runs

At the cpu scale every width is H/8 (and E=128 -> 16, heads A/4), depth kept, 500 steps: xxlarge's row (H=512,
I=2048, 12 layers) is the slowest.' Table 2 (experiments/table2.py) fine-tunes the same models.
"""
from albert_jax.ablations.registry import SHORT_CPU, Experiment, Row, sized
from albert_jax.ablations.sweep import config_getter

# name -> H, L, E, sharing, heads, Table 1 params, Table 2 (SQuAD1.1, SQuAD2.0, MNLI, SST-2, RACE, Avg, Speedup)
MODELS = {
    "BERT base": (768, 12, 768, "none", 12, "108M", ("90.4/83.2", "80.4/77.6", 84.5, 92.8, 68.2, 82.3, "4.7x")),
    "BERT large": (1024, 24, 1024, "none", 16, "334M", ("92.2/85.5", "85.0/82.2", 86.6, 93.0, 73.9, 85.2, "1.0")),
    "ALBERT base": (768, 12, 128, "all", 12, "12M", ("89.3/82.3", "80.0/77.1", 81.6, 90.3, 64.0, 80.1, "5.6x")),
    "ALBERT large": (1024, 24, 128, "all", 16, "18M", ("90.6/83.9", "82.3/79.4", 83.5, 91.7, 68.5, 82.4, "1.7x")),
    "ALBERT xlarge": (2048, 24, 128, "all", 16, "60M", ("92.5/86.1", "86.1/83.1", 86.4, 92.4, 74.8, 85.5, "0.6x")),
    "ALBERT xxlarge": (4096, 12, 128, "all", 64, "235M", ("94.1/88.3", "88.1/85.1", 88.0, 95.2, 82.3, 88.7, "0.3x")),
}


def rows(scale):
    return [Row(name, sized(scale, h, layers, e, sharing, a), {"params": params})
            for name, (h, layers, e, sharing, a, params, _) in MODELS.items()]


EXPERIMENT = Experiment(
    name="table1", title="Table 1: BERT and ALBERT model configurations",
    reading="ALBERT-large has about 18x fewer parameters than BERT-large (18M against 334M)",
    columns=("params", "mlm", "sop"), rows=rows, finetune=(), headline="eval/mlm_accuracy", settings=SHORT_CPU)
get_config = config_getter("table1")
