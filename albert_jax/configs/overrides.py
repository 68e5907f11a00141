"""The one typed override parser: experiment arguments (`scale=smoke,model.sharing=ffn`) and `--set k=v`.

Every value is parsed against the type of the field it sets, never guessed from its spelling: the type
configs/schema.py declares (AlbertConfig's for the model section). `--set model.embedding_size=256` stays an int,
`train.learning_rate=1e-3` a float, a bool field takes only true/false, an int field refuses `true` and `2.5`.
Fields declared `X | None` (e.g. `model.embedding_projection`) also take `none`. A wrong key names the section's
fields; a wrong value names the field, the value and the type.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from albert_jax.configs import schema


class ConfigError(ValueError):
    """A config field holds a value that is not allowed; the message names the field."""


_TRUE, _FALSE, _NONE = ("true", "yes", "on"), ("false", "no", "off"), ("none", "null")


class OverrideError(ConfigError):
    """A `key=value` that does not fit the config; the message names the key."""


def split_arg(arg: str) -> dict[str, str]:
    """'a=1,b.c=x' -> {'a': '1', 'b.c': 'x'} (raw strings; types are applied where they are set)."""
    out: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in (arg or "").split(","))):
        if "=" not in item:
            raise OverrideError(f"argument {item!r}: expected key=value (e.g. scale=smoke)")
        k, v = item.split("=", 1)
        if k.strip() in out:
            raise OverrideError(f"argument {k.strip()!r} given twice")
        out[k.strip()] = v.strip()
    return out


def _allowed_types(annotation: Any) -> tuple[tuple[type, ...], bool]:
    """(concrete types, accepts None) of a dataclass annotation such as `bool | None`."""
    if isinstance(annotation, str):
        annotation = eval(annotation, {"bool": bool, "int": int, "float": float, "str": str})  # noqa: S307
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        return tuple(a for a in args if a is not type(None)), type(None) in args
    return (annotation,), False


def parse_value(key: str, raw: str, kind: type | tuple[type, ...], nullable: bool = False) -> Any:
    """`raw` as one of `kind` (bool, int, float, str); `nullable` also accepts none/null."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    text = raw.strip()
    if nullable and text.lower() in _NONE:
        return None
    for k in kinds:
        if k is bool:
            if text.lower() in _TRUE + ("1",):
                return True
            if text.lower() in _FALSE + ("0",):
                return False
        elif k is int:
            try:
                return int(text)
            except ValueError:
                pass
            try:
                f = float(text)
            except ValueError:
                continue
            if "e" in text.lower() and f.is_integer():
                return int(f)  # 1e5 for a step count; 2.5 stays an error
        elif k is float:
            try:
                return float(text)
            except ValueError:
                continue
        elif k is str:
            if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
                return text[1:-1]  # a shell-quoted string: --set train.init_from='runs/a'
            return text
    names = " or ".join(k.__name__ for k in kinds) + (" or none" if nullable else "")
    raise OverrideError(f"{key}={raw!r}: expected a value of type {names}")


def _type_of_current(value: Any) -> tuple[tuple[type, ...], bool]:
    if isinstance(value, bool):
        return (bool,), False
    if isinstance(value, int):
        return (int,), False
    if isinstance(value, float):
        return (float,), False  # an int literal is fine for a float field: 1 -> 1.0
    if isinstance(value, str):
        return (str,), False
    raise OverrideError(f"field holds a {type(value).__name__}, which cannot be set from the command line")


def field_types(dataclass_type) -> dict[str, tuple[tuple[type, ...], bool]]:
    """Field name -> (types, nullable) of a dataclass, for sections that mirror one (the model section)."""
    hints = typing.get_type_hints(dataclass_type)
    return {f.name: _allowed_types(hints[f.name]) for f in dataclasses.fields(dataclass_type)}


_KINDS = {"bool": bool, "int": int, "float": float, "str": str}

# Sections whose fields mirror a dataclass: their types come from its annotations (so None-able fields work).
_SECTION_TYPES: dict[str, Any] = {}
_SECTION_CHOICES: dict[str, dict[str, tuple[str, ...]]] = {}


def register_section(section: str, dataclass_type, choices: dict[str, tuple[str, ...]] | None = None) -> None:
    _SECTION_TYPES[section] = field_types(dataclass_type)
    _SECTION_CHOICES[section] = dict(choices or {})


def section_field(key: str) -> tuple[tuple[type, ...], bool, tuple[str, ...]] | None:
    """(types, accepts None, allowed values) of a registered section's field (`model.sharing`), or None."""
    section, _, leaf = key.rpartition(".")
    if leaf not in _SECTION_TYPES.get(section, {}):
        return None
    return (*_SECTION_TYPES[section][leaf], _SECTION_CHOICES[section].get(leaf, ()))


def set_field(config, key: str, raw: str) -> None:
    """config['a']['b'] = raw parsed as the type of that field (`key` = 'a.b')."""
    *parents, leaf = key.strip().split(".")
    node = config
    for i, name in enumerate(parents):
        if name not in node:
            where = ".".join(parents[:i]) or "the config"
            raise OverrideError(f"{key}: no section {name!r} in {where}; sections are "
                                f"{sorted(k for k in node.keys() if hasattr(node[k], 'keys'))}")
        node = node[name]
    if leaf not in node or hasattr(node[leaf], "keys"):
        raise OverrideError(f"{key}: no field {leaf!r}; fields are "
                            f"{sorted(k for k in node.keys() if not hasattr(node[k], 'keys'))}")
    section_types = _SECTION_TYPES.get(".".join(parents), {})
    declared = schema.FIELDS.get(key.strip())
    if leaf in section_types:
        kinds, nullable = section_types[leaf]
    elif declared is not None:
        kinds, nullable = (_KINDS[declared.kind],), declared.nullable
    elif node[leaf] is None:
        raise OverrideError(f"{key}: the field is unset (None) and has no declared type")
    else:
        kinds, nullable = _type_of_current(node[leaf])
    node[leaf] = parse_value(key, raw, kinds, nullable)


def apply_override(config, item: str) -> None:
    """One `--set dotted.key=value`."""
    if "=" not in item:
        raise OverrideError(f"override {item!r}: expected dotted.key=value")
    key, raw = item.split("=", 1)
    set_field(config, key, raw)


def apply_overrides(config, items) -> None:
    for item in items or ():
        apply_override(config, item)
