"""What each Chinese tokenizer does to People's Daily words: the evidence behind docs/chinese.md's pd_pos reading.

For the pd_pos dev sentences (gold words), for SentencePiece and for WordPiece trained on the same People's Daily
text at the same vocabulary size as the cpu-scale Chinese runs (`experiments/pretrain.py:scale=cpu,lang=zh`):
  - pieces per word;
  - the share of a sentence's pieces that cross a gold word boundary (a piece holding the end of one word and the
    start of the next): such a piece is one input token for two tags;
  - the share of sentences whose tagging input (each word tokenized on its own, as tasks/tagging.py must do to
    put a tag on each word) differs from the pieces pretraining saw for the same sentence (tokenized whole).

  python benchmarks/zh_tokenization.py --out docs/benchmarks/zh_tokenization.json
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np


def spans(pieces: list[str]) -> list[tuple[int, int]] | None:
    """Character spans of SentencePiece pieces in the text they came from (None where normalisation changed it)."""
    out, at = [], 0
    for p in pieces:
        n = len(p.replace("\u2581", ""))
        out.append((at, at + n))
        at += n
    return out


def measure(tok, sentences: list[list[str]], kind: str) -> dict:
    from albert_jax.tasks.tagging import bare_boundary_id

    boundary = bare_boundary_id(tok)
    pieces_per_word, crossing, total_pieces, differ, compared = [], 0, 0, 0, 0
    for words in sentences:
        text = "".join(words)
        starts = set(np.cumsum([0] + [len(w) for w in words[:-1]]).tolist())
        sent_ids = tok.encode(text)
        word_ids = []
        for w in words:
            ids = tok.encode(w)
            if boundary is not None and len(ids) > 1 and ids[0] == boundary:
                ids = ids[1:]
            pieces_per_word.append(len(ids))
            word_ids += ids
        compared += 1
        differ += word_ids != sent_ids
        if kind == "wordpiece":
            _, offsets = tok.encode_with_offsets(text)
            bounds = list(zip(offsets, offsets[1:] + [len(text)]))
        else:
            bounds = spans([tok.id_to_piece(i) for i in sent_ids])
            if bounds[-1][1] != len(text):
                continue
        for s, e in bounds:
            total_pieces += 1
            crossing += any(s < b < e for b in starts)
    return {"tokenizer": kind, "vocab_size": tok.vocab_size, "sentences": compared,
            "pieces_per_word": round(float(np.mean(pieces_per_word)), 3),
            "pieces_crossing_a_word_boundary": round(crossing / max(total_pieces, 1), 4),
            "sentences_whose_tagging_input_differs_from_pretraining": round(differ / compared, 4)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--limit", type=int, default=0, help="dev sentences to read (0: all)")
    p.add_argument("--out", help="write the JSON here too")
    args = p.parse_args(argv)
    from albert_jax.configs.loader import load_config
    from albert_jax.configs.overrides import apply_overrides
    from albert_jax.tasks.classification import load_records
    from albert_jax.tasks.features import text_of
    from albert_jax.tasks.pretraining.input import corpus_tokenizer

    dev = load_records("pd_pos", "validation")
    sentences = [text_of(r, "words").split(" ") for r in (dev[:args.limit] if args.limit else dev)]
    rows = []
    for kind in ("spm", "wordpiece"):
        c = load_config("experiments/pretrain.py:scale=cpu,lang=zh")
        apply_overrides(c, [f"data.tokenizer_kind={kind}"])
        rows.append(measure(corpus_tokenizer(c.data), sentences, kind))
    text = json.dumps({"command": " ".join(["python", "benchmarks/zh_tokenization.py", *(argv or sys.argv[1:])]),
                       "rows": rows}, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
