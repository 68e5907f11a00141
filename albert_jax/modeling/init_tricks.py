"""The official initialisation tricks, as pure functions of parameter trees.

- `init_from_group0`: start a grouped, partially shared or unshared model from a shared checkpoint: every group
  (or layer) gets the shared set (run_pretraining.py --init_from_group0, which rewrites group_N -> group_0).
- `warm_start_deeper`: start a deeper model from a shallower one (the paper's Table 11 footnote, Gong et al.
  2019 "stacking"): layer i of the deep model takes layer i mod L_small. For all-shared models the tree does not
  depend on depth, so this is a plain copy. With a `sharing_map` on either side, each target set takes the
  source set of the layers it serves (target layer i <- source layer i mod L_small); a target set whose layers
  map to different source sets has no single source and is refused.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from albert_jax.modeling import layout


class InitError(ValueError):
    pass


def _encoder(params):
    return params["albert"]["encoder"] if "albert" in params else params["encoder"]


def _with_encoder(params, encoder):
    if "albert" in params:
        return {**params, "albert": {**params["albert"], "encoder": encoder}}
    return {**params, "encoder": encoder}


def _tree(cfg, enc, part: str):
    return enc["shared" if layout.is_shared(cfg, part) else "layers"][part]


def _first_set(src_cfg, src_enc, part):
    """The source's set 0 (group 0, layer 0, or layer 0's map set) of `part`, with an inner axis if it has one."""
    stacked = layout.stacked_sets(src_cfg, part) is not None
    return jax.tree.map(lambda a: a[0] if stacked else a, _tree(src_cfg, src_enc, part))


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
    for part in layout.PARTS:
        one = _first_set(src_cfg, src_enc, part)
        expanded = _expand(one, src_cfg.inner_group_num, dst_cfg.inner_group_num, layout.stacked_sets(dst_cfg, part))
        (shared if layout.is_shared(dst_cfg, part) else layers)[part] = expanded
    if shared:
        enc["shared"] = shared
    if layers:
        enc["layers"] = layers
    return _with_encoder(src_params, enc)


def warm_start_deeper(src_params, src_cfg, dst_cfg):
    """Same sharing, more layers: per-layer parts repeat the shallow stack (layer i <- i mod L_src)."""
    _check_rest(src_params, dst_cfg, src_cfg)
    if src_cfg.sharing_map or dst_cfg.sharing_map:
        return _deeper_with_maps(src_params, src_cfg, dst_cfg)
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


def _deeper_with_maps(src_params, src_cfg, dst_cfg):
    """warm_start_deeper when a sharing_map is involved: target layer i computes what source layer i mod L_src
    computed, so each target set copies the one source set its layers used (refused when they used several)."""
    if (src_cfg.sharing, src_cfg.inner_group_num) != (dst_cfg.sharing, dst_cfg.inner_group_num):
        raise InitError("warm_start_deeper keeps sharing and inner_group_num; use init_from_group0 to change them")
    L_src, L_dst = src_cfg.num_hidden_layers, dst_cfg.num_hidden_layers
    if L_dst < L_src:
        raise InitError(f"target has {L_dst} layers, fewer than the source's {L_src}")
    enc = dict(_encoder(src_params))
    if "layers" in enc:
        index = jnp.arange(L_dst) % L_src
        enc["layers"] = jax.tree.map(lambda a: a[index], enc["layers"])
    if "shared" in enc:
        src_index = layout.shared_index(src_cfg) or (0,) * L_src
        dst_index = layout.shared_index(dst_cfg) or (0,) * L_dst
        sources: dict[int, set[int]] = {}
        for i, s in enumerate(dst_index):
            sources.setdefault(s, set()).add(src_index[i % L_src])
        clash = {s: sorted(v) for s, v in sources.items() if len(v) > 1}
        if clash:
            s, v = next(iter(clash.items()))
            raise InitError(f"warm_start_deeper: target set {s} (sharing_map={dst_cfg.sharing_map!r}) serves layers "
                            f"whose source layers (i mod {L_src}) use different source sets {v}; give the target a "
                            "map that repeats the source's, or use init_from_group0")
        pick = [next(iter(sources[s])) for s in range(len(sources))]
        src_stacked = layout.shared_index(src_cfg) is not None
        dst_stacked = layout.shared_index(dst_cfg) is not None

        def take(a):
            sets = a[jnp.asarray(pick)] if src_stacked else jnp.stack([a] * len(pick))
            return sets if dst_stacked else sets[0]

        enc["shared"] = jax.tree.map(take, enc["shared"])
    return _with_encoder(src_params, enc)
