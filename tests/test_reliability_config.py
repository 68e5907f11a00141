"""A bad config is refused in seconds, before any data is prepared, with one line naming the field as the user sets
it; a setting that has no effect is accepted with a warning; corpus problems are named with their file (and line).

Most tests drive `albert_jax.main.main([...])` in-process and never train: validation runs before data preparation,
so each refusal also checks that no data cache was created.
"""
import logging
import os
import tempfile
import time

import pytest

from albert_jax import main as cli
from albert_jax.configs.loader import load_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRETRAIN = f"{ROOT}/experiments/pretrain.py:scale=cpu"
FINETUNE = f"{ROOT}/experiments/finetune.py:task=rt_sentiment,init=random,scale=smoke"
SOTU = os.path.join(ROOT, "tests", "fixtures", "sotu_sample.txt")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("ALBERT_JAX_CACHE", str(path))
    monkeypatch.chdir(ROOT)
    return path


@pytest.fixture
def run(cache, capsys):
    """main([...]) in-process -> (exit code, stderr lines); the logging setup it changes is put back after."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, logging.getLogger("albert_jax").level)

    def go(*argv):
        code = cli.main([str(a) for a in argv])
        return code, capsys.readouterr().err.strip().splitlines()
    yield go
    root.handlers[:], root.level = saved[0], saved[1]
    logging.getLogger("albert_jax").setLevel(saved[2])


class DataPrepared(Exception):
    """Raised in place of data preparation: a config that got that far was not refused by validation."""


@pytest.fixture
def refuse(run, cache, tmp_path, monkeypatch):
    """Run the command expecting a refusal: exit 2, one stderr line, no data prepared. Returns the line."""
    from albert_jax.runs import finetune
    from albert_jax.tasks.pretraining import input as pretrain_input

    def reached(*_, **__):
        raise DataPrepared("the config passed validation and reached data preparation")
    monkeypatch.setattr(pretrain_input, "prepare", reached)
    monkeypatch.setattr(finetune, "resolve_init", reached)  # the first step after validation

    def go(*argv, command="pretrain", config=PRETRAIN, workdir=None):
        wd = workdir if workdir is not None else tmp_path / "wd"
        started = time.time()
        code, err = run(command, "--config", config, "--workdir", wd, *argv)
        assert code == 2, err
        assert len(err) == 1, err
        assert err[0].startswith(f"albert-jax {command}: error: "), err
        assert not (cache / "pretrain").exists() and not (cache / "tfds").exists(), "data was prepared"
        assert time.time() - started < 60
        return err[0]
    return go


def sets(*items):
    return [a for item in items for a in ("--set", item)]


# ------------------------------------------------------------------------------------------- pretraining refusals
@pytest.mark.parametrize("setting, expected", [
    ("train.checkpoint_every=0", "train.checkpoint_every=0: must be an integer >= 1"),
    ("train.log_every=0", "train.log_every=0: must be an integer >= 1"),
    ("train.eval_every=0", "train.eval_every=0: must be an integer >= 1"),
    ("train.grad_accum_steps=0", "train.grad_accum_steps=0: must be an integer >= 1"),
    ("train.grad_accum_steps=3", "train.grad_accum_steps=3 does not divide train.batch_size=64"),
    ("train.batch_size=0", "train.batch_size=0: must be an integer >= 1"),
    ("train.eval_batches=-1", "train.eval_batches=-1: must be an integer >= 0"),
    ("train.init_mode=copies", "train.init_mode='copies': must be one of copy, group0, deeper"),
    ("train.init_from=/nonexistent/run", "train.init_from='/nonexistent/run': no such directory"),
    ("model.hidden_size=130", "model.hidden_size=130 is not divisible by model.num_attention_heads=4"),
    ("model.sharing=some", "model.sharing='some': allowed values are all, attention, ffn, none"),
    ("model.vocab_size=123", "model.vocab_size=123 does not match the tokenizer"),
    ("data.task=mlm", "data.task='mlm': must be one of sop, nsp, none"),
    ("data.max_seq_length=256", "data.max_seq_length=256 exceeds model.max_position_embeddings=128"),
    ("data.max_predictions_per_seq=0", "data.max_predictions_per_seq=0"),
    ("data.masking=random", "data.masking='random'"),
    ("data.spm_model=/nonexistent.model", "data.spm_model='/nonexistent.model' does not exist"),
    ("mesh.data=3", "mesh.data=3, mesh.fsdp=1, mesh.tensor=1 needs 3 devices; there are 8"),
    ("distributed.num_processes=2", "distributed.num_processes=2 needs distributed.coordinator (host:port"),
])
def test_a_bad_pretraining_field_is_refused_in_one_line_before_data(refuse, setting, expected):
    line = refuse(*sets(setting))
    assert expected in line, line
    assert "PretrainingConfig" not in line and "global_batch_size" not in line


def test_a_python_true_in_a_config_file_is_not_an_integer(refuse, tmp_path):
    conf = tmp_path / "mine.py"
    conf.write_text("from albert_jax.configs.loader import load_config\n\n"
                    "def get_config(arg=''):\n"
                    f"    c = load_config({PRETRAIN!r})\n"
                    "    c.train.log_every = True  # ml_collections accepts a bool in an int field\n"
                    "    return c\n")
    line = refuse(config=conf)
    assert "train.log_every=True: expected an integer, got a boolean" in line
    line = refuse(*sets("train.log_every=true"))  # and the typed parser, on the command line
    assert "train.log_every='true': expected a value of type int" in line


def test_a_workdir_that_is_a_file_or_cannot_be_written(refuse, tmp_path):
    f = tmp_path / "a_file"
    f.write_text("x")
    assert "is a file, not a directory" in refuse(workdir=f)
    assert "is a file, so the workdir cannot be created" in refuse(workdir=f / "sub")
    read_only = "/sys/albert_jax_test_workdir"  # sysfs: not writable, even as root
    try:
        os.rmdir(tempfile.mkdtemp(dir="/sys"))
        pytest.skip("/sys is writable here: no read-only path to test with")
    except OSError:
        pass
    line = refuse(workdir=read_only)
    assert f"--workdir {read_only}: cannot write to /sys" in line


# ------------------------------------------------------------------------------------------------ corpus messages
def own(path, *more):
    return sets("data.corpus=text_corpus/mine", f"data.corpus_paths={path}", *more)


def test_corpus_paths_a_directory_an_empty_file_a_bad_held_out_fraction(refuse, tmp_path):
    line = refuse(*own(tmp_path))
    assert f"data.corpus_paths: {tmp_path} is a directory" in line
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    line = refuse(*own(empty))
    assert f"data.corpus_paths: {empty} is empty" in line
    line = refuse(*own(SOTU, "data.held_out_fraction=0.6"))
    assert "data.held_out_fraction=0.6: must be below 0.5" in line and "lower it" in line and "raise" not in line
    line = refuse(*own(SOTU, "data.held_out_fraction=0.0"))
    assert "data.held_out_fraction=0.0: must be above 0" in line and "raise it" in line
    assert "needs data.corpus_paths" in refuse(*sets("data.corpus=text_corpus/mine"))


def test_a_wrong_corpus_name_is_one_short_line_with_near_names(refuse):
    line = refuse(*sets("data.corpus=albert_pretrain_xx"))
    assert "data.corpus='albert_pretrain_xx': no such corpus (did you mean albert_pretrain_" in line
    assert len(line) < 600, line
    line = refuse(*sets("data.corpus=albert_pretrain_en/with_new"))
    assert "albert_pretrain_en has the configs default, with_news (did you mean with_news?)" in line
    line = refuse(*sets("data.corpus=rt_sentiment"))
    assert "is a labeled (fine-tuning) set, not a pretraining corpus" in line


def test_load_source_names_an_unknown_dataset_in_one_line():
    from albert_jax.data import builders

    with pytest.raises(ValueError) as e:
        builders.load_source("albert_pretrain_enn", "train")
    assert "\n" not in str(e.value) and "did you mean albert_pretrain_en" in str(e.value)


def test_blank_or_nul_corpus_files_are_named_with_file_and_line(run, cache, tmp_path):
    blank = tmp_path / "blank.txt"
    blank.write_text("\n   \n\n")
    code, err = run("pretrain", "--config", PRETRAIN, "--workdir", tmp_path / "wd", *own(blank))
    assert code == 2 and [line for line in err if "error:" in line] == err[-1:], err  # TFDS may print progress
    assert f"no documents in {blank} (the files are empty or hold only blank lines)" in err[-1]
    nul = tmp_path / "nul.txt"
    nul.write_bytes(b"A fine sentence.\nAnother one with a \x00 in it.\n\nA second document.\n")
    code, err = run("pretrain", "--config", PRETRAIN, "--workdir", tmp_path / "wd", *own(nul))
    assert code == 2 and [line for line in err if "error:" in line] == err[-1:], err
    assert f"{nul}:2: holds a NUL byte at column 20" in err[-1]


def test_read_text_corpus_directory_and_nul_bytes(tmp_path):
    from albert_jax.data import corpora

    with pytest.raises(ValueError, match="is a directory"):
        list(corpora.read_text_corpus([tmp_path]))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        list(corpora.read_text_corpus([tmp_path / "nope.txt"]))
    f = tmp_path / "c.txt"
    f.write_bytes(b"One.\nTw\x00o.\nThree.\n")
    stats = corpora.CorpusStats()
    (doc,) = corpora.read_text_corpus([f], bad_lines="skip", stats=stats)
    assert doc.sentences == ["One.", "Three."]  # the NUL line never becomes text
    assert len(stats.skipped_lines) == 1 and stats.skipped_lines[0].startswith(f"{f}:2: holds a NUL byte")


def test_iter_lines_refuses_nul_bytes_with_file_and_line(tmp_path):
    from albert_jax.data.tokenization import iter_lines

    f = tmp_path / "t.txt"
    f.write_bytes(b"fine\n\x00bad\n")
    with pytest.raises(ValueError, match=r"t\.txt:2: holds a NUL byte at column 1"):
        list(iter_lines(f))


# ------------------------------------------------------------------------------------------------ no-effect warnings
def test_settings_without_effect_warn(caplog, tmp_path, monkeypatch):
    from albert_jax.data.tokenization import train_tokenizer
    from albert_jax.runs.validate import ConfigError, validate

    monkeypatch.chdir(ROOT)
    c = load_config(PRETRAIN)
    c.train.init_mode = "group0"
    c.data.held_out_fraction = 0.2
    c.data.corpus_paths = SOTU
    c.train.batchsize = 32  # a typo in a config file: not read by anything
    spm = tmp_path / "spm"
    train_tokenizer(str(spm), files=[SOTU], vocab_size=300, lower=False)
    c.data.spm_model = f"{spm}.model"
    # The scale's default vocab_size beside a given model is what every config carries: no word about it.
    assert not any("data.vocab_size" in w for w in validate(c, "pretrain"))
    c.data.vocab_size = 5000  # set by the user, and overruled by the model: said
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="albert_jax"):
        warnings = validate(c, "pretrain")
    text = " | ".join(warnings)
    assert "train.init_mode='group0' has no effect without train.init_from" in text
    assert "data.held_out_fraction=0.2 has no effect: data.corpus='albert_pretrain_en' has fixed splits" in text
    assert "data.corpus_paths=" in text and "is not a text_corpus" in text
    assert "data.vocab_size=5000 has no effect: data.spm_model=" in text and "(300 pieces)" in text
    assert "data.lower=True has no effect" in text
    assert "train.batchsize is not read by pretrain: it has no effect (did you mean batch_size?)" in text
    assert [r.getMessage() for r in caplog.records] == warnings  # logged as warnings, not only returned
    c.model.vocab_size = 301
    with pytest.raises(ConfigError, match=r"model.vocab_size=301 does not match the tokenizer: data.spm_model="):
        validate(c, "pretrain")


def test_a_warning_shows_on_the_command_line_next_to_the_error(run, cache, tmp_path):
    f = tmp_path / "a_file"
    f.write_text("x")
    code, err = run("pretrain", "--config", PRETRAIN, "--workdir", f, *sets("train.init_mode=deeper"))
    assert code == 2 and len(err) == 2, err
    assert "WARNING albert_jax.config: train.init_mode='deeper' has no effect without train.init_from" in err[0]
    assert "is a file, not a directory" in err[1]


# ------------------------------------------------------------------------------------------------ fine-tuning
@pytest.mark.parametrize("setting, expected", [
    ("num_seeds=0", "num_seeds=0: must be an integer >= 1"),
    ("data.max_seq_length=0", "data.max_seq_length=0: must be an integer in 5..65535"),
    ("data.max_seq_length=256", "data.max_seq_length=256 exceeds model.max_position_embeddings=128"),
    ("data.limit=-1", "data.limit=-1: must be an integer >= 0"),
    ("data.train_examples=-1", "data.train_examples=-1: must be an integer >= 0"),
    ("train.log_every=0", "train.log_every=0: must be an integer >= 1"),
    ("train.eval_every=0", "train.eval_every=0"),
    ("train.checkpoint_every=0", "train.checkpoint_every=0"),
    ("train.grad_accum_steps=5", "train.grad_accum_steps=5 does not divide train.batch_size=16"),
    ("train.weight_decay=-0.1", "train.weight_decay=-0.1: must be a finite number >= 0.0"),
    ("model.num_attention_heads=3", "model.hidden_size=128 is not divisible by model.num_attention_heads=3"),
    ("data.tokenizer=/nonexistent/spm.model", "data.tokenizer='/nonexistent/spm.model' does not exist"),
])
def test_a_bad_finetuning_field_is_refused_in_one_line_before_data(refuse, setting, expected):
    line = refuse(*sets(setting), command="finetune", config=FINETUNE)
    assert expected in line, line


def test_finetuning_arguments_seeds_and_task(refuse):
    line = refuse(command="finetune", config=FINETUNE.replace("scale=smoke", "seeds=0"))
    assert "seeds=0: must be an integer >= 1" in line
    line = refuse(command="finetune", config=FINETUNE.replace("scale=smoke", "seeds=two"))
    assert "seeds='two': expected a value of type int" in line
    line = refuse(command="finetune",
                   config=FINETUNE.replace("task=rt_sentiment", "task=rt_sentimnt"))
    assert "task='rt_sentimnt': unknown task (did you mean rt_sentiment" in line


def test_finetuning_settings_without_effect_warn():
    from albert_jax.runs.validate import validate

    c = load_config(FINETUNE)
    c.init_step, c.reset_head = 3, True
    warnings = validate(c, "finetune")
    assert any("init_step=3 has no effect with init=random" in w for w in warnings)
    assert any("reset_head=true has no effect with init=random" in w for w in warnings)


def test_check_devices_names_the_mesh_and_the_batch():
    from albert_jax.runs.validate import ConfigError, check_devices, validate

    c = load_config(PRETRAIN)
    c.train.batch_size = 12
    with pytest.raises(ConfigError, match=r"train.batch_size=12 does not split over the 8 batch shards"):
        check_devices(c, 8, 1)
    c.mesh.data, c.mesh.tensor = 1, 8
    with pytest.raises(ConfigError, match=r"train.batch_size=12 does not split over the 8 processes"):
        check_devices(c, 8, 8)
    c.mesh.tensor = 1
    c.mesh.data, c.mesh.fsdp = -1, -1
    with pytest.raises(ConfigError, match="at most one mesh axis may be -1"):
        validate(c, "pretrain")


# ------------------------------------------------------------------------------------------------ --log-level
def test_log_level_shows_our_info_and_quiets_other_libraries(run, capsys):
    from albert_jax.cli.common import setup_logging

    code, err = run("pretrain", "--config", PRETRAIN, "--workdir", "w", "--log-level", "loud")
    assert code == 2 and err == ["albert-jax pretrain: error: --log-level='loud': allowed DEBUG, INFO, WARNING, "
                                 "ERROR"]
    setup_logging("info")
    logging.getLogger("albert_jax.train").info("resumed from step 4")
    logging.getLogger("absl").info("CheckpointManager created")  # orbax logs dozens of these per checkpoint
    err = capsys.readouterr().err
    assert "INFO albert_jax.train: resumed from step 4" in err and "CheckpointManager" not in err
    setup_logging("WARNING")
    logging.getLogger("albert_jax.train").info("resumed from step 4")
    assert "resumed" not in capsys.readouterr().err
