"""An experiment file's arguments (`experiments/pretrain.py:scale=cpu,sharing=ffn`), declared once.

Each experiment file lists its arguments as `ARGS = (Arg(...), ...)`: name, type, allowed values, default and a
one-line help. `parse_args` checks a given argument string against that declaration and is the only place that
words its errors; `help_text` is what `albert-jax config args FILE` prints. An argument that is a shorthand for a
config field (`sets="model.sharing"`) is typed, checked and described by that field's own declaration
(configs/schema.py, or AlbertConfig for the model section) and applied with the one override parser after the
config is built, exactly as `--set` would.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple

from albert_jax.configs import schema
from albert_jax.configs.overrides import OverrideError, parse_value, section_field, split_arg

_KINDS = {"bool": bool, "int": int, "float": float, "str": str}


@dataclasses.dataclass(frozen=True)
class Derived:
    """A default that depends on the other arguments (e.g. the scale): `text` says it in the help."""
    text: str
    value: Callable[[dict[str, Any]], Any]


@dataclasses.dataclass(frozen=True)
class Arg:
    """One experiment argument. `name` ending in `<field>` (`model.<field>`) takes every key with that prefix."""
    name: str
    kind: type = str
    allowed: tuple[str, ...] = ()  # the values it takes (empty: any value of `kind`)
    default: Any = None  # a value, or a Derived one
    help: str = ""
    sets: str = ""  # the config field this is a shorthand for: applied after the config is built, as `--set`
    typed_as: str = ""  # a declared config field (configs/schema.py) whose type, check, default and description
    # this argument takes (a shorthand takes its `sets` field's)

    @property
    def prefix(self) -> str:
        return self.name.split("<", 1)[0] if "<" in self.name else ""

    def field(self) -> schema.Field | None:
        key = self.typed_as or self.sets
        if key and key in schema.FIELDS:
            return schema.FIELDS[key]
        return _section_field(key) if key else None

    def default_value(self) -> Any:
        """The declared default, else the field's (a Derived default is resolved by parse_args)."""
        field = self.field()
        if self.default is None and field is not None and field.default is not schema.REQUIRED:
            return field.default
        return self.default

    def check(self, raw: str) -> Any:
        """The value of `name=raw`, or the one-line error naming the argument, the value and what is allowed."""
        field = self.field()
        allowed = self.allowed or (field.choices if field is not None else ())
        if allowed:
            if raw.strip() not in allowed:
                raise OverrideError(f"{self.name}={raw!r}: must be one of {', '.join(allowed)}")
            return raw.strip()
        if field is not None:  # typed and checked as the field it stands for
            value = parse_value(self.name, raw, _KINDS[field.kind], field.nullable)
            if value is not None and field.check is not None and not field.check(value):
                sets = f" (sets {self.sets})" if self.sets and self.sets != self.name else ""
                raise OverrideError(f"{self.name}={value!r}{sets}: must be {field.allowed}")
            return value
        if self.prefix:
            return raw  # model.<field>: typed by AlbertConfig where it is set
        return parse_value(self.name, raw, self.kind)

    def describe(self) -> tuple[str, str]:
        """(`name=<values>`, `help; sets ...; allowed ...; default ...`) for the help text."""
        field = self.field()
        allowed = self.allowed or (field.choices if field is not None else ())
        if allowed:
            values = "|".join(allowed)
        elif field is not None:
            values = f"<{field.kind}>"
        else:
            values = "<value>" if self.prefix else f"<{self.kind.__name__}>"
        default = self.default_value()
        words = [self.help or schema.DESCRIPTIONS.get(self.typed_as or self.sets, ""),
                 f"sets {self.sets}" if self.sets else ""]
        if field is not None and not allowed and field.check is not None:
            words.append(field.allowed)
        if isinstance(default, Derived):
            words.append(f"default: {default.text}")
        elif default is not None:
            words.append(f"default {default!r}")
        return f"{self.name}={values}", "; ".join(w for w in words if w)


def _section_field(key: str) -> schema.Field | None:
    """A field of a section that mirrors a dataclass (the model section: AlbertConfig registers its types and
    allowed values) as a schema Field; its default is the preset's."""
    found = section_field(key)
    if found is None:
        return None
    kinds, nullable, choices = found
    return schema.Field(kinds[0].__name__, None, "", nullable=nullable, choices=choices)


class Parsed(NamedTuple):
    values: dict[str, Any]  # every plain argument (not a shorthand): its typed value, given or the default
    sets: dict[str, str]  # config key -> raw value of each shorthand given, in the given order: for set_field


def parse_args(arg: str, declared: tuple[Arg, ...]) -> Parsed:
    """`arg` ('scale=cpu,model.sharing=ffn') checked against `declared`: an argument that is not declared, or a
    value it does not allow, is one line naming it and what is allowed."""
    by_name = {a.name: a for a in declared if not a.prefix}
    prefixed = [a for a in declared if a.prefix]
    values: dict[str, Any] = {}
    sets: dict[str, str] = {}
    for key, raw in split_arg(arg).items():
        a = by_name.get(key) or next((p for p in prefixed if key.startswith(p.prefix) and key != p.prefix), None)
        if a is None:
            raise OverrideError(f"unknown experiment argument {key!r}; allowed: "
                                f"{', '.join(d.name for d in declared)}")
        value = a.check(raw)
        if a.prefix or a.sets:
            sets[key if a.prefix else a.sets] = raw
        else:
            values[key] = value
    for a in declared:  # defaults in declared order: a Derived one sees every given value and earlier defaults
        if not (a.prefix or a.sets) and a.name not in values:
            values[a.name] = a.default.value(values) if isinstance(a.default, Derived) else a.default_value()
    return Parsed(values, sets)


def help_text(declared: tuple[Arg, ...], spec: str = "") -> str:
    """The arguments of an experiment file, one per line, from its declaration."""
    rows = [a.describe() for a in declared]
    width = max(len(usage) for usage, _ in rows)
    head = f"{spec}:<arguments>, a comma list of key=value:" if spec else "arguments, a comma list of key=value:"
    return "\n".join([head] + [f"  {usage:{width}s}  {words}".rstrip() for usage, words in rows])


def declared_args(module) -> tuple[Arg, ...]:
    """An experiment module's declared arguments (its `ARGS`, or its `get_config`'s)."""
    return getattr(module, "ARGS", None) or getattr(module.get_config, "ARGS", ())
