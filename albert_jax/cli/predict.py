"""`albert-jax predict`: a fine-tuned run's predictions for a file, one JSON line per input (runs/predict.py)."""
from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

from albert_jax.cli.common import add_finetuned_run_arguments, setup_logging
from albert_jax.data import user_files

FORMATS = ".txt (one input per line; a pair as two tab-separated texts), .csv/.tsv/.jsonl (the task's text " \
          "columns; spans: question and context), .conll (tagging: the first column), .json (SQuAD JSON)"


def read_inputs(path: Path, predictor) -> tuple[list[str], list]:
    """(ids, inputs): each input named by file:line (or the SQuAD question id)."""
    from albert_jax.runs.predict import PredictError  # noqa: PLC0415  CLI start

    kind, suffix = predictor.kind, path.suffix.lower()
    if not path.is_file():
        raise PredictError(f"--input {path}: no such file")
    if suffix == ".txt":
        ids, inputs = [], []
        with open(path, encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                text = line.rstrip("\r\n")
                if not text.strip():
                    continue
                ids.append(f"{path.name}:{line_no}")
                if kind == "classification" and len(predictor.task.text_keys) == 2:
                    parts = text.split("\t")
                    if len(parts) != 2:
                        raise PredictError(f"{path}:{line_no}: a pair task reads two tab-separated texts, got "
                                           f"{len(parts)} field(s)")
                    inputs.append(tuple(parts))
                elif kind == "span":
                    raise PredictError(f"{path}: a span task reads .jsonl (question, context) or SQuAD .json")
                else:
                    inputs.append(text)
        return ids, inputs
    if suffix == ".conll" and kind == "tagging":
        rows = user_files.read_conll(path, labeled=False)
        return [f"{path.name}:{line}" for line, _, _ in rows], [words for _, words, _ in rows]
    if suffix == ".json" and kind == "span":
        rows = user_files.read_squad(path, labeled=False)
        return [r["id"] for _, r in rows], [r for _, r in rows]
    if suffix in user_files.TABLE_SUFFIXES:
        columns = {"classification": tuple(getattr(predictor.task, "text_keys", ())), "tagging": ("words",),
                   "span": ("question", "context")}[kind]
        rows = user_files.read_table(path, columns)
        inputs = []
        for line, row in rows:
            if kind == "tagging":
                words = row["words"]
                inputs.append(words if isinstance(words, list) else str(words).split())
            elif kind == "span":
                inputs.append({"question": row["question"], "context": row["context"]})
            else:
                inputs.append({k: row[k] for k in columns})
            if kind == "classification" and not all(str(row[k]).strip() for k in columns):
                raise PredictError(f"{path}:{line}: empty text in column(s) {', '.join(columns)}")
        if kind == "classification":
            _warn_unknown_labels(path, rows, predictor)
        return [f"{path.name}:{line}" for line, _ in rows], inputs
    raise PredictError(f"--input {path}: unknown format {suffix or '(no suffix)'!r} for a {kind} task; use {FORMATS}")


def _warn_unknown_labels(path: Path, rows, predictor) -> None:
    """A labelled input whose label column holds names the run was not trained on (a typo, another label set):
    its predictions are still written, and one warning line names the labels, where they are and the run's."""
    names = predictor.labels
    spec = getattr(predictor.task, "spec", None) or {}
    column = spec.get("label") or getattr(predictor.task, "label_key", "label")
    if not names or getattr(predictor.task, "regression", False):
        return
    known = set(names) | {str(i) for i in range(len(names))}  # an id is a label too (our own sets' files)
    unknown: dict[str, list[int]] = {}
    for line, row in rows:
        value = row.get(column)
        value = "" if value is None else str(value).strip()
        if value and value not in known:
            unknown.setdefault(value, []).append(line)
    if unknown:
        where = "; ".join(f"{v!r} (line{'s' if len(ls) > 1 else ''} {', '.join(map(str, ls[:3]))}"
                          f"{', ...' if len(ls) > 3 else ''})" for v, ls in list(unknown.items())[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        logging.getLogger("albert_jax.predict").warning(
            "%s: column %r holds label(s) the run does not know: %s%s; the run's labels: %s (predicted all the "
            "same)", path, column, where, more, ", ".join(names))


def _cmd(args) -> int:
    from albert_jax.runs.predict import Predictor  # noqa: PLC0415  CLI start

    setup_logging(args.log_level)
    predictor = Predictor.load(args.workdir, seed=args.seed, step=args.step, batch_size=args.batch_size)
    ids, inputs = read_inputs(Path(args.input), predictor)
    results = predictor.predict(inputs)
    lines = [json.dumps({"id": i, **r}, ensure_ascii=False) + "\n" for i, r in zip(ids, results)]
    if args.output in (None, "-"):
        sys.stdout.writelines(lines)
    else:  # written beside, then renamed: an interrupted run leaves no half-written output over an old one
        out = Path(args.output)
        tmp = out.with_name(out.name + ".partial")
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(lines)
        os.replace(tmp, out)
        print(f"wrote {len(lines)} prediction(s) of {predictor.run.workdir} (step {predictor.run.step}) to {out}",
              file=sys.stderr)
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser(
        "predict", help="a fine-tuned run's predictions for a file (labels with probabilities, scores, tags, spans)",
        description="Reads FILE, runs the fine-tuned model (the best seed by dev score unless --seed) and writes "
        "one JSON line per input: {id, label, probabilities} (classification, pairs), {id, score} (regression), "
        "{id, words, tags} (tagging) or {id, answer} (spans). docs/finetuning.md, 'Predictions'.")
    p.add_argument("--input", required=True, help=f"the inputs: {FORMATS}")
    p.add_argument("--output", default="-", help="where the JSON lines go (default: - , stdout)")
    add_finetuned_run_arguments(p, "inputs")
    p.set_defaults(func=_cmd)
