"""Numerical parity with transformers' PyTorch ALBERT, through `albert_jax.interop.hf`, in both directions.

Tiny random models, float32, dropout off, eval mode. Every parameter (biases and LayerNorm included) is
perturbed away from its init value: HF and we initialise biases to 0 and LayerNorm to 1/0, which would hide a
bias or LayerNorm that is mapped to the wrong place.

Padding: HF adds finfo(float32).min to masked keys, we add -10000 as the official code. Both make exp()
underflow to exactly 0 in float32, and the mask is per key, so even the padded query rows see the same keys;
the comparison therefore covers every position, padded ones included.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import transformers
from flax import linen as nn
from flax import traverse_util

from albert_jax.config import AlbertConfig
from albert_jax.interop.hf import (ConversionError, bert_config, bert_to_params, hf_to_params, load_hf_pretrained,
                                   params_to_hf, save_hf_pretrained)
from albert_jax.modeling import AlbertForPreTraining, AlbertModel

TOL = 1e-5
TINY = dict(vocab_size=100, embedding_size=16, hidden_size=32, num_attention_heads=4, intermediate_size=64,
            num_hidden_layers=4, max_position_embeddings=64, hidden_act="gelu_new", classifier_dropout_prob=0.0)
CONFIGS = {
    "all_shared": AlbertConfig(**TINY),
    "groups2_inner2": AlbertConfig(**TINY, num_hidden_groups=2, inner_group_num=2),
}
OUTPUTS = ("sequence_output", "pooled_output", "mlm_logits", "sop_logits")
torch.set_num_threads(2)


def hf_config(cfg: AlbertConfig) -> transformers.AlbertConfig:
    d = {k: v for k, v in cfg.to_hf_json().items() if k not in ("architectures", "model_type")}
    return transformers.AlbertConfig(**d)


def perturb_torch(model, seed: int):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # named_parameters() yields the tied decoder weight once (it is the word table)
        for _, p in model.named_parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g))
    return model


def perturb_flax(params, seed: int):
    rng = np.random.default_rng(seed)
    return jax.tree.map(lambda a: np.asarray(a) + 0.1 * rng.standard_normal(a.shape).astype(np.float32), params)


def random_hf(cfg: AlbertConfig, seed: int = 0):
    torch.manual_seed(seed)
    return perturb_torch(transformers.AlbertForPreTraining(hf_config(cfg)).eval(), seed)


def flax_init(cfg: AlbertConfig, seed: int = 1):
    """Our model's own init, then perturbed."""
    variables = AlbertForPreTraining(cfg).init(jax.random.PRNGKey(seed), np.zeros((1, 4), np.int32))
    return perturb_flax(jax.device_get(nn.unbox(variables["params"])), seed)


def random_params(cfg: AlbertConfig, seed: int):
    """Random values in the model's own tree (abstract init: shapes only, no compute)."""
    abstract = jax.eval_shape(AlbertForPreTraining(cfg).init, jax.random.PRNGKey(0), np.zeros((1, 4), np.int32))
    rng = np.random.default_rng(seed)
    flat = traverse_util.flatten_dict(nn.unbox(abstract["params"]))
    # LayerNorm scales around 1 as after training, everything else around 0.
    return traverse_util.unflatten_dict({k: (0.1 * rng.standard_normal(a.shape) + (k[-1] == "scale"))
                                         .astype(np.float32) for k, a in flat.items()})


@pytest.fixture(scope="module")
def batch():
    rng = np.random.default_rng(0)
    B, L = 3, 12
    ids = rng.integers(0, TINY["vocab_size"], (B, L))
    mask = (np.arange(L)[None, :] < np.array([[12], [9], [5]])).astype(np.int64)
    token_types = (np.arange(L)[None, :] >= np.array([[6], [4], [2]])).astype(np.int64) * mask
    return ids, mask, token_types


def run_hf(model, batch) -> dict[str, np.ndarray]:
    ids, mask, tt = (torch.tensor(x) for x in batch)
    with torch.no_grad():
        base = model.albert(ids, attention_mask=mask, token_type_ids=tt)
        full = model(ids, attention_mask=mask, token_type_ids=tt)
    return {"sequence_output": base.last_hidden_state.numpy(), "pooled_output": base.pooler_output.numpy(),
            "mlm_logits": full.prediction_logits.numpy(), "sop_logits": full.sop_logits.numpy()}


@functools.lru_cache(maxsize=None)
def _jitted(cfg: AlbertConfig):
    return jax.jit(AlbertForPreTraining(cfg).apply)


def run_ours(cfg, params, batch) -> dict[str, np.ndarray]:
    out = _jitted(cfg)({"params": params}, *batch)
    return {k: np.asarray(out[k]) for k in OUTPUTS}


def assert_close(ours, theirs, label: str):
    diffs = {k: float(np.abs(ours[k] - theirs[k]).max()) for k in OUTPUTS}
    print(f"\n{label}: max abs diff " + ", ".join(f"{k} {v:.2e}" for k, v in diffs.items()))
    bad = {k: v for k, v in diffs.items() if not v <= TOL}
    assert not bad, f"{label}: above {TOL}: {bad}"


def assert_trees_equal(a, b):
    fa, fb = (traverse_util.flatten_dict(t) for t in (a, b))
    assert set(fa) == set(fb)
    for k in fa:
        assert np.asarray(fa[k]).shape == np.asarray(fb[k]).shape, k
        assert np.array_equal(np.asarray(fa[k]), np.asarray(fb[k])), k


# ------------------------------------------------------------------------------------------------- HF -> ours
@pytest.mark.parametrize("name", CONFIGS)
def test_hf_to_ours_matches(name, batch):
    cfg = CONFIGS[name]
    hf = random_hf(cfg)
    params = hf_to_params(hf.state_dict(), cfg)
    assert set(params) == {"albert", "predictions", "seq_relationship"}
    assert_close(run_ours(cfg, params, batch), run_hf(hf, batch), f"HF->ours [{name}]")
    # Exact inverse: ours -> HF gives back the state dict, tied decoder copies included.
    sd = {k: v.numpy() for k, v in hf.state_dict().items()}
    back = params_to_hf(params, cfg)
    assert set(back) == set(sd)
    assert all(np.array_equal(back[k], sd[k]) for k in sd)


def test_hf_albert_model_state_dict_without_prefix(batch):
    """A bare AlbertModel state dict (no 'albert.' prefix, no heads) gives our AlbertModel tree."""
    cfg = CONFIGS["groups2_inner2"]
    hf = random_hf(cfg, seed=3)
    params = hf_to_params(hf.albert.state_dict(), cfg)
    assert set(params) == {"embeddings", "encoder", "pooler"}
    out = jax.jit(AlbertModel(cfg).apply)({"params": params}, *batch)
    theirs = run_hf(hf, batch)
    for k in ("sequence_output", "pooled_output"):
        diff = float(np.abs(np.asarray(out[k]) - theirs[k]).max())
        print(f"\nAlbertModel HF->ours {k}: {diff:.2e}")
        assert diff <= TOL, (k, diff)
    # heads=False drops the heads of a pretraining checkpoint: the same encoder tree.
    assert_trees_equal(hf_to_params(hf.state_dict(), cfg, heads=False), params)


def test_loaded_directory_applies_unjitted_as_returned(tmp_path, batch):
    """load_hf_pretrained's params go straight into an *unjitted* model.apply, groups and inner blocks included.

    Without jit, nn.scan traces the layer step and indexes the shared tree with a traced group index; numpy
    leaves there raise TracerArrayConversionError, so the loader must hand back jax arrays. (`run_ours` jits,
    and jit's argument conversion hides the problem, hence the direct apply here.)
    """
    cfg = CONFIGS["groups2_inner2"]
    hf = random_hf(cfg, seed=9)
    hf.save_pretrained(tmp_path)  # HF's own writer, as a Hub directory
    config, params = load_hf_pretrained(tmp_path)
    assert (config.num_hidden_groups, config.inner_group_num) == (2, 2)
    leaves = jax.tree.leaves(params)
    assert all(isinstance(x, jax.Array) and x.dtype == np.float32 for x in leaves)
    out = AlbertForPreTraining(config).apply({"params": params}, *batch)
    assert_close({k: np.asarray(out[k]) for k in OUTPUTS}, run_hf(hf, batch), "load_hf_pretrained, unjitted")
    # The leaves come in the config's param_dtype, whatever the checkpoint stores.
    _, bf16 = load_hf_pretrained(tmp_path, param_dtype="bfloat16")
    assert all(isinstance(x, jax.Array) and x.dtype == jnp.bfloat16 for x in jax.tree.leaves(bf16))


def test_bert_converter_returns_jax_arrays():
    """bert_to_params shares _fill with the ALBERT path: jax leaves, and an unjitted apply matches HF BERT."""
    hf_cfg = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=64, hidden_act="gelu")
    torch.manual_seed(10)
    bert = perturb_torch(transformers.BertModel(hf_cfg).eval(), seed=10)
    cfg = bert_config(hf_cfg.to_dict())
    params = bert_to_params(bert.state_dict(), cfg)
    assert all(isinstance(x, jax.Array) and x.dtype == np.float32 for x in jax.tree.leaves(params))
    ids = np.random.default_rng(1).integers(0, 100, (2, 7))
    out = AlbertModel(cfg).apply({"params": params}, ids)
    with torch.no_grad():
        theirs = bert(torch.tensor(ids)).last_hidden_state.numpy()
    assert float(np.abs(np.asarray(out["sequence_output"]) - theirs).max()) <= TOL


# ------------------------------------------------------------------------------------------------- ours -> HF
@pytest.mark.parametrize("name", CONFIGS)
def test_ours_to_hf_matches_and_round_trips(name, batch):
    cfg = CONFIGS[name]
    # A real Flax init for one config; XLA needs seconds per init on 2 cores (threefry), so the other
    # config draws random values into the tree its abstract init declares.
    params = flax_init(cfg) if name == "all_shared" else random_params(cfg, seed=2)
    sd = params_to_hf(params, cfg)
    hf = transformers.AlbertForPreTraining(hf_config(cfg)).eval()
    hf.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in sd.items()}, strict=True)
    assert_close(run_ours(cfg, params, batch), run_hf(hf, batch), f"ours->HF [{name}]")
    assert_trees_equal(hf_to_params(sd, cfg), params)  # params -> hf -> params is exact


def test_exported_directory_loads_in_hf_and_matches(tmp_path, batch):
    cfg = CONFIGS["groups2_inner2"]
    params = random_params(cfg, seed=2)  # the same values as the ours->HF test above
    save_hf_pretrained(params, cfg, tmp_path)
    hf, info = transformers.AlbertForPreTraining.from_pretrained(tmp_path, output_loading_info=True)
    assert all(not v for v in info.values()), info  # no missing / unexpected / mismatched keys
    hf.eval()
    assert (hf.config.num_hidden_groups, hf.config.inner_group_num, hf.config.hidden_act) == (2, 2, "gelu_new")
    assert_close(run_ours(cfg, params, batch), run_hf(hf, batch), "exported dir -> HF from_pretrained")
    config2, params2 = load_hf_pretrained(tmp_path)
    assert config2 == cfg.replace(embedding_projection=True)
    assert_trees_equal(params2, params)


def test_sharing_none_exports_one_group_per_layer(tmp_path, batch):
    cfg = AlbertConfig(**TINY, sharing="none")
    params = random_params(cfg, seed=4)
    assert params["albert"]["encoder"]["layers"]["attention"]["query"]["kernel"].shape[0] == cfg.num_hidden_layers
    save_hf_pretrained(params, cfg, tmp_path)
    hf, info = transformers.AlbertForPreTraining.from_pretrained(tmp_path, output_loading_info=True)
    assert all(not v for v in info.values()), info
    hf.eval()
    assert hf.config.num_hidden_groups == cfg.num_hidden_layers
    assert_close(run_ours(cfg, params, batch), run_hf(hf, batch), "sharing='none' as groups=L")
    # Back into a sharing='none' config (per-layer tree) and into the equivalent 'all' config (groups tree).
    sd = {k: v.numpy() for k, v in hf.state_dict().items()}
    assert_trees_equal(hf_to_params(sd, cfg), params)
    as_groups = hf_to_params(sd, cfg.replace(sharing="all", num_hidden_groups=cfg.num_hidden_layers))
    assert as_groups["albert"]["encoder"]["shared"]["ffn"]["output"]["kernel"].shape == (4, 64, 32)


def test_no_projection_config_exports_identity_mapping(tmp_path, batch):
    """BERT-style (E == H, no projection): HF always projects, so the export writes an exact identity."""
    cfg = AlbertConfig(**{**TINY, "embedding_size": 32}, sharing="none", embedding_projection=False)
    params = random_params(cfg, seed=5)
    assert "embedding_hidden_mapping_in" not in params["albert"]["encoder"]
    save_hf_pretrained(params, cfg, tmp_path)
    hf, info = transformers.AlbertForPreTraining.from_pretrained(tmp_path, output_loading_info=True)
    assert all(not v for v in info.values()), info
    assert_close(run_ours(cfg, params, batch), run_hf(hf.eval(), batch), "no projection via identity")
    sd = params_to_hf(params, cfg)
    assert_trees_equal(hf_to_params(sd, cfg), params)
    sd["albert.encoder.embedding_hidden_mapping_in.weight"] *= 2
    with pytest.raises(ConversionError, match="not an identity mapping"):
        hf_to_params(sd, cfg)


# ------------------------------------------------------------------------------------------------- errors
def test_sharing_modes_hf_cannot_hold_raise():
    cfg = AlbertConfig(**TINY, sharing="attention")
    params = random_params(cfg, seed=6)
    with pytest.raises(ValueError, match="sharing='attention'"):
        params_to_hf(params, cfg)
    with pytest.raises(ValueError, match="sharing='attention'"):
        save_hf_pretrained(params, cfg, "unused-dir")
    with pytest.raises(ValueError, match="sharing='attention'"):
        hf_to_params({}, cfg)


def test_mismatched_checkpoints_name_keys_and_shapes():
    cfg = CONFIGS["all_shared"]
    sd = {k: v.numpy() for k, v in random_hf(cfg, seed=7).state_dict().items()}
    # Vocabulary mismatch: the key and both shapes are named.
    with pytest.raises(ConversionError, match=r"albert\.embeddings\.word_embeddings\.weight: checkpoint "
                                              r"\(100, 16\) vs config \(99, 16\)"):
        hf_to_params(sd, cfg.replace(vocab_size=99))
    # A 1-group checkpoint against a 2-group config: the group-1 keys are named as missing.
    with pytest.raises(ConversionError, match=r"missing 16 key\(s\): albert\.encoder\.albert_layer_groups\.1"):
        hf_to_params(sd, cfg.replace(num_hidden_groups=2))
    extra = {**sd, "albert.encoder.albert_layer_groups.0.albert_layers.1.ffn.bias": sd["albert.pooler.bias"]}
    with pytest.raises(ConversionError, match=r"unexpected 1 key\(s\): albert\.encoder\.albert_layer_groups"
                                              r"\.0\.albert_layers\.1\.ffn\.bias"):
        hf_to_params(extra, cfg)
    missing = dict(sd)
    del missing["albert.encoder.albert_layer_groups.0.albert_layers.0.attention.dense.weight"]
    with pytest.raises(ConversionError, match=r"missing 1 key\(s\): albert\.encoder\.albert_layer_groups\.0"
                                              r"\.albert_layers\.0\.attention\.dense\.weight"):
        hf_to_params(missing, cfg)
    untied = {**sd, "predictions.decoder.weight": sd["predictions.decoder.weight"] + 1}
    with pytest.raises(ConversionError, match="untied"):
        hf_to_params(untied, cfg)
    params = hf_to_params(sd, cfg)
    with pytest.raises(ConversionError, match=r"params \(100, 16\) vs config \(120, 16\)"):
        params_to_hf(params, cfg.replace(vocab_size=120))


def test_cli_from_hf_then_to_hf(tmp_path, batch):
    """`convert from-hf` then `convert to-hf` (our msgpack params in between) reproduces the HF directory."""
    import argparse

    from albert_jax.cli.convert import add_cli

    parser = argparse.ArgumentParser()
    add_cli(parser.add_subparsers(dest="command"))

    def cli(*argv):
        args = parser.parse_args(["convert", *map(str, argv)])
        assert args.func(args) == 0

    cfg = CONFIGS["groups2_inner2"]
    hf = random_hf(cfg, seed=8)
    hf.save_pretrained(tmp_path / "hf")  # HF's own writer: tied copies left out, as on the Hub
    cli("from-hf", "--hf-dir", tmp_path / "hf", "--out", tmp_path / "p.msgpack")
    assert (tmp_path / "p.config.json").is_file()
    cli("to-hf", "--params", tmp_path / "p.msgpack", "--config", tmp_path / "p.config.json", "--out", tmp_path / "out")
    again = transformers.AlbertForPreTraining.from_pretrained(tmp_path / "out").eval()
    theirs, back = run_hf(hf, batch), run_hf(again, batch)
    assert all(np.array_equal(theirs[k], back[k]) for k in OUTPUTS)
