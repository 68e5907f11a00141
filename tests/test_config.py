"""AlbertConfig: validation messages, presets, JSON formats, overrides, FLOP counting."""
import json

import pytest

from albert_jax.config import AlbertConfig, ConfigError, PRESETS, load_json, parse_overrides, preset

BAD = [
    (dict(hidden_size=100, num_attention_heads=12), "hidden_size=100 is not divisible by num_attention_heads=12"),
    (dict(num_hidden_layers=12, num_hidden_groups=5), "num_hidden_layers=12 is not divisible by num_hidden_groups=5"),
    (dict(sharing="layers"), "sharing='layers': allowed values are all, attention, ffn, none"),
    (dict(hidden_act="swish"), "hidden_act='swish': allowed values are gelu_new, gelu, relu"),
    (dict(hidden_size=0), "hidden_size=0: must be a positive integer"),
    (dict(vocab_size=-3), "vocab_size=-3: must be a positive integer"),
    (dict(num_hidden_layers=2.5), "num_hidden_layers=2.5: must be a positive integer"),
    (dict(hidden_dropout_prob=1.0), r"hidden_dropout_prob=1.0: must be a probability in \[0, 1\)"),
    (dict(attention_probs_dropout_prob=-0.1), "attention_probs_dropout_prob=-0.1: must be a probability"),
    (dict(remat_policy="everything"), "remat_policy='everything': allowed values are none, full"),
    (dict(dtype="int8"), "dtype='int8': allowed values"),
    (dict(sharing="none", num_hidden_groups=2), "num_hidden_groups=2 with sharing='none'"),
    (dict(embedding_projection=False, embedding_size=128), "embedding_projection=False needs embedding_size"),
    (dict(initializer_range=0.0), "initializer_range=0.0: must be > 0"),
    (dict(layer_norm_eps=0), "layer_norm_eps=0: must be > 0"),
]


@pytest.mark.parametrize("fields,message", BAD, ids=[m[:30] for _, m in BAD])
def test_every_bad_value_names_the_field(fields, message):
    with pytest.raises(ConfigError, match=message):
        AlbertConfig(**fields)


def test_presets_follow_the_paper_and_released_configs():
    base = preset("albert-base")
    assert (base.embedding_size, base.hidden_size, base.num_hidden_layers, base.sharing) == (128, 768, 12, "all")
    assert preset("albert-base-v1").hidden_dropout_prob == 0.1 and preset("albert-base-v2").hidden_dropout_prob == 0
    assert preset("albert-xxlarge-v1").hidden_dropout_prob == 0  # xxlarge v1 had no dropout
    assert preset("albert-xxlarge").intermediate_size == 16384
    zh = preset("albert-base-zh")
    assert zh.hidden_act == "relu" and zh.vocab_size == 21128
    bert = preset("bert-large")
    assert bert.sharing == "none" and not bert.use_projection and bert.embedding_size == 1024
    for name in PRESETS:
        cfg = preset(name)
        assert cfg.hidden_size % cfg.num_attention_heads == 0
    with pytest.raises(ConfigError, match="unknown preset 'albert-huge'"):
        preset("albert-huge")


def test_official_json_round_trip_and_gelu_naming(tmp_path):
    cfg = preset("albert-large-v1")
    off = cfg.to_official_json()
    assert off["hidden_act"] == "gelu"  # the official name of the tanh approximation
    back = AlbertConfig.from_official_json(off)
    assert back.hidden_act == "gelu_new" and back.hidden_size == 1024 and back.hidden_dropout_prob == 0.1
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(off))
    assert load_json(str(path)).num_hidden_layers == 24
    with pytest.raises(ConfigError, match="exact"):
        cfg.replace(hidden_act="gelu").to_official_json()


def test_hf_json_round_trip_and_sharing_limits(tmp_path):
    cfg = preset("albert-base", num_hidden_groups=2, inner_group_num=2)
    hf = cfg.to_hf_json()
    assert hf["model_type"] == "albert" and hf["hidden_act"] == "gelu_new"
    back = AlbertConfig.from_hf_json(hf)
    assert (back.num_hidden_groups, back.inner_group_num) == (2, 2)
    none = preset("albert-base", sharing="none").to_hf_json()
    assert none["num_hidden_groups"] == 12  # 'none' is whole-layer sharing with one group per layer
    with pytest.raises(ConfigError, match="sharing='attention' cannot be written"):
        preset("albert-base", sharing="attention").to_hf_json()
    path = tmp_path / "config.json"
    path.write_text(json.dumps(hf))
    assert load_json(str(path)).num_hidden_groups == 2
    with pytest.raises(ConfigError, match="model_type='bert'"):
        AlbertConfig.from_hf_json({"model_type": "bert"})


def test_our_json_round_trip_and_unknown_fields(tmp_path):
    cfg = preset("albert-base", sharing="ffn", remat_policy="dots")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg.to_dict()))
    assert load_json(str(path)) == cfg
    with pytest.raises(ConfigError, match=r"unknown config field\(s\) \['hiden_size'\]"):
        AlbertConfig.from_dict({"hiden_size": 3})
    bad = tmp_path / "bad.json"
    bad.write_text('{\n "sharing": "all",\n oops\n}')
    with pytest.raises(ConfigError, match="bad.json: line 3"):
        load_json(str(bad))


def test_overrides_are_typed():
    assert parse_overrides("sharing=attention, embedding_size=768,hidden_dropout_prob=0.1,scan_layers=false") == {
        "sharing": "attention", "embedding_size": 768, "hidden_dropout_prob": 0.1, "scan_layers": False}
    assert parse_overrides("embedding_projection=none") == {"embedding_projection": None}
    with pytest.raises(ConfigError, match="embedding_size=.big.: expected a value of type int"):
        parse_overrides("embedding_size=big")
    with pytest.raises(ConfigError, match="override 'colour': unknown field"):
        parse_overrides("colour=red")
    with pytest.raises(ConfigError, match="expected key=value"):
        parse_overrides("sharing")


def test_flops_count_every_applied_layer():
    base = preset("albert-base")
    # reference/performance.md §0: 0.524 GFLOP/token at s=128 for the L=12/H=768/I=3072 encoder.
    encoder_only = 6 * 12 * (4 * 768**2 + 2 * 768 * 3072) + 12 * 12 * 128 * 768
    assert abs(encoder_only / 1e9 - 0.524) < 0.001
    assert base.flops_per_token(128) == pytest.approx(
        encoder_only + 6 * 128 * 768 + 0.15 * 6 * (768 * 128 + 128 * 30000))
    # Sharing saves parameters, not compute.
    assert base.replace(sharing="none").flops_per_token(512) == base.flops_per_token(512)
    assert base.replace(inner_group_num=2).flops_per_token(512) > 1.9 * base.flops_per_token(512) - 1e8
    large = preset("albert-large")
    assert abs(large.flops_per_token(512) / 1e9 - 1.967) < 0.001  # the table counts the MLM head too


def test_every_remat_policy_name_has_an_implementation():
    # config.py owns the names; the encoder maps each but "none" to what the backward pass keeps
    from albert_jax.config import REMAT_POLICIES
    from albert_jax.configs.loader import load_config
    from albert_jax.modeling.encoder import _SAVED

    assert set(REMAT_POLICIES) - {"none"} == set(_SAVED)
    # the paper scale scans under dots_no_ffn_in (configs/scales.py: no more memory than unrolled); smaller, none
    assert load_config("experiments/pretrain.py:scale=paper").model.remat_policy == "dots_no_ffn_in"
    assert load_config("experiments/pretrain.py:scale=cpu").model.remat_policy == "none"
