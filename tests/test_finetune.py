"""Fine-tuning on the one training core: init from a pretraining run, several seeds with the median, the best
dev checkpoint scored once on test, resume after SIGKILL, exact evaluation over padded batches, and the bad
inputs a user meets (unknown task, wrong init path, tokenizer mismatch, a head that does not fit)."""
import json
import os
import subprocess

import jax
import numpy as np
import pytest

from albert_jax.configs.loader import load_config
from albert_jax.configs.overrides import apply_overrides
from fault_main import command
from albert_jax.runs import finetune as ft
from albert_jax.tasks.features import Features, TaskDataError, encode_text
from albert_jax.tasks.registry import LOCAL, make_task
from albert_jax.training import state as st
from procs import user_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = ["train.num_train_steps=6", "train.eval_every=3", "train.checkpoint_every=3", "train.log_every=3",
        "train.batch_size=16", "data.limit=64", "data.max_seq_length=32"]


def _env():
    return user_env()


@pytest.fixture(scope="module")
def pretrained(tiny_pretrained):
    return tiny_pretrained  # conftest.py: 8 LAMB steps, 2 layers, on the smoke English data


def config_for(task, init, *overrides, scale="smoke"):
    c = load_config(f"experiments/finetune.py:task={task},init={init},scale={scale}")
    apply_overrides(c, [*TINY, *overrides])
    return c


def test_init_from_pretraining_run_copies_the_encoder(pretrained):
    from albert_jax.runs.pretrain import params_from_workdir

    task = make_task("rt_sentiment")
    src = ft.resolve_init(str(pretrained))
    assert src.kind == "workdir" and src.tokenizer is not None  # the run saved its own tokenizer
    cfg = ft.model_config(config_for("rt_sentiment", pretrained), src, src.tokenizer)
    params = ft.initial_params(task, cfg, src, seed=0, reset_head=False)
    encoder = params_from_workdir(str(pretrained))[2]["albert"]
    for a, b in zip(jax.tree.leaves(params["albert"]), jax.tree.leaves(encoder)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert set(params) == {"albert", "classifier"}  # the head is new; MLM/SOP heads are not carried over
    # The new head is initialised alone (training/state.py `fresh_params(only=...)`), with the values a whole new
    # model would give it.
    whole = st.fresh_params(task, cfg, jax.random.PRNGKey(0))
    for a, b in zip(jax.tree.leaves(params["classifier"]), jax.tree.leaves(whole["classifier"])):
        np.testing.assert_array_equal(a, b)


def test_two_seeds_best_checkpoint_test_once_and_rerun_reuses(pretrained, tmp_path):
    wd = tmp_path / "rt"
    cfg = config_for("rt_sentiment", pretrained, "data.buckets=auto")  # the cpu scale's default: lengths 16, 32
    cfg.num_seeds = 2
    out = ft.finetune(cfg, str(wd))
    assert [s["seed"] for s in out["seeds"]] == [0, 1]
    for s in out["seeds"]:
        assert (wd / f"seed-{s['seed']}" / "best").is_dir() and s["best_step"] in (3, 6)
        assert s["test"]["test/examples"] == 64 and 0.0 <= s["test"]["test/accuracy"] <= 1.0
        assert s["dev"]["accuracy"] == max(
            r["eval/accuracy"] for r in map(json.loads, open(wd / f"seed-{s['seed']}" / "metrics.jsonl"))
            if "eval/accuracy" in r)  # the kept checkpoint is the best dev evaluation
    acc = [s["dev"]["accuracy"] for s in out["seeds"]]
    assert out["summary"]["dev"]["accuracy"]["median"] == pytest.approx(float(np.median(acc)))
    assert json.loads((wd / "results.json").read_text())["summary"] == json.loads(json.dumps(out["summary"]))
    again = ft.finetune(cfg, str(wd))  # finished seeds are read back, not retrained
    assert again["seeds"] == out["seeds"]


def _wic_args(pretrained, *extra):
    args = ["--config", "experiments/finetune.py:task=wordnet_wic,init=" + str(pretrained) + ",scale=smoke"]
    for o in (*TINY, *extra):
        args += ["--set", o]
    return args


def _run_finetune(wd, args, kill_at=None):
    return subprocess.run([*command(kill_at), "finetune", "--workdir", str(wd), *args],
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def whole_wic(pretrained, tmp_path_factory):
    wd = tmp_path_factory.mktemp("whole_wic")
    p = _run_finetune(wd, _wic_args(pretrained))
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads((wd / "seed-0" / "results.json").read_text())


@pytest.mark.parametrize("checkpoint_every", [3, 6])
def test_sigkill_mid_finetune_resumes_to_the_same_result(pretrained, whole_wic, tmp_path, checkpoint_every):
    """Killed after step 4 of 6 (dev evaluated at 3). With a checkpoint at 3 the rerun resumes there; with none
    before the kill it starts again from step 0, and the best checkpoint from step 3 must be set aside first
    (saving best/3 again once failed with StepAlreadyExistsError). Either way the result is the whole run's."""
    args = _wic_args(pretrained, f"train.checkpoint_every={checkpoint_every}")
    wd = tmp_path / "killed"
    killed = _run_finetune(wd, args, kill_at=4)
    assert killed.returncode == -9
    assert (wd / "seed-0" / "best" / "3").is_dir()
    resumed = _run_finetune(wd, args)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    b = json.loads((wd / "seed-0" / "results.json").read_text())
    assert whole_wic["dev"] == b["dev"] and whole_wic["test"] == b["test"]
    assert whole_wic["best_step"] == b["best_step"]
    set_aside = sorted(n for n in os.listdir(wd / "seed-0" / "best") if not n.isdigit())
    assert set_aside == ([] if checkpoint_every == 3 else ["rolled-back-3"])


HEADLINE = {"rt_sentiment": "accuracy", "wordnet_wic": "accuracy", "hedge": "f1", "verse_paraphrase": "f1",
            "pd_pos": "accuracy", "wordnet_lemma_span": "f1", "next_sentence_choice": "accuracy"}


def test_every_local_task_kind_is_covered_below():
    # the latter: verse_paraphrase's kind
    assert set(HEADLINE) | {"zh_sentiment", "verse_paraphrase_near"} == set(LOCAL)


@pytest.mark.parametrize("name", HEADLINE)
def test_every_local_task_trains_and_reports_its_metric(pretrained, tmp_path, name):
    """Each real local task, from the same pretraining run, through the CLI's code path (one seed, 3 steps)."""
    extra = ["data.max_seq_length=96"] if name == "wordnet_lemma_span" else []  # glosses are long questions
    out = ft.finetune(config_for(name, pretrained, "train.num_train_steps=3", "train.eval_every=3", *extra),
                      str(tmp_path / name))
    value = out["summary"]["dev"][HEADLINE[name]]["median"]
    assert np.isfinite(value), (name, out["summary"])
    assert out["summary"]["test"], name  # scored once on test


def test_evaluation_counts_every_example_once_over_a_padded_last_batch():
    task = make_task("rt_sentiment")
    rng = np.random.default_rng(0)
    n = 37  # not a multiple of the batch: the last batch is padded
    arrays = {"input_ids": rng.integers(5, 50, (n, 8)).astype(np.int32), "input_mask": np.ones((n, 8), np.int32),
              "segment_ids": np.zeros((n, 8), np.int32), "label": rng.integers(0, 2, n).astype(np.int32)}
    feats = Features("validation", arrays)
    import jax.numpy as jnp

    from albert_jax.config import preset
    from albert_jax.tasks.features import eval_batches
    from albert_jax.training import loop
    from albert_jax.training import state as st
    from albert_jax.training.step import make_eval_step

    cfg = preset("tiny", num_hidden_layers=1, vocab_size=50, classifier_dropout_prob=0.0)
    model = task.model(cfg)
    params = st.fresh_params(task, cfg, jax.random.PRNGKey(0))
    eval_step = jax.jit(make_eval_step(task, model))
    out = loop.evaluate(eval_step, params, task, {"validation": lambda b, sh: eval_batches(feats, b, sh)}, 16, None)
    logits = model.apply({"params": params}, jnp.asarray(arrays["input_ids"]), jnp.asarray(arrays["input_mask"]))
    expected = float(np.mean(np.argmax(np.asarray(logits), -1) == arrays["label"]))
    assert out["examples"] == n and out["accuracy"] == pytest.approx(expected)


def test_truncation_is_counted_and_empty_splits_refused():
    class Tok:
        cls_id, sep_id, pad_id = 2, 3, 0

        def encode(self, text):
            return [5 + len(w) for w in text.split()]

    import collections
    stats = collections.Counter()
    row = encode_text(Tok(), "one two three four five six", "seven eight nine", 8, stats)
    assert stats["truncated"] == 1 and row["input_mask"].sum() == 8 and row["segment_ids"][-1] == 1
    with pytest.raises(TaskDataError, match="split 'test' is empty"):
        Features.stack("test", [])


def test_train_examples_is_one_fixed_sample_of_the_train_split_alone(pretrained):
    """data.train_examples: the same n training examples for every run (a pretrained model and its random-init twin
    learn from the same labels), in split order, drawn from the whole split; the dev split is untouched."""
    task, tok = make_task("rt_sentiment"), ft.resolve_init(str(pretrained)).tokenizer
    full = task.prepare(tok, 32, limit=64)
    a = task.prepare(tok, 32, limit=64, train_examples=20)
    b = task.prepare(tok, 32, limit=64, train_examples=20)
    assert len(a.train) == 20 and len(full.train) == 64
    np.testing.assert_array_equal(a.train.arrays["input_ids"], b.train.arrays["input_ids"])
    rows = [tuple(r) for r in full.train.arrays["input_ids"]]
    picked = [rows.index(tuple(r)) for r in a.train.arrays["input_ids"]]
    assert picked == sorted(picked) and picked[-1] > 20  # split order, and not simply the first 20
    for split, dev in a.dev.items():
        np.testing.assert_array_equal(dev.arrays["input_ids"], full.dev[split].arrays["input_ids"])
    with pytest.raises(TaskDataError, match=r"data.train_examples=65: .* only 64 examples"):
        task.prepare(tok, 32, limit=64, train_examples=65)


def test_bad_inputs_are_named(pretrained, tmp_path):
    with pytest.raises(ValueError, match="unknown task 'imdb'.*rt_sentiment"):
        make_task("imdb")
    with pytest.raises(ft.InitError, match="no such directory"):
        ft.resolve_init(str(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ft.InitError, match="neither a workdir of ours"):
        ft.resolve_init(str(tmp_path / "empty"))
    (tmp_path / "multi" / "seed-0").mkdir(parents=True)
    with pytest.raises(ft.InitError, match="several fine-tuning seeds"):
        ft.resolve_init(str(tmp_path / "multi"))
    with pytest.raises(ft.InitError, match="init=random needs data.tokenizer"):
        ft.finetune(config_for("rt_sentiment", "random"), str(tmp_path / "r"))
    with pytest.raises(ft.InitError, match="exceeds the model's max_position_embeddings"):
        ft.finetune(config_for("rt_sentiment", pretrained, "data.max_seq_length=512"), str(tmp_path / "long"))
    # A tokenizer the checkpoint was not trained with.
    from albert_jax.data.tokenization import train_tokenizer
    other = tmp_path / "other"
    train_tokenizer(str(other), files=[os.path.join(ROOT, "tests/fixtures/sotu_sample.txt")], vocab_size=300)
    with pytest.raises(ft.InitError, match="not the tokenizer"):
        ft.finetune(config_for("rt_sentiment", pretrained, f"data.tokenizer={other}.model"), str(tmp_path / "t"))
    # A head fine-tuned for 2 labels does not serve a 3-label task: that task starts a fresh head (no refusal: the
    # head would not be reused), and the log says so before any data is read.
    wd = tmp_path / "rt"
    ft.finetune(config_for("rt_sentiment", pretrained, "train.num_train_steps=3"), str(wd))
    src = ft.resolve_init(str(wd / "seed-0"))
    assert ft.plan_head(make_task("mnli"), src, reset_head=False) == "reset" and not src.head_reused
    assert ft.plan_head(make_task("rt_sentiment"), src, reset_head=False) == "reuse" and src.head_reused


def test_typed_model_fields_keep_the_rest_of_the_scale():
    c = load_config("experiments/pretrain.py:scale=cpu")
    apply_overrides(c, ["model.embedding_size=256", "model.sharing=ffn"])
    from albert_jax.config import model_from_section
    m = model_from_section(c.model, vocab_size=100)
    assert (m.embedding_size, m.sharing, m.hidden_size, m.num_hidden_layers) == (256, "ffn", 128, 4)
    for bad, msg in (("model.num_hidden_layers=true", "expected a value of type int"),
                     ("model.scan_layers=2.5", "expected a value of type bool"),
                     ("train.learning_rate=fast", "expected a value of type float")):
        with pytest.raises(ValueError, match=msg):
            apply_overrides(c, [bad])
    apply_overrides(c, ["model.embedding_projection=none", "train.num_train_steps=1e3"])
    assert c.model.embedding_projection is None and c.train.num_train_steps == 1000
    f = load_config(f"experiments/finetune.py:task=rt_sentiment,init={ROOT}")  # a loaded architecture
    with pytest.raises(ValueError, match="no field 'hidden_size'"):
        apply_overrides(f, ["model.hidden_size=64"])


def test_init_from_an_hf_classifier_uses_its_encoder_and_leaves_its_head(tmp_path, caplog):
    # A HuggingFace AlbertForSequenceClassification (ours exported, or the Hub's) as init=: its classifier is not
    # part of an encoder to start from; it used to be refused as "unexpected key(s): classifier.*".
    import torch
    import transformers

    from albert_jax.interop import hf

    torch.manual_seed(0)
    conf = transformers.AlbertConfig(vocab_size=120, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                                     num_labels=3)
    transformers.AlbertForSequenceClassification(conf).save_pretrained(tmp_path / "hf_cls")
    with caplog.at_level("INFO", logger="albert_jax.interop"):
        src = ft.resolve_init(str(tmp_path / "hf_cls"))
    assert src.kind == "hf_albert" and "classifier.bias, classifier.weight" in caplog.text
    enc = src.encoder()
    _, body = hf.load_hf_pretrained(tmp_path / "hf_cls", drop_task_head=True)
    assert "classifier" not in enc and set(enc) == set(body)
    cls_model = transformers.AlbertForSequenceClassification.from_pretrained(tmp_path / "hf_cls")
    word = cls_model.albert.embeddings.word_embeddings.weight.detach().numpy()
    np.testing.assert_array_equal(np.asarray(enc["embeddings"]["word_embeddings"]["embedding"]), word)
    # Its head serves a task of the same kind with as many labels (HF's generic LABEL_<i> names match any), and
    # not rt_sentiment (2 labels) nor with reset_head=true; the log says which and why.
    from albert_jax.tasks.classification import ClassificationTask
    from albert_jax.tasks.registry import make_task

    three = ClassificationTask("three_way", "three_way", ("sentence",), 3)
    three.label_names = ["a", "b", "c"]
    ft.adopt_hf_head(three, src, reset_head=False)
    params = ft.initial_params(three, src.model_cfg, src, 0, reset_head=False)
    head = cls_model.classifier
    np.testing.assert_array_equal(np.asarray(params["classifier"]["kernel"]), head.weight.detach().numpy().T)
    np.testing.assert_array_equal(np.asarray(params["classifier"]["bias"]), head.bias.detach().numpy())
    for task, reset, why in ((make_task("rt_sentiment"), False, "it has 3 labels, task rt_sentiment has 2"),
                             (three, True, None)):
        fresh = ft.resolve_init(str(tmp_path / "hf_cls"))
        caplog.clear()
        with caplog.at_level("WARNING", logger="albert_jax"):
            ft.adopt_hf_head(task, fresh, reset_head=reset)
        assert fresh.head is None and (why is None or why in caplog.text), caplog.text



def test_init_from_an_hf_bert_classifier_reuses_its_head_when_labels_match(tmp_path, caplog):
    """A HuggingFace BertForSequenceClassification as init=: its encoder is BERT-shaped ALBERT (nothing shared), and
    its classifier serves a task with as many labels; one with another label count does not, and the log says why."""
    import torch
    import transformers

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(95)]
    torch.manual_seed(0)
    for labels, name in ((2, "seq"), (3, "three")):
        conf = transformers.BertConfig(vocab_size=len(words), hidden_size=32, num_hidden_layers=2,
                                       num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                                       num_labels=labels)
        transformers.BertForSequenceClassification(conf).save_pretrained(tmp_path / name)
        (tmp_path / name / "vocab.txt").write_text("\n".join(words) + "\n")
    from albert_jax.tasks.registry import make_task

    src = ft.resolve_init(str(tmp_path / "seq"))
    assert src.kind == "hf_bert" and src.model_cfg.sharing == "none"
    task = make_task("rt_sentiment")
    ft.adopt_hf_head(task, src, reset_head=False)
    params = ft.initial_params(task, src.model_cfg, src, 0, reset_head=False)
    head = transformers.BertForSequenceClassification.from_pretrained(tmp_path / "seq").classifier
    np.testing.assert_array_equal(np.asarray(params["classifier"]["kernel"]), head.weight.detach().numpy().T)
    other = ft.resolve_init(str(tmp_path / "three"))
    with caplog.at_level("WARNING", logger="albert_jax"):
        ft.adopt_hf_head(make_task("rt_sentiment"), other, reset_head=False)
    assert other.head is None and "it has 3 labels, task rt_sentiment has 2" in caplog.text


@pytest.mark.parametrize("family", ["albert", "bert"])
def test_init_from_an_hf_token_classifier_without_a_pooler(tmp_path, family):
    """HF builds a *ForTokenClassification body without a pooler: as init= it gives its encoder (it was refused as
    "missing pooler" keys) and its classifier to a tagging task with as many tags."""
    import torch
    import transformers

    from albert_jax.tasks.tagging import TaggingTask

    torch.manual_seed(0)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(95)]
    kw = dict(vocab_size=len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
              max_position_embeddings=64, num_labels=4)
    if family == "albert":
        model = transformers.AlbertForTokenClassification(transformers.AlbertConfig(embedding_size=16, **kw))
    else:
        model = transformers.BertForTokenClassification(transformers.BertConfig(**kw))
    model.save_pretrained(tmp_path / "tok")
    (tmp_path / "tok" / "vocab.txt").write_text("\n".join(words) + "\n")
    if family == "albert":  # an ALBERT directory's tokenizer: a SentencePiece model of our own
        from albert_jax.data.tokenization import train_tokenizer
        train_tokenizer(tmp_path / "tok" / "spiece", sentences=[" ".join(words[5:])] * 50, vocab_size=len(words),
                        hard_vocab_limit=False, seed=0)
    src = ft.resolve_init(str(tmp_path / "tok"))
    assert "pooler" not in src.encoder()
    task = TaggingTask("four_tags", "four_tags", ("A", "B", "C", "D"))
    ft.adopt_hf_head(task, src, reset_head=False)
    params = ft.initial_params(task, src.model_cfg, src, 0, reset_head=False)
    np.testing.assert_array_equal(np.asarray(params["classifier"]["kernel"]),
                                  model.classifier.weight.detach().numpy().T)


def test_num_epochs_resolves_the_steps_before_training_and_records_them(pretrained, tmp_path, capsys):
    """train.num_epochs=0.5 of 64 training rows at batch 16: ceil(0.5 * 64 / 16) = 2 steps, in place of the
    scale's num_train_steps, recorded in config.json (the schedule the optimizer decays over) and results.json."""
    wd = tmp_path / "epochs"
    out = ft.finetune(config_for("rt_sentiment", pretrained, "train.num_epochs=0.5"), str(wd))
    assert out["schedule"] == {"num_epochs": 0.5, "train_rows": 64, "batch_size": 16, "num_train_steps": 2}
    seed = json.loads((wd / "seed-0" / "results.json").read_text())
    assert seed["schedule"] == out["schedule"]
    assert seed["stopped"] == {"step": 2, "reason": "num_train_steps", "num_train_steps": 2}
    assert json.loads((wd / "seed-0" / "config.json").read_text())["experiment"]["train"]["num_train_steps"] == 2
    steps = [r["step"] for r in map(json.loads, open(wd / "seed-0" / "metrics.jsonl"))]
    assert max(steps) == 2
    # `albert-jax evaluate` of one of our sets: its text column and `label` by name, scored as dev was
    from albert_jax.main import main
    from albert_jax.tasks.classification import load_records

    rows = load_records("rt_sentiment", "validation", 64)
    names = ["negative", "positive"]
    (tmp_path / "dev.tsv").write_text("sentence\tlabel\n" + "".join(
        f"{r['sentence'].decode().replace(chr(9), ' ')}\t{names[int(r['label'])]}\n" for r in rows))
    assert main(["evaluate", "--workdir", str(wd), "--input", str(tmp_path / "dev.tsv")]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["accuracy"] == seed["dev"]["accuracy"]


def test_early_stopping_stops_after_patience_evaluations_without_improvement(pretrained, tmp_path):
    """learning_rate=0: the dev metric never improves on the first evaluation (step 1), so with a patience of 2 the
    run stops at step 3 of 6, checkpointed there, and says so in results.json."""
    wd = tmp_path / "early"
    cfg = config_for("rt_sentiment", pretrained, "train.learning_rate=0.0", "train.eval_every=1",
                     "train.early_stopping_patience=2")
    out = ft.finetune(cfg, str(wd))
    (seed,) = out["seeds"]
    assert seed["stopped"] == {"step": 3, "reason": "early_stopping", "best_step": 1, "patience": 2,
                               "evaluations_without_improvement": 2}
    assert seed["best_step"] == 1 and out["schedule"] == {"num_train_steps": 6}
    evals = [r["step"] for r in map(json.loads, open(wd / "seed-0" / "metrics.jsonl")) if "eval/accuracy" in r]
    assert evals == [1, 2, 3]
    assert sorted(os.listdir(wd / "seed-0" / "checkpoints")) == ["3"]


def test_a_long_run_at_a_short_cadence_warns_once_naming_the_fields(caplog):
    """The cadence is in steps, as the scales set it: raising num_train_steps keeps it exactly, and a run that
    would evaluate more than 50 times (or log more than 2,000) says which field to set, in one line each."""
    from albert_jax.runs.validate import validate

    c = load_config("experiments/pretrain.py:scale=smoke")  # log every 2 steps, evaluate every 4
    c.train.num_train_steps = 3000
    warnings = validate(c, "pretrain")
    assert [w for w in warnings if "evaluates" in w] == [
        "train.eval_every=4 evaluates 750 times in train.num_train_steps=3000 steps (each reads the whole dev set): "
        "set train.eval_every, e.g. 150 for 20 evaluations"]
    c.train.num_train_steps = 5000
    assert any(w.startswith("train.log_every=2 logs 2500 times") for w in validate(c, "pretrain"))
    c = config_for("rt_sentiment", "random", "train.num_epochs=100", "train.early_stopping_patience=9")
    assert not [w for w in validate(c, "finetune") if "evaluates" in w or "patience" in w]  # steps not known yet
    c.train.num_epochs = 0.0
    assert any("train.early_stopping_patience=9 has no effect" in w for w in validate(c, "finetune"))
