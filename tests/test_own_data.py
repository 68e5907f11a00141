"""A user's own files, end to end: task files of every kind written from our real sets (TSV, CSV, JSONL, CoNLL,
SQuAD JSON), fine-tuned through the CLI from a real pretraining run, predicted from (Python API and `predict`),
and the HF export's outputs and label names matched; bad rows named by file:line."""
import csv
import json
import os

import numpy as np
import pytest

from albert_jax.data.labeled import load_labeled
from albert_jax.data.labeled_tasks import PD_POS_TAGS
from albert_jax.main import main
from albert_jax.runs.predict import Predictor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ["negative", "positive"]
STEPS = ["--set", "train.num_train_steps=4", "--set", "train.eval_every=4", "--set", "train.checkpoint_every=4",
         "--log-level", "WARNING"]


def _balanced(rows, n):
    """n rows alternating between the labels (our splits are ordered by source file, one label first)."""
    by = {0: [r for r in rows if r["label"] == 0], 1: [r for r in rows if r["label"] == 1]}
    return [by[i % 2][i // 2] for i in range(n)]


def _tsv(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("text\tsentiment\n")
        for r in rows:
            f.write(f"{r['sentence'].replace(chr(9), ' ')}\t{NAMES[r['label']]}\n")


def _finetune(task_file, init, wd) -> int:
    os.chdir(ROOT)
    return main(["finetune", "--config", f"experiments/finetune.py:task={task_file},init={init},scale=smoke",
                 "--workdir", str(wd), *STEPS])


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
    d = load_labeled("rt_sentiment")
    root = tmp_path_factory.mktemp("own")
    _tsv(root / "train.tsv", _balanced(d["train"], 64))
    _tsv(root / "dev.tsv", _balanced(d["validation"], 32))
    _tsv(root / "test.tsv", _balanced(d["test"], 32))
    (root / "task.json").write_text(json.dumps({"kind": "classification", "train": "train.tsv", "dev": "dev.tsv",
                                                "test": "test.tsv", "text": "text", "label": "sentiment"}))
    return root, d


@pytest.fixture(scope="module")
def rt_run(rt, tiny_pretrained):
    root, _ = rt
    assert _finetune(root / "task.json", tiny_pretrained, root / "run") == 0
    return root / "run"


def test_a_tsv_task_fine_tunes_with_its_label_names_and_scores_test_once(rt, rt_run):
    result = json.loads((rt_run / "seed-0" / "results.json").read_text())
    assert 0.0 <= result["dev"]["accuracy"] <= 1.0 and result["test"]["test/examples"] == 32
    task = json.loads((rt_run / "seed-0" / "config.json").read_text())["task"]
    assert task["spec"]["labels"] == NAMES and task["name"] == "task" and task["num_labels"] == 2


def test_evaluate_scores_a_labelled_file_as_fine_tuning_scored_dev(rt, rt_run, tmp_path, capsys):
    """`albert-jax evaluate` on the run's own dev file gives the metrics fine-tuning recorded for its best
    checkpoint (the same evaluation code); a label the run does not know is named by file:line."""
    root, _ = rt
    assert main(["evaluate", "--workdir", str(rt_run), "--input", str(root / "dev.tsv")]) == 0
    out = json.loads(capsys.readouterr().out)
    dev = json.loads((rt_run / "seed-0" / "results.json").read_text())["dev"]
    assert out["step"] == json.loads((rt_run / "seed-0" / "results.json").read_text())["best_step"]
    assert out["checkpoint"] == "best" and out["headline"] == "accuracy"
    assert out["metrics"]["accuracy"] == dev["accuracy"] and out["metrics"]["examples"] == 32
    assert out["metrics"]["loss"] == pytest.approx(dev["loss"], abs=1e-5)
    lines = (root / "dev.tsv").read_text().splitlines()
    (tmp_path / "bad.tsv").write_text("\n".join([*lines[:2], lines[2].rsplit("\t", 1)[0] + "\tmeh"]) + "\n")
    assert main(["evaluate", "--workdir", str(rt_run), "--input", str(tmp_path / "bad.tsv")]) == 2
    assert "bad.tsv:3: unknown label 'meh' in column 'sentiment'; the task's labels: negative, positive" in \
        capsys.readouterr().err


def test_predict_matches_the_hf_export_and_keeps_the_label_names(rt, rt_run, tmp_path):
    transformers = pytest.importorskip("transformers")
    import torch

    root, d = rt
    texts = [r["sentence"] for r in d["test"][:6]]
    ours = Predictor.load(rt_run).predict(texts)
    assert [sorted(o["probabilities"]) for o in ours] == [NAMES] * 6
    assert all(o["label"] == max(o["probabilities"], key=o["probabilities"].get) for o in ours)
    assert main(["export", "--workdir", str(rt_run), "--to", "hf", "--out", str(tmp_path / "hf")]) == 0
    tok = transformers.AutoTokenizer.from_pretrained(tmp_path / "hf")
    model = transformers.AutoModelForSequenceClassification.from_pretrained(tmp_path / "hf").eval()
    assert model.config.id2label == {0: "negative", 1: "positive"}  # the user's names, through the export
    enc = tok(texts, padding=True, truncation=True, max_length=64, return_tensors="pt")
    with torch.no_grad():
        theirs = torch.softmax(model(**enc).logits, -1).numpy()
    mine = np.array([[o["probabilities"][n] for n in NAMES] for o in ours])
    assert np.abs(mine - theirs).max() < 1e-4, np.abs(mine - theirs).max()


def test_the_predict_command_writes_one_line_per_input(rt, rt_run, tmp_path, capsys):
    root, d = rt
    (tmp_path / "in.txt").write_text("".join(r["sentence"] + "\n" for r in d["test"][:3]) + "\n")
    out = tmp_path / "pred.jsonl"
    assert main(["predict", "--workdir", str(rt_run), "--input", str(tmp_path / "in.txt"), "--output", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["in.txt:1", "in.txt:2", "in.txt:3"]  # the blank line is no input
    assert all(x["label"] in NAMES and abs(sum(x["probabilities"].values()) - 1) < 1e-6 for x in lines)
    # The same rows as a TSV with the task's text column: the same predictions.
    assert main(["predict", "--workdir", str(rt_run), "--input", str(root / "test.tsv"), "--output",
                 str(tmp_path / "t.jsonl")]) == 0
    rows = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert len(rows) == 32 and rows[0]["id"] == "test.tsv:2"
    (tmp_path / "in.xml").write_text("<texts/>")
    capsys.readouterr()
    assert main(["predict", "--workdir", str(rt_run), "--input", str(tmp_path / "in.xml")]) == 2
    err = capsys.readouterr().err
    assert "in.xml: unknown format '.xml'" in err and "Traceback" not in err, err


def test_a_fine_tuned_head_is_matched_by_its_label_names(rt, rt_run, tmp_path, caplog):
    # Fine-tuning again from a fine-tuned seed: the same label names in another order remap the classifier's rows
    # (they used to be reused as they were: predictions label-swapped); the same names under another task name
    # reuse it; other names or another count start a fresh head (no refusal); each says so in one log line.
    from albert_jax.runs import finetune as ft
    from albert_jax.tasks.from_files import read_spec, task_from_spec

    root, _ = rt
    theirs = ft.resolve_init(str(rt_run / "seed-0")).head()["classifier"]

    def plan(name, labels):
        (tmp_path / f"{name}.json").write_text(json.dumps({
            "kind": "classification", "train": str(root / "train.tsv"), "dev": str(root / "dev.tsv"), "text": "text",
            "label": "sentiment", "labels": labels}))
        task = task_from_spec(read_spec(tmp_path / f"{name}.json"))
        src = ft.resolve_init(str(rt_run / "seed-0"))
        caplog.clear()
        with caplog.at_level("INFO", logger="albert_jax.finetune"):
            verdict = ft.plan_head(task, src, reset_head=False)
        lines = [r.getMessage() for r in caplog.records]
        assert len(lines) == 1, lines
        return verdict, lines[0], ft.initial_params(task, src.model_cfg, src, 0, reset_head=False)["classifier"]

    verdict, line, head = plan("task", ["positive", "negative"])
    assert verdict == "remap" and "remapped" in line and "[positive, negative]" in line, line
    np.testing.assert_array_equal(head["kernel"], np.asarray(theirs["kernel"])[:, ::-1])
    np.testing.assert_array_equal(head["bias"], np.asarray(theirs["bias"])[::-1])
    verdict, line, head = plan("renamed", NAMES)
    assert verdict == "reuse" and "reused for task renamed" in line, line
    np.testing.assert_array_equal(head["kernel"], np.asarray(theirs["kernel"]))
    for labels in (["negative", "neutral", "positive"], ["bad", "good"]):
        verdict, line, head = plan("task", labels)
        assert verdict == "reset" and "not reused" in line and "starts fresh" in line, line
        kernel = np.asarray(theirs["kernel"])
        assert head["kernel"].shape != kernel.shape or not np.array_equal(head["kernel"], kernel)


def test_predict_warns_once_of_labels_the_run_does_not_know(rt, rt_run, tmp_path, capsys):
    root, _ = rt
    lines = (root / "test.tsv").read_text().splitlines(keepends=True)[:5]
    lines[2] = lines[2].rsplit("\t", 1)[0] + "\tneutral\n"
    lines[4] = lines[4].rsplit("\t", 1)[0] + "\tneutral\n"
    (tmp_path / "labelled.tsv").write_text("".join(lines))
    capsys.readouterr()
    assert main(["predict", "--workdir", str(rt_run), "--input", str(tmp_path / "labelled.tsv"), "--output",
                 str(tmp_path / "p.jsonl")]) == 0
    warned = [x for x in capsys.readouterr().err.splitlines() if "does not know" in x]
    assert len(warned) == 1 and "'neutral' (lines 3, 5)" in warned[0] and "negative, positive" in warned[0], warned
    assert len((tmp_path / "p.jsonl").read_text().splitlines()) == 4  # predicted all the same


def test_predictor_load_says_nothing_of_orbax_internals(rt_run, caplog, monkeypatch):
    import logging

    monkeypatch.setattr(logging.getLogger("absl"), "level", logging.NOTSET)  # as in a fresh Python session
    with caplog.at_level("INFO"):
        Predictor.load(rt_run)
    said = [r.getMessage() for r in caplog.records if r.name == "absl" and r.levelno >= logging.WARNING]
    assert not said, said  # "Given directory is read only" on every load, before
    assert logging.getLogger("absl").level == logging.NOTSET  # and left as it was


def test_predict_output_under_a_regular_file_is_one_line(rt, rt_run, tmp_path, capsys):
    root, _ = rt
    (tmp_path / "a_file").write_text("x")
    out = tmp_path / "a_file" / "p.jsonl"
    capsys.readouterr()
    assert main(["predict", "--workdir", str(rt_run), "--input", str(root / "test.tsv"), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--output {out}: {tmp_path / 'a_file'} is a file, not a directory" in err and "Traceback" not in err, err


@pytest.mark.parametrize("kind", ["pair", "regression"])
def test_jsonl_pairs_and_csv_regression_fine_tune(kind, tiny_pretrained, tmp_path):
    if kind == "pair":
        d = load_labeled("wordnet_wic")
        for split, name in (("train", "train.jsonl"), ("validation", "dev.jsonl")):
            with open(tmp_path / name, "w", encoding="utf-8") as f:
                for r in _balanced(d[split], 32):
                    f.write(json.dumps({"a": r["sentence1"], "b": r["sentence2"], "same_sense": r["label"]}) + "\n")
        spec = {"kind": "pair", "train": "train.jsonl", "dev": "dev.jsonl", "text": "a", "pair": "b",
                "label": "same_sense"}
    else:
        d = load_labeled("rt_sentiment")
        for split, name in (("train", "train.csv"), ("validation", "dev.csv")):
            with open(tmp_path / name, "w", encoding="utf-8", newline="") as f:
                w = csv.writer(f)
                w.writerow(["sentence", "valence"])
                for r in _balanced(d[split], 32):
                    w.writerow([r["sentence"], r["valence"]])
        spec = {"kind": "regression", "train": "train.csv", "dev": "dev.csv", "label": "valence"}
    (tmp_path / "t.json").write_text(json.dumps(spec))
    assert _finetune(tmp_path / "t.json", tiny_pretrained, tmp_path / "run") == 0
    result = json.loads((tmp_path / "run" / "seed-0" / "results.json").read_text())
    assert ("accuracy" if kind == "pair" else "pearson") in result["dev"]
    p = Predictor.load(tmp_path / "run")
    if kind == "pair":
        out = p.predict([("an abject apology", "abject cowardice")])
        assert out[0]["label"] in ("0", "1")  # the labels as the file wrote them
    else:
        out = p.predict(["a gripping film"])
        assert isinstance(out[0]["score"], float)


def test_conll_tagging_and_squad_spans_fine_tune_and_predict(tiny_pretrained, tmp_path, capsys):
    pos = load_labeled("pd_pos")
    for split, name in (("train", "train.conll"), ("validation", "dev.conll")):
        with open(tmp_path / name, "w", encoding="utf-8") as f:
            f.write("-DOCSTART- O\n\n")
            for r in pos[split][:24]:
                f.write("".join(f"{w}\t{t}\n" for w, t in zip(r["words"].split(" "), r["tags"].split(" "))) + "\n")
    spec = {"kind": "tagging", "train": "train.conll", "dev": "dev.conll"}
    (tmp_path / "pos.json").write_text(json.dumps(spec))
    # 24 train sentences do not hold every tag of the dev ones: read from the train file, the tag set is short
    assert _finetune(tmp_path / "pos.json", tiny_pretrained, tmp_path / "pos0") == 2
    assert "dev.conll:" in capsys.readouterr().err
    (tmp_path / "pos.json").write_text(json.dumps({**spec, "labels": list(PD_POS_TAGS)}))  # given in the task file
    assert _finetune(tmp_path / "pos.json", tiny_pretrained, tmp_path / "pos") == 0
    words = pos["test"][0]["words"].split(" ")
    tagged = Predictor.load(tmp_path / "pos").predict([words])[0]
    assert tagged["words"] == words and len(tagged["tags"]) == len(words)
    assert all(t in PD_POS_TAGS for t in tagged["tags"] if t is not None)

    spans = load_labeled("wordnet_lemma_span")
    for split, name in (("train", "train.json"), ("validation", "dev.json")):
        qas = [{"context": r["context"], "qas": [{"id": r["id"], "question": r["question"], "answers": [
            {"text": r["answer_text"], "answer_start": r["answer_start"]}]}]} for r in spans[split][:24]]
        (tmp_path / name).write_text(json.dumps({"data": [{"title": "wordnet", "paragraphs": qas}]}))
    (tmp_path / "span.json").write_text(json.dumps({"kind": "span", "train": "train.json", "dev": "dev.json",
                                                    "max_seq_length": 64}))
    assert _finetune(tmp_path / "span.json", tiny_pretrained, tmp_path / "span") == 0
    r = spans["test"][0]
    answer = Predictor.load(tmp_path / "span").predict([{"question": r["question"], "context": r["context"]}])[0]
    assert isinstance(answer["answer"], str) and answer["answer"] in r["context"]


@pytest.mark.parametrize("bad,where", [
    ("dev_label", "dev.tsv:3: unknown label 'meh'"),
    ("dev_empty", "dev.tsv:2: empty text in column 'text'"),
    ("no_column", "train.tsv:1: the header has no column 'sentiment'"),
    ("train_empty_label", "train.tsv:4: empty label in column 'sentiment'"),  # it used to become a class ''
])
def test_bad_rows_are_named_by_file_and_line(bad, where, rt, tiny_pretrained, tmp_path, capsys):
    root, _ = rt
    lines = {s: (root / f"{s}.tsv").read_text().splitlines(keepends=True) for s in ("train", "dev")}
    if bad == "dev_label":
        lines["dev"][2] = lines["dev"][2].rsplit("\t", 1)[0] + "\tmeh\n"
    elif bad == "dev_empty":
        lines["dev"][1] = "\t" + lines["dev"][1].rsplit("\t", 1)[1]
    elif bad == "train_empty_label":
        lines["train"][3] = lines["train"][3].rsplit("\t", 1)[0] + "\t\n"
    else:
        lines["train"][0] = "text\tlabel\n"
    for s in lines:
        (tmp_path / f"{s}.tsv").write_text("".join(lines[s]))
    (tmp_path / "task.json").write_text(json.dumps({"kind": "classification", "train": "train.tsv", "dev": "dev.tsv",
                                                   "text": "text", "label": "sentiment"}))
    assert _finetune(tmp_path / "task.json", tiny_pretrained, tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert where in err and "Traceback" not in err, err
