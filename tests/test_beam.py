"""Pretraining data on Apache Beam (tasks/pretraining/beam.py): the same records as the local path, byte for byte,
on a real corpus, at 1 and 2 workers, for SOP, NSP and none. The tests marked `beam` need Beam, which lives in
.venv-beam (requirements-beam.txt): `make test` runs this file there after the main suite. What a user without Beam
sees is tested by hiding it from the import system (`without_beam`), in either venv."""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

from albert_jax.tasks.pretraining import instances

HAS_BEAM = importlib.util.find_spec("apache_beam") is not None


@pytest.fixture
def without_beam(monkeypatch):
    """This process as a venv without Beam: every `import apache_beam...` fails as it would there."""
    for name in [m for m in sys.modules if m == "apache_beam" or m.startswith("apache_beam.")] + ["apache_beam"]:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Three files of the English mix (official format) and a SentencePiece model trained on them."""
    from albert_jax.data import corpora
    from albert_jax.data.tokenization import train_tokenizer

    d = tmp_path_factory.mktemp("beam")
    files = []
    for k, source in enumerate(("sotu", "austen", "kjv")):
        path = d / f"{source}.txt"
        with open(path, "w", encoding="utf-8") as f:
            for doc in corpora.iter_documents(source, max_docs=12 if source != "kjv" else 30):
                f.write("\n".join(doc.sentences) + "\n\n")
        files.append(path)
    tok = train_tokenizer(d / "spm", files=files, vocab_size=2000, seed=0)
    return files, d / "spm.model", tok


def local_records(files, tokenizer, out, cfg, seed) -> dict[str, bytes]:
    from array_record.python.array_record_module import ArrayRecordReader

    instances.create_pretraining_data(files, tokenizer, out, cfg, seed=seed, workers=1)
    records = {}
    for shard in range(len(files)):
        i = 0
        for path in sorted(Path(out).glob(f"part-{shard:05d}-*.array_record")):
            reader = ArrayRecordReader(str(path))
            for data in reader.read(list(range(reader.num_records()))):
                records[f"{shard:05d}-{i:010d}"] = data
                i += 1
            reader.close()
    return records


@pytest.mark.beam
@pytest.mark.parametrize("task, workers", [("sop", 1), ("sop", 2), ("nsp", 2), ("none", 1)])
def test_beam_writes_the_local_paths_records(corpus, tmp_path, task, workers):
    from albert_jax.tasks.pretraining.beam import create_with_beam, read_beam_records

    files, model, tok = corpus
    cfg = instances.PretrainingConfig(max_seq_length=64, dupe_factor=2, task=task, nsp_buffer_docs=8)
    local = local_records(files, tok, tmp_path / "local", cfg, seed=7)
    summary = create_with_beam(files, str(model), tmp_path / "beam", cfg, seed=7, workers=workers)
    beam = read_beam_records(tmp_path / "beam")
    assert len(local) > 500 and summary["totals"]["instances"] == len(local)
    assert beam.keys() == local.keys()
    assert all(beam[k] == local[k] for k in local)  # byte for byte: NSP's pool is each file's own, seeded


@pytest.mark.beam
def test_beam_output_trains(corpus, tmp_path):
    """`data.instances` reads a Beam-built directory like the local path's."""
    from albert_jax.tasks.pretraining.beam import create_with_beam
    from albert_jax.tasks.pretraining.input import from_instances

    files, model, _ = corpus
    cfg = instances.PretrainingConfig(max_seq_length=64, dupe_factor=1)
    create_with_beam(files, str(model), tmp_path / "train", cfg, seed=1)
    create_with_beam(files[:1], str(model), tmp_path / "eval", cfg, seed=2)
    import ml_collections
    d = ml_collections.ConfigDict(dict(instances=str(tmp_path / "train"), eval_instances=str(tmp_path / "eval"),
                                       spm_model=str(model), max_seq_length=64, max_predictions_per_seq=20,
                                       task="sop", masking="static", masked_lm_prob=0.15, ngram=3, seed=0))
    data = from_instances(d)
    batch = next(iter(data.train_iterator(8, None, seed=0)))
    assert batch["input_ids"].shape == (8, 64) and (batch["input_ids"][:, 0] == 2).all()
    assert sum(1 for _ in data.eval_iterator("sop", 8, None)) > 0


def test_without_beam_the_runner_says_how_to_get_it(corpus, tmp_path, capsys, without_beam):
    from albert_jax.main import main

    files, model, _ = corpus
    assert main(["pretraining-data", "create", "--input", str(files[0]), "--spm-model", str(model), "--output-dir",
                 str(tmp_path / "o"), "--runner", "beam"]) == 2
    err = capsys.readouterr().err
    assert "make beam" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())
    assert main(["data", "build", "text_corpus/mine", "--paths", *map(str, files), "--data-dir", str(tmp_path / "d"),
                 "--runner", "beam"]) == 2
    err = capsys.readouterr().err
    assert "make beam" in err and "Traceback" not in err


if HAS_BEAM:
    from apache_beam.io.filesystem import FileMetadata
    from apache_beam.io.localfilesystem import LocalFileSystem

    class RootedFileSystem(LocalFileSystem):
        """A Beam filesystem for the URL scheme rooted://, whose objects are files under ROOT: a store that is not a
        local path, registered through Beam's own plugin mechanism as gs:// and s3:// are (no bucket is reachable
        here). It checks that our inputs go through Beam's filesystems by URL, which is the part that is ours."""
        ROOT = ""

        @classmethod
        def scheme(cls):
            return "rooted"

        def _local(self, url):
            return os.path.join(self.ROOT, url[len("rooted://"):])

        def exists(self, path):
            return os.path.exists(self._local(path))

        def _list(self, prefix):
            for dirpath, _, names in os.walk(self._local(prefix)):
                for n in names:
                    local = os.path.join(dirpath, n)
                    yield FileMetadata("rooted://" + os.path.relpath(local, self.ROOT), os.path.getsize(local),
                                       os.path.getmtime(local))

        def _path_open(self, path, mode, mime_type="application/octet-stream", compression_type=None):
            return open(self._local(path), mode)


@pytest.mark.beam
def test_beam_reads_its_inputs_by_url(corpus, tmp_path):
    """Inputs named by URL (a pattern, as gs://bucket/docs/*.txt) are listed and read through Beam's filesystems,
    and give the local path's records byte for byte; the tokenizer travels with the pipeline (a worker on another
    machine has no copy of the model file)."""
    import shutil

    from albert_jax.tasks.pretraining.beam import create_with_beam, read_beam_records, sample_with_beam
    from albert_jax.data.sentence_sample import local_sample

    files, model, tok = corpus
    RootedFileSystem.ROOT = str(tmp_path / "store")
    for f in files:
        (tmp_path / "store" / "docs").mkdir(parents=True, exist_ok=True)
        shutil.copy(f, tmp_path / "store" / "docs" / f.name)
    cfg = instances.PretrainingConfig(max_seq_length=64, dupe_factor=1, task="nsp", nsp_buffer_docs=8)
    ordered = sorted(files, key=lambda f: f.name)  # a pattern expands in sorted order
    local = local_records(ordered, tok, tmp_path / "local", cfg, seed=3)
    # in_memory: the rooted:// filesystem is registered in this process only (a real one is imported by Beam)
    opts = "--direct_running_mode=in_memory"
    create_with_beam(["rooted://docs/*.txt"], str(model), tmp_path / "beam", cfg, seed=3, beam_options=opts)
    assert read_beam_records(tmp_path / "beam") == local
    sample_with_beam(["rooted://docs/*.txt"], 50, tmp_path / "s.txt", seed=1, beam_options=opts)
    assert (tmp_path / "s.txt").read_text(encoding="utf-8").splitlines() == local_sample(ordered, 50, seed=1)
    with pytest.raises(FileNotFoundError, match=r"rooted://docs/\*\.md matches no file"):
        create_with_beam(["rooted://docs/*.md"], str(model), tmp_path / "none", cfg, beam_options=opts)


@pytest.mark.beam
def test_a_url_without_its_filesystem_names_the_package():
    from albert_jax.data.files import expand_inputs

    with pytest.raises(ValueError, match=r"nope://b/x\.txt: Beam has no filesystem for nope://"):
        expand_inputs(["nope://b/x.txt"], "pretraining-data")


def test_a_url_input_without_beam_says_how_to_get_it(tmp_path, without_beam):
    from albert_jax.data.files import expand_inputs, is_url

    with pytest.raises(ValueError, match=r"gs://bucket/docs/\*\.txt: reading a gs:// input needs Apache Beam.*"
                                         r"apache-beam\[gcp\]"):
        expand_inputs(["gs://bucket/docs/*.txt"], "pretraining-data")
    (tmp_path / "a.txt").write_text("x\n")
    assert expand_inputs([tmp_path / "a.txt"], "x") == [str(tmp_path / "a.txt")] and not is_url(tmp_path / "a.txt")
    with pytest.raises(FileNotFoundError, match="pretraining-data input .*b.txt does not exist"):
        expand_inputs([tmp_path / "b.txt"], "pretraining-data")


def test_a_wordpiece_tokenizer_travels_with_its_vocabulary(tmp_path):
    """A Beam worker on another machine unpickles the tokenizer without the vocab file at its path."""
    import pickle

    from albert_jax.data.wordpiece import WordPieceTokenizer

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "##s", "sat"]) + "\n")
    tok = WordPieceTokenizer(vocab, lower=True)
    data, fingerprint = pickle.dumps(tok), tok.fingerprint
    vocab.unlink()
    again = pickle.loads(data)
    assert again.encode("The cats sat") == tok.encode("The cats sat") == [5, 6, 7, 8]
    assert again.fingerprint == fingerprint
    copy = again.vocab_path.parent
    assert copy.is_dir()
    del again  # the worker's copy of the vocabulary goes with its tokenizer: nothing is left in the temp folder
    assert not copy.exists()


def _examples(builder) -> dict[str, list]:
    """Every split's examples in the order the dataset stores them (read without TensorFlow)."""
    return {s: [{k: (v.decode() if isinstance(v, bytes) else v) for k, v in ex.items()}
                for ex in builder.as_data_source(split=s)] for s in builder.info.splits}


@pytest.mark.beam
def test_beam_builds_the_local_corpus_dataset(tmp_path):
    """`data build --runner beam`: the English mix (a 100-documents-per-source subset) as a pipeline over its
    sources is the dataset the local build writes, split for split and example for example, at 2 workers."""
    from albert_jax.data import builders

    local = builders.build("albert_pretrain_en", tmp_path / "local", max_docs=100)
    beam = builders.build("albert_pretrain_en", tmp_path / "beam", beam_options="", workers=2, max_docs=100)
    a, b = _examples(local), _examples(beam)
    assert sum(map(len, a.values())) == 500 and len(a) == 3 and a == b
    with pytest.raises(ValueError, match="no document fell in the validation split"):  # 40 x 5 documents, 1%
        builders.build("albert_pretrain_en", tmp_path / "small", beam_options="", max_docs=40)


@pytest.mark.beam
def test_beam_builds_a_users_text_corpus_and_names_a_bad_line(corpus, tmp_path, capsys):
    from albert_jax.data import builders
    from albert_jax.main import main

    files, _, _ = corpus
    splits = (("train", 0.8), ("validation", 0.1), ("test", 0.1))  # a small corpus: every split gets documents
    local = builders.build("text_corpus/mine", tmp_path / "local", paths=files, splits=splits)
    beam = builders.build("text_corpus/mine", tmp_path / "beam", beam_options="", paths=files, splits=splits)
    assert _examples(local) == _examples(beam) and len(_examples(beam)["train"]) > 30
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"One sentence.\nAnother one.\n\nCaf\xe9 au lait.\n")
    assert main(["data", "build", "text_corpus/bad", "--paths", str(files[0]), str(bad), "--data-dir",
                 str(tmp_path / "b"), "--runner", "beam"]) == 2
    assert "bad.txt:4" in capsys.readouterr().err
    with pytest.raises(ValueError, match="labeled sets are small and build locally"):
        builders.build("rt_sentiment", tmp_path / "r", beam_options="")


@pytest.mark.beam
def test_beam_builds_a_text_corpus_from_a_url_pattern(corpus, tmp_path):
    """`data build text_corpus --paths rooted://docs/*.txt --runner beam`: the files listed and read through Beam's
    filesystems give the local build of the same files, split for split and example for example."""
    import shutil

    from albert_jax.data import builders

    files, _, _ = corpus
    RootedFileSystem.ROOT = str(tmp_path / "store")
    (tmp_path / "store" / "docs").mkdir(parents=True)
    for f in files:
        shutil.copy(f, tmp_path / "store" / "docs" / f.name)
    splits = (("train", 0.8), ("validation", 0.1), ("test", 0.1))
    local = builders.build("text_corpus/mine", tmp_path / "local", paths=sorted(files, key=lambda f: f.name),
                           splits=splits)
    beam = builders.build("text_corpus/mine", tmp_path / "beam", beam_options="--direct_running_mode=in_memory",
                          paths=["rooted://docs/*.txt"], splits=splits)
    assert _examples(local) == _examples(beam) and len(_examples(beam)["train"]) > 30
    with pytest.raises(FileNotFoundError, match="corpus input rooted://docs/\\*.md matches no file"):
        builders.build("text_corpus/none", tmp_path / "none", beam_options="", paths=["rooted://docs/*.md"])


def test_local_sample_is_a_seeded_bottom_k_sample(corpus, tmp_path):
    from albert_jax.data.sentence_sample import local_sample

    files, _, _ = corpus
    a, b = local_sample(files, 300, seed=1), local_sample(files, 300, seed=1)
    c = local_sample(files, 300, seed=2)
    assert a == b and len(a) == 300 and a != c
    every = [line.strip() for f in files for line in open(f, encoding="utf-8") if line.strip()]
    assert set(a) <= set(every) and len(every) > 1000
    # uniform: the sample draws from every file about in proportion to its sentences
    share = sum(s in set(line.strip() for line in open(files[2], encoding="utf-8")) for s in a) / len(a)
    expected = sum(1 for line in open(files[2], encoding="utf-8") if line.strip()) / len(every)
    assert abs(share - expected) < 0.1


@pytest.mark.beam
@pytest.mark.parametrize("workers", [1, 2])
def test_beam_draws_the_local_sample(corpus, tmp_path, workers):
    from albert_jax.data.sentence_sample import local_sample
    from albert_jax.tasks.pretraining.beam import sample_with_beam

    files, _, _ = corpus
    sample_with_beam(files, 300, tmp_path / "s.txt", seed=1, workers=workers)
    assert (tmp_path / "s.txt").read_text(encoding="utf-8").splitlines() == local_sample(files, 300, seed=1)
