"""`albert-jax summary`: parameters by block, FLOPs per token and memory of a config (albert_jax/summary.py)."""
from __future__ import annotations

import argparse

from albert_jax.config import parse_overrides, preset
from albert_jax.summary import render_compare, render_one


def _overrides(items) -> dict:
    """Every `--set` (repeatable, each a comma list) as one typed override set. Fields are AlbertConfig's, written
    as `pretrain` writes them (`model.embedding_size=256`) or bare (`embedding_size=256`); a field given twice
    is refused by the parser."""
    pairs = [p.strip() for item in items or () for p in item.split(",") if p.strip()]
    return parse_overrides(",".join(p[len("model."):] if p.startswith("model.") else p for p in pairs))


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be a positive integer (tokens per sequence)")
    return n


def run(args) -> int:
    base = preset(args.preset).replace(**_overrides(args.set))  # --set applies to every compared row too
    if args.compare:
        rows = [(item, base.replace(**_overrides([item]))) for item in args.compare]
        print(render_compare(rows, args.seq_len))
    else:
        print(render_one(args.preset, base, args.seq_len, args.max_predictions))
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("summary", help="parameter count by block, FLOPs per token and memory of a config")
    p.add_argument("--preset", default="albert-base", help="a preset name (see albert_jax/config.py)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="model overrides, repeatable and comma-separated, as pretrain takes them or bare: "
                   "model.sharing=attention, embedding_size=768; with --compare they apply to every row")
    p.add_argument("--compare", nargs="+", metavar="OVERRIDES",
                   help="several override sets to compare in one table, e.g. 'sharing=all' 'sharing=none'")
    p.add_argument("--seq-len", type=_positive, default=512, help="tokens per sequence for FLOPs (default 512)")
    p.add_argument("--max-predictions", type=int, default=0, metavar="N",
                   help="count the MLM head over N positions per sequence, as a pretraining step with "
                   "max_predictions_per_seq=N computes it (the paper: 20 at 512; what `albert-jax plan` compares "
                   "with); default: 15%% of the tokens")
    p.set_defaults(func=run)
