"""SentencePiece tokenization as the official ALBERT code does it (reference/albert.md §2.7, §3.7).

Train with the README recipe (unigram, pad=0 unk=1 [CLS]=2 [SEP]=3 [MASK]=4, no bos/eos), preprocess text like
`preprocess_text` (collapse whitespace, NFKD + drop combining marks, optional lower-casing), apply the digit-comma
re-split of `encode_pieces`, and decide whole-word boundaries like `_is_start_piece_sp`.

Decision on quotes: HF's AlbertTokenizer also rewrites ``...'' to "..." before NFKD; the official code does not. We
do it by default (`normalize_quotes=True`) so that a model trained here gives identical ids in HF; both behaviours
only differ on text holding `` or ''. The options a model was trained with are stored next to it in `<prefix>.json`
and picked up by `Tokenizer.load`; a model without that file (e.g. the released 30k-clean.model) gets the released
models' settings (lower-cased, accents stripped).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import sentencepiece as spm

from albert_jax.data.files import open_binary
from albert_jax.data.wordpiece import WordPieceTokenizer

PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID = 0, 1, 2, 3, 4
NUM_SPECIAL_IDS = 5
SPECIAL_PIECES = ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")
USER_DEFINED_SYMBOLS = ("(", ")", '"', "-", ".", "–", "£", "€")
SPIECE_UNDERLINE = "▁"
# Lines longer than this are not sentences (a file in the wrong format); they are skipped and counted.
MAX_LINE_CHARS = 100_000

# The official `_is_start_piece_sp` character sets, reproduced exactly: its punctuation string lacks the apostrophe
# (it has `\"` where BERT's has `\'`), so a piece such as "'s" counts as a word start. Pieces are lower-cased char by
# char before the test, so upper-case ASCII letters count as English; digits do not.
_OFFICIAL_PUNCT = frozenset('!"#$%&"()*+,-./:;?@[\\]^_`{|}~')
_ENGLISH_OR_PUNCT = frozenset("abcdefghijklmnopqrstuvwxyz") | _OFFICIAL_PUNCT


class CorpusTooSmallError(ValueError):
    """The corpus cannot support the requested vocabulary size (`supported`: the largest it can)."""

    supported: int | None = None


def is_word_start(piece: str) -> bool:
    """Whether `piece` starts a whole word, exactly as the official SentencePiece rule decides.

    True if it starts with "▁" or "<", is a single punctuation character, or contains any character outside a-z and
    ASCII punctuation (digits, accented letters, CJK...), so every CJK piece is its own whole-word unit.
    """
    if piece.startswith(SPIECE_UNDERLINE) or piece.startswith("<") or piece in _OFFICIAL_PUNCT:
        return True
    return not all(ch.lower() in _ENGLISH_OR_PUNCT for ch in piece)


def preprocess_text(text: str, *, lower: bool = True, keep_accents: bool = False, normalize_quotes: bool = True,
                    remove_space: bool = True) -> str:
    """The official `preprocess_text`, plus HF's ``/'' -> " rewrite when `normalize_quotes` (see module doc)."""
    if remove_space:
        text = " ".join(text.strip().split())
    if normalize_quotes:
        text = text.replace("``", '"').replace("''", '"')
    if not keep_accents:
        text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    if lower:
        text = text.lower()
    return text


def iter_lines(path: str | os.PathLike, *, max_chars: int = MAX_LINE_CHARS,
               skipped: list[int] | None = None) -> Iterator[tuple[int, str]]:
    """(line number, text) for each line of a UTF-8 file, reading at most ~4*max_chars bytes of any one line.

    Undecodable bytes raise a ValueError naming the file and line (the official code silently drops them, which
    hides a wrong encoding), and so does a NUL byte (binary or corrupted data would otherwise become training
    text). Over-long lines are skipped; their line numbers are appended to `skipped`.
    """
    limit = 4 * max_chars + 4  # UTF-8 needs at most 4 bytes a character
    with open_binary(path) as f:  # a local file, or a URL through Beam's filesystems (data/files.py)
        lineno = 0
        while True:
            raw = f.readline(limit)
            if not raw:
                return
            lineno += 1
            if not raw.endswith(b"\n") and len(raw) >= limit:
                while raw and not raw.endswith(b"\n"):  # drain the rest without holding it
                    raw = f.readline(1 << 20)
                if skipped is not None:
                    skipped.append(lineno)
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{path}:{lineno}: not valid UTF-8 ({e.reason} at byte {e.start} of the line); "
                                 "convert the file to UTF-8 (e.g. with iconv)") from None
            if len(line) > max_chars:
                if skipped is not None:
                    skipped.append(lineno)
                continue
            if "\x00" in line:
                raise ValueError(f"{path}:{lineno}: holds a NUL byte at column {line.index(chr(0)) + 1} (a binary or "
                                 "corrupted file?); remove the NUL bytes (e.g. tr -d '\\000' < in > out)")
            yield lineno, line


class Tokenizer:
    """A SentencePiece model with the ALBERT preprocessing, special ids and whole-word rule."""

    def __init__(self, model_proto: bytes, *, lower: bool = True, keep_accents: bool = False,
                 normalize_quotes: bool = True, name: str = "<in-memory model>"):
        self.name = name
        self.lower, self.keep_accents, self.normalize_quotes = lower, keep_accents, normalize_quotes
        self.model_proto = model_proto
        try:
            self.sp = spm.SentencePieceProcessor(model_proto=model_proto)
        except RuntimeError:  # sentencepiece's own message is an assertion from its C++ sources
            raise ValueError(f"{name}: not a SentencePiece model (a .model file written by `albert-jax tokenizer "
                             "train` or shipped with an ALBERT release)") from None
        found = tuple(self.sp.id_to_piece(i) for i in range(min(NUM_SPECIAL_IDS, self.sp.get_piece_size())))
        if found != SPECIAL_PIECES:
            raise ValueError(f"{name}: ids 0-4 are {found}, ALBERT needs {SPECIAL_PIECES}; train the model with "
                             "`albert-jax tokenizer train` (pad_id=0 unk_id=1 control symbols [CLS],[SEP],[MASK])")
        pieces = [self.sp.id_to_piece(i) for i in range(self.vocab_size)]
        # Per-id tables so that hot loops (pretraining data) never touch piece strings.
        self.word_start = np.array([is_word_start(p) for p in pieces], dtype=bool)
        self._digit_comma = np.array([len(p) > 1 and p[-1] == "," and p[-2].isdigit() for p in pieces], dtype=bool)

    @classmethod
    def load(cls, path: str | os.PathLike, **overrides) -> "Tokenizer":
        """Load `X.model`; options come from `X.json` if present (written by `train_tokenizer`), then `overrides`."""
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"SentencePiece model {path} does not exist")
        options = {}
        sidecar = path.with_suffix(".json")
        if sidecar.exists():
            options = {k: v for k, v in json.loads(sidecar.read_text()).items()
                       if k in ("lower", "keep_accents", "normalize_quotes")}
        options.update(overrides)
        return cls(path.read_bytes(), name=str(path), **options)

    def __getstate__(self):  # SentencePieceProcessor does not pickle; rebuild it from the proto
        return dict(model_proto=self.model_proto, lower=self.lower, keep_accents=self.keep_accents,
                    normalize_quotes=self.normalize_quotes, name=self.name)

    def __setstate__(self, state):
        self.__init__(state.pop("model_proto"), **state)

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    pad_id, unk_id, cls_id, sep_id, mask_id = PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID
    replace_low = NUM_SPECIAL_IDS  # MLM's random replacements come from [replace_low, vocab_size)

    def preprocess(self, text: str) -> str:
        return preprocess_text(text, lower=self.lower, keep_accents=self.keep_accents,
                               normalize_quotes=self.normalize_quotes)

    def _split_digit_comma(self, pieces: list[str]) -> list[str]:
        # Official rule: "▁1990," is re-encoded as its digits plus a separate ",", so numbers followed by a comma
        # are tokenized like numbers elsewhere. The re-encoding drops the "▁" the original piece did not have.
        out = []
        for piece in pieces:
            if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
                sub = self.sp.encode(piece[:-1].replace(SPIECE_UNDERLINE, ""), out_type=str)
                if piece[0] != SPIECE_UNDERLINE and sub and sub[0][0] == SPIECE_UNDERLINE:
                    sub = sub[1:] if len(sub[0]) == 1 else [sub[0][1:]] + sub[1:]
                out.extend(sub)
                out.append(",")
            else:
                out.append(piece)
        return out

    def encode_pieces(self, text: str, *, preprocess: bool = True) -> list[str]:
        if preprocess:
            text = self.preprocess(text)
        return self._split_digit_comma(self.sp.encode(text, out_type=str))

    def encode(self, text: str, *, preprocess: bool = True) -> list[int]:
        """Ids of `text` without [CLS]/[SEP]; identical to HF AlbertTokenizer(add_special_tokens=False)."""
        if preprocess:
            text = self.preprocess(text)
        ids = self.sp.encode(text)
        # Fast path: the piece-level rule can only fire on a digit-comma piece or on an unknown span (whose surface
        # string is what the official code inspects).
        if ids and (self._digit_comma[ids].any() or UNK_ID in ids):
            return [self.sp.piece_to_id(p) for p in self._split_digit_comma(self.sp.encode(text, out_type=str))]
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        return self.sp.decode([int(i) for i in ids])

    @property
    def fingerprint(self) -> str:
        """sha256 of the model itself: two runs share a vocabulary exactly when these agree."""
        return hashlib.sha256(self.model_proto).hexdigest()

    def save(self, directory: str | os.PathLike) -> Path:
        """`spiece.model` (HF's file name) and its options beside it, so `load_tokenizer(directory)` restores it."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "spiece.json").write_text(json.dumps(
            {"lower": self.lower, "keep_accents": self.keep_accents, "normalize_quotes": self.normalize_quotes}))
        tmp = directory / "spiece.model.tmp"
        tmp.write_bytes(self.model_proto)
        os.replace(tmp, directory / "spiece.model")
        return directory / "spiece.model"

    def id_to_piece(self, i: int) -> str:
        return self.sp.id_to_piece(int(i))

    def piece_to_id(self, piece: str) -> int:
        return self.sp.piece_to_id(piece)


def load_tokenizer(path: str | os.PathLike):
    """A SentencePiece `.model` file, a WordPiece `vocab.txt`, or a directory holding `spiece.model` (a run's
    workdir, an HF ALBERT directory) or `vocab.txt` (an HF BERT directory, a WordPiece run's workdir)."""
    path = Path(path)
    if path.is_file() and path.suffix == ".txt":
        return WordPieceTokenizer.load(path)
    if path.is_file():
        return Tokenizer.load(path)
    if (path / "spiece.model").is_file():
        return Tokenizer.load(path / "spiece.model")
    if (path / "vocab.txt").is_file():
        return WordPieceTokenizer.load(path)
    if not path.exists():
        raise FileNotFoundError(f"tokenizer {path} does not exist")
    raise FileNotFoundError(f"{path}: no tokenizer here (expected a .model file, or a directory with spiece.model "
                            "or vocab.txt)")


def check_vocab_matches(tokenizer: Tokenizer, vocab_size: int, *, allow_padding: bool = False) -> None:
    """Raise if a model's `vocab_size` does not fit the tokenizer (ids past the table would crash or be garbage).

    `allow_padding` accepts a model table larger than the tokenizer (vocab padded to a multiple of 128 for speed).
    """
    n = tokenizer.vocab_size
    if vocab_size == n or (allow_padding and vocab_size > n):
        return
    raise ValueError(f"tokenizer {tokenizer.name} has {n} pieces but the model config has vocab_size={vocab_size}; "
                     f"set the model's vocab_size to {n} or use the tokenizer the model was trained with")


def _file_sentences(files, preprocess, skipped: dict) -> Iterator[str]:
    for path in files:
        if not os.path.exists(path):
            raise FileNotFoundError(f"tokenizer training input {path} does not exist")
        long_lines: list[int] = []
        for _, line in iter_lines(path, skipped=long_lines):
            line = preprocess(line)
            if line:
                yield line
        if long_lines:
            skipped[str(path)] = long_lines


def train_tokenizer(model_prefix: str | os.PathLike, *, files: Iterable[str | os.PathLike] | None = None,
                    sentences: Iterable[str] | None = None, vocab_size: int = 30000, lower: bool = True,
                    keep_accents: bool = False, normalize_quotes: bool = True, hard_vocab_limit: bool = True,
                    input_sentence_size: int = 10_000_000, character_coverage: float = 0.99995,
                    num_threads: int | None = None, seed: int | None = None, verbose: bool = False) -> Tokenizer:
    """Train `<model_prefix>.model/.vocab/.json` with the official recipe from files (one sentence per line) or
    an iterable of sentences; the text goes through the same preprocessing as `Tokenizer.encode`.

    `input_sentence_size` sentences are sampled (shuffled) when the corpus is larger. Raises CorpusTooSmallError
    naming the corpus and the largest vocab it supports when `hard_vocab_limit` and the corpus is too small.
    """
    if (files is None) == (sentences is None):
        raise ValueError("train_tokenizer needs exactly one of files= or sentences=")
    files = [str(f) for f in files] if files is not None else None
    corpus = ", ".join(files) if files is not None else "the given sentences"
    options = dict(lower=lower, keep_accents=keep_accents, normalize_quotes=normalize_quotes)
    pre = lambda s: preprocess_text(s, **options)  # noqa: E731
    skipped: dict[str, list[int]] = {}
    if files is not None:
        for path in files:  # fail before training, not halfway through the corpus
            if not os.path.exists(path):
                raise FileNotFoundError(f"tokenizer training input {path} does not exist")
        if not any(os.path.getsize(path) for path in files):
            raise ValueError(f"tokenizer training input {corpus}: empty; a tokenizer is trained on text, one sentence "
                             "per line")
        stream = _file_sentences(files, pre, skipped)
    else:
        stream = (t for t in map(pre, sentences) if t)
    Path(model_prefix).parent.mkdir(parents=True, exist_ok=True)
    if seed is not None:
        spm.set_random_generator_seed(seed)
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=stream, model_prefix=str(model_prefix), model_type="unigram", vocab_size=vocab_size,
            pad_id=PAD_ID, unk_id=UNK_ID, bos_id=-1, eos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"],
            user_defined_symbols=list(USER_DEFINED_SYMBOLS), character_coverage=character_coverage,
            shuffle_input_sentence=True, input_sentence_size=input_sentence_size,
            hard_vocab_limit=hard_vocab_limit, num_threads=num_threads or os.cpu_count() or 1,
            minloglevel=0 if verbose else 2)
    except RuntimeError as e:
        m = re.search(r"Vocabulary size (?:is )?too high \((\d+)\)\. Please set it to a value <= (\d+)", str(e))
        if m:
            err = CorpusTooSmallError(
                f"corpus {corpus} is too small for vocab_size={m.group(1)}: it supports at most {m.group(2)} "
                f"pieces; pass a vocab size <= {m.group(2)} or hard_vocab_limit=False (--no-hard-vocab-limit), "
                "or train on more text")
            err.supported = int(m.group(2))
            raise err from None
        if "sentences_.empty()" in str(e):
            raise ValueError(f"tokenizer training input {corpus}: no sentence left to train on (blank lines only?); "
                             "a tokenizer is trained on text, one sentence per line") from None
        raise ValueError(f"SentencePiece training on {corpus} failed: {e}") from None
    for path, lines in skipped.items():
        print(f"tokenizer: skipped {len(lines)} line(s) longer than {MAX_LINE_CHARS} characters in {path} "
              f"(first at line {lines[0]})", file=sys.stderr)
    Path(f"{model_prefix}.json").write_text(json.dumps(dict(options, vocab_size=vocab_size), indent=1) + "\n")
    return Tokenizer.load(f"{model_prefix}.model")

