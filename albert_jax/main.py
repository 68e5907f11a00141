"""The `albert-jax` command line: a thin dispatcher over the library.

Each sub-command lives in its own small module under albert_jax/cli/ with an `add_cli(subparsers)` function, so
this file only lists them; the heavy imports (jax, tfds, torch) happen inside the handlers, which keeps `--help` fast.
"""
from __future__ import annotations

import argparse
import errno as errno_mod
import importlib
import os
import sys

from albert_jax import __version__, compile_cache, lifeline

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
    parser = argparse.ArgumentParser(prog="albert-jax", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"albert-jax {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in _CLI_MODULES:
        importlib.import_module(name).add_cli(sub)
    return parser


# OSErrors that a path the user named explains (a file where a directory is needed, no permission, a read-only or
# full disk...): printed as one line naming the option and the path.
_PATH_ERRNOS = {"ENOTDIR", "EACCES", "EPERM", "EROFS", "EISDIR", "ENOSPC", "EDQUOT", "EEXIST", "ENOENT", "ENAMETOOLONG"}


def _output_error(e: OSError, args) -> str | None:
    """`--out DIR: cannot write DIR/config.json: ...` for an OSError on a path under one of the command's options;
    None when no option names it (or the error is not one a user can act on)."""
    if not e.filename or errno_mod.errorcode.get(e.errno or 0) not in _PATH_ERRNOS:
        return None
    target = os.path.abspath(os.fsdecode(e.filename))
    for dest, value in sorted(vars(args).items()):
        if not isinstance(value, str) or not value or value == "-" or dest in ("command", "func"):
            continue
        given = os.path.abspath(value)
        if target != given and not target.startswith(given.rstrip(os.sep) + os.sep) and not (
                target.startswith(given) and not target[len(given)].isalnum()):
            continue
        option = "--" + dest.replace("_", "-")
        if e.errno == errno_mod.ENOTDIR:  # name the file that is in the way
            up = os.path.dirname(target)
            while up and not os.path.isdir(up) and not os.path.isfile(up) and os.path.dirname(up) != up:
                up = os.path.dirname(up)
            if os.path.isfile(up):
                return f"{option} {value}: {up} is a file, not a directory"
        return f"{option} {value}: {e.strerror or e}" + ("" if target == given else f": {target}")
    return None


def _end_progress_lines() -> None:
    """Close any progress bar still drawn (TFDS's, ours): its line ends, so the error starts a line of its own
    instead of being glued onto the bar's escape codes."""
    std = sys.modules.get("tqdm.std")
    if std is None:
        return
    for bar in list(getattr(std.tqdm, "_instances", ())):
        try:
            bar.close()
        except Exception:  # a bar half torn down already: nothing more to end
            pass
    sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    lifeline.hold()  # a stage of `sweep --jobs` stops with its sweep
    args = build_parser().parse_args(argv)
    compile_cache.enable()  # before jax is imported by the handler
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # inside the try: a reader that went away (| head) ends it here, not at exit
        return code
    except BrokenPipeError:  # `... | head -1`: the reader has what it wanted; end quietly, as Unix tools do
        if os.environ.get("ALBERT_JAX_DEBUG"):
            raise
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush at exit has nowhere to fail
        return 141  # 128 + SIGPIPE, what a shell reports for a tool the closed pipe stopped
    except (UserError, ValueError, OSError) as e:
        if os.environ.get("ALBERT_JAX_DEBUG"):
            raise  # the full traceback, for bug reports
        if isinstance(e, OSError) and not isinstance(e, FileNotFoundError):
            message = _output_error(e, args)
            if message is None:
                raise  # not about a path the user gave: a bug, with its traceback
            e = UserError(message)
        elif isinstance(e, FileNotFoundError):
            e = UserError(_output_error(e, args) or str(e))
        _end_progress_lines()
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
