"""Metric writers (read back from disk), MFU arithmetic, peak lookup, throughput, progress bar."""
import fcntl
import glob
import io
import math
import os
import struct
import subprocess
import sys
import termios
import time

import jax.numpy as jnp
import numpy as np
import pytest
from tensorboardX.proto import event_pb2
from tensorboardX.record_writer import masked_crc32c

from albert_jax.training import metrics, rundir


def _read_tfrecords(path):
    """TFRecord framing: u64 length, u32 masked crc(length), data, u32 masked crc(data)."""
    with open(path, "rb") as f:
        data = f.read()
    pos, out = 0, []
    while pos < len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (len_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        assert len_crc == masked_crc32c(header)
        payload = data[pos + 12:pos + 12 + length]
        (data_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        assert data_crc == masked_crc32c(payload)
        out.append(payload)
        pos += 16 + length
    return out


def _tb_scalars(workdir):
    files = glob.glob(os.path.join(workdir, "tb", "events.out.tfevents.*"))
    assert len(files) == 1, files
    scalars = {}
    for record in _read_tfrecords(files[0]):
        event = event_pb2.Event.FromString(record)
        for value in event.summary.value:
            scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


def test_jsonl_and_tensorboard_round_trip(tmp_path):
    workdir = str(tmp_path / "run")
    with metrics.MetricWriter(workdir, enabled=True) as writer:
        writer.write(1, {"loss": jnp.float32(2.5), "mlm_accuracy": np.float64(0.25), "learning_rate": 1e-4})
        writer.write(2, {"loss": 2.0, "tokens": np.int64(4096)})
        writer.flush()
        # Flushed: the JSONL is complete on disk before close.
        assert len(rundir.read_metrics(os.path.join(workdir, "metrics.jsonl"))) == 2
    records = rundir.read_metrics(os.path.join(workdir, "metrics.jsonl"))
    assert records == [{"step": 1, "loss": 2.5, "mlm_accuracy": 0.25, "learning_rate": 1e-4},
                       {"step": 2, "loss": 2.0, "tokens": 4096}]
    assert isinstance(records[1]["tokens"], int)
    scalars = _tb_scalars(workdir)
    assert scalars["loss"] == [(1, 2.5), (2, 2.0)]
    assert scalars["learning_rate"][0][0] == 1
    assert math.isclose(scalars["learning_rate"][0][1], 1e-4, rel_tol=1e-6)  # float32 in the event proto

    # A resumed run appends to the same file.
    with metrics.MetricWriter(workdir, enabled=True, tensorboard=False) as writer:
        writer.write(3, {"loss": float("nan")})
    records = rundir.read_metrics(os.path.join(workdir, "metrics.jsonl"))
    assert [r["step"] for r in records] == [1, 2, 3] and math.isnan(records[2]["loss"])


def test_a_run_logging_to_tensorboard_does_not_import_torch(tmp_path):
    """tensorboardX imports torch whenever it is installed (~4 s per run); our writer logs floats without it, and
    torch still imports normally afterwards (export, the parity tests)."""
    code = ("import sys\nfrom albert_jax.training.metrics import MetricWriter\n"
            f"w = MetricWriter({str(tmp_path)!r}, enabled=True)\nw.write(1, {{'loss': 2.5}})\nw.close()\n"
            "print('torch' in sys.modules)\nimport torch\nprint(torch.ones(1).item())\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split() == ["False", "1.0"]
    assert _tb_scalars(str(tmp_path)) == {"loss": [(1, 2.5)]}


def test_writer_rejects_bad_values(tmp_path):
    with metrics.MetricWriter(str(tmp_path), enabled=True, tensorboard=False) as writer:
        with pytest.raises(TypeError, match="'logits'.*shape \\(2,\\)"):
            writer.write(0, {"logits": np.zeros(2)})
        with pytest.raises(ValueError, match="reserved"):
            writer.write(0, {"step": 1})
    with pytest.raises(RuntimeError, match="closed"):
        writer.write(1, {"loss": 1.0})


def test_disabled_writer_touches_nothing(tmp_path):
    workdir = tmp_path / "other_process"
    with metrics.MetricWriter(str(workdir), enabled=False) as writer:
        writer.write(1, {"loss": 1.0})
    assert not workdir.exists()


def test_read_metrics_drops_a_cut_last_line_with_one_warning(tmp_path, caplog):
    """The crash case: a run killed while writing its last record leaves it cut short. It is dropped, with one
    warning naming file:line; a record whose newline alone is missing is whole and kept."""
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "loss": 2.0}\n\n{"step": 2, "loss": 1.5}\n{"step": 3, "lo')
    with caplog.at_level("WARNING"):
        assert rundir.read_metrics(path) == [{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5}]
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and "metrics.jsonl:4" in warned[0]
    path.write_text('{"step": 1}\n{"step": 2}')
    assert rundir.read_metrics(path) == [{"step": 1}, {"step": 2}]
    path.write_text('{"step": 1}\nnot json\n')  # unparsable last line, newline or not: the same rule
    assert rundir.read_metrics(path) == [{"step": 1}]


@pytest.mark.parametrize("bad", ["not json", "[1, 2]", '{"step": 2'])
def test_read_metrics_names_a_bad_line_before_the_last(tmp_path, bad):
    path = tmp_path / "m.jsonl"
    path.write_text(f'{{"step": 1}}\n{bad}\n{{"step": 3}}\n')
    with pytest.raises(ValueError, match=r"m.jsonl:2: not a JSON object"):
        rundir.read_metrics(path)


def test_truncate_metrics_rolls_back_past_the_restored_step(tmp_path):
    """A resume from step 2 drops later records and a cut last line, and leaves a file that appends cleanly."""
    path = tmp_path / "metrics.jsonl"
    assert rundir.truncate_metrics(path, 2) == []  # no file yet
    path.write_text('{"step": 1}\n{"step": 2, "loss": 1.0}\n{"step": 3}\n{"step": 4, "lo')
    assert rundir.truncate_metrics(path, 2) == [{"step": 1}, {"step": 2, "loss": 1.0}]
    assert path.read_text() == '{"step": 1}\n{"step": 2, "loss": 1.0}\n'
    mtime = path.stat().st_mtime_ns
    assert rundir.truncate_metrics(path, 5) == [{"step": 1}, {"step": 2, "loss": 1.0}]
    assert path.stat().st_mtime_ns == mtime  # nothing to drop: not rewritten
    path.write_text('{"step": 1}\n{"step": 2}')  # whole, its newline missing: kept, and the newline added
    assert rundir.truncate_metrics(path, 2) == [{"step": 1}, {"step": 2}]
    assert path.read_text() == '{"step": 1}\n{"step": 2}\n'


def test_read_json_and_read_config(tmp_path, caplog):
    """results.json and kind.json: a dict, or None when missing or unreadable (warned); required raises naming the
    file. config.json: its experiment config filled in from the schema."""
    import json

    f = tmp_path / "results.json"
    assert rundir.read_json(f) is None
    with pytest.raises(FileNotFoundError, match="results.json"):
        rundir.read_json(f, required=True)
    f.write_text('{"dev": {"accuracy": 0.5}')  # cut by a kill
    with caplog.at_level("WARNING"):
        assert rundir.read_json(f) is None
    assert any("results.json" in r.getMessage() for r in caplog.records)
    with pytest.raises(ValueError, match=r"results.json: line 1: not valid JSON"):
        rundir.read_json(f, required=True)
    f.write_text("[1]")
    with pytest.raises(ValueError, match="not an object"):
        rundir.read_json(f, required=True)
    assert rundir.read_config(tmp_path, required=False) is None
    with pytest.raises(FileNotFoundError, match="not a run's workdir"):
        rundir.read_config(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model": {}, "experiment": {"data": {"corpus": "c"},
                                                                                  "train": {"batch_size": 8}}}))
    exp = rundir.read_config(tmp_path)["experiment"]  # recorded before these fields existed
    assert exp["data"]["zh_masking"] == "char" and exp["train"]["weight_decay"] == 0.01


def test_mfu_hand_example():
    # ALBERT-large at s=512: 1.967 GFLOP/token (performance.md §0); 393 seq/s on one H200 ~ 40% MFU.
    tokens_per_second = 393 * 512
    value = metrics.mfu(1.967e9, tokens_per_second, n_devices=1, peak_flops_per_device=989e12)
    assert value == pytest.approx(1.967e9 * 393 * 512 / 989e12)
    assert value == pytest.approx(0.40, abs=0.005)
    # 1e9 FLOP/token * 8e3 tokens/s = 8e12 FLOP/s: 80% of one 1e13 device, 10% of eight.
    assert metrics.mfu(1e9, 8e3, 1, 1e13) == pytest.approx(0.8)
    assert metrics.mfu(1e9, 8e3, 8, 1e13) == pytest.approx(0.1)
    assert metrics.flops_per_second_per_device(1e9, 8e3, 8) == pytest.approx(1e12)
    with pytest.raises(ValueError, match="peak_flops_per_device"):
        metrics.mfu(1e9, 1e3, 1, 0.0)
    with pytest.raises(ValueError, match="n_devices"):
        metrics.mfu(1e9, 1e3, 0, 1e12)


@pytest.mark.parametrize("kind, peak", [
    ("NVIDIA H100 80GB HBM3", 989e12), ("NVIDIA H200", 989e12), ("NVIDIA A100-SXM4-80GB", 312e12),
    ("TPU v4", 275e12), ("TPU v5", 459e12), ("TPU v5p", 459e12), ("TPU v6 lite", 918e12), ("TPU v6e", 918e12),
    ("TPU v3", 123e12), ("TPU v5 lite", None), ("NVIDIA H100 PCIe", None), ("cpu", None),
])
def test_peak_lookup(kind, peak, monkeypatch):
    monkeypatch.delenv(metrics.PEAK_FLOPS_ENV, raising=False)
    assert metrics.peak_flops_per_device(kind) == peak


def test_peak_override_and_env(monkeypatch):
    monkeypatch.delenv(metrics.PEAK_FLOPS_ENV, raising=False)
    assert metrics.peak_flops_per_device() is None  # tests run on CPU devices
    assert metrics.peak_flops_per_device("cpu", override=157e9) == 157e9
    monkeypatch.setenv(metrics.PEAK_FLOPS_ENV, "78.5e9")
    assert metrics.peak_flops_per_device("cpu") == 78.5e9
    assert metrics.peak_flops_per_device("NVIDIA H200") == 78.5e9  # an explicit setting wins over the table
    monkeypatch.setenv(metrics.PEAK_FLOPS_ENV, "fast")
    with pytest.raises(ValueError, match="ALBERT_JAX_PEAK_FLOPS='fast'"):
        metrics.peak_flops_per_device("cpu")


def test_throughput_counts_real_tokens_when_given():
    meter = metrics.ThroughputMeter(skip_first=0)
    time.sleep(0.01)
    meter.step(tokens=1000, sequences=10, real_tokens=600.0)  # e.g. 40% padding
    rates = meter.rates()
    assert rates["real_tokens_per_second"] == pytest.approx(0.6 * rates["tokens_per_second"])
    time.sleep(0.01)
    meter.step(tokens=1000, sequences=10)  # a task that does not count them
    assert "real_tokens_per_second" not in meter.rates()


def test_throughput_ignores_compile_step():
    meter = metrics.ThroughputMeter()
    assert meter.rates() is None
    time.sleep(0.3)  # the "compile" step
    meter.step(tokens=1000, sequences=10)
    assert meter.rates() is None  # only the clock was set
    for _ in range(3):
        time.sleep(0.02)
        meter.step(tokens=1000, sequences=10)
    rates = meter.rates()
    assert 0.015 < rates["step_time"] < 0.2  # the 0.3 s first step is not in the mean
    assert rates["tokens_per_second"] == pytest.approx(100 * rates["sequences_per_second"])
    assert rates["tokens_per_second"] == pytest.approx(1000 / rates["step_time"])
    assert meter.rates() is None  # the window was reset
    time.sleep(0.3)
    meter.pause()  # e.g. after an eval: not counted
    meter.step(tokens=1000, sequences=10)
    assert meter.rates()["step_time"] < 0.2


def test_progress_bar_only_on_a_terminal():
    pipe = io.StringIO()
    bar = metrics.progress_bar(10, stream=pipe, enabled=True)
    bar.update(5)
    bar.close()
    assert pipe.getvalue() == ""

    master, slave = os.openpty()  # a real terminal device
    # A fresh pty is 0 columns wide (tqdm would draw nothing); give it a terminal's size.
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        with os.fdopen(slave, "w") as tty:
            assert tty.isatty()
            bar = metrics.progress_bar(10, stream=tty, desc="pretrain", enabled=True)
            bar.update(5)
            bar.close()
        chunks = []
        while True:  # drain: Linux answers EIO once the closed slave's output is read
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        written = b"".join(chunks).decode()
    finally:
        os.close(master)
    assert "pretrain" in written and "5/10" in written


def test_throughput_skips_a_new_programs_step_and_sums_flops():
    """A bucketed run compiles a program at each new length: that step sets the clock, like the first."""
    meter = metrics.ThroughputMeter(skip_first=0)
    time.sleep(0.02)
    meter.step(tokens=640, sequences=10, flops=6400.0)
    time.sleep(0.3)  # a compile at a new length
    meter.step(tokens=320, sequences=10, flops=2000.0, new_program=True)
    time.sleep(0.02)
    meter.step(tokens=320, sequences=10, flops=2000.0)
    rates = meter.rates()
    assert rates["step_time"] < 0.15  # the 0.3 s step is not counted
    assert rates["tokens_per_second"] == pytest.approx(960 / (2 * rates["step_time"]))
    assert rates["flops_per_second"] / rates["tokens_per_second"] == pytest.approx(8400 / 960)
    meter.step(tokens=1, sequences=1)
    assert "flops_per_second" not in meter.rates()  # no FLOPs given: none reported
