"""run.py finetune: fine-tuning step throughput on real task batches, ours full-length vs ours bucketed vs HF.

Batches of 32 come from the task's own training iterator (`TaskData.train_iterator`, grain order, one seed):
ours at full max_seq_length; ours with data.buckets='auto' (the same rows, each batch cut to its bucket:
data/bucketing.py); HF transformers AlbertForSequenceClassification + torch AdamW with the usual dynamic padding
(the same full batches, each cut to its longest row). Ours is our training core's step (training/step.py
make_train_step) with optax AdamW at torch's settings; the same random init for both (interop.hf.params_to_hf).
The systems take turns step by step, with the ceiling's GEMM among them (the share of the ceiling is of the same
rounds); every distinct bucket shape is compiled before the clock starts.
The whole-loop, per-task measurement (evaluation, compile, peak RSS per task) is finetune_throughput.py.
"""
from __future__ import annotations

import time

import numpy as np

import common
import models
from bench_inference import _hf_model

TASKS = ("rt_sentiment", "wordnet_wic")
LR, WD = 1e-4, 0.01  # torch.optim.AdamW's default weight decay, used by both


def _batches(data, batch: int, n: int, seed: int = 0) -> list[dict]:
    it = data.train_iterator(batch, None, seed)
    return [{k: np.asarray(v) for k, v in next(it).items()} for _ in range(n)]


def task_rows(task_name: str, name: str, tok, quick: bool, steps: int, batch=32, max_len=128):
    import jax
    import jax.numpy as jnp
    import optax
    import torch

    from albert_jax.data import bucketing
    from albert_jax.tasks.registry import make_task
    from albert_jax.training import step as ts
    from albert_jax.training.state import TrainState, fresh_params

    task = make_task(task_name)
    data = task.prepare(tok, max_len, limit=4 * batch if quick else 0)
    cfg = models.model_config(name, vocab_size=tok.vocab_size, max_position_embeddings=max(512, max_len),
                              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                              classifier_dropout_prob=0.0)
    warm = 1
    full = _batches(data, batch, warm + steps)
    data.buckets = bucketing.bucket_lengths(max_len, "auto")
    cut = _batches(data, batch, warm + steps)
    assert all(np.array_equal(a["label"], b["label"]) for a, b in zip(full, cut))  # the same rows, same order
    params = fresh_params(task, cfg, jax.random.PRNGKey(0))
    tx = optax.adamw(LR, weight_decay=WD)
    train = jax.jit(ts.make_train_step(task, task.model(cfg), tx), donate_argnums=0)
    rng = jax.random.PRNGKey(1)
    states = {k: TrainState(jnp.zeros((), jnp.int32), jax.tree.map(jnp.array, params), tx.init(params))
              for k in ("full", "bucketed")}

    hf = _hf_model("AlbertForSequenceClassification", cfg, params, "sequence",
                   [str(i) for i in range(task.num_labels)]).train()
    opt = torch.optim.AdamW(hf.parameters(), lr=LR, weight_decay=WD)
    hf_batches = common.hf_dynamic_padding(full, labels=True)

    def ours(key, b):
        states[key], m = train(states[key], b, rng)
        jax.block_until_ready(m)

    def theirs(b):
        hf(**b).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    dev = {k: [jax.device_put(b) for b in bs] for k, bs in (("full", full), ("bucketed", cut))}
    seen = set()  # compile every shape before timing: the timed loop then runs compiled programs only
    for b in dev["full"][:warm] + [b for b in dev["bucketed"] if not (b["input_ids"].shape in seen
                                                                      or seen.add(b["input_ids"].shape))]:
        ours("full" if b["input_ids"].shape[-1] == max_len else "bucketed", b)
    for b in hf_batches[:warm]:
        theirs(b)
    probe, probe_flops, side = common.gemm_probe(quick)  # the ceiling's GEMM takes its turn in every round too
    total = {"albert_jax full-length": 0.0, "albert_jax bucketed": 0.0, "hf_torch dynamic padding": 0.0}
    probe_s = []
    for i in range(warm, warm + steps):
        for system, fn in (("albert_jax full-length", lambda: ours("full", dev["full"][i])),
                           ("albert_jax bucketed", lambda: ours("bucketed", dev["bucketed"][i])),
                           ("hf_torch dynamic padding", lambda: theirs(hf_batches[i]))):
            t0 = time.perf_counter()
            fn()
            total[system] += time.perf_counter() - t0
        t0 = time.perf_counter()
        probe()
        probe_s.append(time.perf_counter() - t0)
    ceil = common.probe_ceiling(probe_flops, side, probe_s)
    lengths = {"albert_jax full-length": [b["input_ids"].shape[-1] for b in full[warm:]],
               "albert_jax bucketed": [b["input_ids"].shape[-1] for b in cut[warm:]],
               "hf_torch dynamic padding": [b["input_ids"].shape[-1] for b in hf_batches[warm:]]}
    useful = float(sum(b["input_mask"].sum() for b in full[warm:]))
    rows = []
    for system, s in total.items():
        rows.append({"model": name, "task": task_name, "batch": batch, "steps": steps, "system": system,
                     "step_s": s / steps, "examples_per_s": batch * steps / s,
                     **common.rate_fields(batch, lengths[system],
                                          lambda n: cfg.flops_per_token(n, masked_fraction=0.0), s, useful, ceil),
                     "speedup_vs_full": total["albert_jax full-length"] / s,
                     "ours_bucketed_over_this": s / total["albert_jax bucketed"]})
    return rows


def run(args, ceil: dict) -> dict:
    names = models.names(args.models, "tiny" if args.quick else "smoke4")
    steps = args.steps or (1 if args.quick else 20)
    tok = common.tokenizer(args.tokenizer, args.quick)
    rows = [r for n in names for t in TASKS for r in task_rows(t, n, tok, args.quick, steps)]
    summary = {}
    for n in names:
        for t in TASKS:
            step = {r["system"]: r["step_s"] for r in rows if r["model"] == n and r["task"] == t}
            full, cut, hf = (step[k] for k in ("albert_jax full-length", "albert_jax bucketed",
                                               "hf_torch dynamic padding"))
            summary.update({f"{t}_{n}_bucketed_over_full": full / cut, f"{t}_{n}_bucketed_over_hf": hf / cut,
                            f"{t}_{n}_full_over_hf": hf / full})
    return {"tables": {"fine-tuning step (batch 32, max length 128)": rows}, "summary": summary}
