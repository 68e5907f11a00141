"""`albert-jax export`: a run's checkpoint to a HuggingFace directory or a params-only checkpoint (runs/export.py)."""
from __future__ import annotations

from albert_jax.cli.common import setup_logging
from albert_jax.runs import export
from albert_jax.runs.export import EXPORTERS, TARGETS  # light: the module imports JAX only when it exports


def run_export(workdir: str, to: str, out: str, step: int | None = None, seed: int | None = None) -> int:
    """What `export` and `convert to-hf --workdir` do: one line on success, ExportRefused/ExportError otherwise."""
    if to not in export.TARGETS:
        raise ValueError(f"--to {to!r}: allowed {', '.join(export.TARGETS)}")
    run = export.resolve_run(workdir, step, seed)
    origin = f"{run.workdir} ({run.where}/ step {run.step}, task {run.task.get('name')})"
    target = export.EXPORTERS[to]
    print(f"exported {origin} to {out}: {target.describe(target.write(run, out))}")
    return 0


def _cmd(args) -> int:
    setup_logging(args.log_level)
    return run_export(args.workdir, args.to, args.out, args.step, args.seed)


def add_arguments(p) -> None:
    p.add_argument("--workdir", required=True, help="a pretraining workdir, a fine-tuning workdir (its seed-<s>/ "
                   "directories: the best by dev score unless --seed) or one seed's directory")
    p.add_argument("--step", type=int, help="checkpoint step (default: best/ for fine-tuning, the latest for "
                   "pretraining)")
    p.add_argument("--seed", type=int, help="which seed of a fine-tuning workdir (default: the best dev score)")
    p.add_argument("--out", required=True, help="output directory (new or empty)")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")


def add_cli(subparsers) -> None:
    p = subparsers.add_parser(
        "export", help="export a run to HuggingFace (model + tokenizer) or to per-layer params (orbax)",
        description="--to hf: config.json, model.safetensors and the tokenizer, loadable by transformers "
        "(Albert*/Bert* for the run's task). --to params: a params-only orbax checkpoint, one subtree per layer, "
        "with layout.json; what HF cannot express (sharing='attention'/'ffn', the SQuAD v2 head) needs it. "
        "docs/export.md has the details.")
    p.add_argument("--to", required=True, choices=TARGETS, help=" or ".join(e.help for e in EXPORTERS.values()))
    add_arguments(p)
    p.set_defaults(func=_cmd)
