"""`albert-jax table NAME --runs DIR`: the paper's table with our numbers beside it (markdown, CSV, plots)."""
from __future__ import annotations


def _run(args) -> int:
    from pathlib import Path

    from albert_jax.ablations import registry, table

    if not Path(args.runs).is_dir():  # a table of nothing but "not run" rows would hide a mistyped path
        raise FileNotFoundError(f"--runs {args.runs}: no such directory (the --runs a sweep of {args.name} wrote "
                                "into)")
    exp = registry.get(args.name, args.experiments_dir)
    if args.best:
        best = table.best_row(exp, args.scale, args.runs, hf_only=args.best == "hf")
        if best is None:
            raise ValueError(f"{args.name} at scale {args.scale} in {args.runs} has no finished row with a "
                             "fine-tuning score" + (" that HF can express" if args.best == "hf" else ""))
        print(best["workdir"])  # alone on stdout, for `albert-jax export --workdir $(...)`
        return 0
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
    p.add_argument("--best", choices=("any", "hf"), help="print only the fine-tuning workdir of the best finished "
                   "row (hf: among the rows transformers can express) and exit")
    p.add_argument("--no-plots", action="store_true", help="markdown and CSV only")
    p.add_argument("--experiments-dir", default=None, help="where the experiment files are (default: experiments/)")
    p.set_defaults(func=_run)
