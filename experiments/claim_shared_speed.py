"""Claim (f) of our sources: all-shared trains slower than not-shared at equal FLOPs.

Run:
  albert-jax sweep claim_shared_speed --scale cpu --runs runs
  albert-jax table claim_shared_speed --scale cpu --runs runs

The two models do the same FLOPs per token; the table reports the median step time of each run (same machine,
same schedule). Peak memory per sharing mode is measured by the benchmarks (benchmarks/, docs/benchmarks.md).
"""
from albert_jax.ablations.registry import Experiment, Row, base_fields
from albert_jax.ablations.sweep import config_getter

LABEL = {"all": "all-shared", "attention": "shared-attention", "ffn": "shared-FFN", "none": "not-shared"}


def rows(scale):
    return [Row(f"E=128 {LABEL[s]}", base_fields(scale, 128, s)) for s in ("all", "none")]


EXPERIMENT = Experiment(
    name="claim_shared_speed", title="Claim (f): all-shared trains slower than not-shared at equal FLOPs",
    reading="source: a 12-layer all-shared model trains ~15% slower than an unshared one of the same FLOPs",
    columns=("params", "step_time"), rows=rows, finetune=(), headline="eval/mlm_accuracy")
get_config = config_getter("claim_shared_speed")
