"""Evaluation metrics for the fine-tuning tasks: GLUE-style classification/regression and SQuAD v1.1/v2.0.

Pure numpy/python. The SQuAD functions follow the official evaluate-v1.1 / evaluate-v2.0 scripts (answer
normalisation, max over gold answers, percentages, the v2 null-threshold search); where the two scripts differ,
the v2 behaviour is used, which gives identical numbers on v1 data (its gold answers are never empty).
"""
from __future__ import annotations

import collections
import math
import re
import string
import warnings
from typing import Mapping, Sequence

import numpy as np

_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def _pair(preds, labels, min_len: int = 1):
    p, y = np.asarray(preds), np.asarray(labels)
    if p.ndim != 1 or y.ndim != 1:
        raise ValueError(f"expected 1-D predictions and labels, got shapes {p.shape} and {y.shape}")
    if len(p) != len(y):
        raise ValueError(f"{len(p)} predictions but {len(y)} labels")
    if len(p) < min_len:
        raise ValueError(f"need at least {min_len} prediction(s), got {len(p)}")
    return p, y


def accuracy(preds, labels) -> float:
    """Fraction of predictions equal to their label."""
    p, y = _pair(preds, labels)
    return float(np.mean(p == y))


def f1_binary(preds, labels, positive=1) -> float:
    """F1 of the `positive` class (MRPC/QQP); 0.0 when there is no true positive, as sklearn's zero_division."""
    p, y = _pair(preds, labels)
    tp = int(np.sum((p == positive) & (y == positive)))
    fp = int(np.sum((p == positive) & (y != positive)))
    fn = int(np.sum((p != positive) & (y == positive)))
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def matthews_corrcoef(preds, labels) -> float:
    """Matthews correlation (CoLA), binary or multi-class (Gorodkin's R_K, as sklearn); 0.0 when undefined."""
    p, y = _pair(preds, labels)
    classes, idx = np.unique(np.concatenate([y, p]), return_inverse=True)
    k, n = len(classes), len(y)
    conf = np.zeros((k, k), dtype=np.float64)  # rows: true class, columns: predicted class
    np.add.at(conf, (idx[:n], idx[n:]), 1)
    t, q, c = conf.sum(1), conf.sum(0), np.trace(conf)
    denom = math.sqrt((n * n - q @ q) * (n * n - t @ t))
    # Zero when either side is constant: the correlation is undefined and sklearn reports 0.
    return 0.0 if denom == 0 else float((c * n - t @ q) / denom)


def _corr(fn, x, y) -> float:
    a, b = _pair(x, y, min_len=2)
    a, b = a.astype(np.float64), b.astype(np.float64)
    if np.all(a == a[0]) or np.all(b == b[0]):
        return float("nan")  # undefined for a constant input; scipy would warn and also return nan
    return float(fn(a, b)[0])


# scipy.stats is imported where it is used: it is most of a fine-tuning process's import time (0.6-0.8 s here), and
# only STS-B reads it.
def pearson(x, y) -> float:
    """Pearson r (STS-B); nan when either input is constant."""
    from scipy import stats  # noqa: PLC0415  heavy: scipy
    return _corr(stats.pearsonr, x, y)


def spearman(x, y) -> float:
    """Spearman rho (STS-B), ties given average ranks; nan when either input is constant."""
    from scipy import stats  # noqa: PLC0415  heavy: scipy
    return _corr(stats.spearmanr, x, y)


# ----------------------------------------------------------------------------------------------------- SQuAD

def normalize_answer(s: str) -> str:
    """Official SQuAD normalisation: lowercase, drop punctuation, drop articles a/an/the, collapse whitespace."""
    s = "".join(ch for ch in s.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def _golds(gold_list: Sequence[str]) -> list[str]:
    if isinstance(gold_list, str):
        raise ValueError("gold answers must be a list of strings, not one string")
    if len(gold_list) == 0:
        raise ValueError('empty gold answer list: pass [""] for an unanswerable question')
    # As evaluate-v2.0: golds that normalise to nothing are dropped; none left means "no answer".
    return [g for g in gold_list if normalize_answer(g)] or [""]


def _exact(pred: str, gold: str) -> float:
    return float(normalize_answer(pred) == normalize_answer(gold))


def _f1(pred: str, gold: str) -> float:
    p, g = normalize_answer(pred).split(), normalize_answer(gold).split()
    if not p or not g:
        return float(p == g)  # no-answer on either side: right only if both are empty
    same = sum((collections.Counter(p) & collections.Counter(g)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def squad_exact(pred: str, gold_list: Sequence[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer; gold [""] = unanswerable."""
    return max(_exact(pred, g) for g in _golds(gold_list))


def squad_f1(pred: str, gold_list: Sequence[str]) -> float:
    """Bag-of-tokens F1 against the best-matching gold answer; gold [""] = unanswerable."""
    return max(_f1(pred, g) for g in _golds(gold_list))


def _has_answer(gold_list) -> bool:
    return _golds(gold_list) != [""]


def _raw_scores(predictions, answers):
    if not answers:
        raise ValueError("no gold answers to score against")
    missing = [q for q in answers if q not in predictions]
    if missing:
        # evaluate-v1.1 scores a missing prediction as wrong (and keeps it in the total); so do we.
        warnings.warn(f"{len(missing)} question(s) have no prediction and score 0, e.g. {missing[0]!r}",
                      stacklevel=3)
    em = {q: squad_exact(predictions[q], g) if q in predictions else 0.0 for q, g in answers.items()}
    f1 = {q: squad_f1(predictions[q], g) if q in predictions else 0.0 for q, g in answers.items()}
    return em, f1


def squad_example_scores(predictions: Mapping[str, str], answers: Mapping[str, Sequence[str]]) -> dict:
    """Per question, in the order of sorted question ids: {"exact_match": 0/1, "f1": 0..1} (what squad_scores
    averages, as fractions), for the tables' intervals over questions."""
    em, f1 = _raw_scores(predictions, answers)
    ids = sorted(em)
    return {"exact_match": np.array([em[q] for q in ids], np.float64), "f1": np.array([f1[q] for q in ids], np.float64)}


def squad_scores(predictions: Mapping[str, str], answers: Mapping[str, Sequence[str]], *,
                 v2: bool | None = None) -> dict:
    """{"exact_match": %, "f1": %, "total": n} as the official scripts report.

    With `v2` (default: whenever some question is unanswerable) the split scores are added as evaluate-v2.0 does:
    HasAns_exact/HasAns_f1/HasAns_total and NoAns_exact/NoAns_f1/NoAns_total (each only when that group exists).
    Predictions for ids not in `answers` are ignored.
    """
    em, f1 = _raw_scores(predictions, answers)
    out = {"exact_match": 100.0 * sum(em.values()) / len(em), "f1": 100.0 * sum(f1.values()) / len(f1),
           "total": len(em)}
    has = {q: _has_answer(g) for q, g in answers.items()}
    if v2 or (v2 is None and not all(has.values())):
        for name, group in (("HasAns", [q for q in has if has[q]]), ("NoAns", [q for q in has if not has[q]])):
            if group:
                out[f"{name}_exact"] = 100.0 * sum(em[q] for q in group) / len(group)
                out[f"{name}_f1"] = 100.0 * sum(f1[q] for q in group) / len(group)
                out[f"{name}_total"] = len(group)
    return out


def best_null_threshold(predictions: Mapping[str, str], answers: Mapping[str, Sequence[str]],
                        null_score_diffs: Mapping[str, float], *, metric: str = "f1") -> tuple[float, float]:
    """Search the null-score-difference threshold that maximises `metric` ("f1" or "exact"), as evaluate-v2.0.

    A question is answered with its prediction when its diff <= threshold and gets "" otherwise (the rule of
    `squad.decode_v2`), so `predictions` should be the best non-null answers (decode with null_threshold=inf).
    Returns (best score in %, threshold); the threshold is -inf when answering nothing is best. Unlike the
    official search, tied diffs switch together, so the score returned is one a real threshold achieves.
    """
    if metric not in ("f1", "exact"):
        raise ValueError(f"metric must be 'f1' or 'exact', got {metric!r}")
    if not answers:
        raise ValueError("no gold answers to score against")
    lacking = [q for q in answers if q not in predictions or q not in null_score_diffs]
    if lacking:
        raise ValueError(f"{len(lacking)} question(s) lack a prediction or a null score diff, e.g. {lacking[0]!r}")
    em, f1 = _raw_scores(predictions, answers)
    raw = f1 if metric == "f1" else em
    has = {q: _has_answer(g) for q, g in answers.items()}
    # Start with every question answered "" (right exactly for the unanswerable ones), then lower the bar one
    # diff value at a time: each question switching to its prediction changes the total by (its score - null's).
    score = best = float(sum(not h for h in has.values()))
    thresh = float("-inf")
    order = sorted(answers, key=lambda q: null_score_diffs[q])
    i = 0
    while i < len(order):
        d = float(null_score_diffs[order[i]])
        while i < len(order) and float(null_score_diffs[order[i]]) == d:
            q = order[i]
            score += raw[q] - (0.0 if has[q] else 1.0)
            i += 1
        if score > best:
            best, thresh = score, d
    return 100.0 * best / len(answers), thresh
