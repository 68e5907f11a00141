"""albert_jax.tasks.squad: windows, masks, training positions, max context, v1/v2 decoding, real SentencePiece."""
import collections
import math
import zlib
from pathlib import Path

import numpy as np
import pytest

from albert_jax.tasks import squad
from albert_jax.tasks.metrics import normalize_answer

CLS, SEP, PAD = 2, 3, 0
IDS = dict(cls_id=CLS, sep_id=SEP, pad_id=PAD)
FIXTURE = Path(__file__).parent / "fixtures" / "sotu_sample.txt"


def toy_encode(text):
    """Every word -> 1..3 deterministic sub-token ids (like a WordPiece split), all >= 10."""
    ids = []
    for w in text.split():
        base = 10 + 3 * (zlib.crc32(w.encode()) % 100_000)
        ids += [base + i for i in range(1 + zlib.crc32(w[::-1].encode()) % 3)]
    return ids


def one_per_word(text):
    return [10 + zlib.crc32(w.encode()) % 100_000 for w in text.split()]


WORDS = [f"w{i}" + "a" * (i % 4) for i in range(60)]
CONTEXT = " ".join(WORDS)
QUESTION = "what is it"


def example(i=None, j=None, **kw):
    """An example whose answer is WORDS[i..j] (character offset worked out from the single-space join)."""
    ex = {"id": "e1", "question": QUESTION, "context": CONTEXT, "answers": [], "is_impossible": False}
    if i is not None:
        ex["answers"] = [{"text": " ".join(WORDS[i:j + 1]), "answer_start": len(" ".join(WORDS[:i])) + (i > 0)}]
    ex.update(kw)
    return ex


def doc_tokens():
    return [t for w in WORDS for t in toy_encode(w)]


def test_windows_cover_context_with_stride():
    stats = collections.Counter()
    feats = squad.make_features(example(), toy_encode, **IDS, max_seq_length=40, doc_stride=10, is_training=False,
                            stats=stats)
    doc, q = doc_tokens(), toy_encode(QUESTION)
    max_doc = 40 - len(q) - 3
    # Windows start every doc_stride tokens until one reaches the end: ceil((n - max_doc) / stride) + 1 of them.
    n_win = math.ceil((len(doc) - max_doc) / 10) + 1
    assert [f["window_start"] for f in feats] == [10 * k for k in range(n_win)]
    covered = set()
    for f in feats:
        s, n_ctx = f["window_start"], int((f["p_mask"] == 0).sum()) - 1  # minus [CLS]
        assert n_ctx == min(max_doc, len(doc) - s)
        ctx = f["input_ids"][len(q) + 2:len(q) + 2 + n_ctx]
        assert ctx.tolist() == doc[s:s + n_ctx]
        covered |= set(range(s, s + n_ctx))
    assert covered == set(range(len(doc)))
    # Neighbouring full windows overlap by max_doc - doc_stride tokens.
    assert all(feats[k]["window_start"] + max_doc - feats[k + 1]["window_start"] == max_doc - 10
               for k in range(n_win - 1))
    assert stats == {"windows": n_win, "split_contexts": 1}


def test_layout_masks_and_padding():
    ex = example(context="alpha beta gamma")
    (f,) = squad.make_features(ex, toy_encode, **IDS, max_seq_length=32, is_training=False)
    q, c = toy_encode(QUESTION), toy_encode("alpha beta gamma")
    real = 1 + len(q) + 1 + len(c) + 1
    assert f["input_ids"].tolist() == [CLS, *q, SEP, *c, SEP] + [PAD] * (32 - real)
    assert f["input_mask"].tolist() == [1] * real + [0] * (32 - real)
    assert f["segment_ids"].tolist() == [0] * (len(q) + 2) + [1] * (len(c) + 1) + [0] * (32 - real)
    # p_mask: 0 only where an answer may be: the context, and [CLS] (the null answer of v2).
    assert f["p_mask"].tolist() == [0] + [1] * (len(q) + 1) + [0] * len(c) + [1] * (32 - real + 1)
    words = [w for w in ("alpha", "beta", "gamma") for _ in toy_encode(w)]
    t2w = f["token_to_word"]
    assert [f["context_words"][k] for k in t2w[t2w >= 0]] == words
    assert (t2w[f["p_mask"] == 1] == -1).all() and t2w[0] == -1
    assert f["token_is_max_context"].sum() == len(c)  # a single window owns every token
    assert all(f[k].dtype == np.int32 for k in squad.ARRAY_KEYS)
    batch = squad.stack_features([f, f])
    assert batch["input_ids"].shape == (2, 32) and "start_position" not in batch


def test_query_truncation_and_errors():
    stats = collections.Counter()
    long_q = " ".join(f"q{i}" for i in range(30))
    (f,) = squad.make_features(example(question=long_q, context="a b"), toy_encode, **IDS, max_seq_length=64,
                           max_query_length=4, is_training=False, stats=stats)
    assert f["input_ids"][1:5].tolist() == toy_encode(long_q)[:4] and f["input_ids"][5] == SEP
    assert stats["query_truncated"] == 1
    with pytest.raises(ValueError, match="leaves no room for context"):
        squad.make_features(example(), toy_encode, **IDS, max_seq_length=8, is_training=False)
    with pytest.raises(ValueError, match="no answer and is not marked"):
        squad.make_features(example(), toy_encode, **IDS, is_training=True)
    bad = example(2, 3)
    bad["answers"][0]["answer_start"] = 0  # the offset's words do not contain the answer text
    stats = collections.Counter()
    assert squad.make_features(bad, toy_encode, **IDS, is_training=True, stats=stats) == []
    assert stats["answer_not_found"] == 1
    (empty,) = squad.make_features(example(context=""), toy_encode, **IDS, max_seq_length=16, is_training=False)
    assert (empty["token_to_word"] == -1).all()  # an empty context still gets one (answerless) feature


@pytest.mark.parametrize("i,j", [(0, 0), (5, 7), (31, 33), (50, 59), (59, 59)])
def test_training_positions_map_back_to_answer(i, j):
    ex = example(i, j)
    feats = squad.make_features(ex, toy_encode, **IDS, max_seq_length=40, doc_stride=10, is_training=True)
    held = [f for f in feats if not f["is_impossible"]]
    assert held, "no window holds the answer"
    for f in held:
        sp, ep = f["start_position"], f["end_position"]
        t2w = f["token_to_word"]
        assert " ".join(WORDS[t2w[sp]:t2w[ep] + 1]) == ex["answers"][0]["text"]
        assert f["input_ids"][sp:ep + 1].tolist() == toy_encode(ex["answers"][0]["text"])
    assert all(f["start_position"] == f["end_position"] == 0 for f in feats if f["is_impossible"])
    batch = squad.stack_features(feats)
    assert batch["start_position"].shape == (len(feats),)


def test_answer_straddling_a_window_boundary():
    q, doc = toy_encode(QUESTION), doc_tokens()
    max_doc = 40 - len(q) - 3
    lens = [len(toy_encode(w)) for w in WORDS]
    ends = np.cumsum(lens)  # word k covers doc tokens [ends[k] - lens[k], ends[k])
    j = int(np.searchsorted(ends, max_doc, side="right"))  # the word holding token max_doc, just past window 0
    i = j - 1  # starts inside window 0, so the answer i..j straddles its end
    assert ends[i] - lens[i] < max_doc < ends[j] and doc
    stats = collections.Counter()
    feats = squad.make_features(example(i, j), toy_encode, **IDS, max_seq_length=40, doc_stride=10,
                            is_training=True, stats=stats)
    a0, a1 = ends[i] - lens[i], ends[j] - 1
    for f in feats:
        s = f["window_start"]
        holds = s <= a0 and a1 < s + max_doc
        assert f["is_impossible"] == (not holds)
        if not holds:  # windows with part or none of the answer point at [CLS]
            assert f["start_position"] == f["end_position"] == 0
    assert feats[0]["is_impossible"] and not all(f["is_impossible"] for f in feats)
    assert stats["answer_outside_window"] == sum(f["is_impossible"] for f in feats)
    impossible = squad.make_features(example(i, j, is_impossible=True), toy_encode, **IDS, max_seq_length=40,
                                 doc_stride=10, is_training=True, stats=stats)
    assert all(f["is_impossible"] and f["start_position"] == 0 for f in impossible)


def test_improved_span_inside_a_word():
    chars = lambda t: [ord(c) for w in t.split() for c in w]  # noqa: E731  one id per character
    ctx = "born (1895-1943). later"
    ex = example(context=ctx, answers=[{"text": "1895", "answer_start": ctx.index("1895")}])
    (f,) = squad.make_features(ex, chars, **IDS, max_seq_length=64, is_training=True)
    # BERT's _improve_answer_span: the tokens of "1895" inside the word, not the whole "(1895-1943)."
    assert "".join(map(chr, f["input_ids"][f["start_position"]:f["end_position"] + 1])) == "1895"
    start, end = np.full((1, 64), -9.0), np.full((1, 64), -9.0)
    start[0, f["start_position"]] = end[0, f["end_position"]] = 9.0
    assert squad.decode_v1([f], start, end) == {"e1": "(1895-1943)."}  # decoding returns whole words


def test_max_context_selection():
    # 10 one-token words, 1-token question, max_seq_length 10 -> 6 context slots; stride 3:
    # windows (0,6), (3,6), (6,4). score = min(left, right) + 0.01 * length:
    #   token 3: w0 min(3,2)=2.06, w1 min(0,5)=0.06 -> w0      token 4: w0 1.06, w1 1.06 -> tie, first: w0
    #   token 5: w0 0.06, w1 2.06 -> w1   token 6: w1 2.06, w2 0.04 -> w1   token 7: w1 1.06, w2 1.04 -> w1
    #   token 8: w1 0.06, w2 1.04 -> w2   token 9: only w2
    ex = example(question="q", context=" ".join(WORDS[:10]))
    feats = squad.make_features(ex, one_per_word, **IDS, max_seq_length=10, doc_stride=3, is_training=False)
    assert [(f["window_start"], int((f["token_to_word"] >= 0).sum())) for f in feats] == [(0, 6), (3, 6), (6, 4)]
    owner = {}
    for wi, f in enumerate(feats):
        for pos in np.flatnonzero(f["token_is_max_context"]):
            assert f["token_to_word"][pos] not in owner  # exactly one window per token
            owner[int(f["token_to_word"][pos])] = wi
    assert [owner[t] for t in range(10)] == [0, 0, 0, 0, 0, 1, 1, 1, 2, 2]


def _eval_and_train(i, j, **kw):
    args = dict(max_seq_length=40, doc_stride=10, **kw)
    ev = squad.make_features(example(i, j), toy_encode, **IDS, is_training=False, **args)
    tr = squad.make_features(example(i, j), toy_encode, **IDS, is_training=True, **args)
    assert [f["window_start"] for f in ev] == [f["window_start"] for f in tr]
    return ev, tr


def test_decode_v1_recovers_planted_answer_and_ignores_invalid_spans():
    i, j = 23, 24  # in the overlap of several windows
    ev, tr = _eval_and_train(i, j)
    rng = np.random.default_rng(0)
    start, end = rng.normal(0, 0.1, (2, len(ev), 40))
    held = [r for r, f in enumerate(tr) if not f["is_impossible"]]
    gold = [r for r in held if ev[r]["token_is_max_context"][tr[r]["start_position"]]]
    decoys = [r for r in held if r not in gold]
    assert len(gold) == 1 and decoys, "the answer should sit in several windows"
    r = gold[0]
    start[r, tr[r]["start_position"]] = end[r, tr[r]["end_position"]] = 10.0  # gold span: 20
    d = decoys[0]
    ctx_d = ev[d]["token_to_word"] >= 0
    p = int(np.flatnonzero(ctx_d & ~ev[d]["token_is_max_context"] & (ev[d]["token_to_word"] < i - 1))[0])
    start[d, p] = end[d, p + 1] = 15.0  # another span scoring 30, but its start lacks max context there
    start[:, 1] = end[:, 2] = 30.0  # 60, inside the question
    start[:, 0] = end[:, 0] = 40.0  # [CLS]: the null answer is never a v1 span
    assert squad.decode_v1(ev, start, end) == {"e1": " ".join(WORDS[i:j + 1])}
    with pytest.raises(ValueError, match="one row per feature"):
        squad.decode_v1(ev, start[:1], end)


def test_decode_v1_order_length_and_nbest():
    ex = example(question="q", context=" ".join(WORDS[:10]))
    (f,) = squad.make_features(ex, one_per_word, **IDS, max_seq_length=16, is_training=False)
    o = 3  # [CLS] q [SEP]: context word k sits at position o + k
    start, end = np.full((2, 1, 16), -1e9)
    start[0, o + 5], end[0, o + 4] = 10.0, 10.0  # end before start: 20 but invalid
    start[0, o + 3], end[0, o + 6] = 1.0, 2.0  # valid: (3,4)=11, (5,6)=12, (3,6)=3
    assert squad.decode_v1([f], start, end) == {"e1": "w5a w6aa"}
    assert squad.decode_v1([f], start, end, n_best_size=1) == {"e1": ""}  # only (5,4) is looked at: invalid
    start[0, o + 1], end[0, o + 9] = 50.0, 50.0  # words 1..9: 9 tokens, best score
    assert squad.decode_v1([f], start, end, max_answer_length=30) == {"e1": " ".join(WORDS[1:10])}
    # length <= 8: (1,4) = 60 beats (1,6) = 52; length <= 3: nothing from word 1 fits, (5,6) = 12 again
    assert squad.decode_v1([f], start, end, max_answer_length=8) == {"e1": "w1a w2aa w3aaa w4"}
    assert squad.decode_v1([f], start, end, max_answer_length=3) == {"e1": "w5a w6aa"}
    assert squad.decode_v1([], np.zeros((0, 16)), np.zeros((0, 16))) == {}


def _xlnet_outputs(ev, tr, cls, k=3):
    """Planted AlbertForSquadV2 inference outputs: the gold start is the top start and its end row peaks."""
    n, L = len(ev), 40
    start = np.full((n, L), -5.0)
    end = np.full((n, k, L), -5.0)
    tops = np.tile(np.arange(1, k + 1), (n, 1))  # question positions: invalid starts
    for r, f in enumerate(tr):
        if not f["is_impossible"] and ev[r]["token_is_max_context"][f["start_position"]]:
            start[r, f["start_position"]] = 5.0
            tops[r, 0] = f["start_position"]
            end[r, 0, f["end_position"]] = 5.0
    return {"start_logits": start, "end_logits": end, "top_starts": tops, "cls_logits": np.asarray(cls, float)}


def test_decode_v2_xlnet_head_threshold():
    i, j = 23, 24
    ev, tr = _eval_and_train(i, j)
    cls = np.linspace(1.5, 0.5, len(ev))  # min over windows: 0.5 ("no answer" log-odds)
    out = _xlnet_outputs(ev, tr, cls)
    preds, diffs = squad.decode_v2(ev, out)
    assert diffs == {"e1": pytest.approx(0.5)} and preds == {"e1": ""}  # 0.5 > threshold 0
    preds, _ = squad.decode_v2(ev, out, null_threshold=1.0)
    assert preds == {"e1": " ".join(WORDS[i:j + 1])}
    preds, _ = squad.decode_v2(ev, out, null_threshold=0.5)
    assert preds == {"e1": " ".join(WORDS[i:j + 1])}  # "" only when the diff is strictly above the threshold
    preds, _ = squad.decode_v2(ev, out, null_threshold=1.0, max_answer_length=1)
    assert preds == {"e1": ""}  # the gold is 2+ tokens and the other candidates are in the question
    with pytest.raises(ValueError, match="top_starts"):
        squad.decode_v2(ev, dict(out, top_starts=out["top_starts"][:, :2]))


def test_decode_v2_plain_head():
    i, j = 23, 24
    ev, tr = _eval_and_train(i, j)
    out = _xlnet_outputs(ev, tr, np.zeros(len(ev)))
    start = out["start_logits"]
    end = np.full_like(start, -5.0)
    for r, f in enumerate(tr):
        if start[r].max() == 5.0:
            end[r, f["end_position"]] = 5.0  # best span 5 + 5 = 10
    start[:, 0], end[:, 0] = 4.0, np.arange(len(ev)) + 2.0  # CLS scores 6, 7, ...: null = min = 6
    preds, diffs = squad.decode_v2(ev, {"start_logits": start, "end_logits": end})
    assert diffs == {"e1": pytest.approx(6.0 - 10.0)} and preds == {"e1": " ".join(WORDS[i:j + 1])}
    preds, _ = squad.decode_v2(ev, {"start_logits": start, "end_logits": end}, null_threshold=-5.0)
    assert preds == {"e1": ""}  # -4 > -5: the null answer wins
    preds, diffs = squad.decode_v2(ev, {"start_logits": start, "end_logits": end}, max_answer_length=1,
                               null_threshold=1e9)
    assert diffs["e1"] > 0  # the next best 1-token span scores at most 5 - 5 = 0 < null 6


@pytest.fixture(scope="module")
def sp_tok(tmp_path_factory):
    from albert_jax.data import tokenization
    return tokenization.train_tokenizer(tmp_path_factory.mktemp("spm") / "squad", files=[FIXTURE], vocab_size=500,
                                        seed=0)


@pytest.mark.parametrize("line,k,n", [(0, 5, 3), (40, 30, 4), (300, 12, 1), (1000, 3, 6)])
def test_real_sentencepiece_round_trip(sp_tok, line, k, n):
    lines = [s for s in FIXTURE.read_text(encoding="utf-8").splitlines() if s.strip()]
    context = " ".join(lines[line:line + 3])
    words = context.split()
    answer = " ".join(words[k:k + n])
    ex = {"id": f"s{line}", "question": lines[line + 5], "context": context, "is_impossible": False,
          "answers": [{"text": answer, "answer_start": len(" ".join(words[:k])) + (k > 0)}]}
    assert context[ex["answers"][0]["answer_start"]:].startswith(answer)
    # Word-by-word encoding gives the paragraph's ids (SentencePiece pieces never cross a space).
    assert [t for w in words for t in sp_tok.encode(w)] == sp_tok.encode(context)
    args = dict(cls_id=sp_tok.cls_id, sep_id=sp_tok.sep_id, pad_id=sp_tok.pad_id, max_seq_length=64,
                doc_stride=24, max_query_length=16)
    stats = collections.Counter()
    tr = squad.make_features(ex, sp_tok.encode, is_training=True, stats=stats, **args)
    ev = squad.make_features(ex, sp_tok.encode, is_training=False, **args)
    assert len(tr) == len(ev) > 1 and stats["windows"] == len(tr)
    start, end = np.full((2, len(ev), 64), -10.0)
    for r, f in enumerate(tr):
        if not f["is_impossible"]:
            sp, ep = f["start_position"], f["end_position"]
            assert normalize_answer(sp_tok.decode(f["input_ids"][sp:ep + 1])) == normalize_answer(answer)
            start[r, sp], end[r, ep] = 10.0, 10.0
    assert start.max() == 10.0
    (pred,) = squad.decode_v1(ev, start, end).values()
    assert normalize_answer(pred) == normalize_answer(answer)


def test_v1_scores_report_no_noans_group_for_answers_that_normalise_to_nothing(monkeypatch):
    # SQuAD v1.1 has no unanswerable questions; a gold answer "the" used to put its question in NoAns_total.
    from types import SimpleNamespace

    import numpy as np

    from albert_jax.tasks import squad as squad_mod
    from albert_jax.tasks.span_qa import SpanTask

    monkeypatch.setattr(squad_mod, "decode_v1", lambda *a, **k: {"q1": "the", "q2": "Paris"})
    task = SpanTask("mine", "unused", version=1)
    feats = SimpleNamespace(meta=None, answers={"q1": ["the"], "q2": ["Paris"]})
    preds = {"index": np.array([0, 1]), "start_logits": np.zeros((2, 4)), "end_logits": np.zeros((2, 4))}
    out = task.finalize({}, preds, "validation", feats)
    assert not any("NoAns" in k or "HasAns" in k for k in out), out
    assert out[next(k for k in out if k.endswith("exact_match"))] == 100.0
