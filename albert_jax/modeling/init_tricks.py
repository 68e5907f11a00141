"""The official initialisation tricks, as pure functions of parameter trees.

- `init_from_group0`: start a grouped, partially shared or unshared model from a shared checkpoint: every group
  (or layer) gets the shared set (run_pretraining.py --init_from_group0, which rewrites group_N -> group_0).
- `warm_start_deeper`: start a deeper model from a shallower one (the paper's Table 11 footnote, Gong et al.
  2019 "stacking"): layer i of the deep model takes layer i mod L_small. For all-shared models the tree does not
  depend on depth, so this is a plain copy.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp


class InitError(ValueError):
    pass


def _encoder(params):
    return params["albert"]["encoder"] if "albert" in params else params["encoder"]


def _with_encoder(params, encoder):
    if "albert" in params:
        return {**params, "albert": {**params["albert"], "encoder": encoder}}
    return {**params, "encoder": encoder}


def _part(cfg, enc, part: str):
    """(tree, leading axes) of one part of the source: 'shared' tree has groups?/inner? axes, 'layers' has L/inner?"""
    shared = cfg.attention_shared if part == "attention" else cfg.ffn_shared
    tree = enc["shared" if shared else "layers"][part]
    lead = (1 if (shared and cfg.num_hidden_groups > 1) or not shared else 0)
    return tree, lead


def _first_set(src_cfg, src_enc, part):
    """The source's group-0 (or layer-0) parameter set of `part`, with an inner axis if the source has one."""
    tree, lead = _part(src_cfg, src_enc, part)
    return jax.tree.map(lambda a: a[0] if lead else a, tree)


def _expand(one_set, src_inner: int, dst_inner: int, count: int | None):
    if src_inner != dst_inner:
        if src_inner != 1:
            raise InitError(f"inner_group_num {src_inner} -> {dst_inner}: only a source with 1 inner block can "
                            "be copied into several")
        if dst_inner > 1:
            one_set = jax.tree.map(lambda a: jnp.stack([a] * dst_inner), one_set)
    if count is None:
        return one_set
    return jax.tree.map(lambda a: jnp.stack([a] * count), one_set)


def _check_rest(src, dst_cfg, src_cfg):
    same = ("vocab_size", "embedding_size", "hidden_size", "intermediate_size", "num_attention_heads",
            "max_position_embeddings", "type_vocab_size", "use_projection")
    diff = [f"{k}: {getattr(src_cfg, k)} vs {getattr(dst_cfg, k)}" for k in same
            if getattr(src_cfg, k) != getattr(dst_cfg, k)]
    if diff:
        raise InitError("source and target models differ in " + "; ".join(diff))


def init_from_group0(src_params, src_cfg, dst_cfg):
    """Every group / layer of `dst_cfg` starts from the source's first parameter set."""
    _check_rest(src_params, dst_cfg, src_cfg)
    src_enc = _encoder(src_params)
    enc = {k: v for k, v in src_enc.items() if k not in ("shared", "layers")}
    shared, layers = {}, {}
    for part in ("attention", "ffn"):
        one = _first_set(src_cfg, src_enc, part)
        dst_shared = dst_cfg.attention_shared if part == "attention" else dst_cfg.ffn_shared
        if dst_shared:
            count = dst_cfg.num_hidden_groups if dst_cfg.num_hidden_groups > 1 else None
            shared[part] = _expand(one, src_cfg.inner_group_num, dst_cfg.inner_group_num, count)
        else:
            layers[part] = _expand(one, src_cfg.inner_group_num, dst_cfg.inner_group_num,
                                   dst_cfg.num_hidden_layers)
    if shared:
        enc["shared"] = shared
    if layers:
        enc["layers"] = layers
    return _with_encoder(src_params, enc)


def warm_start_deeper(src_params, src_cfg, dst_cfg):
    """Same sharing, more layers: per-layer parts repeat the shallow stack (layer i <- i mod L_src)."""
    _check_rest(src_params, dst_cfg, src_cfg)
    if (src_cfg.sharing, src_cfg.num_hidden_groups, src_cfg.inner_group_num) != (
            dst_cfg.sharing, dst_cfg.num_hidden_groups, dst_cfg.inner_group_num):
        raise InitError("warm_start_deeper keeps the sharing layout (sharing, groups, inner); use "
                        "init_from_group0 to change it")
    if dst_cfg.num_hidden_layers < src_cfg.num_hidden_layers:
        raise InitError(f"target has {dst_cfg.num_hidden_layers} layers, fewer than the source's "
                        f"{src_cfg.num_hidden_layers}")
    enc = dict(_encoder(src_params))
    if "layers" in enc:
        index = jnp.arange(dst_cfg.num_hidden_layers) % src_cfg.num_hidden_layers
        enc["layers"] = jax.tree.map(lambda a: a[index], enc["layers"])
    return _with_encoder(src_params, enc)
