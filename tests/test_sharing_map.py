"""sharing_map: a layer -> parameter-set map for the shared parts, still one scan.

The map's models are checked against the layouts they generalise (sharing='none', 'all', num_hidden_groups) on
the same weights laid out accordingly, scan against unrolled, gradients against an unrolled reference whose
layers hold copies of the sets, and every tree walker (counts, LAMB, sharding, init tricks, HF) on the new axis.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from albert_jax import sharding as shd
from albert_jax.config import (
    AlbertConfig,
    ConfigError,
    format_sharing_map,
    model_from_section,
    parse_overrides,
    parse_sharing_map,
    preset,
    share_layers,
)
from albert_jax.configs.loader import load_config
from albert_jax.configs.overrides import apply_override
from albert_jax.interop import hf
from albert_jax.modeling import AlbertForPreTraining, AlbertModel
from albert_jax.modeling.init_tricks import InitError, init_from_group0, warm_start_deeper
from albert_jax.runs.validate import check_model_section

TINY = preset("tiny", num_hidden_layers=4)
B, S = 2, 10


def batch(seed=0):
    rng = np.random.default_rng(seed)
    ids = jnp.asarray(rng.integers(5, TINY.vocab_size, (B, S)), jnp.int32)
    mask = np.ones((B, S), np.int32)
    mask[1, 7:] = 0
    return ids, jnp.asarray(mask)


def init(cfg, model=AlbertModel):
    return nn.unbox(model(cfg).init(jax.random.PRNGKey(0), *batch())["params"])


def seq(cfg, params):
    return np.asarray(AlbertModel(cfg).apply({"params": params}, *batch())["sequence_output"])


def with_encoder(params, **parts):
    enc = {k: v for k, v in params["encoder"].items() if k not in ("shared", "layers")}
    return {**params, "encoder": {**enc, **{k: v for k, v in parts.items() if v}}}


def as_unshared(params, cfg):
    """The sharing='none' tree computing what a map model computes: layer i holds a copy of its set."""
    ids = jnp.asarray(cfg.layer_set_ids)
    layers = dict(params["encoder"].get("layers", {}))
    for part, tree in params["encoder"].get("shared", {}).items():
        layers[part] = jax.tree.map(lambda a: a[ids], tree)
    return with_encoder(params, layers=layers)


# ---------------------------------------------------------------------------------------------- syntax
def test_parse_format_and_share_layers():
    assert parse_sharing_map("0-7.8x4") == tuple(range(8)) + (8,) * 4
    assert parse_sharing_map("0,1,2,3,4,5,6,7,8,8,8,8") == parse_sharing_map("0-7.8x4")
    assert parse_sharing_map("0-2.0-2") == (0, 1, 2, 0, 1, 2)  # a set may serve non-contiguous layers
    assert parse_sharing_map(" 0x3 . 1 ") == (0, 0, 0, 1)
    assert share_layers(12, (8, 11)) == "0-7.8x4"  # the paper's layers 9-12 (1-based) share one set
    assert share_layers(12, (0, 2)) == "0x3.1-9"
    assert share_layers(6, (0, 1), (4, 5)) == "0x2.1-2.3x2"
    assert share_layers(4) == "0-3"
    # Every first-use-numbered layout round-trips through its compact spelling.
    rng = np.random.default_rng(0)
    for _ in range(200):
        raw = rng.integers(0, rng.integers(1, 6), rng.integers(1, 12))
        order: dict[int, int] = {}
        ids = tuple(order.setdefault(int(i), len(order)) for i in raw)
        text = format_sharing_map(ids)
        assert "," not in text and parse_sharing_map(text) == ids, (ids, text)
    assert format_sharing_map((0, 1, 2, 2, 2)) == "0-1.2x3"


BAD = [
    (dict(sharing_map="0-7.8x3", num_hidden_layers=12),
     r"sharing_map='0-7.8x3' lists 11 layers; num_hidden_layers=12 needs one set id per layer"),
    (dict(sharing_map="0-3", sharing="none"), r"sharing_map='0-3' with sharing='none': nothing is shared"),
    (dict(sharing_map="0x2.1x2", num_hidden_groups=2),
     r"sharing_map='0x2.1x2' with num_hidden_groups=2: the map replaces the i\*G//L group rule"),
    (dict(sharing_map="0.a.1.2"), r"sharing_map='0.a.1.2': item 'a' is not a set id; items joined by '\.'"),
    (dict(sharing_map="0..1.2"), r"item '' is not a set id"),
    (dict(sharing_map="1.0.2.3"), r"layer 0 uses set 1 before set 0 is used; number sets in order of first use, "
                                  r"e\.g\. '0-3'"),
    (dict(sharing_map="0.2x3"), r"layer 1 uses set 2 before set 1 is used.*'0\.1x3'"),
    (dict(sharing_map="3-1.0"), r"item '3-1' counts down"),
    (dict(sharing_map="0.1x0.1.2"), r"item '1x0' repeats 0 times"),
]


@pytest.mark.parametrize("fields,message", BAD, ids=[m[:40] for _, m in BAD])
def test_validation_names_the_field_value_and_rule(fields, message):
    with pytest.raises(ConfigError, match=message):
        TINY.replace(**fields)


def test_share_layers_errors():
    with pytest.raises(ConfigError, match=r"span \(3, 4\): need 0 <= first <= last < 4"):
        share_layers(4, (3, 4))
    with pytest.raises(ConfigError, match=r"span \(1, 2\) overlaps"):
        share_layers(4, (0, 1), (1, 2))


def test_set_and_experiment_arguments_parse_the_map():
    c = load_config("experiments/pretrain.py:scale=smoke,model.sharing_map=0x2.1-2")
    assert model_from_section(c.model, vocab_size=100).layer_set_ids == (0, 0, 1, 2)
    apply_override(c, "model.sharing_map=0,1,1,0")  # --set splits at the first '=' only: commas are fine
    assert c.model.sharing_map == "0,1,1,0"
    assert model_from_section(c.model, vocab_size=100).num_shared_sets == 2
    apply_override(c, "model.sharing_map='0.1.2.3'")  # shell-quoted
    assert model_from_section(c.model, vocab_size=100).layer_set_ids == (0, 1, 2, 3)
    # In an experiment argument commas separate variants, which is why the '.' spelling exists.
    with pytest.raises(ValueError, match="argument '1': expected key=value"):
        load_config("experiments/pretrain.py:model.sharing_map=0,1,1,0")
    assert parse_overrides("sharing=ffn,sharing_map=0-7.8x4") == {"sharing": "ffn", "sharing_map": "0-7.8x4"}
    apply_override(c, "model.sharing_map=0.1")
    with pytest.raises(ConfigError, match=r"model.sharing_map='0.1' lists 2 layers; model.num_hidden_layers=4"):
        check_model_section(c.model, vocab_size=100)


# ---------------------------------------------------------------------------------------------- equivalences
@pytest.mark.parametrize("sharing", ["all", "attention"])
def test_own_set_per_layer_equals_sharing_none(sharing):
    cfg = TINY.replace(sharing=sharing, sharing_map="0-3")
    none_cfg = TINY.replace(sharing="none")
    p_none = init(none_cfg)
    layers = p_none["encoder"]["layers"]
    shared_parts = [p for p in ("attention", "ffn") if getattr(cfg, f"{p}_shared")]
    p_map = with_encoder(p_none, shared={p: layers[p] for p in shared_parts},
                         layers={p: layers[p] for p in layers if p not in shared_parts})
    assert jax.tree.structure(p_map) == jax.tree.structure(init(cfg))
    assert jax.tree.map(np.shape, p_map) == jax.tree.map(np.shape, init(cfg))
    np.testing.assert_allclose(seq(cfg, p_map), seq(none_cfg, p_none), atol=1e-6, rtol=0)


def test_one_set_for_every_layer_equals_sharing_all():
    cfg = TINY.replace(sharing_map="0x4")
    p_all = init(TINY)
    p_map = with_encoder(p_all, shared=jax.tree.map(lambda a: a[None], p_all["encoder"]["shared"]))
    assert jax.tree.map(np.shape, p_map) == jax.tree.map(np.shape, init(cfg))
    np.testing.assert_allclose(seq(cfg, p_map), seq(TINY, p_all), atol=1e-6, rtol=0)


@pytest.mark.parametrize("overrides", [dict(), dict(sharing="ffn", inner_group_num=2)])
def test_map_equal_to_the_group_rule_equals_num_hidden_groups(overrides):
    groups = TINY.replace(num_hidden_groups=2, **overrides)
    mapped = TINY.replace(sharing_map="0x2.1x2", **overrides)  # i*G//L for G=2, L=4
    p = init(groups)  # the 'groups' and 'sets' axes have the same sizes: the same arrays serve both
    assert jax.tree.map(np.shape, p) == jax.tree.map(np.shape, init(mapped))
    np.testing.assert_allclose(seq(mapped, p), seq(groups, p), atol=1e-6, rtol=0)


MAPS = [dict(sharing_map="0.1.1.0"), dict(sharing="attention", sharing_map="0x3.1"),
        dict(sharing="ffn", sharing_map="0-1.0-1", inner_group_num=2),
        dict(sharing_map="0.1x3", remat_policy="full")]


@pytest.mark.parametrize("overrides", MAPS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_scan_equals_unrolled_on_one_tree(overrides):
    cfg = TINY.replace(**overrides)
    ids, mask = batch()
    params = init(cfg, AlbertForPreTraining)
    unrolled = cfg.replace(scan_layers=False)
    assert jax.tree.map(np.shape, params) == jax.tree.map(np.shape, init(unrolled, AlbertForPreTraining))
    outs = [AlbertForPreTraining(c).apply({"params": params}, ids, mask, output_hidden_states=True)
            for c in (cfg, unrolled)]
    for key in ("mlm_logits", "sop_logits"):
        np.testing.assert_allclose(outs[0][key], outs[1][key], atol=1e-5, rtol=0)
    for a, b in zip(outs[0]["hidden_states"], outs[1]["hidden_states"]):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)
    # The map is really used: the same tree with its sets swapped computes something else (by far more than the
    # 1e-5 tolerance above; small-init post-LN layers are close to the identity, so not by much more).
    body = params["albert"]
    body = with_encoder(body, shared=jax.tree.map(lambda a: a[::-1], body["encoder"]["shared"]),
                        layers=body["encoder"].get("layers"))
    swapped = {**params, "albert": body}
    other = AlbertForPreTraining(cfg).apply({"params": swapped}, ids, mask, output_hidden_states=True)
    assert np.abs(np.asarray(other["hidden_states"][-1]) - np.asarray(outs[0]["hidden_states"][-1])).max() > 1e-3


@pytest.mark.parametrize("overrides", [dict(sharing_map="0.1x3"), dict(sharing="attention", sharing_map="0.1.0.2")])
@pytest.mark.parametrize("scan", [True, False])
def test_a_set_used_by_k_layers_gets_the_sum_of_k_gradients(overrides, scan):
    cfg = TINY.replace(scan_layers=scan, **overrides)
    ref_cfg = TINY.replace(sharing="none", scan_layers=False)  # the unrolled reference: a copy per layer
    params = init(cfg)
    probe = jnp.asarray(np.random.default_rng(1).normal(size=(B, S, TINY.hidden_size)), jnp.float32)

    def loss(c):
        return lambda p: jnp.sum(AlbertModel(c).apply({"params": p}, *batch())["sequence_output"] * probe)

    np.testing.assert_allclose(loss(cfg)(params), loss(ref_cfg)(as_unshared(params, cfg)), rtol=1e-5)
    g = jax.grad(loss(cfg))(params)["encoder"]
    g_ref = jax.grad(loss(ref_cfg))(as_unshared(params, cfg))["encoder"]["layers"]
    ids = np.asarray(cfg.layer_set_ids)
    for part, tree in g["shared"].items():
        want = jax.tree.map(lambda a: np.stack([np.asarray(a)[ids == s].sum(0) for s in range(cfg.num_shared_sets)]),
                            g_ref[part])
        for got_leaf, want_leaf in zip(jax.tree.leaves(tree), jax.tree.leaves(want)):
            np.testing.assert_allclose(got_leaf, want_leaf, atol=1e-5, rtol=1e-4)
        kernel = np.asarray(tree["output"]["kernel"])
        assert all(np.abs(kernel[s]).max() > 0 for s in range(cfg.num_shared_sets)), part  # every set learns
    for part, tree in g.get("layers", {}).items():  # per-layer parts: one contribution each, as the reference
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-4), tree, g_ref[part])


# ---------------------------------------------------------------------------------------------- counts and axes
def model_count(cfg):
    shapes = jax.eval_shape(lambda: AlbertModel(cfg).init(jax.random.PRNGKey(0), jnp.zeros((1, 8), jnp.int32)))
    return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(nn.unbox(shapes["params"])))


@pytest.mark.parametrize("overrides,attention_sets,ffn_sets", [
    (dict(sharing_map="0-7.8x4"), 9, 9),  # layers 9-12 share: 9 sets of everything
    (dict(sharing="attention", sharing_map="0x3.1-9"), 10, 12),  # only attention follows the map
    (dict(sharing="ffn", sharing_map="0-5.0-5"), 12, 6),
    (dict(sharing_map="0-7.8x4", inner_group_num=2), 18, 18),  # each set holds 2 inner blocks
])
def test_counts_by_hand(overrides, attention_sets, ffn_sets):
    cfg = preset("albert-base", **overrides)
    V, E, H, I, P, T = 30000, 128, 768, 3072, 512, 2
    attention = 4 * (H * H + H) + 2 * H
    ffn = H * I + I + I * H + H + 2 * H
    hand = ((V + P + T) * E + 2 * E) + (E * H + H) + attention * attention_sets + ffn * ffn_sets + (H * H + H)
    assert cfg.param_count() == hand
    assert model_count(cfg) == hand
    # Compute is per applied layer: the map changes parameters only.
    assert cfg.flops_per_token(512) == cfg.replace(sharing="none", sharing_map="").flops_per_token(512)


def test_sets_axis_is_named_and_replicated():
    cfg = TINY.replace(sharing="attention", sharing_map="0.1.1.0", inner_group_num=2)
    boxed = AlbertModel(cfg).init(jax.random.PRNGKey(0), *batch())["params"]
    q = boxed["encoder"]["shared"]["attention"]["query"]["kernel"]
    assert q.names == ("sets", "inner", "hidden", "heads", "kv") and q.value.shape[:2] == (2, 2)
    assert boxed["encoder"]["layers"]["ffn"]["output"]["kernel"].names[:2] == ("layers", "inner")
    mesh = shd.make_mesh(data=2, fsdp=2, tensor=2)
    spec = shd.param_shardings(boxed, mesh)["encoder"]["shared"]["attention"]["query"]["kernel"].spec
    assert spec == jax.sharding.PartitionSpec(None, None, "fsdp", "tensor", None)


def test_summary_shows_the_map_and_its_sets():
    from albert_jax.summary import render_compare, render_one

    cfg = preset("albert-base", sharing_map="0,1,2,3,4,5,6,7,8,8,8,8")
    text = render_one("albert-base", cfg, 128)
    assert "sharing=all map=0-7.8x4 (9 sets)" in text
    assert f"| attention | {cfg.param_breakdown()['attention']:,} |" in text
    assert "all map=0-7.8x4 (9 sets)" in render_compare([("m", cfg)], 128)


# ---------------------------------------------------------------------------------------------- tree walkers
def test_init_from_group0_fills_every_set_and_reads_set_zero():
    src = init(TINY)
    for dst_cfg in (TINY.replace(sharing_map="0.1x2.2"), TINY.replace(sharing="ffn", sharing_map="0x2.1x2")):
        dst = init_from_group0(src, TINY, dst_cfg)
        assert jax.tree.map(np.shape, dst) == jax.tree.map(np.shape, init(dst_cfg))
        np.testing.assert_allclose(seq(dst_cfg, dst), seq(TINY, src), atol=1e-5)
    # From a map source, "group 0" is set 0 (layer 0's set): a none model then runs layer 0's weights everywhere.
    map_cfg = TINY.replace(sharing_map="0.1.1.2")
    src = init(map_cfg)
    none = init_from_group0(src, map_cfg, TINY.replace(sharing="none"))
    k = none["encoder"]["layers"]["attention"]["query"]["kernel"]
    np.testing.assert_array_equal(k[3], src["encoder"]["shared"]["attention"]["query"]["kernel"][0])


def test_warm_start_deeper_follows_the_map_or_refuses():
    small = TINY.replace(num_hidden_layers=2, sharing_map="0.1")
    src = init(small)
    q = src["encoder"]["shared"]["attention"]["query"]["kernel"]
    for dst_map, want_sets in (("0.1.0.1", [0, 1]), ("0-3", [0, 1, 0, 1])):
        deep = small.replace(num_hidden_layers=4, sharing_map=dst_map)
        dst = warm_start_deeper(src, small, deep)
        assert jax.tree.map(np.shape, dst) == jax.tree.map(np.shape, init(deep))
        np.testing.assert_array_equal(dst["encoder"]["shared"]["attention"]["query"]["kernel"], q[np.array(want_sets)])
        # Target layer i computes with source layer i mod 2's weights: the same as that source on the same ids.
        np.testing.assert_allclose(as_unshared(dst, deep)["encoder"]["layers"]["attention"]["query"]["kernel"],
                                   q[np.array([0, 1, 0, 1])])
    # An all-shared source into a map: every target set is the one source set.
    dst = warm_start_deeper(init(TINY), TINY, TINY.replace(num_hidden_layers=8, sharing_map="0-1.2x6"))
    assert dst["encoder"]["shared"]["ffn"]["output"]["bias"].shape == (3, TINY.hidden_size)
    with pytest.raises(InitError, match=r"target set 0 \(sharing_map='0x4'\) serves layers whose source layers "
                                        r"\(i mod 2\) use different source sets \[0, 1\]"):
        warm_start_deeper(src, small, small.replace(num_hidden_layers=4, sharing_map="0x4"))
    with pytest.raises(InitError, match="keeps sharing and inner_group_num"):
        warm_start_deeper(src, small, small.replace(num_hidden_layers=4, sharing="ffn", sharing_map="0-3"))


def test_hf_and_official_formats_refuse_a_map(tmp_path):
    cfg = TINY.replace(sharing_map="0x2.1x2")
    params = init(cfg, AlbertForPreTraining)
    message = r"sharing_map='0x2.1x2' has no HuggingFace ALBERT layout.*albert-jax export --to params"
    with pytest.raises(hf.ConversionError, match=message):
        hf.params_to_hf(params, cfg)
    with pytest.raises(hf.ConversionError, match=message):
        hf.save_hf_pretrained(params, cfg, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    with pytest.raises(hf.ConversionError, match=message):
        hf.hf_to_params({}, cfg)
    for to_json in (cfg.to_hf_json, cfg.to_official_json):
        with pytest.raises(ConfigError, match=r"sharing_map='0x2.1x2' cannot be written as .*export --to params"):
            to_json()


def test_json_round_trip_keeps_the_map(tmp_path):
    import json

    from albert_jax.config import load_json

    cfg = TINY.replace(sharing="attention", sharing_map="0-2.0")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg.to_dict()))
    assert load_json(str(path)) == cfg
    assert AlbertConfig.from_dict({k: v for k, v in TINY.to_dict().items() if k != "sharing_map"}) == TINY


def test_a_sharded_pretraining_step_with_a_map_equals_one_device():
    """Two LAMB steps of real pretraining on a 2x2x2 mesh and on one device: same losses and parameters."""
    from albert_jax.tasks.pretraining.task import PretrainingTask
    from albert_jax.training import optim
    from albert_jax.training import state as st
    from albert_jax.training import step as ts

    cfg = preset("tiny", num_hidden_layers=4, sharing="attention", sharing_map="0.1x2.0")
    rng = np.random.default_rng(0)
    Bt, St, P = 8, 16, 3
    batches = [{"input_ids": rng.integers(5, cfg.vocab_size, (Bt, St)).astype(np.int32),
                "input_mask": np.ones((Bt, St), np.int32),
                "segment_ids": np.repeat((np.arange(St) >= 8).astype(np.int32)[None], Bt, 0),
                "masked_lm_positions": rng.integers(1, St, (Bt, P)).astype(np.int32),
                "masked_lm_ids": rng.integers(5, cfg.vocab_size, (Bt, P)).astype(np.int32),
                "masked_lm_weights": np.ones((Bt, P), np.float32),
                "next_sentence_labels": rng.integers(0, 2, (Bt,)).astype(np.int32)} for _ in range(2)]

    def run(mesh):
        boxed = st.abstract_params(PretrainingTask(), cfg)
        tx = optim.make_optimizer("lamb", 1e-2, 100, 0, stacked_axes_fn=optim.stacked_axes_from_boxed(boxed))
        _, shardings = st.state_shardings(tx, mesh, boxed)
        state = st.init_state(PretrainingTask(), cfg, tx, mesh, jax.random.PRNGKey(0), shardings)
        first = jax.device_get(state.params)
        train, _ = ts.jit_steps(PretrainingTask("sop"), cfg, tx, mesh, shardings, 1)
        losses = []
        for b in batches:
            state, m = train(state, shd.shard_batch(b, mesh), jax.random.PRNGKey(1))
            losses.append(float(m["loss"]))
        return first, jax.device_get(state.params), losses

    first, params, losses = run(shd.make_mesh(devices=jax.devices()[:1]))
    _, params8, losses8 = run(shd.make_mesh(2, 2, 2))
    assert np.all(np.isfinite(losses))
    np.testing.assert_allclose(losses8, losses, rtol=1e-5)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=2e-5, rtol=1e-4), params8, params)
    moved = params["albert"]["encoder"]["shared"]["attention"]["query"]["kernel"] - \
        first["albert"]["encoder"]["shared"]["attention"]["query"]["kernel"]
    assert all(np.abs(moved[s]).max() > 0 for s in range(2))  # both sets trained
