"""SentencePiece tokenization: the official recipe, preprocessing, digit-comma rule, word starts, HF parity."""
import json
import pickle
from pathlib import Path

import pytest
import sentencepiece as spm

from albert_jax.data import tokenization

FIXTURE = Path(__file__).parent / "fixtures" / "sotu_sample.txt"
VOCAB = 3000


@pytest.fixture(scope="session")
def tok(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("spm") / "sotu"
    return tokenization.train_tokenizer(prefix, files=[FIXTURE], vocab_size=VOCAB, seed=0)


def real_sentences():
    return [s for s in FIXTURE.read_text(encoding="utf-8").splitlines() if s.strip()]


def test_special_ids_and_sidecar(tok):
    assert tok.vocab_size == VOCAB
    assert [tok.id_to_piece(i) for i in range(5)] == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)
    for sym in tokenization.USER_DEFINED_SYMBOLS:  # user-defined symbols are always whole pieces
        assert tok.piece_to_id(sym) > 4
    ids = [i for s in real_sentences()[:200] for i in tok.encode(s)]
    assert min(ids) >= 1 and not {0, 2, 3, 4} & set(ids)  # control symbols never come out of text
    sidecar = json.loads(Path(tok.name).with_suffix(".json").read_text())
    assert sidecar["lower"] is True and sidecar["keep_accents"] is False
    again = pickle.loads(pickle.dumps(tok))
    assert again.encode("The Union is strong.") == tok.encode("The Union is strong.")


def test_preprocess_text():
    assert tokenization.preprocess_text("  Naïve \t Guaidó\n said  ") == "naive guaido said"
    assert tokenization.preprocess_text("Naïve Guaidó", lower=False) == "Naive Guaido"
    assert tokenization.preprocess_text("Naïve", keep_accents=True, lower=False) == "Naïve"
    assert tokenization.preprocess_text("ﬁne Ｆｕｌｌ") == "fine full"  # NFKD folds compatibility forms
    assert tokenization.preprocess_text("``Yes,'' he said") == '"yes," he said'
    assert tokenization.preprocess_text("``Yes,''", normalize_quotes=False) == "``yes,''"
    assert tokenization.preprocess_text("a  b", remove_space=False) == "a  b"


def test_lower_and_accents_reach_ids(tok):
    assert tok.encode("THE UNION") == tok.encode("the union")
    assert tok.encode("Guaidó") == tok.encode("guaido")
    cased = tokenization.Tokenizer(tok.model_proto, lower=False)
    assert cased.encode("THE UNION") != tok.encode("the union")


def test_digit_comma_rule(tok):
    raw_split = 0
    for s in real_sentences() + ["In 1990, we spent $3,000, and 25, 30, 45,"]:
        text = tok.preprocess(s)
        raw = tok.sp.encode(text, out_type=str)
        pieces = tok.encode_pieces(s)
        assert not any(len(p) > 1 and p[-1] == "," and p[-2].isdigit() for p in pieces)
        assert "".join(pieces) == "".join(raw)  # the rule re-splits, it never changes the text
        assert tok.encode(s) == [tok.piece_to_id(p) for p in pieces]
        raw_split += any(len(p) > 1 and p[-1] == "," and p[-2].isdigit() for p in raw)
    assert raw_split > 0, "no digit-comma piece in the test text: the rule was never exercised"


def test_word_start_rule():
    for piece in ["▁the", "▁", "<unk>", ".", "(", "3", "90", "é", "'s", "中", "国人", "▁中国", "ño", "İ"]:
        assert tokenization.is_word_start(piece), piece
    for piece in ["ing", "ed", "ION", ").", "s-", "x$"]:
        assert not tokenization.is_word_start(piece), piece


def test_cjk_characters_are_words(tmp_path):
    # A model that keeps CJK characters: each CJK piece starts a word, so masking never splits or joins them.
    lines = real_sentences()[:600] + ["我们 爱 北京 天安门", "中华 人民 共和国 成立 了", "北京 是 中国 的 首都"] * 30
    tok = tokenization.train_tokenizer(tmp_path / "cjk", sentences=lines, vocab_size=1500, seed=0)
    pieces = tok.encode_pieces("中国的首都是北京")
    assert pieces and all(tokenization.is_word_start(p) for p in pieces)
    ids = tok.encode("中国的首都是北京")
    assert tokenization.UNK_ID not in ids and len(ids) >= 4  # the characters are in the vocab, not one unknown span
    assert all(tok.word_start[i] for i in ids)


def test_word_start_table(tok):
    assert len(tok.word_start) == tok.vocab_size
    for i in range(tok.vocab_size):
        assert tok.word_start[i] == tokenization.is_word_start(tok.id_to_piece(i))
    assert 0.05 < 1 - tok.word_start.mean() < 0.8  # the vocab really has continuation pieces


def test_ids_match_hf_albert_tokenizer(tok):
    from transformers import AlbertTokenizer
    hf = AlbertTokenizer(tok.name, do_lower_case=True)
    sents = real_sentences() + ["In 1990, we spent $3,000, naïve Guaidó: ``hi'' 中国人", "  tabs\tand  spaces "]
    mismatched = [s for s in sents if tok.encode(s) != hf(s, add_special_tokens=False)["input_ids"]]
    assert not mismatched, mismatched[:3]
    a, b = tok.encode(sents[0]), tok.encode(sents[1])
    assert hf(sents[0], sents[1])["input_ids"] == [2] + a + [3] + b + [3]
    assert hf.convert_tokens_to_ids(["[CLS]", "[SEP]", "[MASK]", "<pad>", "<unk>"]) == [2, 3, 4, 0, 1]


def test_vocab_mismatch_error(tok):
    tokenization.check_vocab_matches(tok, VOCAB)
    tokenization.check_vocab_matches(tok, VOCAB + 48, allow_padding=True)
    with pytest.raises(ValueError, match=rf"{VOCAB} pieces.*vocab_size=30000") as e:
        tokenization.check_vocab_matches(tok, 30000)
    assert tok.name in str(e.value)
    with pytest.raises(ValueError):
        tokenization.check_vocab_matches(tok, VOCAB - 1, allow_padding=True)


def test_corpus_too_small_error(tmp_path):
    with pytest.raises(tokenization.CorpusTooSmallError,
                       match=r"sotu_sample.txt is too small for vocab_size=30000.*<= \d+.*hard_vocab_limit=False"):
        tokenization.train_tokenizer(tmp_path / "big", files=[FIXTURE], vocab_size=30000)
    small = tokenization.train_tokenizer(tmp_path / "soft", files=[FIXTURE], vocab_size=30000, hard_vocab_limit=False)
    assert 1000 < small.vocab_size < 30000


def test_non_albert_model_is_refused(tmp_path):
    spm.SentencePieceTrainer.train(sentence_iterator=iter(real_sentences()), model_prefix=str(tmp_path / "plain"),
                                   vocab_size=500, minloglevel=2)
    with pytest.raises(ValueError, match=r"plain.model: ids 0-4 are \('<unk>', '<s>', '</s>'"):
        tokenization.Tokenizer.load(tmp_path / "plain.model")
    with pytest.raises(FileNotFoundError, match="nope.model"):
        tokenization.Tokenizer.load(tmp_path / "nope.model")


def test_training_input_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        tokenization.train_tokenizer(tmp_path / "m", files=[tmp_path / "missing.txt"], vocab_size=100)
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("first line\nsecond line\nna\xefve caf\xe9\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.txt:3: not valid UTF-8"):
        tokenization.train_tokenizer(tmp_path / "m", files=[bad], vocab_size=100)


def test_cli_train_and_encode(tmp_path, capsys):
    from albert_jax.main import main
    prefix = tmp_path / "cli"
    assert main(["tokenizer", "train", "--input", str(FIXTURE), "--model-prefix", str(prefix),
                 "--vocab-size", "1000", "--no-lower"]) == 0
    assert json.loads(prefix.with_suffix(".json").read_text())["lower"] is False
    capsys.readouterr()
    assert main(["tokenizer", "encode", "--model", f"{prefix}.model", "--text", "The Union", "--pieces"]) == 0
    assert capsys.readouterr().out.split() == ["▁The", "▁Union"]
    assert main(["tokenizer", "train", "--input", str(FIXTURE), "--model-prefix", str(prefix),
                 "--vocab-size", "30000"]) == 2
    assert "too small" in capsys.readouterr().err


def test_a_file_that_is_not_a_model_and_an_empty_corpus_are_one_line_errors(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello world\n")
    with pytest.raises(ValueError, match=r"notes.txt: not a SentencePiece model"):
        tokenization.Tokenizer.load(text)
    empty, blank = tmp_path / "empty.txt", tmp_path / "blank.txt"
    empty.write_text("")
    blank.write_text("\n\n   \n")
    with pytest.raises(ValueError, match=r"empty.txt: empty; a tokenizer is trained on text"):
        tokenization.train_tokenizer(tmp_path / "m", files=[empty], vocab_size=100)
    with pytest.raises(ValueError, match=r"blank.txt: no sentence left to train on"):
        tokenization.train_tokenizer(tmp_path / "m", files=[blank], vocab_size=100)
    assert not (tmp_path / "m.model").exists()
