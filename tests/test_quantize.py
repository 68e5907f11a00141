"""int8 post-training quantization with qwix (albert_jax/compression): the injectable matmul leaves float32
unchanged, quantized products stay within int8 resolution, the checkpoint really holds int8 (about 4x smaller
kernels), and `albert-jax quantize` on a real (tiny) fine-tuned run writes results.json; bad workdirs are one line.

Tolerances come from the int8 grid: absmax scaling puts every value within half a step (scale / 2, scale =
absmax / 127) of its int8 point, so a product's error is bounded by |x| . s_w/2 (+ s_x/2 . |w_hat| with int8
activations), computed here from the arrays themselves."""
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import pytest
from flax import linen as nn

from albert_jax import sharding as shd
from albert_jax.compression import quantize
from albert_jax.compression.run import finetuned_run
from albert_jax.configs.loader import load_config
from albert_jax.configs.overrides import apply_overrides
from albert_jax.main import main
from albert_jax.modeling import layers
from albert_jax.runs import finetune as ft
from albert_jax.tasks.registry import make_task
from albert_jax.training import checkpoints as ckpt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests/fixtures/sotu_sample.txt")
EQS = {"dense": ("...i,io->...o", (3, 5, 32), (32, 24)), "qkv": ("blh,hnd->blnd", (3, 5, 32), (32, 2, 16)),
       "attention output": ("blnd,ndh->blh", (3, 5, 2, 16), (2, 16, 32))}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A real tiny fine-tuning run: rt_sentiment from random init (attention shared, FFN per layer), 6 steps."""
    from albert_jax.data.tokenization import train_tokenizer

    base = tmp_path_factory.mktemp("q")
    train_tokenizer(str(base / "spm"), files=[FIXTURE], vocab_size=300, seed=0)
    c = load_config("experiments/finetune.py:task=rt_sentiment,init=random,scale=smoke")
    apply_overrides(c, ["train.num_train_steps=6", "train.eval_every=3", "train.checkpoint_every=6",
                        "train.log_every=3", "train.batch_size=16", "data.limit=64", "data.max_seq_length=32",
                        f"data.tokenizer={base / 'spm.model'}", "model.embedding_size=16", "model.hidden_size=32",
                        "model.num_hidden_layers=2", "model.num_attention_heads=2", "model.intermediate_size=64",
                        "model.sharing=attention", "train.learning_rate=1e-3"])
    ft.finetune(c, str(base / "ft"))
    return base / "ft"


@pytest.fixture(scope="module")
def loaded(run):
    src = ft.resolve_init(str(run / "seed-0"))
    task = make_task(src.task["name"])
    params = {"albert": src.encoder(), **src.head()}
    return task, src.model_cfg, params


def _forward(task, cfg, params, batch):
    mesh = shd.make_mesh()
    with jax.set_mesh(mesh), nn.logical_axis_rules(shd.AXIS_RULES):
        return np.asarray(jax.jit(lambda p, b: task.apply(task.model(cfg), p, b, None, True))(params, batch))


def _batch(cfg, n=16, seq=32, seed=0):
    ids = np.random.default_rng(seed).integers(5, cfg.vocab_size, (n, seq)).astype(np.int32)
    return {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids),
            "label": np.zeros(n, np.int32)}


def _absmax_scale(a, reduce_axes):
    return np.max(np.abs(a), axis=reduce_axes, keepdims=True) / 127.0


@pytest.mark.parametrize("name", list(EQS))
def test_float_path_is_the_same_product(name):
    """layers.project on a float kernel is exactly the jnp.einsum/jnp.dot it replaced: same jaxpr, same bits."""
    eq, xs, ws = EQS[name]
    rng = np.random.default_rng(1)
    x, w = jnp.asarray(rng.normal(size=xs), jnp.float32), jnp.asarray(rng.normal(size=ws), jnp.float32)
    before = (lambda x, w: jnp.dot(x, w)) if name == "dense" else (lambda x, w: jnp.einsum(eq, x, w))
    after = lambda x, w: layers.project(eq, x, w, jnp.float32)  # noqa: E731
    assert str(jax.make_jaxpr(after)(x, w)) == str(jax.make_jaxpr(before)(x, w))
    np.testing.assert_array_equal(np.asarray(jax.jit(after)(x, w)), np.asarray(jax.jit(before)(x, w)))


@pytest.mark.parametrize("activations", ["float32", "int8"])
@pytest.mark.parametrize("name", list(EQS))
def test_quantized_product_within_int8_resolution(name, activations):
    eq, xs, ws = EQS[name]
    rng = np.random.default_rng(2)
    x, w = rng.normal(size=xs).astype(np.float32), (0.05 * rng.normal(size=ws)).astype(np.float32)
    contract_w = (0,) if name != "attention output" else (0, 1)  # the kernel axes the einsum sums over
    how = {("k",): {"rule": quantize.default_rules(activations)[0], "einsum": eq, "tiled_axes": {},
                    "channelwise_axes": tuple(a for a in range(w.ndim) if a not in contract_w)}}
    qw = quantize.quantize_params({"k": w}, how)["k"]
    assert isinstance(qw, quantize.QuantizedWeight) and qw.weight.qvalue.dtype == jnp.int8
    w_hat = np.asarray(quantize.dequantized({"k": qw})["k"])
    sw = _absmax_scale(w, contract_w)
    assert np.all(np.abs(w_hat - w) <= sw / 2 * (1 + 1e-5))  # every weight on its int8 grid point
    got = np.asarray(layers.project(eq, jnp.asarray(x), qw, jnp.float32))
    want = np.einsum(eq, x.astype(np.float64), w.astype(np.float64))
    bound = np.einsum(eq, np.abs(x), np.broadcast_to(sw / 2, w.shape))
    if activations == "int8":
        contract_x = tuple(range(x.ndim - len(contract_w), x.ndim))
        sx = _absmax_scale(x, contract_x)
        bound = bound + np.einsum(eq, np.broadcast_to(sx / 2, x.shape), np.abs(w_hat))
    f32 = 1e-6 * np.einsum(eq, np.abs(x), np.abs(w))  # float32 accumulation
    assert np.all(np.abs(got - want) <= bound + f32)
    assert np.abs(got - want).max() > np.abs(np.einsum(eq, x, w) - want).max()  # really quantized, not float


def test_weight_only_model_is_the_float_model_on_the_int8_grid(loaded):
    """Every kernel reaches the matmul and is quantized per channel (per layer where stacked); weight-only int8
    outputs equal the float model run with the dequantized kernels."""
    task, cfg, params = loaded
    how = quantize.plan(task, cfg, quantize.default_rules())
    kernels = {quantize._keys(p) for p, _ in jax.tree_util.tree_leaves_with_path(params) if quantize._is_kernel(p)}
    assert set(how) == kernels  # none escaped the injectable matmul
    q = quantize.quantize_params(params, how)
    ffn = q["albert"]["encoder"]["layers"]["ffn"]["intermediate"]["kernel"].weight  # stacked [L, H, I]
    assert ffn.qvalue.shape == (2, 32, 64) and ffn.scale.shape == (2, 1, 64)
    batch = _batch(cfg)
    f32 = _forward(task, cfg, params, batch)
    q8 = _forward(task, cfg, q, batch)
    grid = _forward(task, cfg, quantize.dequantized(q), batch)
    np.testing.assert_allclose(q8, grid, rtol=1e-5, atol=1e-6)
    assert not np.array_equal(q8, f32)
    # The unrolled encoder reads the same quantized tree and computes the same thing.
    np.testing.assert_allclose(_forward(task, cfg.replace(scan_layers=False), q, batch), q8, rtol=1e-5, atol=1e-6)


def test_int8_activations_multiply_int8_by_int8(loaded):
    task, cfg, params = loaded
    batch = _batch(cfg)
    for acts, int_dots in (("float32", False), ("int8", True)):
        q = quantize.quantize_params(params, quantize.plan(task, cfg, quantize.default_rules(acts)))
        with jax.set_mesh(shd.make_mesh()), nn.logical_axis_rules(shd.AXIS_RULES):
            text = str(jax.make_jaxpr(lambda p: task.apply(task.model(cfg), p, batch, None, True))(q))
        assert ("preferred_element_type=int32" in text) == int_dots


def test_cli_checkpoint_results_and_load(run, tmp_path, capsys):
    out = tmp_path / "q8"
    assert main(["quantize", "--workdir", str(run), "--out", str(out), "--activations", "int8", "--repeats", "3",
                 "--log-level", "WARNING"]) == 0
    printed = json.loads(capsys.readouterr().out)
    r = json.loads((out / "results.json").read_text())
    assert printed["delta_points"] == r["delta_points"] and r["source"]["seed"] == 0
    assert r["float32_reproduces_run"] is True  # our float32 scoring is the fine-tuning run's own
    assert r["float32"]["dev"]["examples"] == r["int8"]["dev"]["examples"] == 64
    assert r["quantization"]["activations"] == "int8"
    assert all(v > 0 for v in r["throughput"]["examples_per_second"].values())
    # The saved checkpoint, read without any target tree: int8 values, float32 scales, no float kernels left.
    flat = _flatten(ocp.StandardCheckpointer().metadata(str(out / "checkpoint")).item_metadata.tree)
    kernels = {k for k in flat if "kernel" in k.split("/")}
    assert kernels and all(k.endswith(("/weight/qvalue", "/weight/scale")) for k in kernels)
    assert all(flat[k].dtype == np.int8 for k in kernels if k.endswith("qvalue"))
    assert all(flat[k].dtype == np.float32 for k in kernels if k.endswith("scale"))
    n = sum(int(np.prod(flat[k].shape)) for k in kernels if k.endswith("qvalue"))
    s = sum(int(np.prod(flat[k].shape)) for k in kernels if k.endswith("scale"))
    assert r["bytes"]["kernels"] == {"float32": 4 * n, "int8": n + 4 * s, "ratio": round(4 * n / (n + 4 * s), 3)}
    assert 3.5 < r["bytes"]["kernels"]["ratio"] < 4  # 4x, less the per-channel scales
    # On disk: the checkpoint directory as written, less the manifest. Which of the two is smaller is not asserted:
    # in this tiny model each array's metadata and orbax's data-file layout (which varies from save to save)
    # outweigh the kernels, and the int8 tree has two arrays for every kernel (107,477 against 95,393 bytes once).
    disk = r["bytes"]["checkpoint_on_disk"]
    assert disk["int8"] == (quantize.dir_bytes(str(out / "checkpoint"))
                            - os.path.getsize(out / "checkpoint" / ckpt.MANIFEST))
    assert disk["float32"] > r["bytes"]["params"]["float32"] // 2
    assert disk["ratio"] == round(disk["float32"] / disk["int8"], 3)
    # Loaded back (verified against its manifest), it is the tree quantizing the run gives, and computes the same.
    task, cfg, q = quantize.load(str(out))
    src = ft.resolve_init(str(run / "seed-0"))
    again = quantize.quantize_params({"albert": src.encoder(), **src.head()},
                                     quantize.plan(task, cfg, quantize.default_rules("int8")))
    assert jax.tree.structure(q) == jax.tree.structure(again)
    for a, b in zip(jax.tree.leaves(q), jax.tree.leaves(again)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    batch = _batch(cfg)
    np.testing.assert_array_equal(_forward(task, cfg, q, batch), _forward(task, cfg, again, batch))
    with open(out / "checkpoint" / "d" / os.listdir(out / "checkpoint" / "d")[0], "r+b") as f:
        f.seek(0)
        f.write(b"\0\0\0\0")
    with pytest.raises(ValueError, match="is damaged"):
        quantize.load(str(out))


def _flatten(tree, prefix=()):
    if not isinstance(tree, dict):
        return {"/".join(prefix): tree}
    return {k2: v2 for k, v in tree.items() if v is not None for k2, v2 in _flatten(v, prefix + (k,)).items()}


def test_bad_workdirs_are_one_line(run, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "unfinished" / "seed-0").mkdir(parents=True)
    cases = [(tmp_path / "nope", [], "no such directory"), (tmp_path / "empty", [], "is neither a run"),
             (run, ["--seed", "7"], "has no seed-7/"), (tmp_path / "unfinished", [], "no seed has finished")]
    for wd, extra, message in cases:
        assert main(["quantize", "--workdir", str(wd), "--out", str(tmp_path / "o"), *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    assert finetuned_run(str(run)).seed == 0  # a parent workdir: its best seed by dev score (here the only one)
