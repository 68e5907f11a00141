"""Knowledge distillation into ALBERT, on the one training core (`albert-jax distill`, docs/compression.md).

A fine-tuned teacher (any fine-tuning run of ours: an unshared ALBERT, the real MiniLM BERT fine-tuned here, ...)
scores every training example once, with its own tokenizer, length and architecture; the student (usually an
all-shared ALBERT) then fine-tunes on the same examples against a mix of the teacher's soft targets at a
temperature T and the hard labels (Hinton et al. 2015):

    loss = alpha * T^2 * KL(softmax(t / T) || softmax(s / T)) + (1 - alpha) * CE(s, y)
           [+ hidden_weight * |pooled_s - pooled_t|^2 / H]

T^2 keeps the soft term's gradient on the scale of the hard one as T changes (Hinton's note).

Why the teacher runs once, offline, rather than beside the student in every step: the two need not share a
tokenizer (MiniLM's WordPiece against our SentencePiece), a classifier's per-example logits do not depend on how
the student tokenizes, and the teacher's forward is paid once instead of every step. The teacher is evaluated
deterministically (no dropout), as online distillation evaluates it too, so nothing is lost by caching.

Hidden-state matching (optional, `distill.hidden_weight > 0`) matches the student's pooled [CLS] vector (what
its classifier reads) to the teacher's, per example, by mean squared error. It needs equal hidden sizes: no
projection is learned, so a distilled student's checkpoint is exactly a plain fine-tuned classifier for its task
(exportable, quantizable, a valid `init=`).

The student's loss is a sum over examples divided by the example count, like every task's, so accumulation and
multi-device reduction stay exact (tasks/base.py). Its evaluation is the base task's (hard labels only).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import statistics
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from albert_jax.runs import validate
from albert_jax.tasks.base import TaskWrapper
from albert_jax.tasks.classification import ClassificationTask, load_records
from albert_jax.tasks.features import eval_batches
from albert_jax.tasks.registry import head_of, make_task
from albert_jax.training import rundir
from albert_jax.training import workdir as wdir

log = logging.getLogger("albert_jax.distill")


class DistillError(ValueError):
    """A teacher or a distillation setting that cannot be used; the message names it."""


@dataclasses.dataclass
class TeacherTargets:
    """The teacher's outputs on every training example, in the order the task reads its train split."""
    logits: np.ndarray  # [N, num_labels] float32
    pooled: np.ndarray  # [N, H_teacher] float32
    labels: np.ndarray  # [N] the labels the teacher saw: checks the student reads the same examples in order
    info: dict  # teacher path, step, task, max length, hidden size, its recorded dev/test scores


def split_features(task, tokenizer, max_len: int, split: str, limit: int = 0, training: bool = False):
    """One split of `task` featurized with `tokenizer` (the first `limit` examples when > 0): what `prepare`
    does for every split, for the one split a teacher or a timing needs."""
    return task.featurize(load_records(task.source, split, limit), tokenizer, max_len, split, training)


def _count(params) -> int:
    return int(sum(np.size(x) for x in jax.tree.leaves(params)))


def _teacher_scores(path: Path) -> dict:
    """The teacher run's own dev/test numbers (its results.json), for the student's share."""
    f = path / rundir.RESULTS
    if not f.is_file():
        return {}
    r = rundir.read_json(f, required=True)
    return {"dev": r.get("dev", {}), "test": r.get("test", {}), "best_step": r.get("best_step")}


def teacher_targets(teacher: str, task_name: str, limit: int = 0, batch_size: int = 64,
                    cache_dir: str | None = None) -> TeacherTargets:
    """Score the train split of `task_name` with the fine-tuned run `teacher` (one seed's workdir); cached in
    `cache_dir` (teacher.npz + teacher.json) and reused when the same teacher, step, task and limit made it."""
    from albert_jax.data import tokenization  # noqa: PLC0415  heavy: sentencepiece
    from albert_jax.runs.finetune import InitError, finetuned_params  # noqa: PLC0415  heavy: optax, sentencepiece
    from albert_jax.runs.pretrain import read_run_config  # noqa: PLC0415  heavy: optax, sentencepiece

    path = Path(teacher)
    if not (path / rundir.CONFIG).is_file():
        if rundir.seed_dirs(path):
            raise DistillError(f"distill.teacher={teacher!r} holds several fine-tuning seeds; point at one of "
                               f"them, e.g. {next(iter(rundir.seed_dirs(path).values()))}")
        raise DistillError(f"distill.teacher={teacher!r} is not a fine-tuning run of ours (no config.json): "
                           "fine-tune the teacher with `albert-jax finetune` first")
    run_cfg = read_run_config(str(path))
    theirs = run_cfg.get("task", {}).get("name", "")
    if theirs != task_name:
        raise DistillError(f"distill.teacher={teacher!r} was fine-tuned on {theirs or 'pretraining'!r}, not on "
                           f"task {task_name!r}: a teacher must be fine-tuned on the task it teaches")
    if head_of(run_cfg.get("task", {})) != "default":
        raise DistillError(f"distill.teacher={teacher!r} has the {run_cfg['task']['head']} head (one classifier "
                           "per layer): distil from a run with the default head")
    max_len = int(run_cfg["experiment"]["data"]["max_seq_length"])
    try:
        step, where, cfg, _, params = finetuned_params(path)
    except InitError as e:
        raise DistillError(f"distill.teacher: {e}") from None
    key = {"teacher": str(path.resolve()), "step": step, "where": where, "task": task_name, "limit": limit,
           "max_seq_length": max_len}
    if cache_dir:
        cached = _read_cache(Path(cache_dir), key)
        if cached is not None:
            return cached
    task = make_task(task_name)
    tok = tokenization.load_tokenizer(path)
    feats = split_features(task, tok, max_len, task.train_split, limit, training=True)
    model = task.model(cfg)
    forward = jax.jit(lambda p, b: model.apply({"params": p}, **task.model_inputs(b), deterministic=True,
                                               return_pooled=True))
    logits, pooled = np.zeros((len(feats), task.num_labels), np.float32), np.zeros((len(feats), cfg.hidden_size),
                                                                                    np.float32)
    log.info("teacher %s (step %d) scores %d training examples of %s", path, step, len(feats), task_name)
    for i, batch in enumerate(eval_batches(feats, batch_size, None)):
        if i and i % 25 == 0:
            log.info("teacher: %d/%d examples scored", i * batch_size, len(feats))
        lg, pl = forward(params, batch)
        real = batch["example_index"] >= 0
        logits[batch["example_index"][real]] = np.asarray(lg)[real]
        pooled[batch["example_index"][real]] = np.asarray(pl)[real]
    info = {**key, "hidden_size": cfg.hidden_size, "examples": len(feats), "scores": _teacher_scores(path),
            "param_count": _count(params)}
    out = TeacherTargets(logits, pooled, np.asarray(feats.arrays["label"]), info)
    if cache_dir and jax.process_index() == 0:
        _write_cache(Path(cache_dir), out)
    return out


def _read_cache(d: Path, key: dict) -> TeacherTargets | None:
    meta, arrays = d / "teacher.json", d / "teacher.npz"
    if not (meta.is_file() and arrays.is_file()):
        return None
    info = json.loads(meta.read_text(encoding="utf-8"))
    if {k: info.get(k) for k in key} != key:
        raise DistillError(f"{d} holds the targets of another teacher ({info.get('teacher')} step "
                           f"{info.get('step')}, limit {info.get('limit')}): use a new workdir for another teacher")
    z = np.load(arrays)
    if hashlib.sha256(z["logits"].tobytes()).hexdigest() != info.get("logits_sha256"):
        raise DistillError(f"{arrays} does not match its checksum in {meta} (a partial write?): delete both files "
                           "and rerun to score the train split again")
    log.info("teacher targets reused from %s", arrays)
    return TeacherTargets(z["logits"], z["pooled"], z["labels"], info)


def _write_cache(d: Path, t: TeacherTargets) -> None:
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / "teacher.tmp.npz"
    np.savez(tmp, logits=t.logits, pooled=t.pooled, labels=t.labels)
    tmp.replace(d / "teacher.npz")
    t.info["logits_sha256"] = hashlib.sha256(t.logits.tobytes()).hexdigest()
    (d / "teacher.json").write_text(json.dumps(t.info, indent=1), encoding="utf-8")


class DistilledTask(TaskWrapper):
    """The base task's data, model and evaluation, with the distillation loss on its training batches."""

    def __init__(self, base, targets: TeacherTargets, temperature: float, alpha: float, hidden_weight: float,
                 student_hidden: int):
        super().__init__(base)
        self.targets, self.temperature, self.alpha, self.hidden_weight = targets, temperature, alpha, hidden_weight
        self._student_hidden = student_hidden
        self.ratios = {**self.ratios, "kd_loss": ("kd_sum", "count")}
        if hidden_weight:
            self.ratios["hidden_loss"] = ("hidden_sum", "count")

    def prepare(self, tokenizer, max_len, limit=0, train_examples=0):
        if train_examples:  # the teacher's targets are for the whole train split (teacher_targets)
            raise DistillError(f"data.train_examples={train_examples}: distillation uses the whole train split; "
                               "set data.limit instead")
        data = self.base.prepare(tokenizer, max_len, limit)
        train = data.train.arrays
        if len(train["label"]) != len(self.targets.labels) or not np.array_equal(train["label"], self.targets.labels):
            raise DistillError(f"the teacher's train split ({len(self.targets.labels)} examples) is not the "
                               f"student's ({len(train['label'])}): both must read the same examples in the same "
                               "order (same task, same data.limit)")
        train["teacher_logits"] = self.targets.logits
        if self.hidden_weight:
            if self.targets.pooled.shape[1] != self._student_hidden:
                raise DistillError(f"distill.hidden_weight={self.hidden_weight}: the teacher's hidden size "
                                   f"{self.targets.pooled.shape[1]} is not the student's {self._student_hidden}; "
                                   "hidden-state matching needs equal sizes (set distill.hidden_weight=0)")
            train["teacher_pooled"] = self.targets.pooled
        data.summary["teacher"] = self.targets.info
        return data

    def apply(self, model, params, batch, rngs, deterministic):
        if "teacher_pooled" not in batch:
            return self.base.apply(model, params, batch, rngs, deterministic)
        return model.apply({"params": params}, **self.base.model_inputs(batch), deterministic=deterministic, rngs=rngs,
                           return_pooled=True)

    def sums(self, outputs, batch):
        logits = outputs[0] if isinstance(outputs, tuple) else outputs  # (logits, pooled) when matching hidden
        out = self.base.sums(logits, batch)  # the hard-label loss_sum and correct, as the base task computes them
        if "teacher_logits" not in batch:  # evaluation: the base task's metrics only
            return out
        w = batch.get("example_weight", jnp.ones(batch["label"].shape, jnp.float32)).astype(jnp.float32)
        s = self.base._logits(logits) / self.temperature
        t = batch["teacher_logits"].astype(jnp.float32) / self.temperature
        p_t = jax.nn.softmax(t, -1)
        kl = jnp.sum(p_t * (jax.nn.log_softmax(t, -1) - jax.nn.log_softmax(s, -1)), -1)
        out["kd_sum"] = jnp.sum(kl * w) * self.temperature ** 2
        if "teacher_pooled" in batch:
            diff = outputs[1].astype(jnp.float32) - batch["teacher_pooled"].astype(jnp.float32)
            out["hidden_sum"] = jnp.sum(jnp.mean(jnp.square(diff), -1) * w)
        return out

    def loss(self, sums, totals):
        n = totals["count"]
        total = self.alpha * sums["kd_sum"] / n + (1.0 - self.alpha) * sums["loss_sum"] / n
        if "hidden_sum" in sums:
            total = total + self.hidden_weight * sums["hidden_sum"] / n
        return total

    def describe(self):
        # The student is a plain classifier of its task: export, quantize and init= rebuild it by name
        # (registry.task_of_run), as any fine-tuning run; the teacher is recorded beside. "kind" stays what runs
        # recorded before this wrapper delegated: it is part of a run's identity, so they still resume.
        return {**self.base.describe(), "kind": f"Distilled{type(self.base).__name__}",
                "distilled_from": self.targets.info.get("teacher")}


def distill_task(base, targets: TeacherTargets, *, temperature: float, alpha: float, hidden_weight: float,
                 student_hidden: int):
    """The base task with the distillation loss (a copy; the base task is left as it was)."""
    if not isinstance(base, ClassificationTask) or base.regression:
        raise DistillError(f"task {base.name}: distillation here takes a classification task (soft targets over "
                           "labels); span, tagging, multiple-choice and regression tasks are not supported")
    if targets.logits.shape[1] != base.num_labels:
        raise DistillError(f"the teacher predicts {targets.logits.shape[1]} labels; task {base.name} has "
                           f"{base.num_labels}")
    return DistilledTask(base, targets, temperature, alpha, hidden_weight, student_hidden)


# ------------------------------------------------------------------------------------------------ the driver
def forward_speed(task, model_cfg, params, features, batch_size: int = 64, repeats: int = 3) -> float:
    """Inference examples per second of a classifier over one split (the median of `repeats` timed passes after
    one compiling pass): how the student's speed is reported beside the teacher's, in the same process."""
    model = task.model(model_cfg)
    forward = jax.jit(lambda p, b: model.apply({"params": p}, **task.model_inputs(b), deterministic=True))
    batches = list(eval_batches(features, batch_size, None))
    times = []
    for r in range(repeats + 1):
        t0 = time.perf_counter()
        for b in batches:
            out = forward(params, b)
        jax.block_until_ready(out)
        if r:
            times.append(time.perf_counter() - t0)
    return len(features) / statistics.median(times)


def _share(student: dict, teacher: dict, metric: str) -> float | None:
    s, t = student.get(metric), teacher.get(metric)
    return None if s is None or not t else s / t


def distill(config, workdir: str) -> dict:
    """`albert-jax distill`: score the train split with the teacher (once, cached in workdir/teacher), fine-tune
    the student on the mixed loss for every seed, then report its score as a share of the teacher's, and both
    models' size and dev-split inference speed."""
    from albert_jax.runs import finetune as ft  # noqa: PLC0415  heavy: optax, sentencepiece

    validate.validate(config, "finetune", workdir)
    if "distill" not in config:
        raise DistillError("the config has no distill section: use experiments/distill.py")
    wdir.claim_kind(workdir, "distill")  # before the teacher's targets are cached in it
    if config.head != "default":
        raise DistillError(f"head={config.head}: the student of a distillation has the default head (its soft "
                           "targets are for one classifier)")
    d = config.distill
    targets = teacher_targets(d.teacher, config.task, limit=config.data.limit,
                              cache_dir=os.path.join(workdir, "teacher"))
    summary = ft.finetune(config, workdir, lambda task, cfg: distill_task(
        task, targets, temperature=d.temperature, alpha=d.alpha, hidden_weight=d.hidden_weight,
        student_hidden=cfg.hidden_size), kind="distill")
    if summary.get("stopped"):
        return summary
    base = make_task(config.task)
    headline = base.headline
    teacher_scores = targets.info.get("scores", {})
    med = {part: {k: v["median"] for k, v in summary["summary"].get(part, {}).items()} for part in ("dev", "test")}
    share = {"dev": _share(med["dev"], teacher_scores.get("dev", {}), headline),
             "test": _share(med["test"], teacher_scores.get("test", {}), f"test/{headline}")}
    # Size and speed: the first seed's student beside the teacher, each on the dev split as it reads it (its own
    # tokenizer, which every run keeps in its workdir, and length), timed in this process.
    from albert_jax.data.tokenization import load_tokenizer  # noqa: PLC0415  heavy: sentencepiece

    s_dir = str(rundir.seed_dir(workdir, config.train.seed))
    _, _, s_cfg, _, s_params = ft.finetuned_params(s_dir)
    _, _, t_cfg, _, t_params = ft.finetuned_params(d.teacher)
    dev = base.dev_splits[0]
    s_dev = split_features(base, load_tokenizer(s_dir), config.data.max_seq_length, dev, config.data.limit)
    t_dev = split_features(base, load_tokenizer(d.teacher), int(targets.info["max_seq_length"]), dev,
                           config.data.limit)
    speed = {"student_examples_per_s": forward_speed(base, s_cfg, s_params, s_dev),
             "teacher_examples_per_s": forward_speed(base, t_cfg, t_params, t_dev)}
    speed["student_over_teacher"] = speed["student_examples_per_s"] / speed["teacher_examples_per_s"]
    summary["distill"] = {"teacher": targets.info, "temperature": d.temperature, "alpha": d.alpha,
                          "hidden_weight": d.hidden_weight, "headline": headline, "student_median": med,
                          "share_of_teacher": share, "student_params": _count(s_params),
                          "teacher_params": _count(t_params), "speed": speed}
    if jax.process_index() == 0:
        with open(os.path.join(workdir, rundir.RESULTS), "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1)
    return summary
