"""A downstream task from a user's own files, described by a small JSON task file:

    {"kind": "classification", "train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv",
     "text": "sentence", "label": "label"}

and fine-tuned with `--config experiments/finetune.py:task=path/to/task.json,init=RUN`. Keys:

  kind     classification | pair | regression (CSV, TSV or JSONL files: data/user_files.py) | tagging (CoNLL) |
           span (SQuAD JSON)
  train, dev (required), test (optional): file paths, relative to the task file's folder
  text     the text column (classification, pair, regression); default "sentence"
  pair     the second text column (pair); default "sentence2"
  label    the label column; default "label". In a test file it may be missing or empty (hidden labels: the
           test split is then featurized but not scored)
  labels   the label names in id order (classification, pair) or the tag set (tagging); default: the distinct
           values of the train file, sorted (numerically when every one is an integer)
  name     the task's name in results and tables; default: the task file's name without .json
  max_seq_length  optional; default 128 (span: 384)
  metrics  optional, e.g. ["accuracy", "f1"]; default accuracy (pearson, spearman for regression)

The task is the same ClassificationTask / TaggingTask / SpanTask as our own sets, so it runs on the same core with
the same metrics, seeds, best-dev selection and a test split scored once. The run records the resolved spec (files
made absolute, labels fixed) in config.json, so that export, predict and a resume rebuild the task, label names
included, without reading the files again.
"""
from __future__ import annotations

import json
from pathlib import Path

from albert_jax.data import user_files
from albert_jax.data.user_files import UserDataError

KINDS = ("classification", "pair", "regression", "tagging", "span")
SPLIT_KEYS = ("train", "dev", "test")
KEYS = {"kind", "name", "text", "pair", "label", "labels", "max_seq_length", "metrics", *SPLIT_KEYS}
# The split names the core sees (the dev split's metrics are the plain eval/<metric>).
SPLIT_NAMES = {"train": "train", "dev": "validation", "test": "test"}


def is_task_file(name: str) -> bool:
    return str(name).lower().endswith(".json")


def read_spec(path) -> dict:
    """The task file, checked and resolved: absolute file paths, and the labels read from the train file where
    not given."""
    path = Path(path)
    if not path.is_file():
        raise UserDataError(f"task={path}: no such task file (a JSON file naming kind, train, dev, ...; "
                            "docs/finetuning.md, 'Your own data')")
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise UserDataError(f"{path}:{e.lineno}: not JSON ({e.msg})") from None
    if not isinstance(spec, dict):
        raise UserDataError(f"{path}: expected a JSON object")
    unknown = sorted(set(spec) - KEYS)
    if unknown:
        raise UserDataError(f"{path}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(KEYS))}")
    kind = spec.get("kind")
    if kind not in KINDS:
        raise UserDataError(f"{path}: kind={kind!r}; allowed: {', '.join(KINDS)}")
    out = {"kind": kind, "name": str(spec.get("name") or path.name[:-len(".json")]),
           "text": spec.get("text", "sentence"), "pair": spec.get("pair", "sentence2"),
           "label": spec.get("label", "label"),
           "max_seq_length": int(spec.get("max_seq_length", 384 if kind == "span" else 128))}
    if "metrics" in spec:
        out["metrics"] = list(spec["metrics"])
    for key in SPLIT_KEYS:
        if key not in spec:
            if key != "test":
                raise UserDataError(f"{path}: no {key!r} file (train and dev are required, test is optional)")
            continue
        f = (path.parent / spec[key]).resolve()
        if not f.is_file():
            raise UserDataError(f"{path}: {key}={spec[key]!r}: no such file ({f})")
        out[key] = str(f)
    if kind in ("classification", "pair", "tagging"):
        out["labels"] = [str(x) for x in spec["labels"]] if "labels" in spec else _labels_of(out)
        if "labels" in spec and any(not x.strip() for x in out["labels"]):
            raise UserDataError(f"{path}: \"labels\" holds an empty name; every label needs one")
        if len(out["labels"]) < 2 and kind != "tagging":
            raise UserDataError(f"{out['train']}: one label ({out['labels'][0]!r}) in the whole train file; "
                                "classification needs two or more (or give them: \"labels\": [...])")
    if kind == "span":  # v2 (an answerability head) when the train file has unanswerable questions
        out["version"] = 2 if any(r["is_impossible"] for _, r in user_files.read_squad(Path(out["train"]))) else 1
    return out


def _labels_of(spec: dict) -> list[str]:
    if spec["kind"] == "tagging":
        values = {t for _, _, tags in user_files.read_conll(Path(spec["train"])) for t in tags}
    else:
        values = set()
        for line, row in user_files.read_table(Path(spec["train"]), (spec["label"],)):
            value = str(row[spec["label"]]).strip()
            if not value:  # it would become a class '' of its own
                raise UserDataError(f"{spec['train']}:{line}: empty label in column {spec['label']!r}")
            values.add(value)
    if all(v.lstrip("-").isdigit() for v in values):
        return sorted(values, key=int)
    return sorted(values)


class FileSource:
    """What `load_records` reads for a task from files: one split's records in the task's own format."""

    def __init__(self, spec: dict):
        self.spec = spec
        self._cache: dict[str, list[dict]] = {}

    def __str__(self):
        return f"files:{self.spec['train']}"

    def records(self, split: str, limit: int = 0) -> list[dict]:
        if split not in self._cache:
            key = {v: k for k, v in SPLIT_NAMES.items()}[split]
            self._cache[split] = read_records(self.spec, Path(self.spec[key]), hidden_ok=key == "test")
        rows = self._cache[split]
        return rows[:limit] if limit else rows


def read_records(spec: dict, path: Path, hidden_ok: bool = False) -> list[dict]:
    """One file's records for `spec`'s task; a bad row is named by file:line. `hidden_ok` (a test file): a
    missing or empty label reads as -1 (not scored)."""
    kind = spec["kind"]
    if kind == "tagging":
        return _tagging_records(spec, path)
    if kind == "span":
        return [r for _, r in user_files.read_squad(path)]
    texts = (spec["text"], spec["pair"]) if kind == "pair" else (spec["text"],)
    index = {name: i for i, name in enumerate(spec.get("labels", ()))}
    out = []
    for line, row in user_files.read_table(path, texts + (() if hidden_ok else (spec["label"],))):
        rec = {"id": f"{path.name}:{line}"}
        for col in texts:
            text = str(row[col]).strip()
            if not text:
                raise UserDataError(f"{path}:{line}: empty text in column {col!r}")
            rec[col] = text
        value = row.get(spec["label"])  # JSONL may hold 0, which is a label, not a missing one
        raw = "" if value is None else str(value).strip()
        if hidden_ok and not raw:
            rec["label"] = -1.0 if kind == "regression" else -1
        elif kind == "regression":
            try:
                rec["label"] = float(raw)
            except ValueError:
                raise UserDataError(f"{path}:{line}: label {raw!r} in column {spec['label']!r} is not a number "
                                    "(kind regression)") from None
        elif not raw:
            raise UserDataError(f"{path}:{line}: empty label in column {spec['label']!r}")
        elif raw not in index:
            raise UserDataError(f"{path}:{line}: unknown label {raw!r} in column {spec['label']!r}; the task's "
                                f"labels: {', '.join(spec['labels'])}")
        else:
            rec["label"] = index[raw]
        out.append(rec)
    return out


def _tagging_records(spec: dict, path: Path) -> list[dict]:
    tags = set(spec["labels"])
    out = []
    for line, words, sent_tags in user_files.read_conll(path):
        for k, tag in enumerate(sent_tags):
            if tag not in tags:
                raise UserDataError(f"{path}:{line + k}: unknown tag {tag!r}; the task's tags: "
                                    f"{', '.join(spec['labels'])}")
        out.append({"id": f"{path.name}:{line}", "words": " ".join(words), "tags": " ".join(sent_tags)})
    return out


def squad_record(r: dict) -> dict:
    """A SQuAD JSON record is already in the span task's form (data/user_files.read_squad)."""
    return r


def task_from_spec(spec: dict):
    """The task `spec` (read_spec's) describes, reading its files lazily through a FileSource."""
    from albert_jax.tasks.classification import ClassificationTask  # noqa: PLC0415  heavy: grain, jax
    from albert_jax.tasks.span_qa import SpanTask  # noqa: PLC0415  heavy: grain, jax
    from albert_jax.tasks.tagging import TaggingTask  # noqa: PLC0415  heavy: grain, jax

    kind, source = spec["kind"], FileSource(spec)
    tests = ("test",) if "test" in spec else ()
    if kind == "tagging":
        task = TaggingTask(spec["name"], source, spec["labels"], max_seq_length=spec["max_seq_length"])
        task.test_splits = tests
    elif kind == "span":
        task = SpanTask(spec["name"], source, version=spec["version"], adapter=squad_record, test_splits=tests,
                        max_seq_length=spec["max_seq_length"])
    else:
        regression = kind == "regression"
        texts = (spec["text"], spec["pair"]) if kind == "pair" else (spec["text"],)
        default = ("pearson", "spearman") if regression else ("accuracy",)
        metrics = tuple(spec.get("metrics", default))
        task = ClassificationTask(spec["name"], source, texts, 1 if regression else len(spec["labels"]),
                                  metrics=metrics, headline=metrics[0], test_splits=tests,
                                  max_seq_length=spec["max_seq_length"])
        task.label_names = None if regression else list(spec["labels"])
    task.spec = spec
    return task
