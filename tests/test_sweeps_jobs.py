"""`albert-jax sweep --jobs N`: a row's stages as processes, started in the order of what each reads, side by side,
stopped with the sweep (SIGTERM passed on, SIGKILL taking its stages along) and resumed."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from smoke_sweeps import FAST, ROOT, cli

from albert_jax.ablations import registry
from albert_jax.ablations import sweep
from procs import user_env


def test_jobs_start_each_stage_after_what_it_reads_and_an_identical_twin_after_its_first(tmp_path):
    """The order --jobs starts stages in, planned without running: a fine-tune after its pretraining, a deeper row's
    pretraining after its source's, a row's random-init twin after the identical one of the row before."""
    from albert_jax.ablations.parallel import _Queue

    plans = sweep.plan(registry.get("table5"), "smoke", tmp_path, rows=["NSP", "SOP"], random_init=True)
    q = _Queue([(p, s) for p in plans for s in p.stages], reuse_stages=True)
    nsp, sop = (tmp_path / "table5" / "smoke" / r for r in ("nsp", "sop"))
    first = [q.next_ready()[1].workdir for _ in range(3)]
    assert first == [nsp / "pretrain", nsp / "finetune-rt_sentiment-random", sop / "pretrain"]
    assert q.next_ready() is None  # the fine-tunes wait for their pretraining, SOP's twin for NSP's
    q.finished |= {nsp / "pretrain", nsp / "finetune-rt_sentiment-random"}
    assert {q.next_ready()[1].workdir for _ in range(2)} == {nsp / "finetune-rt_sentiment",
                                                             sop / "finetune-rt_sentiment-random"}
    q.failed[sop / "pretrain"] = "exit status 1"
    assert q.next_ready() is None and not q.todo  # its fine-tune can never start: reported, not waited for
    assert q.failed[sop / "finetune-rt_sentiment"].startswith("not started")
    deeper = sweep.plan(registry.get("table11"), "smoke", tmp_path, rows=["L=1", "L=3"], random_init=False)
    q = _Queue([(p, s) for p in deeper for s in p.stages], reuse_stages=True)
    assert q.next_ready()[1].workdir == deeper[0].stages[0].workdir and q.next_ready() is None


def test_a_sweep_trains_the_tokenizer_its_random_init_twins_read_before_any_stage(tmp_path):
    """With --jobs a twin starts beside the pretraining that trains the corpus tokenizer on a new cache, and a
    study resumed from evidence on a new machine may have no pretraining left to run: the twin found no tokenizer
    and failed (2026-12-07). The sweep's preamble trains it first."""
    from albert_jax.data import fetch
    from albert_jax.tasks.pretraining.input import tokenizer_model_path

    text = tmp_path / "corpus.txt"  # a corpus new to the cache (its key is the file's path, size and time)
    text.write_text("".join((Path(__file__).parent / "fixtures" / "sotu_sample.txt").open().readlines()[:1500]))
    corpus = ["pretrain.data.corpus=text_corpus/twin", f"pretrain.data.corpus_paths={text}",
              "pretrain.data.vocab_size=300", "pretrain.data.held_out_fraction=0.2"]
    plans = sweep.plan(registry.get("table5"), "smoke", tmp_path / "runs", corpus, rows=["NSP"], random_init=True)
    pre, twin = plans[0].stages[0], plans[0].stages[-1]
    model = tokenizer_model_path(pre.config().data)
    try:
        assert twin.tokenizer_of is pre and twin.config().data.tokenizer == str(model) and not model.exists()
        sweep.prepare(plans)
        assert model.is_file()  # trained, with no stage run
        stamp = model.stat().st_mtime_ns
        sweep.prepare(plans)  # a resumed sweep finds it and trains nothing
        assert model.stat().st_mtime_ns == stamp
    finally:  # the cache keeps nothing of a corpus no later run can name
        digest = model.parent.name.rsplit("-", 1)[1]
        for d in [model.parent, *(fetch.default_cache_dir() / "tfds" / "text_corpus").glob(f"twin_{digest}*")]:
            shutil.rmtree(d, ignore_errors=True)


def test_jobs_run_stages_side_by_side_pass_sigterm_on_and_resume(tmp_path):
    args = [sys.executable, "-m", "albert_jax.main", "sweep", "table5", "--scale", "smoke", "--runs", str(tmp_path),
            "--rows", "NSP,SOP", "--random-init", "--jobs", "2", *FAST]
    rows = tmp_path / "table5" / "smoke"
    p = subprocess.Popen(args, cwd=ROOT, env=user_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 600
    while not (rows / "nsp" / "pretrain" / "checkpoints").exists() and time.time() < deadline and p.poll() is None:
        time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    first, _ = p.communicate(timeout=600)
    assert p.returncode == 128 + signal.SIGTERM, first
    assert "passed to the 2 running stage(s)" in first and "rerun the same command" in first
    lines = first.splitlines()
    started = [i for i, line in enumerate(lines) if "-> running" in line]
    # Two at once (on a cold data cache the random-init twin may finish while the pretraining builds its data)
    assert len(started) >= 2 and not any("done in" in line for line in lines[:started[1]]), first
    assert "NSP · pretrain: done" not in first  # stopped mid-way
    assert not _stages(tmp_path), "a stage outlived the sweep that started it"
    # Killed outright (SIGKILL: nothing of the sweep runs), it still takes its stages with it (lifeline.py).
    p = subprocess.Popen(args, cwd=ROOT, env=user_env(), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    while not _stages(tmp_path) and time.time() < deadline and p.poll() is None:
        time.sleep(0.1)
    assert p.poll() is None, "the sweep ended before a stage started"
    killed = set(_stages(tmp_path))  # before the kill: with it they may be gone at once
    p.kill()
    p.wait()
    gone = time.time() + 120
    while _stages(tmp_path) and time.time() < gone:
        time.sleep(0.2)
    assert not _stages(tmp_path), "a stage outlived the sweep killed outright"
    stages = {s.workdir: s for row in sweep.plan(registry.get("table5"), "smoke", tmp_path, FAST[1::2],
                                             rows=["NSP", "SOP"], random_init=True) for s in row.stages}
    assert killed and not any(stages[w].done() for w in killed)  # stopped, not left to run to their end
    second = cli(*args[3:]).stdout
    nsp, sop = rows / "nsp", rows / "sop"
    assert "finetune-rt_sentiment-random: identical to the finished" in second
    twin = sop / "finetune-rt_sentiment-random"
    assert twin.is_symlink() and os.path.samefile(twin, nsp / "finetune-rt_sentiment-random")
    for d in (nsp, sop):
        assert json.loads((d / "row.json").read_text())["state"] == "done"
        assert re.search(r"seed 0: step \d+/4, loss", (d / "pretrain.log").read_text())  # its progress, beside it
        steps = [json.loads(x)["step"] for x in (d / "pretrain" / "metrics.jsonl").read_text().splitlines()
                 if "loss" in json.loads(x)]
        assert steps == sorted(set(steps)) and steps[-1] == 4  # resumed, no step trained twice
        assert len(json.loads((d / "finetune-rt_sentiment" / "results.json").read_text())["seeds"]) == 1
    assert "running" not in cli(*args[3:]).stdout  # a finished sweep starts nothing


def _stages(runs: Path) -> list[Path]:
    """The workdirs of the live stage processes under `runs` (a sweep itself names it after --runs, not --workdir)."""
    out = []
    for c in Path("/proc").glob("[0-9]*/cmdline"):
        argv = _read(c).split()
        workdir = argv[argv.index("--workdir") + 1] if "--workdir" in argv[:-1] else ""
        if workdir.startswith(str(runs)):
            out.append(Path(workdir))
    return out


def _read(path: Path) -> str:
    try:
        return path.read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:  # a process that ended while we looked
        return ""
