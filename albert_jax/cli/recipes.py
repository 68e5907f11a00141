"""`albert-jax recipes run|report`: the study that chose the cpu scale (docs/reproduction.md, "Choosing the cpu
scale"): candidate pretraining recipes and their held-out curves against CPU-minutes."""
from __future__ import annotations


def _run(args) -> int:
    from albert_jax.ablations import recipes  # noqa: PLC0415  CLI start

    chosen = recipes.select(args.only)
    if args.print:
        for r in chosen:
            print(" ".join(recipes.command(r, args.runs)))
        return 0
    return recipes.run(chosen, args.runs, cwd=recipes.repo_root())


def _report(args) -> int:
    from albert_jax.ablations import recipes  # noqa: PLC0415  CLI start

    files = recipes.report(args.runs, args.out or args.runs, n_sop=args.sop_pairs, recipes=recipes.select(args.only))
    print((files[-1]).read_text(encoding="utf-8"))
    print("wrote " + ", ".join(str(f) for f in files))
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("recipes", help="the cpu-scale recipe study: train candidates, plot their curves")
    sub = p.add_subparsers(dest="recipes_command", required=True)
    r = sub.add_parser("run", help="train the candidates one after another (rerun to resume)")
    r.add_argument("--runs", required=True, help="where each candidate's workdir goes (<runs>/<recipe>)")
    r.add_argument("--only", help="comma-separated recipe names (default: all)")
    r.add_argument("--print", action="store_true", help="print each candidate's pretrain command and exit")
    r.set_defaults(func=_run)
    s = sub.add_parser("report", help="curves.csv, curves.png and summary.md from the candidates' metrics")
    s.add_argument("--runs", required=True, help="the study's runs directory")
    s.add_argument("--out", help="where to write (default: --runs)")
    s.add_argument("--only", help="comma-separated recipe names (default: every one that has evaluated)")
    s.add_argument("--sop-pairs", type=int, default=0, help="held-out SOP pairs behind each accuracy, for its SE")
    s.set_defaults(func=_report)
