"""`albert-jax summary`: parameters by block, FLOPs per token and memory of a config (albert_jax/summary.py)."""
from __future__ import annotations

from albert_jax.config import parse_overrides, preset
from albert_jax.summary import render_compare, render_one


def run(args) -> int:
    base = preset(args.preset)
    if args.compare:
        rows = []
        for item in args.compare:
            rows.append((item, base.replace(**parse_overrides(item))))
        print(render_compare(rows, args.seq_len))
    else:
        cfg = base.replace(**parse_overrides(args.set or ""))
        print(render_one(args.preset, cfg, args.seq_len))
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("summary", help="parameter count by block, FLOPs per token and memory of a config")
    p.add_argument("--preset", default="albert-base", help="a preset name (see albert_jax/config.py)")
    p.add_argument("--set", default="", help="overrides, e.g. sharing=attention,embedding_size=768")
    p.add_argument("--compare", nargs="+", metavar="OVERRIDES",
                   help="several override sets to compare in one table, e.g. 'sharing=all' 'sharing=none'")
    p.add_argument("--seq-len", type=int, default=512)
    p.set_defaults(func=run)
