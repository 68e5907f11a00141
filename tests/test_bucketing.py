"""Length bucketing (albert_jax/data/bucketing.py) is exact: a batch cut to a shorter padded length gives the
full-length batch's losses, gradients and metrics, on real downstream sentences; and it really cuts."""
import jax
import numpy as np
import optax
import pytest

from albert_jax.config import AlbertConfig
from albert_jax.configs.loader import load_config
from albert_jax.configs.overrides import apply_overrides
from albert_jax.data import bucketing
from albert_jax.data.tokenization import load_tokenizer
from albert_jax.runs.validate import ConfigError, validate
from albert_jax.tasks.registry import make_task
from albert_jax.training import loop, step, workdir
from albert_jax.training.state import TrainState, fresh_params

MAX_LEN = 128


def test_bucket_lengths_specs_and_errors():
    assert bucketing.bucket_lengths(128, "auto") == (16, 32, 48, 64, 80, 96, 112, 128)
    assert bucketing.bucket_lengths(512, "auto") == (64, 128, 192, 256, 320, 384, 448, 512)
    assert bucketing.bucket_lengths(100, "auto") == (16, 32, 48, 64, 80, 96, 100)
    assert bucketing.bucket_lengths(128, "off") == (128,)
    assert bucketing.bucket_lengths(128, "96, 32") == (32, 96, 128)
    for bad in ("short", "0,64", "64,256"):
        with pytest.raises(bucketing.BucketError, match="data.buckets"):
            bucketing.bucket_lengths(128, bad)


def test_row_lengths_of_rows_and_of_choices():
    mask = np.array([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(bucketing.row_lengths(mask), [3, 1, 0])
    choices = np.array([[[1, 1, 0, 0], [1, 1, 1, 1]], [[1, 0, 0, 0], [1, 1, 0, 0]]])  # [N=2, C=2, L=4]
    np.testing.assert_array_equal(bucketing.row_lengths(choices), [4, 2])
    assert [bucketing.fit(n, (16, 32, 64)) for n in (1, 16, 17, 64)] == [16, 16, 32, 64]


@pytest.fixture(scope="module")
def tokenizer(tiny_pretrained):
    return load_tokenizer(str(tiny_pretrained))  # the real SentencePiece model a (tiny) run trained


def _model(tok, layers=2):
    return AlbertConfig(vocab_size=tok.vocab_size, embedding_size=16, hidden_size=32, num_hidden_layers=layers,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=MAX_LEN,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0)


@pytest.mark.parametrize("name", ["rt_sentiment", "wordnet_wic", "pd_pos"])
def test_bucketed_evaluation_equals_full_length(tokenizer, name):
    task = make_task(name)
    data = task.prepare(tokenizer, MAX_LEN, limit=300)
    cfg = _model(tokenizer)
    params = fresh_params(task, cfg, jax.random.PRNGKey(1))
    eval_step = jax.jit(step.make_eval_step(task, task.model(cfg)))
    full = loop.evaluate(eval_step, params, task, data.eval_sets, 32, None)
    data.buckets = bucketing.bucket_lengths(MAX_LEN, "auto")
    lengths = [b["input_ids"].shape[-1] for b in data.eval_sets["validation"](32, None)]
    cut = loop.evaluate(eval_step, params, task, data.eval_sets, 32, None)
    assert min(lengths) < MAX_LEN and sum(lengths) < 0.8 * MAX_LEN * len(lengths)  # it really cut
    assert full.keys() == cut.keys()
    for k in full:
        np.testing.assert_allclose(cut[k], full[k], rtol=2e-5, atol=1e-6, err_msg=k)


def test_a_cut_train_step_equals_the_full_length_step(tokenizer):
    task = make_task("rt_sentiment")
    data = task.prepare(tokenizer, MAX_LEN, limit=300)
    cfg = _model(tokenizer)
    full_batch = next(data.train_iterator(32, None, seed=3))
    data.buckets = bucketing.bucket_lengths(MAX_LEN, "auto")
    cut_batch = next(data.train_iterator(32, None, seed=3))  # the same rows, in the same order
    assert cut_batch["input_ids"].shape[1] < MAX_LEN
    np.testing.assert_array_equal(cut_batch["label"], full_batch["label"])
    tx = optax.adamw(1e-3)
    params = fresh_params(task, cfg, jax.random.PRNGKey(0))
    train = jax.jit(step.make_train_step(task, task.model(cfg), tx))
    state = TrainState(step=0, params=params, opt_state=tx.init(params))
    (s_full, m_full), (s_cut, m_cut) = (train(state, b, jax.random.PRNGKey(0)) for b in (full_batch, cut_batch))
    for k in ("loss", "correct", "grad_norm"):
        np.testing.assert_allclose(m_cut[k], m_full[k], rtol=2e-5, err_msg=k)
    for a, b in zip(jax.tree.leaves(s_cut.params), jax.tree.leaves(s_full.params)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_buckets_are_a_checked_config_field_that_a_resume_may_change(tmp_path):
    assert load_config("experiments/finetune.py:task=rt_sentiment,init=random,scale=cpu").data.buckets == "auto"
    c = load_config("experiments/finetune.py:task=rt_sentiment,init=random,scale=smoke")
    assert c.data.buckets == "off"  # smoke runs are compile time: one length, one compile
    apply_overrides(c, ["data.buckets=8,600", "data.tokenizer=x.model"])
    with pytest.raises(ConfigError, match=r"data.buckets='8,600'.*1\.\.data.max_seq_length=64"):
        validate(c, "finetune", str(tmp_path))
    assert workdir.kind_of("experiment.data.buckets") == "free"  # speed only: a resume may change it
    assert workdir.kind_of("experiment.data.max_seq_length") == "identity"
