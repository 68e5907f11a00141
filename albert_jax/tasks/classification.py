"""Downstream tasks on the pooled [CLS] output: single sentences, sentence pairs, regression.

`DownstreamTask` holds what every fine-tuning task shares: where its data comes from (a TFDS name: one of our
builders, or a catalog dataset such as glue/cola), which splits are train / dev / test, and `prepare()`, which
reads the splits and featurizes them with the run's tokenizer. `ClassificationTask` is the official
run_classifier.py: dropout on the pooled output, one dense layer, softmax cross-entropy (or MSE for STS-B).
"""
from __future__ import annotations

import collections
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from albert_jax.modeling import AlbertForSequenceClassification
from albert_jax.tasks import metrics as task_metrics
from albert_jax.tasks.base import LossTerm, Task
from albert_jax.tasks.features import Features, TaskData, TaskDataError, encode_text, text_of


def load_records(source, split: str, limit: int = 0) -> list[dict]:
    """The records of one split, in order: all of them, or the first `limit` (> 0). `source` may be a tuple of
    datasets read one after the other (RACE). Only as far as `limit` is read: decoding is ~45 µs a record, so a
    smoke run's 32 examples no longer decode the whole split. (Batched `__getitems__` reads measured no faster:
    the decoding, not the read, is the time.)"""
    from albert_jax.data import builders  # noqa: PLC0415  heavy: tfds

    if hasattr(source, "records"):  # a user's files (tasks/from_files.FileSource)
        return source.records(split, limit)
    if isinstance(source, (tuple, list)):
        out = []
        for s in source:
            out += load_records(s, split, limit - len(out) if limit else 0)
            if limit and len(out) >= limit:
                break
        return out
    try:
        src = builders.load_source(source, split)
    except ValueError as e:
        if "Unknown split" in str(e) or "split" in str(e).lower():
            raise TaskDataError(f"{source}: no split {split!r} ({str(e).splitlines()[0]})") from None
        raise
    n = min(limit, len(src)) if limit else len(src)
    return [src[i] for i in range(n)]


def sample_train(records: list[dict], n: int, task: str) -> list[dict]:
    """`n` of the training records, drawn once with seed 0 and kept in their split order: every run that asks for
    `n` gets the same examples, whatever its own seed, and a larger `n` is not a superset of a smaller one."""
    if n > len(records):
        raise TaskDataError(f"data.train_examples={n}: task {task}'s train split has only {len(records)} examples")
    keep = np.sort(np.random.default_rng(0).choice(len(records), size=n, replace=False))
    return [records[i] for i in keep]


class DownstreamTask(Task):
    source: str = ""
    train_split = "train"
    dev_splits: Sequence[str] = ("validation",)
    test_splits: Sequence[str] = ("test",)
    max_seq_length = 128  # this task's usual length; the experiment config may override it
    # The Table 14 row whose hyperparameters the paper scale uses (the nearest GLUE analogue for our own sets).
    table14 = "sst-2"

    def featurize(self, records: list[dict], tokenizer, max_len: int, split: str, training: bool) -> Features:
        raise NotImplementedError

    def prepare(self, tokenizer, max_len: int, limit: int = 0, train_examples: int = 0) -> TaskData:
        """Every split featurized; `limit` > 0 keeps the first `limit` examples of each (smoke runs);
        `train_examples` > 0 then keeps a fixed random sample of that many training examples (labels made
        scarce). The task keeps nothing of them: what finalize() decodes against travels with each eval set
        (features.EvalSet)."""
        def split(name, training):
            records = load_records(self.source, name, limit)
            if not records:
                raise TaskDataError(f"task {self.name}: split {name!r} of {self.source} is empty")
            if training and train_examples:
                records = sample_train(records, train_examples, self.name)
            return self.featurize(records, tokenizer, max_len, name, training)

        train = split(self.train_split, True)
        dev = {s: split(s, False) for s in self.dev_splits}
        test = {s: split(s, False) for s in self.test_splits}
        sizes = {f.split: len(f) for f in [train, *dev.values(), *test.values()]}
        stats = {f.split: f.stats for f in [train, *dev.values(), *test.values()] if f.stats}
        summary = {"task": self.name, "source": self.source_name(), "max_seq_length": max_len, "examples": sizes,
                   "truncation": stats, "tokenizer": getattr(tokenizer, "name", ""),
                   "tokenizer_sha256": getattr(tokenizer, "fingerprint", "")}
        return TaskData(tokenizer, train, dev, test, summary, seq_keys=tuple(self.seq_keys))

    def model_inputs(self, batch):
        """The encoder inputs every downstream head takes (span QA adds p_mask)."""
        return {"input_ids": batch["input_ids"], "attention_mask": batch["input_mask"],
                "token_type_ids": batch["segment_ids"]}

    def metric_prefix(self, split: str) -> str:
        """The first dev split's metrics are plain (eval/accuracy); other splits are prefixed (MNLI-mm)."""
        return "" if split in (self.dev_splits[:1]) else f"{split}/"

    def source_name(self):
        """The source as config.json records it: a TFDS name (or names), or the user's train file."""
        return str(self.source) if hasattr(self.source, "records") else self.source

    def describe(self):
        out = {"name": self.name, "source": self.source_name(), "num_labels": getattr(self, "num_labels", None),
               "kind": type(self).__name__}
        if getattr(self, "spec", None):  # a task from a user's files: what rebuilds it (tasks/from_files.py)
            out["spec"] = self.spec
        return out


def _row_weight(batch, n):
    return batch.get("example_weight", jnp.ones((n,), jnp.float32)).astype(jnp.float32)


class ClassificationTask(DownstreamTask):
    ratios = {"task_loss": ("loss_sum", "count"), "accuracy": ("correct", "count")}

    def __init__(self, name: str, source: str, text_keys: Sequence[str], num_labels: int, *,
                 label_key: str = "label", metrics: Sequence[str] = ("accuracy",), headline: str = "accuracy",
                 dev_splits=("validation",), test_splits=("test",), table14: str = "sst-2", max_seq_length=128):
        self.name, self.source, self.text_keys, self.label_key = name, source, tuple(text_keys), label_key
        self.num_labels, self.metrics, self.headline = num_labels, tuple(metrics), headline
        self.dev_splits, self.test_splits, self.table14 = tuple(dev_splits), tuple(test_splits), table14
        self.max_seq_length = max_seq_length
        self.regression = num_labels == 1
        self.loss_terms = (LossTerm("loss_sum", "count"),)
        if self.regression:
            self.ratios = {"task_loss": ("loss_sum", "count")}

    def model(self, model_cfg):
        return AlbertForSequenceClassification(model_cfg, self.num_labels)

    def example_batch(self):
        return {"input_ids": np.zeros((1, 8), np.int32), "input_mask": np.ones((1, 8), np.int32),
                "segment_ids": np.zeros((1, 8), np.int32),
                "label": np.zeros((1,), np.float32 if self.regression else np.int32)}

    def featurize(self, records, tokenizer, max_len, split, training):
        stats: collections.Counter = collections.Counter()
        rows = []
        for i, r in enumerate(records):
            texts = [text_of(r, k) for k in self.text_keys]
            label = r[self.label_key]
            if not self.regression and not 0 <= int(label) < self.num_labels:
                if training or int(label) >= 0:
                    raise TaskDataError(f"task {self.name}, split {split!r}, example {i}: label {label} outside "
                                        f"0..{self.num_labels - 1}")
            row = encode_text(tokenizer, texts[0], texts[1] if len(texts) > 1 else None, max_len, stats)
            row["label"] = np.asarray(label, np.float32 if self.regression else np.int32)
            rows.append(row)
        stats["examples"] = len(rows)
        return Features.stack(split, rows, stats=stats)

    def _logits(self, outputs):
        return outputs.astype(jnp.float32)

    def sums(self, outputs, batch):
        logits, labels = self._logits(outputs), batch["label"]
        w = _row_weight(batch, labels.shape[0])
        if self.regression:
            err = jnp.square(logits[:, 0] - labels.astype(jnp.float32))
            return {"loss_sum": jnp.sum(err * w)}
        logp = jax.nn.log_softmax(logits, -1)
        safe = jnp.clip(labels, 0, self.num_labels - 1).astype(jnp.int32)  # hidden test labels are -1
        nll = -jnp.take_along_axis(logp, safe[:, None], -1)[:, 0]
        correct = (jnp.argmax(logits, -1) == labels).astype(jnp.float32)
        return {"loss_sum": jnp.sum(nll * w), "correct": jnp.sum(correct * w)}

    def counts(self, batch):
        return {"count": jnp.sum(_row_weight(batch, batch["label"].shape[0]))}

    def eval_outputs(self, outputs, batch):
        logits = self._logits(outputs)
        pred = logits[:, 0] if self.regression else jnp.argmax(logits, -1)
        return ({**self.sums(outputs, batch), **self.counts(batch)},
                {"pred": pred, "label": batch["label"], "index": batch["example_index"]})

    def finalize(self, sums, predictions, split, features=None):
        keep = predictions["index"] >= 0
        pred, label = predictions["pred"][keep], predictions["label"][keep]
        p = self.metric_prefix(split)
        out = {f"{p}loss": float(sums["loss_sum"]) / max(float(sums["count"]), 1.0), f"{p}examples": int(keep.sum())}
        if ((label == -1) if self.regression else (label < 0)).all():
            return out  # hidden labels (GLUE test, STS-B's included, are -1): nothing to score
        fns = {"accuracy": task_metrics.accuracy, "f1": task_metrics.f1_binary, "mcc": task_metrics.matthews_corrcoef,
               "pearson": task_metrics.pearson, "spearman": task_metrics.spearman}
        for name in self.metrics:
            out[f"{p}{name}"] = float(fns[name](pred, label))
        return out
