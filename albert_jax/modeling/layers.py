"""The block math as pure functions of (params, inputs).

Keeping the math free of module state is what lets one encoder scan a layer over any mix of shared and
per-layer parameters: the scanned step just receives the parameter dict it should use. Parameter declaration
(shapes, initialisers, logical axis names) lives in `params.py`.

Every weight matmul goes through `project`, the one injectable matmul: a float kernel is multiplied as before (the
same jnp.einsum/jnp.dot, bit for bit); a kernel that is a `WeightOp` (compression/quantize.py's qwix int8
weights) computes the product itself. Activation x activation products (scores, context) stay plain einsums.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import linen as nn

# Logical names of block-boundary activations; `albert_jax.sharding` maps them onto mesh axes.
ACT_BLH = ("batch", "length", "act_hidden")
ACT_BLE = ("batch", "length", "act_embed")


def activation(name: str):
    if name == "gelu_new":  # tanh approximation, the official TF code's "gelu"
        return lambda x: jax.nn.gelu(x, approximate=True)
    if name == "gelu":
        return lambda x: jax.nn.gelu(x, approximate=False)
    if name == "relu":
        return jax.nn.relu
    raise ValueError(f"hidden_act={name!r}: allowed values are gelu_new, gelu, relu")


def layer_norm(p, x, eps: float):
    # Statistics in float32 whatever the compute dtype: bf16 variance loses too much for eps=1e-12.
    x32 = x.astype(jnp.float32)
    mean = x32.mean(-1, keepdims=True)
    var = jnp.square(x32 - mean).mean(-1, keepdims=True)
    y = (x32 - mean) * jax.lax.rsqrt(var + eps)
    return (y * p["scale"].astype(jnp.float32) + p["bias"].astype(jnp.float32)).astype(x.dtype)


def lean_backward(fn, config):
    """`fn` (elementwise work: a LayerNorm, the activation) differentiated keeping only its inputs.

    Autodiff through these saves their intermediates for the backward pass: five [B, L, I] arrays for the tanh
    GELU, four [B, L, H] for a LayerNorm. Under scan each is copied into a stacked [num_layers, ...] buffer per
    layer and read back, which was a tenth of albert-base's CPU step (docs/benchmarks.md). Checkpointed, only
    the input is kept and the backward recomputes the elementwise forward, which costs little next to those
    copies; torch's own LayerNorm and GELU kernels likewise keep only their input (and the row statistics).
    The values are the same: nothing is approximated. (The softmax is left alone: it saves its exponentials
    and its output, and recomputing would trade the first for its input, at the cost of the exponentials.)
    prevent_cse as the encoder's remat: needed only outside scan."""
    return jax.checkpoint(fn, prevent_cse=not config.scan_layers)


class WeightOp:
    """A kernel that multiplies itself: `einsum(eq, x, dtype)` computes `jnp.einsum(eq, x, kernel)`.

    The model math asks for nothing else, so a quantized kernel (a pytree holding int8 values and scales) can
    stand in the parameter tree where the float kernel was, through scan, layer slicing and groups alike."""

    def einsum(self, eq: str, x, dtype):
        raise NotImplementedError


DENSE = "...i,io->...o"  # x[..., in] @ kernel[in, out]: the same dot_general as jnp.dot


def project(eq: str, x, w, dtype):
    """The one weight matmul: `x` (first operand of `eq`) times the kernel `w` (second)."""
    if isinstance(w, WeightOp):
        return w.einsum(eq, x.astype(dtype), dtype)
    return jnp.einsum(eq, x.astype(dtype), w.astype(dtype))


def dense(p, x, dtype):
    """x[..., in] @ kernel[in, out] + bias."""
    return project(DENSE, x, p["kernel"], dtype) + p["bias"].astype(dtype)


def dropout(x, rate: float, rng, deterministic: bool):
    if deterministic or rate == 0.0:
        return x
    keep = jax.random.bernoulli(rng, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), jnp.zeros_like(x))


def attention_core(q_BNLD, k_BNLD, v_BNLD, mask_bias_B11L, drop=lambda probs: probs):
    """softmax(QK^T/sqrt(d) + mask) V on heads-first operands, `drop` applied to the probabilities."""
    scores_BNLL = jnp.einsum("bnqd,bnkd->bnqk", q_BNLD, k_BNLD) / math.sqrt(q_BNLD.shape[-1])
    # Softmax in float32: bf16 logits saturate the exponent for long sequences.
    probs_BNLL = drop(jax.nn.softmax(scores_BNLL.astype(jnp.float32) + mask_bias_B11L, axis=-1))
    return jnp.einsum("bnqk,bnkd->bnqd", probs_BNLL.astype(v_BNLD.dtype), v_BNLD)


def fused_attention(q_BLND, k_BLND, v_BLND, mask_bias):
    """softmax(QK^T/sqrt(d) + mask) V as one cuDNN kernel. The padding bias [B, 1, 1, L] (or a packed row's
    [B, 1, L, L]) is given whole, [B, 1, L, L]: cuDNN takes a bias with both sequence axes."""
    B, L = q_BLND.shape[0], q_BLND.shape[1]
    bias_B1LL = jnp.broadcast_to(mask_bias, (B, 1, L, L)).astype(q_BLND.dtype)
    return jax.nn.dot_product_attention(q_BLND, k_BLND, v_BLND, bias=bias_B1LL, implementation="cudnn")


def attention_block(p, x_BLH, mask_bias_B11L, config, dtype, rngs=(None, None), deterministic=True):
    """Post-LN self-attention: LayerNorm(x + Dropout(Wo · softmax(QK^T/sqrt(d) + mask) V)).

    The scores and context are computed with the heads ahead of the positions ([B, N, L, D]): batched dots
    whose batch axes lead and whose result needs no transpose. Written on [B, L, N, D] operands (as before),
    XLA:CPU computes the context transposed inside one slow fusion with the softmax; this layout is the same
    arithmetic (identical outputs at albert-base's shape, equal to float rounding at others: tests/
    test_formulations.py) in about half the attention's time (benchmarks/formulations.py)."""
    def qkv(name):
        return project("blh,hnd->blnd", x_BLH, p[name]["kernel"], dtype) + p[name]["bias"].astype(dtype)

    if config.attention_impl == "cudnn":  # GPU: cuDNN's fused flash attention (config.ATTENTION_IMPLS)
        ctx_BLND = fused_attention(qkv("query"), qkv("key"), qkv("value"), mask_bias_B11L)
    else:
        q_BNLD, k_BNLD, v_BNLD = (jnp.swapaxes(qkv(n), 1, 2) for n in ("query", "key", "value"))
        ctx_BNLD = attention_core(q_BNLD, k_BNLD, v_BNLD, mask_bias_B11L, lambda probs: dropout(
            probs, config.attention_probs_dropout_prob, rngs[0], deterministic))
        ctx_BLND = jnp.swapaxes(ctx_BNLD, 1, 2)
    out_BLH = project("blnd,ndh->blh", ctx_BLND, p["output"]["kernel"], dtype)
    out_BLH = out_BLH + p["output"]["bias"].astype(dtype)
    out_BLH = dropout(out_BLH, config.hidden_dropout_prob, rngs[1], deterministic)
    return post_norm(p["LayerNorm"], x_BLH.astype(dtype) + out_BLH, config)


def ffn_block(p, x_BLH, config, dtype, rng=None, deterministic=True):
    """Post-LN feed-forward: LayerNorm(x + Dropout(W2 · act(W1 x)))."""
    h_BLI = lean_backward(activation(config.hidden_act), config)(dense(p["intermediate"], x_BLH, dtype))
    h_BLI = nn.with_logical_constraint(h_BLI, ("batch", "length", "act_mlp"))
    out_BLH = dropout(dense(p["output"], h_BLI, dtype), config.hidden_dropout_prob, rng, deterministic)
    return post_norm(p["LayerNorm"], x_BLH.astype(dtype) + out_BLH, config)


def post_norm(p, residual_BLH, config):
    """The post-LN of both blocks, applied to the residual sum its caller forms; the sum is all its backward
    keeps."""
    y = lean_backward(lambda p_, x: layer_norm(p_, x, config.layer_norm_eps), config)(p, residual_BLH)
    return nn.with_logical_constraint(y, ACT_BLH)


def mask_to_bias(attention_mask_BL):
    """1/0 padding mask -> additive bias; -10000 as the official code (exp underflows to exactly 0 in f32)."""
    return ((1.0 - attention_mask_BL.astype(jnp.float32)) * -10000.0)[:, None, None, :]


def pack_mask_bias(pack_ids_BL):
    """Block-diagonal additive bias [B, 1, L, L] for packed rows: a query attends only to the keys of its own
    packed example (pack id 1..k; 0 is padding, which no query attends to), with the -10000 of `mask_to_bias`,
    so each example's softmax has exactly the terms it has unpacked (tasks/pretraining/packing.py)."""
    same = (pack_ids_BL[:, :, None] == pack_ids_BL[:, None, :]) & (pack_ids_BL[:, None, :] > 0)
    return jnp.where(same, 0.0, -10000.0).astype(jnp.float32)[:, None]
