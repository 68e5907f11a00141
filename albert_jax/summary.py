"""The model at a glance, computed from the config alone (shown by `albert-jax summary`, albert_jax/cli/summary.py).

Parameters by block, training FLOPs per token at a sequence length, and memory for parameters plus optimizer
state. `render_compare` prints several settings as one table: the Params columns of the paper's Tables 3 and 4.
"""
from __future__ import annotations

from albert_jax.config import AlbertConfig, format_sharing_map

BLOCKS = ("embeddings", "projection", "attention", "ffn", "pooler", "mlm_head", "sop_head")
# LAMB/AdamW keep two f32 moments per parameter.
OPTIMIZER_SLOTS = 2


def describe(cfg: AlbertConfig, seq_len: int, max_predictions: int = 0) -> dict[str, float]:
    """max_predictions > 0: the MLM head over that many positions per sequence (a pretraining step's
    max_predictions_per_seq, what a compiled step computes: `albert-jax plan`); 0: over 15% of the tokens."""
    b = cfg.param_breakdown()
    encoder = cfg.param_count()
    total = cfg.param_count(heads=True)
    param_bytes = total * _itemsize(cfg.param_dtype)
    return {**b, "encoder_total": encoder, "total_with_heads": total,
            "gflops_per_token": cfg.flops_per_token(seq_len, **({"masked_fraction": max_predictions / seq_len}
                                                                if max_predictions else {})) / 1e9,
            "params_mb": param_bytes / 2**20,
            "params_plus_optimizer_mb": (param_bytes + OPTIMIZER_SLOTS * total * 4) / 2**20}


def _itemsize(dtype: str) -> int:
    return {"float32": 4, "bfloat16": 2, "float16": 2}[dtype]


def _fmt_params(n: float) -> str:
    return f"{n / 1e6:,.2f}M"


def _sharing(cfg: AlbertConfig) -> str:
    """'all', or 'all map=0-7.8x4 (9 sets)' when a sharing_map says which layers share."""
    if not cfg.sharing_map:
        return cfg.sharing
    return f"{cfg.sharing} map={format_sharing_map(cfg.layer_set_ids)} ({cfg.num_shared_sets} sets)"


def render_one(name: str, cfg: AlbertConfig, seq_len: int, max_predictions: int = 0) -> str:
    d = describe(cfg, seq_len, max_predictions)
    lines = [f"{name}: V={cfg.vocab_size} E={cfg.embedding_size} H={cfg.hidden_size} L={cfg.num_hidden_layers} "
             f"A={cfg.num_attention_heads} I={cfg.intermediate_size} sharing={_sharing(cfg)} "
             f"G={cfg.num_hidden_groups} inner={cfg.inner_group_num}",
             "| block | parameters |", "|---|---:|"]
    lines += [f"| {blk} | {d[blk]:,} |" for blk in BLOCKS]
    lines += [f"| encoder total (embeddings+projection+layers+pooler) | {d['encoder_total']:,} |",
              f"| total with MLM+SOP heads | {d['total_with_heads']:,} |",
              "",
              f"training FLOPs/token at seq {seq_len}: {d['gflops_per_token']:.3f} GFLOP "
              f"(MLM head over {f'{max_predictions} positions' if max_predictions else '15% of the tokens'}; "
              "every applied layer counted: sharing saves parameters, not FLOPs)",
              f"memory: parameters {d['params_mb']:,.1f} MiB ({cfg.param_dtype}); "
              f"+ optimizer state {d['params_plus_optimizer_mb']:,.1f} MiB"]
    return "\n".join(lines)


def render_compare(rows: list[tuple[str, AlbertConfig]], seq_len: int) -> str:
    head = ("| setting | E | sharing | embeddings+proj | layers | pooler | encoder params | with heads "
            f"| GFLOP/token@{seq_len} |")
    lines = [head, "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for name, cfg in rows:
        d = describe(cfg, seq_len)
        lines.append(f"| {name} | {cfg.embedding_size} | {_sharing(cfg)} | "
                     f"{_fmt_params(d['embeddings'] + d['projection'])} | {_fmt_params(d['attention'] + d['ffn'])} | "
                     f"{_fmt_params(d['pooler'])} | {_fmt_params(d['encoder_total'])} | "
                     f"{_fmt_params(d['total_with_heads'])} | {d['gflops_per_token']:.3f} |")
    return "\n".join(lines)

