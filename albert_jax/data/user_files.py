"""A user's own labeled files, read row by row with every error naming the file and line.

  table   .csv, .tsv (a header row names the columns) or .jsonl (one JSON object per line): classification,
          sentence pairs, regression
  conll   one token per line, its tag in the last whitespace-separated column, a blank line between sentences,
          `-DOCSTART-` lines skipped (CoNLL-2003 and the like): tagging
  squad   SQuAD JSON ({"data": [{"paragraphs": [{"context", "qas": [{"id", "question", "answers"}]}]}]}; v2's
          `is_impossible` kept): span extraction

Each reader returns `(line, record)` pairs, where `line` is where the record starts (for SQuAD JSON, the index of
the question in the file), so that a later check (an unknown label) can still name the line.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

TABLE_SUFFIXES = (".csv", ".tsv", ".jsonl")


class UserDataError(ValueError):
    """A row of a user's file that cannot be used; the message starts with file:line."""


def read_table(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict]]:
    """The rows of a CSV, TSV or JSONL file as dicts holding at least `columns` (the others are kept too)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise UserDataError(f"{path}: unknown table format {suffix or '(no suffix)'!r}; use one of "
                            f"{', '.join(TABLE_SUFFIXES)}")
    rows: list[tuple[int, dict]] = []
    with open(path, encoding="utf-8-sig", newline="") as f:
        if suffix == ".jsonl":
            for line_no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise UserDataError(f"{path}:{line_no}: not a JSON object ({e.msg})") from None
                if not isinstance(row, dict):
                    raise UserDataError(f"{path}:{line_no}: expected a JSON object, got {type(row).__name__}")
                rows.append((line_no, row))
        else:
            reader = csv.DictReader(f, delimiter="\t" if suffix == ".tsv" else ",",
                                    quoting=csv.QUOTE_NONE if suffix == ".tsv" else csv.QUOTE_MINIMAL)
            header = reader.fieldnames or []
            missing = [c for c in columns if c not in header]
            if missing:
                raise UserDataError(f"{path}:1: the header has no column {', '.join(map(repr, missing))} "
                                    f"(columns: {', '.join(header) or 'none'})")
            for row in reader:
                if None in row:  # more fields than the header names
                    raise UserDataError(f"{path}:{reader.line_num}: {len(header) + len(row[None])} fields, the "
                                        f"header names {len(header)}")
                rows.append((reader.line_num, row))
    for line_no, row in rows:
        for c in columns:
            if row.get(c) is None:
                raise UserDataError(f"{path}:{line_no}: no column {c!r}")
    if not rows:
        raise UserDataError(f"{path}: no rows")
    return rows


def read_conll(path: Path, labeled: bool = True) -> list[tuple[int, list[str], list[str]]]:
    """(first line, words, tags) per sentence: the token is the first column, the tag the last. `labeled=False`
    (prediction input) also takes one token per line with no tag (tags then empty)."""
    path = Path(path)
    out: list[tuple[int, list[str], list[str]]] = []
    words: list[str] = []
    tags: list[str] = []
    start = 0
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            parts = line.split()
            if not parts or parts[0] == "-DOCSTART-":
                if words:
                    out.append((start, words, tags))
                words, tags = [], []
                continue
            if len(parts) < 2 and labeled:
                raise UserDataError(f"{path}:{line_no}: expected 'token ... tag' (at least two columns), got "
                                    f"{line.strip()[:80]!r}")
            if not words:
                start = line_no
            words.append(parts[0])
            if labeled:
                tags.append(parts[-1])
    if words:
        out.append((start, words, tags))
    if not out:
        raise UserDataError(f"{path}: no sentences")
    return out


def read_squad(path: Path, labeled: bool = True) -> list[tuple[int, dict]]:
    """SQuAD JSON flattened to one record per question (id, question, context, answers, is_impossible);
    `labeled=False` (prediction input) reads no answers."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise UserDataError(f"{path}:{e.lineno}: not JSON ({e.msg})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise UserDataError(f"{path}: expected SQuAD JSON, an object with a 'data' list")
    out: list[tuple[int, dict]] = []
    for article in doc["data"]:
        for paragraph in article.get("paragraphs", []):
            context = paragraph.get("context")
            for qa in paragraph.get("qas", []):
                where = f"{path}: question {len(out) + 1} (id {qa.get('id')!r})"
                if not isinstance(context, str) or not context.strip():
                    raise UserDataError(f"{where}: its paragraph has no context")
                if not str(qa.get("question", "")).strip():
                    raise UserDataError(f"{where}: empty question")
                impossible = bool(qa.get("is_impossible", False)) if labeled else False
                answers = [] if impossible or not labeled else qa.get("answers", [])
                for a in answers:
                    start, text = a.get("answer_start"), a.get("text", "")
                    if not isinstance(start, int) or context[start:start + len(text)] != text:
                        raise UserDataError(f"{where}: answer {text!r} is not at character {start} of its context")
                if labeled and not impossible and not answers:
                    raise UserDataError(f"{where}: no answers and not marked is_impossible")
                out.append((len(out) + 1, {"id": str(qa.get("id", len(out))), "question": qa["question"],
                                           "context": context, "answers": answers, "is_impossible": impossible}))
    if not out:
        raise UserDataError(f"{path}: no questions")
    return out
