"""What a table's numbers rest on: each row's samples over pretraining seeds, fine-tuning seeds and held-out
examples, read from its runs; the baselines (chance, majority, random init); and whether a reading is reproduced.

A row's directory (sweep.py) holds one pretraining run per pretraining seed (`pretrain`, `pretrain-seed-1`, ...)
and, for each, a fine-tuning workdir per task with its seeds (`finetune-<task>[-seed-k]/seed-<s>`), plus the
random-init fine-tuning of its architecture (`finetune-<task>-random`). Per example, the final pretraining
evaluation keeps `eval_examples.npz` and each fine-tuning seed `best_dev_examples.npz`; a run from before those
files existed contributes its one number, and its interval is then over seeds alone (stats.py). The same readers
read an evidence directory (evidence_dir.py: the small part of a runs tree they need, in its layout).
"""
from __future__ import annotations

import dataclasses
import re
from collections import Counter
from pathlib import Path

import numpy as np

from albert_jax.training import rundir
from albert_jax.tasks.pretraining.records import decode_record
from albert_jax.training.examples import BEST_EXAMPLES_FILE, EXAMPLES_FILE, load_examples

INTRINSIC = ("eval/mlm_accuracy", "eval/nsp_accuracy", "eval/sop_accuracy")
RANDOM_SUFFIX = "-random"  # finetune-<task>-random: a row's architecture fine-tuned from random init (sweep.py)
# A fine-tuned row whose dev score is within this many points of predicting the majority class for everything
# did not learn: the table says so instead of printing its score (issue 24).
DID_NOT_LEARN_POINTS = 2.0
MLM_MAJORITY_FILE = "mlm_majority.json"  # the MLM majority baseline's counts, in a stage's evidence
CHANCE = 0.5  # the held-out SOP and NSP sets are balanced (tasks/pretraining/input.PretrainData.eval_order)


def seeded_dirs(row_dir: Path, stem: str) -> list[Path]:
    """`stem`, `stem-seed-1`, `stem-seed-2`, ... that exist, in seed order (seed 0 is the plain name)."""
    found = {0: row_dir / stem} if (row_dir / stem).is_dir() else {}
    for p in row_dir.glob(f"{stem}-seed-*"):
        m = re.fullmatch(re.escape(stem) + r"-seed-(\d+)", p.name)
        if m and p.is_dir():
            found[int(m.group(1))] = p
    return [found[k] for k in sorted(found)]


# ------------------------------------------------------------------------------------------ intrinsic samples
def _final_eval(pre: Path) -> dict | None:
    cfg = rundir.read_config(pre, required=False)
    if not cfg:
        return None
    final = cfg["experiment"]["train"]["num_train_steps"]
    last = None
    for rec in rundir.read_metrics(pre / rundir.METRICS) if (pre / rundir.METRICS).is_file() else []:
        if rec.get("step") == final and any(k.startswith("eval/") for k in rec):
            last = rec
    return last


def intrinsic_samples(pre_dirs: list[Path]) -> dict[str, list]:
    """{metric: one sample per finished pretraining seed}: per-example arrays (MLM as a stats.Ratio of correct and
    masked tokens) when every seed kept its examples, else each seed's final number."""
    finals = [(p, _final_eval(p)) for p in pre_dirs]
    finals = [(p, f) for p, f in finals if f]
    if not finals:
        return {}
    examples = [load_examples(p / EXAMPLES_FILE) for p, _ in finals]
    if all(e is not None and "sop" in e and "nsp" in e for e in examples):
        out: dict[str, list] = {k: [] for k in INTRINSIC}
        for e in examples:
            keep = {s: e[s]["weight"] > 0 for s in ("sop", "nsp")}
            out["eval/sop_accuracy"].append(e["sop"]["sentence_correct"][keep["sop"]])
            out["eval/nsp_accuracy"].append(e["nsp"]["sentence_correct"][keep["nsp"]])
            out["eval/mlm_accuracy"].append((e["sop"]["mlm_correct"][keep["sop"]], e["sop"]["mlm_count"][keep["sop"]]))
        return out
    return {k: [f[k] for _, f in finals if k in f] for k in INTRINSIC if all(k in f for _, f in finals)}


# ------------------------------------------------------------------------------------------ fine-tuning samples
@dataclasses.dataclass
class TaskSamples:
    metric: str
    samples: list  # per (pretraining seed, fine-tuning seed): per-example correctness, or the dev metric
    values: list[float]  # each seed's dev metric, as its results.json reports it
    labels: np.ndarray | None = None  # dev labels, for the majority baseline
    tag_counts: np.ndarray | None = None  # tagging: dev words per tag, for the same baseline
    per_pretraining: tuple[int, ...] = ()  # finished fine-tuning seeds under each pretraining seed, in seed order

    @property
    def majority(self) -> float | None:
        """The dev share of the commonest label (tagging: of the commonest tag among the words): the score of
        predicting it for everything."""
        if self.tag_counts is not None and self.tag_counts.sum():
            return float(self.tag_counts.max() / self.tag_counts.sum())
        if self.labels is None or not len(self.labels):
            return None
        return max(Counter(self.labels.tolist()).values()) / len(self.labels)


def finetune_samples(ft_dirs: list[Path], metric: str, scale: float = 1.0) -> TaskSamples | None:
    """Every finished fine-tuning seed under the given workdirs (one per pretraining seed), as fractions: `scale`
    is the metric's unit (100 for a percentage, tasks/base.Task.metric_scale)."""
    values, per_example, labels, tag_counts, counts = [], [], None, None, []
    for ft in ft_dirs:
        counts.append(0)
        for seed_dir in rundir.seed_dirs(ft).values():
            r = rundir.read_json(seed_dir / rundir.RESULTS)
            if not r or metric not in r.get("dev", {}):
                continue
            counts[-1] += 1
            values.append(float(r["dev"][metric]) / scale)
            e = load_examples(seed_dir / BEST_EXAMPLES_FILE)
            dev = next(iter(e.values())) if e else None
            if dev is not None and metric == "accuracy" and "pred" in dev:
                keep = dev["index"] >= 0
                order = np.argsort(dev["index"][keep], kind="stable")
                per_example.append((dev["pred"][keep] == dev["label"][keep]).astype(np.float64)[order])
                labels = dev["label"][keep][order]
            elif dev is not None and f"score_{metric}" in dev:  # scores per example (SQuAD's F1 per question)
                per_example.append(np.asarray(dev[f"score_{metric}"], np.float64))
            elif dev is not None and metric == "accuracy" and "tagged" in dev:  # tagging: words right / tagged
                keep = dev["index"] >= 0
                order = np.argsort(dev["index"][keep], kind="stable")
                per_example.append((dev["correct"][keep][order].astype(np.float64),
                                    dev["tagged"][keep][order].astype(np.float64)))
                if "tag_counts" in dev:
                    tag_counts = dev["tag_counts"][keep].sum(axis=0)
            else:
                per_example.append(None)
    if not values:
        return None
    sizes = {len(x[0]) if isinstance(x, tuple) else len(x) for x in per_example if x is not None}
    complete = all(x is not None for x in per_example) and len(sizes) == 1
    return TaskSamples(metric, per_example if complete else values, values, labels, tag_counts, tuple(counts))


# ------------------------------------------------------------------------------------------ baselines
def mlm_target_counts(pre: Path) -> tuple[int, int] | None:
    """(count of the commonest target token, all targets) over the held-out masked positions: stored in the
    stage's evidence (mlm_majority.json, evidence_dir.py), else counted from the run's recorded eval shards."""
    stored = rundir.read_json(Path(pre) / MLM_MAJORITY_FILE)
    if stored is not None:
        return int(stored["commonest"]), int(stored["masked"])
    cfg = rundir.read_config(pre, required=False)
    shards = ((cfg or {}).get("data") or {}).get("eval_shards", {}).get("sop")
    if not shards or not all(Path(s).is_file() for s in shards):
        return None
    import grain  # noqa: PLC0415  heavy: grain

    source = grain.sources.ArrayRecordDataSource(shards)
    counts: Counter = Counter()
    for i in range(len(source)):
        r = decode_record(source[i])
        w = np.asarray(r["masked_lm_weights"]) > 0
        counts.update(np.asarray(r["masked_lm_ids"])[w].tolist())
    total = sum(counts.values())
    return (max(counts.values()), total) if total else None


def mlm_majority(pre: Path) -> float | None:
    """The share of the commonest target token among the held-out masked positions (the MLM majority baseline)."""
    counts = mlm_target_counts(pre)
    return counts[0] / counts[1] if counts else None


def did_not_learn(value: float, majority: float | None) -> bool:
    return majority is not None and 100 * value <= 100 * majority + DID_NOT_LEARN_POINTS + 1e-9  # points, as printed
