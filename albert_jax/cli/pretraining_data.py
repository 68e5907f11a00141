"""`albert-jax pretraining-data create`: text files -> MLM + SOP/NSP examples (tasks/pretraining/instances.py)."""
from __future__ import annotations

import argparse
import json
import os
import re

from albert_jax.configs import schema
from albert_jax.configs.schema import MASKING, SENTENCE_TASKS, ZH_MASKING


def _cmd_create(args) -> int:
    from albert_jax.tasks.pretraining.instances import (  # noqa: PLC0415  CLI start
        PretrainingConfig, create_pretraining_data)

    try:
        cfg = PretrainingConfig(max_seq_length=args.max_seq_length, max_predictions_per_seq=args.max_predictions,
                                masked_lm_prob=args.masked_lm_prob, short_seq_prob=args.short_seq_prob,
                                dupe_factor=args.dupe_factor, task=args.task, ngram=args.ngram,
                                single_sentence=args.single_sentence.replace("-", "_"), masking=args.masking,
                                nsp_buffer_docs=args.nsp_buffer_docs)
    except ValueError as e:  # name the flag the user typed, not the dataclass field
        flags = {"max_predictions_per_seq": "max-predictions"}
        raise ValueError(re.sub(r"PretrainingConfig\.(\w+)=",
                                lambda m: "--" + flags.get(m.group(1), m.group(1).replace("_", "-")) + "=",
                                str(e))) from None
    if args.runner == "beam":
        from albert_jax.tasks.pretraining.beam import create_with_beam  # noqa: PLC0415  CLI start
        summary = create_with_beam(args.input, args.spm_model, args.output_dir, cfg, seed=args.seed,
                                   zh_masking=args.zh_masking, beam_options=args.beam_options, workers=args.workers)
        print(json.dumps(summary["totals"], indent=1))
        print(f"wrote {summary['totals']['instances']} records with Beam to {summary['tfds_dir']}")
        return 0
    if args.beam_options:
        raise ValueError("--beam-options needs --runner beam")
    summary = create_pretraining_data(args.input, args.spm_model, args.output_dir, cfg, seed=args.seed,
                                      workers=args.workers, zh_masking=args.zh_masking)
    print(json.dumps(summary["totals"], indent=1))
    print(f"wrote {summary['totals']['files']} file(s) in {len(summary['shards'])} shard(s) to {args.output_dir}")
    return 0


class _WithDefaults(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's default in its help, except where there is none (the required ones)."""

    def _get_help_string(self, action):
        return action.help if action.required or action.default is None else super()._get_help_string(action)


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("pretraining-data", help="make MLM + SOP/NSP pretraining examples")
    sub = p.add_subparsers(dest="pretraining_data_command", required=True)
    c = sub.add_parser("create", help="text files (one sentence per line, blank line between documents) -> "
                                      "ArrayRecord shards, one per input file",
                       formatter_class=_WithDefaults)
    c.add_argument("--input", nargs="+", required=True, metavar="FILE", help="text files in the official format: one "
                   "sentence per line, a blank line between documents; one shard each")
    c.add_argument("--spm-model", "--tokenizer", dest="spm_model", required=True,
                   help="the tokenizer: a .model trained by `albert-jax tokenizer train`, or a WordPiece vocab.txt "
                        "(or its directory) from `tokenizer train --kind wordpiece`")
    c.add_argument("--output-dir", required=True, help="where the shards and pretraining_data.json go")
    c.add_argument("--max-seq-length", type=int, default=512, help="tokens per instance, [CLS] and [SEP]s included")
    c.add_argument("--max-predictions", type=int, default=20, help="masked positions per instance at most")
    c.add_argument("--masked-lm-prob", type=float, default=0.15, help="share of tokens masked")
    c.add_argument("--short-seq-prob", type=float, default=0.1, help="share of instances cut shorter, as the "
                   "official code does, so that the model also sees short inputs")
    c.add_argument("--dupe-factor", type=int, default=40, help="passes over the corpus, each with other masks "
                   "(static masking)")
    c.add_argument("--task", choices=SENTENCE_TASKS, default="sop", help="the inter-sentence task the instances "
                   "carry labels for")
    c.add_argument("--ngram", type=int, default=3, help="longest whole-word n-gram masked at once (ALBERT's n-gram "
                   "masking)")
    c.add_argument("--single-sentence", choices=("split", "random-document"), default="split",
                   help="SOP chunks of one sentence: split inside it, or the official random-document B")
    c.add_argument("--masking", choices=MASKING, default="static",
                   help="dynamic writes unmasked records; mask them per epoch with DynamicMasking")
    c.add_argument("--nsp-buffer-docs", type=int, default=1000, help="documents kept for random-document B")
    c.add_argument("--zh-masking", choices=ZH_MASKING, default="char",
                   help="Chinese whole words for the n-gram mask: char (each CJK character a word), jieba (jieba's "
                        "words) or gold (input words separated by spaces); jieba and gold need a WordPiece vocab")
    c.add_argument("--runner", choices=schema.RUNNERS, default="local",
                   help="local: a process pool over the input files; beam: an Apache Beam pipeline through TFDS, the "
                        "same records (needs `make beam`; docs/data-at-scale.md)")
    c.add_argument("--beam-options", default="", help="Beam pipeline flags, e.g. \"--runner=FlinkRunner "
                   "--flink_master=host:8081\"; without --runner: Beam's Python FnApiRunner over --workers processes")
    c.add_argument("--seed", type=int, default=12345, help="the same seed writes the same records")
    c.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes, one input file at a time each")
    c.set_defaults(func=_cmd_create)
