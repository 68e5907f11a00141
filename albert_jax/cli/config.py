"""`albert-jax config show SPEC`: every field of an experiment config with its type, default, this config's value,
allowed values, role and a one-line description, from the schema that declares them (configs/schema.py; the model
section's types and defaults are AlbertConfig's). `albert-jax config args FILE`: the arguments an experiment file
takes after ':', from its declaration (configs/arguments.py)."""
from __future__ import annotations

import dataclasses
import json

from albert_jax.cli.common import load_experiment
from albert_jax.config import FIELD_CHOICES as choices
from albert_jax.config import AlbertConfig
from albert_jax.configs import overrides, schema
from albert_jax.configs.arguments import declared_args, help_text
from albert_jax.configs.loader import find_config_file, load_module


def _model_rows(section) -> list[dict]:
    types = overrides.field_types(AlbertConfig)
    rows = []
    for f in dataclasses.fields(AlbertConfig):
        if f.name not in section:  # fine-tuning from a source: the architecture is the source's
            continue
        kinds, nullable = types[f.name]
        allowed = f"one of {', '.join(choices[f.name])}" if f.name in choices else ""
        rows.append({"key": f"model.{f.name}", "type": kinds[0].__name__ + (" or null" if nullable else ""),
                     "default": f.default, "value": section[f.name], "allowed": allowed,
                     "role": schema.role_of(f"model.{f.name}"), "description": schema.DESCRIPTIONS.get(
                         f"model.{f.name}", "")})
    return rows


def field_rows(config) -> list[dict]:
    """One row per field the config's driver reads (declared ones the config leaves out read their default), then
    any field the config holds that no driver reads."""
    kind = config.get("experiment", "")
    sections = schema.PRETRAIN if kind == "pretrain" else {**schema.FINETUNE, **(
        {"distill": schema.DISTILL} if "distill" in config else {})}
    top = {**schema.DESCRIPTIVE, **sections.get("", {})}
    declared = [("", top), ("model", None), *((k, v) for k, v in sections.items() if k)]
    rows, seen = [], set()
    for name, fields in declared:
        if fields is None:
            if "model" in config:
                rows += _model_rows(config.model)
                seen |= {f"model.{k}" for k in config.model}
            continue
        node = config if name == "" else config.get(name, {})
        for field, f in fields.items():
            key = f"{name}.{field}" if name else field
            seen.add(key)
            default = "(set by the experiment)" if f.default is schema.REQUIRED else f.default
            rows.append({"key": key, "type": f.kind + (" or null" if f.nullable else ""), "default": default,
                         "value": node[field] if field in node else default, "allowed": f.allowed,
                         "role": f.role, "description": schema.DESCRIPTIONS.get(key, "")})
    for name in config:  # what the config holds beyond the schema: no driver reads it
        for key in ([f"{name}.{k}" for k in config[name]] if hasattr(config[name], "keys") else [name]):
            if key not in seen:
                rows.append({"key": key, "type": "", "default": "", "value": config[key.split(".")[0]][
                    key.split(".", 1)[1]] if "." in key else config[key], "allowed": "", "role": "",
                    "description": "not a declared field: no driver reads it"})
    return rows


def _show(args) -> int:
    rows = field_rows(load_experiment(args.spec, args.set or []))
    if args.json:
        print(json.dumps(rows, indent=1, default=str))
        return 0
    for r in rows:
        value = json.dumps(r["value"], default=str)
        default = r["default"] if isinstance(r["default"], str) and r["default"].startswith("(") else json.dumps(
            r["default"], default=str)
        facts = "; ".join(x for x in (r["type"], f"default {default}", r["allowed"], r["role"]) if x)
        print(f"{r['key']} = {value}  [{facts}]  {r['description']}".rstrip())
    return 0


def _args(args) -> int:
    path = args.file.partition(":")[0]
    declared = declared_args(load_module(find_config_file(path)))
    if not declared:
        raise ValueError(f"{path} declares no arguments (an experiment file lists them as ARGS)")
    print(help_text(declared, path))
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("config", help="show an experiment config's fields: type, default, value, allowed "
                              "values, role, description")
    sub = p.add_subparsers(dest="config_command", required=True)
    q = sub.add_parser("show", help="every field of an experiment config, one line each",
                       description="Every field of the config SPEC (experiments/<file>.py[:args]) after --set, one "
                       "line each: key = this config's value [type; default; allowed values; role] description. "
                       "Roles: identity (a resume may not change it), schedule (with train.allow_changed_schedule="
                       "true), speed (changes only speed and memory), free (logging, cadence, layout).")
    q.add_argument("spec", help="experiments/<file>.py[:args], e.g. experiments/finetune.py:task=rt_sentiment")
    q.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a field first, as for the drivers")
    q.add_argument("--json", action="store_true", help="a JSON list of rows instead of lines")
    q.set_defaults(func=_show)
    q = sub.add_parser("args", help="the arguments an experiment file takes after ':'",
                       description="Each argument of the experiment file FILE (experiments/<file>.py): its allowed "
                       "values or type, what it sets, and its default, from the file's declaration (ARGS).")
    q.add_argument("file", help="experiments/<file>.py, e.g. experiments/pretrain.py")
    q.set_defaults(func=_args)
