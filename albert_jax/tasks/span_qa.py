"""Extractive span QA (SQuAD v1.1 / v2.0 and our WordNet lemma-span set) on the training core.

Features are windows over the context with doc stride (tasks/squad.py). v1: the BERT span head, loss = mean of
the start and end cross-entropies; eval decodes the n-best spans per example and scores EM/F1 with the official
normalisation. v2: the official run_squad_v2.py head (XLNet-style end conditioned on the start, answerability
classifier), loss = (start CE + end CE) / 2 + answer-class BCE / 2 (XLNet's weighting, which run_squad_v2.py
keeps); eval predicts "" when the null-score difference passes `null_threshold`, and also reports the best
threshold found on the split (the official v2 evaluation).
"""
from __future__ import annotations

import collections

import jax
import jax.numpy as jnp
import numpy as np

from albert_jax.modeling import AlbertForQuestionAnswering, AlbertForSquadV2
from albert_jax.tasks import metrics as task_metrics
from albert_jax.tasks import squad
from albert_jax.tasks.base import LossTerm
from albert_jax.tasks.classification import DownstreamTask
from albert_jax.tasks.features import Features, TaskDataError, text_of


def from_local_span(r: dict) -> dict:
    """Our span sets: one answer (text, char start) per example."""
    return {"id": text_of(r, "id"), "question": text_of(r, "question"), "context": text_of(r, "context"),
            "answers": [{"text": text_of(r, "answer_text"), "answer_start": int(r["answer_start"])}],
            "is_impossible": False}


def from_tfds_squad(r: dict) -> dict:
    """TFDS squad/v1.1 and squad/v2.0: answers {text: [...], answer_start: [...]}; v2 adds is_impossible."""
    ans = r.get("answers", {})
    texts = [t.decode("utf-8") if isinstance(t, bytes) else str(t) for t in np.asarray(ans.get("text", []))]
    starts = [int(s) for s in np.asarray(ans.get("answer_start", []))]
    impossible = bool(r.get("is_impossible", False)) or not texts
    # v2's unanswerable questions have no answers (their spans are in plausible_answers, not used)
    answers = [] if impossible else [{"text": t, "answer_start": s} for t, s in zip(texts, starts)]
    return {"id": text_of(r, "id"), "question": text_of(r, "question"), "context": text_of(r, "context"),
            "answers": answers, "is_impossible": impossible}


class SpanTask(DownstreamTask):
    # Not bucketed: doc_stride windows fill most features to max_seq_length, and the per-position start/end
    # logits of every eval batch are concatenated over the split for decoding, so they must share one length.
    seq_keys = ()
    ratios = {"task_loss": ("loss_sum", "count")}
    headline = "f1"
    metric_scale = 100.0  # exact_match and f1 in percent, as SQuAD's scripts report them
    loss_terms = (LossTerm("loss_sum", "count"),)

    def __init__(self, name: str, source: str, *, version: int = 1, adapter=from_local_span, dev_splits=("validation",),
                 test_splits=("test",), table14="squad-v1.1", max_seq_length=384, doc_stride=128, max_query_length=64,
                 n_best_size=20, max_answer_length=30, null_threshold=0.0):
        self.name, self.source, self.version, self.adapter = name, source, version, adapter
        self.dev_splits, self.test_splits, self.table14 = tuple(dev_splits), tuple(test_splits), table14
        self.max_seq_length, self.doc_stride, self.max_query_length = max_seq_length, doc_stride, max_query_length
        self.n_best_size, self.max_answer_length, self.null_threshold = n_best_size, max_answer_length, null_threshold

    def model(self, model_cfg):
        return AlbertForSquadV2(model_cfg) if self.version == 2 else AlbertForQuestionAnswering(model_cfg)

    def example_batch(self):
        z = np.zeros((1, 8), np.int32)
        return {"input_ids": z, "input_mask": z + 1, "segment_ids": z, "p_mask": z,
                "start_position": z[:, 0], "end_position": z[:, 0], "is_impossible": z[:, 0]}

    def model_inputs(self, batch):
        x = {"input_ids": batch["input_ids"], "attention_mask": batch["input_mask"],
             "token_type_ids": batch["segment_ids"]}
        if self.version == 2:
            x["p_mask"] = batch["p_mask"]
        return x

    def apply(self, model, params, batch, rngs, deterministic):
        extra = {}
        # The v2 head trains its end logits on the gold start and evaluates them on its top-k starts. A training
        # batch is one without `example_weight` (evaluation batches carry it, features.eval_batches): dropout
        # (`deterministic`, `rngs`) cannot tell, a run with every dropout 0 trains deterministically.
        if self.version == 2 and "example_weight" not in batch:
            extra["start_positions"] = batch["start_position"]
        return model.apply({"params": params}, **self.model_inputs(batch), **extra, deterministic=deterministic,
                           rngs=rngs)

    def featurize(self, records, tokenizer, max_len, split, training):
        stats: collections.Counter = collections.Counter()
        feats, answers = [], {}
        for r in records:
            ex = self.adapter(r)
            answers[ex["id"]] = [a["text"] for a in ex["answers"]] or [""]
            feats += squad.make_features(ex, tokenizer.encode, cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id,
                                         pad_id=tokenizer.pad_id, max_seq_length=max_len, doc_stride=self.doc_stride,
                                         max_query_length=self.max_query_length, is_training=training, stats=stats)
        stats["examples"] = len(records)
        if not feats:  # every training example was skipped (its answer is not in its context)
            raise TaskDataError(f"task {self.name}, split {split!r}: no features from {len(records)} examples ("
                                + ", ".join(f"{k}={v}" for k, v in sorted(stats.items())) + ")")
        arrays = squad.stack_features(feats)
        n = len(feats)
        for k in ("start_position", "end_position", "is_impossible"):
            arrays.setdefault(k, np.zeros(n, np.int32))
        out = Features(split, arrays, meta=feats, stats=dict(stats))
        out.answers = answers
        return out

    def _span_loss(self, outputs, batch):
        w = batch.get("example_weight", jnp.ones(batch["input_ids"].shape[:1], jnp.float32))

        def ce(logits, pos):
            logp = jax.nn.log_softmax(logits.astype(jnp.float32), -1)
            return -jnp.take_along_axis(logp, pos[:, None].astype(jnp.int32), -1)[:, 0]

        if self.version == 2:
            span = 0.5 * (ce(outputs["start_logits"], batch["start_position"])
                          + ce(outputs["end_logits"], batch["end_position"]))
            cls = outputs["cls_logits"].astype(jnp.float32)
            y = batch["is_impossible"].astype(jnp.float32)
            bce = jnp.maximum(cls, 0) - cls * y + jnp.log1p(jnp.exp(-jnp.abs(cls)))
            per = span + 0.5 * bce
        else:
            start, end = outputs
            per = 0.5 * (ce(start, batch["start_position"]) + ce(end, batch["end_position"]))
        return jnp.sum(per * w)

    def sums(self, outputs, batch):
        return {"loss_sum": self._span_loss(outputs, batch)}

    def counts(self, batch):
        return {"count": jnp.sum(batch.get("example_weight", jnp.ones(batch["input_ids"].shape[:1], jnp.float32)))}

    def eval_outputs(self, outputs, batch):
        counts = self.counts(batch)
        if self.version == 2:
            preds = {k: outputs[k] for k in ("start_logits", "end_logits", "top_starts", "cls_logits")}
        else:
            preds = {"start_logits": outputs[0], "end_logits": outputs[1]}
        return counts, {**preds, "index": batch["example_index"]}

    def example_scores(self, predictions, features) -> dict:
        """Per question (sorted ids), for the tables: {"score_f1": 0..1, "score_exact_match": 0/1}, the scores
        finalize averages (v2: answered with the null threshold, as its f1)."""
        texts = self._texts(predictions, features)
        return {f"score_{k}": v for k, v in task_metrics.squad_example_scores(texts, features.answers).items()}

    def _texts(self, predictions, features) -> dict:
        keep = predictions["index"] >= 0
        order = np.argsort(predictions["index"][keep])
        rows = {k: np.asarray(v)[keep][order] for k, v in predictions.items() if k != "index"}
        if self.version == 2:
            texts, _ = squad.decode_v2(features.meta, rows, n_best_size=self.n_best_size,
                                       max_answer_length=self.max_answer_length, null_threshold=self.null_threshold)
            return texts
        return squad.decode_v1(features.meta, rows["start_logits"], rows["end_logits"], n_best_size=self.n_best_size,
                               max_answer_length=self.max_answer_length)

    def finalize(self, sums, predictions, split, features=None):
        if features is None:
            raise ValueError(f"task {self.name}: scoring split {split!r} needs its features (the windows and "
                             "answers its predictions decode against)")
        feats = features
        keep = predictions["index"] >= 0
        order = np.argsort(predictions["index"][keep])
        rows = {k: np.asarray(v)[keep][order] for k, v in predictions.items() if k != "index"}
        meta = feats.meta
        p = self.metric_prefix(split)
        if self.version == 2:
            texts, diffs = squad.decode_v2(meta, rows, n_best_size=self.n_best_size,
                                           max_answer_length=self.max_answer_length, null_threshold=self.null_threshold)
            out = {f"{p}{k}": v for k, v in task_metrics.squad_scores(texts, feats.answers, v2=True).items()}
            spans, _ = squad.decode_v2(meta, rows, n_best_size=self.n_best_size,
                                       max_answer_length=self.max_answer_length, null_threshold=float("inf"))
            best, threshold = task_metrics.best_null_threshold(spans, feats.answers, diffs)
            out[f"{p}best_f1"], out[f"{p}best_f1_threshold"] = best, threshold
        else:
            texts = squad.decode_v1(meta, rows["start_logits"], rows["end_logits"], n_best_size=self.n_best_size,
                                    max_answer_length=self.max_answer_length)
            # v1.1 has no unanswerable question: an answer that normalises to nothing ("the") is not one
            out = {f"{p}{k}": v for k, v in task_metrics.squad_scores(texts, feats.answers, v2=False).items()}
        return {k: float(v) for k, v in out.items()}
