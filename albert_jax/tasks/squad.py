"""SQuAD v1.1/v2.0: examples -> windowed features, and model outputs -> answer texts.

The alignment is BERT's word-based one (run_squad.py): the context is split on whitespace, each word is encoded
on its own and every sub-token remembers its word, so any tokenizer with `encode(text) -> ids` works
(SentencePiece or WordPiece). How this differs from the official ALBERT squad_utils.py, which encodes the
whole paragraph and aligns SentencePiece pieces back to characters with an LCS match:

* answers are located and returned in whole words: a span is turned back into the context words it touches,
  joined by single spaces (BERT's "orig text"), so an answer that is part of a word ("1895" in "(1895-1943).")
  comes back as the whole word; the official code slices the paragraph at character offsets. (BERT's
  get_final_text projection is not done: it needs the tokenizer's text form, not just ids.)
* pieces come from one word at a time; SentencePiece never lets a piece cross whitespace (split_by_whitespace)
  and ALBERT's preprocessing is per character, so the ids match encoding the paragraph (the real-tokenizer
  test checks this), but a tokenizer whose pieces span spaces would be cut at every space.
* v2 with the XLNet-style head: the official decoder keeps start_n_top x end_n_top (5 x 5) candidates; we score
  each of the head's top-k starts against its `n_best_size` best ends.

Kept as official: doc_stride is the step between window starts, out-of-window and impossible training answers
point at [CLS] (index 0), p_mask is 0 at [CLS] (the v2 head must be able to put the null answer there) and
on context tokens, BERT's max-context rule picks the window that scores a token.
"""
from __future__ import annotations

import collections
from typing import Callable, Mapping, Sequence

import numpy as np

ARRAY_KEYS = ("input_ids", "input_mask", "segment_ids", "p_mask")


def _split_words(text: str) -> tuple[list[str], list[int]]:
    """Whitespace words and, per character, the index of the word it is in (or the word before a space)."""
    words: list[str] = []
    char_to_word: list[int] = []
    after_space = True
    for ch in text:
        if ch.isspace():
            after_space = True
        else:
            if after_space:
                words.append(ch)
            else:
                words[-1] += ch
            after_space = False
        char_to_word.append(len(words) - 1)
    return words, char_to_word


def _answer_tokens(example, words, char_to_word, word_to_tok, doc_tokens, encode):
    """Sub-token (start, end) of the first gold answer in `doc_tokens`, or None if it cannot be found."""
    answers = example.get("answers") or []
    if not answers:
        raise ValueError(f"training example {example['id']!r} has no answer and is not marked is_impossible")
    text, start = answers[0]["text"], int(answers[0]["answer_start"])
    lead = len(text) - len(text.lstrip())
    text, start = text.strip(), start + lead  # a leading space would map to the previous word
    end = start + len(text) - 1
    if not text or start < 0 or end >= len(char_to_word):
        return None
    w0, w1 = char_to_word[start], char_to_word[end]
    # As BERT: skip answers whose words do not contain the answer text (bad offsets, odd whitespace).
    if w0 < 0 or " ".join(text.split()) not in " ".join(words[w0:w1 + 1]):
        return None
    t0 = word_to_tok[w0]
    t1 = (word_to_tok[w1 + 1] if w1 + 1 < len(words) else len(doc_tokens)) - 1
    if t1 < t0:  # the answer's words encode to nothing
        return None
    # BERT's _improve_answer_span: a tighter sub-token span that encodes exactly like the answer text.
    target = [int(t) for w in text.split() for t in encode(w)]
    for a in range(t0, t1 + 1):
        for b in range(t1, a - 1, -1):
            if doc_tokens[a:b + 1] == target:
                return a, b
    return t0, t1


def make_features(example: Mapping, tokenizer_encode: Callable[[str], Sequence[int]], *, cls_id: int,
                  sep_id: int, pad_id: int, max_seq_length: int = 384, doc_stride: int = 128,
                  max_query_length: int = 64, is_training: bool,
                  stats: collections.Counter | None = None) -> list[dict]:
    """One feature per context window: `[CLS] question [SEP] window [SEP]`, padded to `max_seq_length`.

    example: {"id", "question", "context", "answers": [{"text", "answer_start"}], "is_impossible"}.
    Each feature has int32 arrays input_ids, input_mask, segment_ids, p_mask (1 = cannot be in an answer),
    token_to_word (context word per position, -1 elsewhere), bool token_is_max_context, and metadata
    example_id, window_index, window_start (its first context sub-token), context_words; with `is_training`
    also start_position, end_position and is_impossible (True when the window does not hold the answer).
    `stats` (a Counter) counts windows, query_truncated, split_contexts, answer_outside_window and
    answer_not_found (such training examples give no features, as BERT skips them).
    """
    stats = collections.Counter() if stats is None else stats
    if doc_stride < 1:
        raise ValueError(f"doc_stride must be >= 1, got {doc_stride}")
    query = [int(t) for t in tokenizer_encode(example["question"])]
    if len(query) > max_query_length:
        stats["query_truncated"] += 1
        query = query[:max_query_length]
    max_doc = max_seq_length - len(query) - 3  # [CLS], [SEP], [SEP]
    if max_doc < 1:
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for context after a "
                         f"{len(query)}-token question; raise it or lower max_query_length")
    words, char_to_word = _split_words(example["context"])
    doc_tokens: list[int] = []
    tok_to_word: list[int] = []
    word_to_tok: list[int] = []
    for i, w in enumerate(words):
        word_to_tok.append(len(doc_tokens))
        for t in tokenizer_encode(w):
            doc_tokens.append(int(t))
            tok_to_word.append(i)

    impossible = bool(example.get("is_impossible", False))
    answer = None
    if is_training and not impossible:
        answer = _answer_tokens(example, words, char_to_word, word_to_tok, doc_tokens, tokenizer_encode)
        if answer is None:
            stats["answer_not_found"] += 1
            return []

    windows = []  # (start, length) over doc_tokens; at least one, so an empty context still gets a feature
    start = 0
    while True:
        length = min(len(doc_tokens) - start, max_doc)
        windows.append((start, length))
        if start + length >= len(doc_tokens):
            break
        start += min(length, doc_stride)
    stats["windows"] += len(windows)
    stats["split_contexts"] += len(windows) > 1

    # Max context (BERT): the window where a token has the most context on its shorter side; first wins ties.
    n = len(doc_tokens)
    best_window = np.full(n, -1)
    best_score = np.full(n, -np.inf)
    for wi, (s, length) in enumerate(windows):
        pos = np.arange(s, s + length)
        score = np.minimum(pos - s, s + length - 1 - pos) + 0.01 * length
        better = score > best_score[pos]
        best_window[pos[better]], best_score[pos[better]] = wi, score[better]

    tok_to_word_a = np.asarray(tok_to_word, dtype=np.int32)
    offset = len(query) + 2
    features = []
    for wi, (s, length) in enumerate(windows):
        ids = [cls_id, *query, sep_id, *doc_tokens[s:s + length], sep_id]
        real, ctx = len(ids), slice(offset, offset + length)
        f = {"example_id": example["id"], "window_index": wi, "window_start": s, "context_words": words}
        f["input_ids"] = np.full(max_seq_length, pad_id, dtype=np.int32)
        f["input_ids"][:real] = ids
        f["input_mask"] = (np.arange(max_seq_length) < real).astype(np.int32)
        f["segment_ids"] = np.zeros(max_seq_length, dtype=np.int32)
        f["segment_ids"][offset:real] = 1  # context and its closing [SEP]
        f["p_mask"] = np.ones(max_seq_length, dtype=np.int32)
        f["p_mask"][0] = 0  # [CLS] holds the null answer
        f["p_mask"][ctx] = 0
        f["token_to_word"] = np.full(max_seq_length, -1, dtype=np.int32)
        f["token_to_word"][ctx] = tok_to_word_a[s:s + length]
        f["token_is_max_context"] = np.zeros(max_seq_length, dtype=bool)
        f["token_is_max_context"][ctx] = best_window[s:s + length] == wi
        if is_training:
            inside = answer is not None and s <= answer[0] and answer[1] <= s + length - 1
            if answer is not None and not inside:
                stats["answer_outside_window"] += 1
            sp, ep = (answer[0] - s + offset, answer[1] - s + offset) if inside else (0, 0)
            f.update(start_position=sp, end_position=ep, is_impossible=not inside)
        features.append(f)
    return features


def stack_features(features: Sequence[Mapping], keys: Sequence[str] = ARRAY_KEYS) -> dict[str, np.ndarray]:
    """Batch arrays [N, L] (and training targets [N]) from a list of features."""
    out = {k: np.stack([f[k] for f in features]) for k in keys}
    for k in ("start_position", "end_position", "is_impossible"):
        if features and k in features[0]:
            out[k] = np.asarray([f[k] for f in features], dtype=np.int32)
    return out


# -------------------------------------------------------------------------------------------------- decoding

def _by_example(features) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for r, f in enumerate(features):
        groups.setdefault(f["example_id"], []).append(r)
    return groups


def _top(x: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-x, kind="stable")[:k]  # stable: ties go to the earlier position


def _valid(f, s: int, e: int, max_answer_length: int) -> bool:
    t2w, L = f["token_to_word"], len(f["token_to_word"])
    return (0 <= s <= e < L and e - s + 1 <= max_answer_length and t2w[s] >= 0 and t2w[e] >= 0
            and bool(f["token_is_max_context"][s]))


def _text(f, s: int, e: int) -> str:
    t2w = f["token_to_word"]
    return " ".join(f["context_words"][t2w[s]:t2w[e] + 1])


def _best(features, rows, candidates, max_answer_length):
    """(score, text) of the best valid span over an example's features; candidates(r) yields (score, s, e)."""
    best = None
    for r in rows:
        for score, s, e in candidates(r):
            if (best is None or score > best[0]) and _valid(features[r], s, e, max_answer_length):
                best = (score, r, s, e)
    return (None, "") if best is None else (best[0], _text(features[best[1]], best[2], best[3]))


def _as_rows(name, x, n, ndim):
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != ndim or a.shape[0] != n:
        raise ValueError(f"{name} must have {ndim} dims with one row per feature ({n}), got shape {a.shape}")
    return a


def _plain_candidates(start, end, n_best_size):
    def candidates(r):
        ends = _top(end[r], n_best_size)
        for s in _top(start[r], n_best_size):
            for e in ends:
                yield start[r, s] + end[r, e], int(s), int(e)
    return candidates


def decode_v1(features: Sequence[Mapping], start_logits, end_logits, *, n_best_size: int = 20,
              max_answer_length: int = 30) -> dict[str, str]:
    """{example id: answer text}: the best start+end logit span over the example's windows (BERT's n-best:
    the `n_best_size` best starts x ends, kept if start <= end, both in the context, length <= max and the start
    token has max context in that window). "" if no span is valid."""
    start = _as_rows("start_logits", start_logits, len(features), 2)
    end = _as_rows("end_logits", end_logits, len(features), 2)
    cand = _plain_candidates(start, end, n_best_size)
    return {ex: _best(features, rows, cand, max_answer_length)[1] for ex, rows in _by_example(features).items()}


def _log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def decode_v2(features: Sequence[Mapping], outputs: Mapping, *, n_best_size: int = 20, max_answer_length: int = 30,
              null_threshold: float = 0.0) -> tuple[dict[str, str], dict[str, float]]:
    """({id: text}, {id: null score diff}); the text is "" when diff > null_threshold.

    `outputs` holds one row per feature, either from `AlbertForSquadV2` (XLNet-style, as run_squad_v2.py):
    start_logits [N, L], end_logits [N, k, L], top_starts [N, k], cls_logits [N]; spans are ranked by start +
    end log-softmax and the diff is the smallest cls logit over the example's windows (the classifier is
    trained with label is_impossible, so a higher logit means "no answer", and it is already a log-odds);
    or from a plain span head (BERT's v2 recipe): start_logits [N, L], end_logits [N, L]; the null score is the
    smallest start[0] + end[0] ([CLS]) over the windows and diff = null - best span score (inf with no span).
    """
    n = len(features)
    start = _as_rows("start_logits", outputs["start_logits"], n, 2)
    end = np.asarray(outputs["end_logits"], dtype=np.float64)
    preds: dict[str, str] = {}
    diffs: dict[str, float] = {}
    groups = _by_example(features)
    if end.ndim == 3:
        end = _as_rows("end_logits", end, n, 3)
        tops = np.asarray(outputs["top_starts"]).astype(np.int64)
        cls = _as_rows("cls_logits", outputs["cls_logits"], n, 1)
        if tops.shape != end.shape[:2]:
            raise ValueError(f"top_starts {tops.shape} does not match end_logits {end.shape}")
        start_lp, end_lp = _log_softmax(start), _log_softmax(end)

        def candidates(r):
            for i, s in enumerate(tops[r]):
                for e in _top(end_lp[r, i], n_best_size):
                    yield start_lp[r, s] + end_lp[r, i, e], int(s), int(e)

        for ex, rows in groups.items():
            _, text = _best(features, rows, candidates, max_answer_length)
            diffs[ex] = float(min(cls[r] for r in rows))
            preds[ex] = "" if diffs[ex] > null_threshold else text
    else:
        end = _as_rows("end_logits", end, n, 2)
        cand = _plain_candidates(start, end, n_best_size)
        for ex, rows in groups.items():
            score, text = _best(features, rows, cand, max_answer_length)
            null = min(start[r, 0] + end[r, 0] for r in rows)
            diffs[ex] = float("inf") if score is None else float(null - score)
            preds[ex] = "" if diffs[ex] > null_threshold else text
    return preds, diffs
