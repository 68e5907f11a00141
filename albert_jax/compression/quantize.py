"""Post-training int8 quantization with qwix: int8 kernels (+ optionally int8 activations) in the model math.

What is quantized: every kernel (a parameter named `kernel`) that reaches the one weight matmul,
`modeling.layers.project`: Q/K/V/output of attention, the FFN, the E->H projection, the pooler and the task head.
The embedding tables (gathered, not multiplied), LayerNorm, biases and the activation x activation products
(scores, context) stay float.

How, and why not `qwix.PtqProvider` + `qwix.quantize_model` directly: the provider intercepts jnp.einsum /
lax.dot_general while the model runs and recognises a weight as a parameter *of the module doing the matmul*.
Ours are declared once, stacked, in `Params` modules and reach the scanned `LayerStep` as (sliced) arguments,
so the provider would see only activations. Instead the kernels themselves are replaced, in the parameter
tree, by `QuantizedWeight`s (a qwix `QArray`: int8 values + float scales), which `layers.project` hands the
product to. The numerics are qwix's throughout, chosen the way its PTQ provider chooses them:
- rules are `qwix.QuantizationRule`s (first match wins; `module_path` is matched against the path of the
  module that declares the kernel, e.g. `albert/encoder/shared/attention/query` or `classifier`);
- each kernel's `HowToQuantize` comes from qwix's own rule for the einsum it takes part in (per-channel
  scales on every non-contracted axis; here also on the stacked layers/groups/inner axes, so each layer has its
  own scales, as if each slice were quantized alone), the einsum being recorded by one abstract trace
  (`_discover`);
- weights are quantized by `qwix.quantize`, products computed by `qwix.einsum` (int8 x int8 with int32
  accumulation when activations are quantized, dynamically per token; weight-only dequantizes the kernel).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
from typing import Any, Sequence

import flax
import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import qwix
from flax import linen as nn
from qwix._src.core import einsum as qwix_einsum  # HowToQuantize from an einsum: the PTQ provider's own rule

from albert_jax import sharding as shd
from albert_jax.config import AlbertConfig
from albert_jax.modeling import layers
from albert_jax.training import checkpoints as ckpt
from albert_jax.training import state as st

ACTIVATIONS = ("float32", "int8")  # --activations
META = "quantization.json"
CHECKPOINT = "checkpoint"


class QuantizeError(ValueError):
    """A quantization that cannot be done as asked; the message names what and why."""


@flax.struct.dataclass
class QuantizedWeight(layers.WeightOp):
    """A kernel held as a qwix QArray; multiplies itself with qwix (see the module docstring)."""

    weight: qwix.QArray  # first field: flax compares a stored parameter's first leaf with its declared shape
    act_qtype: str | None = flax.struct.field(pytree_node=False, default=None)
    act_calibration_method: str = flax.struct.field(pytree_node=False, default="absmax")
    tile_size: int | float | None = flax.struct.field(pytree_node=False, default=None)

    def einsum(self, eq: str, x, dtype):
        w = self.weight if self.weight.scale.dtype == dtype else self.weight.astype(dtype)
        if self.act_qtype is not None:  # dynamic range, per token (qwix's PTQ default on XLA)
            how = qwix_einsum.get_how_to_quantize(
                einsum_str=eq, ndims=(x.ndim, w.ndim), for_lhs=True, tile_size=self.tile_size,
                qtype=jnp.dtype(self.act_qtype), calibration_method=self.act_calibration_method)
            x = qwix.quantize(x, how.qtype, channelwise_axes=how.channelwise_axes, tiled_axes=how.tiled_axes,
                              calibration_method=how.calibration_method)
        return qwix.einsum(eq, x, w)


def default_rules(activations: str = "float32") -> list[qwix.QuantizationRule]:
    """Every kernel int8 (absmax, per channel); activations int8 too when asked."""
    if activations not in ACTIVATIONS:
        raise QuantizeError(f"activations={activations!r}: allowed {', '.join(ACTIVATIONS)}")
    return [qwix.QuantizationRule(module_path=".*", weight_qtype="int8",
                                  act_qtype="int8" if activations == "int8" else None)]


def rules_to_json(rules: Sequence[qwix.QuantizationRule]) -> list[dict]:
    def name(t):
        return None if t is None else jnp.dtype(t).name
    return [{**{f.name: getattr(r, f.name) for f in dataclasses.fields(r)}, "op_names": list(r.op_names),
             "act_batch_axes": list(r.act_batch_axes), "weight_qtype": name(r.weight_qtype),
             "act_qtype": name(r.act_qtype)} for r in rules]


def rules_from_json(rows: list[dict]) -> list[qwix.QuantizationRule]:
    return [qwix.QuantizationRule(**{**r, "op_names": tuple(r["op_names"]),
                                     "act_batch_axes": tuple(r["act_batch_axes"])}) for r in rows]


# ---------------------------------------------------------------- which kernels, contracted how
_SEEN: list | None = None  # filled by _Probe.einsum during `_discover`


@flax.struct.dataclass
class _Probe(layers.WeightOp):
    """A float kernel that notes the einsum it is used in (its path survives scan and layer slicing)."""

    array: Any
    path: tuple = flax.struct.field(pytree_node=False)

    def einsum(self, eq, x, dtype):
        if _SEEN is not None:
            _SEEN.append((self.path, eq, x.ndim, self.array.ndim))
        return jnp.einsum(eq, x, self.array.astype(dtype))


def _is_kernel(path) -> bool:
    return getattr(path[-1], "key", None) == "kernel"


def _keys(path) -> tuple[str, ...]:
    return tuple(str(getattr(k, "key", k)) for k in path)


@contextlib.contextmanager
def _recording():
    global _SEEN
    _SEEN = []
    try:
        yield _SEEN
    finally:
        _SEEN = None


def _discover(task, model_cfg, abstract_params) -> dict[tuple, tuple[str, int, int]]:
    """kernel path -> (einsum, ndim of the activation, ndim of the kernel as multiplied), by one abstract trace."""
    probes = jax.tree_util.tree_map_with_path(
        lambda p, a: _Probe(a, _keys(p)) if _is_kernel(p) else a, abstract_params)
    model = task.model(model_cfg)
    batch = jax.tree.map(jnp.asarray, task.example_batch())
    mesh = shd.make_mesh(devices=jax.devices()[:1])
    with _recording() as seen, jax.set_mesh(mesh), nn.logical_axis_rules(shd.AXIS_RULES):
        jax.eval_shape(lambda p: task.apply(model, p, batch, None, True), probes)
    found: dict[tuple, tuple[str, int, int]] = {}
    for path, *use in seen:
        if found.setdefault(path, tuple(use)) != tuple(use):  # one kernel, two different products: no one how
            raise QuantizeError(f"kernel {'/'.join(path)} is used in two different matmuls ({found[path][0]}, "
                                f"{use[0]}); it cannot be given one set of int8 scales")
    return found


def _rule_for(rules, module_path: str):
    for r in rules:
        if re.fullmatch(r.module_path, module_path) and (not r.op_names or "einsum" in r.op_names):
            return r
    return None


def plan(task, model_cfg, rules: Sequence[qwix.QuantizationRule]) -> dict[tuple, dict]:
    """kernel path -> how qwix quantizes it (its rule's settings and the HowToQuantize of the full array)."""
    abstract = nn.unbox(st.abstract_params(task, model_cfg))
    shapes = {_keys(p): a.shape for p, a in jax.tree_util.tree_leaves_with_path(abstract) if _is_kernel(p)}
    out = {}
    for path, (eq, x_ndim, w_ndim) in _discover(task, model_cfg, abstract).items():
        rule = _rule_for(rules, "/".join(path[:-1]))
        if rule is None or rule.weight_qtype is None:
            continue
        if rule.act_static_scale:
            raise QuantizeError(f"rule {rule.module_path!r}: act_static_scale needs calibration statistics; only "
                                "dynamic-range activations are supported")
        how = qwix_einsum.get_how_to_quantize(einsum_str=eq, ndims=(x_ndim, w_ndim), for_lhs=False,
                                              tile_size=rule.tile_size, qtype=rule.weight_qtype,
                                              calibration_method=rule.weight_calibration_method)
        lead = len(shapes[path]) - w_ndim  # stacked layers / groups / inner axes: a scale per slice
        out[path] = {"rule": rule, "einsum": eq,
                     "channelwise_axes": tuple(range(lead)) + tuple(a + lead for a in how.channelwise_axes),
                     "tiled_axes": {a + lead: t for a, t in how.tiled_axes.items()}}
    return out


def quantize_params(params, how: dict[tuple, dict]):
    """The float parameter tree with each planned kernel replaced by a QuantizedWeight (qwix.quantize)."""
    def one(path, a):
        h = how.get(_keys(path))
        if h is None:
            return a
        r = h["rule"]
        q = qwix.quantize(jnp.asarray(a), jnp.dtype(r.weight_qtype), channelwise_axes=h["channelwise_axes"],
                          tiled_axes=h["tiled_axes"], calibration_method=r.weight_calibration_method)
        return QuantizedWeight(q, None if r.act_qtype is None else jnp.dtype(r.act_qtype).name,
                               r.act_calibration_method or "absmax", r.tile_size)
    return jax.tree_util.tree_map_with_path(one, params)


def dequantized(qparams):
    """The float tree a weight-only int8 model computes with: each kernel rounded to its int8 grid."""
    return jax.tree.map(lambda w: qwix.dequantize(w.weight) if isinstance(w, QuantizedWeight) else w, qparams,
                        is_leaf=lambda w: isinstance(w, QuantizedWeight))


# ---------------------------------------------------------------- the quantized checkpoint
def save(out_dir: str, qparams, meta: dict) -> str:
    """Orbax checkpoint of the quantized tree (int8 values and float scales as stored arrays), its sha256
    manifest, and `quantization.json` (what `load` needs to rebuild the model)."""
    path = os.path.join(os.path.abspath(out_dir), CHECKPOINT)
    with ocp.StandardCheckpointer() as c:
        c.save(path, jax.device_get(qparams), force=True)  # host arrays: no device layout recorded
    ckpt.write_manifest(path)
    with open(os.path.join(out_dir, META), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1)
    return path


def quantized_meta(task, model_cfg, rules, how, source: dict) -> dict:
    return {"task": task.describe(), "model": model_cfg.to_dict(), "rules": rules_to_json(rules),
            "qwix": qwix.__version__, "source": source,
            "kernels": {"/".join(p): {"einsum": h["einsum"], "channelwise_axes": list(h["channelwise_axes"])}
                        for p, h in sorted(how.items())}}


def load(out_dir: str):
    """(task, model config, quantized params) from a directory `save` wrote; the checkpoint is verified."""
    from albert_jax.tasks.registry import make_task  # noqa: PLC0415  heavy: grain

    meta_path = os.path.join(out_dir, META)
    if not os.path.isfile(meta_path):
        raise QuantizeError(f"{out_dir} is not a quantized model (no {META})")
    with open(meta_path, encoding="utf-8") as f:
        meta = json.load(f)
    task, cfg = make_task(meta["task"]["name"]), AlbertConfig.from_dict(meta["model"])
    how = plan(task, cfg, rules_from_json(meta["rules"]))
    path = os.path.join(os.path.abspath(out_dir), CHECKPOINT)
    try:
        ckpt.verify_step_dir(path)
    except ckpt.ChecksumError as e:
        raise ckpt.ChecksumError(f"{path} is damaged: {e}") from e
    abstract = jax.eval_shape(lambda p: quantize_params(p, how), nn.unbox(st.abstract_params(task, cfg)))
    host = jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), abstract)  # jit lays it out
    with ocp.PyTreeCheckpointer() as c:
        return task, cfg, c.restore(path, args=ocp.args.PyTreeRestore(item=abstract, restore_args=host))


def tree_bytes(tree) -> int:
    return int(sum(np.dtype(a.dtype).itemsize * int(np.prod(a.shape)) for a in jax.tree.leaves(tree)))


def kernel_bytes(params, how) -> int:
    """Bytes of the planned kernels in `params` (float arrays, or QuantizedWeights: values + scales)."""
    return sum(tree_bytes(a) for p, a in jax.tree_util.tree_leaves_with_path(
        params, is_leaf=lambda w: isinstance(w, QuantizedWeight)) if _keys(p) in how)


def dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(r, n)) for r, _, names in os.walk(path) for n in names)
