"""Table 11 (appendix A.1): depth 1...48 of the ALBERT-large config, each warm-started from the previous depth.

Run:
  albert-jax sweep table11 --scale cpu --runs runs
  albert-jax table table11 --scale cpu --runs runs

As the paper, a net of 3 or more layers starts from the checkpoint of the previous depth (train.init_mode=deeper:
same shared layer, applied more times). At the cpu scale H=128 (H/8) and the schedule is 500 steps per depth.
"""
from albert_jax.ablations.registry import DOWNSTREAM, SHORT_CPU, Experiment, Row, sized
from albert_jax.ablations.sweep import config_getter

DEPTH = {  # layers -> params, SQuAD1.1, SQuAD2.0, MNLI, SST-2, RACE, Avg (albert.md 1.13)
    1: ("18M", "31.1/22.9", "50.1/50.1", 66.4, 80.8, 40.1, 52.9),
    3: ("18M", "79.8/69.7", "64.4/61.7", 77.7, 86.7, 54.0, 71.2),
    6: ("18M", "86.4/78.4", "73.8/71.1", 81.2, 88.9, 60.9, 77.2),
    12: ("18M", "89.8/83.3", "80.7/77.9", 83.3, 91.7, 66.7, 81.5),
    24: ("18M", "90.3/83.3", "81.8/79.0", 83.3, 91.5, 68.7, 82.1),
    48: ("18M", "90.0/83.1", "81.8/78.9", 83.4, 91.9, 66.9, 81.8),
}


def depth_rows(scale):
    depths = list(DEPTH)
    return [Row(f"L={n}", sized(scale, 1024, n, 128, "all", 16), dict(zip(("params",) + DOWNSTREAM, DEPTH[n])),
                warm_start=f"L={depths[i - 1]}" if n >= 3 else "")
            for i, n in enumerate(depths)]


EXPERIMENT = Experiment(
    name="table11", title="Table 11: number of layers (ALBERT-large config)",
    reading="depth helps up to 12-24 layers and saturates (48 layers is no better than 24)",
    columns=("params",) + DOWNSTREAM, rows=depth_rows, settings=SHORT_CPU)
get_config = config_getter("table11")
