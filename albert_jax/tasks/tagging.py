"""Token tagging (POS, NER): one label per word, predicted at the word's first sub-token, as BERT's recipe.

Words are tokenized one by one; the first sub-token of each word carries its tag, the other sub-tokens and the
special tokens carry -1 and are ignored by the loss and the metric.

SentencePiece writes a word boundary as "▁": encoding a word on its own often yields a bare "▁" piece and then the
word's pieces (94% of People's Daily words with our Chinese tokenizer). That bare piece is the same for every word,
so it must never carry the tag, or the head sees one identical embedding for every word. For text written without
spaces (`spaced=False`: Chinese) the bare piece is dropped: the sentence is then tokenized as pretraining saw it,
with no boundary marks between words. For spaced text it stays in the input and the tag goes on the next piece.
Sentences longer than max_len are truncated at a word boundary and counted. Token accuracy is over words: sums of
correct tags over counts of tagged words.
"""
from __future__ import annotations

import collections
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from albert_jax.modeling import AlbertForTokenClassification
from albert_jax.tasks.base import LossTerm
from albert_jax.tasks.classification import DownstreamTask
from albert_jax.tasks.features import Features, TaskDataError, pad_row, text_of


def bare_boundary_id(tokenizer) -> int | None:
    """The id of SentencePiece's lone word-boundary piece "▁", or None (WordPiece, or no such piece)."""
    to_id, to_piece = getattr(tokenizer, "piece_to_id", None), getattr(tokenizer, "id_to_piece", None)
    if to_id is None or to_piece is None:
        return None
    i = to_id("\u2581")
    return i if i is not None and to_piece(i) == "\u2581" else None


class TaggingTask(DownstreamTask):
    seq_keys = ("input_ids", "input_mask", "segment_ids", "labels")  # one tag (or -1) per position
    ratios = {"task_loss": ("loss_sum", "count"), "accuracy": ("correct", "count")}
    headline = "accuracy"
    loss_terms = (LossTerm("loss_sum", "count"),)
    table14 = "ner"

    def __init__(self, name: str, source: str, tags: Sequence[str], *, words_key="words", tags_key="tags",
                 max_seq_length=128, spaced: bool = True):
        self.name, self.source, self.tags = name, source, tuple(tags)
        self.spaced = spaced
        self.words_key, self.tags_key = words_key, tags_key
        self.tag_index = {t: i for i, t in enumerate(self.tags)}
        self.num_labels = len(self.tags)
        self.max_seq_length = max_seq_length

    def model(self, model_cfg):
        return AlbertForTokenClassification(model_cfg, self.num_labels)

    def example_batch(self):
        z = np.zeros((1, 8), np.int32)
        return {"input_ids": z, "input_mask": z + 1, "segment_ids": z, "labels": z - 1}

    def word_pieces(self, tokenizer, word: str, boundary: int | None) -> tuple[list[int], int]:
        """(the word's token ids, the index of the one that carries its tag); see the module docstring."""
        pieces = tokenizer.encode(word) or [tokenizer.unk_id]
        if boundary is None or len(pieces) < 2 or pieces[0] != boundary:
            return pieces, 0
        return (pieces, 1) if self.spaced else (pieces[1:], 0)

    def featurize(self, records, tokenizer, max_len, split, training):
        stats: collections.Counter = collections.Counter()
        boundary = bare_boundary_id(tokenizer)
        rows = []
        for i, r in enumerate(records):
            words, tags = text_of(r, self.words_key).split(" "), text_of(r, self.tags_key).split(" ")
            if len(words) != len(tags):
                raise TaskDataError(f"task {self.name}, split {split!r}, example {i}: {len(words)} words but "
                                    f"{len(tags)} tags")
            ids, labels = [tokenizer.cls_id], [-1]
            for word, tag in zip(words, tags):
                if tag not in self.tag_index:
                    raise TaskDataError(f"task {self.name}, split {split!r}, example {i}: tag {tag!r} is not in "
                                        f"the task's tag set ({len(self.tags)} tags)")
                pieces, first = self.word_pieces(tokenizer, word, boundary)
                if len(ids) + len(pieces) > max_len - 1:
                    stats["truncated"] += 1
                    stats["words_dropped"] += len(words) - (sum(1 for x in labels if x >= 0))
                    break
                ids += pieces
                labels += [-1] * first + [self.tag_index[tag]] + [-1] * (len(pieces) - first - 1)
            ids.append(tokenizer.sep_id)
            labels.append(-1)
            row = pad_row(ids, [0] * len(ids), max_len, tokenizer.pad_id)
            lab = np.full(max_len, -1, np.int32)
            lab[:len(labels)] = labels
            row["labels"] = lab
            rows.append(row)
            stats["words"] += len(words)
        stats["examples"] = len(rows)
        return Features.stack(split, rows, stats=stats)

    def sums(self, outputs, batch):
        labels = batch["labels"]
        w = batch.get("example_weight", jnp.ones(labels.shape[:1], jnp.float32))[:, None] * (labels >= 0)
        logp = jax.nn.log_softmax(outputs.astype(jnp.float32), -1)
        nll = -jnp.take_along_axis(logp, jnp.maximum(labels, 0)[..., None], -1)[..., 0]
        correct = (jnp.argmax(logp, -1) == labels).astype(jnp.float32)
        return {"loss_sum": jnp.sum(nll * w), "correct": jnp.sum(correct * w)}

    def counts(self, batch):
        labels = batch["labels"]
        w = batch.get("example_weight", jnp.ones(labels.shape[:1], jnp.float32))[:, None] * (labels >= 0)
        return {"count": jnp.sum(w.astype(jnp.float32))}

    def eval_outputs(self, outputs, batch):
        """Besides the sums, each sentence's correct and tagged word counts (the tables bootstrap word accuracy
        over sentences as a ratio, ablations/stats.py) and its words per tag (the majority-tag baseline)."""
        labels = batch["labels"]
        tagged = labels >= 0
        correct = (jnp.argmax(outputs, -1) == labels) & tagged
        per_tag = jnp.sum(jax.nn.one_hot(jnp.maximum(labels, 0), self.num_labels, dtype=jnp.int32)
                          * tagged[..., None], axis=1)
        return ({**self.sums(outputs, batch), **self.counts(batch)},
                {"correct": jnp.sum(correct, -1), "tagged": jnp.sum(tagged, -1), "tag_counts": per_tag,
                 "index": batch["example_index"]})

    def finalize(self, sums, predictions, split, features=None):
        p = self.metric_prefix(split)
        n = max(float(sums["count"]), 1.0)
        return {f"{p}accuracy": float(sums["correct"]) / n, f"{p}loss": float(sums["loss_sum"]) / n,
                f"{p}tagged_words": int(sums["count"])}
