"""Pretraining as a task: MLM over the masked positions plus the inter-sentence loss (SOP or NSP), as official.

The official loss is the MLM mean over masked positions (+1e-5 in the denominator) plus the mean sentence CE,
unweighted; here both are sums over the global batch divided by its counts, which is the same number for one
batch and stays exact under gradient accumulation. Evaluation runs the same model on two held-out sets, one
of SOP pairs and one of NSP pairs, so every model is measured on both (the paper's Table 5).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from albert_jax.modeling import AlbertForPreTraining
from albert_jax.tasks.base import LossTerm, Task
from albert_jax.tasks.pretraining.instances import SENTENCE_TASKS

BATCH_KEYS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
              "masked_lm_weights", "next_sentence_labels")
# Packed rows (packing.py) carry these too; their presence is what makes a batch packed.
PACKED_KEYS = ("pack_ids", "position_ids", "cls_positions", "next_sentence_weights")
PACKED_KEY = "pack_ids"


def _nll_and_correct(logits, labels):
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    nll = -jnp.take_along_axis(logp, labels[..., None].astype(jnp.int32), axis=-1)[..., 0]
    return nll, (jnp.argmax(logp, -1) == labels).astype(jnp.float32)


class PretrainingTask(Task):
    ratios = {"mlm_loss": ("mlm_loss_sum", "mlm_count"), "mlm_accuracy": ("mlm_correct", "mlm_count"),
              "sentence_loss": ("sentence_loss_sum", "sentence_count"),
              "sentence_accuracy": ("sentence_correct", "sentence_count")}
    headline = "mlm_accuracy"
    seq_keys = ()  # pretraining rows are filled to max_seq_length by create_pretraining_data: nothing to cut

    def __init__(self, sentence_task: str = "sop", max_seq_length: int = 8, max_predictions_per_seq: int = 2):
        if sentence_task not in SENTENCE_TASKS:
            raise ValueError(f"data.task={sentence_task!r}: allowed {', '.join(SENTENCE_TASKS)}")
        self.name = f"pretrain_{sentence_task}"
        self.sentence_task = sentence_task
        self.max_seq_length, self.max_predictions_per_seq = max_seq_length, max_predictions_per_seq
        mlm = LossTerm("mlm_loss_sum", "mlm_count", eps=1e-5)
        # 'none' trains MLM only; the sentence head is still evaluated (at chance), as Table 5's first row.
        self.loss_terms = (mlm,) if sentence_task == "none" else (mlm, LossTerm("sentence_loss_sum", "sentence_count"))

    def model(self, model_cfg):
        return AlbertForPreTraining(model_cfg)

    def flop_options(self) -> dict:
        # The MLM head scores max_predictions_per_seq positions of each row (gathered), not 15% of its tokens:
        # 20 of 512 at the paper's setting (the official cap).
        return {"masked_fraction": self.max_predictions_per_seq / self.max_seq_length}

    def example_batch(self):
        S, P = self.max_seq_length, self.max_predictions_per_seq
        return {"input_ids": np.zeros((1, S), np.int32), "input_mask": np.ones((1, S), np.int32),
                "segment_ids": np.zeros((1, S), np.int32), "masked_lm_positions": np.zeros((1, P), np.int32),
                "masked_lm_ids": np.zeros((1, P), np.int32), "masked_lm_weights": np.ones((1, P), np.float32),
                "next_sentence_labels": np.zeros((1,), np.int32)}

    def model_inputs(self, batch):
        inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["input_mask"],
                  "token_type_ids": batch["segment_ids"], "masked_lm_positions": batch["masked_lm_positions"]}
        if PACKED_KEY in batch:  # a packed training batch (packing.py); evaluation batches are never packed
            inputs.update(pack_ids=batch["pack_ids"], position_ids=batch["position_ids"],
                          cls_positions=batch["cls_positions"])
        return inputs

    def sums(self, outputs, batch):
        w = batch["masked_lm_weights"].astype(jnp.float32)
        nll, correct = _nll_and_correct(outputs["mlm_logits"], batch["masked_lm_ids"])
        if PACKED_KEY in batch:  # one sentence label per packed example, weight 0 on unused slots
            s_w = batch["next_sentence_weights"].astype(jnp.float32)
            s_nll, s_correct = _nll_and_correct(outputs["sop_logits"], batch["next_sentence_labels"])
            return {"mlm_loss_sum": jnp.sum(nll * w), "mlm_correct": jnp.sum(correct * w),
                    "sentence_loss_sum": jnp.sum(s_nll * s_w), "sentence_correct": jnp.sum(s_correct * s_w)}
        labels = batch["next_sentence_labels"].reshape(-1)
        row_w = batch.get("example_weight", jnp.ones(labels.shape, jnp.float32)).astype(jnp.float32)
        s_nll, s_correct = _nll_and_correct(outputs["sop_logits"], labels)
        return {"mlm_loss_sum": jnp.sum(nll * w * row_w[:, None]), "mlm_correct": jnp.sum(correct * w * row_w[:, None]),
                "sentence_loss_sum": jnp.sum(s_nll * row_w), "sentence_correct": jnp.sum(s_correct * row_w)}

    def counts(self, batch):
        # real_tokens is no loss denominator: the loop logs real (unpadded) tokens per second from it.
        if PACKED_KEY in batch:
            return {"mlm_count": jnp.sum(batch["masked_lm_weights"].astype(jnp.float32)),
                    "sentence_count": jnp.sum(batch["next_sentence_weights"].astype(jnp.float32)),
                    "real_tokens": jnp.sum(batch["input_mask"].astype(jnp.float32))}
        labels = batch["next_sentence_labels"].reshape(-1)
        row_w = batch.get("example_weight", jnp.ones(labels.shape, jnp.float32)).astype(jnp.float32)
        return {"mlm_count": jnp.sum(batch["masked_lm_weights"].astype(jnp.float32) * row_w[:, None]),
                "sentence_count": jnp.sum(row_w),
                "real_tokens": jnp.sum(batch["input_mask"].astype(jnp.float32) * row_w[:, None])}

    def eval_outputs(self, outputs, batch):
        """Sums, and per example (unpacked eval batches): the sentence prediction's correctness, the masked tokens
        predicted correctly and their count, and the row's weight (0 for padding rows). The final evaluation keeps
        them: the tables' intervals bootstrap over the held-out examples."""
        sums = {**self.sums(outputs, batch), **self.counts(batch)}
        if PACKED_KEY in batch:
            return sums, None
        labels = batch["next_sentence_labels"].reshape(-1)
        w = batch["masked_lm_weights"].astype(jnp.float32)
        _, correct = _nll_and_correct(outputs["mlm_logits"], batch["masked_lm_ids"])
        _, s_correct = _nll_and_correct(outputs["sop_logits"], labels)
        weight = batch.get("example_weight", jnp.ones(labels.shape, jnp.float32)).astype(jnp.float32)
        return sums, {"sentence_correct": s_correct, "label": labels, "mlm_correct": jnp.sum(correct * w, -1),
                      "mlm_count": jnp.sum(w, -1), "weight": weight}

    def finalize(self, sums, predictions, split, features=None):
        """split 'sop' or 'nsp': that set's sentence accuracy/loss; MLM is measured on the first set (sop)."""
        n = max(float(sums["sentence_count"]), 1.0)
        out = {f"{split}_accuracy": float(sums["sentence_correct"]) / n,
               f"{split}_loss": float(sums["sentence_loss_sum"]) / n}
        if split == "sop":
            m = max(float(sums["mlm_count"]), 1.0)
            out.update(mlm_accuracy=float(sums["mlm_correct"]) / m, mlm_loss=float(sums["mlm_loss_sum"]) / m)
        return out

    def describe(self):
        return {"name": self.name, "sentence_task": self.sentence_task}
