"""Table 2: BERT against ALBERT (the models of Table 1), fine-tuned, and their training speed.

Run:
  albert-jax sweep table2 --scale cpu --runs runs
  albert-jax table table2 --scale cpu --runs runs

Predicted on the paper's hardware (a cost model from the compiled programs, not a measurement; docs/accelerators.md):
  albert-jax sweep table2 --scale paper --runs runs --plan tpu:v3:16x16

Speedup (ours): BERT-large's median step time over the row's, as the paper's "training data throughput relative
to BERT-large" (the same machine for every row; at the cpu scale widths are H/8, see experiments/table1.py).
"""
from albert_jax.ablations.registry import SHORT_CPU, Experiment, Row, sibling, sized
from albert_jax.ablations.sweep import config_getter

MODELS = sibling(__file__, "table1").MODELS  # the architectures and Table 2's printed values live there
COLS = ("squad11", "squad20", "mnli", "sst2", "race", "avg", "speedup")


def rows(scale):
    return [Row(name, sized(scale, h, layers, e, sharing, a), {"params": params, **dict(zip(COLS, t2))})
            for name, (h, layers, e, sharing, a, params, t2) in MODELS.items()]


EXPERIMENT = Experiment(
    name="table2", title="Table 2: BERT against ALBERT, downstream and training speed",
    reading="ALBERT-xxlarge beats BERT-large with 70% of its parameters; ALBERT-large trains about 1.7x faster "
            "than BERT-large and ALBERT-xxlarge about 3x slower",
    columns=("params",) + COLS, rows=rows, settings=SHORT_CPU, speed_reference="BERT large")
get_config = config_getter("table2")
