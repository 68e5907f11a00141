"""Pretraining instances as an Apache Beam pipeline through TFDS (`pretraining-data create --runner beam`).

The unit of work is one input file, as in the local path (instances.create_pretraining_data): its records are
`instances.shard_records(shard index, file, config, seed, tokenizer)`, a function of those alone. The pipeline is
`Create([(index, file), ...]) | FlatMap(records of that file)`, which TFDS runs on the Beam runner it is given and
writes as ArrayRecord through its own file adapters. So the records are the local path's records, byte for byte
(`record`, our encoding), on any runner and any number of workers; each carries its (shard, index) key, which TFDS
uses to order the output by a hash, as every Beam-built TFDS dataset. NSP's random-document negatives come from the
file's own seeded reservoir (instances.DocumentReservoir), bounded by `nsp_buffer_docs`: the pool is defined by the
file and the seed, never by the runner or the worker count. Memory per worker is one file's stream: split a large
corpus into files of ~100 MB and it stays flat however large the corpus grows (docs/data-at-scale.md).

Beam is optional; importing it and choosing the runner (the Python FnApiRunner unless the user names one, so nothing
is downloaded) is data/beam_runner.py's.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os

import numpy as np
import tensorflow_datasets as tfds
from etils import epath

from albert_jax.data.beam_runner import beam_module, download_config, runner_and_options
from albert_jax.data.builders import tfds_messages_to_stderr
from albert_jax.data.files import absolute, expand_inputs
from albert_jax.data.sentence_sample import keyed_sentences
from albert_jax.data.tokenization import load_tokenizer
from albert_jax.tasks.pretraining import instances as ptd
from albert_jax.tasks.pretraining.records import encode_record

@dataclasses.dataclass(eq=False)
class InstancesConfig(tfds.core.BuilderConfig):
    files: tuple[str, ...] = ()
    tokenizer: str = ""
    pretraining: str = "{}"  # PretrainingConfig as JSON
    seed: int = 12345
    zh_masking: str = "char"


class _FileRecords:
    """FlatMap's function: (shard index, file) -> (key, example) for every record of that file. A class, not a
    closure, so that it pickles to other processes and machines. It carries the tokenizer the launching process
    loaded (a SentencePiece model pickles as its bytes), so a worker needs no copy of the tokenizer file; its input
    file it reads by path or URL (data/files.py)."""

    def __init__(self, config: InstancesConfig, tokenizer):
        self.config = config
        self.tokenizer = tokenizer

    def __call__(self, item):
        shard, path = item
        cfg = ptd.PretrainingConfig(**json.loads(self.config.pretraining))
        for i, rec in enumerate(ptd.shard_records(shard, path, cfg, self.config.seed, self.tokenizer,
                                                  self.config.zh_masking)):
            yield f"{shard:05d}-{i:010d}", {"shard": shard, "index": i, "record": encode_record(rec)}


class PretrainingInstances(tfds.core.GeneratorBasedBuilder):
    """The pretraining records of a list of text files (official format), built by Beam. One config per set of
    inputs, named by their digest, so different inputs never share a directory."""
    VERSION = tfds.core.Version("1.0.0")
    BUILDER_CONFIGS = [InstancesConfig(name="default")]

    def __init__(self, *, config: InstancesConfig | None = None, tokenizer=None, **kwargs):
        super().__init__(config=config, file_format="array_record", **kwargs)
        self.tokenizer = tokenizer  # loaded once here and shipped to the workers (_FileRecords)

    def _info(self):
        return tfds.core.DatasetInfo(
            builder=self, description="ALBERT pretraining records (tasks/pretraining/records.py), one per example",
            features=tfds.features.FeaturesDict({
                "shard": tfds.features.Scalar(dtype=np.int32), "index": tfds.features.Scalar(dtype=np.int64),
                "record": tfds.features.Tensor(shape=(), dtype=np.object_)}))

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        beam = beam_module()
        files = [(i, f) for i, f in enumerate(self.builder_config.files)]
        return beam.Create(files) | beam.FlatMap(_FileRecords(self.builder_config, self.tokenizer))


def builder_for(input_files, tokenizer_path: str, output_dir, cfg: ptd.PretrainingConfig, seed: int,
                zh_masking: str = "char", tokenizer=None) -> PretrainingInstances:
    files = tuple(absolute(f) for f in input_files)
    spec = json.dumps(dataclasses.asdict(cfg), sort_keys=True)
    digest = hashlib.sha256(json.dumps([files, os.path.abspath(tokenizer_path), spec, seed, zh_masking]).encode())
    config = InstancesConfig(name=f"i{digest.hexdigest()[:16]}", files=files, tokenizer=os.path.abspath(tokenizer_path),
                             pretraining=spec, seed=seed, zh_masking=zh_masking)
    return PretrainingInstances(config=config, data_dir=str(output_dir), tokenizer=tokenizer)


def create_with_beam(input_files, tokenizer_path: str, output_dir, cfg: ptd.PretrainingConfig = ptd.PretrainingConfig(),
                     *, seed: int = 12345, zh_masking: str = "char", beam_options: str = "", workers: int = 1) -> dict:
    """Build the records with Beam into `output_dir` (a TFDS data_dir) and write `pretraining_data.json` there,
    which `data.instances` reads like the local path's; returns that summary."""
    config = download_config(beam_options, workers)  # first: without Beam, say how to get it
    input_files = expand_inputs(input_files, "pretraining-data")
    tokenizer = load_tokenizer(tokenizer_path)
    builder = builder_for(input_files, str(tokenizer_path), output_dir, cfg, seed, zh_masking, tokenizer)

    with tfds_messages_to_stderr():  # stdout is the command's JSON
        builder.download_and_prepare(download_config=config)
    # TFDS's own path type: the output directory may be a bucket (gs://B/inst) where TFDS writes the records.
    out = epath.Path(output_dir)
    files = [str(p) for p in sorted(epath.Path(builder.data_dir).glob("*-train.array_record-*"))]
    summary = dict(config=dataclasses.asdict(cfg), seed=seed, vocab_size=tokenizer.vocab_size, zh_masking=zh_masking,
                   tokenizer=tokenizer.name, record_format="tfds", tfds_dir=str(builder.data_dir), files=files,
                   totals={"instances": int(builder.info.splits["train"].num_examples), "files": len(files)})
    tmp = out / ".pretraining_data.json.tmp"
    tmp.write_text(json.dumps(summary, indent=1) + "\n")
    tmp.replace(out / "pretraining_data.json")
    return summary


class _KeyedSentences:
    def __init__(self, seed: int):
        self.seed = seed

    def __call__(self, item):
        index, path = item
        yield from keyed_sentences(index, path, self.seed)


def _joined(keyed: list) -> str:
    return "\n".join(text for _, text in sorted(keyed))


def sample_with_beam(input_files, size: int, output, seed: int = 0, *, beam_options: str = "",
                     workers: int = 1) -> None:
    """Write data/sentence_sample.local_sample's sample to `output`, drawn by a Beam pipeline: every sentence
    keyed, the `size` smallest keys kept by a combiner (at most `size` sentences per worker), one sentence a line
    in key order (one text element, written as one file: WriteToText reaches any filesystem Beam knows)."""
    if size < 1:
        raise ValueError(f"sample size {size}: at least 1")
    runner, options = runner_and_options(beam_options, workers)
    input_files = expand_inputs(input_files, "sample")
    beam = beam_module()
    with beam.Pipeline(runner=runner, options=options) as p:
        _ = (p | beam.Create([(i, absolute(f)) for i, f in enumerate(input_files)])
             | beam.FlatMap(_KeyedSentences(seed))
             | beam.combiners.Top.Smallest(size)
             | beam.Map(_joined)
             | beam.io.WriteToText(str(output), num_shards=1, shard_name_template=""))


class TfdsRecords:
    """Our record bytes from a Beam-built TFDS directory, by index (len, __getitem__, __getitems__): what
    `data.instances` trains from (tasks/pretraining/input.records_source). Picklable for grain's workers."""

    def __init__(self, tfds_dir: str):
        self.tfds_dir = tfds_dir
        self._source = tfds.builder_from_directory(tfds_dir).as_data_source(split="train")

    def __getstate__(self):
        return {"tfds_dir": self.tfds_dir}

    def __setstate__(self, state):
        self.__init__(state["tfds_dir"])

    def __len__(self) -> int:
        return len(self._source)

    def __getitem__(self, i: int) -> bytes:
        return bytes(self._source[int(i)]["record"])

    def __getitems__(self, indices) -> list[bytes]:
        return [bytes(ex["record"]) for ex in self._source.__getitems__([int(i) for i in indices])]


def read_beam_records(output_dir) -> dict[str, bytes]:
    """{key: our record bytes} of a Beam-built directory (tests, and a check against the local path)."""
    summary = json.loads((epath.Path(output_dir) / "pretraining_data.json").read_text())
    builder = tfds.builder_from_directory(summary["tfds_dir"])
    source = builder.as_data_source(split="train")
    return {f"{int(ex['shard']):05d}-{int(ex['index']):010d}": bytes(ex["record"]) for ex in source}
