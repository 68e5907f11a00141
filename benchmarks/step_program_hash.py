"""The lowered pretraining train step's StableHLO, hashed: equal hashes mean a change left the program XLA
compiles untouched (docs/architecture.md, "The redesign changed no behaviour").

    .venv/bin/python benchmarks/step_program_hash.py      # one line per sharing mode: sha256[:16], characters

The step is the loop's own (training/step.make_train_step with LAMB), at the smoke model (H=128, L=4, E=64,
vocab 4,000), batch 8, length 64, on abstract parameters: nothing is allocated or run. Run it at two commits of
one venv and compare; a JAX or Flax upgrade changes the text for reasons of its own.
"""
from __future__ import annotations

import hashlib

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from albert_jax.config import preset
from albert_jax.tasks.pretraining.task import PretrainingTask
from albert_jax.training import optim
from albert_jax.training import state as st
from albert_jax.training import step as ts


def step_text(sharing: str) -> str:
    cfg = preset("smoke").replace(vocab_size=4000, sharing=sharing)
    task = PretrainingTask("sop", max_seq_length=64, max_predictions_per_seq=10)
    tx = optim.make_optimizer("lamb", 1e-3, 100, 10)
    params = nn.unbox(st.abstract_params(task, cfg))
    state = st.TrainState(step=jax.ShapeDtypeStruct((), jnp.int32), params=params,
                          opt_state=jax.eval_shape(tx.init, params))
    b, p = (8, 64), (8, 10)
    batch = {"input_ids": np.zeros(b, np.int32), "input_mask": np.ones(b, np.int32),
             "segment_ids": np.zeros(b, np.int32), "masked_lm_positions": np.zeros(p, np.int32),
             "masked_lm_ids": np.zeros(p, np.int32), "masked_lm_weights": np.ones(p, np.float32),
             "next_sentence_labels": np.zeros((8,), np.int32)}
    fn = ts.make_train_step(task, task.model(cfg), tx, 1, True)
    return jax.jit(fn).lower(state, batch, jax.random.PRNGKey(0)).as_text()


if __name__ == "__main__":
    for sharing in ("all", "attention", "none"):
        text = step_text(sharing)
        print(sharing, hashlib.sha256(text.encode()).hexdigest()[:16], len(text))
