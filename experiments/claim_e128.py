"""Claim (d) of our sources: E=128 costs under 1% of quality while cutting ~80% of the embedding.

Run:
  albert-jax sweep claim_e128 --scale cpu --runs runs
  albert-jax table claim_e128 --scale cpu --runs runs

Paper Table 3: all-shared Avg 80.1 at E=128 against 79.8 at E=768; not-shared 81.7 against 82.3. At the cpu
scale E=16 against E=H=128 (the same ratio of cut: 1 - 16/128 of the V x E table).
"""
from albert_jax.ablations.readings import Check
from albert_jax.ablations.registry import Experiment, Row, base_fields
from albert_jax.ablations.sweep import config_getter

LABEL = {"all": "all-shared", "attention": "shared-attention", "ffn": "shared-FFN", "none": "not-shared"}
T3 = {("all", 128): ("12M", 80.1, 90.3), ("all", 768): ("31M", 79.8, 90.6),
      ("none", 128): ("89M", 81.7, 91.5), ("none", 768): ("108M", 82.3, 92.8)}  # params, Avg, SST-2


def rows(scale):
    return [Row(f"{LABEL[s]} E={e}", base_fields(scale, e, s), dict(zip(("params", "avg", "sst2"), v)))
            for (s, e), v in T3.items()]


EXPERIMENT = Experiment(
    name="claim_e128", title="Claim (d): E=128 costs under 1% of quality, cuts ~80% of the embeddings",
    reading="source: factorising the embedding to E=128 costs under 1% while removing ~80% of the embedding "
            "parameters (paper Table 3: all-shared Avg 80.1 at E=128 against 79.8 at E=768)",
    columns=("params", "sst2", "avg"), rows=rows,
    # "Under 1%" is relative to the E=768 model's level, as the source means it (80.1 against 79.8 in the paper):
    # the E=128 row may be at most 1% of it below, and the interval must show that, not merely hold it.
    checks=tuple(Check(f"{LABEL[s]}, E=128 costs under 1% against E=768", "ft:rt_sentiment", f"{LABEL[s]} E=128",
                       f"{LABEL[s]} E=768", "at least", size=-0.01, relative=True) for s in ("all", "none")))
get_config = config_getter("claim_e128")
