"""BERT's WordPiece tokenizer (a `vocab.txt`), with the same interface as the SentencePiece `Tokenizer`.

Two uses: fine-tuning real BERT weights next to our ALBERT models, and the Chinese path the official Chinese ALBERT
models take (a BERT-Chinese style vocabulary: every CJK character a token of its own, `##` continuations for Latin
script; google-research/albert#58). The tokenization itself is HuggingFace's `tokenizers` library, the reference
implementation BERT models ship with, not ours; `train_wordpiece` trains a vocabulary with its WordPiece trainer.

Special tokens: a vocabulary we train puts [PAD] [UNK] [CLS] [SEP] [MASK] at ids 0-4, as our SentencePiece models
do; a given one (BERT-Chinese: [PAD]=0, [unused1-99], [UNK]=100, [CLS]=101, [SEP]=102, [MASK]=103) keeps its own
ids. `replace_low` is the first id after the bracketed tokens at the head of the vocabulary: MLM's random
replacements are drawn from [replace_low, vocab_size), never a special or [unused] token.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import weakref
from collections import Counter
from pathlib import Path

import numpy as np

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_BRACKETED = re.compile(r"^\[[^\]]+\]$")


class WordPieceTokenizer:
    def __init__(self, vocab_path: Path, lower: bool = True):
        from tokenizers import BertWordPieceTokenizer  # noqa: PLC0415  heavy: tokenizers

        self.name = str(vocab_path)
        self.vocab_path = Path(vocab_path)
        self.lower = lower
        if not self.vocab_path.is_file():
            raise FileNotFoundError(f"WordPiece vocabulary {vocab_path} does not exist")
        self._tok = BertWordPieceTokenizer(str(vocab_path), lowercase=lower, strip_accents=lower,
                                           clean_text=True, handle_chinese_chars=True)
        vocab = self._tok.get_vocab()
        missing = [p for p in SPECIAL_TOKENS if p not in vocab]
        if missing:
            raise ValueError(f"{vocab_path}: not a BERT WordPiece vocabulary: it has no {', '.join(missing)} "
                             f"(a vocab.txt needs all of {', '.join(SPECIAL_TOKENS)}, one token per line; "
                             "`albert-jax tokenizer train --kind wordpiece` writes one)")
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (vocab[p] for p in SPECIAL_TOKENS)
        pieces = [None] * len(vocab)
        for piece, i in vocab.items():
            pieces[i] = piece
        # Per-id tables, as Tokenizer has them: a piece starts a word unless it is a "##" continuation.
        self.word_start = np.array([p is None or not p.startswith("##") for p in pieces], dtype=bool)
        head = 0
        while head < len(pieces) and pieces[head] is not None and _BRACKETED.match(pieces[head]):
            head += 1
        self.replace_low = max(head, max(self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id) + 1)

    @classmethod
    def load(cls, directory: str | os.PathLike) -> "WordPieceTokenizer":
        """A directory holding vocab.txt (and tokenizer_config.json, whose do_lower_case is honoured), or the
        vocab.txt file itself (lower-cased, as BERT-Chinese and the uncased models)."""
        directory = Path(directory)
        if directory.is_file():
            return cls(directory, lower=True)
        lower = True
        cfg = directory / "tokenizer_config.json"
        if cfg.is_file():
            lower = bool(json.loads(cfg.read_text()).get("do_lower_case", True))
        return cls(directory / "vocab.txt", lower=lower)

    def __getstate__(self):  # rebuilt in the worker: processes (spawn) and Beam workers get a tokenizer of their own
        return dict(vocab_path=str(self.vocab_path), lower=self.lower, vocab=self.vocab_path.read_bytes())

    def __setstate__(self, state):
        path = Path(state["vocab_path"])
        if not path.is_file() and "vocab" in state:  # a worker on another machine: the vocabulary came with it
            path = Path(tempfile.mkdtemp(prefix="albert-jax-vocab-")) / "vocab.txt"
            path.write_bytes(state["vocab"])
            # the copy lives as long as this tokenizer (or the process): one per worker, never left in /tmp
            weakref.finalize(self, shutil.rmtree, path.parent, ignore_errors=True)
        self.__init__(path, lower=state["lower"])

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size()

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.vocab_path.read_bytes() + (b"lower" if self.lower else b"cased")).hexdigest()

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=False).ids

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[int]]:
        """(ids, the character offset in `text` where each token starts)."""
        enc = self._tok.encode(text, add_special_tokens=False)
        return enc.ids, [s for s, _ in enc.offsets]

    def decode(self, ids) -> str:
        return self._tok.decode([int(i) for i in ids])

    def id_to_piece(self, i: int) -> str:
        return self._tok.id_to_token(int(i))

    def piece_to_id(self, piece: str) -> int | None:
        return self._tok.token_to_id(piece)

    def save(self, directory: str | os.PathLike) -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        if self.vocab_path.resolve() != (directory / "vocab.txt").resolve():
            shutil.copyfile(self.vocab_path, directory / "vocab.txt")
        (directory / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": self.lower}))
        return directory / "vocab.txt"


def _continuations(tok, files, limit_alphabet: int, chunk_chars: int = 1 << 20) -> list[str]:
    """The `##c` tokens the trainer creates: one for each alphabet character c that occurs after the first
    character of a word, the words being the trainer's own (its normaliser, then its pre-tokenizer). The alphabet
    is every character unless there are more than `limit_alphabet`: then the most frequent ones."""
    norm, pre = tok._tokenizer.normalizer, tok._tokenizer.pre_tokenizer
    counts: Counter = Counter()
    chunks: set[str] = set()
    for f in files:
        with open(f, encoding="utf-8") as fh:
            while text := fh.read(chunk_chars):
                text = norm.normalize_str(text + fh.readline())  # whole lines: no word cut in two
                counts.update(text)
                chunks.update(text.split())  # the pre-tokenizer splits at whitespace first: each distinct run once
    later: set[str] = set()
    for word, _ in pre.pre_tokenize_str("\n".join(sorted(chunks))):
        later.update(word[1:])
    letters = [c for c in counts if not c.isspace()]
    alphabet = set(letters) if len(letters) <= limit_alphabet else set(
        sorted(letters, key=lambda c: (-counts[c], c))[:limit_alphabet])
    return ["##" + c for c in sorted(later & alphabet)]


def train_wordpiece(output_dir: str | os.PathLike, files, *, vocab_size: int = 21128, lower: bool = True,
                    min_frequency: int = 2, limit_alphabet: int = 10_000) -> WordPieceTokenizer:
    """Train a BERT-style WordPiece vocabulary on `files` (UTF-8 text) into `output_dir`/vocab.txt (+ its
    tokenizer_config.json). CJK characters are split one by one before training (BERT's normaliser), so every CJK
    character the trainer keeps is a token of its own, as in BERT-Chinese's vocabulary; [PAD] [UNK] [CLS] [SEP]
    [MASK] get ids 0-4. `limit_alphabet` is the number of single characters kept: Chinese needs thousands (the
    default 10,000 keeps every character of a 1M-character corpus seen `min_frequency` times)."""
    from tokenizers import BertWordPieceTokenizer  # noqa: PLC0415  heavy: tokenizers

    files = [str(f) for f in files]
    for f in files:
        if not os.path.isfile(f):
            raise FileNotFoundError(f"WordPiece training input {f} does not exist")
    if not any(os.path.getsize(f) for f in files):
        raise ValueError(f"WordPiece training input {', '.join(files)}: empty; a vocabulary is trained on text")
    if vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size={vocab_size}: a WordPiece vocabulary needs more than the "
                         f"{len(SPECIAL_TOKENS)} special tokens")
    tok = BertWordPieceTokenizer(lowercase=lower, strip_accents=lower, clean_text=True, handle_chinese_chars=True)
    # The trainer numbers the `##` continuation of a character when it first meets it while walking a hash map of
    # words, whose order changes from process to process, and those numbers break ties between merges of equal
    # count (huggingface/tokenizers#1794): the same text gave vocabularies differing in a few dozen `##` pieces.
    # Registered up front, in code-point order, every continuation has its number before training starts.
    continuations = _continuations(tok, files, limit_alphabet)
    tok.train(files, vocab_size=vocab_size, min_frequency=min_frequency, limit_alphabet=limit_alphabet,
              special_tokens=list(SPECIAL_TOKENS) + continuations, show_progress=False)
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "vocab.txt.tmp"
    # With the continuations registered the set of tokens is reproducible, but the trainer's order of tied tokens
    # is still a hash map's: written in a canonical order (the special tokens, the single characters, then the
    # rest, each by code point) the same text gives the same vocab.txt, byte for byte.
    rest = sorted(set(tok.get_vocab()) - set(SPECIAL_TOKENS), key=lambda p: (len(p.removeprefix("##")) > 1, p))
    vocab = list(SPECIAL_TOKENS) + rest
    tmp.write_text("".join(p + "\n" for p in vocab), encoding="utf-8")
    os.replace(tmp, out / "vocab.txt")
    (out / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": lower}))
    if len(vocab) < vocab_size:
        print(f"tokenizer: {', '.join(files)} supports {len(vocab)} WordPiece tokens, fewer than the "
              f"--vocab-size {vocab_size} asked for; the vocabulary has {len(vocab)}", file=sys.stderr)
    return WordPieceTokenizer(out / "vocab.txt", lower=lower)
