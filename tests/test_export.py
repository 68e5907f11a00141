"""`albert-jax export` from real tiny runs: a pretraining run, a classification run (its best seed, a chosen seed
and step), a BERT-initialised run, and a partially shared run that HF cannot hold. The other heads (token
tagging, span QA, multiple choice, regression) are their task models' own trees with random values and the
pretraining run's tokenizer: a training run per head would cost half a minute of compilation each and test
nothing more of the export (the restore of a task's tree is the classification run's).

Each HF export is loaded by transformers with `output_loading_info=True` (no missing or unexpected keys), its
tokenizer by AlbertTokenizer/BertTokenizer, which must give our ids on real sentences of the labeled sets; the
model must give our outputs (float32, eval mode) within 1e-5 on those sentences. The params export must come
back bit for bit, for every sharing mode with groups and inner blocks."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys

import jax
import numpy as np
import pytest
from flax import linen as nn
from flax import traverse_util

from albert_jax.config import AlbertConfig
from albert_jax.interop import params_export as pe
from albert_jax.main import main
from albert_jax.runs import export as ex
from albert_jax.tasks.classification import load_records
from albert_jax.tasks.registry import make_task
from procs import user_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOL = 1e-5
RUN = ["train.num_train_steps=3", "train.eval_every=3", "train.checkpoint_every=3", "train.log_every=3",
       "train.batch_size=16", "data.limit=48", "data.max_seq_length=32"]


def _texts(source: str, key: str, n: int = 6, split: str = "validation") -> list[str]:
    return [r[key].decode("utf-8") for r in load_records(source, split)[:n]]


def _finetune(task, init, wd, *overrides):
    from albert_jax.configs.loader import load_config
    from albert_jax.configs.overrides import apply_overrides
    from albert_jax.runs.finetune import finetune

    c = load_config(f"experiments/finetune.py:task={task},init={init},scale=smoke")
    apply_overrides(c, [*RUN, *overrides])
    finetune(c, str(wd))
    return wd


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One tiny pretraining run (4 layers in 2 groups of 2 inner blocks, so HF gets groups and inner layers), a
    classification run from it and a partially shared one, through the real training code."""
    from albert_jax.cli.common import load_experiment
    from albert_jax.runs.pretrain import pretrain

    root = tmp_path_factory.mktemp("export")
    pt = root / "pretrain"
    cfg = load_experiment("experiments/pretrain.py:scale=smoke", [
        "train.batch_size=8", "train.num_train_steps=3", "train.eval_every=3", "train.eval_batches=1",
        "train.checkpoint_every=3", "model.num_hidden_layers=4", "model.num_hidden_groups=2",
        "model.inner_group_num=2", "model.hidden_size=32", "model.embedding_size=16", "model.intermediate_size=64",
        "model.num_attention_heads=2"])
    pretrain(cfg, str(pt))
    out = {"pretrain": pt}
    out["rt_sentiment"] = _finetune("rt_sentiment", pt, root / "rt", "train.num_train_steps=6")
    # Partially shared (HF cannot hold it), from random weights with the pretraining run's tokenizer.
    out["ffn"] = _finetune("rt_sentiment", "random", root / "ffn", "model.sharing=ffn", "model.num_hidden_layers=2",
                           "model.hidden_size=32", "model.embedding_size=16", "model.intermediate_size=64",
                           "model.num_attention_heads=2",
                           f"data.tokenizer={pt}")
    return out


def _export(*argv) -> int:
    return main(["export", *map(str, argv)])


def _check_ids(hf_tok, ours, a: str, b: str | None = None) -> None:
    """The exported tokenizer gives our ids: [CLS] a [SEP] (b [SEP]), segment ids 0/1."""
    enc = hf_tok(a, b) if b is not None else hf_tok(a)
    ta = ours.encode(a)
    ids = [ours.cls_id, *ta, ours.sep_id]
    segs = [0] * len(ids)
    if b is not None:
        tb = ours.encode(b)
        ids += [*tb, ours.sep_id]
        segs += [1] * (len(tb) + 1)
    assert enc["input_ids"] == ids, (a, b)
    assert enc["token_type_ids"] == segs, (a, b)


def _loaded(cls, out):
    model, info = cls.from_pretrained(out, output_loading_info=True)
    assert not any(info.values()), info  # no missing / unexpected / mismatched keys
    return model.eval()


def _ours(run, inputs: dict):
    model = make_task(run.task["name"]).model(run.config) if run.kind == "finetune" else None
    if model is None:
        from albert_jax.modeling import AlbertForPreTraining
        model = AlbertForPreTraining(run.config)
    params = jax.device_get(run.params)
    return jax.jit(model.apply)({"params": params}, inputs["input_ids"], inputs["attention_mask"],
                                inputs["token_type_ids"])


def _close(ours, theirs, what: str) -> None:
    diff = float(np.abs(np.asarray(ours) - np.asarray(theirs)).max())
    print(f"\n{what}: max abs diff {diff:.2e}")
    assert diff <= TOL, (what, diff)


# ------------------------------------------------------------------------------------------------- pretraining
def test_pretraining_run_to_hf_matches_on_real_text(runs, tmp_path):
    transformers = pytest.importorskip("transformers")
    import torch

    out = tmp_path / "hf"
    assert _export("--workdir", runs["pretrain"], "--to", "hf", "--out", out) == 0
    assert {"config.json", "model.safetensors", "spiece.model", "tokenizer_config.json",
            "special_tokens_map.json"} <= {p.name for p in out.iterdir()}
    run = ex.resolve_run(runs["pretrain"])
    hf_tok = transformers.AlbertTokenizer.from_pretrained(out)
    a, b = _texts("rt_sentiment", "sentence"), _texts("wordnet_wic", "sentence1")
    for x, y in zip(a, b):
        _check_ids(hf_tok, run.tokenizer, x)
        _check_ids(hf_tok, run.tokenizer, x, y)
    enc = hf_tok(a, b, padding=True, truncation=True, max_length=64, return_tensors="pt")
    hf = _loaded(transformers.AlbertForPreTraining, out)
    assert (hf.config.num_hidden_groups, hf.config.inner_group_num) == (2, 2)
    with torch.no_grad():
        theirs = hf(**enc)
        body = hf.albert(**enc)
    ours = _ours(run, {k: v.numpy() for k, v in enc.items()})
    _close(ours["mlm_logits"], theirs.prediction_logits, "pretraining MLM logits")
    _close(ours["sop_logits"], theirs.sop_logits, "pretraining SOP logits")
    _close(ours["sequence_output"], body.last_hidden_state, "pretraining sequence output")
    # AlbertModel takes the encoder; only the pretraining heads are left over.
    base, info = transformers.AlbertModel.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["mismatched_keys"]
    assert all(k.startswith(("predictions.", "sop_classifier.")) for k in info["unexpected_keys"])
    with torch.no_grad():
        _close(ours["pooled_output"], base.eval()(**enc).pooler_output, "AlbertModel pooled output")
    # `convert to-hf --workdir` is the same export, here by the CLI on one device (the run trained on 8).
    again = tmp_path / "again"
    env = user_env()
    p = subprocess.run([sys.executable, "-m", "albert_jax.main", "convert", "to-hf", "--workdir", str(runs["pretrain"]),
                        "--out", str(again)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    from safetensors.numpy import load_file
    x, y = load_file(str(out / "model.safetensors")), load_file(str(again / "model.safetensors"))
    assert set(x) == set(y) and all(np.array_equal(x[k], y[k]) for k in x)


# ------------------------------------------------------------------------------------------------- task heads
def _head_inputs(name, hf_tok):
    """Real text of each task, tokenized by the exported tokenizer; (HF kwargs as numpy, pairs checked)."""
    if name == "wordnet_lemma_span":
        q, c = _texts(name, "question"), _texts(name, "context")
        return hf_tok(q, c, padding=True, return_tensors="np"), list(zip(q, c))
    if name == "next_sentence_choice":
        ctx = _texts(name, "context", 3)
        opts = [_texts(name, f"option_{i}", 3) for i in range(4)]
        rows = [hf_tok([c] * 4, [o[j] for o in opts], padding="max_length", truncation=True, max_length=64,
                       return_tensors="np") for j, c in enumerate(ctx)]
        enc = {k: np.stack([r[k] for r in rows]) for k in rows[0]}
        return enc, [(ctx[j], opts[i][j]) for j in range(3) for i in range(4)]
    if name == "stsb":  # GLUE's STS-B needs the network; WordNet's sentence pairs stand in
        a, b = _texts("wordnet_wic", "sentence1"), _texts("wordnet_wic", "sentence2")
        return hf_tok(a, b, padding=True, return_tensors="np"), list(zip(a, b))
    # rt_sentiment, and pd_pos on English text: its own sentences are Chinese, nearly all <unk> for the
    # English tokenizer, which would compare little.
    s = _texts("rt_sentiment", "sentence")
    return hf_tok(s, padding=True, return_tensors="np"), [(x, None) for x in s]


def _random_run(task_name: str, src) -> ex.RunParams:
    """A fine-tuned run's stand-in: the task model's own tree (its abstract init), values drawn at random so
    that no bias or LayerNorm sits at its init value, on the pretraining run's config and tokenizer."""
    from albert_jax.training import state as st

    abstract = traverse_util.flatten_dict(nn.unbox(st.abstract_params(make_task(task_name), src.config)))
    rng = np.random.default_rng(0)
    params = traverse_util.unflatten_dict({k: (0.1 * rng.standard_normal(a.shape) + (k[-1] == "scale"))
                                           .astype(np.float32) for k, a in abstract.items()})
    return ex.RunParams(f"{task_name}-run", "finetune", 1, "best", src.config, {"name": task_name}, params,
                        src.tokenizer)


@pytest.mark.parametrize("name,cls,head", [
    ("rt_sentiment", "AlbertForSequenceClassification", "sequence"),
    ("pd_pos", "AlbertForTokenClassification", "token"),
    ("wordnet_lemma_span", "AlbertForQuestionAnswering", "qa"),
    ("next_sentence_choice", "AlbertForMultipleChoice", "choice"),
    ("stsb", "AlbertForSequenceClassification", "regression")])
def test_task_heads_to_hf_match_on_real_text(runs, tmp_path, name, cls, head):
    transformers = pytest.importorskip("transformers")
    import torch

    out = tmp_path / "hf"
    if name in runs:  # a real fine-tuning run, through the CLI
        assert _export("--workdir", runs[name], "--to", "hf", "--out", out) == 0
        run = ex.resolve_run(runs[name])
        meta = json.loads((out / "albert_jax_export.json").read_text())
        assert meta["step"] == run.step and meta["checkpoint"] == "best" and meta["seed"] == 0
    else:
        run = _random_run(name, ex.resolve_run(runs["pretrain"]))
        ex.export_hf(run, out)
        meta = json.loads((out / "albert_jax_export.json").read_text())
    assert meta["hf"]["model_class"] == cls
    hf_tok = transformers.AlbertTokenizer.from_pretrained(out)
    enc, pairs = _head_inputs(name, hf_tok)
    for a, b in pairs:
        _check_ids(hf_tok, run.tokenizer, a, b)
    hf = _loaded(getattr(transformers, cls), out)
    task = make_task(name)
    if head == "sequence":
        assert hf.config.num_labels == 2 and hf.config.problem_type == "single_label_classification"
        assert hf.config.id2label == {0: "negative", 1: "positive"}  # the dataset's class names
    if head == "regression":
        assert hf.config.num_labels == 1 and hf.config.problem_type == "regression"
    if head == "token":
        assert [hf.config.id2label[i] for i in range(task.num_labels)] == list(task.tags)
    with torch.no_grad():
        theirs = hf(**{k: torch.from_numpy(v) for k, v in enc.items()})
    ours = _ours(run, enc)
    if head == "qa":
        _close(ours[0], theirs.start_logits, f"{name} start logits")
        _close(ours[1], theirs.end_logits, f"{name} end logits")
    else:
        _close(ours, theirs.logits, f"{name} logits")


def test_transformers_pipeline_loads_an_export_without_use_tf(runs, tmp_path):
    """A user's own script, outside make: `transformers.pipeline(...)` on our export in this venv with no USE_TF
    set. With TensorFlow installed (`make test` installs it for tests/test_from_tf.py), transformers 4.57 then
    reaches for Keras and refused Keras 3 until the Makefile installed tf-keras beside it."""
    pytest.importorskip("transformers")
    out = tmp_path / "hf"
    assert _export("--workdir", runs["rt_sentiment"], "--to", "hf", "--out", out) == 0
    script = ("import json, sys; from transformers import pipeline; "
              "c = pipeline('text-classification', model=sys.argv[1]); "
              "print(json.dumps(c(['a gorgeous, witty, seductive movie.'])))")
    p = subprocess.run([sys.executable, "-c", script, str(out)], env=user_env(drop=("USE_TF", "USE_TORCH")),
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    (result,) = json.loads(p.stdout.strip().splitlines()[-1])
    assert result["label"] in ("negative", "positive") and 0.0 <= result["score"] <= 1.0


def test_best_seed_chosen_seed_and_step(runs, tmp_path):
    """The best seed by its recorded dev score (ties: the lowest), or --seed; --step picks a checkpoint.

    The second seed is a copy of the real seed-0 run whose recorded dev score is set above or below seed 0's,
    so that which seed is best is known (two tiny runs often tie)."""
    parent = tmp_path / "rt"
    shutil.copytree(runs["rt_sentiment"], parent)
    shutil.copytree(parent / "seed-0", parent / "seed-1")
    record = json.loads((parent / "seed-0" / "results.json").read_text())
    assert record["select"] == "accuracy"
    for delta, expected in ((+0.25, 1), (-0.25, 0), (0.0, 0)):
        r = {**record, "seed": 1, "dev": {**record["dev"], "accuracy": record["dev"]["accuracy"] + delta}}
        (parent / "seed-1" / "results.json").write_text(json.dumps(r))
        assert ex.best_seed(parent)[0] == expected, delta
    run = ex.resolve_run(parent)  # seed 0 (the tie)
    assert run.seed == 0 and run.where == "best" and run.workdir.endswith("seed-0")
    chosen = ex.resolve_run(parent, seed=1)
    assert chosen.seed == 1 and chosen.workdir.endswith("seed-1")
    # --step 6 is the last checkpoint (checkpoints/), whatever best/ holds; it is what the export writes.
    last = ex.resolve_run(parent, step=6, seed=1)
    assert last.step == 6 and last.where == "checkpoints"
    assert _export("--workdir", parent, "--seed", 1, "--step", 6, "--to", "params", "--out", tmp_path / "p") == 0
    assert json.loads((tmp_path / "p" / "layout.json").read_text())["source"]["seed"] == 1
    _, back = pe.load_params_export(tmp_path / "p")
    _assert_bitwise(back, last.params)
    with pytest.raises(ex.ExportError, match="no seed-7/.*seeds: 0, 1"):
        ex.resolve_run(parent, seed=7)
    with pytest.raises(ex.ExportError, match=r"no checkpoint at step 99: checkpoints/ holds \[6\]"):
        ex.resolve_run(parent, step=99)
    (parent / "seed-0" / "results.json").unlink()
    (parent / "seed-1" / "results.json").unlink()
    with pytest.raises(ex.ExportError, match="no seed has finished.*--seed S"):
        ex.resolve_run(parent)


def test_bert_initialised_run_exports_to_bert(runs, tmp_path):
    """A run initialised from a HF BERT (a tiny one with MiniLM's WordPiece vocabulary) goes out as
    BertForSequenceClassification + BertTokenizer."""
    transformers = pytest.importorskip("transformers")
    import torch

    from albert_jax.data.weights import fetch_minilm

    bert_dir = tmp_path / "bert"
    vocab = fetch_minilm() / "vocab.txt"
    n = sum(1 for _ in open(vocab, encoding="utf-8"))
    hf_cfg = transformers.BertConfig(vocab_size=n, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=64, hidden_act="gelu")
    torch.manual_seed(0)
    transformers.BertModel(hf_cfg).save_pretrained(bert_dir)
    shutil.copyfile(vocab, bert_dir / "vocab.txt")
    wd = _finetune("rt_sentiment", bert_dir, tmp_path / "ft")
    out = tmp_path / "hf"
    assert _export("--workdir", wd, "--to", "hf", "--out", out) == 0
    run = ex.resolve_run(wd)
    assert run.init["kind"] == "hf_bert"
    hf_tok = transformers.BertTokenizer.from_pretrained(out)
    a, b = _texts("rt_sentiment", "sentence"), _texts("wordnet_wic", "sentence1")
    for x, y in zip(a, b):
        _check_ids(hf_tok, run.tokenizer, x, y)
    enc = hf_tok(a, padding=True, return_tensors="np")
    hf = _loaded(transformers.BertForSequenceClassification, out)
    with torch.no_grad():
        theirs = hf(**{k: torch.from_numpy(v) for k, v in enc.items()}).logits
    _close(_ours(run, enc), theirs, "BERT-initialised classifier logits")


# ------------------------------------------------------------------------------------------------- refusals
def test_what_hf_cannot_hold_is_refused_in_one_line(runs, tmp_path, capsys):
    out = tmp_path / "hf"
    assert _export("--workdir", runs["ffn"], "--to", "hf", "--out", out) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(err) == 1 and "sharing='ffn'" in err[0] and "--to params" in err[0], err
    assert not out.exists() or not any(out.iterdir())  # nothing half-written
    # The SQuAD v2 head (start-conditioned end logits, answerability) has no transformers class.
    src = ex.resolve_run(runs["pretrain"])
    v2 = ex.RunParams("v2-run", "finetune", 1, "best", src.config, {"name": "squad_v2"}, None, src.tokenizer)
    with pytest.raises(ex.ExportRefused, match="AlbertForSquadV2.*--to params"):
        ex.export_hf(v2, tmp_path / "v2")
    # sharing='none' with inner blocks: HF's layer groups cannot hold it either.
    inner = ex.RunParams("n", "pretraining", 1, "checkpoints", AlbertConfig(
        vocab_size=src.config.vocab_size, sharing="none", inner_group_num=2), {"name": "pretrain_sop"}, None,
        src.tokenizer)
    with pytest.raises(ex.ExportRefused, match="sharing='none'.*--to params"):
        ex.hf_target(inner)
    # More inner blocks than layers per group: transformers' AlbertTransformer cannot run it.
    deep = dataclasses.replace(inner, config=src.config.replace(num_hidden_layers=2))
    with pytest.raises(ex.ExportRefused, match="inner_group_num=2 exceeds the 1 layer.*--to params"):
        ex.hf_target(deep)
    # Bad workdirs, steps and outputs are named.
    (tmp_path / "empty").mkdir()
    with pytest.raises(ex.ExportError, match="neither a run"):
        ex.resolve_run(tmp_path / "empty")
    with pytest.raises(ex.ExportError, match=r"--step 5: .* holds steps \[3\]"):
        ex.resolve_run(runs["pretrain"], step=5)
    with pytest.raises(ex.ExportError, match="--seed 0 picks among"):
        ex.resolve_run(runs["pretrain"], seed=0)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    assert _export("--workdir", runs["pretrain"], "--to", "hf", "--out", tmp_path / "full") == 2
    assert "not an empty directory" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------- params
def _assert_bitwise(a, b):
    fa, fb = traverse_util.flatten_dict(jax.device_get(a)), traverse_util.flatten_dict(jax.device_get(b))
    assert set(fa) == set(fb)
    for k in fa:
        x, y = np.asarray(fa[k]), np.asarray(fb[k])
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), k


def test_partially_shared_run_round_trips_through_params(runs, tmp_path):
    out = tmp_path / "p"
    assert _export("--workdir", runs["ffn"], "--to", "params", "--out", out) == 0
    run = ex.resolve_run(runs["ffn"])
    layout = json.loads((out / "layout.json").read_text())
    assert layout["sets"] == {"attention": [["layer_0"], ["layer_1"]], "ffn": [["layer_0", "layer_1"]]}
    assert layout["task"]["name"] == "rt_sentiment" and layout["source"]["step"] == run.step
    cfg, back = pe.load_params_export(out)
    assert cfg == run.config
    _assert_bitwise(back, run.params)
    # The CLI import writes our scanned tree as msgpack (what convert to-hf --params reads).
    from flax import serialization
    assert main(["convert", "from-params", "--dir", str(out), "--out", str(tmp_path / "p.msgpack")]) == 0
    _assert_bitwise(serialization.msgpack_restore((tmp_path / "p.msgpack").read_bytes()), run.params)


CASES = [("all", 1, 1), ("all", 2, 2), ("attention", 2, 2), ("attention", 1, 1), ("ffn", 2, 2), ("ffn", 1, 2),
         ("none", 1, 2), ("none", 1, 1)]


def _random_tree(cfg, seed=0):
    from albert_jax.modeling import AlbertForPreTraining

    abstract = jax.eval_shape(AlbertForPreTraining(cfg).init, jax.random.PRNGKey(0), np.zeros((1, 4), np.int32))
    rng = np.random.default_rng(seed)
    return traverse_util.unflatten_dict({k: rng.standard_normal(a.shape).astype(np.float32) for k, a in
                                         traverse_util.flatten_dict(nn.unbox(abstract["params"])).items()})


@pytest.mark.parametrize("sharing,G,K", CASES)
def test_params_export_round_trips_bit_for_bit(tmp_path, sharing, G, K):
    cfg = AlbertConfig(vocab_size=40, embedding_size=8, hidden_size=16, num_attention_heads=2, intermediate_size=32,
                       num_hidden_layers=4, max_position_embeddings=16, sharing=sharing, num_hidden_groups=G,
                       inner_group_num=K)
    params = _random_tree(cfg)
    pe.save_params_export(tmp_path / "p", cfg, params)
    tree = pe.unscan(cfg, params)
    enc = tree["albert"]["encoder"]
    assert sorted(k for k in enc if k.startswith("layer_")) == [f"layer_{i}" for i in range(4)]
    block = enc["layer_3"]["inner_1"] if K > 1 else enc["layer_3"]
    assert set(block) == {"attention", "ffn"} and block["ffn"]["intermediate"]["kernel"].shape == (16, 32)
    sets = json.loads((tmp_path / "p" / "layout.json").read_text())["sets"]
    for part, shared in (("attention", cfg.attention_shared), ("ffn", cfg.ffn_shared)):
        assert len(sets[part]) == (G if shared else 4) * K
        assert all(len(s) == (4 // G if shared else 1) for s in sets[part])
    back_cfg, back = pe.load_params_export(tmp_path / "p")
    assert back_cfg == cfg
    _assert_bitwise(back, params)


def test_a_shared_set_whose_copies_differ_is_named():
    cfg = AlbertConfig(vocab_size=40, embedding_size=8, hidden_size=16, num_attention_heads=2, intermediate_size=32,
                       num_hidden_layers=4, max_position_embeddings=16, sharing="attention", num_hidden_groups=2)
    tree = pe.unscan(cfg, _random_tree(cfg))
    tree["albert"]["encoder"]["layer_3"]["attention"]["query"]["bias"][0, 0] += 1.0
    with pytest.raises(pe.ParamsExportError, match=r"attention of layer_3 differs from layer_2 \(query/bias\).*"
                                                    r"layer_2, layer_3 one shared set"):
        pe.rescan(cfg, tree)
    pe.rescan(cfg, pe.unscan(cfg, _random_tree(cfg)))  # unchanged copies rebuild


@pytest.mark.parametrize("sharing,smap,K", [("all", "0.1x3", 1), ("ffn", "0-1.0.1", 2)])
def test_params_export_of_a_sharing_map_round_trips(tmp_path, sharing, smap, K):
    """What HF cannot express (a layer -> set map) goes out per layer and comes back bit for bit."""
    cfg = AlbertConfig(vocab_size=40, embedding_size=8, hidden_size=16, num_attention_heads=2, intermediate_size=32,
                       num_hidden_layers=4, max_position_embeddings=16, sharing=sharing, sharing_map=smap,
                       inner_group_num=K)
    params = _random_tree(cfg)
    pe.save_params_export(tmp_path / "p", cfg, params)
    part = "attention" if sharing == "all" else "ffn"
    sets = json.loads((tmp_path / "p" / "layout.json").read_text())["sets"][part]
    assert len(sets) == cfg.num_shared_sets * K
    back_cfg, back = pe.load_params_export(tmp_path / "p")
    assert back_cfg == cfg
    _assert_bitwise(back, params)
