"""Pretraining a run: data -> model config -> (init from another run) -> the one training loop.

`pretrain(config, workdir)` is what `albert-jax pretrain` calls. `params_from_workdir` and
`encoder_from_workdir` read a run's checkpointed parameters for warm starts, fine-tuning and export.
"""
from __future__ import annotations

import logging
import os

from flax import linen as nn

from albert_jax import sharding as shd
from albert_jax.config import AlbertConfig, model_from_section
from albert_jax.configs import schema
from albert_jax.modeling import init_tricks
from albert_jax.runs import validate
from albert_jax.tasks.pretraining.task import PretrainingTask
from albert_jax.training import checkpoints as ckpt
from albert_jax.training import loop, rundir
from albert_jax.training import state as st
from albert_jax.training import workdir as wdir

log = logging.getLogger("albert_jax.pretrain")


def read_run_config(workdir: str) -> dict:
    """A run's config.json (rundir.read_config); FileNotFoundError when `workdir` is not a run's."""
    return rundir.read_config(workdir, required=True)


def params_from_workdir(workdir: str, step: int | None = None, sharding=None):
    """(step, model config, parameters) of a pretraining run's checkpoint (the latest when step is None);
    `sharding` as in `checkpoints.restore_params_only`."""
    cfg = AlbertConfig.from_dict(read_run_config(workdir)["model"])
    abstract = nn.unbox(st.abstract_params(PretrainingTask(), cfg))  # nothing allocated before the restore
    step, params = ckpt.restore_params_only(os.path.join(workdir, rundir.CHECKPOINTS), abstract, step, sharding)
    return step, cfg, params


def model_config_from(config, vocab_size: int) -> AlbertConfig:
    """The model section as an AlbertConfig; vocab_size 0 means "the tokenizer's"."""
    return model_from_section(config.model, vocab_size=config.model.vocab_size or vocab_size)


def task_and_model(config, vocab_size: int) -> tuple[PretrainingTask, AlbertConfig]:
    """The pretraining task and model `config` describes; `vocab_size` is the tokenizer's (for model.vocab_size
    0). The trainer and the planner (albert_jax/plan) both start here."""
    d = config.data
    return PretrainingTask(d.task, d.max_seq_length, d.max_predictions_per_seq), model_config_from(config, vocab_size)


def warm_start_params(source_workdir: str, mode: str, model_cfg):
    """Parameters from another run's latest checkpoint: 'copy' (same model), 'group0' (every group or layer
    from the shared set: the official --init_from_group0) or 'deeper' (stack a shallower model's layers)."""
    step, src_cfg, params = params_from_workdir(source_workdir)
    log.info("initialising from %s step %d (%s)", source_workdir, step, mode)
    if mode == "copy":
        if src_cfg.replace(scan_layers=model_cfg.scan_layers, remat_policy=model_cfg.remat_policy,
                           dtype=model_cfg.dtype, attention_impl=model_cfg.attention_impl) != model_cfg:
            raise ValueError(f"train.init_mode='copy' needs the same model as {source_workdir}; use 'group0' "
                             "or 'deeper' to change sharing or depth")
        return params
    if mode == "group0":
        return init_tricks.init_from_group0(params, src_cfg, model_cfg)
    if mode == "deeper":
        return init_tricks.warm_start_deeper(params, src_cfg, model_cfg)
    raise ValueError(f"train.init_mode={mode!r}: allowed {', '.join(schema.INIT_MODES)}")


def init_distributed(config) -> None:
    d = config.distributed
    if d.coordinator or d.num_processes or os.environ.get(shd.ENV_COORDINATOR):
        shd.init_distributed(d.coordinator or None, d.num_processes or None,
                             None if d.process_id < 0 else d.process_id)


def pretrain(config, workdir: str) -> dict[str, float]:
    from albert_jax.tasks.pretraining import input as pretrain_input  # noqa: PLC0415  heavy: tfds, grain

    validate.validate(config, "pretrain", workdir)  # the whole config, in seconds, before any data is built
    wdir.claim_kind(workdir, "pretrain")  # not a fine-tuning run's workdir
    validate.resolve_paths(config, "pretrain")  # recorded absolute: a resume from another directory finds them
    loop.check_resume(config, workdir)  # and a resume that changes the run, before its new data is built
    init_distributed(config)
    validate.check_devices(config)
    data = pretrain_input.prepare(config)
    task, model_cfg = task_and_model(config, data.vocab_size)
    data.check_vocab(model_cfg.vocab_size)
    t = config.train
    init = (lambda: warm_start_params(t.init_from, t.init_mode, model_cfg)) if t.init_from else None
    run = loop.Run(task=task, data=data, model_cfg=model_cfg, config=config, init_params=init)
    result = loop.train(run, workdir)
    # A signal stopped it after a checkpoint: not a finished run (the CLI exits 128 + signal, the sweep reports it).
    return {"stopped": True, "step": result.step, "signal": result.signal} if result.stopped else result.eval


