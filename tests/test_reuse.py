"""Programs built once per process (training/reuse.py): a run whose task, model, optimizer settings and mesh equal
an earlier run's takes that run's traced and compiled programs, and trains exactly as it would with its own."""
import json

import numpy as np
import pytest

from albert_jax.config import preset
from albert_jax.configs.loader import load_config
from albert_jax.configs.overrides import apply_overrides
from albert_jax.runs import finetune as ft
from albert_jax.tasks.base import TaskWrapper
from albert_jax.tasks.pretraining.task import PretrainingTask
from albert_jax.tasks.registry import make_task
from albert_jax.training import examples, program, reuse
from albert_jax.training import state as st

CFG = preset("tiny", num_hidden_layers=2)


def test_the_fingerprint_tells_apart_what_the_programs_are_traced_from():
    same = reuse.fingerprint(PretrainingTask("sop"), CFG)
    assert same is not None and same == reuse.fingerprint(PretrainingTask("sop"), preset("tiny", num_hidden_layers=2))
    assert reuse.fingerprint(PretrainingTask("nsp"), CFG) != same  # another loss
    assert reuse.fingerprint(PretrainingTask("sop"), CFG.replace(embedding_size=32)) != same  # another model
    assert reuse.fingerprint(make_task("rt_sentiment"), CFG) != reuse.fingerprint(make_task("hedge"), CFG)
    wrapped = TaskWrapper(make_task("rt_sentiment"))
    assert reuse.fingerprint(wrapped, CFG) not in (None, reuse.fingerprint(make_task("rt_sentiment"), CFG))
    wrapped.teacher = np.zeros(3)  # a task holding arrays (a distillation's teacher) is never shared
    assert reuse.fingerprint(wrapped, CFG) is None


def test_kept_values_are_the_last_few_by_key():
    kept, made = reuse.Kept(2), []
    make = lambda v: lambda: made.append(v) or v  # noqa: E731
    assert [kept.get("a", make(1)), kept.get("a", make(2)), kept.get(None, make(3)), kept.get(None, make(4))] == \
        [1, 1, 3, 4]
    kept.get("b", make(5))
    kept.get("c", make(6))  # "a" was the least recently used: gone
    assert kept.get("a", make(7)) == 7 and made == [1, 3, 4, 5, 6, 7]


def _config(pretrained, *sets):
    c = load_config(f"experiments/finetune.py:task=rt_sentiment,init={pretrained},scale=smoke")
    apply_overrides(c, ["train.num_train_steps=3", "train.eval_every=3", "train.checkpoint_every=3", "data.limit=32",
                        *sets])
    return c


def _outcome(wd):
    record = json.loads((wd / "results.json").read_text())["seeds"][0]
    seed_dir = wd / f"seed-{record['seed']}"
    losses = [r["loss"] for r in map(json.loads, open(seed_dir / "metrics.jsonl")) if "loss" in r]
    kept = examples.load_examples(seed_dir / examples.BEST_EXAMPLES_FILE)
    return record["dev"], losses, {k: {f: np.asarray(v).tolist() for f, v in d.items()} for k, d in kept.items()}


def test_a_second_seed_takes_the_first_ones_programs_and_trains_as_if_built_afresh(tiny_pretrained, tmp_path,
                                                                                   monkeypatch):
    built = []
    real = program._build
    monkeypatch.setattr(program, "_build", lambda *a: built.append(a) or real(*a))
    for cache in (program._KEPT, st._FRESH, st._ABSTRACT):
        cache.clear()
    ft.finetune(_config(tiny_pretrained), str(tmp_path / "seed0"))
    ft.finetune(_config(tiny_pretrained, "train.seed=1"), str(tmp_path / "seed1"))
    assert len(built) == 1  # the second run's program was the first's
    ft.finetune(_config(tiny_pretrained, "train.learning_rate=3e-5"), str(tmp_path / "other-rate"))
    assert len(built) == 2  # another schedule: another program
    for cache in (program._KEPT, st._FRESH, st._ABSTRACT):
        cache.clear()
    ft.finetune(_config(tiny_pretrained, "train.seed=1"), str(tmp_path / "seed1-afresh"))
    assert len(built) == 3
    reused, afresh = _outcome(tmp_path / "seed1"), _outcome(tmp_path / "seed1-afresh")
    assert reused == afresh  # the same losses, dev metrics and per-example predictions, bit for bit
    assert reused != _outcome(tmp_path / "seed0")  # (and the seed did change the run)


@pytest.mark.parametrize("sentence_task", ["sop", "nsp"])
def test_a_built_program_is_the_same_object_for_the_same_inputs(sentence_task):
    import jax

    from albert_jax import sharding as shd

    c = load_config("experiments/pretrain.py:scale=smoke")
    mesh = shd.make_mesh(devices=jax.devices()[:1])
    task = PretrainingTask(sentence_task)
    first = program.build(task, CFG, c.train, mesh)
    assert program.build(PretrainingTask(sentence_task), CFG, c.train, shd.make_mesh(devices=jax.devices()[:1])) \
        is first
    assert program.build(PretrainingTask(sentence_task), CFG, c.train, shd.make_mesh(devices=jax.devices()[:2])) \
        is not first  # another mesh


def test_the_finite_check_is_kept_per_structure_and_mesh_and_names_the_bad_leaves():
    import jax
    import jax.numpy as jnp

    from albert_jax import sharding as shd
    from albert_jax.training import checkpoints as ckpt

    ckpt._FINITE_FNS.clear()
    for k in range(3):  # three runs, each with its own (equal) mesh, as a sweep's stages make them
        mesh = shd.make_mesh(devices=jax.devices()[:2])
        put = lambda x: jax.device_put(x, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec()))  # noqa
        tree = {"a": put(jnp.ones(4)), "b": {"c": put(jnp.array([1.0, jnp.nan if k == 2 else 0.0]))}}
        assert ckpt.nonfinite_leaves(tree) == (["b/c"] if k == 2 else [])
    assert len(ckpt._FINITE_FNS) == 1
    big = jnp.finfo(jnp.float32).max  # finite, though their sum is not
    tree = {"big": jnp.full(4, big), "inf": jnp.array([0.0, jnp.inf]), "-inf": jnp.array([-jnp.inf, 1.0]),
            "nan": jnp.array([[jnp.nan]], jnp.bfloat16), "bf16": jnp.ones(3, jnp.bfloat16), "zero": jnp.zeros(0),
            "ints": jnp.arange(3)}  # not floating point: not checked
    assert ckpt.nonfinite_leaves(tree) == ["-inf", "inf", "nan"]  # the tree's own (sorted) order
