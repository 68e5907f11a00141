"""init_from_group0 and warm starts: the new model computes what the source model computes."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from albert_jax.config import preset
from albert_jax.modeling.init_tricks import InitError, init_from_group0, warm_start_deeper
from albert_jax.modeling import AlbertForPreTraining

SRC = preset("tiny", num_hidden_layers=4)
IDS = jnp.asarray(np.random.default_rng(0).integers(5, 500, (2, 10)), jnp.int32)


def init(cfg):
    return nn.unbox(AlbertForPreTraining(cfg).init(jax.random.PRNGKey(0), IDS)["params"])


def logits(cfg, p):
    return np.asarray(AlbertForPreTraining(cfg).apply({"params": p}, IDS)["mlm_logits"])


@pytest.mark.parametrize("overrides", [dict(sharing="none"), dict(sharing="attention"), dict(sharing="ffn"),
                                       dict(num_hidden_groups=2), dict(num_hidden_groups=4, inner_group_num=1)])
def test_init_from_group0_reproduces_the_shared_model(overrides):
    src = init(SRC)
    dst_cfg = SRC.replace(**overrides)
    dst = init_from_group0(src, SRC, dst_cfg)
    assert jax.tree.structure(dst) == jax.tree.structure(init(dst_cfg))
    np.testing.assert_allclose(logits(dst_cfg, dst), logits(SRC, src), atol=1e-5)


def test_warm_start_deeper_stacks_the_shallow_layers():
    small = SRC.replace(sharing="none", num_hidden_layers=2)
    deep = small.replace(num_hidden_layers=4)
    src = init(small)
    dst = warm_start_deeper(src, small, deep)
    k = dst["albert"]["encoder"]["layers"]["attention"]["query"]["kernel"]
    np.testing.assert_array_equal(k[2], src["albert"]["encoder"]["layers"]["attention"]["query"]["kernel"][0])
    assert jax.tree.structure(dst) == jax.tree.structure(init(deep))


def test_warm_start_all_shared_is_a_copy_that_runs_deeper():
    deep = SRC.replace(num_hidden_layers=8)
    src = init(SRC)
    dst = warm_start_deeper(src, SRC, deep)
    jax.tree.map(np.testing.assert_array_equal, dst, src)
    assert np.isfinite(logits(deep, dst)).all()


def test_mismatched_models_are_refused():
    with pytest.raises(InitError, match="hidden_size: 32 vs 64"):
        init_from_group0(init(SRC), SRC, SRC.replace(hidden_size=64, intermediate_size=128))
    with pytest.raises(InitError, match="fewer than the source"):
        warm_start_deeper(init(SRC), SRC, SRC.replace(num_hidden_layers=2))
