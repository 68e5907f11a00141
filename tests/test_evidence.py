"""What the tables rest on (albert_jax/ablations/evidence.py): seeds found on disk, per-example samples read back
from the files the trainer writes, the "did not learn" flag, and the verdicts on the paper's reading."""
import json
import re
from pathlib import Path

import numpy as np
import pytest

from albert_jax.ablations import evidence
from albert_jax.ablations import evidence_dir
from albert_jax.ablations import readings
from albert_jax.ablations import stats
from albert_jax.training import examples


def test_seeded_dirs_in_seed_order_and_not_the_random_init_stage(tmp_path):
    for name in ("pretrain", "pretrain-seed-10", "pretrain-seed-2", "finetune-x", "finetune-x-random",
                 "finetune-x-seed-1", "pretrain-seed-x"):
        (tmp_path / name).mkdir()
    assert [p.name for p in evidence.seeded_dirs(tmp_path, "pretrain")] == ["pretrain", "pretrain-seed-2",
                                                                           "pretrain-seed-10"]
    assert [p.name for p in evidence.seeded_dirs(tmp_path, "finetune-x")] == ["finetune-x", "finetune-x-seed-1"]


def _finetune_seed(directory, seed, pred, label, index, dev_accuracy):
    d = directory / f"seed-{seed}"
    d.mkdir(parents=True)
    (d / "results.json").write_text(json.dumps({"seed": seed, "dev": {"accuracy": dev_accuracy}}))
    examples.save_examples(str(d / evidence.BEST_EXAMPLES_FILE),
                           {"dev": {"pred": np.array(pred), "label": np.array(label), "index": np.array(index)}})


def test_finetune_samples_are_per_example_correctness_in_example_order(tmp_path):
    # Written in batch order with a padding row (index -1); read back sorted by example index.
    _finetune_seed(tmp_path / "ft", 0, pred=[1, 0, 1, 1], label=[1, 1, 0, 0], index=[2, 0, 1, -1], dev_accuracy=1 / 3)
    _finetune_seed(tmp_path / "ft", 1, pred=[0, 0, 0, 0], label=[1, 1, 0, 0], index=[2, 0, 1, -1], dev_accuracy=1 / 3)
    ts = evidence.finetune_samples([tmp_path / "ft"], "accuracy")
    np.testing.assert_array_equal(ts.samples[0], [0.0, 0.0, 1.0])  # examples 0, 1, 2: wrong, wrong, right
    np.testing.assert_array_equal(ts.samples[1], [0.0, 1.0, 0.0])
    assert ts.values == [pytest.approx(1 / 3)] * 2
    np.testing.assert_array_equal(ts.labels, [1, 0, 1])
    assert ts.majority == pytest.approx(2 / 3)


def test_a_seed_without_its_examples_makes_the_interval_over_seeds_only(tmp_path):
    _finetune_seed(tmp_path / "ft", 0, pred=[1], label=[1], index=[0], dev_accuracy=1.0)
    d = tmp_path / "ft" / "seed-1"
    d.mkdir()
    (d / "results.json").write_text(json.dumps({"seed": 1, "dev": {"accuracy": 0.5}}))
    ts = evidence.finetune_samples([tmp_path / "ft"], "accuracy")
    assert ts.samples == [1.0, 0.5]
    assert stats.estimate(ts.samples).over == "seeds"


def test_a_table_says_how_many_fine_tuning_seeds_stand_behind_each_cell(tmp_path):
    """Mid-sweep, one pretraining seed's fine-tunes are listed as such; when every cell is complete, one line."""
    from albert_jax.ablations import registry
    from albert_jax.ablations import table

    for seed in (0, 1):
        _finetune_seed(tmp_path / "ft", seed, pred=[1], label=[1], index=[0], dev_accuracy=1.0)
    (tmp_path / "ft-seed-1").mkdir()
    ts = evidence.finetune_samples([tmp_path / "ft", tmp_path / "ft-seed-1"], "accuracy")
    assert ts.per_pretraining == (2, 0)
    exp = registry.Experiment(name="x", title="x", reading="x", columns=(), rows=lambda s: [], finetune=("t",))
    records = [{"row": r, "pretrain_seeds": 3, "finetune": {"t": {"per_pretraining": c}}}
               for r, c in (("a", ts.per_pretraining), ("b", (2, 2, 2)))]
    assert table.finetune_seed_lines(exp, records) == [
        "Fine-tuning cells in progress (finished fine-tuning seeds under pretraining seed 0+1+...): a t 2+0+0; "
        "b t 2+2+2."]
    records[0]["finetune"]["t"]["per_pretraining"] = (2, 2, 2)
    assert table.finetune_seed_lines(exp, records) == ["Fine-tuning seeds per pretraining seed: 2."]


@pytest.mark.parametrize("value,majority,flag", [(0.520, 0.509, True), (0.529, 0.509, True), (0.530, 0.509, False),
                                                 (0.491, 0.509, True), (0.700, 0.509, False), (0.9, None, False)])
def test_did_not_learn_within_two_points_of_the_majority(value, majority, flag):
    assert evidence.did_not_learn(value, majority) is flag


def test_a_reading_on_a_row_that_did_not_learn_is_not_resolved(tmp_path):
    """A fine-tuned row stuck at the majority class is flagged, and a reading that compares it is not taken as
    evidence either way (the demo's NSP row once made 'SOP fine-tunes better' look reproduced)."""
    from albert_jax.ablations import registry
    from albert_jax.ablations import table

    exp = registry.Experiment(name="x", title="x", reading="x", columns=(), rows=lambda s: [],
                       checks=(readings.Check("a beats b", "ft:t", "a", "b", "higher"),))
    learnt = {"did_not_learn": False}
    records = [{"row": "a", "est": {}, "samples": {"ft:t": [0.8, 0.81]}, "finetune": {"t": learnt}},
               {"row": "b", "est": {}, "samples": {"ft:t": [0.5, 0.5]}, "finetune": {"t": {"did_not_learn": True}}}]
    for r in records:
        r["eval_set"] = ""
    [r] = table.check_readings(exp, records)
    assert (r.verdict, r.words) == ("not resolved", "b did not learn")
    records[1]["finetune"]["t"] = learnt
    assert table.check_readings(exp, records)[0].verdict == "reproduced in direction"


def test_a_reading_from_an_unfinished_row_says_so_far(tmp_path):
    """A verdict drawn while a row is still running is marked "so far" and names that row; once both rows are
    done it is the plain verdict."""
    from albert_jax.ablations import registry
    from albert_jax.ablations import table

    exp = registry.Experiment(name="x", title="x", reading="x", columns=(), rows=lambda s: [],
                       checks=(readings.Check("a beats b", "ft:t", "a", "b", "higher"),))
    learnt = {"did_not_learn": False}
    records = [{"row": "a", "est": {}, "samples": {"ft:t": [0.8, 0.81]}, "finetune": {"t": learnt},
                "eval_set": "", "done": False},
               {"row": "b", "est": {}, "samples": {"ft:t": [0.5, 0.5]}, "finetune": {"t": learnt},
                "eval_set": "", "done": True}]
    [r] = table.check_readings(exp, records)
    assert r.verdict == "reproduced in direction so far" and r.words.endswith("; a not finished"), r
    records[0]["done"] = True
    [r] = table.check_readings(exp, records)
    assert r.verdict == "reproduced in direction" and "not finished" not in r.words


def _accuracy(n, right, seed=0):
    """One seed's per-example correctness: `right` of `n` examples, spread by a fixed permutation."""
    x = np.zeros(n)
    x[np.random.default_rng(seed).permutation(n)[:right]] = 1
    return x


def test_the_downstream_mean_averages_only_the_tasks_that_respond_to_pretraining():
    """Hand-built rows: both beat random init on `a` (80% and 70% vs 60%, 1,000 examples: resolved) and neither on
    `b` (50% vs 50%): the mean is `a` alone, and row B's difference to A is -10 points, resolved."""
    from albert_jax.ablations import registry
    from albert_jax.ablations import table

    exp = registry.Experiment("x", "x", "x", columns=(), rows=lambda s: [], finetune=("a", "b"))
    rnd = {"a": [_accuracy(1000, 600, 1)], "b": [_accuracy(1000, 500, 2)]}
    records = []
    for name, right_a in (("A", 800), ("B", 700)):
        samples = {"ft:a": [_accuracy(1000, right_a, 3)], "ft:b": [_accuracy(1000, 500, 4)]}
        records.append({"row": name, "samples": samples, "random_samples": rnd, "est": {}, "diff": {},
                        "finetune": {"a": {}, "b": {}},
                        "vs_random": {t: stats.difference(samples[f"ft:{t}"], rnd[t]) for t in ("a", "b")}})
    assert table.responding_tasks(exp, records) == {"a": (2, 2), "b": (0, 2)}
    table._add_task_mean(exp, records, records[0])
    a, b = records
    assert a["responding"] == ["a"]
    assert a["est"]["ft:mean"].value == pytest.approx(0.8) and b["est"]["ft:mean"].value == pytest.approx(0.7)
    d = b["diff"]["ft:mean"]
    assert d.value == pytest.approx(-0.1) and d.resolved
    assert a["vs_random"]["mean"].value == pytest.approx(0.2) and a["vs_random"]["mean"].resolved
    assert ("Downstream: mean of the responding tasks (ours)", "ours:ft:mean") in table.columns(exp)
    assert table.cell(b, "ours:ft:mean").startswith("70.0 [") and "Δ -10.0" in table.cell(b, "ours:ft:mean")
    one = registry.Experiment("y", "y", "y", columns=(), rows=lambda s: [], finetune=("a",))
    assert all(k != "ours:ft:mean" for _, k in table.columns(one))  # one task: its own column is the headline


def test_no_responding_task_is_said_not_averaged():
    from albert_jax.ablations import registry
    from albert_jax.ablations import table

    exp = registry.Experiment("x", "x", "x", columns=(), rows=lambda s: [], finetune=("a", "b"))
    same = [_accuracy(500, 250, 5)]
    rec = {"row": "A", "samples": {"ft:a": same, "ft:b": same}, "random_samples": {"a": same, "b": same},
           "est": {}, "diff": {}, "finetune": {}, "vs_random": {t: stats.difference(same, same) for t in "ab"}}
    table._add_task_mean(exp, [rec], rec)
    assert rec["responding"] == [] and "ft:mean" not in rec["est"]
    assert table.cell(rec, "ours:ft:mean") == "no task responds"


def test_a_table_finds_the_tasks_a_sweep_added_with_tasks(tmp_path):
    from albert_jax.ablations import registry
    from albert_jax.ablations import sweep
    from albert_jax.ablations import table

    exp = registry.get("table5")
    row = exp.rows_at("smoke")[0]
    d = sweep.row_directory(tmp_path, "table5", "smoke", row)
    for name in ("finetune-rt_sentiment", "finetune-verse_paraphrase-seed-1", "finetune-wordnet_wic-random",
                 "finetune-not_a_task"):
        (d / name).mkdir(parents=True)
    found = table.with_found_tasks(exp, "smoke", tmp_path)
    assert found.finetune == ("rt_sentiment", "verse_paraphrase", "wordnet_wic")
    with pytest.raises(registry.ExperimentError, match="unknown task 'verse_paraphase'.*did you mean verse_paraphrase"):
        exp.with_tasks(["verse_paraphase"])
    plans = sweep.plan(exp.with_tasks(["wordnet_wic"]), "smoke", tmp_path, seeds=2)
    assert {s.name for s in plans[0].stages} >= {"finetune-wordnet_wic", "finetune-wordnet_wic-seed-1"}
    cmd = sweep.launch_commands(exp, "smoke", tmp_path, [plans[:1]], [], 2, None, ["wordnet_wic"])[0]
    assert "--tasks wordnet_wic" in cmd


def test_an_unreadable_per_example_file_is_named(tmp_path):
    path = tmp_path / examples.EXAMPLES_FILE
    path.write_bytes(b"PK\x03\x04 not a zip archive")
    with pytest.raises(ValueError, match=f"{path}: not a readable per-example file"):
        examples.load_examples(path)


# ---------------------------------------------------------------- committed tables and their evidence
DOCS = Path(__file__).resolve().parent.parent / "docs"


def committed_tables() -> list[Path]:
    """Every committed table directory that keeps its evidence beside it (<dir>/table.md, <dir>/evidence/)."""
    found = [*DOCS.glob(f"reproduction/**/{evidence_dir.EVIDENCE}"), *DOCS.glob(f"chinese*/**/{evidence_dir.EVIDENCE}")]
    return sorted({d.parent for d in found if d.is_dir() and (d.parent / "table.md").is_file()})


@pytest.mark.parametrize("directory", committed_tables(), ids=lambda d: str(d.relative_to(DOCS)))
def test_a_committed_table_rebuilds_byte_for_byte_from_its_evidence(directory, tmp_path):
    """The table and CSV as committed are what their evidence gives (tests/test_sweeps.py checks the rebuild on a
    freshly exported directory, so this holds even before any table keeps its evidence)."""
    from albert_jax.ablations import registry
    from albert_jax.ablations import table

    root = directory / evidence_dir.EVIDENCE
    name, scale = evidence_dir.experiment_of(root)  # the evidence's layout says which table it is
    evidence_dir.verify(root / name / scale)
    table.build(registry.get(name), scale, root, tmp_path, plots=False)
    for f in ("table.md", "table.csv"):
        assert (tmp_path / f).read_bytes() == (directory / f).read_bytes(), f"{directory / f} differs from its rebuild"


ABSOLUTE_PATH = re.compile(r"(?:^|[\s=:,'\"])/[\w.-]+/")  # "/home/x/...", "--workdir=/tmp/..."; not "eval/mlm"


def test_an_absolute_path_is_found_in_a_string_and_a_metric_name_is_not():
    assert ABSOLUTE_PATH.search("/home/someone/runs/table5")
    assert ABSOLUTE_PATH.search("albert-jax pretrain --workdir=/tmp/x/pretrain")
    assert not ABSOLUTE_PATH.search("eval/mlm_accuracy")
    assert not ABSOLUTE_PATH.search("${RUNS}/table5/cpu/sop/pretrain")


@pytest.mark.parametrize("directory", committed_tables(), ids=lambda d: str(d.relative_to(DOCS)))
def test_committed_evidence_names_no_machine_path(directory):
    """Exported evidence writes the cache and runs roots as placeholders and strips a SentencePiece model's
    training paths (evidence_dir.portable_json, _without_training_paths): a path of the machine that ran the study
    would say nothing on another and must not be committed."""
    import jax
    from sentencepiece import sentencepiece_model_pb2

    root = directory / evidence_dir.EVIDENCE
    for f in sorted([*root.rglob("*.json"), *root.rglob("*.jsonl")]):
        lines = f.read_text().splitlines() if f.suffix == ".jsonl" else [f.read_text()]
        for n, line in enumerate(lines, 1):
            for s in jax.tree_util.tree_leaves(json.loads(line)) if line.strip() else ():
                assert not (isinstance(s, str) and ABSOLUTE_PATH.search(s)), f"{f}:{n}: an absolute path in {s!r}"
    for model in root.rglob("spiece.model"):
        proto = sentencepiece_model_pb2.ModelProto()
        proto.ParseFromString(model.read_bytes())
        assert not proto.trainer_spec.input and not proto.trainer_spec.model_prefix, f"{model}: training paths kept"


STUDIES = DOCS / "reproduction" / "cpu"
WITHOUT_EVIDENCE = DOCS / "reproduction" / "without-evidence.md"


def listed_without_evidence() -> dict[str, tuple[str, str]]:
    """docs/reproduction/without-evidence.md's rows: folder -> (superseded by, how far)."""
    rows = {}
    for line in WITHOUT_EVIDENCE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) == 4 and cells[0] != "folder" and set(cells[0]) != {"-"}:
            rows[cells[0]] = (cells[2], cells[3])
    return rows


def test_every_committed_study_keeps_its_evidence_or_is_listed_as_printed_before_evidence():
    """A new study cannot be committed without its evidence, and the list of the old ones shrinks as they are rerun:
    a listed folder that gained evidence, or is gone, must leave the list."""
    listed = listed_without_evidence()
    studies = {d.name: d for d in STUDIES.iterdir() if d.is_dir()}
    kept = {name for name, d in studies.items() if (d / evidence_dir.EVIDENCE).is_dir()}
    assert len(listed) > 0 and kept, "the list or the evidence was not found: is the docs layout the one this reads?"
    unlisted = sorted(set(studies) - kept - set(listed))
    assert not unlisted, f"{unlisted}: commit their evidence (table --export-evidence) or list in {WITHOUT_EVIDENCE}"
    stale = sorted(name for name in listed if name not in studies or name in kept)
    assert not stale, f"{stale}: gone or now with evidence; delete their rows from {WITHOUT_EVIDENCE}"
    for name, (by, how) in listed.items():
        if by == "—":
            assert not how, f"{WITHOUT_EVIDENCE}: {name} is superseded by nothing, so 'how far' stays empty"
        else:
            assert by in kept and how in ("whole", "in part"), f"{WITHOUT_EVIDENCE}: {name}'s row: {by!r}, {how!r}"
