"""Device mesh, the one logical-axis rules table, and multi-process start-up.

Mesh axes: `data` (pure data parallelism: replicated weights), `fsdp` (data parallelism whose weights and optimizer
state are also sharded, ZeRO-3 style) and `tensor` (Megatron-style splits of heads / FFN width / vocab). The model
names every kernel and block-boundary activation with logical axes; `AXIS_RULES` maps those to mesh axes:

  batch  -> ('data', 'fsdp')  the batch is split over every data-parallel device
  length -> None              sequences are short (512); no sequence parallelism
  embed  -> None              ALBERT's E (128) is small: splitting it saves little and costs collectives
  hidden -> 'fsdp'            every layer weight has an H dimension, so this one rule shards all of them over fsdp
  heads  -> 'tensor'          attention heads are independent: Megatron's column/row split
  kv     -> None              head_dim stays whole inside a head
  mlp    -> 'tensor'          FFN intermediate width I, Megatron's split
  vocab  -> 'tensor'          the V x E word table (and the tied MLM decoder) split over vocab
  layers -> None              the scan axis of unshared layers: every device runs every layer
  groups -> None              the outer scan axis of `num_hidden_groups`
  sets   -> None              the parameter sets of a `sharing_map` (each layer gathers its own)
  inner  -> None              the axis of `inner_group_num` blocks inside a layer
  act_hidden, act_embed -> None   activations at block boundaries: whole in width, split by batch only
  act_mlp -> 'tensor'         the FFN's intermediate activation follows its tensor-split kernels

Rules are applied in order and a mesh axis is used at most once per array, so an activation
(batch, length, hidden) gets (('data','fsdp'), None, None): FSDP splits activations by batch only.
A dimension that does not divide by its mesh axes' size is replicated instead (logged), so a tiny test model
runs on any mesh; a real model should never hit that (check the log).
"""
from __future__ import annotations

import logging
import math
import os
from typing import Any, Sequence

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

log = logging.getLogger(__name__)

MESH_AXES = ("data", "fsdp", "tensor")
BATCH_AXES = ("data", "fsdp")

AXIS_RULES: tuple[tuple[str, str | tuple[str, ...] | None], ...] = (
    ("batch", BATCH_AXES),
    ("length", None),
    ("embed", None),
    ("hidden", "fsdp"),
    ("heads", "tensor"),
    ("kv", None),
    ("mlp", "tensor"),
    ("vocab", "tensor"),
    ("layers", None),
    ("groups", None),
    ("sets", None),
    ("inner", None),
    # Block-boundary activations: split by batch (above) and, inside the FFN, by the tensor axis like its kernels.
    ("act_hidden", None),
    ("act_embed", None),
    ("act_mlp", "tensor"),
)

ENV_COORDINATOR = "ALBERT_JAX_COORDINATOR"
ENV_NUM_PROCESSES = "ALBERT_JAX_NUM_PROCESSES"
ENV_PROCESS_ID = "ALBERT_JAX_PROCESS_ID"


def make_mesh(data: int = -1, fsdp: int = 1, tensor: int = 1, devices: Sequence[Any] | None = None) -> Mesh:
    """A ('data', 'fsdp', 'tensor') mesh with Auto axis types; -1 for one axis means "all remaining devices".

    Built from Mesh(...) rather than jax.make_mesh, which in jax 0.10.2 defaults to Explicit axes (sharding in the
    types; a matmul over a sharded contracting dimension then raises ShardingTypeError, reference/stack.md).
    Devices are taken in jax.devices() order with `data` outermost, so each process holds a contiguous block of
    the batch (what make_array_from_process_local_data expects).
    """
    devices = list(jax.devices() if devices is None else devices)
    # Several TPU slices (multislice): slice-major order, so the outermost axis, data, is the one that crosses the
    # slower network between slices. A single slice, and every non-TPU device, has no slice_index: order kept.
    devices.sort(key=lambda d: getattr(d, "slice_index", 0) or 0)
    sizes = {"data": data, "fsdp": fsdp, "tensor": tensor}
    free = [k for k, v in sizes.items() if v == -1]
    bad = {k: v for k, v in sizes.items() if v != -1 and (not isinstance(v, int) or v < 1)}
    if bad or len(free) > 1:
        raise ValueError(f"mesh sizes {sizes}: each must be a positive int, and at most one may be -1")
    fixed = math.prod(v for v in sizes.values() if v != -1)
    if free:
        if len(devices) % fixed:
            raise ValueError(f"mesh sizes {sizes}: {len(devices)} devices do not divide by the fixed axes' "
                             f"product {fixed}")
        sizes[free[0]] = len(devices) // fixed
    if math.prod(sizes.values()) != len(devices):
        raise ValueError(f"mesh sizes {sizes} need {math.prod(sizes.values())} devices; there are {len(devices)}")
    shape = tuple(sizes[a] for a in MESH_AXES)
    return Mesh(np.array(devices, dtype=object).reshape(shape), MESH_AXES, axis_types=(AxisType.Auto,) * 3)


def _axis_size(mesh: Mesh, axes: str | tuple[str, ...] | None) -> int:
    if axes is None:
        return 1
    names = (axes,) if isinstance(axes, str) else tuple(axes)
    unknown = [a for a in names if a not in mesh.shape]
    if unknown:
        raise ValueError(f"mesh axis {unknown[0]!r} is not in the mesh; allowed: {', '.join(mesh.axis_names)}")
    return math.prod(mesh.shape[a] for a in names)


def _fit_to_shape(spec: Sequence[Any], shape: Sequence[int], mesh: Mesh, what: str) -> PartitionSpec:
    """Replicate any dimension whose size does not divide by its mesh axes (logged, naming the array)."""
    if len(spec) > len(shape):
        raise ValueError(f"{what}: {len(spec)} axis names for an array of rank {len(shape)} (shape {tuple(shape)})")
    fitted = []
    for dim, axes in enumerate(spec):
        size = _axis_size(mesh, axes)
        if size > 1 and shape[dim] % size:
            log.info("%s: dim %d of size %d does not divide by mesh axes %s (size %d): replicated", what, dim,
                     shape[dim], axes, size)
            axes = None
        fitted.append(axes)
    return PartitionSpec(*fitted)


def logical_to_spec(names: Sequence[str | None], shape: Sequence[int], mesh: Mesh,
                    rules: Sequence[tuple[str, Any]] = AXIS_RULES, what: str = "array") -> PartitionSpec:
    """The PartitionSpec for an array of `shape` whose dimensions carry logical `names`."""
    import flax.linen as nn  # noqa: PLC0415  heavy: flax

    known = {name for name, _ in rules}
    unknown = [n for n in names if isinstance(n, str) and n not in known]
    if unknown:
        raise ValueError(f"{what}: logical axis {unknown[0]!r} has no rule; allowed: {', '.join(sorted(known))}")
    spec = nn.logical_to_mesh_axes(tuple(names), list(rules))
    return _fit_to_shape(tuple(spec), shape, mesh, what)


def param_shardings(tree: Any, mesh: Mesh, rules: Sequence[tuple[str, Any]] = AXIS_RULES) -> Any:
    """NamedShardings for a pytree of flax-boxed params (e.g. `jax.eval_shape(model.init, ...)`), unboxed layout.

    nn.LogicallyPartitioned leaves go through `rules`; nn.Partitioned leaves already name mesh axes; any other leaf
    (a plain array, an optimizer step count) is replicated. Shapes come from the boxed values, which may be
    ShapeDtypeStructs, so nothing is allocated.
    """
    import flax.linen as nn  # noqa: PLC0415  heavy: flax

    def one(path, leaf):
        what = jax.tree_util.keystr(path)
        if isinstance(leaf, nn.LogicallyPartitioned):
            # A box may carry its own rules (nn.with_logical_partitioning(..., rules=...)); ours win otherwise.
            spec = logical_to_spec(leaf.names, np.shape(leaf.value), mesh, leaf.rules or rules, what)
        elif isinstance(leaf, nn.Partitioned):
            spec = _fit_to_shape(leaf.names, np.shape(leaf.value), mesh, what)
        else:
            spec = PartitionSpec()
        return NamedSharding(mesh, spec)

    return jax.tree_util.tree_map_with_path(one, tree, is_leaf=lambda x: isinstance(x, nn.Partitioned))


def batch_sharding(mesh: Mesh) -> NamedSharding:
    """Leading (batch) dimension split over data x fsdp; other dimensions whole."""
    return NamedSharding(mesh, PartitionSpec(BATCH_AXES))


def shard_batch(local_batch: Any, mesh: Mesh) -> Any:
    """Global arrays from each process's slice of the batch (a pytree of numpy arrays, batch dimension first).

    Unlike parameters, a batch that does not divide is an error, not a silent replication: every data-parallel
    device must get the same number of examples.
    """
    sharding = batch_sharding(mesh)
    n_shards = _axis_size(mesh, BATCH_AXES)

    def one(path, x):
        global_rows = np.shape(x)[0] * jax.process_count()
        if global_rows % n_shards:
            raise ValueError(f"batch field {jax.tree_util.keystr(path)}: global batch {global_rows} does not divide "
                             f"by data x fsdp = {n_shards}; use a multiple of {n_shards}")
        return jax.make_array_from_process_local_data(sharding, x)

    return jax.tree_util.tree_map_with_path(one, local_batch)


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"${name}={value!r}: expected an integer") from None


def init_distributed(coordinator_address: str | None = None, num_processes: int | None = None,
                     process_id: int | None = None, *, initialization_timeout: int = 300) -> bool:
    """Start JAX's multi-process runtime; returns True when it is (now) running, False for a lone process.

    Arguments win over $ALBERT_JAX_COORDINATOR / $ALBERT_JAX_NUM_PROCESSES / $ALBERT_JAX_PROCESS_ID. With none of
    them, JAX's own cluster detection runs (SLURM, Open MPI, TPU pods, ...); when it finds no cluster this is a
    single-process run and nothing is started. Must run before anything touches a JAX device.
    """
    if jax.distributed.is_initialized():
        return True
    try:
        return _initialize(coordinator_address, num_processes, process_id, initialization_timeout)
    except RuntimeError as e:
        if "before any JAX calls" in str(e):  # jax's wording; its message alone does not say who called too late
            raise RuntimeError("init_distributed() must run before anything touches a JAX device (jax.devices(), "
                               "any computation, a mesh): call it first thing in main") from e
        raise


def _initialize(coordinator_address, num_processes, process_id, initialization_timeout) -> bool:
    address = coordinator_address or os.environ.get(ENV_COORDINATOR) or None
    count = num_processes if num_processes is not None else _env_int(ENV_NUM_PROCESSES)
    index = process_id if process_id is not None else _env_int(ENV_PROCESS_ID)
    # Cross-process collectives on the CPU backend need an implementation; gloo is the one measured to work here
    # (reference/stack.md). It only concerns CPU devices, so setting it on GPU/TPU hosts is harmless.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    if address is None and count is None and index is None:
        try:
            jax.distributed.initialize(initialization_timeout=initialization_timeout)
        except ValueError as e:
            # jax's wording when cluster auto-detection found nothing to connect to.
            if "coordinator_address" not in str(e):
                raise
            log.info("no cluster detected and no coordinator given: single-process run")
            return False
        return True
    if (count is not None and count < 1) or (index is not None and count is not None and not 0 <= index < count):
        raise ValueError(f"process_id {index} / num_processes {count}: need num_processes >= 1 and "
                         "0 <= process_id < num_processes")
    if address is None and count is not None and count > 1:
        # JAX's own "coordinator_address should be defined" names none of our settings.
        raise ValueError(f"distributed.num_processes={count} needs distributed.coordinator (host:port of process "
                         f"0, reachable from every process; or ${ENV_COORDINATOR}): set it, or leave "
                         "num_processes at 0 for a single process or a cluster JAX detects itself (SLURM, TPU)")
    jax.distributed.initialize(coordinator_address=address, num_processes=count, process_id=index,
                               initialization_timeout=initialization_timeout)
    log.info("jax.distributed up: process %d of %d, %d local / %d global devices", jax.process_index(),
             jax.process_count(), jax.local_device_count(), jax.device_count())
    return True
