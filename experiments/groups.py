"""Groups: num_hidden_groups G x inner_group_num (the paper's Sec. 4.5 remark; the official code's two knobs).

Run:
  albert-jax sweep groups --scale cpu --runs runs
  albert-jax table groups --scale cpu --runs runs

Row names are the same at every scale (L=12 at the paper scale, 4 at cpu and smoke). The paper: splitting the L
layers into N groups of size M, each group sharing its parameters, "smaller M performs better but grows the
parameter count a lot"; it prints no table, so the paper columns are empty.
"""
from albert_jax.ablations.registry import Experiment, Row, base_fields
from albert_jax.ablations.sweep import config_getter


def rows(scale):
    layers = 12 if scale == "paper" else 4
    out = []
    for inner in (1, 2):
        for g in (1, 2, 4):
            out.append(Row(f"G={g} inner={inner}", base_fields(scale, 128, "all", num_hidden_layers=layers,
                                                                num_hidden_groups=g, inner_group_num=inner)))
    return out


EXPERIMENT = Experiment(
    name="groups", title="Groups: hidden groups x inner blocks (ALBERT-base, E=128)",
    reading="smaller groups (more parameter sets) perform better at a large parameter cost; inner blocks add "
            "parameters and compute per layer",
    columns=("params",), rows=rows)
get_config = config_getter("groups")
