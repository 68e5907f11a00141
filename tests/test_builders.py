"""TFDS builders (array_record, no TensorFlow), load_source, and the user-corpus reader on good and bad input."""
import collections
from pathlib import Path

import pytest
import tensorflow_datasets as tfds

from albert_jax.data import builders, corpora, fetch, labeled

tfds.display_progress_bar(False)


@pytest.fixture(scope="session")
def cache():
    fetch.fetch()
    return fetch.default_cache_dir()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tfds")


@pytest.fixture(scope="module")
def english(cache, data_dir):
    """The full English mix, built once (about 6 s on 2 cores)."""
    return builders.build("albert_pretrain_en", data_dir, cache)


def test_full_english_mix(english, cache):
    splits = {k: v.num_examples for k, v in english.info.splits.items()}
    n_docs = sum(1 for _ in corpora.english_documents(cache))
    assert sum(splits.values()) == n_docs == 2295
    assert 0.96 < splits["train"] / n_docs < 0.995 and splits["validation"] > 0 and splits["test"] > 0
    ds = english.as_data_source("train")
    assert len(ds) == splits["train"]
    rec = ds[0]
    assert set(rec) == {"doc_id", "source", "text", "num_sentences"}
    assert rec["text"].count(b"\n") + 1 == rec["num_sentences"]
    sources = collections.Counter(ds[i]["source"] for i in range(0, len(ds), 7))
    assert set(sources) == {s.encode() for s in corpora.PRETRAIN_EN}
    # the split of every document follows from its id alone
    for split in ("validation", "test"):
        for r in english.as_data_source(split):
            assert corpora.split_of(r["doc_id"].decode()) == split


def test_build_is_idempotent_and_load_source_reads_it(english, data_dir, cache):
    info_file = Path(english.data_path) / "dataset_info.json"
    mtime = info_file.stat().st_mtime_ns
    src = builders.load_source("albert_pretrain_en", "validation", data_dir, cache_dir=cache)
    assert info_file.stat().st_mtime_ns == mtime  # prepared data reused, not rewritten
    assert len(src) == english.info.splits["validation"].num_examples
    assert src[0]["doc_id"] == english.as_data_source("validation")[0]["doc_id"]


def test_max_docs_subset_is_stored_separately(data_dir, cache):
    b = builders.build("albert_pretrain_zh", data_dir, cache, max_docs=300)
    assert b.builder_config.name == "default_max300"
    assert sum(s.num_examples for s in b.info.splits.values()) == 300
    rec = b.as_data_source("train")[0]
    assert rec["segmented"].decode().replace(" ", "") == rec["text"].decode()
    assert rec["source"] == b"peoples_daily"


@pytest.mark.parametrize("name", ["rt_sentiment", "wordnet_wic", "zh_sentiment"])
def test_labeled_builders(name, data_dir, cache):
    b = builders.build(name, data_dir, cache)
    expected = labeled.load_labeled(name, cache)
    assert {k: v.num_examples for k, v in b.info.splits.items()} == {k: len(v) for k, v in expected.items()}
    src = builders.load_source(name, "test", data_dir, cache_dir=cache)
    labels = [src[i]["label"] for i in range(len(src))]
    assert set(labels) == {0, 1} and 0.4 < sum(labels) / len(labels) < 0.6
    ids = {r["id"] for r in builders.load_source(name, "train", data_dir, cache_dir=cache)}
    assert not ids & {src[i]["id"] for i in range(len(src))}


def test_catalog_path_offline_through_tfds_mock_data(tmp_path):
    # Catalog datasets need the network to prepare; offline, TFDS's mock data exercises the same code path
    # (registry lookup, array_record data source, decoding) with random examples of the real feature spec.
    with tfds.testing.mock_data(num_examples=5):
        sst2 = builders.load_source("glue/sst2", "train", tmp_path)
        assert len(sst2) == 5 and set(sst2[0]) == {"idx", "label", "sentence"}
        squad = builders.load_source("squad", "validation", tmp_path)
        assert {"context", "question", "answers"} <= set(squad[1])


# ------------------------------------------------------------------------------------------------ user corpora
def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_user_corpus_official_format(tmp_path, data_dir):
    a = _write(tmp_path / "a.txt", "First sentence.\nSecond one.\n\n\nOther doc.\n")
    b = _write(tmp_path / "b.txt", "\ufeffThird doc, line one.\r\nline two.\r\n")
    docs = list(corpora.read_text_corpus([a, b]))
    assert [d.sentences for d in docs] == [["First sentence.", "Second one."], ["Other doc."],
                                           ["Third doc, line one.", "line two."]]
    assert [d.doc_id for d in docs] == ["a.txt#0", "a.txt#1", "b.txt#0"]
    b_ = builders.build("text_corpus/mine", data_dir, paths=[a, b])
    n = sum(s.num_examples for s in b_.info.splits.values())
    assert n == 3
    src = builders.load_source("text_corpus/mine", "train", data_dir, download=False)
    texts = {src[i]["text"] for i in range(len(src))}
    assert texts <= {b"First sentence.\nSecond one.", b"Other doc.", b"Third doc, line one.\nline two."}


def test_user_corpus_bad_input(tmp_path, data_dir):
    good = _write(tmp_path / "good.txt", "One.\nTwo.\n")
    empty = _write(tmp_path / "empty.txt", "\n\n")
    undecodable = tmp_path / "latin1.txt"
    undecodable.write_bytes(b"fine line\n\xff\xfe caf\xe9\nlast\n")
    huge = _write(tmp_path / "huge.txt", "x" * 10_000_000 + "\n")

    with pytest.raises(FileNotFoundError, match="missing.txt"):
        list(corpora.read_text_corpus([good, tmp_path / "missing.txt"]))

    stats = corpora.CorpusStats()
    assert len(list(corpora.read_text_corpus([empty, good], stats=stats))) == 1
    assert stats.empty_files == [str(empty)] and stats.documents == 1

    with pytest.raises(ValueError, match=r"latin1\.txt:2: cannot decode byte b'\\xff'"):
        list(corpora.read_text_corpus([undecodable]))
    with pytest.raises(ValueError, match=r"huge\.txt:1: line of 10,000,000 characters exceeds"):
        list(corpora.read_text_corpus([huge]))

    stats = corpora.CorpusStats()
    docs = list(corpora.read_text_corpus([undecodable, huge, good], bad_lines="skip", stats=stats))
    assert [d.sentences for d in docs] == [["fine line", "last"], ["One.", "Two."]]
    assert len(stats.skipped_lines) == 2 and stats.empty_files == [str(huge)]

    # a failing build leaves nothing that could be mistaken for a prepared dataset
    bad = builders.TextCorpus(paths=[good, undecodable], corpus_name="bad", data_dir=data_dir)
    with pytest.raises(ValueError, match="latin1.txt:2"):
        bad.download_and_prepare()
    assert not (data_dir / "text_corpus" / "bad" / "1.0.0").exists()
    only_empty = builders.TextCorpus(paths=[empty], corpus_name="empty", data_dir=data_dir)
    with pytest.raises(ValueError, match=r"no documents in .*empty\.txt \(the files are empty"):
        only_empty.download_and_prepare()
    assert not (data_dir / "text_corpus" / "empty" / "1.0.0").exists()


_CONCURRENT_BUILD = """
import sys, time
from pathlib import Path
from albert_jax.data import builders
data_dir, cache, me, other = sys.argv[1:]
Path(me).touch()
while not Path(other).exists():  # both processes are past their imports: they start preparing together
    time.sleep(0.01)
b = builders.build("albert_pretrain_zh", data_dir, cache, max_docs=120)
print(sum(s.num_examples for s in b.info.splits.values()))
"""


def test_two_processes_preparing_one_dataset_at_once_both_get_it(cache, tmp_path):
    # Two sweeps pinned one per core on a fresh machine both prepare the pretraining dataset first: without a
    # lock the second one's rename into place failed (FileExistsError) and its whole row was lost.
    import subprocess
    import sys
    data_dir = tmp_path / "tfds"
    procs = [subprocess.Popen([sys.executable, "-c", _CONCURRENT_BUILD, str(data_dir), str(cache),
                               str(tmp_path / f"ready{i}"), str(tmp_path / f"ready{1 - i}")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
    assert [o.strip().splitlines()[-1] for o, _ in outs] == ["120", "120"]
    assert [d.name for d in (data_dir / "albert_pretrain_zh" / "default_max120").iterdir()] == ["1.0.0"]


def test_a_beam_workers_error_reaches_the_user_as_one_line():
    """The runner wraps a worker's exception in its tracebacks; `data build --runner beam` shows the first error's
    own line, and says what to do about an empty split."""
    from albert_jax.data.builders import _worker_error

    wrapped = ("Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: /d/bad.txt:4: cannot decode "
               "byte b'\\xe9' at column 4 as utf-8 [while running 'train/documents of train']\n\nDuring handling...\n"
               "RuntimeError: Pipeline failed")
    assert _worker_error(wrapped) == "/d/bad.txt:4: cannot decode byte b'\\xe9' at column 4 as utf-8"
    empty = "...\nValueError: The total number of generated examples is 0 for split validation. This should be >0!"
    assert _worker_error(empty).startswith("no document fell in the validation split")
    assert "locally" in _worker_error(empty)
    assert _worker_error("runner died") == "runner died"
