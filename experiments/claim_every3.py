"""Claim (c) of our sources: sharing every 3 layers as the middle ground.

Run:
  albert-jax sweep claim_every3 --scale cpu --runs runs
  albert-jax table claim_every3 --scale cpu --runs runs

Groups of 3 consecutive layers share one set (num_hidden_groups = L/3), against not-shared and all-shared, at
L=12 (paper) or L=6 (cpu, smoke). The paper prints no numbers for it (Sec. 4.5 mentions groups in passing).
"""
from albert_jax.ablations.readings import Check
from albert_jax.ablations.registry import Experiment, Row, base_fields
from albert_jax.ablations.sweep import config_getter


def rows(scale):
    layers = 12 if scale == "paper" else 6
    return [Row("not-shared", base_fields(scale, 128, "none", num_hidden_layers=layers)),
            Row("share every 3 layers", base_fields(scale, 128, "all", num_hidden_layers=layers,
                                                    num_hidden_groups=layers // 3)),
            Row("all-shared", base_fields(scale, 128, "all", num_hidden_layers=layers))]


EXPERIMENT = Experiment(
    name="claim_every3", title="Claim (c): sharing every 3 layers as the middle ground",
    reading="source: groups of 3 layers recover most of not-shared's quality at a fraction of its parameters",
    columns=("params",), rows=rows, reference="all-shared",
    checks=(
        Check("sharing every 3 layers learns MLM better than sharing one set across all layers", "eval/mlm_accuracy",
              "share every 3 layers", "all-shared", "higher"),
        Check("sharing every 3 layers fine-tunes better than all-shared", "ft:rt_sentiment", "share every 3 layers",
              "all-shared", "higher"),
        Check("not-shared still learns MLM better than sharing every 3 layers (what 3x the parameters buys)",
              "eval/mlm_accuracy", "not-shared", "share every 3 layers", "higher"),
    ))
get_config = config_getter("claim_every3")
