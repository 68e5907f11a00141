"""`albert-jax experiments list|show NAME`: the registry of named experiments (experiments/*.py)."""
from __future__ import annotations

from albert_jax.ablations import registry


def _list(args) -> int:
    for name, exp in registry.load_registry(args.experiments_dir).items():
        rows = len(exp.rows_at("paper"))
        tasks = ", ".join(exp.finetune) or "intrinsic only"
        print(f"{name:24s} {rows:2d} rows  {exp.title}  [{tasks}]  ({exp.source})")
    return 0


def _show(args) -> int:
    from albert_jax.ablations import sweep  # noqa: PLC0415  CLI start (numpy)

    exp = registry.get(args.name, args.experiments_dir)
    print(f"{exp.name}: {exp.title}  ({exp.source})")
    print(f"reading under test: {exp.reading}")
    print(f"fine-tuning: {', '.join(exp.finetune) or 'none (intrinsic evaluation only)'}; scale {args.scale}")
    for p in sweep.plan(exp, args.scale, args.runs, args.set):
        paper = ", ".join(f"{k}={v}" for k, v in p.row.paper.items()) or "no printed values"
        print(f"\n- {p.row.name} [{p.row.slug}]  paper: {paper}")
        for s in p.stages:
            print(f"    {s.command()}")
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("experiments", help="list the registered experiments, or show one's rows and commands")
    sub = p.add_subparsers(dest="experiments_command", required=True)
    q = sub.add_parser("list", help="one line per experiment")
    q.add_argument("--experiments-dir", default=None, help="where the experiment files are (default: experiments/)")
    q.set_defaults(func=_list)
    q = sub.add_parser("show", help="an experiment's rows, the paper's values and the exact command of each stage")
    q.add_argument("name", help="the experiment (table4, table5, ...: `albert-jax experiments list`)")
    q.add_argument("--scale", default="cpu", help="smoke, cpu or paper (default cpu)")
    q.add_argument("--runs", default="runs", help="the sweep's runs directory the commands write to")
    q.add_argument("--set", action="append", metavar="STAGE.KEY=VALUE", help="as for `albert-jax sweep`")
    q.add_argument("--experiments-dir", default=None, help="where the experiment files are (default: experiments/)")
    q.set_defaults(func=_show)
