"""Params-only export in the per-layer layout, and the import back into our scanned tree.

Our tree stores a shared part once (no layer axis; a leading 'groups' axis when num_hidden_groups > 1) and a
per-layer part stacked on a leading 'layers' axis, which is what the scan needs but not what a reader outside
this codebase expects. The export directory holds:

- `params/`: an orbax checkpoint (StandardCheckpointer) of the tree with `encoder/{shared,layers}` replaced by
  one subtree per applied layer, `encoder/layer_<i>/{attention,ffn}` (`layer_<i>/inner_<k>/{attention,ffn}`
  when inner_group_num > 1); everything else (embeddings, projection, pooler, heads) as in the scanned tree.
  A shared set is written once per layer that applies it. `params/sha256.json` is its manifest.
- `layout.json`: the format, the model config, the task, the source run and step, and `sets`: for attention and
  ffn, the list of parameter sets, each the layer subtrees that hold a copy of it (one per layer when nothing is
  shared).

`load_params_export(DIR)` rebuilds the scanned tree, bit for bit; the copies of a shared set must be identical,
or the error names the layers that differ. Which layer applies which set is `modeling.layout.param_set`.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import traverse_util

from albert_jax.config import AlbertConfig
from albert_jax.modeling.layout import PARTS, is_shared, layer_prefix, param_set, shared_prefix

FORMAT = "albert_jax.params"
VERSION = 1
LAYOUT = "layout.json"
PARAMS = "params"


class ParamsExportError(ValueError):
    """An export directory that cannot be read back as asked; the message names the file or the layers."""


def _layer_keys(cfg: AlbertConfig) -> list[tuple[int, int, tuple[str, ...]]]:
    """(layer, inner block, its subtree path under encoder/) for every applied block, in order."""
    K = cfg.inner_group_num
    return [(i, k, (f"layer_{i}",) + ((f"inner_{k}",) if K > 1 else ()))
            for i in range(cfg.num_hidden_layers) for k in range(K)]


def parameter_sets(cfg: AlbertConfig) -> dict[str, list[list[str]]]:
    """For each part, the per-layer subtrees grouped by the parameter set they apply, in first-use order."""
    out: dict[str, list[list[str]]] = {}
    for part in PARTS:
        sets: dict[tuple, list[str]] = {}
        for i, k, path in _layer_keys(cfg):
            sets.setdefault(param_set(cfg, part, i, k), []).append("/".join(path))
        out[part] = list(sets.values())
    return out


def _encoder_of(params: dict) -> tuple[dict, tuple[str, ...]]:
    if "albert" in params:
        return params["albert"]["encoder"], ("albert", "encoder")
    if "encoder" in params:
        return params["encoder"], ("encoder",)
    raise ParamsExportError(f"no encoder in the params (top level {sorted(params)})")


def _replace_at(tree: dict, path: tuple[str, ...], value: dict) -> dict:
    if len(path) == 1:
        return {**tree, path[0]: value}
    return {**tree, path[0]: _replace_at(tree[path[0]], path[1:], value)}


def _get(tree: dict, path: tuple[str, ...]):
    for key in path:
        tree = tree[key]
    return tree


def unscan(cfg: AlbertConfig, params: dict) -> dict:
    """Our scanned tree -> the per-layer tree (numpy leaves): every applied block its own subtree."""
    params = jax.tree.map(np.asarray, jax.device_get(params))
    enc, where = _encoder_of(params)
    per_layer: dict[str, Any] = {k: v for k, v in enc.items() if k not in ("shared", "layers")}
    for i, k, path in _layer_keys(cfg):
        block = {}
        for part in PARTS:
            home, index = param_set(cfg, part, i, k)
            block[part] = jax.tree.map(lambda a: np.array(a[index]), enc[home][part])  # a copy per layer
        node = per_layer
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = block
    return _replace_at(params, where, per_layer)


def rescan(cfg: AlbertConfig, tree: dict) -> dict:
    """The per-layer tree -> our scanned tree (numpy leaves). Every copy of a shared set must be identical."""
    enc, where = _encoder_of(tree)
    expected = {p[0] for _, _, p in _layer_keys(cfg)}
    found = {k for k in enc if k.startswith("layer_")}
    if found != expected:
        raise ParamsExportError(f"the export holds {len(found)} layer subtree(s), the config has "
                                f"num_hidden_layers={cfg.num_hidden_layers}")
    scanned: dict[str, Any] = {k: v for k, v in enc.items() if not k.startswith("layer_")}
    sets = parameter_sets(cfg)
    for part in PARTS:
        first = {}  # set index -> (layer path, flat leaves)
        for i, k, path in _layer_keys(cfg):
            flat = traverse_util.flatten_dict(_get(enc, path)[part])
            home, index = param_set(cfg, part, i, k)
            if index in first:
                ref_path, ref = first[index]
                differ = [key for key in ref if key not in flat or not _identical(ref[key], flat[key])]
                if differ or set(flat) != set(ref):
                    members = next(s for s in sets[part] if "/".join(path) in s)
                    raise ParamsExportError(
                        f"{part} of {'/'.join(path)} differs from {ref_path} "
                        f"({'/'.join(differ[0]) if differ else 'keys'}), but sharing={cfg.sharing!r} "
                        f"(num_hidden_groups={cfg.num_hidden_groups}, sharing_map={cfg.sharing_map!r}) makes "
                        f"{', '.join(members)} one shared set: they must hold identical values")
                continue
            first[index] = ("/".join(path), flat)
        lead = _lead_shape(cfg, part)
        leaves = {key: np.empty(lead + a.shape, a.dtype) for key, a in next(iter(first.values()))[1].items()}
        for index, (_, flat) in first.items():
            for key, a in flat.items():
                leaves[key][index] = a
        home = param_set(cfg, part, 0)[0]
        scanned.setdefault(home, {})[part] = traverse_util.unflatten_dict(leaves)
    return jax.tree.map(np.asarray, _replace_at(tree, where, scanned))


def _lead_shape(cfg: AlbertConfig, part: str) -> tuple[int, ...]:
    prefix = shared_prefix(cfg) if is_shared(cfg, part) else layer_prefix(cfg)
    return tuple(n for n, _ in prefix)


def _identical(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit (NaN payloads and the sign of zero included), as a shared set is one array."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def save_params_export(out_dir, cfg: AlbertConfig, params: dict, *, task: dict | None = None,
                       source: dict | None = None) -> Path:
    """Write `out_dir/params/` (orbax, per-layer layout) and `out_dir/layout.json`; returns out_dir."""
    import orbax.checkpoint as ocp  # noqa: PLC0415  heavy: orbax

    from albert_jax.training.checkpoints import write_manifest  # noqa: PLC0415  heavy: orbax

    out = Path(out_dir).absolute()
    if (out / PARAMS).exists() or (out / LAYOUT).exists():
        raise ParamsExportError(f"{out} already holds a params export; choose another --out or remove it")
    tree = unscan(cfg, params)
    out.mkdir(parents=True, exist_ok=True)
    ckptr = ocp.StandardCheckpointer()
    ckptr.save(str(out / PARAMS), tree)
    ckptr.wait_until_finished()
    ckptr.close()
    write_manifest(str(out / PARAMS))
    layout = {"format": FORMAT, "version": VERSION, "layout": "per_layer",
              "tree": "encoder/layer_<i>" + ("/inner_<k>" if cfg.inner_group_num > 1 else "")
                      + "/{attention,ffn}; everything else as in the scanned tree",
              "num_hidden_layers": cfg.num_hidden_layers, "inner_group_num": cfg.inner_group_num,
              "sets": parameter_sets(cfg), "model": cfg.to_dict(), "task": task or {}, "source": source or {}}
    tmp = out / (LAYOUT + ".tmp")
    tmp.write_text(json.dumps(layout, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, out / LAYOUT)
    return out


def read_layout(directory) -> dict:
    path = Path(directory) / LAYOUT
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found (a params export written by `albert-jax export --to params` "
                                "has layout.json and params/)")
    layout = json.loads(path.read_text(encoding="utf-8"))
    if layout.get("format") != FORMAT or layout.get("version") != VERSION:
        raise ParamsExportError(f"{path}: format {layout.get('format')!r} version {layout.get('version')!r}; this "
                                f"code reads {FORMAT!r} version {VERSION}")
    return layout


def load_params_export(directory) -> tuple[AlbertConfig, dict]:
    """A params export -> (config, our scanned params with jax array leaves, as the model applies them)."""
    import orbax.checkpoint as ocp  # noqa: PLC0415  heavy: orbax

    from albert_jax.training.checkpoints import ChecksumError, verify_step_dir  # noqa: PLC0415  heavy: orbax

    directory = Path(directory).absolute()
    layout = read_layout(directory)
    cfg = AlbertConfig.from_dict(layout["model"])
    try:
        verify_step_dir(str(directory / PARAMS))
    except ChecksumError as e:
        raise ChecksumError(f"{directory / PARAMS} is damaged: {e}") from e
    with ocp.StandardCheckpointer() as ckptr:
        tree = ckptr.restore(str(directory / PARAMS))
    return cfg, jax.tree.map(jnp.asarray, rescan(cfg, jax.tree.map(np.asarray, tree)))
