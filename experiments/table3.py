"""Table 3: the embedding size E, all-shared against not-shared (ALBERT-base).

Run:
  albert-jax sweep table3 --scale cpu --runs runs      # every row: pretrain, intrinsic eval, fine-tune
  albert-jax table table3 --scale cpu --runs runs      # the paper's table with our numbers beside it
  albert-jax pretrain --config experiments/table3.py:row=all-shared-e-128,scale=cpu --workdir W   # one row

At the cpu scale E keeps roughly its ratio to H (H=128): 64 -> 8, 128 -> 16, 256 -> 32, 768 (=H) -> 128.
"""
from albert_jax.ablations.readings import Check
from albert_jax.ablations.registry import DOWNSTREAM, Experiment, Row, base_fields
from albert_jax.ablations.sweep import config_getter

PAPER = {  # sharing, E -> params, SQuAD1.1, SQuAD2.0, MNLI, SST-2, RACE, Avg (albert.md 1.5)
    ("none", 64): ("87M", "89.9/82.9", "80.1/77.8", 82.9, 91.5, 66.7, 81.3),
    ("none", 128): ("89M", "89.9/82.8", "80.3/77.3", 83.7, 91.5, 67.9, 81.7),
    ("none", 256): ("93M", "90.2/83.2", "80.3/77.4", 84.1, 91.9, 67.3, 81.8),
    ("none", 768): ("108M", "90.4/83.2", "80.4/77.6", 84.5, 92.8, 68.2, 82.3),
    ("all", 64): ("10M", "88.7/81.4", "77.5/74.8", 80.8, 89.4, 63.5, 79.0),
    ("all", 128): ("12M", "89.3/82.3", "80.0/77.1", 81.6, 90.3, 64.0, 80.1),
    ("all", 256): ("16M", "88.8/81.5", "79.1/76.3", 81.5, 90.3, 63.4, 79.6),
    ("all", 768): ("31M", "88.6/81.5", "79.2/76.6", 82.0, 90.6, 63.3, 79.8),
}
LABEL = {"none": "not-shared", "all": "all-shared"}


def rows(scale):
    return [Row(f"{LABEL[sharing]} E={e}", base_fields(scale, e, sharing), dict(zip(("params",) + DOWNSTREAM, values)))
            for (sharing, e), values in PAPER.items()]


EXPERIMENT = Experiment(
    name="table3", title="Table 3: embedding size E (ALBERT-base)",
    reading="without sharing a larger E helps a little; with all-shared parameters E=128 is best",
    columns=("params",) + DOWNSTREAM, rows=rows, reference="all-shared E=128",
    checks=(
        Check("not shared, the largest E is better than the smallest", "ft:rt_sentiment", "not-shared E=768",
              "not-shared E=64", "higher"),
        Check("all-shared, E=128 beats E=768", "ft:rt_sentiment", "all-shared E=128", "all-shared E=768", "higher"),
        Check("all-shared, E=128 beats E=64", "ft:rt_sentiment", "all-shared E=128", "all-shared E=64", "higher"),
        Check("without sharing, E=768 beats E=128 on MLM", "eval/mlm_accuracy", "not-shared E=768",
              "not-shared E=128", "higher"),
    ))
get_config = config_getter("table3")
