"""The config schema is declared once (albert_jax/configs/schema.py) and everything that knows a field reads it:
the experiment files build their sections from it, the validator checks against it, the override parser takes its
types, a resume takes its roles, and a sweep's fingerprint leaves out its speed-only fields."""
from __future__ import annotations

import pytest

from albert_jax.configs import overrides, schema
from albert_jax.configs.loader import load_config, load_module
from albert_jax.configs.scales import SCALES
from albert_jax.runs.validate import validate
from albert_jax.training import workdir

PRETRAIN = [f"experiments/pretrain.py:scale={s}{x}" for s in SCALES for x in ("", ",lang=zh", ",task=nsp")]
FINETUNE = [f"experiments/finetune.py:scale={s},task={t}{x}" for s in SCALES for t in ("rt_sentiment", "pd_pos")
            for x in ("", ",init=runs/x")]


def _written(spec):
    """The config as the experiment file writes it, before the loader fills anything in."""
    path, _, arg = spec.partition(":")
    return load_module(path).get_config(arg)


def _sections(config, declared):
    for name, fields in declared.items():
        node = config if name == "" else config[name]
        yield name, fields, node


@pytest.mark.parametrize("spec", PRETRAIN)
def test_a_pretraining_config_holds_exactly_the_declared_fields_with_their_types(spec):
    """The experiment file writes the written fields; the loader fills in the others (train.weight_decay)."""
    c, raw = load_config(spec), _written(spec)
    for name, fields, node in _sections(c, schema.PRETRAIN):
        written = {k for k, f in fields.items() if f.written}
        assert set(raw[name].keys()) == written, name
        assert set(node.keys()) == set(fields), name
        for k in fields:
            assert overrides._KINDS[fields[k].kind] is type(node[k]), f"{name}.{k}"
    assert set(c.keys()) == set(schema.DESCRIPTIVE) | {"model"} | set(schema.PRETRAIN)


@pytest.mark.parametrize("spec", FINETUNE + ["experiments/distill.py:scale=smoke"])
def test_a_finetuning_config_holds_exactly_the_declared_fields_with_their_types(spec):
    c = load_config(spec)
    declared = {**schema.FINETUNE, **({"distill": schema.DISTILL} if "distill" in spec else {})}
    for name, fields, node in _sections(c, declared):
        keys = set(node.keys()) - ({"model"} | set(schema.DESCRIPTIVE) | set(declared) if name == "" else set())
        assert keys == set(fields), name
        for k in fields:
            assert overrides._KINDS[fields[k].kind] is type(node[k]), f"{name}.{k}"


def test_defaults_come_from_the_declaration_and_a_section_refuses_what_it_does_not_declare():
    c = load_config("experiments/pretrain.py:scale=cpu")
    for name in ("mesh", "distributed"):
        assert dict(c[name]) == {k: f.default for k, f in schema.PRETRAIN[name].items()}
    assert c.data.masked_lm_prob == schema.PRETRAIN_DATA["masked_lm_prob"].default == 0.15
    assert c.train.seed == 0 and c.train.weight_decay == schema.WEIGHT_DECAY  # filled in by the loader
    assert "weight_decay" not in _written("experiments/pretrain.py:scale=cpu").train  # never written for pretraining
    with pytest.raises(TypeError, match="batch_size"):
        schema.section(schema.PRETRAIN_TRAIN)  # no default: the experiment gives it
    with pytest.raises(TypeError, match="no field 'bach_size'"):
        schema.section(schema.MESH, bach_size=3)


def test_the_override_parser_takes_the_declared_type_not_the_current_value():
    c = load_config("experiments/pretrain.py:scale=smoke")
    c.train.learning_rate = 1  # a config file that wrote an int into a float field
    overrides.set_field(c, "train.learning_rate", "0.5")
    assert c.train.learning_rate == 0.5
    c.train.peak_flops = 0
    overrides.set_field(c, "train.peak_flops", "1e12")
    assert c.train.peak_flops == 1e12
    with pytest.raises(overrides.OverrideError, match=r"train.log_every='2.5': expected a value of type int"):
        overrides.set_field(c, "train.log_every", "2.5")


def test_a_resume_and_a_sweep_read_the_declared_roles():
    for key, f in schema.FIELDS.items():
        expected = {"identity": "identity", "schedule": "schedule"}.get(f.role, "free")
        assert workdir.kind_of(f"experiment.{key}") == expected, key
    assert workdir.kind_of("experiment.model.remat_policy") == "free"
    assert workdir.kind_of("experiment.model.hidden_size") == "identity"
    assert set(workdir.SCHEDULE) == {f"experiment.train.{k}" for k in ("batch_size", "num_train_steps",
                                     "learning_rate", "warmup_steps", "grad_accum_steps", "weight_decay",
                                     "num_epochs", "early_stopping_patience")}
    assert schema.SPEED_ONLY == {"model": ("remat_policy", "attention_impl"), "data": ("buckets",)}
    # a run recorded before attention_impl existed resumes: the field is speed only
    assert workdir.kind_of("model.attention_impl") != "identity"
    assert workdir.kind_of("experiment.model.attention_impl") == "free"
    # an added field: a record without it reads its default, and a sweep leaves it out at that default
    assert workdir.ADDED_DEFAULTS["experiment.data.zh_masking"] == "char"
    assert "data.packing" in schema.ADDED_DEFAULTS and "data.packing" not in schema.FINGERPRINT_OMITS_AT_DEFAULT


def test_a_finetune_resume_may_not_change_its_head_or_depth(tmp_path):
    """head and depth change the model a checkpoint belongs to; a record from before they existed reads their
    defaults, so it still resumes when they are left at them."""
    older = {"experiment": {"task": "rt_sentiment"}}
    new = {"experiment": {"task": "rt_sentiment", "head": "default", "depth": 0}}
    assert workdir.reconcile(str(tmp_path), older, new, allow_changed_schedule=False, at_step=4)[1] == {}
    for field, value in (("head", "pabee"), ("depth", 8)):
        changed = {"experiment": {**new["experiment"], field: value}}
        with pytest.raises(workdir.WorkdirError, match=rf"another model.*experiment.{field}: .* -> \"?{value}"):
            workdir.reconcile(str(tmp_path), new, changed, allow_changed_schedule=True, at_step=4)


def test_a_shared_key_means_one_thing():
    """train.* and data.max_seq_length appear in both drivers' sections: the schema refuses two meanings."""
    for key in ("train.batch_size", "train.weight_decay", "data.max_seq_length"):
        kinds = {(f.kind, f.role) for k, f in schema._walk() if k == key}
        assert len(kinds) == 1, key


def test_the_validator_checks_against_the_declaration(tmp_path):
    c = load_config("experiments/pretrain.py:scale=smoke")
    del c.data.zh_masking  # added since the first runs: an older config lacks it, and that is fine
    validate(c, "pretrain", str(tmp_path / "w"))
    del c.train.keep_checkpoints
    with pytest.raises(ValueError, match="train.keep_checkpoints is missing"):
        validate(c, "pretrain", str(tmp_path / "w"))
    c = load_config("experiments/pretrain.py:scale=smoke")
    c.data.ngram = 0
    with pytest.raises(ValueError, match=r"data.ngram=0: must be an integer >= 1"):
        validate(c, "pretrain", str(tmp_path / "w"))


def test_config_show_lists_every_field_with_its_declaration_value_and_description(capsys):
    """`albert-jax config show SPEC` prints, per field, what the schema declares (type, default, allowed values,
    role, a description) beside this config's value."""
    import json

    from albert_jax.main import main

    assert main(["config", "show", "experiments/finetune.py:task=rt_sentiment", "--set", "train.num_epochs=2",
                 "--json"]) == 0
    rows = {r["key"]: r for r in json.loads(capsys.readouterr().out)}
    declared = {**schema.DESCRIPTIVE, **schema.FINETUNE_TOP,
                **{f"{s}.{k}": f for s, fields in schema.FINETUNE.items() if s for k, f in fields.items()}}
    assert set(declared) <= set(rows) and "model.sharing" in rows
    assert all(r["description"] for r in rows.values())
    for key, f in declared.items():
        assert (rows[key]["type"], rows[key]["allowed"], rows[key]["role"]) == (f.kind, f.allowed, f.role), key
    assert rows["train.num_epochs"]["value"] == 2.0 and rows["train.num_epochs"]["default"] == 0.0
    assert rows["train.batch_size"]["default"] == "(set by the experiment)" and rows["train.batch_size"]["value"] == 16
    assert rows["model.sharing"]["allowed"] == "one of all, attention, ffn, none"
    assert main(["config", "show", "experiments/pretrain.py:scale=smoke"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert ('train.eval_every = 4  [int; default (set by the experiment); an integer >= 1 (steps between '
            'evaluations); free]  steps between evaluations (pretraining: held-out MLM/SOP/NSP; fine-tuning: dev)'
            ) in lines
    assert not any(line.startswith("train.num_epochs") for line in lines)  # a fine-tuning field
    assert set(schema.DESCRIPTIONS) >= set(schema.FIELDS)  # every declared field has its line


def test_complete_fills_in_every_declared_default_once_and_keeps_what_is_there():
    """A config recorded before fields existed, or one built in Python, reads as one written today: every declared
    field it lacks at its default, per kind (a pretraining config gets no fine-tuning field); what it holds, and
    the fields without a default, are left alone."""
    old = {"data": {"corpus": "x", "zh_masking": "gold"}, "train": {"batch_size": 8}, "mesh": {}}
    assert schema.kind_of(old) == "pretrain"
    assert schema.complete(old) is old
    assert old["data"]["zh_masking"] == "gold" and old["data"]["tokenizer_kind"] == "spm"
    assert old["data"]["packing"] is False and old["data"]["instances"] == ""
    assert old["train"]["weight_decay"] == schema.WEIGHT_DECAY and old["train"]["allow_changed_schedule"] is False
    assert "num_epochs" not in old["train"] and "vocab_size" not in old["data"]  # not pretraining's; no default
    assert old["mesh"] == {"data": -1, "fsdp": 1, "tensor": 1} and "distributed" not in old  # no section is made
    ft = {"task": "rt_sentiment", "train": {}, "data": {}, "distill": {"alpha": 0.9}}
    assert schema.kind_of(ft) == "distill"
    schema.complete(ft)
    assert ft["head"] == "default" and ft["depth"] == 0 and ft["train"]["num_epochs"] == 0.0
    assert ft["data"]["train_examples"] == 0 and ft["distill"] == {"teacher": "", "temperature": 2.0, "alpha": 0.9,
                                                                  "hidden_weight": 0.0}
    # the loader fills in, so every reader writes d.x; completing again changes nothing
    c = load_config("experiments/pretrain.py:scale=smoke")
    before = c.to_json()
    assert schema.complete(c).to_json() == before
    # a field the experiment files never write is left out of a fingerprint at its default, per kind
    assert schema.fingerprint_omits("pretrain")["train.weight_decay"] == schema.WEIGHT_DECAY
    assert "train.weight_decay" not in schema.fingerprint_omits("finetune")
