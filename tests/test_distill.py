"""Distillation (`albert-jax distill`): the mixed loss against a hand computation, a real teacher -> student run
on real rt_sentiment sentences with different tokenizers, the cached teacher targets, and the errors."""
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from albert_jax.config import ConfigError
from albert_jax.configs.loader import apply_overrides, load_config
from albert_jax.runs import distill as distill_run
from albert_jax.runs import finetune as ft
from albert_jax.tasks.registry import make_task

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests/fixtures/sotu_sample.txt")
TINY = ["model.embedding_size=16", "model.num_attention_heads=2", "model.num_hidden_layers=2",
        "train.num_train_steps=6", "train.eval_every=3", "train.checkpoint_every=6", "train.log_every=3",
        "train.batch_size=16", "data.limit=64", "data.max_seq_length=32", "train.learning_rate=1e-3"]


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    """A real tiny fine-tuned teacher: not-shared, H=48, its own 300-piece tokenizer."""
    from albert_jax.data.tokenization import train_tokenizer

    base = tmp_path_factory.mktemp("teacher")
    train_tokenizer(str(base / "spm"), files=[FIXTURE], vocab_size=300, seed=0)
    c = load_config("experiments/finetune.py:task=rt_sentiment,init=random,scale=smoke")
    apply_overrides(c, TINY + [f"data.tokenizer={base / 'spm.model'}", "model.hidden_size=48",
                               "model.intermediate_size=96", "model.sharing=none"])
    ft.finetune(c, str(base / "run"))
    return base / "run" / "seed-0"


@pytest.fixture(scope="module")
def student_tok(tmp_path_factory):
    from albert_jax.data.tokenization import train_tokenizer

    base = tmp_path_factory.mktemp("student_tok")
    train_tokenizer(str(base / "spm"), files=[FIXTURE], vocab_size=200, seed=0)
    return base / "spm.model"


def student_config(teacher, tok, extra=(), **distill):
    arg = ",".join(f"{k}={v}" for k, v in {"teacher": teacher, **distill}.items())
    c = load_config(f"experiments/distill.py:task=rt_sentiment,init=random,scale=smoke,{arg}")
    apply_overrides(c, TINY + [f"data.tokenizer={tok}", "model.hidden_size=32", "model.intermediate_size=64",
                               "model.sharing=all", *extra])
    return c


def test_mixed_loss_matches_a_hand_computation():
    base = make_task("rt_sentiment")
    t_logits = np.array([[2.0, -1.0], [0.5, 0.3], [-1.0, 1.5]], np.float32)
    labels = np.array([0, 1, 1], np.int32)
    targets = distill_run.TeacherTargets(t_logits, np.zeros((3, 4), np.float32), labels, {})
    T, alpha = 3.0, 0.3
    task = distill_run.distill_task(base, targets, temperature=T, alpha=alpha, hidden_weight=0.0, student_hidden=4)
    s = np.array([[0.1, 0.2], [1.0, -2.0], [0.0, 0.7]], np.float32)
    batch = {"label": jnp.asarray(labels), "teacher_logits": jnp.asarray(t_logits)}
    sums = task.sums(jnp.asarray(s), batch)

    def softmax(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    p, q = softmax(t_logits / T), softmax(s / T)
    kd = T * T * np.sum(p * np.log(p / q))
    ce = -np.sum(np.log(softmax(s))[np.arange(3), labels])
    np.testing.assert_allclose(float(sums["kd_sum"]), kd, rtol=1e-5)
    np.testing.assert_allclose(float(sums["loss_sum"]), ce, rtol=1e-5)
    loss = task.loss(sums, task.counts(batch))
    np.testing.assert_allclose(float(loss), (alpha * kd + (1 - alpha) * ce) / 3, rtol=1e-5)
    # alpha=0 is plain fine-tuning: the base task's loss exactly.
    plain = distill_run.distill_task(base, targets, temperature=T, alpha=0.0, hidden_weight=0.0, student_hidden=4)
    np.testing.assert_allclose(float(plain.loss(plain.sums(jnp.asarray(s), batch), plain.counts(batch))),
                               float(base.loss(base.sums(jnp.asarray(s), batch), base.counts(batch))), rtol=1e-6)
    # A student that already equals the teacher gets no gradient from the soft term.
    g = jax.grad(lambda x: task.sums(x, batch)["kd_sum"])(jnp.asarray(t_logits))
    np.testing.assert_allclose(np.asarray(g), 0.0, atol=1e-6)
    # The base task is left as it was; evaluation batches (no teacher) score the hard labels only.
    assert "kd_loss" not in base.ratios and "kd_sum" not in task.sums(jnp.asarray(s), {"label": batch["label"]})


def test_teacher_into_an_all_shared_student_with_another_tokenizer(teacher, student_tok, tmp_path):
    # Equal widths (H=48), so the pooled vectors are matched too; the student is all-shared, the teacher not.
    c = student_config(teacher, student_tok, ["model.hidden_size=48", "model.intermediate_size=96"],
                       temperature=2.0, alpha=0.7, hidden_weight=0.5)
    wd = tmp_path / "student"
    r = distill_run.distill(c, str(wd))
    d = r["distill"]
    # The teacher scored the 64 training examples once, with its own tokenizer; the cache names it.
    info = json.loads((wd / "teacher" / "teacher.json").read_text())
    assert info["examples"] == 64 and info["task"] == "rt_sentiment" and info["hidden_size"] == 48
    z = np.load(wd / "teacher" / "teacher.npz")
    assert z["logits"].shape == (64, 2) and np.isfinite(z["logits"]).all() and z["logits"].std() > 0
    # The student trained on the mixed loss: each term is logged and the loss is their weighted sum.
    rows = [json.loads(x) for x in (wd / "seed-0" / "metrics.jsonl").read_text().splitlines()]
    train_rows = [x for x in rows if "kd_loss" in x]
    assert train_rows and all(x["hidden_loss"] > 0 for x in train_rows)
    for x in train_rows:
        np.testing.assert_allclose(x["loss"], 0.7 * x["kd_loss"] + 0.3 * x["task_loss"] + 0.5 * x["hidden_loss"],
                                   rtol=1e-4)
    # Share of the teacher = the student's median over the teacher's own recorded score.
    t_dev = json.loads((teacher / "results.json").read_text())["dev"]["accuracy"]
    s_dev = d["student_median"]["dev"]["accuracy"]
    assert d["share_of_teacher"]["dev"] == pytest.approx(s_dev / t_dev)
    assert d["student_params"] < d["teacher_params"]  # all-shared against not-shared, same widths
    assert d["speed"]["student_examples_per_s"] > 0 and d["speed"]["teacher_examples_per_s"] > 0
    # The student is a plain classifier for its task: it loads as any fine-tuning run.
    src = ft.resolve_init(str(wd / "seed-0"))
    assert src.task["name"] == "rt_sentiment" and src.task["distilled_from"] == info["teacher"]
    assert set(src.head()) == {"classifier"}
    # A rerun trains nothing and reuses the teacher's targets.
    before = (wd / "teacher" / "teacher.npz").stat().st_mtime_ns, (wd / "seed-0" / "results.json").stat().st_mtime_ns
    distill_run.distill(c, str(wd))
    assert ((wd / "teacher" / "teacher.npz").stat().st_mtime_ns,
            (wd / "seed-0" / "results.json").stat().st_mtime_ns) == before


def test_bad_teachers_and_settings_are_named(teacher, student_tok, tmp_path):
    with pytest.raises(distill_run.DistillError, match="several fine-tuning seeds"):
        distill_run.distill(student_config(teacher.parent, student_tok), str(tmp_path / "a"))
    with pytest.raises(distill_run.DistillError, match="not a fine-tuning run"):
        distill_run.distill(student_config(tmp_path, student_tok), str(tmp_path / "b"))
    c = student_config(teacher, student_tok)
    c.task = "wordnet_wic"
    with pytest.raises(distill_run.DistillError, match="fine-tuned on 'rt_sentiment', not on task 'wordnet_wic'"):
        distill_run.distill(c, str(tmp_path / "c"))
    # Targets cached for one teacher setting are not silently reused for another.
    t = distill_run.teacher_targets(str(teacher), "rt_sentiment", limit=64, cache_dir=str(tmp_path / "cache"))
    with pytest.raises(distill_run.DistillError, match="targets of another teacher"):
        distill_run.teacher_targets(str(teacher), "rt_sentiment", limit=48, cache_dir=str(tmp_path / "cache"))
    from albert_jax.data.tokenization import load_tokenizer
    tok = load_tokenizer(student_tok)
    # Hidden-state matching needs equal widths: no projection is learned.
    task = distill_run.distill_task(make_task("rt_sentiment"), t, temperature=2, alpha=0.5, hidden_weight=1.0,
                          student_hidden=32)
    with pytest.raises(distill_run.DistillError, match="hidden size 48 is not the student's 32"):
        task.prepare(tok, 32, limit=64)
    # Teacher targets in another order than the student's examples are refused, not trained on.
    shuffled = distill_run.TeacherTargets(t.logits[::-1], t.pooled[::-1], t.labels[::-1], t.info)
    task = distill_run.distill_task(make_task("rt_sentiment"), shuffled, temperature=2, alpha=0.5, hidden_weight=0,
                          student_hidden=32)
    if (t.labels != t.labels[::-1]).any():
        with pytest.raises(distill_run.DistillError, match="same examples in the same order"):
            task.prepare(tok, 32, limit=64)
    with pytest.raises(ConfigError, match="distill.alpha"):
        distill_run.distill(student_config(teacher, student_tok, alpha=1.5), str(tmp_path / "e"))
    with pytest.raises(ConfigError, match="distill.teacher is empty"):
        c = student_config(teacher, student_tok)
        c.distill.teacher = ""
        distill_run.distill(c, str(tmp_path / "f"))
    c = student_config(teacher, student_tok)
    c.head = "pabee"
    with pytest.raises(distill_run.DistillError, match="default head"):
        distill_run.distill(c, str(tmp_path / "g"))
    with pytest.raises(distill_run.DistillError, match="classification task"):
        distill_run.distill_task(make_task("pd_pos"), None, temperature=2, alpha=0.5, hidden_weight=0, student_hidden=4)
