"""The `albert-jax` command line: a thin dispatcher over the library.

Each sub-command lives in its own small module under albert_jax/cli/ with an `add_cli(subparsers)` function, so
this file only lists them; the heavy imports (jax, tfds, torch) happen inside the handlers, which keeps `--help` fast.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

# Modules that contribute sub-commands, in the order `--help` lists them.
_CLI_MODULES = (
    "albert_jax.cli.summary",
    "albert_jax.cli.data",
    "albert_jax.cli.tokenizer",
    "albert_jax.cli.pretraining_data",
    "albert_jax.cli.pretrain",
    "albert_jax.cli.finetune",
    "albert_jax.cli.predict",
    "albert_jax.cli.evaluate",
    "albert_jax.cli.export",
    "albert_jax.cli.convert",
    "albert_jax.cli.experiments",
    "albert_jax.cli.config",
    "albert_jax.cli.sweep",
    "albert_jax.cli.table",
    "albert_jax.cli.recipes",
    "albert_jax.cli.analyze",
    "albert_jax.cli.quantize",
    "albert_jax.cli.distill",
    "albert_jax.cli.plan",
)


class UserError(Exception):
    """An error caused by the user's input; printed without a traceback."""


def build_parser() -> argparse.ArgumentParser:
    from albert_jax import __version__

    parser = argparse.ArgumentParser(prog="albert-jax", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"albert-jax {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in _CLI_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:  # that area is not built yet; its commands are simply absent
                continue
            raise
        module.add_cli(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from albert_jax import lifeline
    lifeline.hold()  # a stage of `sweep --jobs` stops with its sweep
    args = build_parser().parse_args(argv)
    from albert_jax import compile_cache
    compile_cache.enable()  # before jax is imported by the handler
    try:
        return int(args.func(args) or 0)
    except (UserError, ValueError, FileNotFoundError) as e:
        if os.environ.get("ALBERT_JAX_DEBUG"):
            raise  # the full traceback, for bug reports
        first, *rest = str(e).strip().splitlines() or [type(e).__name__]
        more = f" [{len(rest)} more line(s): rerun with ALBERT_JAX_DEBUG=1 for all]" if rest else ""
        print(f"albert-jax {args.command}: error: {first}{more}", file=sys.stderr)  # one line, always
        return 2
    except KeyboardInterrupt:  # training commands checkpoint on Ctrl-C themselves (exit 3); this is the others
        if os.environ.get("ALBERT_JAX_DEBUG"):
            raise
        print(f"albert-jax {args.command}: interrupted; files being written were removed, the finished ones kept: "
              "run the same command again", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
