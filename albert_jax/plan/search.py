"""Searches over compiles: the largest per-device batch that fits (bisection), and meshes x remat policies.

Each probe is one compile of the trainer's step for the target (plan.compile.plan); a probe that does not fit is
a verdict, not an error.
"""
from __future__ import annotations

import copy
import dataclasses
import logging

from albert_jax import sharding as shd
from albert_jax.config import REMAT_POLICIES
from albert_jax.plan.compile import DoesNotFit, Report, plan, task_and_model

log = logging.getLogger("albert_jax.plan")


def probe(config, target) -> Report:
    try:
        return plan(config, target)
    except DoesNotFit as e:
        return e.report


def _with(config, **fields):
    c = copy.deepcopy(config)
    for dotted, value in fields.items():
        section, key = dotted.split("__")
        c[section][key] = value
    return c


def _batch_shards(config, target) -> int:
    """data x fsdp of the mesh the config asks for on the target's devices (the batch splits over both)."""
    m = config.mesh
    shape = shd.make_mesh(m.data, m.fsdp, m.tensor, devices=target.devices).shape
    return shape["data"] * shape["fsdp"]


def max_batch(config, target, upper: int = 4096) -> tuple[int, list[Report]]:
    """The largest per-device batch (micro-batch, with gradient accumulation) that fits, by doubling from 1 and
    then bisecting; (0, probes) when even 1 does not fit."""
    shards = _batch_shards(config, target)
    accum = int(config.train.grad_accum_steps)
    probes: list[Report] = []

    def fits(per_device: int) -> bool:
        r = probe(_with(config, train__batch_size=per_device * shards * accum), target)
        probes.append(r)
        log.info("per-device batch %d: %s", per_device, r.verdict_line())
        return bool(r.fits)

    lo, hi = 0, 1
    while hi <= upper and fits(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, upper + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo, probes


def candidate_meshes(n: int, heads: int) -> list[dict]:
    """Pure data parallelism, pure FSDP, and each of those with a tensor axis of 2, 4 or 8 that divides the devices
    and the attention heads."""
    out = [{"data": n, "fsdp": 1, "tensor": 1}, {"data": 1, "fsdp": n, "tensor": 1}]
    for t in (2, 4, 8):
        if n % t == 0 and heads % t == 0 and n > t:
            out += [{"data": n // t, "fsdp": 1, "tensor": t}, {"data": 1, "fsdp": n // t, "tensor": t}]
    return out


@dataclasses.dataclass
class Tried:
    mesh: dict
    remat: str
    report: Report | None
    error: str = ""


def search(config, target, remats=REMAT_POLICIES, meshes: list[dict] | None = None) -> tuple[list[Tried], int | None]:
    """Every (mesh, remat policy) compiled; returns the tries and the index of the best: it fits and has the
    shortest predicted step."""
    _, model_cfg = task_and_model(config)
    meshes = meshes or candidate_meshes(target.num_devices, model_cfg.num_attention_heads)
    tried: list[Tried] = []
    for mesh in meshes:
        for remat in remats:
            c = _with(config, mesh__data=mesh["data"], mesh__fsdp=mesh["fsdp"], mesh__tensor=mesh["tensor"],
                      model__remat_policy=remat)
            try:
                r = probe(c, target)
                tried.append(Tried(mesh, remat, r))
                log.info("mesh %s remat %s: %s", mesh, remat, r.verdict_line())
            except ValueError as e:  # a batch that does not split over this mesh
                tried.append(Tried(mesh, remat, None, str(e).splitlines()[0]))
    ok = [i for i, t in enumerate(tried) if t.report is not None and t.report.fits and t.report.roofline]
    best = min(ok, key=lambda i: tried[i].report.roofline["step_seconds"]) if ok else None
    return tried, best
