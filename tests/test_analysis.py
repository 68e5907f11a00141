"""The paper's Figure 1 analysis: per-layer L2 distance and angle between each layer's input and output, checked
against a direct numpy computation on a tiny model's hidden states; padding excluded; sentences packed from real
text; and the CLI on a tiny real pretraining run (figure, JSON, table, one-line errors)."""
import functools
import json
import os
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn
from matplotlib import image as mpimg

from albert_jax import main as cli
from albert_jax.ablations import analysis
from albert_jax.config import AlbertConfig
from albert_jax.data.tokenization import load_tokenizer
from albert_jax.modeling.model import AlbertModel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = dict(vocab_size=40, embedding_size=16, hidden_size=32, num_hidden_layers=3, num_attention_heads=2,
            intermediate_size=64, max_position_embeddings=32, initializer_range=0.2)


@functools.cache
def _model(sharing):
    cfg = AlbertConfig(**TINY, sharing=sharing)
    init = jax.jit(AlbertModel(cfg, add_pooling_layer=False).init)  # eager init is slow on a busy CPU
    return cfg, nn.unbox(init(jax.random.PRNGKey(1), jnp.zeros((1, 4), jnp.int32)))["params"]


def _hidden_states(cfg, params, batch):
    apply = jax.jit(lambda p, ids, mask: AlbertModel(cfg, add_pooling_layer=False).apply(
        {"params": p}, ids, mask, output_hidden_states=True)["hidden_states"])
    return apply(params, batch["input_ids"], batch["input_mask"])


def _batch(lengths, seq_len, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.zeros((len(lengths), seq_len), np.int32)
    mask = np.zeros_like(ids)
    for i, n in enumerate(lengths):
        ids[i, :n] = rng.integers(5, TINY["vocab_size"], n)
        mask[i, :n] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}


def _numpy_reference(cfg, params, batch):
    """Per-layer means over real tokens, straight from the model's hidden states, in float64 with arccos."""
    h = [np.asarray(x, np.float64) for x in _hidden_states(cfg, params, batch)]
    assert len(h) == cfg.num_hidden_layers + 1
    real = batch["input_mask"].astype(bool)
    ref = {"l2": [], "cosine": [], "angle_deg": []}
    for a, b in zip(h[:-1], h[1:]):
        a, b = a[real], b[real]  # [tokens, H]
        cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
        ref["l2"].append(np.linalg.norm(b - a, axis=-1).mean())
        ref["cosine"].append(cos.mean())
        ref["angle_deg"].append(np.degrees(np.arccos(np.clip(cos, -1, 1))).mean())
    return ref


@pytest.mark.parametrize("sharing", ["all", "none"])
def test_per_layer_numbers_match_numpy(sharing):
    cfg, params = _model(sharing)
    batch = _batch([12, 5, 9, 16], 16)
    got = analysis.layer_statistics(cfg, params, [batch])
    ref = _numpy_reference(cfg, params, batch)
    assert got["layers"] == [1, 2, 3] and got["tokens"] == 42 and got["sequences"] == 4
    for k in ("l2", "cosine"):
        np.testing.assert_allclose(got[k], ref[k], rtol=2e-5)
    np.testing.assert_allclose(got["angle_deg"], ref["angle_deg"], rtol=1e-4, atol=1e-3)
    assert min(got["angle_deg"]) > 1  # the layers really move their inputs: the comparison is not 0 == 0


def test_sums_accumulate_over_batches_token_weighted():
    cfg, params = _model("all")
    a, b = _batch([16, 16, 16], 16, seed=1), _batch([2], 16, seed=2)
    whole = {k: np.concatenate([a[k], b[k]]) for k in a}
    split = analysis.layer_statistics(cfg, params, [a, b])
    ref = _numpy_reference(cfg, params, whole)  # one pool of 50 tokens, not the mean of two batch means
    np.testing.assert_allclose(split["l2"], ref["l2"], rtol=2e-5)


def test_padding_is_excluded():
    cfg, params = _model("all")
    batch = _batch([12, 5, 9], 16)
    padded = {k: np.zeros((5, 30), np.int32) for k in batch}  # more pad columns, and two all-padding rows
    for k in batch:
        padded[k][:3, :16] = batch[k]
    base = analysis.layer_statistics(cfg, params, [batch])
    more = analysis.layer_statistics(cfg, params, analysis.batches_of(padded, 4))  # the last batch is filled too
    assert more["tokens"] == base["tokens"] == 26 and more["sequences"] == 3
    for k in analysis.METRICS:
        np.testing.assert_allclose(more[k], base[k], rtol=1e-5)
    # counting the pad positions would change the numbers: the test can fail
    every = analysis.transition_sums(_hidden_states(cfg, params, padded), np.ones_like(padded["input_mask"]))
    assert not np.allclose(np.asarray(every["l2"]) / float(every["tokens"]), base["l2"], rtol=1e-2)


# ---------------------------------------------------------------------------------------------------------------
# On a real (tiny) pretraining run


@pytest.fixture(scope="module")
def run(tiny_pretrained):
    return tiny_pretrained  # conftest.py: a real tiny pretraining run on the smoke English data, 2 layers, all-shared


def test_text_is_packed_from_whole_sentences_of_real_documents(run):
    tok = load_tokenizer(run)
    path = os.path.join(ROOT, "tests", "fixtures", "sotu_sample.txt")
    rows = analysis.text_inputs(tok, path, 48, 12)
    ids, mask = rows["input_ids"], rows["input_mask"]
    assert ids.shape == (12, 48) and (ids[:, 0] == tok.cls_id).all()
    n = mask.sum(1)
    assert (ids[np.arange(12), n - 1] == tok.sep_id).all() and (ids[mask == 0] == tok.pad_id).all()
    # the rows, read in order, are the file's sentences in order (nothing dropped or reordered)
    body = [t for r, k in zip(ids, n) for t in r[1:k - 1]]
    sentences = [line.strip() for line in open(path, encoding="utf-8") if line.strip()]
    expect = [t for s in sentences for t in tok.encode(s)]
    assert body == expect[:len(body)] and len(body) > 12 * 20


def test_cli_on_a_pretraining_run_and_a_random_unshared_init(run, tmp_path, capsys):
    out = tmp_path / "fig1"
    rc = cli.main(["analyze", "layers", "--init", str(run), "--init", f"random:{run}:sharing=none", "--out",
                   str(out), "--max-sequences", "24", "--batch-size", "8"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "| model | measure | L1 | L2 |" in printed and "angle (deg)" in printed
    img = mpimg.imread(out / "layers.png")
    assert img.shape[0] > 200 and img.std() > 0
    models = json.loads((out / "layers.json").read_text())["models"]
    trained, fresh = models
    assert trained["step"] == 8 and trained["sharing"] == "all" and fresh["sharing"] == "none"
    # the default text is the run's own held-out split
    assert trained["text"].endswith("validation.txt") and trained["sequences"] == 24
    for r in models:
        assert r["layers"] == [1, 2] and all(v > 0 for k in analysis.METRICS for v in r[k])
    assert not np.allclose(trained["l2"], fresh["l2"])  # the checkpoint was read, not a fresh draw
    csv_rows = (out / "layers.csv").read_text().splitlines()
    assert csv_rows[0] == "model,layer,l2,cosine,angle_deg,tokens" and len(csv_rows) == 1 + 2 * 2


def test_cli_matches_the_library_on_the_checkpoint(run, tmp_path, capsys):
    from albert_jax.runs.pretrain import params_from_workdir

    text = os.path.join(ROOT, "tests", "fixtures", "sotu_sample.txt")
    assert cli.main(["analyze", "layers", "--init", str(run), "--out", str(tmp_path), "--text", text,
                     "--max-sequences", "8", "--max-seq-length", "32", "--label", "tiny"]) == 0
    (record,) = json.loads((tmp_path / "layers.json").read_text())["models"]
    assert record["label"] == "tiny" and record["text"] == text
    _, cfg, params = params_from_workdir(str(run))
    batch = analysis.text_inputs(load_tokenizer(run), text, 32, 8)
    ref = _numpy_reference(cfg, params["albert"], batch)
    np.testing.assert_allclose(record["l2"], ref["l2"], rtol=2e-5)


def _one_line_error(capsys, argv):
    assert cli.main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(err) == 1 and err[0].startswith("albert-jax analyze: error:"), err
    return err[0]


def test_a_workdir_without_checkpoints_is_one_line(run, tmp_path, capsys):
    empty = tmp_path / "no_ckpt"
    empty.mkdir()
    for name in ("config.json", "spiece.model", "spiece.json"):
        shutil.copy(run / name, empty / name)
    for variant in ("missing", "empty"):
        if variant == "empty":
            (empty / "checkpoints").mkdir()
        msg = _one_line_error(capsys, ["analyze", "layers", "--init", str(empty), "--out", str(tmp_path / "o")])
        assert "no checkpoint" in msg and str(empty) in msg
    assert not (tmp_path / "o" / "layers.png").exists()


def test_bad_requests_are_one_line(run, tmp_path, capsys):
    out = str(tmp_path / "o")
    assert "random:W" in _one_line_error(capsys, ["analyze", "layers", "--init", "random", "--out", out])
    assert "one per --init" in _one_line_error(
        capsys, ["analyze", "layers", "--init", str(run), "--label", "a", "--label", "b", "--out", out])
    assert "no_such.txt" in _one_line_error(
        capsys, ["analyze", "layers", "--init", str(run), "--text", str(tmp_path / "no_such.txt"), "--out", out])
    assert "sharing" in _one_line_error(
        capsys, ["analyze", "layers", "--init", f"random:{run}:sharing=half", "--out", out])
