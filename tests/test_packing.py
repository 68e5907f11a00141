"""Sequence packing for pretraining (tasks/pretraining/packing.py) on real records: the State of the Union
sample written by create_pretraining_data with many short instances, packed and compared with unpacked."""
import json
import subprocess
import sys
from pathlib import Path

import grain
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from albert_jax import sharding as shd
from albert_jax.config import AlbertConfig
from albert_jax.configs.loader import load_config
from albert_jax.configs.overrides import apply_overrides
from albert_jax.data.tokenization import train_tokenizer
from albert_jax.runs.validate import ConfigError, validate
from albert_jax.tasks.pretraining import instances
from albert_jax.tasks.pretraining import packing
from albert_jax.tasks.pretraining.input import PretrainData, _select
from albert_jax.tasks.pretraining.task import PretrainingTask
from albert_jax.training import optim, workdir
from albert_jax.training import state as st
from albert_jax.training import step as ts
from procs import user_env

FIXTURE = Path(__file__).parent / "fixtures" / "sotu_sample.txt"
ROOT = Path(__file__).parent.parent
S, P, K = 128, 20, 3


def tiny(vocab_size):
    return AlbertConfig(vocab_size=vocab_size, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=S,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def stack(items):
    return {k: np.stack([x[k] for x in items]) for k in items[0]}


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    return train_tokenizer(tmp_path_factory.mktemp("spm") / "sotu", files=[FIXTURE], vocab_size=2000, seed=0)


@pytest.fixture(scope="module")
def shards(tok, tmp_path_factory):
    """~900 static SOP instances of up to 128 tokens, 43% padding (short_seq_prob=0.5)."""
    out = tmp_path_factory.mktemp("records")
    cfg = instances.PretrainingConfig(max_seq_length=S, max_predictions_per_seq=P, short_seq_prob=0.5, dupe_factor=1)
    instances.create_pretraining_data([FIXTURE], tok, out, cfg, seed=0, workers=1, records_per_file=700)
    return instances.shard_paths(out)


@pytest.fixture(scope="module")
def packed(shards):
    source = grain.sources.ArrayRecordDataSource(shards)
    sizes = packing.record_sizes(shards, source)
    order, starts = packing.plan_rows(sizes[:, 0], sizes[:, 1], S, K, P, seed=0)
    return source, sizes, packing.PackedSource(source, order, starts)


def test_sizes_match_records_and_are_cached(shards, packed):
    source, sizes, _ = packed
    assert len(list(Path(shards[0]).parent.glob("record_sizes-*.npy"))) == 1
    assert np.array_equal(packing.record_sizes(shards), sizes)  # read back from the cache
    for i in range(0, len(source), 97):
        rec = instances.decode_record(source[i])
        assert tuple(sizes[i]) == (rec["input_mask"].sum(), rec["masked_lm_weights"].sum())


def test_plan_covers_every_record_once_and_fits(packed):
    source, sizes, rows = packed
    members = [rows.records_of(i) for i in range(len(rows))]
    flat = np.concatenate(members)
    assert np.array_equal(np.sort(flat), np.arange(len(source)))  # none dropped, none duplicated
    assert all(1 <= len(m) <= K for m in members)
    assert max(sizes[m, 0].sum() for m in members) <= S
    assert max(sizes[m, 1].sum() for m in members) <= P
    # It packs: fewer rows and much less padding than one record per row.
    assert len(rows) < 0.8 * len(source)
    assert packing.padding_share(sizes[:, 0], len(rows), S) < 0.5 * packing.padding_share(sizes[:, 0], len(source), S)
    with pytest.raises(ValueError, match="packing_max_predictions=3"):
        packing.plan_rows(sizes[:, 0], sizes[:, 1], S, K, 3)


def test_rows_unpack_to_their_records(packed):
    source, _, rows = packed
    for i in range(0, len(rows), 7):
        row = packing.pack_records([instances.decode_record(d) for d in rows[i]], S, P, K)
        assert row["input_mask"].sum() <= S
        p = 0
        for j, r in enumerate(rows.records_of(i)):
            rec = instances.decode_record(source[int(r)])
            n, k = int(rec["input_mask"].sum()), int(rec["masked_lm_weights"].sum())
            at = np.flatnonzero(row["pack_ids"] == j + 1)
            assert len(at) == n and at[0] == row["cls_positions"][j]
            assert np.array_equal(row["input_ids"][at], rec["input_ids"][:n])
            assert np.array_equal(row["segment_ids"][at], rec["segment_ids"][:n])
            assert np.array_equal(row["position_ids"][at], np.arange(n))
            assert np.array_equal(row["masked_lm_positions"][p:p + k] - at[0], rec["masked_lm_positions"][:k])
            assert np.array_equal(row["masked_lm_ids"][p:p + k], rec["masked_lm_ids"][:k])
            assert row["next_sentence_labels"][j] == rec["next_sentence_labels"]
            assert row["next_sentence_weights"][j] == 1
            p += k
        assert row["masked_lm_weights"].sum() == p and row["next_sentence_weights"].sum() == len(rows.records_of(i))


def _loss_and_grads(task, model):
    """jit(params, batch -> ((loss, (sums, counts)), grads)): compiled once per batch shape."""
    def f(p, batch):
        sums = task.sums(task.apply(model, p, batch, None, True), batch)
        counts = task.counts(batch)
        return task.loss(sums, counts), (sums, counts)
    return jax.jit(jax.value_and_grad(f, has_aux=True))


def test_packed_batch_gives_the_unpacked_loss_and_gradients(tok, packed):
    source, _, rows = packed
    multi = [i for i in range(len(rows)) if len(rows.records_of(i)) >= 2]
    chosen = multi[:5] + [i for i in range(len(rows)) if len(rows.records_of(i)) == 1][:1]
    assert any(len(rows.records_of(i)) == 3 for i in multi[:5]) or len(multi) >= 5
    pk = [packing.pack_records([instances.decode_record(d) for d in rows[i]], S, P, K) for i in chosen]
    recs = [_select(instances.decode_record(source[int(r)])) for i in chosen for r in rows.records_of(i)]
    packed_batch, unpacked_batch = jax.tree.map(jnp.asarray, (stack(pk), stack(recs)))
    assert len(recs) > len(chosen)

    cfg = tiny(tok.vocab_size)
    task = PretrainingTask("sop", S, P)
    model = task.model(cfg)
    params = model.init(jax.random.PRNGKey(0), **task.model_inputs(unpacked_batch))["params"]
    loss_and_grads = _loss_and_grads(task, model)
    (loss_u, (sums_u, counts_u)), grads_u = loss_and_grads(params, unpacked_batch)
    (loss_p, (sums_p, counts_p)), grads_p = loss_and_grads(params, packed_batch)
    assert float(counts_p["sentence_count"]) == len(recs) == float(counts_u["sentence_count"])
    assert float(counts_p["mlm_count"]) == float(counts_u["mlm_count"]) > 0
    for k in sums_u:
        np.testing.assert_allclose(float(sums_p[k]), float(sums_u[k]), rtol=1e-5, atol=1e-5, err_msg=k)
    np.testing.assert_allclose(float(loss_p), float(loss_u), rtol=1e-5)
    for gp, gu in zip(jax.tree.leaves(grads_p), jax.tree.leaves(grads_u)):
        np.testing.assert_allclose(np.asarray(gp), np.asarray(gu), atol=1e-5 * max(1.0, float(jnp.abs(gu).max())))

    # The check can fail: one attention block over the whole row (no block-diagonal mask) changes the gradients.
    leaky = dict(packed_batch, pack_ids=packed_batch["input_mask"])
    _, grads_leaky = loss_and_grads(params, leaky)
    worst = max(float(jnp.abs(gl - gu).max() / max(1.0, float(jnp.abs(gu).max())))
                for gl, gu in zip(jax.tree.leaves(grads_leaky), jax.tree.leaves(grads_u)))
    assert worst > 1e-4  # ten times the tolerance above


def test_sharded_train_step_packed_equals_unpacked(tok, packed):
    """The real jitted step over 8 devices with LAMB: the same loss, gradient norm and updated parameters."""
    source, _, rows = packed
    chosen = list(range(len(rows)))[-16:]  # the shortest records: rows of 2-3
    pk = stack([packing.pack_records([instances.decode_record(d) for d in rows[i]], S, P, K) for i in chosen])
    recs = [_select(instances.decode_record(source[int(r)])) for i in chosen for r in rows.records_of(i)]
    pad = -len(recs) % 8  # the unpacked batch must divide over the devices: weight-0 filler rows
    unpacked = stack(recs + recs[:pad])
    unpacked["example_weight"] = np.r_[np.ones(len(recs)), np.zeros(pad)].astype(np.float32)
    assert pk["next_sentence_weights"].sum() == len(recs) > len(chosen)

    cfg, task, mesh = tiny(tok.vocab_size), PretrainingTask("sop", S, P), shd.make_mesh()
    boxed = st.abstract_params(task, cfg)
    tx = optim.make_optimizer("lamb", 1e-3, 10, 1, stacked_axes_fn=optim.stacked_axes_from_boxed(boxed))
    _, shardings = st.state_shardings(tx, mesh, boxed)
    train, _ = ts.jit_steps(task, cfg, tx, mesh, shardings)
    initial = jax.device_get(st.init_state(task, cfg, tx, mesh, jax.random.PRNGKey(0), shardings))
    out = {}
    for name, batch in (("packed", pk), ("unpacked", unpacked)):
        state = jax.device_put(initial, shardings)  # a fresh copy: the step donates its state
        state, m = train(state, shd.shard_batch(batch, mesh), jax.random.PRNGKey(1))
        out[name] = jax.device_get((state.params, m))
    (p_pk, m_pk), (p_un, m_un) = out["packed"], out["unpacked"]
    for k in ("loss", "mlm_loss_sum", "sentence_loss_sum", "grad_norm"):
        np.testing.assert_allclose(m_pk[k], m_un[k], rtol=1e-5, err_msg=k)
    for k in ("mlm_count", "sentence_count", "real_tokens"):
        assert m_pk[k] == m_un[k], k
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-6), p_pk, p_un)


def _data(tok, shards, masking="static"):
    options = dict(max_predictions_per_seq=P, masked_lm_prob=0.15, ngram=3)
    return PretrainData(tok, shards, {}, masking, options, {},
                        packing=dict(max_seq_length=S, max_examples=K, max_predictions=P, seed=0))


def test_packed_iterator_walks_every_row_once_per_epoch_and_resumes(tok, shards, packed):
    _, _, rows = packed
    data = _data(tok, shards)
    by_content = {}
    for i in range(len(rows)):
        row = packing.pack_records([instances.decode_record(d) for d in rows[i]], S, P, K)
        by_content[(row["input_ids"].tobytes(), row["masked_lm_positions"].tobytes())] = i
    B = 32
    it = data.train_iterator(B, None, seed=3)
    seen = []
    for _ in range(len(rows) // B):
        b = next(it)
        assert b["input_ids"].shape == (B, S) and b["next_sentence_labels"].shape == (B, K)
        assert (b["input_mask"].sum(1) <= S).all()
        seen += [by_content[(x.tobytes(), m.tobytes())] for x, m in zip(b["input_ids"], b["masked_lm_positions"])]
    assert len(set(seen)) == len(seen) == (len(rows) // B) * B  # no row twice within the epoch

    # Resume: the state after 2 batches gives exactly the next batches.
    a = data.train_iterator(B, None, seed=5)
    next(a), next(a)
    state = a.get_state()
    expected = [next(a) for _ in range(3)]
    b = data.train_iterator(B, None, seed=5)
    b.set_state(state)
    for want in expected:
        got = next(b)
        assert all(np.array_equal(got[k], want[k]) for k in want)


def test_dynamic_masking_packs_within_the_row_budget(tok, tmp_path):
    cfg = instances.PretrainingConfig(max_seq_length=S, max_predictions_per_seq=P, short_seq_prob=0.5, dupe_factor=1,
                              masking="dynamic")
    instances.create_pretraining_data([FIXTURE], tok, tmp_path, cfg, seed=0, workers=1)
    data = _data(tok, instances.shard_paths(tmp_path), "dynamic")
    it = data.train_iterator(16, None, seed=0)
    for _ in range(5):
        b = next(it)
        n_ex = b["next_sentence_weights"].sum(1)
        assert (n_ex >= 1).all() and (n_ex > 1).any()
        assert (b["masked_lm_weights"].sum(1) >= n_ex).all()  # every packed example got its masks
        assert (b["pack_ids"].max(1) == n_ex).all()


def test_packing_config_fields(tmp_path):
    c = load_config("experiments/pretrain.py:scale=smoke")
    assert c.data.packing is False  # off by default: our instances are ~96% full (docs/training.md)
    apply_overrides(c, ["data.packing=true", "data.packing_max_predictions=5"])
    with pytest.raises(ConfigError, match=r"data.packing_max_predictions=5 is below data.max_predictions_per_seq"):
        validate(c, "pretrain", str(tmp_path))
    apply_overrides(c, ["data.packing_max_predictions=0", "data.packing_max_examples=1"])
    with pytest.raises(ConfigError, match=r"data.packing_max_examples"):
        validate(c, "pretrain", str(tmp_path))
    # A run recorded before the fields existed resumes with them at their defaults, and not with packing on.
    old = {"experiment": {"data": {"max_seq_length": 64}}}
    from albert_jax.configs.schema import ADDED_DEFAULTS
    added = {k.split(".", 1)[1]: v for k, v in ADDED_DEFAULTS.items() if k.startswith("data.")}
    new = {"experiment": {"data": {"max_seq_length": 64, **added}}}  # every field added since
    assert workdir.differences(old, new) == {}
    assert workdir.differences(old, {"experiment": {"data": {"max_seq_length": 64, "zh_masking": "jieba"}}})
    assert workdir.kind_of("experiment.data.packing") == "identity"


def test_packed_pretraining_run(tmp_path):
    """`albert-jax pretrain` with data.packing=true on a corpus of short instances: the loop trains on full rows
    (real tokens per second close to all tokens per second) and evaluates on the unpacked sets."""
    env = user_env()  # a user's one-device process
    wd = tmp_path / "packed"
    sets = ["data.corpus='text_corpus/sotu_sample'", f"data.corpus_paths='{FIXTURE}'", "data.vocab_size=2000",
            "data.max_docs=0", "data.held_out_fraction=0.2", f"data.max_seq_length={S}", "data.short_seq_prob=0.5",
            "data.packing=true", "model.num_hidden_layers=2", "train.num_train_steps=6", "train.log_every=3",
            "train.eval_every=6"]
    cmd = [sys.executable, "-m", "albert_jax.main", "pretrain", "--workdir", str(wd), "--config",
           "experiments/pretrain.py:scale=smoke"] + [a for x in sets for a in ("--set", x)]
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads((wd / "config.json").read_text())["data"]["packing"]["max_examples"] == K
    rows = [json.loads(line) for line in (wd / "metrics.jsonl").read_text().splitlines()]
    train_rows = [r for r in rows if "real_tokens_per_second" in r]
    assert train_rows and all(r["real_tokens_per_second"] > 0.9 * r["tokens_per_second"] for r in train_rows)
    assert "eval/sop_accuracy" in rows[-1] and 6 < rows[-1]["eval/mlm_loss"] < 9
