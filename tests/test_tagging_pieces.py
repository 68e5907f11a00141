"""Tagging on SentencePiece: the bare word-boundary piece "▁" never carries a word's tag (it is the same for every
word), and for Chinese (no spaces) it is not inserted between words at all."""
import numpy as np
import pytest

from albert_jax.data.tokenization import train_tokenizer
from albert_jax.tasks.classification import load_records
from albert_jax.tasks.features import text_of
from albert_jax.tasks.registry import make_task
from albert_jax.tasks.tagging import bare_boundary_id


@pytest.fixture(scope="module")
def zh(tmp_path_factory):
    train = load_records("pd_pos", "train")[:3000]
    sentences = [text_of(r, "words").replace(" ", "") for r in train]  # as the text is written: no spaces
    tok = train_tokenizer(tmp_path_factory.mktemp("spm") / "zh", sentences=sentences, vocab_size=3000,
                          character_coverage=0.98, seed=0)
    return tok, load_records("pd_pos", "validation")[:200]


def test_the_boundary_piece_is_what_one_word_alone_starts_with(zh):
    tok, records = zh
    boundary = bare_boundary_id(tok)
    assert boundary is not None
    words = [w for r in records for w in text_of(r, "words").split(" ")]
    starts = sum(tok.encode(w)[:1] == [boundary] for w in words)
    assert starts / len(words) > 0.5  # why the fix matters: most words would put their tag on the same piece


@pytest.mark.parametrize("spaced", [False, True])
def test_no_tag_sits_on_the_bare_boundary_piece(zh, spaced):
    tok, records = zh
    task = make_task("pd_pos")
    task.spaced = spaced
    f = task.featurize(records, tok, 128, "validation", training=False)
    ids, labels = np.asarray(f.arrays["input_ids"]), np.asarray(f.arrays["labels"])
    boundary = bare_boundary_id(tok)
    assert not np.any((labels >= 0) & (ids == boundary))
    kept = [len(text_of(r, "words").split(" ")) for r in records]
    untruncated = f.stats.get("truncated", 0) == 0
    if untruncated:
        assert int((labels >= 0).sum()) == sum(kept)  # one tag per word, none lost
    if not spaced:  # Chinese: the sentence carries no boundary marks between its words
        real = ids[np.asarray(f.arrays["input_mask"]) > 0]
        assert not np.any(real == boundary)
