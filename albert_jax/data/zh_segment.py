"""Word boundaries for Chinese whole-word masking (`data.zh_masking`, docs/chinese.md).

Chinese text has no spaces, so the tokenizer's own rule makes every CJK character a word and an n-gram mask covers
characters (`char`, what the official Chinese ALBERT's data code does with a BERT-Chinese vocabulary). The two other
modes mask whole words, as brightmart/albert_zh (jieba) and ERNIE do:
  jieba  words from the jieba segmenter (the package registry's jieba, pinned), on the raw sentence;
  gold   the corpus's own segmentation (People's Daily: words separated by single spaces in the `segmented` text),
         an upper bound with no segmenter error.
A segmenter turns one line into (the sentence text, the character offsets where its words start). The tokens stay
exactly those of the unsegmented sentence in every mode; only `token_boundary` changes (instances.read_documents).
brightmart's code marks a word's later characters with "##" and strips the marks again after masking; we carry the
same mark as an id offset instead, so no "##" token of the vocabulary is needed.

Mixed scripts: a Latin or digit token that WordPiece continues with "##" stays a continuation in every mode; a
token starts a word only where the tokenizer and the segmentation both say a word starts.
"""
from __future__ import annotations

import logging
import sys

from albert_jax.configs.schema import ZH_MASKING


def is_cjk(ch: str) -> bool:
    """BERT's `_is_chinese_char` ranges (the CJK Unified Ideographs blocks and their compatibility forms)."""
    cp = ord(ch)
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
            or 0x2F800 <= cp <= 0x2FA1F)


class Segmenter:
    """`segmenter(line) -> (text, word_starts)`; picklable (jieba's dictionary loads in the process that uses it).

    Counts what it saw, so that `check(path)` can refuse input that cannot be what the mode expects."""

    def __init__(self, mode: str):
        if mode not in ZH_MASKING or mode == "char":
            raise ValueError(f"zh_masking={mode!r}: a segmenter is for {ZH_MASKING[1:]} ('char' needs none)")
        self.mode = mode
        self._jieba = None
        self.lines = self.cjk_chars = self.spaced_lines = 0

    def __getstate__(self):
        return {"mode": self.mode}

    def __setstate__(self, state):
        self.__init__(state["mode"])

    def _tokenizer(self):
        if self._jieba is None:
            import jieba  # noqa: PLC0415  heavy: jieba
            jieba.setLogLevel(logging.WARNING)  # not "Building prefix dict..." on every worker
            self._jieba = jieba.Tokenizer()
        return self._jieba

    def __call__(self, line: str) -> tuple[str, list[int]]:
        line = line.rstrip("\n")
        self.lines += 1
        if self.mode == "gold":
            words = line.split()
            self.spaced_lines += len(words) > 1
            text, starts, at = "", [], 0
            for w in words:
                starts.append(at)
                text += w
                at += len(w)
            self.cjk_chars += sum(map(is_cjk, text))
            return text, starts
        self.cjk_chars += sum(map(is_cjk, line))
        return line, [start for _, start, _ in self._tokenizer().tokenize(line, HMM=True)]

    def check(self, path) -> None:
        """After a file: `gold` on text that holds no segmentation is an error; `jieba` on text with no Chinese
        only says so (whole words are then the tokenizer's own, as `char`)."""
        if self.mode == "gold" and self.cjk_chars and not self.spaced_lines:
            raise ValueError(f"{path}: zh_masking=gold needs word-segmented text (words separated by spaces, as the "
                             f"People's Daily corpus's `segmented` field), but none of its {self.lines} line(s) has "
                             "a space between words; use zh_masking=jieba to segment it, or char")
        if self.mode == "jieba" and self.lines and not self.cjk_chars:
            print(f"pretraining-data: {path} holds no CJK text; zh_masking=jieba changes nothing there (its whole "
                  "words are the tokenizer's own, as with char)", file=sys.stderr)
