"""The command line as a script sees it: exit statuses, one-line errors, and options that mean what they say."""
from __future__ import annotations

import pytest

from albert_jax import __version__
from albert_jax.main import main


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"albert-jax {__version__}"


def test_summary_takes_every_set_in_both_spellings_and_applies_them_to_compared_rows(capsys):
    assert main(["summary", "--set", "model.embedding_size=256", "--set", "sharing=none", "--seq-len", "128"]) == 0
    one = capsys.readouterr().out
    assert "sharing=none" in one and "E=256" in one
    assert main(["summary", "--set", "embedding_size=256", "--compare", "sharing=all", "sharing=none"]) == 0
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if line.startswith("| sharing=")]
    assert [(r[1], r[2]) for r in rows] == [("256", "all"), ("256", "none")]


@pytest.mark.parametrize("argv,needle", [
    (["summary", "--seq-len", "-5"], "--seq-len: '-5': must be a positive integer"),
    (["summary", "--set", "sharing=none", "--set", "sharing=all"], "given twice"),
])
def test_summary_refuses_bad_values(capsys, argv, needle):
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own refusal
        code = e.code
    assert code == 2
    assert needle in capsys.readouterr().err


def test_table_of_a_missing_runs_directory_is_an_error_and_creates_nothing(capsys, tmp_path):
    missing = tmp_path / "nope"
    assert main(["table", "table4", "--runs", str(missing)]) == 2
    assert f"--runs {missing}: no such directory" in capsys.readouterr().err
    assert not missing.exists()


def test_experiment_files_are_found_from_any_folder(monkeypatch, tmp_path):
    from albert_jax.configs.loader import load_config

    monkeypatch.chdir(tmp_path)  # not the repository root
    assert load_config("experiments/pretrain.py:scale=smoke").scale == "smoke"
    with pytest.raises(FileNotFoundError, match="experiments/nope.py does not exist"):
        load_config("experiments/nope.py")
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "pretrain.py").write_text("def get_config(arg=''):\n    return 'mine'\n")
    assert load_config("experiments/pretrain.py") == "mine"  # a file of the user's own comes first


def test_ctrl_c_during_pretraining_data_create_is_one_line_exit_130_and_leaves_no_partial_file(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from albert_jax.data.tokenization import train_tokenizer

    rng = __import__("random").Random(0)
    words = [f"w{i}" for i in range(300)]
    text = tmp_path / "corpus.txt"
    with open(text, "w") as f:  # enough documents that creating their instances takes far longer than a second
        for d in range(20000):
            f.write("\n".join(" ".join(rng.choices(words, k=12)) for _ in range(6)) + "\n\n")
    train_tokenizer(tmp_path / "m", files=[text], vocab_size=200, input_sentence_size=20000)
    out = tmp_path / "out"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # As a terminal delivers Ctrl-C: a suite started in the background (`make test &` from a script) has SIGINT
    # ignored, which the child would inherit and Python then never raises, so the child puts Python's handler back
    # itself before running the command. (Not preexec_fn: Python code between fork and exec can deadlock in a
    # parent with threads, as an xdist worker is, and did once in CI, leaving a child that never ran.)
    start = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "sys.argv[0] = 'albert-jax'; runpy.run_module('albert_jax.main', run_name='__main__')")
    p = subprocess.Popen([sys.executable, "-c", start, "pretraining-data", "create", "--input", str(text),
                          "--spm-model", str(tmp_path / "m.model"), "--output-dir", str(out), "--workers", "1",
                          "--max-seq-length", "32", "--dupe-factor", "5"], cwd=root, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    def writing():  # the first shard file is open: creating has started
        return out.is_dir() and any(out.iterdir())

    deadline = time.time() + 120
    while time.time() < deadline and not writing() and p.poll() is None:
        time.sleep(0.1)
    if p.poll() is not None or not writing():
        p.kill()
        _, err = p.communicate()
        raise AssertionError(f"the command never started writing in 120 s (exit {p.returncode}): {err[-2000:]}")
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err[-2000:]
    assert err.strip().splitlines()[-1].startswith("albert-jax pretraining-data: interrupted;")
    assert "Traceback" not in err
    assert not out.exists() or list(out.iterdir()) == []  # the half-written shard was removed


def test_every_option_of_every_command_has_a_help_line():
    import argparse

    from albert_jax.main import build_parser

    missing = []

    def walk(parser, path):
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, [*path, name])
            elif not a.help:  # positionals too (`table NAME`, `experiments show NAME` had none)
                missing.append(f"albert-jax {' '.join(path)} {(a.option_strings or [a.dest])[0]}")
            elif a.default not in (None, False, argparse.SUPPRESS) and "default" not in a.help.lower() \
                    and a.option_strings and path in (["sweep"], ["table"]):
                missing.append(f"albert-jax {' '.join(path)} {a.option_strings[0]} (its default)")

    walk(build_parser(), [])
    assert not missing, missing


def test_a_workdir_of_another_kind_of_run_is_refused_in_one_line(capsys, tmp_path, tiny_pretrained):
    # A workdir written before runs recorded their kind: inferred (config.json's pretrain* task; seed-*/).
    import json

    from albert_jax.training import workdir as wdir

    old_pre = tmp_path / "old_pretrain"
    old_pre.mkdir()
    (old_pre / "config.json").write_text(json.dumps({"task": {"name": "pretrain_sop"}}))
    old_ft = tmp_path / "old_finetune"
    (old_ft / "seed-0").mkdir(parents=True)
    assert main(["finetune", "--config", f"experiments/finetune.py:task=rt_sentiment,init={tiny_pretrained},"
                 "scale=smoke", "--workdir", str(old_pre)]) == 2
    err = capsys.readouterr().err
    assert f"--workdir {old_pre} holds a pretrain run" in err and f"init={old_pre}" in err, err
    assert len(err.strip().splitlines()) == 1 and not (old_pre / "seed-0").exists()
    assert main(["pretrain", "--config", "experiments/pretrain.py:scale=smoke", "--workdir", str(old_ft)]) == 2
    err = capsys.readouterr().err
    assert f"--workdir {old_ft} holds a finetune run (it has seed-*/ directories)" in err, err
    assert not (old_ft / "config.json").exists()
    # A new workdir records its kind, and another command is then refused by it.
    new = tmp_path / "new"
    wdir.claim_kind(str(new), "distill")
    wdir.claim_kind(str(new), "distill")  # the same kind again: fine
    with pytest.raises(wdir.WorkdirError, match=r"holds a distill run \(recorded in .*kind.json\), not a finetune"):
        wdir.claim_kind(str(new), "finetune")


def test_relative_paths_are_recorded_resolved_and_old_relative_records_still_resume(monkeypatch, tmp_path):
    # `--resume` from another directory (a requeued job) used to look for data.spm_model / data.instances as typed.
    import os

    from albert_jax.cli.common import load_experiment
    from albert_jax.runs import validate
    from albert_jax.training import workdir as wdir

    (tmp_path / "sp.model").write_text("x")
    (tmp_path / "inst").mkdir()
    for split in ("train", "dev"):
        (tmp_path / f"{split}.tsv").write_text("sentence\tlabel\ngood\tpos\nbad\tneg\n")
    (tmp_path / "task.json").write_text('{"kind": "classification", "train": "train.tsv", "dev": "dev.tsv"}')
    monkeypatch.chdir(tmp_path)
    c = load_experiment(os.path.join(os.path.dirname(os.path.dirname(__file__)), "experiments/pretrain.py") +
                        ":scale=smoke", ["data.spm_model=sp.model", "data.instances=./inst"])
    validate.resolve_paths(c, "pretrain")
    assert (c.data.spm_model, c.data.instances) == (str(tmp_path / "sp.model"), str(tmp_path / "inst"))
    f = load_experiment(os.path.join(os.path.dirname(os.path.dirname(__file__)), "experiments/finetune.py") +
                        ":task=task.json,init=random", ["data.tokenizer=sp.model"])
    validate.resolve_paths(f, "finetune")
    assert (f.task, f.init, f.data.tokenizer) == (str(tmp_path / "task.json"), "random", str(tmp_path / "sp.model"))
    # A run recorded before (the path as typed) resumes with the resolved path: the same file, not a new run.
    old = {"experiment": {"data": {"spm_model": "sp.model", "instances": "inst"}}}
    new = {"experiment": {"data": {"spm_model": str(tmp_path / "sp.model"), "instances": str(tmp_path / "inst")}}}
    assert wdir.differences(old, new) == {}
    other = {"experiment": {"data": {"spm_model": str(tmp_path / "other.model"), "instances": str(tmp_path / "inst")}}}
    assert set(wdir.differences(old, other)) == {"experiment.data.spm_model"}


def test_an_output_under_a_regular_file_is_one_line_naming_the_option(capsys, tmp_path, tiny_pretrained):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    assert main(["export", "--workdir", str(tiny_pretrained), "--to", "hf", "--out", str(blocker / "hf")]) == 2
    err = capsys.readouterr().err
    assert f"--out {blocker / 'hf'}: {blocker} is a file, not a directory" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_a_closed_pipe_ends_quietly(tmp_path):
    # `albert-jax ... | head -1`: the reader goes away; no BrokenPipeError traceback, exit 141 (or 0).
    import os
    import subprocess
    import sys

    from procs import user_env

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.Popen([sys.executable, "-m", "albert_jax.main", "summary", "--compare", "sharing=all",
                          "sharing=none", "sharing=ffn", "sharing=attention"], cwd=root, env=user_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # before it writes a byte
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) in (0, 141) and "Traceback" not in err and "BrokenPipe" not in err, err


def test_a_glue_task_without_the_network_is_one_line_saying_how_to_provide_it(capsys, monkeypatch, tmp_path,
                                                                             tiny_pretrained):
    import requests
    import tensorflow_datasets as tfds

    def offline(*a, **k):
        raise requests.exceptions.ConnectionError("HTTPSConnectionPool(host='dl.fbaipublicfiles.com'): Max retries")
    monkeypatch.setattr(tfds, "data_source", offline)
    assert main(["finetune", "--config", f"experiments/finetune.py:task=sst2,init={tiny_pretrained},scale=smoke",
                 "--workdir", str(tmp_path / "run"), "--log-level", "WARNING"]) == 2
    err = capsys.readouterr().err
    assert "glue/sst2: the GLUE data cannot be downloaded here (ConnectionError" in err, err
    assert "downloads/manual" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_table_defaults_to_the_scale_that_has_runs(capsys, tmp_path):
    # After a smoke sweep, `table NAME` used to default to --scale cpu: "not run" rows, and runs/NAME/cpu/ created.
    runs = tmp_path / "runs"
    (runs / "table4" / "smoke" / "some-row").mkdir(parents=True)
    assert main(["table", "table4", "--runs", str(runs), "--scale", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "--scale cpu:" in err and "scales with runs there: smoke" in err, err
    assert not (runs / "table4" / "cpu").exists()
    from types import SimpleNamespace

    from albert_jax.cli import table
    assert table._scale(SimpleNamespace(runs=str(runs), name="table4", scale=None)) == "smoke"
    (runs / "table4" / "cpu" / "row").mkdir(parents=True)
    assert main(["table", "table4", "--runs", str(runs)]) == 2
    assert "runs at several scales (smoke, cpu): pick one with --scale" in capsys.readouterr().err


def test_tfds_messages_go_to_stderr_and_an_error_ends_a_progress_bar_line_first(capsys, monkeypatch):
    import sys

    import tensorflow_datasets as tfds
    from tqdm import tqdm

    from albert_jax.cli import table
    from albert_jax.data import builders

    def chatty(*a, **k):
        print("Downloading and preparing dataset 1 MiB to /x/glue/sst2 ...")  # as TFDS does, on stdout
        return []
    monkeypatch.setattr(tfds, "data_source", chatty)
    assert builders.load_source("glue/sst2", "train") == []
    out, err = capsys.readouterr()
    assert out == "" and "Downloading and preparing dataset" in err

    def failing(args):
        bar = tqdm(total=10, file=sys.stderr, desc="Generating train examples")
        bar.update(3)
        raise ValueError("boom")
    monkeypatch.setattr(table, "_run", failing)
    assert main(["table", "table4", "--runs", "."]) == 2
    err = capsys.readouterr().err
    assert "\nalbert-jax table: error: boom" in err, repr(err)


def test_a_corpus_too_small_for_the_vocab_names_the_config_field(monkeypatch, tmp_path):
    from albert_jax.cli.common import load_experiment
    from albert_jax.data import fetch, tokenization
    from albert_jax.tasks.pretraining import input as pretrain_input

    def too_small(*a, **k):
        e = tokenization.CorpusTooSmallError("corpus x is too small ... (--no-hard-vocab-limit)")
        e.supported = 1234
        raise e
    monkeypatch.setattr(tokenization, "train_tokenizer", too_small)
    monkeypatch.setattr(fetch, "default_cache_dir", lambda: tmp_path)
    (tmp_path / "train.txt").write_text("a sentence.\n")
    d = load_experiment("experiments/pretrain.py:scale=smoke", ["data.vocab_size=30000"]).data
    with pytest.raises(tokenization.CorpusTooSmallError) as e:
        pretrain_input.corpus_tokenizer(d, {"train": tmp_path / "train.txt"})
    assert "--set data.vocab_size=1234" in str(e.value) and "--no-hard-vocab-limit" not in str(e.value)


@pytest.mark.parametrize("extra,needle", [([], "--model-prefix is required"),
                                          (["--kind", "wordpiece"], "--kind wordpiece needs --output-dir")])
def test_tokenizer_train_usage_errors_exit_2_like_the_others(capsys, tmp_path, extra, needle):
    (tmp_path / "t.txt").write_text("a sentence.\n")
    assert main(["tokenizer", "train", "--input", str(tmp_path / "t.txt"), *extra]) == 2  # was SystemExit, exit 1
    assert needle in capsys.readouterr().err
