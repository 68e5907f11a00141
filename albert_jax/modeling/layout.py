"""The encoder's parameter layout: which parts are shared, their stack axes, and which set each layer uses.

The one owner of these facts: the encoder declares and indexes its tree by them, and the init tricks read the
tree by them. A shared part lives under `encoder/shared/<part>` with a leading
- 'sets' axis (one entry per distinct set) when `sharing_map` is set: layer i uses set `layer_set_ids[i]`;
- 'groups' axis when num_hidden_groups G > 1: layer i uses group i*G//L (the official rule);
- no stack axis otherwise: every layer uses the one set.
A per-layer part lives under `encoder/layers/<part>` with a leading 'layers' axis. inner_group_num > 1 adds an
'inner' axis right after those (first, for a shared part with no stack axis).
"""
from __future__ import annotations

PARTS = ("attention", "ffn")


def is_shared(cfg, part: str) -> bool:
    return cfg.attention_shared if part == "attention" else cfg.ffn_shared


def inner_prefix(cfg) -> tuple[tuple[int, str], ...]:
    return ((cfg.inner_group_num, "inner"),) if cfg.inner_group_num > 1 else ()


def shared_prefix(cfg) -> tuple[tuple[int, str], ...]:
    """(size, logical name) of the leading axes of every shared parameter."""
    if cfg.sharing_map:
        return ((cfg.num_shared_sets, "sets"),) + inner_prefix(cfg)
    if cfg.num_hidden_groups > 1:
        return ((cfg.num_hidden_groups, "groups"),) + inner_prefix(cfg)
    return inner_prefix(cfg)


def layer_prefix(cfg) -> tuple[tuple[int, str], ...]:
    """(size, logical name) of the leading axes of every per-layer parameter."""
    return ((cfg.num_hidden_layers, "layers"),) + inner_prefix(cfg)


def shared_index(cfg) -> tuple[int, ...] | None:
    """Layer i's index into the shared parts' leading 'sets'/'groups' axis; None when they have no such axis."""
    if cfg.sharing_map:
        return cfg.layer_set_ids
    if cfg.num_hidden_groups > 1:
        G, L = cfg.num_hidden_groups, cfg.num_hidden_layers
        return tuple(i * G // L for i in range(L))
    return None


def stacked_sets(cfg, part: str) -> int | None:
    """How many parameter sets `part`'s leading set/group/layer axis holds; None when it has no such axis."""
    if not is_shared(cfg, part):
        return cfg.num_hidden_layers
    return cfg.num_shared_sets if shared_index(cfg) is not None else None


def param_set(cfg, part: str, layer: int, inner: int = 0) -> tuple[str, tuple[int, ...]]:
    """Where the parameters that layer `layer` (inner block `inner`) applies for `part` ('attention' or 'ffn')
    live: ('shared' | 'layers', the index into that subtree's leading axes). Exporters and importers of other
    layouts ask this rather than repeat the rule."""
    inner_ix = (inner,) if cfg.inner_group_num > 1 else ()
    if not is_shared(cfg, part):
        return "layers", (layer,) + inner_ix
    index = shared_index(cfg)
    return "shared", ((index[layer],) if index is not None else ()) + inner_ix
