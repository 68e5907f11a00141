"""The TFDS catalog tasks (GLUE, SQuAD v1.1/v2.0, RACE) offline, checked against the installed TFDS builders.

Nothing of the catalog can be downloaded here, so the tasks read mock data shaped by the REAL builder code:
`tfds.testing.mock_data` with a data source that (1) accepts only the split names the builder's own
`_split_generators` declares, (2) draws random examples from the builder's real feature spec (TFDS's
RandomFakeGenerator), (3) makes their content consistent where real data is (SQuAD answers are spans of the
context, a v2 unanswerable question has no answers, RACE has 4 options and letter answers, GLUE test labels
are -1), and (4) round-trips each example through the spec's serialize/deserialize, which validates it and
returns exactly what the array_record data source returns (bytes, python scalars, object arrays).
That validates field names, splits, shapes and the whole pipeline (prepare -> the fine-tuning driver ->
finalize), not scores. `finalize` of each task family is then checked against hand-worked numbers.
"""
import math
import zlib
from pathlib import Path
from unittest import mock

import jax
import numpy as np
import pytest
import tensorflow_datasets as tfds
from etils import epath
from tensorflow_datasets.core.features.feature import TensorInfo
from tensorflow_datasets.testing.mocking import RandomFakeGenerator

from albert_jax.configs.loader import load_config
from albert_jax.configs.overrides import apply_overrides
from albert_jax.data import builders
from albert_jax.data import tokenization
from albert_jax.runs import finetune as ft
from albert_jax.tasks.classification import ClassificationTask
from albert_jax.tasks.features import TaskDataError
from albert_jax.tasks.multiple_choice import MultipleChoiceTask, from_tfds_race
from albert_jax.tasks.protocol import protocol
from albert_jax.tasks.registry import CATALOG, make_task
from albert_jax.tasks.span_qa import SpanTask

tfds.display_progress_bar(False)

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).parent / "fixtures" / "sotu_sample.txt"
N = 16  # mock examples per split
# The task of each family that runs the whole fine-tuning driver; the others run prepare + one train/eval step.
DRIVER = ("cola", "stsb", "mnli", "squad_v1", "squad_v2", "race")
METRICS = {  # the dev metrics each task must report (the first dev split plain, the others prefixed)
    "cola": {"mcc", "accuracy", "loss"}, "sst2": {"accuracy", "loss"}, "mrpc": {"accuracy", "f1", "loss"},
    "qqp": {"accuracy", "f1", "loss"}, "stsb": {"pearson", "spearman", "loss"},
    "mnli": {"accuracy", "loss", "validation_mismatched/accuracy", "validation_mismatched/loss"},
    "qnli": {"accuracy", "loss"}, "rte": {"accuracy", "loss"}, "wnli": {"accuracy", "loss"},
    "squad_v1": {"exact_match", "f1"},
    "squad_v2": {"exact_match", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1", "best_f1",
                 "best_f1_threshold"},
    "race": {"accuracy", "loss"},
}


# ------------------------------------------------------------------------------------------- the real builders
def _sources(task) -> tuple[str, ...]:
    return tuple(task.source) if isinstance(task.source, (tuple, list)) else (task.source,)


def _builder(name: str):
    builders._import_catalog_module(name)  # what load_source does for lazily registered families (glue)
    return tfds.builder(name, data_dir="/nonexistent/tfds")  # builder code and feature spec only: no files


def real_splits(builder) -> set[str]:
    """The split names the installed builder's `_split_generators` declares (downloads faked, nothing read)."""
    fake = lambda urls: ({k: "/nonexistent" for k in urls} if isinstance(urls, dict)  # noqa: E731
                         else epath.Path("/nonexistent"))
    dl = mock.MagicMock()
    dl.download.side_effect = dl.download_and_extract.side_effect = fake
    gens = builder._split_generators(dl)
    return {str(n) for n in (gens if isinstance(gens, dict) else [g.name for g in gens])}


# ------------------------------------------------------------------------------------ consistent mock examples
_WORDS = FIXTURE.read_text(encoding="utf-8").split()


def _words(rng, lo, hi) -> str:
    start = int(rng.integers(0, len(_WORDS) - hi))
    return " ".join(_WORDS[start:start + int(rng.integers(lo, hi))])


def _span(rng, context: str) -> dict:
    """A 1-3 word answer span of `context` and its character start."""
    words = context.split(" ")
    i = int(rng.integers(0, len(words)))
    j = min(len(words), i + int(rng.integers(1, 4)))
    return {"text": " ".join(words[i:j]), "answer_start": len(" ".join(words[:i])) + (1 if i else 0)}


def _answers(spans) -> dict:
    return {"text": [s["text"] for s in spans], "answer_start": np.asarray([s["answer_start"] for s in spans],
                                                                           np.int32)}


def _set(ex: dict, key: str, value):
    assert key in ex, f"the real feature spec has no {key!r} (it has {sorted(ex)})"
    ex[key] = value


def _consistent(builder, split: str, i: int, ex: dict, rng) -> dict:
    """Give a random example of the real spec the content invariants of the real data."""
    family, config = builder.name, builder.builder_config.name
    if family == "glue":
        if split.startswith("test"):
            _set(ex, "label", np.float32(-1) if config == "stsb" else -1)  # GLUE's hidden test labels
        elif config == "stsb":
            _set(ex, "label", np.float32(5 * ex["label"]))  # scores 0..5
    elif family == "squad":
        context = _words(rng, 20, 70)
        _set(ex, "id", f"{config}-{split}-{i}")
        _set(ex, "context", context)
        spans = [_span(rng, context) for _ in range(1 if split == "train" else int(rng.integers(1, 4)))]
        if config == "v2.0":
            impossible = bool(ex["is_impossible"])  # the mock's random bool
            _set(ex, "answers", _answers([] if impossible else spans))
            _set(ex, "plausible_answers", _answers(spans if impossible else []))
        else:
            _set(ex, "answers", _answers(spans))
    elif family == "race":
        k = int(rng.integers(1, 4))
        _set(ex, "article", " ".join(_words(rng, 30, 120) for _ in range(2)))
        questions = [str(q) for q in ex["questions"][:k]]
        questions[0] = questions[0][:5] + " _ " + questions[0][5:]  # a cloze question: the option fills "_"
        _set(ex, "questions", questions)
        _set(ex, "options", [[_words(rng, 1, 6) for _ in range(4)] for _ in range(k)])
        _set(ex, "answers", ["ABCD"[int(c)] for c in rng.integers(0, 4, k)])
        _set(ex, "example_id", f"{config}-{split}-{i}.txt")
    return ex


def _serialize(features, ex) -> bytes:
    # TFDS serializes a sequence of sequences (RACE's options) through `TensorInfo.dtype`, a TensorFlow dtype,
    # which needs TensorFlow (not installed; test_race_preparation_needs_tensorflow): the NumPy dtype serves.
    with mock.patch.object(TensorInfo, "dtype", property(lambda self: self.np_dtype)):
        return features.serialize_example(ex)


def fake_data_source(self, split, decoders=None, deserialize_method=None, **kwargs):
    """Stands in for `DatasetBuilder.as_data_source` (see the module docstring)."""
    real = real_splits(self)
    if split not in real:
        raise ValueError(f"Unknown split {split!r}. Should be one of {sorted(real)}.")
    features = self.info.features
    gen = RandomFakeGenerator(features, N)
    rng = np.random.default_rng(zlib.crc32(f"{self.name}/{self.builder_config.name}/{split}".encode()))
    return [features.deserialize_example_np(_serialize(features, _consistent(self, split, i, gen[i], rng)))
            for i in range(N)]


@pytest.fixture
def catalog_mock():
    with tfds.testing.mock_data(num_examples=N, policy=tfds.testing.MockPolicy.USE_CODE,
                                as_data_source_fn=fake_data_source):
        yield


@pytest.fixture(scope="module")
def tokenizer_path(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("spm") / "sotu"
    tokenization.train_tokenizer(prefix, files=[FIXTURE], vocab_size=1000, seed=0)
    return Path(f"{prefix}.model")


@pytest.fixture(scope="module")
def tokenizer(tokenizer_path):
    return tokenization.load_tokenizer(tokenizer_path)


# ------------------------------------------------------------------------------------ registry vs the builders
@pytest.mark.parametrize("name", ["glue/sst2", "squad/v1.1", "race/middle"])
def test_a_catalog_builder_reaches_its_download_manager_without_the_network(name, tmp_path):
    """What `finetune task=sst2` does before its first download: the builder's code path (TFDS imports the
    undeclared importlib_resources there; requirements.txt pins it), its recorded checksums, a download manager."""
    builders._import_catalog_module(name.partition("/")[0])
    builder = tfds.builder(name, data_dir=str(tmp_path), file_format="array_record")
    assert type(builder).code_path is not None and type(builder).code_path.name.endswith(".py")
    assert type(builder).url_infos, name  # the checksums each download is verified against
    dm = builder._make_download_manager(download_dir=str(tmp_path / "downloads"),
                                        download_config=tfds.download.DownloadConfig())
    assert isinstance(dm, tfds.download.DownloadManager)


def test_catalog_has_the_twelve_tasks():
    assert sorted(CATALOG) == sorted(METRICS)


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_registry_matches_the_tfds_builder(name):
    task = make_task(name)
    for source in _sources(task):
        b = _builder(source)
        splits, features = real_splits(b), b.info.features
        wanted = {task.train_split, *task.dev_splits, *task.test_splits}
        assert wanted <= splits, f"{source}: {sorted(wanted - splits)} not among {sorted(splits)}"
        if isinstance(task, ClassificationTask):
            assert set(task.text_keys) <= set(features), (task.text_keys, sorted(features))
            label = features[task.label_key]
            if task.regression:
                assert not isinstance(label, tfds.features.ClassLabel) and label.np_dtype == np.float32
            else:
                assert isinstance(label, tfds.features.ClassLabel) and label.num_classes == task.num_labels
        elif isinstance(task, SpanTask):
            assert {"id", "question", "context", "answers"} <= set(features)
            assert ("is_impossible" in features) == (task.version == 2)
        else:
            assert isinstance(task, MultipleChoiceTask)
            assert {"article", "questions", "options", "answers"} <= set(features)
    paper = load_config(f"{ROOT}/experiments/finetune.py:task={name},init=random,scale=paper")
    assert paper.data.max_seq_length == protocol(task.table14).max_seq_length  # its Table 14 row exists
    # GLUE's and SQuAD's test labels are hidden (or absent): they report dev; RACE's test labels are public.
    if name == "mnli":
        assert task.dev_splits == ("validation_matched", "validation_mismatched")
    elif name == "race":
        assert task.dev_splits == ("dev",) and task.test_splits == ("test",)
    else:
        assert task.dev_splits == ("validation",) and task.test_splits == ()


# -------------------------------------------------------------------------------------------- prepare under mock
@pytest.mark.parametrize("name", sorted(CATALOG))
def test_prepare_under_mock_data(name, tokenizer, catalog_mock):
    task = make_task(name)
    data = task.prepare(tokenizer, max_len=64, limit=N)
    assert set(data.dev) == set(task.dev_splits) and set(data.test) == set(task.test_splits)
    for f in [data.train, *data.dev.values(), *data.test.values()]:
        assert len(f) >= N and f.arrays["input_ids"].shape[-1] == 64, (f.split, len(f))
        assert f.arrays["input_ids"].dtype == np.int32 and (f.arrays["input_mask"].sum(-1) > 0).all()
        assert f.arrays["input_ids"].max() < tokenizer.vocab_size
    if isinstance(task, ClassificationTask):
        assert len(data.train) == N
        labels = data.train.arrays["label"]
        if task.regression:
            assert labels.dtype == np.float32 and 0 <= labels.min() and labels.max() <= 5
        else:
            assert labels.dtype == np.int32 and set(labels.tolist()) <= set(range(task.num_labels))
    elif isinstance(task, SpanTask):
        train = data.train
        assert train.stats.get("answer_not_found", 0) == 0 and train.stats["examples"] == N
        found = train.arrays["is_impossible"] == 0
        assert found.any()  # some windows hold their answer: the span targets are real positions
        assert (train.arrays["start_position"][found] <= train.arrays["end_position"][found]).all()
        assert (train.arrays["start_position"][~found] == 0).all()
        for f in [train, *data.dev.values()]:
            assert len(f.answers) == N and len(f.meta) == len(f)
        if task.version == 2:
            dev = data.dev["validation"]
            assert any(a == [""] for a in dev.answers.values()) and any(a != [""] for a in dev.answers.values())
    else:
        assert data.train.arrays["input_ids"].shape[1:] == (4, 64)  # one row per (article, question) x 4 options
        assert len(data.train) > N  # each article expands into its questions
        assert set(data.train.arrays["label"].tolist()) <= {0, 1, 2, 3}
        assert data.train.stats.get("qa_truncated", 0) == 0 and data.train.stats["truncated"] > 0


def test_race_preparation_needs_tensorflow():
    """Found here: TFDS writes RACE's `options` (a sequence of sequences of text) through TensorFlow, so
    preparing race/* (download_and_prepare, even to array_record) fails without TensorFlow installed, and works
    with it (`make test` installs requirements-tf.txt, so under it the second half runs)."""
    features = _builder("race/middle").info.features
    ex = _consistent(_builder("race/middle"), "train", 0, RandomFakeGenerator(features, 1)[0],
                     np.random.default_rng(0))
    try:
        import tensorflow  # noqa: F401
    except ImportError:
        with pytest.raises(ModuleNotFoundError, match="tensorflow"):
            features.serialize_example(ex)
        return
    decoded = features.deserialize_example_np(features.serialize_example(ex))  # no NumPy-dtype stand-in needed
    assert [o.decode() if isinstance(o, bytes) else o for o in decoded["options"][0]] == \
        [o.decode() if isinstance(o, bytes) else o for o in ex["options"][0]]


def test_mock_rejects_a_split_the_builder_lacks(tokenizer, catalog_mock):
    # The old RACE/MNLI mistakes: "validation" does not exist there; the error names the task data.
    with pytest.raises(TaskDataError, match=r"race/middle: no split 'validation'"):
        MultipleChoiceTask("race", ("race/middle", "race/high"), adapter=from_tfds_race).prepare(tokenizer, 64, N)
    with pytest.raises(TaskDataError, match=r"glue/mnli: no split 'validation'"):
        ClassificationTask("mnli", "glue/mnli", ("premise", "hypothesis"), 3).prepare(tokenizer, 64, N)


def test_glue_test_split_with_hidden_labels(tokenizer, catalog_mock):
    """If a GLUE test split is read (labels -1), it featurizes and scores nothing, only loss and examples."""
    task = ClassificationTask("sst2_t", "glue/sst2", ("sentence",), 2, dev_splits=("validation",),
                              test_splits=("test",))
    data = task.prepare(tokenizer, 64, N)
    assert (data.test["test"].arrays["label"] == -1).all()
    preds = {"pred": np.zeros(N, np.int32), "label": data.test["test"].arrays["label"],
             "index": np.arange(N, dtype=np.int32)}
    out = task.finalize({"loss_sum": 8.0, "count": float(N)}, preds, "test")
    assert out == {"test/loss": 0.5, "test/examples": N}


def test_plain_random_mock_data_explains_what_it_cannot_train(tokenizer):
    """Under TFDS's plain mock data SQuAD answers are random strings, never in the context: the task says so."""
    with tfds.testing.mock_data(num_examples=4, policy=tfds.testing.MockPolicy.USE_CODE):
        glue = make_task("rte").prepare(tokenizer, 64, 4)  # GLUE's random examples are valid as they are
        assert len(glue.train) == 4
        with pytest.raises(TaskDataError, match=r"squad_v1.*'train'.*no features.*answer_not_found=4"):
            make_task("squad_v1").prepare(tokenizer, 64, 4)
        with pytest.raises(TaskDataError, match=r"RACE answer .* is not one of A, B, C, D"):
            make_task("race").prepare(tokenizer, 64, 4)


# ------------------------------------------------------------------------------------------- the real driver
TINY = ["model.num_hidden_layers=1", "data.max_seq_length=64", "train.num_train_steps=2", "train.eval_every=2",
        "train.checkpoint_every=2", "train.log_every=2", f"data.limit={N}", "train.batch_size=8"]


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and (math.isfinite(v) or v == float("-inf"))


@pytest.mark.parametrize("name", DRIVER)
def test_finetune_driver_under_mock_data(name, tokenizer_path, catalog_mock, tmp_path):
    config = load_config(f"{ROOT}/experiments/finetune.py:task={name},init=random,scale=smoke")
    apply_overrides(config, [*TINY, f"data.tokenizer={tokenizer_path}"])
    out = ft.finetune(config, str(tmp_path))
    (seed,) = out["seeds"]
    dev = seed["dev"]
    assert METRICS[name] <= set(dev), sorted(dev)
    assert all(_finite(dev[k]) for k in METRICS[name]), dev
    assert seed["best_step"] == 2 and (tmp_path / "seed-0" / "best").is_dir()
    task = make_task(name)
    assert seed["select"] == task.headline and math.isfinite(dev[task.headline])
    if task.test_splits:  # RACE: scored once, from the best checkpoint
        assert set(seed["test"]) >= {f"test/{k}" for k in METRICS[name]}
        assert all(_finite(seed["test"][f"test/{k}"]) for k in METRICS[name])
    else:
        assert seed["test"] == {}
    for k in METRICS[name]:  # the summary over seeds covers every metric
        assert out["summary"]["dev"][k]["median"] == dev[k]
    assert out["data"]["examples"]["train"] >= N
    if name == "squad_v2":
        assert dev["HasAns_total"] + dev["NoAns_total"] == dev["total"] == N
        assert dev["f1"] - 1e-9 <= dev["best_f1"] <= 100  # the threshold search includes threshold 0
    if name in ("squad_v1", "squad_v2"):
        assert dev["total"] == N and 0 <= dev["f1"] <= 100 and dev["exact_match"] <= dev["f1"] + 1e-9


@pytest.fixture(scope="module")
def binary_steps(tokenizer):
    """One jitted train step and eval step for a binary GLUE task, compiled once: the steps of sst2, mrpc, qqp,
    qnli, rte and wnli are the same computation (ClassificationTask, 2 labels, 64 tokens), only finalize differs."""
    from albert_jax import sharding as shd
    from albert_jax.config import model_from_section
    from albert_jax.training import optim
    from albert_jax.training import state as st
    from albert_jax.training import step as ts

    task = make_task("sst2")
    config = load_config(f"{ROOT}/experiments/finetune.py:task=sst2,init=random,scale=smoke")
    apply_overrides(config, TINY)
    cfg = model_from_section(config.model, vocab_size=tokenizer.vocab_size)
    mesh = shd.make_mesh(-1, 1, 1)
    boxed = st.abstract_params(task, cfg)
    tx = optim.make_optimizer("adamw", 1e-4, 2, 1, weight_decay=0.01,
                              stacked_axes_fn=optim.stacked_axes_from_boxed(boxed))
    _, shardings = st.state_shardings(tx, mesh, boxed)
    train_step, eval_step = ts.jit_steps(task, cfg, tx, mesh, shardings)
    host = jax.device_get(st.init_state(task, cfg, tx, mesh, jax.random.PRNGKey(0), shardings))
    init = lambda: jax.device_put(host, shardings)  # noqa: E731  (a fresh copy: the train step donates it)
    return task, init, train_step, eval_step, shd.batch_sharding(mesh)


@pytest.mark.parametrize("name", sorted(set(CATALOG) - set(DRIVER)))
def test_one_train_and_eval_step_under_mock_data(name, tokenizer, catalog_mock, binary_steps):
    """The GLUE tasks the driver test does not run: one jitted train step and a full evaluation of each."""
    from albert_jax.training import loop

    ref, init, train_step, eval_step, batch_sh = binary_steps
    task = make_task(name)
    assert type(task) is type(ref) and (task.num_labels, task.regression) == (ref.num_labels, ref.regression)
    data = task.prepare(tokenizer, max_len=64, limit=N)
    state = init()
    state, m = train_step(state, next(data.train_iterator(8, batch_sh, seed=0)), jax.random.PRNGKey(1))
    assert math.isfinite(float(m["loss"])) and float(m["count"]) == 8
    out = loop.evaluate(eval_step, state.params, task, data.eval_sets, 8, batch_sh)
    assert set(out) == METRICS[name] | {"examples"} and out["examples"] == N
    assert all(math.isfinite(v) for v in out.values()), out


# ---------------------------------------------------------------------------------- finalize, hand-worked
def _preds(pred, label, pad=2):
    """Eval predictions as the loop hands them over: real rows, then `pad` padding rows (index -1)."""
    pred, label = np.asarray(pred), np.asarray(label)
    fill = lambda x: np.concatenate([x, np.full(pad, x[0] if len(x) else 0, x.dtype)])  # noqa: E731
    return {"pred": fill(pred), "label": fill(label),
            "index": np.concatenate([np.arange(len(pred)), np.full(pad, -1)]).astype(np.int32)}


def test_cola_finalize_mcc():
    task = make_task("cola")
    # tp = 2 (rows 0, 1), fn = 1 (row 2), tn = 2 (rows 3, 4), fp = 1 (row 5):
    # MCC = (2*2 - 1*1) / sqrt(3 * 3 * 3 * 3) = 3 / 9
    out = task.finalize({"loss_sum": 3.0, "count": 6.0}, _preds([1, 1, 0, 0, 0, 1], [1, 1, 1, 0, 0, 0]),
                        "validation")
    assert out == {"loss": 0.5, "examples": 6, "mcc": pytest.approx(1 / 3), "accuracy": pytest.approx(4 / 6)}
    assert task.headline == "mcc"


def test_mrpc_finalize_f1_of_the_positive_class():
    # tp = 2, fp = 1, fn = 1: F1 = 2*2 / (2*2 + 1 + 1) = 2/3; accuracy 3/5
    out = make_task("mrpc").finalize({"loss_sum": 1.0, "count": 5.0},
                                     _preds([1, 1, 1, 0, 0], [1, 1, 0, 1, 0]), "validation")
    assert out["f1"] == pytest.approx(2 / 3) and out["accuracy"] == pytest.approx(0.6) and out["examples"] == 5
    assert make_task("qqp").finalize({"loss_sum": 1.0, "count": 5.0}, _preds([0] * 5, [1, 1, 0, 1, 0]),
                                     "validation")["f1"] == 0.0  # no true positive


def test_stsb_finalize_pearson_and_spearman():
    task = make_task("stsb")
    assert task.regression and task.num_labels == 1 and task.headline == "pearson"
    pred, label = [1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0]
    # Pearson: centred x = (-1.5, -.5, .5, 1.5), y = (-1.5, .5, -.5, 1.5): sum xy = 2.25 - .25 - .25 + 2.25 = 4,
    # sum x^2 = sum y^2 = 5 -> r = 0.8; the ranks equal the values, so Spearman is 0.8 too.
    out = task.finalize({"loss_sum": 2.0, "count": 4.0}, _preds(pred, label), "validation")
    assert out == {"loss": 0.5, "examples": 4, "pearson": pytest.approx(0.8), "spearman": pytest.approx(0.8)}
    # Spearman only sees ranks: a monotone but non-linear prediction is perfect for it, not for Pearson.
    out = task.finalize({"loss_sum": 0.0, "count": 4.0}, _preds([1.0, 2.0, 3.0, 100.0], [0.0, 1.0, 2.0, 3.0]),
                        "validation")
    assert out["spearman"] == pytest.approx(1.0) and out["pearson"] < 0.9
    # STS-B's hidden test scores (-1 everywhere) are not scored
    assert task.finalize({"loss_sum": 4.0, "count": 4.0}, _preds(pred, [-1.0] * 4), "test") == \
        {"test/loss": 1.0, "test/examples": 4}


def test_mnli_finalize_prefixes_the_mismatched_split():
    task = make_task("mnli")
    preds = _preds([0, 1, 2, 2], [0, 1, 1, 2])
    matched = task.finalize({"loss_sum": 2.0, "count": 4.0}, preds, "validation_matched")
    mismatched = task.finalize({"loss_sum": 2.0, "count": 4.0}, preds, "validation_mismatched")
    assert matched == {"loss": 0.5, "examples": 4, "accuracy": 0.75}
    assert mismatched == {"validation_mismatched/loss": 0.5, "validation_mismatched/examples": 4,
                          "validation_mismatched/accuracy": 0.75}


def test_hidden_label_split_returns_no_accuracy():
    task = make_task("rte")
    out = task.finalize({"loss_sum": 1.0, "count": 3.0}, _preds([0, 1, 1], [-1, -1, -1]), "test")
    assert out == {"test/loss": pytest.approx(1 / 3), "test/examples": 3}


def test_race_finalize_accuracy():
    task = make_task("race")
    out = task.finalize({"loss_sum": 5.0, "count": 5.0, "correct": 2.0}, _preds([0, 3, 2, 1, 0], [0, 3, 1, 2, 3]),
                        "dev")
    assert out == {"accuracy": 0.4, "loss": 1.0, "examples": 5}
    assert task.finalize({"loss_sum": 5.0, "count": 5.0}, _preds([0] * 5, [0] * 5), "test")["test/accuracy"] == 1.0


def _span_features(task, split, examples, tokenizer):
    """Eval features of hand-made SQuAD examples (one window each at max_len 64)."""
    return task.featurize(examples, tokenizer, 64, split, training=False)


class _WordTokenizer:
    """Every whitespace word is one id: token positions are word positions, so logits can be hand-placed."""
    cls_id, sep_id, pad_id, vocab_size = 2, 3, 0, 100

    def encode(self, text):
        return [10 + (sum(map(ord, w)) % 80) for w in text.split()]


def _logits(length, at):
    x = np.full(length, -10.0, np.float32)
    x[at] = 10.0
    return x


def test_squad_v1_finalize_exact_and_f1():
    task = make_task("squad_v1")
    tok = _WordTokenizer()
    ex = [{"id": b"q1", "question": "who", "context": "the big red dog ran",
           "answers": {"text": np.asarray([b"big red dog", b"red dog"], object), "answer_start": np.asarray([4, 8])}},
          {"id": b"q2", "question": "what", "context": "paris is in france",
           "answers": {"text": np.asarray([b"France"], object), "answer_start": np.asarray([12])}}]
    feats = _span_features(task, "validation", ex, tok)
    offset = 1 + 1 + 1  # [CLS] question(1 word) [SEP]: context word w sits at position offset + w
    # q1: predict "red dog ran" (words 2..4): EM 0; F1 vs "red dog": p = 2/3, r = 1 -> 0.8 (best gold)
    # q2: predict "france" (word 3): EM 1, F1 1.  Means: EM 50, F1 90.
    start = np.stack([_logits(64, offset + 2), _logits(64, offset + 3)])
    end = np.stack([_logits(64, offset + 4), _logits(64, offset + 3)])
    out = task.finalize({"count": 2.0}, {"start_logits": start, "end_logits": end,
                                         "index": np.arange(2, dtype=np.int32)}, "validation", features=feats)
    assert len(feats) == 2 and feats.answers == {"q1": ["big red dog", "red dog"], "q2": ["France"]}
    assert out == {"exact_match": pytest.approx(50.0), "f1": pytest.approx(90.0), "total": 2.0}


def test_squad_v2_finalize_null_threshold_and_has_no_ans():
    task = make_task("squad_v2")
    tok = _WordTokenizer()
    none = {"text": np.asarray([], object), "answer_start": np.asarray([], np.int32)}
    ex = [{"id": "a1", "question": "who", "context": "the big red dog ran", "is_impossible": False,
           "answers": {"text": np.asarray([b"red dog"], object), "answer_start": np.asarray([8])}},
          {"id": "a2", "question": "where", "context": "paris is in france", "is_impossible": False,
           "answers": {"text": np.asarray([b"paris"], object), "answer_start": np.asarray([0])}},
          {"id": "n1", "question": "when", "context": "a cat sat", "is_impossible": True, "answers": none},
          {"id": "n2", "question": "why", "context": "it rained today", "is_impossible": True, "answers": none}]
    feats = _span_features(task, "validation", ex, tok)
    k = 5  # the v2 head's top starts
    off = 3
    start = np.stack([_logits(64, off + w) for w in (2, 0, 1, 0)])
    end = np.zeros((4, k, 64), np.float32)
    for r, w in enumerate((3, 0, 2, 1)):
        end[r, :] = _logits(64, off + w)
    tops = np.tile(np.asarray([[off + 2], [off + 0], [off + 1], [off + 0]]), (1, k))
    # null-score diffs (the classifier logit; > threshold 0 means "no answer"):
    # a1 -1 -> "red dog" (right); a2 +1 -> "" (wrong); n1 -2 -> "cat sat" (wrong); n2 +2 -> "" (right).
    cls = np.asarray([-1.0, 1.0, -2.0, 2.0], np.float32)
    out = task.finalize({"count": 4.0}, {"start_logits": start, "end_logits": end, "top_starts": tops,
                                         "cls_logits": cls, "index": np.arange(4, dtype=np.int32)}, "validation",
                       features=feats)
    assert out["exact_match"] == pytest.approx(50.0) and out["f1"] == pytest.approx(50.0)
    assert out["HasAns_exact"] == pytest.approx(50.0) and out["HasAns_total"] == 2
    assert out["NoAns_exact"] == pytest.approx(50.0) and out["NoAns_total"] == 2
    # Best threshold: by diff n1(-2) a1(-1) a2(+1) n2(+2). All null: 2/4; answer n1: 1/4; +a1: 2/4; +a2: 3/4;
    # +n2: 2/4 -> best 75 at threshold +1.
    assert out["best_f1"] == pytest.approx(75.0) and out["best_f1_threshold"] == 1.0


def test_from_tfds_squad_v2_unanswerable_has_no_gold_answers():
    from albert_jax.tasks.span_qa import from_tfds_squad

    r = {"id": b"x", "question": b"q", "context": b"c d", "is_impossible": True,
         "answers": {"text": np.asarray([], object), "answer_start": np.asarray([], np.int32)}}
    assert from_tfds_squad(r)["is_impossible"] and from_tfds_squad(r)["answers"] == []


def test_squad_v2_trains_on_the_gold_start_without_dropout():
    """Found here: with every dropout 0 the train step is deterministic (no rngs), and the v2 task took that for
    evaluation: the head got no gold start, returned top-k end logits [N, k, L], and the loss failed. A training
    batch is now the one without example_weight, whatever the dropout."""
    from flax import linen as nn

    from albert_jax.config import model_from_section
    from albert_jax.training import state as st

    task = make_task("squad_v2")
    config = load_config(f"{ROOT}/experiments/finetune.py:task=squad_v2,init=random,scale=smoke")
    apply_overrides(config, [*TINY, "model.classifier_dropout_prob=0.0"])
    cfg = model_from_section(config.model, vocab_size=100)
    model, params = task.model(cfg), nn.unbox(st.abstract_params(task, cfg))  # shapes only: traced, not run
    z = np.zeros((2, 16), np.int32)
    train = {"input_ids": z + 5, "input_mask": z + 1, "segment_ids": z, "p_mask": z, "is_impossible": z[:, 0],
             "start_position": z[:, 0] + 3, "end_position": z[:, 0] + 4}
    evaluation = {**train, "example_weight": np.ones(2, np.float32), "example_index": np.arange(2, dtype=np.int32)}
    def train_loss(p):  # what the deterministic train step computes
        return task.sums(task.apply(model, p, train, None, True), train)["loss_sum"]

    assert jax.eval_shape(train_loss, params).shape == ()
    assert jax.eval_shape(lambda p: task.apply(model, p, train, None, True), params)["end_logits"].shape == (2, 16)
    ev = jax.eval_shape(lambda p: task.eval_outputs(task.apply(model, p, evaluation, None, True), evaluation)[1],
                        params)
    assert ev["end_logits"].ndim == 3 and ev["top_starts"].shape[0] == 2
