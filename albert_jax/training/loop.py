"""Pretraining: `train_and_evaluate(config, workdir)`, one linear function in phases.

setup (distributed, mesh, config.json) -> data -> model + optimizer + sharded state -> restore or init ->
loop (dispatch step t, then read step t-1's metrics; log; evaluate; checkpoint; stop on SIGTERM/SIGINT or a
non-finite loss) -> final evaluation and checkpoint.
"""
from __future__ import annotations

import json
import logging
import math
import os
import signal
import sys
import time

import jax

from albert_jax.training import checkpoints as ckpt
from albert_jax.training import metrics as mx
from albert_jax.training import optim
from albert_jax import sharding as shd
from albert_jax.training import step as ts
from albert_jax.config import parse_overrides, preset

log = logging.getLogger("albert_jax.training.loop")


class NonFiniteLossError(RuntimeError):
    pass


def model_config_from(config, vocab_size: int):
    overrides = parse_overrides(config.model.overrides)
    overrides.setdefault("vocab_size", vocab_size)
    return preset(config.model.preset, **overrides)


def _jsonable(config) -> dict:
    return json.loads(config.to_json_best_effort()) if hasattr(config, "to_json_best_effort") else dict(config)


def _truncate_metrics(path: str, last_step: int) -> None:
    """Drop records past the restored step: they describe training that the resume rolls back."""
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    kept = [ln for ln in lines if ln.strip() and json.loads(ln).get("step", 0) <= last_step]
    if len(kept) != len(lines):
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(kept)
        os.replace(tmp, path)


def params_from_workdir(workdir: str, step: int | None = None):
    """(step, model config, parameters) of a pretraining run's checkpoint (the latest when step is None)."""
    from flax import linen as nn

    from albert_jax.config import AlbertConfig

    with open(os.path.join(workdir, "config.json"), encoding="utf-8") as f:
        cfg = AlbertConfig.from_dict(json.load(f)["model"])
    abstract = nn.unbox(ts.abstract_params(cfg))  # ShapeDtypeStructs: nothing allocated before the restore
    step, params = ckpt.restore_params_only(os.path.join(workdir, "checkpoints"), abstract, step)
    return step, cfg, params


def initial_params(source_workdir: str, mode: str, model_cfg):
    """Parameters from another run's latest checkpoint: 'copy' (same model), 'group0' (every group or layer
    from the shared set: the official --init_from_group0) or 'deeper' (stack a shallower model's layers)."""
    from albert_jax.modeling import init_tricks

    step, src_cfg, params = params_from_workdir(source_workdir)
    log.info("initialising from %s step %d (%s)", source_workdir, step, mode)
    if mode == "copy":
        if src_cfg.replace(scan_layers=model_cfg.scan_layers, remat_policy=model_cfg.remat_policy,
                           dtype=model_cfg.dtype) != model_cfg:
            raise ValueError(f"train.init_mode='copy' needs the same model as {source_workdir}; use 'group0' "
                             "or 'deeper' to change sharing or depth")
        return params
    if mode == "group0":
        return init_tricks.init_from_group0(params, src_cfg, model_cfg)
    if mode == "deeper":
        return init_tricks.warm_start_deeper(params, src_cfg, model_cfg)
    raise ValueError(f"train.init_mode={mode!r}: allowed copy, group0, deeper")


def evaluate(eval_step, params, iterators: dict, num_batches: int) -> dict[str, float]:
    """Held-out MLM accuracy plus SOP and NSP accuracy, whatever inter-sentence loss the model trained with."""
    out = {}
    for task, make_iter in iterators.items():
        sums = None
        for _, batch in zip(range(num_batches), make_iter()):
            m = jax.device_get(eval_step(params, batch))
            sums = m if sums is None else {k: sums[k] + m[k] for k in m}
        if sums is None:
            continue
        out[f"eval/{task}_accuracy"] = float(sums["sentence_correct"] / sums["sentence_count"])
        out[f"eval/{task}_loss"] = float(sums["sentence_loss_sum"] / sums["sentence_count"])
        if task == next(iter(iterators)):  # MLM is measured on the first eval set
            out["eval/mlm_accuracy"] = float(sums["mlm_correct"] / max(sums["mlm_count"], 1.0))
            out["eval/mlm_loss"] = float(sums["mlm_loss_sum"] / max(sums["mlm_count"], 1.0))
    return out


def train_and_evaluate(config, workdir: str) -> dict[str, float]:
    # ---------------------------------------------------------------- setup
    from albert_jax import pretrain_input  # data glue: imports tfds/grain only when training

    d = config.distributed
    if d.coordinator or d.num_processes or os.environ.get(shd.ENV_COORDINATOR):
        shd.init_distributed(d.coordinator or None, d.num_processes or None,
                             None if d.process_id < 0 else d.process_id)
    os.makedirs(workdir, exist_ok=True)
    mesh = shd.make_mesh(config.mesh.data, config.mesh.fsdp, config.mesh.tensor)
    t = config.train

    # ---------------------------------------------------------------- data
    data = pretrain_input.prepare(config)
    model_cfg = model_config_from(config, data.vocab_size)
    data.check_vocab(model_cfg.vocab_size)
    if jax.process_index() == 0:
        with open(os.path.join(workdir, "config.json"), "w", encoding="utf-8") as f:
            json.dump({"experiment": _jsonable(config), "model": model_cfg.to_dict(),
                       "data": data.summary, "jax": jax.__version__, "devices": jax.device_count(),
                       "device_kind": jax.devices()[0].device_kind}, f, indent=1)

    # ---------------------------------------------------------------- model, optimizer, state
    boxed = ts.abstract_params(model_cfg)
    tx = optim.make_optimizer(t.optimizer, t.learning_rate, t.num_train_steps, t.warmup_steps,
                              stacked_axes_fn=optim.stacked_axes_from_boxed(boxed))
    schedule = optim.make_schedule(t.learning_rate, t.num_train_steps, t.warmup_steps)
    abstract_state, shardings = ts.state_shardings(model_cfg, tx, mesh, boxed)
    train_step, eval_step = ts.jit_steps(model_cfg, tx, mesh, shardings, config.data.task, t.grad_accum_steps)
    checkpointer = ckpt.Checkpointer(os.path.join(workdir, "checkpoints"), keep=t.keep_checkpoints)
    batches = data.train_iterator(t.batch_size, shd.batch_sharding(mesh), seed=t.seed)

    restored = checkpointer.restore_latest(abstract_state)
    if restored is None and t.init_from:
        state = ts.state_from_params(initial_params(t.init_from, t.init_mode, model_cfg), tx, mesh, shardings)
        start = 0
    elif restored is None:
        state = ts.init_state(model_cfg, tx, mesh, jax.random.PRNGKey(t.seed), shardings)
        start = 0
    else:
        start, state, data_state, _ = restored
        batches.set_state(data_state)
        log.info("resumed from step %d", start)
    metrics_path = os.path.join(workdir, "metrics.jsonl")
    if jax.process_index() == 0:
        _truncate_metrics(metrics_path, start)
    writer = mx.MetricWriter(workdir)
    eval_iters = {task: (lambda task=task: data.eval_iterator(task, t.batch_size, shd.batch_sharding(mesh)))
                  for task in data.eval_tasks}

    def save(step_done: int):
        meta = {"step": step_done, "config": _jsonable(config), "model": model_cfg.to_dict(),
                "versions": {"jax": jax.__version__}}
        checkpointer.save(step_done, state, batches.get_state(), meta)

    # ---------------------------------------------------------------- loop
    stop = {"signal": None}

    def on_signal(signum, _frame):
        stop["signal"] = signum  # checkpoint at the next step boundary, then exit

    old_handlers = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    flops = model_cfg.flops_per_token(config.data.max_seq_length)
    peak = mx.peak_flops_per_device(override=t.peak_flops or None)
    meter = mx.ThroughputMeter()
    bar = mx.progress_bar(t.num_train_steps, initial=start)
    rng = jax.random.PRNGKey(t.seed + 1)  # folded with the step inside train_step
    tokens_per_step = t.batch_size * config.data.max_seq_length
    pending = None  # (step number, metrics) of the step dispatched last, read one step later
    last_eval: dict[str, float] = {}

    def process(done: int, m) -> None:
        m = jax.device_get(m)
        meter.step(tokens_per_step, t.batch_size)
        bar.update(1)
        if not (math.isfinite(float(m["loss"])) and math.isfinite(float(m["grad_norm"]))):
            raise NonFiniteLossError(
                f"non-finite loss or gradient at step {done} (loss={float(m['loss'])}, grad_norm="
                f"{float(m['grad_norm'])}); the last good checkpoint in {checkpointer.directory} is kept")
        if done % t.log_every == 0 or done == t.num_train_steps:
            row = {k: float(v) for k, v in m.items()}
            row["learning_rate"] = float(schedule(done - 1))  # the rate this step's update used
            rates = meter.rates()
            if rates:
                row.update(rates)
                row["tflops_per_device"] = mx.flops_per_second_per_device(
                    flops, rates["tokens_per_second"], jax.device_count()) / 1e12
                if peak:
                    row["mfu"] = mx.mfu(flops, rates["tokens_per_second"], jax.device_count(), peak)
            writer.write(done, row)
            bar.set_postfix(loss=f"{row['loss']:.3f}", mlm=f"{row['mlm_accuracy']:.3f}")

    # Fault injection for the resume test: SIGKILL this process once step N has run (no clean-up at all).
    kill_at = int(os.environ.get("ALBERT_JAX_FAULT_SIGKILL_AT_STEP", "0"))
    try:
        for step in range(start, t.num_train_steps):
            batch = next(batches)
            state, new_metrics = train_step(state, batch, rng)
            if pending is not None:
                process(*pending)  # step t-1's metrics, read while step t runs
            done = step + 1
            pending = (done, new_metrics)
            if done == kill_at:
                process(*pending)
                checkpointer.wait()
                os.kill(os.getpid(), signal.SIGKILL)
            do_eval = done % t.eval_every == 0 or done == t.num_train_steps
            do_save = done % t.checkpoint_every == 0 or done == t.num_train_steps or stop["signal"]
            if not (do_eval or do_save):
                continue
            # `state` is exactly step `done` here: check it is finite before evaluating or saving it.
            process(*pending)
            pending = None
            if do_eval:
                last_eval = evaluate(eval_step, state.params, eval_iters, t.eval_batches)
                writer.write(done, last_eval)
            if do_save:
                save(done)
                writer.flush()
            meter.pause()
            if stop["signal"]:
                log.warning("signal %d: checkpointed step %d, stopping", stop["signal"], done)
                break
    finally:
        for s, h in old_handlers.items():
            signal.signal(s, h)
        bar.close()
        writer.close()
        checkpointer.close()
    return last_eval


def _cmd_pretrain(args) -> int:
    from albert_jax.experiments.loader import apply_override, load_config

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    config = load_config(args.config)
    for item in args.set or []:
        apply_override(config, item)
    started = time.time()
    result = train_and_evaluate(config, args.workdir)
    print(json.dumps({"workdir": args.workdir, "seconds": round(time.time() - started, 1), **result}, indent=1))
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("pretrain", help="pretrain ALBERT (MLM + SOP/NSP/none) from an experiment config")
    p.add_argument("--config", required=True, help="experiments/<file>.py[:<args>], e.g. experiments/pretrain.py:scale=smoke")
    p.add_argument("--workdir", required=True, help="checkpoints, metrics.jsonl, TensorBoard events, config.json")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config field, e.g. train.num_train_steps=50")
    p.add_argument("--log-level", default="INFO")
    p.set_defaults(func=_cmd_pretrain)
