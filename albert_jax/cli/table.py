"""`albert-jax table NAME --runs DIR` (or `--evidence DIR`): the paper's table with our numbers beside it (markdown,
CSV, plots); `--export-evidence DIR` also writes the runs' evidence (ablations/evidence_dir.py)."""
from __future__ import annotations

from pathlib import Path

from albert_jax.configs.scales import SCALES


def _run(args) -> int:
    from albert_jax.ablations import evidence_dir, registry, sweep, table  # noqa: PLC0415  CLI start

    if (args.runs is None) == (args.evidence is None):
        raise ValueError("give --runs (a sweep's runs directory) or --evidence (an evidence directory), not both")
    if args.export_evidence and args.runs is None:
        raise ValueError("--export-evidence writes a runs directory's evidence: give --runs")
    option, root = _root(args)
    if not Path(root).is_dir():  # a table of nothing but "not run" rows would hide a mistyped path
        raise FileNotFoundError(f"{option} {root}: no such directory (the {option} a sweep of {args.name} wrote "
                                "into)")
    exp = registry.get(args.name, args.experiments_dir)
    args.scale = _scale(args)
    if args.evidence:
        evidence_dir.verify(Path(root) / args.name / args.scale)
    if args.export_evidence:
        stages = sweep.export_evidence(exp, args.scale, args.runs, args.export_evidence)
        print(f"exported {len(stages)} stages to {Path(args.export_evidence) / args.name / args.scale}")
    if args.best:
        best = table.best_row(exp, args.scale, root, hf_only=args.best == "hf")
        if best is None:
            raise ValueError(f"{args.name} at scale {args.scale} in {root} has no finished row with a "
                             "fine-tuning score" + (" that HF can express" if args.best == "hf" else ""))
        print(best["workdir"])  # alone on stdout, for `albert-jax export --workdir $(...)`
        return 0
    text, files = table.build(exp, args.scale, root, args.out, plots=not args.no_plots)
    print(text)
    print("wrote " + ", ".join(str(f) for f in files))
    return 0


def scales_run(runs, name: str) -> list[str]:
    """The scales at which a sweep of `name` wrote rows under `runs` (runs/NAME/<scale>/ holding something)."""
    base = Path(runs) / name
    return [s for s in SCALES if (base / s).is_dir() and any((base / s).iterdir())]


def _root(args) -> tuple[str, str]:
    """(option, directory) the table is read from: --evidence, else --runs (the same layout)."""
    evidence = getattr(args, "evidence", None)
    return ("--evidence", evidence) if evidence else ("--runs", args.runs)


def _scale(args) -> str:
    """--scale as given, or the one scale the runs have; a scale with no runs is refused (its table would be
    "not run" rows only, and writing it would create runs/NAME/<scale>/), naming the scales that have runs."""
    option, root = _root(args)
    found = scales_run(root, args.name)
    where = Path(root) / args.name
    hint = (f"scales with runs there: {', '.join(found)}" if found else
            f"no scale has runs there yet (albert-jax sweep {args.name} --scale ... {option} {root})")
    if args.scale is None:
        if len(found) == 1:
            return found[0]
        if found:
            raise ValueError(f"{where} has runs at several scales ({', '.join(found)}): pick one with --scale")
        raise ValueError(f"{where}: no runs of {args.name}; {hint}")
    if args.scale not in found:
        raise ValueError(f"--scale {args.scale}: {where / args.scale} holds no runs; {hint}")
    return args.scale


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("table", help="an experiment's table from its runs, the paper's values beside ours")
    p.add_argument("name", help="the experiment (table4, table5, ...: `albert-jax experiments list`)")
    p.add_argument("--scale", default=None, help="smoke, cpu or paper (default: the one scale the runs "
                   "directory has runs at)")
    p.add_argument("--runs", help="the sweep's runs directory")
    p.add_argument("--evidence", metavar="DIR", help="build from an evidence directory instead of --runs (no run "
                   "directory or data cache needed; docs/experiments.md)")
    p.add_argument("--export-evidence", dest="export_evidence", metavar="DIR", help="with --runs: also write the "
                   "rows' evidence, as they stand, to DIR (DIR/NAME/SCALE/<row>/)")
    p.add_argument("--out", help="where to write table.md, table.csv, curves.png, bars.png (default: the sweep's)")
    p.add_argument("--best", choices=("any", "hf"), help="print only the fine-tuning workdir of the best finished "
                   "row (hf: among the rows transformers can express) and exit")
    p.add_argument("--no-plots", action="store_true", help="markdown and CSV only")
    p.add_argument("--experiments-dir", default=None, help="where the experiment files are (default: experiments/)")
    p.set_defaults(func=_run)
