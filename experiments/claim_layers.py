"""Claim (a) of our sources: sharing the shallow layers hurts most; sharing the deep ones barely matters.

Run:
  albert-jax sweep claim_layers --scale cpu --runs runs
  albert-jax table claim_layers --scale cpu --runs runs

One parameter set for a span of layers and every other layer its own (`model.sharing_map`, still one scan):
layers 1-3 against layers 9-12 of 12 at the paper scale (E=128, ALBERT-base). The smoke and cpu scales keep
their own 4-layer encoder and share layers 1-2 against layers 3-4, with E equal to the hidden size: at those
scales E=128 shrinks to 16, whose bottleneck keeps SOP at chance in every sharing mode (docs/reproduction.md)
and would hide what sharing does. So the brackets (not-shared, all-shared) are Table 4's E=768 rows, and a
sweep under the same --runs links them instead of training them again. HF cannot express a sharing map:
these rows export with `--to params`.
"""
from albert_jax.ablations.readings import Check
from albert_jax.ablations.registry import Experiment, Row, base_fields
from albert_jax.ablations.sweep import config_getter
from albert_jax.config import share_layers


def rows(scale):
    e = 128 if scale == "paper" else 768
    n = 12 if scale == "paper" else 4
    shallow, deep = ((0, 2), (8, 11)) if scale == "paper" else ((0, 1), (2, 3))
    return [Row("not-shared", base_fields(scale, e, "none", num_hidden_layers=n)),
            Row("share the shallow layers", base_fields(scale, e, "all", num_hidden_layers=n,
                                                        sharing_map=share_layers(n, shallow))),
            Row("share the deep layers", base_fields(scale, e, "all", num_hidden_layers=n,
                                                     sharing_map=share_layers(n, deep))),
            Row("all-shared", base_fields(scale, e, "all", num_hidden_layers=n))]


EXPERIMENT = Experiment(
    name="claim_layers", title="Claim (a): sharing shallow layers hurts most, sharing deep ones barely matters",
    reading="source: sharing layers 1-3 costs the most quality while sharing layers 9-12 costs almost none",
    columns=("params",), rows=rows,
    checks=(
        Check("sharing the deep layers costs less than sharing the shallow ones", "ft:rt_sentiment",
              "share the deep layers", "share the shallow layers", "higher"),
        Check("sharing the deep layers costs less than sharing the shallow ones (held-out MLM, ours)",
              "eval/mlm_accuracy", "share the deep layers", "share the shallow layers", "higher"),
    ))
get_config = config_getter("claim_layers")
