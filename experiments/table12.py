"""Table 12 (appendix A.2): hidden size 1024...6144 of the 3-layer ALBERT-large config.

Run:
  albert-jax sweep table12 --scale cpu --runs runs
  albert-jax table table12 --scale cpu --runs runs

At the cpu scale every width is H/8 (128 ... 768, heads A/4) and the schedule is 500 steps.
"""
from albert_jax.ablations.registry import DOWNSTREAM, SHORT_CPU, Experiment, Row, sized
from albert_jax.ablations.sweep import config_getter

WIDTH = {  # hidden -> heads, params, SQuAD1.1, SQuAD2.0, MNLI, SST-2, RACE, Avg (albert.md 1.13)
    1024: (16, "18M", "79.8/69.7", "64.4/61.7", 77.7, 86.7, 54.0, 71.2),
    2048: (32, "60M", "83.3/74.1", "69.1/66.6", 79.7, 88.6, 58.2, 74.6),
    4096: (64, "225M", "85.0/76.4", "71.0/68.1", 80.3, 90.4, 60.4, 76.3),
    6144: (96, "499M", "84.7/75.8", "67.8/65.4", 78.1, 89.1, 56.0, 74.0),
}


def rows(scale):
    return [Row(f"H={h}", sized(scale, h, 3, 128, "all", a), dict(zip(("params",) + DOWNSTREAM, rest)))
            for h, (a, *rest) in WIDTH.items()]


EXPERIMENT = Experiment(
    name="table12", title="Table 12: hidden size (3-layer ALBERT-large config)",
    reading="width helps with diminishing returns and drops at 6144",
    columns=("params",) + DOWNSTREAM, rows=rows, settings=SHORT_CPU)
get_config = config_getter("table12")
