"""BERT's WordPiece tokenizer (an HF BERT directory's vocab.txt), with the same interface as `Tokenizer`.

Used to fine-tune real BERT weights (sharing='none') next to our ALBERT models. The tokenization itself is
HuggingFace's `tokenizers` library (the reference implementation BERT models ship with), not ours.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path


class WordPieceTokenizer:
    def __init__(self, vocab_path: Path, lower: bool = True):
        from tokenizers import BertWordPieceTokenizer

        self.name = str(vocab_path)
        self.vocab_path = Path(vocab_path)
        self.lower = lower
        self._tok = BertWordPieceTokenizer(str(vocab_path), lowercase=lower, strip_accents=lower,
                                           clean_text=True, handle_chinese_chars=True)
        vocab = self._tok.get_vocab()
        missing = [p for p in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if p not in vocab]
        if missing:
            raise ValueError(f"{vocab_path}: not a BERT WordPiece vocabulary (no {', '.join(missing)})")
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
            vocab[p] for p in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"))

    @classmethod
    def load(cls, directory: str | os.PathLike) -> "WordPieceTokenizer":
        directory = Path(directory)
        lower = True
        cfg = directory / "tokenizer_config.json"
        if cfg.is_file():
            lower = bool(json.loads(cfg.read_text()).get("do_lower_case", True))
        return cls(directory / "vocab.txt", lower=lower)

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size()

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.vocab_path.read_bytes()).hexdigest()

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids) -> str:
        return self._tok.decode([int(i) for i in ids])

    def save(self, directory: str | os.PathLike) -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.vocab_path, directory / "vocab.txt")
        (directory / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": self.lower}))
        return directory / "vocab.txt"
