"""PABEE early exit: the patience rule on hand-worked sequences, the weighted joint loss against a hand
computation, the while_loop inference against the exits derived from all layers (a real fine-tuned run on real
text, and random weights whose exits vary), a tiny real fine-tuning run writing the curve metrics, and the
refusals (a task that is not classification, a depth change on a model with per-layer weights)."""
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from albert_jax.compression.early_exit import make_predict
from albert_jax.config import AlbertConfig, ConfigError
from albert_jax.configs.loader import load_config
from albert_jax.configs.overrides import apply_overrides
from albert_jax.runs import finetune as ft
from albert_jax.tasks.early_exit import EarlyExitClassificationTask, loss_weights, patience_exit, with_head
from albert_jax.tasks.features import eval_batches
from albert_jax.tasks.registry import make_task
from procs import user_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = ["train.num_train_steps=6", "train.eval_every=3", "train.checkpoint_every=3", "train.log_every=3",
        "train.batch_size=16", "data.limit=64", "data.max_seq_length=32"]


def config_for(init, arg=""):
    c = load_config(f"experiments/finetune.py:task=rt_sentiment,init={init},scale=smoke{arg}")
    apply_overrides(c, TINY)
    return c


@pytest.fixture(scope="module")
def pabee_run(tiny_pretrained, tmp_path_factory):
    """A real PABEE fine-tuning run: the tiny all-shared pretraining run's layer applied 4 times, 4 exits."""
    wd = tmp_path_factory.mktemp("pabee") / "rt"
    out = ft.finetune(config_for(tiny_pretrained, ",head=pabee,depth=4"), str(wd))
    return wd, out


def test_patience_rule_on_hand_worked_sequences():
    preds = np.array([[1, 0, 0, 0],   # changes at layer 2, then unchanged at 3 (once) and 4 (twice)
                      [0, 0, 0, 0],   # unchanged from layer 2 on
                      [0, 1, 0, 1],   # never unchanged: the last layer
                      [1, 1, 0, 0]])  # unchanged at 2, reset at 3, unchanged at 4
    assert patience_exit(preds, 1).tolist() == [3, 2, 4, 2]
    assert patience_exit(preds, 2).tolist() == [4, 3, 4, 4]
    assert patience_exit(preds, 3).tolist() == [4, 4, 4, 4]  # needs all 4 layers to agree: always the last
    with pytest.raises(ValueError, match="patience=0"):
        patience_exit(preds, 0)


def test_patience_of_at_least_L_minus_1_is_the_last_layer():
    preds = np.random.default_rng(0).integers(0, 3, (200, 5))
    for t in (4, 5, 9):
        assert (patience_exit(preds, t) == 5).all()
    assert (patience_exit(preds, 1) < 5).any()  # the rule does exit early on these sequences


def test_joint_loss_is_pabee_weighted_sum_of_layer_losses():
    task = EarlyExitClassificationTask(make_task("rt_sentiment"), 3)
    np.testing.assert_allclose(loss_weights(3), [1 / 6, 2 / 6, 3 / 6])
    logits = np.array([[[2.0, 0.0], [0.0, 1.0], [0.5, 0.5]],
                       [[0.0, 3.0], [1.0, 0.0], [0.0, 0.0]],
                       [[9.0, 9.0], [9.0, 9.0], [9.0, 9.0]]], np.float32)  # row 3 is padding (weight 0)
    batch = {"label": np.array([0, 1, 0]), "example_weight": np.array([1.0, 1.0, 0.0])}
    nll = lambda z, y: float(np.log(np.exp(z).sum()) - z[y])  # noqa: E731
    hand = sum((1 * nll(logits[b, 0], y) + 2 * nll(logits[b, 1], y) + 3 * nll(logits[b, 2], y)) / 6
               for b, y in ((0, 0), (1, 1)))
    sums = task.sums(jnp.asarray(logits), batch)
    loss = task.loss(sums, task.counts(batch))
    assert float(sums["loss_sum"]) == pytest.approx(hand, rel=1e-6)
    assert float(loss) == pytest.approx(hand / 2, rel=1e-6)
    # each layer's correct count over the real rows: layer 1 both, layer 2 neither, layer 3 the first
    assert [float(sums[f"correct_l{j}"]) for j in (1, 2, 3)] == [2.0, 0.0, 1.0]


def _check_loop_equals_derived(predict, model, params, batch, num_layers):
    logits = jax.jit(model.apply)({"params": params}, batch["input_ids"], batch["input_mask"], batch["segment_ids"])
    preds = np.asarray(jnp.argmax(logits, -1))  # [B, L]: every layer's prediction, as evaluation computes them
    exits = set()
    for patience in range(1, num_layers + 1):
        pred, layer = predict(params, batch["input_ids"], batch["input_mask"], batch["segment_ids"], patience)
        want_layer = patience_exit(preds, patience)
        want_pred = preds[np.arange(len(want_layer)), want_layer - 1]
        np.testing.assert_array_equal(np.asarray(layer), want_layer)
        np.testing.assert_array_equal(np.asarray(pred), want_pred)
        exits |= set(want_layer.tolist())
        for i in (0, 3):  # one row alone stops at its own exit
            one = {k: v[i:i + 1] for k, v in batch.items()}
            p1, l1 = predict(params, one["input_ids"], one["input_mask"], one["segment_ids"], patience)
            assert (int(p1[0]), int(l1[0])) == (int(want_pred[i]), int(want_layer[i]))
    return exits


def test_while_loop_inference_equals_the_derived_exit(pabee_run):
    wd, _ = pabee_run
    step, where, cfg, info, params = ft.finetuned_params(wd / "seed-0")  # a PABEE run reads back as one
    assert where == "best" and info["head"] == "pabee" and cfg.num_hidden_layers == 4
    task = with_head(make_task("rt_sentiment"), "pabee", 4)
    from albert_jax.data.tokenization import load_tokenizer
    from albert_jax.runs.pretrain import read_run_config

    data = task.prepare(load_tokenizer(str(wd / "seed-0")), 32, limit=48)  # real rt_sentiment text
    batch = {k: jnp.asarray(v) for k, v in next(iter(eval_batches(data.dev["validation"], 48, None))).items()}
    assert read_run_config(str(wd / "seed-0"))["task"]["kind"] == "EarlyExitClassificationTask"
    model, predict = task.model(cfg), jax.jit(make_predict(cfg))  # patience is traced: one compile per shape
    _check_loop_equals_derived(predict, model, params, batch, 4)
    # Random exit heads disagree across layers, so rows exit at different depths: the loop must stop each right.
    fresh = nn.unbox(model.init(jax.random.PRNGKey(3), batch["input_ids"], batch["input_mask"],
                                batch["segment_ids"])["params"])
    exits = jax.tree.map(lambda a: a * 50.0, fresh["exits"])
    assert len(_check_loop_equals_derived(predict, model, {**params, "exits": exits}, batch, 4)) >= 3


def test_tiny_finetune_writes_the_curve_metrics(pabee_run):
    wd, out = pabee_run
    dev = {k: v["median"] for k, v in out["summary"]["dev"].items()}
    assert dev["exit4/accuracy"] == dev["accuracy"] == dev["patience3/accuracy"]  # patience 3 of 4: last layer
    assert dev["patience3/avg_layers"] == 4.0
    for t in (1, 2):
        assert t + 1 <= dev[f"patience{t}/avg_layers"] <= 4.0  # patience t needs t+1 agreeing layers
    records = [json.loads(line) for line in open(wd / "seed-0" / "metrics.jsonl")]
    evals = [r for r in records if "eval/patience1/avg_layers" in r]
    assert [r["step"] for r in evals] == [3, 6]
    assert {f"eval/exit{k}/accuracy" for k in range(1, 5)} <= set(evals[-1])
    train = [r for r in records if "accuracy_l1" in r]
    assert train, records[:3]  # every exit's training accuracy is logged
    assert "test/patience2/accuracy" in out["summary"]["test"]


def test_unsupported_task_and_depth_are_refused(tiny_pretrained, tmp_path):
    with pytest.raises(ConfigError, match="head=pabee: task pd_pos is a TaggingTask; early exit"):
        c = load_config(f"experiments/finetune.py:task=pd_pos,init={tiny_pretrained},scale=smoke,head=pabee")
        ft.finetune(c, str(tmp_path / "pos"))
    with pytest.raises(ValueError, match="stsb is a regression"):
        with_head(make_task("stsb"), "pabee", 4)
    with pytest.raises(ValueError, match="head='exit': allowed default, pabee"):
        with_head(make_task("rt_sentiment"), "exit", 4)
    cfg = AlbertConfig(vocab_size=50, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=64, sharing="none")
    with pytest.raises(ft.InitError, match="depth=3: src has sharing='none'"):
        ft.with_depth(cfg, 3, "src")
    # The CLI prints the refusal as one line, before any data is read.
    cmd = [sys.executable, "-m", "albert_jax.main", "finetune", "--workdir", str(tmp_path / "cli"), "--config",
           f"experiments/finetune.py:task=pd_pos,init={tiny_pretrained},scale=smoke,head=pabee"]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env=user_env())
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert "head=pabee: task pd_pos is a TaggingTask" in p.stderr.strip().splitlines()[-1]


def test_export_refuses_hf_and_round_trips_params(pabee_run, tmp_path):
    """HF has no class with one classifier per layer: --to hf is refused by name; --to params keeps every exit."""
    from albert_jax.interop.params_export import load_params_export
    from albert_jax.runs import export

    wd, _ = pabee_run
    run = export.resolve_run(str(wd))
    with pytest.raises(export.ExportRefused, match="AlbertForEarlyExit.*--to params"):
        export.hf_target(run)
    out = export.export_params(run, tmp_path / "params")
    cfg, params = load_params_export(out)
    assert cfg.num_hidden_layers == 4
    for got, want in zip(jax.tree.leaves(params), jax.tree.leaves(run.params)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert np.asarray(params["exits"]["kernel"]).shape[0] == 4  # one classifier per layer survives the trip


def test_quantize_refuses_a_pabee_run_by_name(pabee_run, tmp_path):
    from albert_jax.compression.run import QuantizeError, quantize_run

    wd, _ = pabee_run
    with pytest.raises(QuantizeError, match="pabee head"):
        quantize_run(str(wd), str(tmp_path / "q"))
    assert not (tmp_path / "q").exists()
