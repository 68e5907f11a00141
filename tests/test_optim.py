"""The official ALBERT optimizers against a hand computation in numpy (float64), written from albert.md §2.4."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from albert_jax.training import optim

B1, B2, EPS, WD = 0.9, 0.999, 1e-6, 0.01


def _params_and_grads(grad_scale):
    rng = np.random.default_rng(0)
    params = {
        "encoder": {
            "attention": {"query": {"kernel": rng.normal(size=(4, 3)), "bias": rng.normal(size=(3,))}},
            "ffn_norm": {"scale": rng.normal(size=(3,)), "bias": rng.normal(size=(3,))},
            "LayerNorm_0": {"weird": rng.normal(size=(2,))},  # excluded by the module name, like TF "LayerNorm/..."
        },
        "cls": {"output_bias": rng.normal(size=(5,)), "dense": {"kernel": rng.normal(size=(3, 5))}},
    }
    grads = jax.tree.map(lambda p: grad_scale * rng.normal(size=p.shape), params)
    return params, grads


# Written out by hand, independently of the library's predicate.
DECAYED = {"encoder/attention/query/kernel", "cls/dense/kernel"}


def _flat(tree, prefix=""):
    out = {}
    for k, v in tree.items():
        name = f"{prefix}/{k}" if prefix else k
        out.update(_flat(v, name) if isinstance(v, dict) else {name: np.asarray(v, np.float64)})
    return out


def _reference_step(params, grads, lr, lamb):
    """One official step from zero slots: clip to global norm 1, m/v with no bias correction, decay, trust ratio."""
    p, g = _flat(params), _flat(grads)
    gnorm = np.sqrt(sum(np.sum(x ** 2) for x in g.values()))
    g = {k: x * 1.0 / max(gnorm, 1.0) for k, x in g.items()}
    new = {}
    for k in p:
        m = (1 - B1) * g[k]
        v = (1 - B2) * g[k] ** 2
        update = m / (np.sqrt(v) + EPS)
        if k in DECAYED:
            update = update + WD * p[k]
        ratio = 1.0
        if lamb and k in DECAYED:
            w_norm, u_norm = np.linalg.norm(p[k]), np.linalg.norm(update)
            ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
        new[k] = p[k] - ratio * lr * update
    return new, gnorm


def _apply(tx, params, grads):
    params = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), params)
    grads = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), grads)
    state = tx.init(params)
    updates, state = tx.update(grads, state, params)
    new_params = jax.tree.map(lambda p, u: np.asarray(p + u), params, updates)
    return _flat(new_params), state


@pytest.mark.parametrize("name", ["lamb", "adamw"])
@pytest.mark.parametrize("grad_scale", [10.0, 0.01])  # global norm well above 1 (clipped) and well below (not)
def test_one_step_matches_hand_computation(name, grad_scale):
    params, grads = _params_and_grads(grad_scale)
    lr = 1e-3
    # No warmup: the LR at step 0 is the poly-decayed value lr * (1 - 0/100) = lr.
    tx = optim.make_optimizer(name, lr, num_train_steps=100, num_warmup_steps=0)
    got, _ = _apply(tx, params, grads)
    want, gnorm = _reference_step(params, grads, lr, lamb=(name == "lamb"))
    assert (gnorm > 1.0) == (grad_scale > 1.0)
    assert got.keys() == want.keys()
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=2e-5, atol=1e-7, err_msg=k)


def test_lamb_trust_ratio_actually_differs_from_adamw():
    params, grads = _params_and_grads(10.0)
    lamb, _ = _apply(optim.make_optimizer("lamb", 1e-3, 100, 0), params, grads)
    adamw, _ = _apply(optim.make_optimizer("adamw", 1e-3, 100, 0), params, grads)
    assert not np.allclose(lamb["cls/dense/kernel"], adamw["cls/dense/kernel"])
    np.testing.assert_allclose(lamb["encoder/ffn_norm/scale"], adamw["encoder/ffn_norm/scale"], rtol=1e-6)


def test_decay_mask_names():
    excluded = ["encoder/ffn_norm/scale", "encoder/attention_norm/bias", "embeddings/LayerNorm/scale",
                "x/layer_norm/w", "cls/predictions/output_bias", "LayerNorm_0/anything"]
    decayed = ["encoder/attention/query/kernel", "embeddings/word_embeddings/embedding", "cls/dense/kernel",
               "encoder/scale_proj/kernel"]  # "scale" excludes only as the exact leaf name
    assert not any(optim.default_decay_mask(p) for p in excluded)
    assert all(optim.default_decay_mask(p) for p in decayed)


def test_zero_norm_trust_ratio_is_one():
    # w = 0 (decay adds nothing): LAMB must equal AdamW, not 0 or NaN.
    params = {"kernel": np.zeros((3, 2)), "b": {"kernel": np.ones((2,))}}
    grads = {"kernel": np.full((3, 2), 0.05), "b": {"kernel": np.zeros((2,))}}  # zero grad -> zero update
    lamb, _ = _apply(optim.make_optimizer("lamb", 1e-3, 100, 0), params, grads)
    adamw, _ = _apply(optim.make_optimizer("adamw", 1e-3, 100, 0, weight_decay=0.0), params, grads)
    for k in lamb:
        assert np.all(np.isfinite(lamb[k])), k
    np.testing.assert_allclose(lamb["kernel"], adamw["kernel"], rtol=1e-6)
    np.testing.assert_allclose(lamb["kernel"], -1e-3 * 0.1 * 0.05 / (np.sqrt(0.001) * 0.05 + EPS), rtol=1e-5)
    # The zero-gradient leaf: update = wd * w only, ||w|| / ||wd * w|| = 1/wd scales it to exactly lr * w.
    np.testing.assert_allclose(lamb["b/kernel"], 1.0 - 1e-3 * 1.0, rtol=1e-6)


def test_no_bias_correction_first_step_magnitude():
    # Bias-corrected Adam's first step is lr * sign(g); the official one is lr * 0.1 / sqrt(0.001) = 3.162 lr.
    params = {"kernel": np.zeros((4,))}
    grads = {"kernel": np.array([1e-3, -2e-3, 0.5, -0.3])}
    got, state = _apply(optim.make_optimizer("adamw", 1e-2, 100, 0, weight_decay=0.0, clip_norm=None), params, grads)
    g = grads["kernel"]
    np.testing.assert_allclose(got["kernel"], -1e-2 * 0.1 * g / (np.sqrt(0.001) * np.abs(g) + EPS), rtol=1e-5)
    # For |g| >> eps the step is ~3.16 lr (eps costs ~1e-4 relative here), far from bias-corrected Adam's 1.0 lr.
    np.testing.assert_allclose(np.abs(got["kernel"][2:]), 1e-2 * 0.1 / np.sqrt(0.001), rtol=1e-3)
    assert np.all(np.abs(got["kernel"][2:]) > 3.1 * 1e-2)
    (adam_state,) = [s for s in state if isinstance(s, optim.ScaleByAdamNoBiasCorrectionState)]
    np.testing.assert_allclose(adam_state.mu["kernel"], 0.1 * g, rtol=1e-6)
    np.testing.assert_allclose(adam_state.nu["kernel"], 0.001 * g ** 2, rtol=1e-5)


def _official_lr(step, init_lr, total, warmup, start=0, power=1.0):
    decayed = init_lr * (1 - min(step, total) / total) ** power
    if warmup and step - start < warmup:
        return init_lr * (step - start) / warmup
    return decayed


@pytest.mark.parametrize("power", [1.0, 0.5])
def test_schedule_matches_official_formula(power):
    init, total, warmup = 0.00176, 1000, 100
    sched = optim.make_schedule(init, total, warmup, poly_power=power)
    for step in [0, 1, 50, 99, 100, 101, 500, 999, 1000, 1500]:
        np.testing.assert_allclose(float(sched(step)), _official_lr(step, init, total, warmup, power=power),
                                   rtol=1e-6, atol=init * 1e-6, err_msg=f"step {step}")  # float32, as in TF
    assert float(sched(0)) == 0.0
    # The official discontinuity: the first post-warmup LR is the decayed value, not init_lr.
    np.testing.assert_allclose(float(sched(100)), init * 0.9 ** power, rtol=1e-6)


def test_schedule_start_warmup_step():
    sched = optim.make_schedule(1.0, 1000, 100, start_warmup_step=400)
    for step in [400, 450, 499, 500, 800]:
        np.testing.assert_allclose(float(sched(step)), _official_lr(step, 1.0, 1000, 100, start=400), rtol=1e-6)
    assert float(sched(10)) == 0.0  # officially negative; guarded (documented)


def test_schedule_drives_optimizer_steps():
    # Step 0 of a warmup run has LR 0: params do not move; step 1 uses lr / warmup.
    params = {"kernel": np.ones((2,))}
    grads = {"kernel": np.array([0.3, -0.4])}
    tx = optim.make_optimizer("adamw", 1.0, 100, 10, weight_decay=0.0)
    p = jax.tree.map(jnp.asarray, params)
    state = tx.init(p)
    u0, state = tx.update(jax.tree.map(jnp.asarray, grads), state, p)
    np.testing.assert_array_equal(np.asarray(u0["kernel"]), 0.0)
    u1, _ = tx.update(jax.tree.map(jnp.asarray, grads), state, p)
    m = 0.1 * 0.9 * np.array([0.3, -0.4]) + 0.1 * np.array([0.3, -0.4])
    v = 0.001 * 0.999 * np.array([0.09, 0.16]) + 0.001 * np.array([0.09, 0.16])
    np.testing.assert_allclose(np.asarray(u1["kernel"]), -0.1 * m / (np.sqrt(v) + EPS), rtol=1e-5)


def test_frozen_params_get_no_update_and_no_norm_share():
    params = {"embeddings": {"kernel": np.ones((3,))}, "head": {"kernel": np.ones((2,))}}
    grads = {"embeddings": {"kernel": np.full((3,), 100.0)}, "head": {"kernel": np.array([0.3, 0.4])}}
    tx = optim.make_optimizer("adamw", 1e-3, 100, 0, weight_decay=0.0,
                              frozen_fn=lambda path: path.startswith("embeddings"))
    got, _ = _apply(tx, params, grads)
    np.testing.assert_array_equal(got["embeddings/kernel"], 1.0)
    # ||head grad|| = 0.5 < 1: with the frozen gradient counted it would have been clipped by ~1/173.
    g = np.array([0.3, 0.4])
    np.testing.assert_allclose(got["head/kernel"], 1 - 1e-3 * 0.1 * g / (np.sqrt(0.001) * g + EPS), rtol=1e-6)


def test_stacked_layers_get_per_layer_trust_ratio():
    class Stacked(nn.Module):
        @nn.compact
        def __call__(self, x):
            init = nn.with_logical_partitioning(nn.initializers.normal(1.0), ("layers", "embed", "mlp"))
            return self.param("kernel", init, (2, 3, 4))

    boxed = Stacked().init(jax.random.key(0), None)
    stacked_fn = optim.stacked_axes_from_boxed(boxed)
    assert stacked_fn("params/kernel") == 1
    params = nn.meta.unbox(boxed)
    w = np.asarray(params["params"]["kernel"], np.float64)
    w[1] *= 10.0  # layers with different norms: one whole-array ratio cannot serve both
    params = {"params": {"kernel": w}}
    grads = {"params": {"kernel": np.full((2, 3, 4), 1e-3)}}
    got, _ = _apply(optim.make_optimizer("lamb", 1e-3, 100, 0, stacked_axes_fn=stacked_fn), params, grads)
    for layer in range(2):
        update = 0.1 * 1e-3 / (np.sqrt(0.001) * 1e-3 + EPS) + WD * w[layer]
        ratio = np.linalg.norm(w[layer]) / np.linalg.norm(update)
        np.testing.assert_allclose(got["params/kernel"][layer], w[layer] - 1e-3 * ratio * update, rtol=1e-5)


def test_presets_and_errors():
    spec = optim.PAPER_PRETRAINING
    assert (spec.name, spec.learning_rate, spec.num_warmup_steps, spec.num_train_steps) == \
        ("lamb", 0.00176, 3125, 125_000)
    np.testing.assert_allclose(float(spec.schedule()(3125)), 0.00176 * (1 - 3125 / 125_000), rtol=1e-6)
    from albert_jax.tasks.protocol import protocol
    mnli = protocol("MNLI")  # Table 14's row, with the official AdamW
    assert (mnli.learning_rate, mnli.batch_size, mnli.num_train_steps, mnli.warmup_steps) == (3e-5, 128, 10000, 1000)
    assert optim.official_finetuning(mnli.learning_rate, mnli.num_train_steps, mnli.warmup_steps) == \
        optim.OptimizerSpec("adamw", 3e-5, 10000, 1000)
    spec.build()  # builds
    with pytest.raises(ValueError, match="'sgd'.*lamb, adamw"):
        optim.make_optimizer("sgd", 1e-3, 10, 0)
    with pytest.raises(ValueError, match="num_train_steps"):
        optim.make_schedule(1e-3, 0, 0)
    with pytest.raises(ValueError, match="no Table 14 row 'imdb'"):
        protocol("imdb")


def test_jit_compatible():
    params, grads = _params_and_grads(1.0)
    params = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), params)
    grads = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), grads)
    tx = optim.PAPER_PRETRAINING.build()
    state = tx.init(params)
    eager, _ = tx.update(grads, state, params)
    jitted, _ = jax.jit(tx.update)(grads, state, params)
    for a, b in zip(jax.tree.leaves(eager), jax.tree.leaves(jitted)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12)


# Tiny ALBERT trees for the stacked-axes tests; E != H so the projection kernel is there too.
TINY_ALBERT = dict(vocab_size=20, embedding_size=6, hidden_size=8, num_attention_heads=2, intermediate_size=12,
                   num_hidden_layers=4, max_position_embeddings=8)


@pytest.mark.parametrize("overrides, stacks", [
    # config changes -> the leading axes, by hand, that index separate official TF variables under encoder/<part>
    (dict(inner_group_num=2), {"shared": ("inner",)}),  # no groups axis: 'inner' comes first
    (dict(num_hidden_groups=2, inner_group_num=2), {"shared": ("groups", "inner")}),
    (dict(sharing="attention", inner_group_num=2), {"shared": ("inner",), "layers": ("layers", "inner")}),
    (dict(num_hidden_groups=2), {"shared": ("groups",)}),  # groups only: the behaviour before 'inner' counted
    (dict(sharing="none"), {"layers": ("layers",)}),
    # sharing_map: each parameter set is its own variable, as a group is (LAMB ratio per set).
    (dict(sharing_map="0.1.1.0"), {"shared": ("sets",)}),
    (dict(sharing="ffn", sharing_map="0x2.1x2", inner_group_num=2),
     {"shared": ("sets", "inner"), "layers": ("layers", "inner")}),
], ids=["inner2", "groups2_inner2", "attention_inner2", "groups2", "none", "map", "map_ffn_inner2"])
def test_model_stacks_get_one_trust_ratio_per_official_variable(overrides, stacks):
    """One LAMB step on a real model tree: every (group/layer, inner block) slice is scaled by its own ||w||/||u||.

    Officially each `group_g/inner_group_k/...` (and each layer's own variable) is a separate TF variable with its
    own trust ratio; here they are slices of one array, so the ratio must be computed per slice.
    """
    from flax import traverse_util

    from albert_jax.config import AlbertConfig
    from albert_jax.modeling import AlbertModel

    cfg = AlbertConfig(**TINY_ALBERT, **overrides)
    sizes = {"groups": cfg.num_hidden_groups, "layers": cfg.num_hidden_layers, "inner": cfg.inner_group_num,
             "sets": cfg.num_shared_sets}
    boxed = jax.eval_shape(AlbertModel(cfg).init, jax.random.key(0), jnp.zeros((1, 4), jnp.int32))["params"]
    stacked_fn = optim.stacked_axes_from_boxed(boxed)
    shapes = {"/".join(k): v.shape for k, v in traverse_util.flatten_dict(nn.meta.unbox(boxed)).items()}

    rng = np.random.default_rng(0)
    n_stack, params, grads = {}, {}, {}
    for path, shape in shapes.items():
        parts = path.split("/")
        lead = stacks.get(parts[1], ()) if parts[0] == "encoder" else ()
        assert shape[: len(lead)] == tuple(sizes[a] for a in lead), path
        assert stacked_fn(path) == len(lead), path
        n_stack[path] = len(lead)
        # Slices with clearly different norms (x1, x4, x7, ...): one whole-array ratio cannot serve them all.
        scale = 1.0 + 3.0 * np.arange(int(np.prod(shape[: len(lead)])))
        params[path] = rng.normal(size=shape) * scale.reshape(shape[: len(lead)] + (1,) * (len(shape) - len(lead)))
        grads[path] = 1e-3 * rng.normal(size=shape)
    assert any(n_stack.values())

    lr = 1e-3  # no warmup: the LR at step 0 is lr * (1 - 0/100) = lr
    tx = optim.make_optimizer("lamb", lr, 100, 0, stacked_axes_fn=stacked_fn)
    p32 = traverse_util.unflatten_dict({tuple(k.split("/")): jnp.asarray(v, jnp.float32) for k, v in params.items()})
    g32 = traverse_util.unflatten_dict({tuple(k.split("/")): jnp.asarray(v, jnp.float32) for k, v in grads.items()})
    updates, _ = tx.update(g32, tx.init(p32), p32)
    got = {"/".join(k): np.asarray(v, np.float64) for k, v in traverse_util.flatten_dict(updates).items()}

    # The hand computation, in float64, one official variable (slice) at a time.
    gnorm = np.sqrt(sum(np.sum(g ** 2) for g in grads.values()))
    spread_checked = False
    for path, w in params.items():
        g = grads[path] / max(gnorm, 1.0)
        update = 0.1 * g / (np.sqrt(0.001 * g ** 2) + EPS)
        decayed = "LayerNorm" not in path and path.rsplit("/", 1)[-1] not in ("bias", "scale")
        want, ratios = np.empty_like(update), []
        for idx in np.ndindex(*w.shape[: n_stack[path]]):  # () once for an unstacked leaf: the whole array
            u = update[idx] + (WD * w[idx] if decayed else 0.0)
            ratios.append(np.linalg.norm(w[idx]) / np.linalg.norm(u) if decayed else 1.0)
            want[idx] = -lr * ratios[-1] * u
        np.testing.assert_allclose(got[path], want, rtol=1e-5, atol=1e-12, err_msg=path)
        if decayed and n_stack[path]:
            # The slices' ratios really differ, so a coarser (per-group or whole-array) ratio would fail above.
            assert max(ratios) / min(ratios) > 2.0, path
            spread_checked = True
    assert spread_checked


def test_stacked_axes_count_inner_after_groups_or_first():
    """Only the leading run of stack names counts; 'inner' after a non-stack axis is not a stack axis."""
    class Boxes(nn.Module):
        @nn.compact
        def __call__(self):
            def param(name, names, shape):
                return self.param(name, nn.with_logical_partitioning(nn.initializers.zeros, names), shape)

            param("gi", ("groups", "inner", "hidden"), (2, 2, 3))
            param("li", ("layers", "inner", "hidden"), (4, 2, 3))
            param("i", ("inner", "hidden"), (2, 3))
            param("late", ("hidden", "inner"), (3, 2))
            param("plain", ("vocab", "embed"), (5, 3))

    fn = optim.stacked_axes_from_boxed(jax.eval_shape(Boxes().init, jax.random.key(0))["params"])
    assert [fn(k) for k in ("gi", "li", "i", "late", "plain")] == [2, 2, 1, 0, 0]
    with pytest.raises(KeyError, match="absent"):  # an unknown path is refused, not taken as 0 stacked axes
        fn("absent")
    # The old behaviour is still available by naming the axes explicitly.
    old = optim.stacked_axes_from_boxed(jax.eval_shape(Boxes().init, jax.random.key(0))["params"], ("layers", "groups"))
    assert [old(k) for k in ("gi", "li", "i")] == [1, 1, 0]


@pytest.mark.parametrize("sharing", ["all", "attention", "ffn", "none"])
def test_every_encoder_layer_leaf_of_the_real_model_gets_its_own_trust_ratio(sharing):
    """The optimizer's lookup on the real model tree: every `encoder/layers/*` leaf of a per-layer part is read with
    its stacked axis (one LAMB trust ratio per layer), every path the optimizer visits is known to it, and a shared
    part has none (one ratio, as the official single variable)."""
    from albert_jax.config import preset
    from albert_jax.tasks.pretraining.task import PretrainingTask
    from albert_jax.training import state as st

    cfg = preset("tiny", vocab_size=64, embedding_size=16, hidden_size=32, num_hidden_layers=3,
                 num_attention_heads=2, intermediate_size=64, max_position_embeddings=32, sharing=sharing)
    boxed = st.abstract_params(PretrainingTask(), cfg)
    fn = optim.stacked_axes_from_boxed(boxed)
    seen = {}

    def visit(path, leaf):
        seen[optim.path_to_str(path)] = (fn(optim.path_to_str(path)), leaf.shape)  # raises on an unknown path
    jax.tree_util.tree_map_with_path(visit, nn.unbox(boxed))
    layer_leaves = {p: v for p, v in seen.items() if "/encoder/layers/" in p}
    for path, (n_stack, shape) in layer_leaves.items():
        assert n_stack == 1 and shape[0] == 3, (path, n_stack, shape)  # one trust ratio per layer
    per_layer = {"all": set(), "attention": {"ffn"}, "ffn": {"attention"}, "none": {"attention", "ffn"}}[sharing]
    assert {p.split("/encoder/layers/")[1].split("/")[0] for p in layer_leaves} == per_layer
    shared = {p: v for p, v in seen.items() if "/encoder/shared/" in p}
    assert {p.split("/encoder/shared/")[1].split("/")[0] for p in shared} == {"attention", "ffn"} - per_layer
    assert all(n == 0 for n, _ in shared.values())  # a shared part is one variable: one ratio
