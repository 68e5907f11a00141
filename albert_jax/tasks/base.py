"""The Task interface: everything that differs between pretraining and each downstream task.

The training core (albert_jax/training) knows a task only through these methods:

- `model(model_cfg)` -> a flax module; `example_batch()` -> one row of every model input (for init shapes);
  `apply(model, params, batch, rngs, deterministic)` -> the model's outputs for a batch.
- `sums(outputs, batch)` -> per-batch SUMS (loss numerators, correct counts); `counts(batch)` -> their
  DENOMINATORS, computed from the batch alone. The loss is `sum_t sums[t] / (total counts[c_t] + eps_t)` over
  `loss_terms`, where the total is over the whole global batch: the step computes the counts first, so gradient
  accumulation and multi-host reduction give exactly the full-batch gradient whatever each micro-batch holds.
- `ratios`: which sum/count pairs are logged as means (mlm_accuracy = mlm_correct / mlm_count).
- Evaluation: `eval_outputs(outputs, batch)` -> (sums, per-example predictions or None); `finalize(sums,
  predictions, split)` -> metrics. Predictions let non-additive metrics (Matthews, Spearman, SQuAD EM/F1) be
  computed over the whole split.
- `headline`: the metric the best dev checkpoint is chosen by (higher is better).

Padding rows in evaluation batches carry `example_weight` 0: tasks multiply their sums by it.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class LossTerm:
    sum: str  # a key of sums()
    count: str  # a key of counts()
    eps: float = 0.0  # added to the denominator (the official MLM loss adds 1e-5)


class Task:
    name: str = "task"
    loss_terms: tuple[LossTerm, ...] = ()
    ratios: Mapping[str, tuple[str, str]] = {}
    headline: str = "accuracy"
    metric_scale: float = 1.0  # the metrics' unit: 1 (a fraction) or 100 (SQuAD's scripts report percentages)
    # The batch arrays with a sequence (last) axis, which length bucketing may cut (data/bucketing.py); () keeps
    # this task's batches at full length.
    seq_keys: tuple[str, ...] = ("input_ids", "input_mask", "segment_ids")

    # ---------------------------------------------------------------------------------------------- model
    def model(self, model_cfg):
        raise NotImplementedError

    def example_batch(self) -> dict[str, Any]:
        raise NotImplementedError

    def init_inputs(self, batch: dict) -> dict:
        """The keyword inputs `model.init` needs (defaults to what `apply` passes)."""
        return self.model_inputs(batch)

    def model_inputs(self, batch: dict) -> dict:
        raise NotImplementedError

    def apply(self, model, params, batch: dict, rngs, deterministic: bool):
        return model.apply({"params": params}, **self.model_inputs(batch), deterministic=deterministic, rngs=rngs)

    # ---------------------------------------------------------------------------------------------- loss
    def sums(self, outputs, batch: dict) -> dict[str, jnp.ndarray]:
        raise NotImplementedError

    def counts(self, batch: dict) -> dict[str, jnp.ndarray]:
        raise NotImplementedError

    def loss(self, sums: dict, totals: dict) -> jnp.ndarray:
        return sum(sums[t.sum] / (totals[t.count] + t.eps) for t in self.loss_terms)

    # ---------------------------------------------------------------------------------------------- eval
    def eval_outputs(self, outputs, batch: dict) -> tuple[dict, dict | None]:
        """(sums over the batch's real rows, per-example predictions or None)."""
        return {**self.sums(outputs, batch), **self.counts(batch)}, None

    def finalize(self, sums: dict, predictions: dict | None, split: str, features=None) -> dict[str, float]:
        """Metrics of a whole split from its summed sums and per-example predictions; `features`: the split's
        (tasks/features.EvalSet), for tasks that decode predictions against them."""
        return {name: float(sums[s] / max(float(sums[c]), 1e-12)) for name, (s, c) in self.ratios.items()}

    def describe(self) -> dict:
        """What a run records about its task (config.json)."""
        return {"name": self.name}

    def flop_options(self) -> dict:
        """Keyword arguments of AlbertConfig.flops_per_token for this task's step: a downstream task runs no MLM
        head (pretraining overrides this with the positions it scores)."""
        return {"masked_fraction": 0.0}


class TaskWrapper:
    """A task that changes part of another task's behaviour and hands it the rest, by delegation: the one way a task
    is wrapped (PABEE's per-layer heads in tasks/early_exit.py, distillation in runs/distill.py). What the wrapper
    defines is its own; every other attribute is the base task's. A method of the base task that calls another of
    its methods calls its own, never the wrapper's: a wrapper overrides each method whose result it changes."""

    def __init__(self, base):
        self.base = base

    def __getattr__(self, name: str):
        if name == "base":  # not set yet (copying, unpickling): no base to ask
            raise AttributeError(name)
        return getattr(self.base, name)


def weighted_sum(x, weight):
    return jnp.sum(x.astype(jnp.float32) * weight.astype(jnp.float32))
