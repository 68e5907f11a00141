"""Claim (a) of our sources: sharing the shallow layers hurts most; sharing the deep ones barely matters.

Run:
  albert-jax sweep claim_layers --scale cpu --runs runs
  albert-jax table claim_layers --scale cpu --runs runs

One parameter set for a span of layers and every other layer its own (`model.sharing_map`, still one scan):
layers 1-3 against layers 9-12 of 12 at the paper scale; at the cpu scale (6 layers) layers 1-2 against 5-6.
Not-shared and all-shared bracket them. HF cannot express a sharing map: these rows export with `--to params`.
"""
from albert_jax.config import share_layers
from albert_jax.experiments.registry import Experiment, Row, base_fields, config_getter


def rows(scale):
    n = 12 if scale == "paper" else 6
    shallow, deep = ((0, 2), (8, 11)) if scale == "paper" else ((0, 1), (4, 5))
    return [Row("not-shared", base_fields(scale, 128, "none", num_hidden_layers=n)),
            Row("share the shallow layers", base_fields(scale, 128, "all", num_hidden_layers=n,
                                                        sharing_map=share_layers(n, shallow))),
            Row("share the deep layers", base_fields(scale, 128, "all", num_hidden_layers=n,
                                                     sharing_map=share_layers(n, deep))),
            Row("all-shared", base_fields(scale, 128, "all", num_hidden_layers=n))]


EXPERIMENT = Experiment(
    name="claim_layers", title="Claim (a): sharing shallow layers hurts most, sharing deep ones barely matters",
    reading="source: sharing layers 1-3 costs the most quality while sharing layers 9-12 costs almost none",
    columns=("params",), rows=rows)
get_config = config_getter("claim_layers")
