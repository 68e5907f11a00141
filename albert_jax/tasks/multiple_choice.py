"""Multiple choice (RACE, and our next-sentence choice set): each (context, option) pair is encoded as
`[CLS] context [SEP] question+option [SEP]`, its pooled output scored by one dense H->1, softmax over the
options (official run_race.py: output_weights [1, H] over the pooled output of each of the 4 pairs).

RACE builds the second segment as the official code does: a question with a blank ("_") gets the option put
in the blank, otherwise the option follows the question; that segment is cut to max_qa_length tokens first.
"""
from __future__ import annotations

import collections
import jax
import jax.numpy as jnp
import numpy as np

from albert_jax.modeling import AlbertForMultipleChoice
from albert_jax.tasks import metrics as task_metrics
from albert_jax.tasks.base import LossTerm
from albert_jax.tasks.classification import DownstreamTask
from albert_jax.tasks.features import Features, TaskDataError, pad_row, text_of, truncate_pair


def from_local_choice(r: dict, num_choices: int = 4) -> tuple[str, str, list[str], int]:
    """next_sentence_choice: (context, question, options, label)."""
    return text_of(r, "context"), "", [text_of(r, f"option_{i}") for i in range(num_choices)], int(r["label"])


def from_tfds_race(r: dict) -> list[tuple[str, str, list[str], int]]:
    """TFDS race: one article with lists of questions, options and answer letters -> one example each."""
    article = text_of(r, "article")
    out = []
    questions = [q.decode("utf-8") if isinstance(q, bytes) else str(q) for q in np.asarray(r["questions"])]
    answers = [a.decode("utf-8") if isinstance(a, bytes) else str(a) for a in np.asarray(r["answers"])]
    options = np.asarray(r["options"])
    for q, a, opts in zip(questions, answers, options):
        opts = [o.decode("utf-8") if isinstance(o, bytes) else str(o) for o in np.asarray(opts)]
        if a.strip() not in ("A", "B", "C", "D"):
            raise TaskDataError(f"RACE answer {a!r} is not one of A, B, C, D")
        out.append((article, q, opts, "ABCD".index(a.strip())))
    return out


class MultipleChoiceTask(DownstreamTask):
    ratios = {"task_loss": ("loss_sum", "count"), "accuracy": ("correct", "count")}
    headline = "accuracy"
    loss_terms = (LossTerm("loss_sum", "count"),)

    def __init__(self, name: str, source: str, *, num_choices: int = 4, adapter=None, expands: bool = False,
                 dev_splits=("validation",), test_splits=("test",), table14="race", max_seq_length=512,
                 max_qa_length=128):
        self.name, self.source, self.num_choices = name, source, num_choices
        self.adapter = adapter or (lambda r: [from_local_choice(r, num_choices)])
        self.expands = expands
        self.dev_splits, self.test_splits, self.table14 = tuple(dev_splits), tuple(test_splits), table14
        self.max_seq_length, self.max_qa_length = max_seq_length, max_qa_length
        self.num_labels = num_choices

    def model(self, model_cfg):
        return AlbertForMultipleChoice(model_cfg)

    def example_batch(self):
        z = np.zeros((1, self.num_choices, 8), np.int32)
        return {"input_ids": z, "input_mask": z + 1, "segment_ids": z, "label": np.zeros((1,), np.int32)}

    def _pair(self, tokenizer, context, question, option, max_len, stats):
        if "_" in question:
            second = question.replace("_", option)
        else:
            second = f"{question} {option}".strip()
        a, b = tokenizer.encode(context), tokenizer.encode(second)
        if len(b) > self.max_qa_length:
            b = b[:self.max_qa_length]
            stats["qa_truncated"] += 1
        if truncate_pair(a, b, max_len - 3):
            stats["truncated"] += 1
        ids = [tokenizer.cls_id, *a, tokenizer.sep_id, *b, tokenizer.sep_id]
        return pad_row(ids, [0] * (len(a) + 2) + [1] * (len(b) + 1), max_len, tokenizer.pad_id)

    def featurize(self, records, tokenizer, max_len, split, training):
        stats: collections.Counter = collections.Counter()
        rows = []
        for r in records:
            for context, question, options, label in self.adapter(r):
                if len(options) != self.num_choices:
                    raise ValueError(f"task {self.name}, split {split!r}: an example has {len(options)} options, "
                                     f"the task has {self.num_choices}")
                pairs = [self._pair(tokenizer, context, question, o, max_len, stats) for o in options]
                row = {k: np.stack([p[k] for p in pairs]) for k in pairs[0]}
                row["label"] = np.asarray(label, np.int32)
                rows.append(row)
        stats["examples"] = len(rows)
        return Features.stack(split, rows, stats=stats)

    def sums(self, outputs, batch):
        labels = batch["label"]
        w = batch.get("example_weight", jnp.ones(labels.shape, jnp.float32)).astype(jnp.float32)
        logp = jax.nn.log_softmax(outputs.astype(jnp.float32), -1)
        nll = -jnp.take_along_axis(logp, jnp.maximum(labels, 0)[:, None].astype(jnp.int32), -1)[:, 0]
        correct = (jnp.argmax(logp, -1) == labels).astype(jnp.float32)
        return {"loss_sum": jnp.sum(nll * w), "correct": jnp.sum(correct * w)}

    def counts(self, batch):
        labels = batch["label"]
        return {"count": jnp.sum(batch.get("example_weight", jnp.ones(labels.shape, jnp.float32)))}

    def eval_outputs(self, outputs, batch):
        return ({**self.sums(outputs, batch), **self.counts(batch)},
                {"pred": jnp.argmax(outputs, -1), "label": batch["label"], "index": batch["example_index"]})

    def finalize(self, sums, predictions, split, features=None):
        keep = predictions["index"] >= 0
        p = self.metric_prefix(split)
        n = max(float(sums["count"]), 1.0)
        return {f"{p}accuracy": task_metrics.accuracy(predictions["pred"][keep], predictions["label"][keep]),
                f"{p}loss": float(sums["loss_sum"]) / n, f"{p}examples": int(keep.sum())}

