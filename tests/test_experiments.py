"""Experiment configs: variants parse, bad arguments and overrides are named, the model config they describe is
valid."""
from pathlib import Path

import pytest

from albert_jax.ablations import registry
from albert_jax.ablations.sweep import plan
from albert_jax.config import model_from_section
from albert_jax.configs.loader import load_config
from albert_jax.configs.overrides import apply_override
from albert_jax.configs.scales import SMOKE_DOCS


def test_variants_select_model_and_task():
    c = load_config("experiments/pretrain.py:scale=smoke,embed=96,sharing=ffn,task=nsp")
    assert c.data.task == "nsp" and c.scale == "smoke"
    model = model_from_section(c.model, vocab_size=4000)
    assert (model.embedding_size, model.sharing, model.hidden_size) == (96, "ffn", 128)
    paper = load_config("experiments/pretrain.py:scale=paper")
    assert (paper.train.batch_size, paper.train.learning_rate, paper.train.warmup_steps,
            paper.train.num_train_steps, paper.data.max_seq_length) == (4096, 0.00176, 3125, 125_000, 512)
    assert model_from_section(paper.model, vocab_size=30000).param_count() == 11_683_584


def test_bad_arguments_and_overrides_are_named():
    with pytest.raises(ValueError, match=r"unknown experiment argument 'colour'; allowed: scale, lang, preset, "):
        load_config("experiments/pretrain.py:colour=red")
    with pytest.raises(ValueError, match="scale='huge': must be one of smoke, cpu, paper"):
        load_config("experiments/pretrain.py:scale=huge")
    with pytest.raises(FileNotFoundError, match="experiments/nope.py does not exist"):
        load_config("experiments/nope.py")
    c = load_config("experiments/pretrain.py")
    apply_override(c, "train.batch_size=64")
    assert c.train.batch_size == 64
    apply_override(c, "train.learning_rate=1")
    assert c.train.learning_rate == 1.0
    with pytest.raises(ValueError, match="no field 'batchsize'"):
        apply_override(c, "train.batchsize=3")
    with pytest.raises(ValueError, match="no section 'trian'"):
        apply_override(c, "trian.batch_size=3")
    with pytest.raises(ValueError, match="expected a value of type int"):
        apply_override(c, "train.batch_size='big'")


def test_smoke_and_cpu_scales_share_the_model_and_data_and_differ_in_schedule():
    smoke, cpu = load_config("experiments/pretrain.py:scale=smoke"), load_config("experiments/pretrain.py:scale=cpu")
    assert smoke.model.to_dict() == cpu.model.to_dict()
    differs = {k for k in cpu.data.to_dict() if smoke.data[k] != cpu.data[k]}
    assert differs == {"max_docs"} and (smoke.data.max_docs, cpu.data.max_docs) == (100, 0)  # cpu: the whole mix
    assert (smoke.train.num_train_steps, cpu.train.num_train_steps) == (4, 3000)
    assert cpu.train.eval_batches == 0 and cpu.train.num_train_steps // cpu.train.eval_every >= 8
    assert smoke.train.eval_every <= smoke.train.num_train_steps  # a smoke run still evaluates (the intrinsic row)


def test_every_experiments_smoke_rows_read_their_corpus_smoke_subset():
    """A row that switches the corpus (zh_masking's People's Daily) still reads that corpus's smoke subset: the
    English 100 documents leave People's Daily without a validation split, and its sweep stops."""
    seen = set()
    for exp in registry.load_registry().values():
        for p in plan(exp, "smoke", Path("runs")):
            pre = [s for s in p.stages if s.kind == "pretrain"]
            if pre and not p.row.warm_start:
                d = pre[0].config().data
                if d.corpus in SMOKE_DOCS:
                    assert d.max_docs == SMOKE_DOCS[d.corpus], (exp.name, p.row.name, d.corpus, d.max_docs)
                    seen.add(d.corpus)
    assert seen == set(SMOKE_DOCS)


# ------------------------------------------------------------------------------------------------ declared arguments
ARG_FILES = ("pretrain", "finetune", "distill", "table4")


@pytest.mark.parametrize("name", ARG_FILES)
def test_an_unknown_argument_is_one_line_listing_the_declared_ones(name):
    from albert_jax.configs.arguments import declared_args
    from albert_jax.configs.loader import find_config_file, load_module

    declared = declared_args(load_module(find_config_file(f"experiments/{name}.py")))
    allowed = ", ".join(a.name for a in declared)
    with pytest.raises(ValueError) as e:
        load_config(f"experiments/{name}.py:colour=red")
    assert str(e.value) == f"unknown experiment argument 'colour'; allowed: {allowed}"


@pytest.mark.parametrize("spec, message", [
    ("pretrain.py:lang=fr", "lang='fr': must be one of en, zh"),
    ("pretrain.py:task=mlm", "task='mlm': must be one of sop, nsp, none"),  # the schema's values for data.task
    ("pretrain.py:sharing=half", "sharing='half': must be one of all, attention, ffn, none"),  # AlbertConfig's
    ("pretrain.py:embed=wide", "embed='wide': expected a value of type int"),
    ("finetune.py:seeds=0", "seeds=0: must be an integer >= 1"),  # the schema's check of num_seeds
    ("finetune.py:head=tall", "head='tall': must be one of default, pabee"),
    ("distill.py:temperature=0", "temperature=0.0 (sets distill.temperature): must be a finite number > 0.0"),
    ("table4.py:scale=huge", "scale='huge': must be one of smoke, cpu, paper"),
])
def test_a_bad_value_is_one_line_from_the_declaration(spec, message):
    with pytest.raises(ValueError) as e:
        load_config(f"experiments/{spec}")
    assert str(e.value) == message


def test_parse_args_defaults_shorthands_and_patterns():
    from albert_jax.configs.arguments import Arg, Derived, parse_args

    declared = (Arg("scale", allowed=("a", "b"), default="a"),
                Arg("steps", int, default=Derived("2 at a, 5 at b", lambda v: {"a": 2, "b": 5}[v["scale"]])),
                Arg("seeds", typed_as="num_seeds", default=1),
                Arg("embed", sets="model.embedding_size"),
                Arg("model.<field>"))
    values, sets = parse_args("scale=b", declared)
    assert values == {"scale": "b", "steps": 5, "seeds": 1} and sets == {}
    values, sets = parse_args("steps=1e1,embed=32,model.sharing=ffn,seeds=3", declared)
    assert values == {"scale": "a", "steps": 10, "seeds": 3}
    assert sets == {"model.embedding_size": "32", "model.sharing": "ffn"}  # raw: typed where they are set
    with pytest.raises(ValueError, match="^unknown experiment argument 'model.'; allowed: scale, steps, seeds, embed, "
                       "model.<field>$"):
        parse_args("model.=1", declared)


@pytest.mark.parametrize("name", ARG_FILES)
def test_config_args_prints_every_declared_argument(capsys, name):
    from albert_jax.configs.arguments import declared_args
    from albert_jax.configs.loader import find_config_file, load_module
    from albert_jax.main import main

    assert main(["config", "args", f"experiments/{name}.py"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"experiments/{name}.py:<arguments>, a comma list of key=value:"
    declared = declared_args(load_module(find_config_file(f"experiments/{name}.py")))
    assert [line.split()[0].split("=")[0] for line in lines[1:]] == [a.name for a in declared]
    if name == "pretrain":
        assert any(line.split()[0] == "scale=smoke|cpu|paper" and line.endswith("default 'smoke'") for line in lines)
        assert any(line.split()[0] == "task=sop|nsp|none" and "default 'sop'" in line for line in lines)
    if name == "finetune":
        assert any(line.startswith("  seeds=<int>") and "default: 1 at smoke, 3 at cpu, 5 at paper" in line
                   for line in lines)
