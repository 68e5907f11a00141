"""Parameter declaration: every encoder parameter is declared once, with its full (possibly stacked) shape.

A spec maps a nested name to (shape, logical axis names, initialiser kind). `Params` declares a spec under a
leading prefix such as ('layers',) for per-layer parameters, ('groups',) for per-group ones, or () for a part
shared by every layer. Declaring the stacked shape directly (instead of letting a lifted transform stack it)
gives the scanned and the unrolled encoder the very same parameter tree and the same initial values.
"""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import linen as nn
from jax.nn import initializers

Spec = dict[str, Any]  # name -> Spec | (shape, logical_names, init_kind)


def attention_spec(config) -> Spec:
    H, A, D = config.hidden_size, config.num_attention_heads, config.head_dim
    qkv = {"kernel": ((H, A, D), ("hidden", "heads", "kv"), "normal"), "bias": ((A, D), ("heads", "kv"), "zeros")}
    return {
        "query": qkv, "key": qkv, "value": qkv,
        "output": {"kernel": ((A, D, H), ("heads", "kv", "hidden"), "normal"),
                   "bias": ((H,), ("hidden",), "zeros")},
        "LayerNorm": layer_norm_spec(H, "hidden"),
    }


def ffn_spec(config) -> Spec:
    H, I = config.hidden_size, config.intermediate_size
    return {
        "intermediate": dense_spec(H, I, ("hidden", "mlp")),
        "output": dense_spec(I, H, ("mlp", "hidden")),
        "LayerNorm": layer_norm_spec(H, "hidden"),
    }


def dense_spec(n_in: int, n_out: int, names: tuple) -> Spec:
    return {"kernel": ((n_in, n_out), names, "normal"), "bias": ((n_out,), (names[1],), "zeros")}


def layer_norm_spec(width: int, name: str) -> Spec:
    return {"scale": ((width,), (name,), "ones"), "bias": ((width,), (name,), "zeros")}


def initializer(kind: str, stddev: float):
    if kind == "normal":  # the official init: truncated normal (2 std), zero bias, LayerNorm 1/0
        return initializers.truncated_normal(stddev)
    return {"zeros": initializers.zeros, "ones": initializers.ones}[kind]


class Params(nn.Module):
    """Declares `spec` under a leading `prefix` of (size, logical name) pairs and returns the (unboxed) tree."""

    spec: Any  # a Spec frozen by `freeze_spec`, to stay hashable
    prefix: tuple = ()
    stddev: float = 0.02
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self):
        lead_shape = tuple(size for size, _ in self.prefix)
        lead_names = tuple(name for _, name in self.prefix)
        out = {}
        for name, value in self.spec:
            if not _is_leaf(value):  # a nested level, e.g. 'query' inside 'attention'
                out[name] = Params(value, self.prefix, self.stddev, self.param_dtype, name=name)()
                continue
            shape, names, kind = value
            init = nn.with_logical_partitioning(initializer(kind, self.stddev), lead_names + tuple(names))
            out[name] = self.param(name, init, lead_shape + tuple(shape), self.param_dtype)
        return out


def freeze_spec(spec: Spec):
    return tuple((k, v if _is_leaf(v) else freeze_spec(v)) for k, v in spec.items())


def _is_leaf(value) -> bool:
    return isinstance(value, tuple) and len(value) == 3 and isinstance(value[2], str)
