"""`albert-jax tokenizer train|encode`: train or apply an ALBERT SentencePiece model (data/tokenization.py), or a
BERT-style WordPiece vocabulary as the official Chinese models use (data/wordpiece.py, docs/chinese.md)."""
from __future__ import annotations

import argparse
import sys

from albert_jax.configs import schema


def _cmd_train(args) -> int:
    from albert_jax.data.tokenization import train_tokenizer  # noqa: PLC0415  CLI start

    if args.kind == "wordpiece":
        from albert_jax.data.wordpiece import train_wordpiece  # noqa: PLC0415  CLI start
        if not args.output_dir:
            raise ValueError("tokenizer train: --kind wordpiece needs --output-dir (it writes vocab.txt "
                             "and tokenizer_config.json there)")
        tok = train_wordpiece(args.output_dir, args.input, vocab_size=args.vocab_size, lower=args.lower,
                              min_frequency=args.min_frequency)
        print(f"wrote {args.output_dir}/vocab.txt ({tok.vocab_size} tokens) and tokenizer_config.json")
        return 0
    if not args.model_prefix:
        raise ValueError("tokenizer train: --model-prefix is required (SentencePiece writes PREFIX.model, "
                         "PREFIX.vocab and PREFIX.json)")

    tok = train_tokenizer(args.model_prefix, files=args.input, vocab_size=args.vocab_size, lower=args.lower,
                          keep_accents=args.keep_accents, hard_vocab_limit=args.hard_vocab_limit,
                          input_sentence_size=args.input_sentence_size, verbose=args.verbose)
    print(f"wrote {args.model_prefix}.model ({tok.vocab_size} pieces), .vocab and .json")
    return 0


def _cmd_encode(args) -> int:
    from albert_jax.data.tokenization import load_tokenizer  # noqa: PLC0415  CLI start

    tok = load_tokenizer(args.model)
    lines = [args.text] if args.text is not None else (line.rstrip("\n") for line in sys.stdin)
    for line in lines:
        ids = tok.encode(line)
        out = [tok.id_to_piece(i) for i in ids] if args.pieces else ids
        print(" ".join(map(str, out)))
    return 0


def _cmd_sample(args) -> int:
    if args.runner == "beam":
        from albert_jax.tasks.pretraining.beam import sample_with_beam  # noqa: PLC0415  CLI start
        sample_with_beam(args.input, args.size, args.output, args.seed, beam_options=args.beam_options,
                         workers=args.workers)
    else:
        from albert_jax.data.sentence_sample import local_sample, write_sample  # noqa: PLC0415  CLI start
        write_sample(local_sample(args.input, args.size, args.seed), args.output)
    print(f"wrote a sample of at most {args.size} sentences (seed {args.seed}) to {args.output}")
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("tokenizer", help="train or apply an ALBERT SentencePiece model or a WordPiece vocab")
    sub = p.add_subparsers(dest="tokenizer_command", required=True)
    t = sub.add_parser("train", help="train a SentencePiece model with the official ALBERT recipe, or a WordPiece "
                                     "vocabulary (--kind wordpiece) as the official Chinese models use")
    t.add_argument("--input", nargs="+", required=True, metavar="FILE", help="text files, one sentence per line")
    t.add_argument("--kind", choices=schema.TOKENIZER_KINDS, default="spm",
                   help="spm: SentencePiece (the English models); wordpiece: BERT-Chinese style, one token per CJK "
                        "character (the Chinese models)")
    t.add_argument("--model-prefix", help="spm: writes PREFIX.model, PREFIX.vocab, PREFIX.json")
    t.add_argument("--output-dir", help="wordpiece: writes vocab.txt and tokenizer_config.json there")
    t.add_argument("--min-frequency", type=int, default=2, help="wordpiece: tokens seen fewer times are left out")
    t.add_argument("--vocab-size", type=int, default=30000, help="pieces, the special and user-defined ones included "
                   "(default: 30000, the paper's)")
    t.add_argument("--lower", action=argparse.BooleanOptionalAction, default=True,
                   help="lower-case text (the released models are uncased)")
    t.add_argument("--keep-accents", action="store_true", help="skip NFKD accent stripping")
    t.add_argument("--no-hard-vocab-limit", dest="hard_vocab_limit", action="store_false",
                   help="let the vocab come out smaller than --vocab-size on a small corpus")
    t.add_argument("--input-sentence-size", type=int, default=10_000_000, help="sentences sampled for training")
    t.add_argument("--verbose", action="store_true", help="show SentencePiece's training log")
    t.set_defaults(func=_cmd_train)
    s = sub.add_parser("sample", help="draw a reproducible sample of sentences to train a tokenizer on, the same "
                                      "locally and on any Beam runner (docs/data-at-scale.md)")
    s.add_argument("--input", nargs="+", required=True, metavar="FILE", help="text files, one sentence per line")
    s.add_argument("--size", type=int, required=True, help="sentences in the sample (SentencePiece's "
                   "input_sentence_size)")
    s.add_argument("--seed", type=int, default=0, help="the same seed and files give the same sample")
    s.add_argument("--output", required=True, help="the sample, one sentence per line")
    s.add_argument("--runner", choices=schema.RUNNERS, default="local", help="beam: an Apache Beam pipeline "
                   "(needs `make beam`)")
    s.add_argument("--beam-options", default="", help="Beam pipeline flags (see pretraining-data create)")
    s.add_argument("--workers", type=int, default=1, help="beam without --runner: FnApiRunner processes")
    s.set_defaults(func=_cmd_sample)
    e = sub.add_parser("encode", help="print ids (or pieces) for text given with --text or on stdin")
    e.add_argument("--model", required=True, help="a .model file, a vocab.txt, or a directory holding either")
    e.add_argument("--text", default=None, help="the text to encode (default: read stdin)")
    e.add_argument("--pieces", action="store_true", help="print pieces instead of ids")
    e.set_defaults(func=_cmd_encode)
