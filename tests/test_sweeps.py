"""The experiment registry, sweeps (local, killed and resumed, through submitit's local executor, printed) and the
tables built from their runs. The `--jobs` launcher's own behaviour: tests/test_sweeps_jobs.py."""
import csv
import dataclasses
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from smoke_sweeps import ABLATIONS, FAST, ROOT, SIZES, cli

from albert_jax.ablations import evidence as ablation_evidence
from albert_jax.ablations import evidence_dir
from albert_jax.ablations import registry
from albert_jax.ablations import sweep
from albert_jax.ablations import table
from albert_jax.config import preset
from procs import user_env


# ---------------------------------------------------------------- the registry
def test_registry_holds_every_experiment_of_the_issue():
    names = set(registry.load_registry())
    assert {"table1", "table2", "table3", "table4", "table5", "table11", "table12", "groups"} <= names
    assert {"claim_layers", "claim_ffn_vs_attention", "claim_every3", "claim_e128", "claim_nsp_pairs",
            "claim_shared_speed"} <= names


def test_every_registered_experiment_has_a_smoke_sweep_in_the_tests():
    assert sorted(ABLATIONS + SIZES) == sorted(registry.load_registry())  # a new experiment joins one of the two files


def test_registry_refuses_two_experiments_with_one_name(tmp_path):
    body = ('from albert_jax.ablations.registry import Experiment, Row\n'
            'EXPERIMENT = Experiment(name="same", title="t", reading="r", columns=("params",), '
            'rows=lambda scale: [Row("a", {})])\n')
    (tmp_path / "one.py").write_text(body)
    (tmp_path / "two.py").write_text(body)
    with pytest.raises(registry.ExperimentError, match="'same' is defined twice: one.py and two.py"):
        registry.load_registry(tmp_path)


def test_unknown_experiment_and_row_name_the_near_ones():
    with pytest.raises(registry.ExperimentError, match="did you mean table4"):
        registry.get("tabel4")
    with pytest.raises(registry.ExperimentError, match="no row 'E=128 shared'"):
        registry.get("table4").row("cpu", "E=128 shared")


@pytest.mark.parametrize("scale", registry.SCALES)
def test_every_experiment_plans_and_validates_at_every_scale(scale, tmp_path):
    """Each row's stages are built and the whole pretraining config validated (in seconds, nothing trained)."""
    for name, exp in registry.load_registry().items():
        plans = sweep.plan(exp, scale, tmp_path)
        assert plans and len(plans) == len(exp.rows_at(scale)), name
        sweep.check(plans)
        for p in plans:
            random_init = ["finetune"] * len(exp.finetune) if scale != "smoke" else []  # the baseline rows
            assert [s.kind for s in p.stages] == ["pretrain"] + ["finetune"] * len(exp.finetune) + random_init
            c = p.stages[0].config()
            assert c.scale == scale
            for key, value in p.row.fields.items():  # the row's settings reached the config, typed
                section, field = key.split(".", 1)
                assert c[section][field] == value, (name, p.row.name, key)


def test_pretraining_seeds_and_the_random_init_baseline_are_stages_of_every_row(tmp_path):
    exp = registry.get("table5")
    plans = sweep.plan(exp, "cpu", tmp_path, seeds=2)
    names = [s.name for s in plans[0].stages]
    assert names == ["pretrain", "finetune-rt_sentiment", "pretrain-seed-1", "finetune-rt_sentiment-seed-1",
                     "finetune-rt_sentiment-random", "finetune-rt_sentiment-random-seed-1"]
    pre0, ft0, pre1, ft1, rnd, rnd1 = plans[0].stages
    # A twin per pretraining seed, on fine-tuning seeds of its own: the baseline has as many seeds as its row.
    assert (rnd.config().train.seed, rnd1.config().train.seed) == (0, sweep.TWIN_SEED_STRIDE)
    assert rnd1.config().init == "random" and rnd1.config().model == rnd.config().model
    assert (pre0.config().train.seed, pre1.config().train.seed) == (0, 1)
    assert pre0.config().data.seed == pre1.config().data.seed  # the same instances: a seed is init and order
    assert ft1.config().init == str(pre1.workdir) and ft0.config().init == str(pre0.workdir)
    r = rnd.config()
    assert r.init == "random" and r.data.tokenizer.endswith("spm-4000-lower.model")
    for field, value in pre0.config().model.items():  # the row's own architecture, from scratch
        if field not in ("vocab_size", "hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout_prob",
                         "dtype", "param_dtype", "scan_layers", "remat_policy"):
            assert r.model[field] == value, field
    # One architecture, three rows: identical random-init stages, so the sweep trains one and links the others.
    assert len({sweep.fingerprint(p.stages[-1]) for p in plans}) == 1
    assert len({sweep.fingerprint(p.stages[-2]) for p in plans}) == 1
    assert sweep.fingerprint(plans[0].stages[-1]) != sweep.fingerprint(plans[0].stages[-2])
    assert len({sweep.fingerprint(p.stages[0]) for p in plans}) == 3
    assert "--seeds 2" in sweep.launch_commands(exp, "cpu", tmp_path, sweep.chains(plans), [], 2)[0]
    assert [s.name for s in sweep.plan(exp, "cpu", tmp_path, random_init=False)[0].stages] == ["pretrain",
                                                                                          "finetune-rt_sentiment"]
    with pytest.raises(sweep.SweepError, match="--seeds 0"):
        sweep.plan(exp, "cpu", tmp_path, seeds=0)


def test_paper_scale_rows_are_the_papers_architectures():
    """Our exact counts of each row's paper-scale model (the Params column) against the paper's printed value."""
    t4 = registry.get("table4")
    counts = {r.name: table.paper_scale_params(t4, r.name) for r in t4.rows_at("paper")}
    assert counts["E=128 all-shared"] == preset("albert-base").param_count() == 11_683_584
    assert counts["E=768 not-shared"] == preset("bert-base").param_count()
    assert counts["E=128 shared-FFN"] == preset("albert-base", sharing="ffn").param_count()
    for row in t4.rows_at("paper"):  # within 1.1M of the printed value (docs/reproduction.md: the residuals)
        assert abs(counts[row.name] / 1e6 - float(row.paper["params"].rstrip("M"))) < 1.1, row.name
    t1 = registry.get("table1")
    assert table.paper_scale_params(t1, "ALBERT xxlarge") == 222_595_584  # not the printed 235M (albert.md 1.3)


def test_cpu_scale_keeps_the_ablated_field_and_the_small_family():
    rows = {r.name: r.fields for r in registry.get("table3").rows_at("cpu")}
    assert [rows[f"all-shared E={e}"]["model.embedding_size"] for e in (64, 128, 256, 768)] == [8, 16, 32, 128]
    t11 = registry.get("table11").rows_at("cpu")
    assert [r.fields["model.num_hidden_layers"] for r in t11] == [1, 3, 6, 12, 24, 48]
    assert [r.warm_start for r in t11] == ["", "L=1", "L=3", "L=6", "L=12", "L=24"]


def test_the_table_names_a_rows_layer_map_not_only_its_sharing_mode():
    # claim (a)'s rows all read sharing=all; what tells them apart is the layer -> parameter-set map
    rows = {r.name: r.fields for r in registry.get("claim_layers").rows_at("cpu")}
    arch = {r: {"embedding_size": f["model.embedding_size"], "hidden_size": 128,
                "num_hidden_layers": f["model.num_hidden_layers"], "sharing": f["model.sharing"],
                "sharing_map": f.get("model.sharing_map", "")} for r, f in rows.items()}
    assert table.describe_arch(arch["share the shallow layers"]) == "E=128 H=128 L=4 sharing_map=0x2.1-2"
    assert table.describe_arch(arch["share the deep layers"]) == "E=128 H=128 L=4 sharing_map=0-1.2x2"
    assert table.describe_arch(arch["not-shared"]) == "E=128 H=128 L=4 none"
    # claim (c)'s grouped row reads sharing=all too: its groups tell it (and its random-init twin) apart
    rows = {r.name: r.fields for r in registry.get("claim_every3").rows_at("cpu")}
    arch = {r: {"embedding_size": f["model.embedding_size"], "hidden_size": 128, "sharing": f["model.sharing"],
                "num_hidden_layers": f["model.num_hidden_layers"],
                "num_hidden_groups": f.get("model.num_hidden_groups")}
            for r, f in rows.items()}
    assert table.describe_arch(arch["share every 3 layers"]) == "E=16 H=128 L=6 all, 2 groups"
    assert table.describe_arch(arch["all-shared"]) == "E=16 H=128 L=6 all"


def test_rows_that_share_an_architecture_but_not_a_tokenizer_name_two_random_init_twins():
    # zh_masking's SentencePiece row has the WordPiece rows' architecture but its own twin (other vocabulary): the
    # table once printed the WordPiece twin alone and hid the other
    rows = {r.name: r.fields for r in registry.get("zh_masking").rows_at("cpu")}
    arch = {r: {"embedding_size": f["model.embedding_size"], "hidden_size": 128, "num_hidden_layers": 4,
                "sharing": f["model.sharing"], "vocab": f"{f['data.tokenizer_kind']} V=?"} for r, f in rows.items()}
    records = [{"arch": a} for a in arch.values()]
    labels = {r: table.twin_label(a, records) for r, a in arch.items()}
    assert labels["SentencePiece"] == "E=128 H=128 L=4 all, spm V=?"
    assert labels["char (WordPiece)"] == labels["gold (WordPiece)"] == "E=128 H=128 L=4 all, wordpiece V=?"
    one_tokenizer = [r for r in records if r["arch"]["vocab"].startswith("wordpiece")]
    assert table.twin_label(arch["jieba (WordPiece)"], one_tokenizer) == "E=128 H=128 L=4 all"
    # a run recorded before data.tokenizer_kind existed was SentencePiece
    old_run = {"model": {"embedding_size": 128, "hidden_size": 128, "num_hidden_layers": 4, "sharing": "all",
                         "vocab_size": 4000}, "data": {}}
    assert table.arch_of(old_run)["vocab"] == "spm V=4000"


def test_sweep_settings_must_name_their_stage():
    with pytest.raises(sweep.SweepError, match="names its stage"):
        sweep.split_overrides(["train.num_train_steps=3"])


def test_print_commands_one_line_per_chain_and_warm_starts_stay_with_their_source(tmp_path):
    out = cli("sweep", "table11", "--scale", "cpu", "--runs", str(tmp_path), "--launcher", "print").stdout.split("\n")
    lines = [x for x in out if x]
    assert len(lines) == 1 and "--rows l-1,l-3,l-6,l-12,l-24,l-48" in lines[0]  # one chain: each row needs the last
    out = cli("sweep", "table4", "--scale", "cpu", "--runs", str(tmp_path), "--launcher", "print",
              "--set", "finetune.num_seeds=1").stdout.strip().split("\n")
    assert len(out) == 8 and all("--set finetune.num_seeds=1" in x for x in out)
    show = cli("experiments", "show", "table4", "--scale", "cpu", "--runs", str(tmp_path)).stdout
    assert "albert-jax pretrain --config experiments/pretrain.py:scale=cpu --set model.embedding_size=16" in show
    assert "paper: params=12M" in show


def test_a_deeper_row_warm_starts_from_its_shallower_rows_final_checkpoint(tmp_path):
    """Table 11 as the paper runs it: L=3 starts from L=1's last checkpoint (train.init_mode=deeper), in one
    sweep; the stacking itself is tests/test_init_tricks.py's."""
    out = cli("sweep", "table11", "--scale", "smoke", "--runs", str(tmp_path), "--rows", "L=1,L=3", *FAST,
              "--log-level", "INFO")
    rows = tmp_path / "table11" / "smoke"
    src = rows / "l-1" / "pretrain"
    last = max(int(q.name) for q in (src / "checkpoints").iterdir() if q.name.isdigit())
    assert f"initialising from {src} step {last} (deeper)" in out.stderr
    train = json.loads((rows / "l-3" / "pretrain" / "config.json").read_text())["experiment"]["train"]
    assert (train["init_from"], train["init_mode"]) == (str(src), "deeper")
    for row in ("l-1", "l-3"):
        assert json.loads((rows / row / "row.json").read_text())["state"] == "done"
    assert out.stderr.count("initialising from") == 1  # the 1-layer row starts from scratch


def test_table_of_rows_not_run_shows_them_missing_never_zero(tmp_path):
    text, files = table.build(registry.get("table5"), "cpu", tmp_path, plots=False)
    body = [line for line in text.splitlines() if line.startswith("| SOP")]
    assert body and "| 86.5 |" in body[0] and "not run" in body[0]  # the paper's SOP accuracy beside ours
    assert " 0.0 " not in text and "| 0 |" not in text
    rows = list(csv.reader(open(files[1])))
    assert rows[0][0] == "Row" and len(rows) == 4


# ---------------------------------------------------------------- a real sweep: killed, resumed, tabled
ROWS = "e-128-all-shared,e-128-not-shared"


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    runs = tmp_path_factory.mktemp("sweep")
    args = [sys.executable, "-m", "albert_jax.main", "sweep", "table4", "--scale", "smoke", "--runs", str(runs),
            "--rows", ROWS, *FAST]
    first = runs / "table4" / "smoke" / "e-128-all-shared"
    p = subprocess.Popen(args, cwd=ROOT, env=user_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 600
    while not (first / "finetune-rt_sentiment").exists() and time.time() < deadline and p.poll() is None:
        time.sleep(0.2)
    p.send_signal(signal.SIGKILL)  # no clean-up at all: mid fine-tuning of the first row
    p.wait()
    killed_at = {q: q.stat().st_mtime_ns for q in (first / "pretrain" / "checkpoints").iterdir()}
    second = cli("sweep", "table4", "--scale", "smoke", "--runs", str(runs), "--rows", ROWS, *FAST, "--table")
    return runs, killed_at, second.stdout


def test_a_killed_sweep_resumes_without_redoing_finished_stages(swept):
    runs, killed_at, out = swept
    first = runs / "table4" / "smoke" / "e-128-all-shared"
    assert "pretrain done" in out.split("[2/2]")[0]  # row 1's pretraining was finished before the kill
    assert {q: q.stat().st_mtime_ns for q in (first / "pretrain" / "checkpoints").iterdir()} == killed_at
    for row in ROWS.split(","):
        d = runs / "table4" / "smoke" / row
        state = json.loads((d / "row.json").read_text())
        assert state["state"] == "done" and state["row"].startswith("E=128")
        steps = [json.loads(x)["step"] for x in (d / "pretrain" / "metrics.jsonl").read_text().splitlines()
                 if "loss" in json.loads(x)]
        assert steps == sorted(set(steps)) and steps[-1] == 4  # no step logged twice
        assert len(json.loads((d / "finetune-rt_sentiment" / "results.json").read_text())["seeds"]) == 1
    again = cli("sweep", "table4", "--scale", "smoke", "--runs", str(runs), "--rows", ROWS, *FAST).stdout
    assert "running" not in again and "2 rows (2 already finished)" in again


def test_the_table_reads_the_rows_paper_beside_ours(swept):
    runs, _, out = swept
    records = table.collect(registry.get("table4"), "smoke", runs)
    done = {r["row"]: r for r in records if r["done"]}
    assert set(done) == {"E=128 all-shared", "E=128 not-shared"}
    for r in done.values():
        assert 0.0 <= r["finetune"]["rt_sentiment"]["median"] <= 1.0 and r["intrinsic"]["eval/sop_accuracy"] >= 0
        assert r["params_paper_config"] in (preset("albert-base").param_count(),
                                            preset("albert-base", sharing="none").param_count())
    assert done["E=128 not-shared"]["params_run"] > done["E=128 all-shared"]["params_run"]
    line = next(x for x in out.splitlines() if x.startswith("| E=128 all-shared"))
    assert "| 12M | 11.68M |" in line and "| 90.3 |" in line  # paper's SST-2 beside our rt_sentiment
    assert "not run" in next(x for x in out.splitlines() if x.startswith("| E=768 all-shared"))
    best = table.best_row(registry.get("table4"), "smoke", runs, hf_only=True)
    # A row finished under other settings than the table is asked with (the demo's shorter schedule) is still
    # finished: the sweep's row.json says so.
    other = dataclasses.replace(registry.get("table4"), settings={"smoke": {"pretrain.train.num_train_steps": 99}})
    assert not sweep.plan(other, "smoke", runs, rows=["e-128-all-shared"])[0].stages[0].done()
    assert {r["row"] for r in table.collect(other, "smoke", runs) if r["done"]} == set(done)
    assert best["score"] == max(r["finetune"]["rt_sentiment"]["median"] for r in done.values())
    assert best["workdir"] == str(runs / "table4" / "smoke" / best["row"].lower().replace("=", "-").replace(" ", "-")
                                  / "finetune-rt_sentiment")


def test_stage_fingerprints_are_the_settings_not_the_row(tmp_path):
    row = ["e-128-all-shared"]
    a = sweep.plan(registry.get("table4"), "smoke", tmp_path, rows=row)[0].stages
    b = sweep.plan(registry.get("claim_ffn_vs_attention"), "smoke", tmp_path, rows=row)[0].stages
    longer = sweep.plan(registry.get("table4"), "smoke", tmp_path, ["pretrain.train.num_train_steps=5"],
                        rows=row)[0].stages
    speed = sweep.plan(registry.get("table4"), "smoke", tmp_path, ["finetune.num_seeds=7", "finetune.data.buckets=off"],
                   rows=row)[0].stages
    assert sweep.fingerprint(a[0]) == sweep.fingerprint(b[0]) != sweep.fingerprint(longer[0])
    assert sweep.fingerprint(a[1]) == sweep.fingerprint(speed[1])  # seed count and bucketing change no seed's result
    assert sweep.fingerprint(a[1]) != sweep.fingerprint(b[1])  # each fine-tunes its own row's pretraining ...
    a[0].workdir.mkdir(parents=True)
    b[0].workdir.parent.mkdir(parents=True)
    os.symlink(a[0].workdir, b[0].workdir)
    assert sweep.fingerprint(a[1]) == sweep.fingerprint(b[1])  # ... until that is a link to the same run


def test_fields_added_later_leave_the_fingerprint_as_it_was_at_their_defaults(tmp_path):
    """A stage trained before data.zh_masking (and the other FINGERPRINT_OMITS_AT_DEFAULT fields) existed is still
    found: at their defaults they are not part of the fingerprint; set otherwise they are."""
    from albert_jax.configs.schema import FINGERPRINT_OMITS_AT_DEFAULT

    row = ["e-128-all-shared"]
    pretrain, finetune = sweep.plan(registry.get("table4"), "smoke", tmp_path, rows=row)[0].stages[:2]
    assert pretrain.config().data.zh_masking == "char" and pretrain.config().data.tokenizer_kind == "spm"
    assert finetune.config().data.train_examples == 0
    pretrain_print = sweep.fingerprint(pretrain)
    for stage in (pretrain, finetune):
        config, before = stage.config(), sweep.fingerprint(stage)
        omitted = [k for k in FINGERPRINT_OMITS_AT_DEFAULT if k.split(".")[1] in config[k.split(".")[0]]]
        assert omitted, stage.kind
        for key in omitted:  # as a config recorded before the fields existed
            section, field = key.split(".")
            del config[section][field]
        stage.config = lambda config=config: config
        assert sweep.fingerprint(stage) == before, stage.kind
    stage = sweep.plan(registry.get("table4"), "smoke", tmp_path, ["finetune.data.train_examples=8"],
                       rows=row)[0].stages[1]
    assert sweep.fingerprint(stage) != sweep.fingerprint(finetune)
    jieba = sweep.plan(registry.get("table4"), "smoke", tmp_path, ["pretrain.data.zh_masking=jieba"],
                       rows=row)[0].stages[0]
    assert sweep.fingerprint(jieba) != pretrain_print


def test_a_stage_identical_to_a_finished_one_links_to_it_instead_of_training_again(swept):
    runs, _, _ = swept
    src = runs / "table4" / "smoke" / "e-128-all-shared"
    before = {q: q.stat().st_mtime_ns for q in (src / "pretrain" / "checkpoints").iterdir()}
    out = cli("sweep", "claim_ffn_vs_attention", "--scale", "smoke", "--runs", str(runs), "--rows",
              "e-128-all-shared", *FAST).stdout
    d = runs / "claim_ffn_vs_attention" / "smoke" / "e-128-all-shared"
    for stage in ("pretrain", "finetune-rt_sentiment"):
        assert (d / stage).is_symlink() and os.path.samefile(d / stage, src / stage)
        assert not os.path.isabs(os.readlink(d / stage))  # the runs directory can move
        assert f"{stage}: identical to the finished" in out
    assert "finetune-wordnet_wic: 0/1 seeds -> running" in out  # what the table4 row lacks is trained
    assert (d / "finetune-wordnet_wic" / "results.json").is_file() and not (d / "finetune-wordnet_wic").is_symlink()
    assert {q: q.stat().st_mtime_ns for q in (src / "pretrain" / "checkpoints").iterdir()} == before
    ours = {r["row"]: r for r in table.collect(registry.get("claim_ffn_vs_attention"), "smoke",
                                               runs)}["E=128 all-shared"]
    theirs = {r["row"]: r for r in table.collect(registry.get("table4"), "smoke", runs)}["E=128 all-shared"]
    assert ours["done"] and ours["finetune"]["rt_sentiment"] == theirs["finetune"]["rt_sentiment"]
    assert ours["intrinsic"] == theirs["intrinsic"]


def test_submitit_local_executor_runs_a_row_as_a_job(tmp_path):
    pytest.importorskip("submitit")
    out = cli("sweep", "claim_shared_speed", "--scale", "smoke", "--runs", str(tmp_path), "--rows",
              "e-128-all-shared", "--launcher", "submitit-local").stdout
    assert "submitted job" in out and "finished" in out
    d = tmp_path / "claim_shared_speed" / "smoke" / "e-128-all-shared"
    assert json.loads((d / "row.json").read_text())["state"] == "done"
    assert (d / "pretrain" / "checkpoints" / "4").is_dir()
    assert list((tmp_path / "claim_shared_speed" / "smoke" / "_jobs").glob("*/*_log.out"))  # submitit's own logs


def test_row_names_are_the_same_at_every_scale():
    """The table matches a row's paper-scale architecture (the Params column) by its name."""
    for name, exp in registry.load_registry().items():
        names = [[r.name for r in exp.rows_at(s)] for s in registry.SCALES]
        assert names[0] == names[1] == names[2], name


def test_zh_few_labels_links_zh_masking_pretraining_and_fine_tunes_on_1000_labels(tmp_path):
    """zh_few_labels pretrains nothing of its own: its pretraining stages are zh_masking's (one fingerprint, so a
    sweep in the same runs links them), and every fine-tuning stage, the random-init twins' too, reads 1,000 labels."""
    few = sweep.plan(registry.get("zh_few_labels"), "cpu", tmp_path, rows=["char-wordpiece"], seeds=2)[0]
    full = sweep.plan(registry.get("zh_masking"), "cpu", tmp_path, rows=["char-wordpiece"], seeds=2)[0]
    assert [sweep.fingerprint(s) for s in few.stages if s.kind == "pretrain"] == \
        [sweep.fingerprint(s) for s in full.stages if s.kind == "pretrain"]
    tuned = [s for s in few.stages if s.kind == "finetune"]
    assert len(tuned) == 8 and {s.config().data.train_examples for s in tuned} == {1000}  # 2 seeds x 2 tasks, x2 twins
    assert {s.config().data.train_examples for s in full.stages if s.kind == "finetune"} == {0}


# ---------------------------------------------------------------- evidence: tables without runs, studies elsewhere
def _rebuilt(root, out):
    """table.md and table.csv of table4 at the smoke scale built from `root` into `out`."""
    table.build(registry.get("table4"), "smoke", root, out, plots=False)
    return (out / "table.md").read_bytes(), (out / "table.csv").read_bytes()


def test_a_table_rebuilds_byte_for_byte_from_its_evidence_alone(swept, tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    shutil.copytree(swept[0] / "table4", runs / "table4", symlinks=True)
    evidence = tmp_path / "evidence"
    assert len(sweep.export_evidence(registry.get("table4"), "smoke", runs, evidence)) == 4
    from_runs = _rebuilt(runs, tmp_path / "from-runs")
    shutil.rmtree(runs)
    # Committed evidence names no path of this machine: its cache and runs roots are placeholders (exported from
    # the runs directory the sweep ran in, whose paths its files record).
    from albert_jax.data.fetch import default_cache_dir
    sweep.export_evidence(registry.get("table4"), "smoke", swept[0], tmp_path / "portable")
    texts = [p.read_text(encoding="utf-8") for p in (tmp_path / "portable").rglob("*.json")]
    assert not any(str(swept[0]) in t or str(default_cache_dir()) in t for t in texts)
    assert any(evidence_dir.CACHE_ROOT in t for t in texts) and any(evidence_dir.RUNS_ROOT in t for t in texts)

    def no_cache(*_):
        raise AssertionError("the table read the data cache's eval shards")
    monkeypatch.setattr(ablation_evidence, "decode_record", no_cache)  # the MLM majority comes from the evidence
    assert evidence_dir.verify(evidence / "table4" / "smoke") == 4
    assert _rebuilt(evidence, tmp_path / "from-evidence") == from_runs
    assert evidence_dir.experiment_of(evidence) == ("table4", "smoke")
    sizes = sorted(p.stat().st_size for p in evidence.rglob("*") if p.is_file())
    assert sum(sizes) < 100_000 and sizes[-1] < 10_000, sizes  # no checkpoint came along


def test_a_sweep_with_evidence_counts_exported_stages_done_and_exports_those_it_runs(swept, tmp_path):
    runs, evidence = tmp_path / "runs", tmp_path / "evidence"
    sweep.export_evidence(registry.get("table4"), "smoke", swept[0], evidence)
    first = evidence / "table4" / "smoke" / "e-128-all-shared"
    shutil.rmtree(first / "finetune-rt_sentiment")
    args = ("sweep", "table4", "--scale", "smoke", "--rows", ROWS, "--runs", str(runs), "--evidence", str(evidence),
            *FAST)
    # Its pretraining is done only as evidence, without the parameters fine-tuning starts from: said in one line.
    refused = cli(*args, check=False)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "finetune-rt_sentiment of e-128-all-shared starts from pretrain" in refused.stderr
    assert evidence_dir.PARAMS in refused.stderr
    # As a study stopped between the stages leaves it (the sweep archives them while a stage still needs them).
    evidence_dir.archive_params(swept[0] / "table4" / "smoke" / "e-128-all-shared" / "pretrain", first / "pretrain")
    from albert_jax.data.fetch import default_cache_dir  # the tokenizer kept names no path of this machine
    kept = (first / "pretrain" / evidence_dir.PARAMS / "spiece.model").read_bytes()
    assert str(default_cache_dir()).encode() not in kept
    out = cli(*args, "--table").stdout
    assert "E=128 not-shared: pretrain done, finetune-rt_sentiment done" in out and out.count("-> running") == 1
    assert "finetune-rt_sentiment: 0/1 seeds -> running" in out
    assert sorted(p.name for p in (runs / "table4" / "smoke" / "e-128-not-shared").iterdir()) == ["row.json"]
    assert not (runs / "table4" / "smoke" / "e-128-all-shared" / "pretrain" / "metrics.jsonl").exists()  # restored
    assert not evidence_dir.has_params(first / "pretrain")  # no later stage needs them now
    theirs = json.loads((swept[0] / "table4" / "smoke" / "e-128-all-shared" / "finetune-rt_sentiment" / "seed-0"
                         / "results.json").read_text())
    ours = json.loads((first / "finetune-rt_sentiment" / "seed-0" / "results.json").read_text())
    assert ours["dev"] == theirs["dev"]  # fine-tuned from the restored parameters: the same run
    assert _rebuilt(evidence, tmp_path / "from-evidence") == _rebuilt(swept[0], tmp_path / "from-runs")
    # Run again with --jobs (nothing left): a row finished only in the evidence is recorded done, stage by stage.
    assert "-> running" not in cli(*args, "--jobs", "2").stdout
    for recorded in (runs / "table4" / "smoke" / "e-128-not-shared" / "row.json",
                     evidence / "table4" / "smoke" / "e-128-not-shared" / "row.json"):
        row = json.loads(recorded.read_text())
        assert row["state"] == "done" and set(row["stages_state"].values()) == {"done"}, (recorded, row)


def test_a_claim_takes_the_stages_another_study_finished_from_its_evidence(swept, tmp_path, monkeypatch):
    """claim_e128's E=128 rows are table4's: on a machine with table4's evidence and none of its runs, the claim's
    sweep copies those stages' evidence instead of training them again (--link-evidence)."""
    from albert_jax.ablations import evidence_link

    theirs = tmp_path / "table4-evidence"
    sweep.export_evidence(registry.get("table4"), "smoke", swept[0], theirs)
    sets, rows = FAST[1::2], ["all-shared E=128", "not-shared E=128"]

    def claim(runs, evidence, more=()):
        plans = sweep.plan(registry.get("claim_e128"), "smoke", runs, [*sets, *more], rows, evidence=evidence)
        out = io.StringIO()
        return plans, evidence_link.link(plans, [theirs], runs, [*sets, *more], out=out), out.getvalue()

    plans, copied, _ = claim(tmp_path / "runs", tmp_path / "ours")
    assert copied == 4 and all(s.done() for p in plans for s in p.stages)  # pretraining and fine-tuning, 2 rows
    slug = {"all-shared-e-128": "e-128-all-shared", "not-shared-e-128": "e-128-not-shared"}  # claim's -> table4's
    for p in plans:
        for s in p.stages:
            src = theirs / "table4" / "smoke" / slug[p.directory.name] / s.name
            assert {f.relative_to(src): f.read_bytes() for f in src.rglob("*") if f.is_file()} == \
                {f.relative_to(s.evidence): f.read_bytes() for f in s.evidence.rglob("*") if f.is_file()}
    # Fine-tuning with other settings is another stage: the pretraining is taken, the fine-tunes are not (table4's
    # evidence under those names holds the fine-tunes run with the old settings).
    plans, copied, _ = claim(tmp_path / "runs2", tmp_path / "ours2", ["finetune.train.learning_rate=0.001"])
    assert copied == 2 and [s.name for p in plans for s in p.stages if not s.done()] == ["finetune-rt_sentiment"] * 2
    with pytest.raises(sweep.SweepError, match="--evidence"):
        evidence_link.link(sweep.plan(registry.get("claim_e128"), "smoke", tmp_path / "runs3", sets, rows), [theirs],
                           tmp_path / "runs3", sets)
    # Planned from outside the repository, the stages' commands name the config by its absolute path (the study
    # recorded it relative to the root it ran from): the same stages, all taken.
    monkeypatch.chdir(tmp_path)
    plans, copied, _ = claim(tmp_path / "runs4", tmp_path / "ours4")
    assert copied == 4 and all(s.done() for p in plans for s in p.stages)
    # Evidence whose row.json records another command under the stage's name is not taken, and the sweep says why.
    row_json = theirs / "table4" / "smoke" / "e-128-not-shared" / "row.json"
    row = json.loads(row_json.read_text())
    row["stages"][0]["command"] += " --set train.seed=7"
    row_json.write_text(json.dumps(row))
    _, copied, said = claim(tmp_path / "runs5", tmp_path / "ours5")
    assert copied == 3 and "not-shared E=128 · pretrain: not taken from table4 e-128-not-shared/pretrain" in said


@pytest.mark.parametrize("damage", ["missing", "altered"])
def test_a_missing_or_damaged_evidence_file_is_named_in_one_line(swept, tmp_path, damage):
    evidence = tmp_path / "evidence"
    sweep.export_evidence(registry.get("table4"), "smoke", swept[0], evidence)
    path = evidence / "table4" / "smoke" / "e-128-not-shared" / "pretrain" / "eval_examples.npz"
    if damage == "missing":
        path.unlink()
    else:
        path.write_bytes(path.read_bytes()[:-10])
    p = cli("table", "table4", "--scale", "smoke", "--evidence", str(evidence), "--no-plots", check=False)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert str(path) in p.stderr and ("missing" if damage == "missing" else "differ") in p.stderr
