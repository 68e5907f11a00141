"""Experiment configs: variants parse, bad arguments and overrides are named, the model config they describe is
valid."""
from pathlib import Path

import pytest

from albert_jax.ablations import registry as R
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
    with pytest.raises(ValueError, match=r"unknown experiment argument\(s\) \['colour'\]"):
        load_config("experiments/pretrain.py:colour=red")
    with pytest.raises(ValueError, match="scale='huge'"):
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
    for exp in R.load_registry().values():
        for p in plan(exp, "smoke", Path("runs")):
            pre = [s for s in p.stages if s.kind == "pretrain"]
            if pre and not p.row.warm_start:
                d = pre[0].config().data
                if d.corpus in SMOKE_DOCS:
                    assert d.max_docs == SMOKE_DOCS[d.corpus], (exp.name, p.row.name, d.corpus, d.max_docs)
                    seen.add(d.corpus)
    assert seen == set(SMOKE_DOCS)
