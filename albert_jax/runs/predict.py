"""Predictions from a fine-tuned run: labels with their probabilities, regression scores, tags or answer spans.

    from albert_jax.runs.predict import Predictor

    p = Predictor.load("runs/my_task")            # a fine-tuning workdir: its best seed by dev score
    p.predict(["a gripping, funny film", "two hours I will not get back"])
    # [{"label": "positive", "probabilities": {"negative": 0.08, "positive": 0.92}}, ...]

Inputs by task kind: a text (classification), a (text, text) pair or a dict with the task's text columns (pairs),
a text or a list of words (tagging: one tag per word), {"question", "context"} (spans). Tokenization, [CLS]/[SEP],
segment ids, truncation and padding are the task's own featurization, the same code as training and evaluation,
so a prediction equals what evaluation scored. Batches are padded to the shortest length bucket that holds them
(data/bucketing.py): exact, and short inputs do not pay for the longest.

`albert-jax predict --workdir RUN --input FILE --output FILE` (cli/predict.py) does the same for a file.

`Predictor.evaluate(records)` scores labelled records with the task's own metrics, through the evaluation the
fine-tuning loop runs on dev (training/loop.evaluate: the eval step, summed over batches, the task's finalize);
`labelled_records(path)` reads a labelled file as a task file's dev split is read (tasks/from_files.py).
`albert-jax evaluate --workdir RUN --input FILE` (cli/evaluate.py) prints those metrics as JSON.
"""
from __future__ import annotations

import contextlib
import copy
import logging
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from albert_jax.data import bucketing
from albert_jax.runs.export import ExportError, resolve_run
from albert_jax.tasks import from_files, squad

log = logging.getLogger(__name__)

KINDS = {"ClassificationTask": "classification", "TaggingTask": "tagging", "SpanTask": "span"}


@contextlib.contextmanager
def quiet_checkpoint_reads():
    """What orbax says on every read of a checkpoint (absl's "Given directory is read only", the sharding
    UserWarnings) carries nothing a user can act on: silenced while a run is loaded, as cli/common.setup_logging
    does for the commands; with albert_jax logging at DEBUG it all shows."""
    absl = logging.getLogger("absl")
    old = absl.level
    if logging.getLogger("albert_jax").getEffectiveLevel() > logging.DEBUG:
        absl.setLevel(max(old, logging.ERROR))
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sharding info not provided when restoring")
            warnings.filterwarnings("ignore", message="Couldn't find sharding info under RestoreArgs")
            yield
    finally:
        absl.setLevel(old)


class PredictError(ValueError):
    """A run or an input that cannot be predicted from; the message names it."""


class Predictor:
    def __init__(self, run, max_seq_length: int, batch_size: int = 32):
        import jax  # noqa: PLC0415  heavy: jax

        from albert_jax.tasks.registry import head_of, task_of_run  # noqa: PLC0415  heavy: grain, jax

        if run.kind != "finetune":
            raise PredictError(f"{run.workdir} is a pretraining run; predict reads a fine-tuning run (its task head)")
        self.run, self.task = run, task_of_run(run.task, run.config)
        self.kind = KINDS.get(type(self.task).__name__)
        if self.kind is None or head_of(run.task) != "default":
            raise PredictError(f"{run.workdir}: predict handles classification, pair, regression, tagging and span "
                               f"runs; this one is {type(self.task).__name__} (head {run.task.get('head')})")
        self.max_len, self.batch_size = max_seq_length, batch_size
        self.buckets = bucketing.bucket_lengths(max_seq_length, "auto") if self.task.seq_keys else ()
        self.model = self.task.model(run.config)
        self.params = jax.device_get(run.params)
        self._apply = jax.jit(lambda params, batch: self.task.apply(self.model, params, batch, None, True))

    @classmethod
    def load(cls, workdir, seed: int | None = None, step: int | None = None, batch_size: int = 32) -> "Predictor":
        """A fine-tuning workdir (its best seed by dev score unless `seed`), or one seed's run directory."""
        from albert_jax.runs.pretrain import read_run_config  # noqa: PLC0415  heavy: jax, optax

        with quiet_checkpoint_reads():
            try:
                run = resolve_run(workdir, step=step, seed=seed)
            except ExportError as e:
                raise PredictError(str(e)) from None
            max_len = int(read_run_config(run.workdir).get("data", {}).get("max_seq_length", 128))
            return cls(run, max_len, batch_size)

    @property
    def labels(self) -> list[str] | None:
        """The class names (tagging: the tags), as an HF export's id2label holds them; None for regression, spans."""
        from albert_jax.tasks.registry import label_names  # noqa: PLC0415  heavy: grain, jax

        if self.kind == "span" or (self.kind == "classification" and self.task.regression):
            return None
        return label_names(self.task, "token" if self.kind == "tagging" else "sequence")[0]

    # ------------------------------------------------------------------------------------------------ inputs
    def records(self, inputs: Sequence[Any]) -> list[dict]:
        """`inputs` as the task's records (labels -1: nothing is scored)."""
        out = []
        for i, x in enumerate(inputs):
            if self.kind == "classification":
                keys = self.task.text_keys
                if isinstance(x, str):
                    x = (x,)
                if isinstance(x, dict):
                    missing = [k for k in keys if not str(x.get(k, "")).strip()]
                    if missing:
                        raise PredictError(f"input {i}: no text under {', '.join(map(repr, missing))} (the task "
                                           f"reads {', '.join(keys)})")
                    x = tuple(x[k] for k in keys)
                if len(x) != len(keys) or not all(str(t).strip() for t in x):
                    raise PredictError(f"input {i}: the task reads {len(keys)} non-empty text(s) ({', '.join(keys)}),"
                                       f" got {x!r:.80}")
                out.append({**dict(zip(keys, map(str, x))), "label": -1.0 if self.task.regression else -1})
            elif self.kind == "tagging":
                words = x.split() if isinstance(x, str) else [str(w) for w in x]
                if not words:
                    raise PredictError(f"input {i}: no words")
                placeholder = self.task.tags[0]  # featurization wants a tag per word; none is scored
                out.append({"words": " ".join(words), "tags": " ".join([placeholder] * len(words))})
            else:
                if not isinstance(x, dict) or not str(x.get("question", "")).strip() or not str(
                        x.get("context", "")).strip():
                    raise PredictError(f"input {i}: a span task reads {{'question': ..., 'context': ...}}, got "
                                       f"{x!r:.80}")
                # Named by position: the decoded answers come back keyed by id (span features span windows).
                out.append({"id": str(i), "question": str(x["question"]), "context": str(x["context"]),
                            "answers": [], "is_impossible": False})
        return out

    # ------------------------------------------------------------------------------------------------ scoring
    def file_spec(self) -> dict:
        """How a labelled file of this run's task reads (tasks/from_files.py's spec): a task from the user's files
        keeps its own columns and label names; our sets read their text columns and `label`, holding the names
        `labels` gives (what predict prints), a tagging file is CoNLL, a span file SQuAD JSON."""
        spec = getattr(self.task, "spec", None)
        if spec:
            return dict(spec)
        if self.kind == "tagging":
            return {"kind": "tagging", "labels": list(self.task.tags)}
        if self.kind == "span":
            return {"kind": "span"}
        keys = self.task.text_keys
        kind = "regression" if self.task.regression else ("pair" if len(keys) == 2 else "classification")
        return {"kind": kind, "text": keys[0], "pair": keys[-1], "label": self.task.label_key,
                "labels": self.labels or []}

    def labelled_records(self, path) -> list[dict]:
        """A labelled file's records in the task's form; a bad row or a label the run does not know is a
        UserDataError naming file:line."""
        path = Path(path)
        if not path.is_file():
            raise PredictError(f"--input {path}: no such file")
        return from_files.read_records(self.file_spec(), path)

    def evaluate(self, records: Sequence[dict]) -> dict[str, float]:
        """The task's metrics over labelled `records`, named as fine-tuning names its dev metrics (accuracy, f1,
        ...), computed by the loop's own evaluation."""
        import jax  # noqa: PLC0415  heavy: jax

        from albert_jax.tasks.features import EvalSet  # noqa: PLC0415  heavy: grain, jax
        from albert_jax.training.loop import evaluate  # noqa: PLC0415  heavy: jax, optax
        from albert_jax.training.step import make_eval_step  # noqa: PLC0415  heavy: jax, optax

        if not records:
            raise PredictError("no labelled examples to evaluate")
        task = self.task
        if self.kind == "span":  # records in SQuAD's form (read_squad's), whatever the task's own source holds
            task = copy.copy(task)
            task.adapter = from_files.squad_record
        split = task.dev_splits[0]  # the first dev split's metrics carry no prefix: eval/<metric> in training
        feats = task.featurize(list(records), self.run.tokenizer, self.max_len, split, training=False)
        step = jax.jit(make_eval_step(task, self.model))
        return evaluate(step, self.params, task, {split: EvalSet(feats, task.seq_keys, self.buckets)},
                        self.batch_size, None)

    # ------------------------------------------------------------------------------------------------ outputs
    def predict(self, inputs: Sequence[Any]) -> list[dict]:
        """One result per input, in order (see the module docstring for the shapes)."""
        from albert_jax.tasks.features import eval_batches  # noqa: PLC0415  heavy: grain, jax

        if not inputs:
            return []
        records = self.records(inputs)
        feats = self.task.featurize(records, self.run.tokenizer, self.max_len, "predict", training=False)
        rows: dict[str, list] = {}
        for batch in eval_batches(feats, self.batch_size, None, self.task.seq_keys, self.buckets):
            outputs = self._apply(self.params, batch)
            keep = batch["example_index"] >= 0
            for key, value in self._per_row(outputs, batch).items():
                rows.setdefault(key, []).extend(list(np.asarray(value)[keep]))
            rows.setdefault("index", []).extend(list(batch["example_index"][keep]))
        order = np.argsort(rows.pop("index"), kind="stable")
        rows = {k: [v[j] for j in order] for k, v in rows.items()}
        if self.kind == "classification":
            return self._classes(rows)
        if self.kind == "tagging":
            return self._tags(rows, records)
        return self._spans(rows, feats, len(records))

    def _per_row(self, outputs, batch) -> dict:
        if self.kind == "classification":
            return {"logits": np.asarray(outputs, np.float32)}
        if self.kind == "tagging":
            return {"tag": np.argmax(np.asarray(outputs), -1), "labels": batch["labels"]}
        if self.task.version == 2:
            return {k: np.asarray(outputs[k]) for k in ("start_logits", "end_logits", "top_starts", "cls_logits")}
        return {"start_logits": np.asarray(outputs[0]), "end_logits": np.asarray(outputs[1])}

    def _classes(self, rows) -> list[dict]:
        logits = np.stack(rows["logits"]).astype(np.float64)
        if self.task.regression:
            return [{"score": float(x[0])} for x in logits]
        z = np.exp(logits - logits.max(-1, keepdims=True))
        probs = z / z.sum(-1, keepdims=True)
        names = self.labels
        return [{"label": names[int(p.argmax())], "probabilities": {n: float(q) for n, q in zip(names, p)}}
                for p in probs]

    def _tags(self, rows, records) -> list[dict]:
        out = []
        for tag, labels, rec in zip(rows["tag"], rows["labels"], records):
            words = rec["words"].split(" ")
            tagged = [self.task.tags[int(t)] for t, lab in zip(tag, labels) if lab >= 0]
            # Words past max_seq_length were cut by featurization: they get no tag (None), and the result says so.
            out.append({"words": words, "tags": tagged + [None] * (len(words) - len(tagged)),
                        "truncated": len(tagged) < len(words)})
        return out

    def _spans(self, rows, feats, n: int) -> list[dict]:
        arrays = {k: np.stack(v) for k, v in rows.items()}
        if self.task.version == 2:
            texts, diffs = squad.decode_v2(feats.meta, arrays, n_best_size=self.task.n_best_size,
                                           max_answer_length=self.task.max_answer_length,
                                           null_threshold=self.task.null_threshold)
        else:
            texts = squad.decode_v1(feats.meta, arrays["start_logits"], arrays["end_logits"],
                                    n_best_size=self.task.n_best_size, max_answer_length=self.task.max_answer_length)
            diffs = {}
        return [{"answer": texts.get(str(k), ""), **({"null_score_diff": diffs[str(k)]} if str(k) in diffs else {})}
                for k in range(n)]
