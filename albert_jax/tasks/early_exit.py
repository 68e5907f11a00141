"""Patience-based early exit (PABEE, Zhou et al. 2020, "BERT Loses Patience") as a fine-tuning task.

A classifier after every layer (modeling/heads.AlbertForEarlyExit) is trained jointly with PABEE's weighted
loss sum_j j * L_j / sum_j j (deeper classifiers weigh more). At inference an example stops at the first layer
whose prediction has stayed unchanged for `patience` consecutive layers, i.e. whose argmax equals that of the
`patience` layers before it (the paper's counter: +1 when the prediction equals the previous layer's, reset to 0
otherwise, exit when it reaches the patience); an example that never reaches it uses the last layer.

Evaluation computes every layer and derives each example's exit from its per-layer predictions: exact for the
metric, since layer j's prediction does not depend on whether deeper layers run. `finalize` reports, beside the
last layer's metrics, each fixed exit k (`exit<k>/accuracy`) and each patience t in 1..L-1
(`patience<t>/accuracy`, `patience<t>/avg_layers`); patience >= L-1 always ends at the last layer.
`compression/early_exit.py` is the path that really stops computing, tested to give the same predictions.
"""
from __future__ import annotations

import numpy as np
import jax
import jax.numpy as jnp

from albert_jax.configs.schema import HEADS
from albert_jax.modeling import AlbertForEarlyExit
from albert_jax.tasks.base import TaskWrapper
from albert_jax.tasks.classification import ClassificationTask, _row_weight



def loss_weights(num_layers: int) -> np.ndarray:
    """PABEE's weights on the L classifiers' losses: j / sum_j j for layer j = 1..L."""
    j = np.arange(1, num_layers + 1, dtype=np.float32)
    return j / j.sum()


def patience_exit(preds_NL, patience: int) -> np.ndarray:
    """The 1-based layer at which each row of per-layer predictions [N, L] exits with this patience."""
    preds = np.asarray(preds_NL)
    n, num_layers = preds.shape
    if patience < 1:
        raise ValueError(f"patience={patience}: must be an integer >= 1")
    exit_layer = np.full(n, num_layers, np.int32)
    done = np.zeros(n, bool)
    counter = np.zeros(n, np.int32)
    for j in range(1, num_layers):
        counter = np.where(preds[:, j] == preds[:, j - 1], counter + 1, 0)
        hit = ~done & (counter >= patience)
        exit_layer[hit] = j + 1
        done |= hit
    return exit_layer


def unsupported(task) -> str | None:
    """Why `task` cannot take early-exit heads (None when it can)."""
    if not isinstance(task, ClassificationTask) or isinstance(task, EarlyExitClassificationTask):
        return (f"task {task.name} is a {type(task).__name__}; early exit (head=pabee) needs a single-sentence or "
                "sentence-pair classification task")
    if task.regression:
        return (f"task {task.name} is a regression (num_labels=1); early exit (head=pabee) compares argmax "
                "predictions across layers, so it needs a classification task")
    return None


def with_head(task, head: str, num_layers: int):
    """`task` itself for head='default'; its PABEE version for head='pabee'."""
    if head not in HEADS:
        raise ValueError(f"head={head!r}: allowed {', '.join(HEADS)}")
    if head == "default":
        return task
    why = unsupported(task)
    if why:
        raise ValueError(why)
    return EarlyExitClassificationTask(task, num_layers)


class EarlyExitClassificationTask(TaskWrapper):
    """A ClassificationTask (its data, features, metrics and splits) with one classifier per layer."""

    def __init__(self, base: ClassificationTask, num_layers: int):
        super().__init__(base)
        self.num_layers = num_layers
        self.weights = loss_weights(num_layers)
        # Training logs the joint loss, the last layer's accuracy and each exit's accuracy.
        self.ratios = {"task_loss": ("loss_sum", "count"), "accuracy": (f"correct_l{num_layers}", "count"),
                       **{f"accuracy_l{j}": (f"correct_l{j}", "count") for j in range(1, num_layers + 1)}}

    def model(self, model_cfg):
        if model_cfg.num_hidden_layers != self.num_layers:
            raise ValueError(f"task {self.name}: made for {self.num_layers} exits, the model has "
                             f"num_hidden_layers={model_cfg.num_hidden_layers}")
        return AlbertForEarlyExit(model_cfg, self.num_labels)

    def sums(self, outputs, batch):
        logits_BLC, labels = outputs.astype(jnp.float32), batch["label"]
        w = _row_weight(batch, labels.shape[0])
        logp = jax.nn.log_softmax(logits_BLC, -1)
        safe = jnp.clip(labels, 0, self.num_labels - 1).astype(jnp.int32)  # hidden test labels are -1
        nll_BL = -jnp.take_along_axis(logp, safe[:, None, None], -1)[..., 0]
        joint_B = nll_BL @ jnp.asarray(self.weights)  # sum_j j * L_j / sum_j j, per example
        correct_BL = (jnp.argmax(logits_BLC, -1) == labels[:, None]).astype(jnp.float32)
        out = {"loss_sum": jnp.sum(joint_B * w)}
        out.update({f"correct_l{j + 1}": jnp.sum(correct_BL[:, j] * w) for j in range(self.num_layers)})
        return out

    def eval_outputs(self, outputs, batch):
        return ({**self.sums(outputs, batch), **self.counts(batch)},
                {"pred": jnp.argmax(outputs, -1), "label": batch["label"], "index": batch["example_index"]})

    def finalize(self, sums, predictions, split, features=None):
        keep = predictions["index"] >= 0
        preds_NL, label = predictions["pred"][keep], predictions["label"][keep]
        last = {**predictions, "pred": predictions["pred"][:, -1]}
        # the loss, and the last layer's metrics as the plain names
        out = self.base.finalize(sums, last, split, features)
        if (label < 0).all():
            return out
        p = self.metric_prefix(split)
        for k in range(1, self.num_layers + 1):
            out.update(self._scores(f"{p}exit{k}/", preds_NL[:, k - 1], label))
        rows = np.arange(len(label))
        for t in range(1, self.num_layers):
            layer = patience_exit(preds_NL, t)
            out.update(self._scores(f"{p}patience{t}/", preds_NL[rows, layer - 1], label))
            out[f"{p}patience{t}/avg_layers"] = float(layer.mean())
        return out

    def _scores(self, prefix, pred, label) -> dict[str, float]:
        scores = self.base.finalize({"loss_sum": 0.0, "count": 1.0},
                                  {"pred": pred, "label": label, "index": np.zeros(len(label))}, self.dev_splits[0])
        return {f"{prefix}{k}": v for k, v in scores.items() if k in self.metrics}

    def describe(self):
        # "kind" as the run records it (part of its identity: a recorded PABEE run resumes as one)
        return {**self.base.describe(), "kind": type(self).__name__, "head": "pabee", "num_layers": self.num_layers}
