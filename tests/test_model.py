"""The model: scan equals unrolled for every sharing mode, parameter layouts, heads, dtypes, remat."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from albert_jax.config import preset
from albert_jax.modeling import (AlbertForMultipleChoice, AlbertForPreTraining, AlbertForQuestionAnswering,
                                 AlbertForSequenceClassification, AlbertForSquadV2, AlbertForTokenClassification,
                                 AlbertModel)

B, S = 2, 12
TINY = preset("tiny", num_hidden_layers=4, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)


def batch(seed=0, vocab=TINY.vocab_size):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab, (B, S)).astype(np.int32)
    mask = np.ones((B, S), np.int32)
    mask[1, 8:] = 0
    types = np.zeros((B, S), np.int32)
    types[:, 6:] = 1
    return jnp.asarray(ids), jnp.asarray(mask), jnp.asarray(types)


def init(model, *args):
    return nn.unbox(model.init(jax.random.PRNGKey(0), *args)["params"])


MODES = [dict(sharing="all"), dict(sharing="attention"), dict(sharing="ffn"), dict(sharing="none"),
         dict(sharing="all", num_hidden_groups=2), dict(sharing="all", inner_group_num=2),
         dict(sharing="attention", num_hidden_groups=2, inner_group_num=2),
         dict(sharing="ffn", num_hidden_groups=4)]


@pytest.mark.parametrize("overrides", MODES, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_scan_equals_unrolled(overrides):
    cfg = TINY.replace(**overrides)
    ids, mask, types = batch()
    params = init(AlbertForPreTraining(cfg), ids, mask, types)
    outs = [AlbertForPreTraining(cfg.replace(scan_layers=s)).apply({"params": params}, ids, mask, types,
                                                                   output_hidden_states=True)
            for s in (True, False)]
    for key in ("sequence_output", "pooled_output", "mlm_logits", "sop_logits"):
        np.testing.assert_allclose(outs[0][key], outs[1][key], atol=1e-5, rtol=0)
    assert len(outs[0]["hidden_states"]) == cfg.num_hidden_layers + 1
    for a, b in zip(outs[0]["hidden_states"], outs[1]["hidden_states"]):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)


def test_unrolled_init_has_the_same_tree_and_values():
    cfg = TINY.replace(sharing="attention")
    ids, mask, types = batch()
    a = init(AlbertForPreTraining(cfg), ids, mask, types)
    b = init(AlbertForPreTraining(cfg.replace(scan_layers=False)), ids, mask, types)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    jax.tree.map(np.testing.assert_array_equal, a, b)


def encoder_shapes(cfg):
    ids, mask, types = batch()
    shapes = jax.eval_shape(lambda: AlbertModel(cfg).init(jax.random.PRNGKey(0), ids, mask, types))
    return jax.tree.map(lambda x: x.shape, nn.unbox(shapes["params"]))["encoder"]


def test_parameter_shapes_per_mode():
    H, A, D, I, Lyr = TINY.hidden_size, TINY.num_attention_heads, TINY.head_dim, TINY.intermediate_size, 4
    s = encoder_shapes(TINY.replace(sharing="all"))
    assert "layers" not in s
    assert s["shared"]["attention"]["query"]["kernel"] == (H, A, D)  # no layer axis where shared
    assert s["shared"]["ffn"]["intermediate"]["kernel"] == (H, I)
    s = encoder_shapes(TINY.replace(sharing="attention"))
    assert s["shared"]["attention"]["output"]["kernel"] == (A, D, H)
    assert s["layers"]["ffn"]["output"]["kernel"] == (Lyr, I, H)
    assert "ffn" not in s["shared"] and "attention" not in s["layers"]
    s = encoder_shapes(TINY.replace(sharing="ffn"))
    assert s["layers"]["attention"]["key"]["bias"] == (Lyr, A, D)
    assert s["shared"]["ffn"]["LayerNorm"]["scale"] == (H,)
    s = encoder_shapes(TINY.replace(sharing="none"))
    assert "shared" not in s and s["layers"]["attention"]["LayerNorm"]["scale"] == (Lyr, H)
    s = encoder_shapes(TINY.replace(num_hidden_groups=2, inner_group_num=3))
    assert s["shared"]["attention"]["query"]["kernel"] == (2, 3, H, A, D)
    s = encoder_shapes(TINY.replace(sharing="ffn", num_hidden_groups=2, inner_group_num=3))
    assert s["layers"]["attention"]["value"]["kernel"] == (Lyr, 3, H, A, D)
    assert s["shared"]["ffn"]["output"]["bias"] == (2, 3, H)
    bert = encoder_shapes(preset("tiny", embedding_size=32, sharing="none", embedding_projection=False))
    assert "embedding_hidden_mapping_in" not in bert


def test_unshared_layers_start_different():
    # A classic trap: per-layer parameters initialised from one rng come out identical across layers.
    ids, mask, types = batch()
    p = init(AlbertModel(TINY.replace(sharing="none")), ids, mask, types)
    k = np.asarray(p["encoder"]["layers"]["attention"]["query"]["kernel"])
    assert not np.allclose(k[0], k[1])
    assert abs(k.std() - TINY.initializer_range) < 0.005  # truncated normal(0.02) at 2 std: std ~0.0176
    assert np.abs(k).max() <= 2 * TINY.initializer_range + 1e-7


def test_groups_use_the_official_layer_to_group_map():
    # With G=2 over L=4 layers, layers 0,1 use group 0 and 2,3 group 1. Zeroing group 1's FFN output kernel
    # and bias must change the output (group 1 is used), and a model whose group 1 copies group 0 must equal
    # an all-shared model with that single set.
    cfg = TINY.replace(num_hidden_groups=2)
    ids, mask, types = batch()
    p = init(AlbertModel(cfg), ids, mask, types)
    one = jax.tree.map(lambda a: a[0], p["encoder"]["shared"])
    p_copy = {**p, "encoder": {**p["encoder"], "shared": jax.tree.map(lambda a: jnp.stack([a, a]), one)}}
    p_single = {**p, "encoder": {**p["encoder"], "shared": one}}
    a = AlbertModel(cfg).apply({"params": p_copy}, ids, mask, types)["sequence_output"]
    b = AlbertModel(TINY).apply({"params": p_single}, ids, mask, types)["sequence_output"]
    np.testing.assert_allclose(a, b, atol=1e-6)
    c = AlbertModel(cfg).apply({"params": p}, ids, mask, types)["sequence_output"]
    assert np.abs(np.asarray(a) - np.asarray(c)).max() > 1e-3


def test_every_kernel_and_table_carries_logical_axis_names():
    ids, mask, types = batch()
    boxed = AlbertForPreTraining(TINY.replace(sharing="attention", num_hidden_groups=2)).init(
        jax.random.PRNGKey(0), ids, mask, types)["params"]
    leaves = jax.tree.leaves(boxed, is_leaf=lambda x: isinstance(x, nn.Partitioned))
    assert leaves and all(isinstance(x, nn.LogicallyPartitioned) for x in leaves)
    for x in leaves:
        assert len(x.names) == x.value.ndim
    names = {n for x in leaves for n in x.names if n}
    assert {"vocab", "embed", "hidden", "heads", "kv", "mlp", "layers", "groups"} <= names


def test_padding_does_not_change_valid_positions():
    ids, mask, types = batch()
    model = AlbertModel(TINY)
    p = init(model, ids, mask, types)
    base = model.apply({"params": p}, ids, mask, types)["sequence_output"]
    ids2 = ids.at[1, 8:].set(7)  # different tokens under the padding
    other = model.apply({"params": p}, ids2, mask, types)["sequence_output"]
    np.testing.assert_allclose(base[1, :8], other[1, :8], atol=1e-6)


def test_dropout_is_active_only_when_not_deterministic():
    ids, mask, types = batch()
    model = AlbertModel(TINY)
    p = init(model, ids, mask, types)
    det = model.apply({"params": p}, ids, mask, types)["sequence_output"]
    r1 = model.apply({"params": p}, ids, mask, types, deterministic=False, rngs={"dropout": jax.random.PRNGKey(1)})
    r2 = model.apply({"params": p}, ids, mask, types, deterministic=False, rngs={"dropout": jax.random.PRNGKey(2)})
    assert np.abs(np.asarray(r1["sequence_output"]) - np.asarray(det)).max() > 1e-3
    assert np.abs(np.asarray(r1["sequence_output"]) - np.asarray(r2["sequence_output"])).max() > 1e-3


@pytest.mark.parametrize("policy", ["full", "dots", "dots_no_batch", "dots_no_ffn_in"])
def test_remat_changes_nothing_numerically(policy):
    cfg = TINY.replace(sharing="ffn")
    ids, mask, types = batch()
    p = init(AlbertForPreTraining(cfg), ids, mask, types)

    def loss(params, c):
        out = AlbertForPreTraining(c).apply({"params": params}, ids, mask, types)
        return out["mlm_logits"].mean() + out["sop_logits"].mean()

    g0 = jax.grad(loss)(p, cfg)
    g1 = jax.grad(loss)(p, cfg.replace(remat_policy=policy))
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-6), g0, g1)


def test_bf16_compute_with_f32_params():
    cfg = TINY.replace(dtype="bfloat16")
    ids, mask, types = batch()
    p = init(AlbertForPreTraining(cfg), ids, mask, types)
    assert all(x.dtype == jnp.float32 for x in jax.tree.leaves(p))
    out = AlbertForPreTraining(cfg).apply({"params": p}, ids, mask, types)
    assert out["sequence_output"].dtype == jnp.bfloat16
    ref = AlbertForPreTraining(TINY).apply({"params": p}, ids, mask, types)
    np.testing.assert_allclose(np.asarray(out["mlm_logits"], np.float32), ref["mlm_logits"], atol=0.1)
    grads = jax.grad(lambda q: AlbertForPreTraining(cfg).apply({"params": q}, ids, mask, types)["mlm_logits"]
                     .astype(jnp.float32).mean())(p)
    assert all(g.dtype == jnp.float32 and np.isfinite(g).all() for g in jax.tree.leaves(grads))


def test_mlm_head_is_tied_and_gathers_positions():
    ids, mask, types = batch()
    model = AlbertForPreTraining(TINY)
    p = init(model, ids, mask, types)
    assert "decoder" not in p["predictions"]  # the decoder is the word table itself
    positions = jnp.asarray([[1, 3, 5], [0, 2, 7]])
    full = model.apply({"params": p}, ids, mask, types)["mlm_logits"]
    some = model.apply({"params": p}, ids, mask, types, masked_lm_positions=positions)["mlm_logits"]
    np.testing.assert_allclose(some, np.take_along_axis(np.asarray(full), np.asarray(positions)[..., None], 1),
                               atol=1e-5)
    # Changing the word table changes the MLM logits: the tie is real.
    p2 = jax.tree.map(lambda a: a, p)
    p2["albert"]["embeddings"]["word_embeddings"]["embedding"] = p["albert"]["embeddings"]["word_embeddings"][
        "embedding"] * 2
    assert np.abs(np.asarray(model.apply({"params": p2}, ids, mask, types)["mlm_logits"]) - full).max() > 1e-3


def test_downstream_heads_shapes():
    ids, mask, types = batch()
    for model, shape in ((AlbertForSequenceClassification(TINY, num_labels=3), (B, 3)),
                         (AlbertForSequenceClassification(TINY, num_labels=1), (B, 1)),
                         (AlbertForTokenClassification(TINY, num_labels=5), (B, S, 5))):
        p = init(model, ids, mask, types)
        assert model.apply({"params": p}, ids, mask, types).shape == shape
    qa = AlbertForQuestionAnswering(TINY)
    start, end = qa.apply({"params": init(qa, ids, mask, types)}, ids, mask, types)
    assert start.shape == end.shape == (B, S)
    mc = AlbertForMultipleChoice(TINY)
    ids4 = jnp.stack([ids] * 4, 1)
    assert mc.apply({"params": init(mc, ids4)}, ids4).shape == (B, 4)


def test_squad_v2_head_train_and_inference_agree():
    ids, mask, types = batch()
    model = AlbertForSquadV2(TINY, start_n_top=3)
    p_mask = jnp.zeros((B, S)).at[:, :3].set(1)
    p = init(model, ids, mask, types, p_mask, jnp.asarray([4, 5]))
    infer = model.apply({"params": p}, ids, mask, types, p_mask)
    assert infer["end_logits"].shape == (B, 3, S) and infer["cls_logits"].shape == (B,)
    assert (infer["start_logits"][:, :3] < -1e29).all()  # masked positions can't start an answer
    top = np.asarray(infer["top_starts"])
    train = model.apply({"params": p}, ids, mask, types, p_mask, jnp.asarray(top[:, 0]))
    np.testing.assert_allclose(train["end_logits"], infer["end_logits"][:, 0], atol=1e-5)


def test_sequence_longer_than_positions_is_a_clear_error():
    model = AlbertModel(TINY)
    ids = jnp.ones((1, TINY.max_position_embeddings + 1), jnp.int32)
    with pytest.raises(ValueError, match="max_position_embeddings=128"):
        model.init(jax.random.PRNGKey(0), ids)
