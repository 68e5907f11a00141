"""`albert-jax table NAME --runs DIR`: the paper's table with our numbers beside it (markdown, CSV, plots)."""
from __future__ import annotations


def _run(args) -> int:
    from albert_jax.experiments import registry, table

    exp = registry.get(args.name, args.experiments_dir)
    text, files = table.build(exp, args.scale, args.runs, args.out, plots=not args.no_plots)
    print(text)
    print("wrote " + ", ".join(str(f) for f in files))
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("table", help="an experiment's table from its runs, the paper's values beside ours")
    p.add_argument("name")
    p.add_argument("--scale", default="cpu", help="smoke, cpu or paper (default cpu)")
    p.add_argument("--runs", required=True, help="the sweep's runs directory")
    p.add_argument("--out", help="where to write table.md, table.csv, curves.png, bars.png (default: the sweep's)")
    p.add_argument("--no-plots", action="store_true", help="markdown and CSV only")
    p.add_argument("--experiments-dir", default=None, help="where the experiment files are (default: experiments/)")
    p.set_defaults(func=_run)
