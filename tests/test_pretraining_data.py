"""Pretraining examples on real text (State of the Union sample): segment pairs, masking statistics, streaming."""
import itertools
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from albert_jax.data.tokenization import CLS_ID, MASK_ID, SEP_ID, train_tokenizer
from albert_jax.tasks.pretraining import instances

FIXTURE = Path(__file__).parent / "fixtures" / "sotu_sample.txt"
L, P = 128, 20


@pytest.fixture(scope="session")
def tok(tmp_path_factory):
    return train_tokenizer(tmp_path_factory.mktemp("spm") / "sotu", files=[FIXTURE], vocab_size=3000, seed=0)


@pytest.fixture(scope="session")
def docs(tok):
    return list(instances.read_documents(FIXTURE, tok))


@pytest.fixture(scope="session")
def static(tok, docs):
    """~2000 statically masked SOP instances at max_seq_length 128."""
    cfg = instances.PretrainingConfig(max_seq_length=L, max_predictions_per_seq=P, dupe_factor=4)
    return list(instances.create_instances(docs, cfg, tok.word_start, np.random.default_rng(0)))


def segments(rec):
    n = int(rec["input_mask"].sum())
    ids = rec["input_ids"][:n]
    sep = int(np.flatnonzero(ids == SEP_ID)[0])
    return ids[1:sep], ids[sep + 1:n - 1]


def test_record_layout(static):
    assert len(static) > 1500
    for rec in static[:300]:
        assert list(rec) == list(instances.FEATURES)
        for name in instances.FEATURES[:4]:
            assert rec[name].shape == (L,) and rec[name].dtype == np.int32
        assert rec["masked_lm_positions"].shape == rec["masked_lm_ids"].shape == (P,)
        assert rec["masked_lm_weights"].dtype == np.float32 and rec["next_sentence_labels"].shape == ()
        n = int(rec["input_mask"].sum())
        assert rec["input_mask"][:n].all() and not rec["input_mask"][n:].any()
        assert rec["input_ids"][0] == CLS_ID and rec["input_ids"][n - 1] == SEP_ID
        assert (rec["input_ids"][:n] == SEP_ID).sum() == 2 and not rec["input_ids"][n:].any()
        sep = int(np.flatnonzero(rec["input_ids"] == SEP_ID)[0])
        assert 1 < sep < n - 2  # A and B both non-empty
        assert not rec["segment_ids"][:sep + 1].any() and rec["segment_ids"][sep + 1:n].all()
        assert not rec["segment_ids"][n:].any() and not rec["token_boundary"][n:].any()
        assert rec["token_boundary"][[0, sep, n - 1]].all()


def test_masking_rate_and_specials_never_masked(static):
    ratios, masked, total = [], 0, 0
    for rec in static:
        n = int(rec["input_mask"].sum())
        k = int(rec["masked_lm_weights"].sum())
        want = min(P, max(1, round(n * 0.15)))
        assert 1 <= k <= want
        pos = rec["masked_lm_positions"][:k]
        assert (np.diff(pos) > 0).all() and (pos < n).all() and not rec["masked_lm_positions"][k:].any()
        assert not np.isin(rec["masked_lm_ids"][:k], [0, CLS_ID, SEP_ID, MASK_ID]).any()
        ids = rec["input_ids"]
        assert ids[0] == CLS_ID and (ids[:n] == SEP_ID).sum() == 2 and not ids[n:].any()
        ratios.append(k / want)
        masked, total = masked + k, total + n
    assert np.mean(ratios) > 0.97  # the budget is nearly always filled (overlaps can leave it short)
    assert 0.13 < masked / total < 0.155  # 15% of tokens; round() and the cap of 20 pull it slightly down


def test_whole_words_are_masked_together(static):
    multi_word_spans = 0
    for rec in static:
        n = int(rec["input_mask"].sum())
        k = int(rec["masked_lm_weights"].sum())
        masked = np.zeros(n, bool)
        masked[rec["masked_lm_positions"][:k]] = True
        tb = rec["token_boundary"][:n]
        special = np.isin(rec["input_ids"][:n], [CLS_ID, SEP_ID])
        for i in range(1, n):  # a continuation piece is masked iff the piece before it is
            if not tb[i] and not special[i] and not special[i - 1]:
                assert masked[i] == masked[i - 1]
        starts = np.flatnonzero(masked & (tb == 1) & ~special)
        multi_word_spans += int(np.sum(masked[starts[1:]] & np.isin(starts[1:] - 1, np.flatnonzero(masked))))
    assert multi_word_spans > 100  # n-grams of 2-3 words do occur


def test_ngram_length_distribution(tok, docs):
    # Measure the drawn n-gram length in words, only on draws where neither the prediction budget nor the end of
    # the segment could have shortened it; that condition is known before n is drawn, so it does not bias n.
    # ~6000 eligible draws: the standard error of each frequency is <= 0.0065; tolerance 0.03 is ~4.5 sigma.
    cfg = instances.PretrainingConfig(max_seq_length=L, dupe_factor=2, masking="dynamic")
    trace = []
    rng = np.random.default_rng(1)
    for rec in itertools.islice(instances.create_instances(docs, cfg, tok.word_start, rng), 1200):
        instances.mask_record(rec, rng, vocab_size=tok.vocab_size, trace=trace)
    eligible = np.array([n for n, ok in trace if ok])
    assert len(eligible) > 4000
    freq = np.bincount(eligible, minlength=4)[1:] / len(eligible)
    np.testing.assert_allclose(freq, [6 / 11, 3 / 11, 2 / 11], atol=0.03)
    longer = instances.mask_record  # favor_shorter_ngram=False reverses p(n)
    trace = []
    for rec in itertools.islice(instances.create_instances(docs, cfg, tok.word_start, rng), 300):
        longer(rec, rng, vocab_size=tok.vocab_size, favor_shorter_ngram=False, trace=trace)
    freq = np.bincount([n for n, ok in trace if ok], minlength=4)[1:]
    assert freq[2] > freq[1] > freq[0]


def test_80_10_10(static, tok):
    kinds = Counter()
    for rec in static:
        k = int(rec["masked_lm_weights"].sum())
        now = rec["input_ids"][rec["masked_lm_positions"][:k]]
        orig = rec["masked_lm_ids"][:k]
        kinds["mask"] += int((now == MASK_ID).sum())
        kinds["same"] += int((now == orig).sum())
        rand = now[(now != MASK_ID) & (now != orig)]
        kinds["random"] += len(rand)
        assert (rand >= 5).all() and (rand < tok.vocab_size).all()
    total = sum(kinds.values())
    assert total > 30000
    # binomial standard errors ~0.002; tolerance 0.01. A random id equal to the original counts as "same" (1/3000).
    assert abs(kinds["mask"] / total - 0.8) < 0.01
    assert abs(kinds["same"] / total - 0.1) < 0.01 and abs(kinds["random"] / total - 0.1) < 0.01


def doc_order_ok(doc, first, second):
    """Whether `first` occurs in `doc` before `second` (within 2*L tokens). Segments are compared as bytes."""
    stream = np.concatenate(doc).astype("<i4").tobytes()
    def where(seg):
        b, out, i = seg.astype("<i4").tobytes(), [], -1
        while (i := stream.find(b, i + 1)) != -1:
            if i % 4 == 0:
                out.append(i // 4)
        return out
    return any(0 <= p2 - (p1 + len(first)) <= 2 * L for p1 in where(first) for p2 in where(second))


@pytest.mark.parametrize("task", ["sop", "nsp"])
def test_pair_labels(tok, docs, task):
    cfg = instances.PretrainingConfig(max_seq_length=L, task=task, masking="dynamic")
    rng = np.random.default_rng(2)
    reservoir = instances.DocumentReservoir(100)
    for i, d in enumerate(docs):
        reservoir.add(i, d, rng)
    labels, checked = [], 0
    for i, doc in enumerate(docs):
        for _ in range(3):
            for rec in instances.instances_from_document(doc, rng, cfg, tok.word_start, doc_id=i, others=reservoir):
                a, b = segments(rec)
                label = int(rec["next_sentence_labels"])
                labels.append(label)
                if len(a) < 8 or len(b) < 8:
                    continue
                checked += 1
                if task == "sop":  # label 1: the record holds the reversed pair, so B comes first in the text
                    assert doc_order_ok(doc, *((b, a) if label else (a, b)))
                elif label:  # NSP negative: B is from another document
                    assert not doc_order_ok(doc, a, b) and not doc_order_ok(doc, b, a)
                else:
                    assert doc_order_ok(doc, a, b)
    assert checked > 1000
    # ~1500 pairs, standard error 0.013; NSP runs a little above 0.5 because one-sentence chunks are always
    # negatives there (official behaviour).
    assert abs(np.mean(labels) - 0.5) < 0.05 if task == "sop" else 0.47 < np.mean(labels) < 0.6


def test_short_sequences(tok, docs):
    # One target length per document pass (official). With a full target every chunk but the last fills all
    # max_seq_length slots, so a pass with a shorter non-final record certainly had a short target.
    def short_fraction(p):
        cfg = instances.PretrainingConfig(max_seq_length=L, short_seq_prob=p, masking="dynamic")
        rng, shorts, passes = np.random.default_rng(3), 0, 0
        for doc in docs:
            for _ in range(40):
                recs = instances.instances_from_document(doc, rng, cfg, tok.word_start)
                shorts += any(r["input_mask"].sum() < L for r in recs[:-1])
                passes += 1
        return shorts / passes
    assert short_fraction(0.0) == 0
    assert 0.06 < short_fraction(0.1) < 0.14  # 640 passes: standard error 0.012
    assert short_fraction(1.0) > 0.8


def test_seeded_and_reproducible(tok, docs):
    cfg = instances.PretrainingConfig(max_seq_length=L, dupe_factor=1)
    run = lambda seed: list(instances.create_instances(docs[:4], cfg, tok.word_start, np.random.default_rng(seed)))
    a, b, c = run(7), run(7), run(8)
    assert len(a) == len(b) and all(np.array_equal(x[k], y[k]) for x, y in zip(a, b) for k in instances.FEATURES)
    assert any(not np.array_equal(x["input_ids"], y["input_ids"]) for x, y in zip(a, c))
    np.random.seed(0)  # global numpy state must not matter (the official n-gram draw used it)
    d = run(7)
    np.random.seed(1)
    e = run(7)
    assert all(np.array_equal(x["input_ids"], y["input_ids"]) for x, y in zip(d, e))


def test_truncation_matches_official_rule():
    def official_counts(la, lb, max_tokens):  # the official loop, counting removals per side
        while la + lb > max_tokens:
            if la > lb:
                la -= 1
            else:
                lb -= 1
        return la, lb
    rng = np.random.default_rng(4)
    fronts = 0
    for _ in range(2000):
        la, lb, m = (int(x) for x in rng.integers(1, 300, 3))
        a, b = np.arange(la), np.arange(1000, 1000 + lb)
        ta, tb = instances.truncate_seq_pair(a, b, m, rng)
        assert (len(ta), len(tb)) == official_counts(la, lb, m)
        for t, s in ((ta, a), (tb, b)):
            assert len(t) == 0 or np.array_equal(t, s[t[0] - s[0]:t[0] - s[0] + len(t)])  # a contiguous slice
        fronts += len(ta) > 0 and ta[0] != a[0]
    assert fronts > 200  # fronts are cut too, not only backs


def test_single_sentence_chunks(tok, docs):
    one_sentence = [[s] for d in docs[:3] for s in d[:40]]
    split = instances.PretrainingConfig(max_seq_length=L, masking="dynamic")
    rng = np.random.default_rng(5)
    res = instances.DocumentReservoir(1000)
    for i, d in enumerate(one_sentence):
        res.add(i, d, rng)
    labels = []
    for i, doc in enumerate(one_sentence):
        for rec in instances.instances_from_document(doc, rng, split, tok.word_start, doc_id=i, others=res):
            a, b = segments(rec)
            whole = np.concatenate((b, a) if rec["next_sentence_labels"] else (a, b))
            assert np.array_equal(whole, doc[0][:len(whole)]) or len(doc[0]) > L - 3  # split, not replaced
            labels.append(int(rec["next_sentence_labels"]))
    assert 0.35 < np.mean(labels) < 0.65
    official = instances.PretrainingConfig(max_seq_length=L, masking="dynamic", single_sentence="random_document")
    for i, doc in enumerate(one_sentence[:30]):
        for rec in instances.instances_from_document(doc, rng, official, tok.word_start, doc_id=i, others=res):
            assert rec["next_sentence_labels"] == 1  # albert#234: a random-document B, labelled 1
            a, b = segments(rec)
            assert np.array_equal(a, doc[0][:len(a)]) or len(doc[0]) > L // 2


def test_memory_is_bounded(tok):
    # An endless corpus: if creation held the corpus (or more than its buffer), it could never yield.
    pulled = 0
    def endless():
        nonlocal pulled
        for d in itertools.count():
            pulled += 1
            yield [np.full(30, 5 + d % 2000, np.int32), np.full(30, 5 + d % 2000, np.int32)]
    cfg = instances.PretrainingConfig(max_seq_length=64, task="nsp", nsp_buffer_docs=50, dupe_factor=2)
    seen = 0
    records = instances.create_instances(endless(), cfg, tok.word_start, np.random.default_rng(6))
    for rec in itertools.islice(records, 3000):
        seen = max(seen, int(rec["input_ids"][1]) - 5)  # each document's tokens hold its number
        assert pulled <= seen + 1 + 50 + 1  # documents processed + lookahead buffer
    assert seen > 500
    res, rng = instances.DocumentReservoir(10), np.random.default_rng(0)
    for i in range(5000):
        res.add(i, [np.array([i])], rng)
    assert len(res) == 10 and np.mean(res.ids) > 1000  # a sample of the whole stream, not the first 10
    assert res.sample_other(res.ids[0], rng) is not res.docs[0]


def test_record_roundtrip(static):
    for rec in static[:50]:
        back = instances.decode_record(instances.encode_record(rec))
        assert all(np.array_equal(back[k], rec[k]) and back[k].dtype == rec[k].dtype for k in instances.FEATURES)
    assert len(instances.encode_record(static[0])) < 4 * L * 2  # compact: not four padded int32 arrays
    with pytest.raises(ValueError, match="not an albert_jax pretraining record"):
        instances.decode_record(b"\0" * 40)


def split_fixture(tmp_path, parts=3):
    docs = FIXTURE.read_text(encoding="utf-8").strip().split("\n\n")
    paths = []
    for i in range(parts):
        p = tmp_path / f"in{i}.txt"
        p.write_text("\n\n".join(docs[i::parts]) + "\n", encoding="utf-8")
        paths.append(p)
    return paths


def test_workers_give_identical_shards(tmp_path, tok):
    inputs = split_fixture(tmp_path)
    cfg = instances.PretrainingConfig(max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2, task="nsp",
                              nsp_buffer_docs=3)
    one = instances.create_pretraining_data(inputs, tok, tmp_path / "w1", cfg, seed=3, workers=1, records_per_file=150)
    two = instances.create_pretraining_data(inputs, tok, tmp_path / "w2", cfg, seed=3, workers=2, records_per_file=150)
    assert one["shards"] == two["shards"] and one["totals"]["instances"] > 500
    p1, p2 = instances.shard_paths(tmp_path / "w1"), instances.shard_paths(tmp_path / "w2")
    assert Path(p1[0]).name == "part-00000-of-00003-0000.array_record" and len(p1) == one["totals"]["files"] > 3
    assert sum(1 for p in p1 for _ in instances.read_records(p)) == one["totals"]["instances"]
    for a, b in zip(p1, p2):
        ra, rb = list(instances.read_records(a)), list(instances.read_records(b))
        assert len(ra) == len(rb) > 0
        assert all(np.array_equal(x[k], y[k]) for x, y in zip(ra, rb) for k in instances.FEATURES)
    assert not [p for p in (tmp_path / "w2").iterdir() if "tmp" in p.name]  # nothing half-written left
    summary = json.loads((tmp_path / "w1" / "pretraining_data.json").read_text())
    assert summary["config"]["task"] == "nsp" and summary["totals"]["documents"] == 16


def test_dynamic_masking_with_grain(tmp_path, tok):
    import grain
    cfg = instances.PretrainingConfig(max_seq_length=64, max_predictions_per_seq=10, dupe_factor=1, masking="dynamic")
    instances.create_pretraining_data(split_fixture(tmp_path, 1), tok, tmp_path / "out", cfg, seed=0)
    source = grain.sources.ArrayRecordDataSource(instances.shard_paths(tmp_path / "out"))
    first = instances.decode_record(source[0])
    assert not first["masked_lm_weights"].any() and MASK_ID not in first["input_ids"]
    masking = instances.DynamicMasking(tok.vocab_size, max_predictions_per_seq=10)
    def epochs(seed):
        ds = grain.MapDataset.source(source).map(instances.decode_record).repeat(2).random_map(masking, seed=seed)
        return ds[0], ds[len(source)]  # the same record in epoch 1 and epoch 2
    e1, e2 = epochs(0)
    again, _ = epochs(0)
    assert np.array_equal(e1["input_ids"], again["input_ids"])  # reproducible
    assert not np.array_equal(e1["masked_lm_positions"], e2["masked_lm_positions"])  # re-drawn per epoch
    for rec in (e1, e2):
        k = int(rec["masked_lm_weights"].sum())
        assert k == min(10, max(1, round(rec["input_mask"].sum() * 0.15)))
        assert np.array_equal(rec["masked_lm_ids"][:k], first["input_ids"][rec["masked_lm_positions"][:k]])


def test_bad_inputs(tmp_path, tok, capsys):
    cfg = instances.PretrainingConfig(max_seq_length=64, dupe_factor=1)
    good = split_fixture(tmp_path, 1)[0]
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        instances.create_pretraining_data([good, tmp_path / "missing.txt"], tok, tmp_path / "o1", cfg)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    s = instances.create_pretraining_data([good, empty], tok, tmp_path / "o2", cfg)
    assert s["totals"]["empty_files"] == 1 and s["shards"][1]["instances"] == 0
    assert "empty.txt is empty" in capsys.readouterr().err
    with pytest.raises(ValueError, match="no pretraining instances"):
        instances.create_pretraining_data([empty], tok, tmp_path / "o3", cfg)
    assert not (tmp_path / "o3").exists()  # not even the directory (nor the empty 128 KiB shard) it made
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"One sentence.\nAnother one.\n\nCaf\xe9 au lait.\n")
    with pytest.raises(ValueError, match=r"bad.txt:4: not valid UTF-8"):
        instances.create_pretraining_data([bad], tok, tmp_path / "o4", cfg)
    assert not (tmp_path / "o4").exists()  # no shard, complete or partial
    for workers in (1, 2):  # the good file's finished shard goes too: a failed create leaves no half dataset
        out = tmp_path / f"o4-{workers}"
        with pytest.raises(ValueError, match=r"bad.txt:4: not valid UTF-8"):
            instances.create_pretraining_data([good, bad], tok, out, cfg, workers=workers)
        assert not out.exists()
    (tmp_path / "mine").mkdir()  # a directory the user made stays, empty
    with pytest.raises(ValueError, match="no pretraining instances"):
        instances.create_pretraining_data([empty], tok, tmp_path / "mine", cfg)
    assert (tmp_path / "mine").is_dir()
    huge = tmp_path / "huge.txt"
    with open(huge, "w") as f:
        f.write("A first sentence here.\nA second sentence here.\n" + "word " * 2_000_000 + "\nA last one.\n")
    s = instances.create_pretraining_data([huge], tok, tmp_path / "o5", cfg)
    assert s["totals"]["long_lines_skipped"] == 1 and s["totals"]["documents"] == 2  # the line ends a document
    assert "huge.txt: skipped 1 line(s)" in capsys.readouterr().err
    single = tmp_path / "single.txt"
    single.write_text("Only one sentence in this document.\n\nAnd one more, alone.\n\nA third.\n")
    s = instances.create_pretraining_data([single], tok, tmp_path / "o6", cfg)
    assert s["totals"]["one_sentence_documents"] == 3 and s["totals"]["instances"] == 3


def test_config_errors():
    with pytest.raises(ValueError, match=r"task='mlm'; allowed: \('sop', 'nsp', 'none'\)"):
        instances.PretrainingConfig(task="mlm")
    with pytest.raises(ValueError, match="max_seq_length=3"):
        instances.PretrainingConfig(max_seq_length=3)


def test_cli_create(tmp_path, tok, capsys):
    from albert_jax.main import main
    out = tmp_path / "cli"
    assert main(["pretraining-data", "create", "--input", str(FIXTURE), "--spm-model", tok.name, "--output-dir",
                 str(out), "--max-seq-length", "64", "--max-predictions", "10", "--dupe-factor", "1",
                 "--task", "none", "--workers", "1"]) == 0
    recs = list(instances.read_records(instances.shard_paths(out)[0]))
    assert len(recs) > 500 and not any(r["next_sentence_labels"] for r in recs)
    assert all(r["masked_lm_weights"].sum() >= 1 for r in recs)
    assert main(["pretraining-data", "create", "--input", str(tmp_path / "nope.txt"), "--spm-model", tok.name,
                 "--output-dir", str(out)]) == 2
    assert "nope.txt does not exist" in capsys.readouterr().err


def test_eval_set_smaller_than_a_batch_is_measured_whole(tmp_path, tok):
    """A small corpus's validation split can hold fewer instances than one batch: every instance is still
    evaluated once (padded rows carry weight 0), instead of the run failing at its first evaluation."""
    from albert_jax.tasks.pretraining.input import PretrainData

    cfg = instances.PretrainingConfig(max_seq_length=64, max_predictions_per_seq=10, dupe_factor=1, task="sop")
    instances.create_pretraining_data(split_fixture(tmp_path, 1), tok, tmp_path / "eval", cfg, seed=0)
    shards = instances.shard_paths(tmp_path / "eval")
    n = sum(1 for p in shards for _ in instances.read_records(p))
    data = PretrainData(tok, shards, {"sop": shards}, "static", {}, {})
    kept = len(data.eval_order("sop"))  # balanced: as many swapped as unswapped pairs
    labels = np.array([int(r["next_sentence_labels"]) for p in shards for r in instances.read_records(p)])
    assert kept == 2 * min((labels == 0).sum(), (labels == 1).sum()) and kept > n // 2
    batches = list(data.eval_iterator("sop", n + 5, None))
    assert len(batches) == 1 and batches[0]["input_ids"].shape[0] == n + 5
    w = batches[0]["example_weight"]
    assert w.sum() == kept and (batches[0]["example_index"] >= 0).sum() == kept
    assert batches[0]["next_sentence_labels"].reshape(-1)[w > 0].sum() == kept // 2  # chance is 50%


def test_balanced_order_keeps_the_rarer_labels_count_of_each_in_a_seeded_order():
    from albert_jax.tasks.pretraining.input import balanced_order

    labels = np.array([1, 1, 1, 0, 1, 0, 1, 1])  # 6 ones, 2 zeros -> 2 of each
    order = balanced_order(labels, seed=3)
    assert sorted(labels[order].tolist()) == [0, 0, 1, 1]
    assert set(np.flatnonzero(labels == 0)) <= set(order.tolist())  # every example of the rarer label is kept
    assert (order == balanced_order(labels, seed=3)).all() and len(set(order.tolist())) == 4
    assert any((balanced_order(labels, seed=s) != order).any() for s in range(4, 10))  # the seed chooses
    with pytest.raises(ValueError, match="only label"):
        balanced_order(np.ones(5, int), seed=0)


_CONCURRENT_PREPARE = """
import hashlib, json, sys, time
from pathlib import Path
from albert_jax.configs.loader import load_config
from albert_jax.tasks.pretraining import input as pretrain_input
me, other = sys.argv[1:]
config = load_config("experiments/pretrain.py:scale=smoke")
config.data.max_docs = 60  # the race is the point, not the size (the smoke scale reads 100)
config.data.vocab_size = 1000
Path(me).touch()
while not Path(other).exists():  # both processes are past their imports: they start preparing together
    time.sleep(0.01)
data = pretrain_input.prepare(config)
files = data.train_shards + [p for s in data.eval_shards.values() for p in s]
print(json.dumps({"tokenizer": hashlib.sha256(data.tokenizer.model_proto).hexdigest(),
                  "shards": [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in files]}))
"""


def test_two_processes_preparing_one_corpus_at_once_get_the_same_data(tmp_path):
    # Two sweeps started together on a fresh machine prepare the same corpus: text, tokenizer and instances are
    # written under temporary names, which the two would have shared (interleaved or vanished files).
    import os
    import subprocess
    import sys

    from albert_jax.data import fetch
    fetch.fetch(log=lambda _: None)
    cache = tmp_path / "cache"
    cache.mkdir()
    # the fetched sources; everything built from them is made afresh here
    (cache / "raw").symlink_to(fetch.default_cache_dir() / "raw")
    env = {**os.environ, "ALBERT_JAX_CACHE": str(cache), "ALBERT_JAX_XLA_CACHE": "off"}
    procs = [subprocess.Popen([sys.executable, "-c", _CONCURRENT_PREPARE, str(tmp_path / f"ready{i}"),
                               str(tmp_path / f"ready{1 - i}")], env=env, cwd=Path(__file__).parents[1],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
        # the cap is said, not applied silently (a user's corpus at the smoke scale)
        assert "data.max_docs=60: each source of albert_pretrain_en keeps only its first 60 documents" in err
    first, second = (json.loads(o.strip().splitlines()[-1]) for o, _ in outs)
    assert first == second and len(first["shards"]) >= 3
    assert not list(cache.glob("pretrain/*/*.tmp*"))


def test_pretraining_runs_from_the_instances_create_wrote(tiny_pretrained, tmp_path, capsys):
    """The by-hand path of docs/training.md end to end: text -> `pretraining-data create` (train and held-out)
    -> `pretrain --set data.instances=... data.eval_instances=...`; mismatched settings are named."""
    import json as _json

    from albert_jax.main import main

    lines = (Path(__file__).parent / "fixtures" / "sotu_sample.txt").read_text(encoding="utf-8").splitlines()
    docs = ["\n".join(lines[i:i + 20]) + "\n\n" for i in range(0, len(lines), 20)]  # 20 sentences a document
    (tmp_path / "train.txt").write_text("".join(docs[:-12]), encoding="utf-8")
    (tmp_path / "heldout.txt").write_text("".join(docs[-12:]), encoding="utf-8")
    spm = str(tiny_pretrained / "spiece.model")
    for name, extra in (("train", ["--dupe-factor", "1"]), ("heldout", ["--dupe-factor", "1"])):
        assert main(["pretraining-data", "create", "--input", str(tmp_path / f"{name}.txt"), "--spm-model", spm,
                     "--output-dir", str(tmp_path / name), "--max-seq-length", "64", "--workers", "1",
                     *extra]) == 0
    capsys.readouterr()
    wd = tmp_path / "run"
    args = ["pretrain", "--workdir", str(wd), "--config", "experiments/pretrain.py:scale=smoke",
            "--set", f"data.instances={tmp_path / 'train'}", "--set", f"data.eval_instances={tmp_path / 'heldout'}",
            "--set", f"data.spm_model={spm}", "--set", "train.num_train_steps=2", "--set", "train.eval_every=2",
            "--set", "train.checkpoint_every=2", "--set", "train.eval_batches=1", "--log-level", "WARNING"]
    assert main([*args, "--set", "data.max_seq_length=128"]) == 2  # the records fix the length: named
    err = capsys.readouterr().err
    assert "holds instances with max_seq_length=64; set data.max_seq_length=64" in err, err
    assert main(args) == 0
    rows = [_json.loads(x) for x in (wd / "metrics.jsonl").read_text().splitlines()]
    assert any("eval/sop_accuracy" in r and 0 <= r["eval/sop_accuracy"] <= 1 for r in rows)
    recorded = _json.loads((wd / "config.json").read_text())
    assert str(tmp_path / "train") in _json.dumps(recorded)
