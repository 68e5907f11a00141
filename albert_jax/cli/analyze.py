"""`albert-jax analyze layers`: the paper's Figure 1 (per-layer L2 distance and angle between each layer's input
and output embeddings) for one or more models, on one figure (albert_jax/ablations/analysis.py)."""
from __future__ import annotations

from albert_jax.cli.common import setup_logging


def _layers(args) -> int:
    from albert_jax.ablations.analysis import analyze_layers, markdown_table  # noqa: PLC0415  CLI start

    setup_logging(args.log_level)
    records = analyze_layers(args.init, args.out, text=args.text, labels=args.label,
                             max_seq_length=args.max_seq_length, max_sequences=args.max_sequences,
                             batch_size=args.batch_size, step=args.step, seed=args.seed)
    print(markdown_table(records) + "\n")
    for r in records:
        print(f"{r['label']}: {r['sequences']} sequences, {r['tokens']} real tokens of {r['text']}")
    print(f"wrote {args.out}/layers.png, layers.json, layers.csv")
    return 0


def add_cli(subparsers) -> None:
    analyze = subparsers.add_parser("analyze", help="analyses of trained models (the paper's Figure 1)")
    sub = analyze.add_subparsers(dest="analyze_command", required=True)
    p = sub.add_parser("layers", help="per layer: L2 distance and angle between its input and output embeddings, "
                                      "averaged over real tokens (Figure 1)")
    p.add_argument("--init", action="append", required=True, metavar="W",
                   help="a pretraining or fine-tuning workdir, a HuggingFace directory, or random:W[:field=value,...] "
                        "(a fresh init of W's architecture, e.g. random:W:sharing=none); repeat for several models")
    p.add_argument("--out", required=True, help="folder for layers.png, layers.json, layers.csv")
    p.add_argument("--text", default=None,
                   help="text file, one sentence per line, blank line between documents (default: each pretraining "
                        "run's own held-out validation split)")
    p.add_argument("--label", action="append", default=None, help="legend name, one per --init (default: derived)")
    p.add_argument("--max-seq-length", type=int, default=None,
                   help="tokens per sequence (default: the run's data.max_seq_length, else 128)")
    p.add_argument("--max-sequences", type=int, default=256, help="sequences of the text to measure")
    p.add_argument("--batch-size", type=int, default=32, help="sequences per forward pass (default: 32)")
    p.add_argument("--step", type=int, default=None, help="checkpoint step of the workdirs (default: the latest)")
    p.add_argument("--seed", type=int, default=0, help="seed of random: inits")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    p.set_defaults(func=_layers)
