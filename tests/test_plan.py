"""The planner (albert_jax/plan): the trainer's step compiled for TPU slices and GPUs that are not here.

Tests marked `accel` need libtpu and the CUDA plugin, which live in .venv-accel (`make test-accel`; `make test`
runs them there). The others run in the main venv, where neither is installed.
"""
import functools
import importlib.util
import json
import subprocess
import sys

import pytest

SMOKE = "experiments/pretrain.py:scale=smoke"
accel = pytest.mark.accel


def _plan_cli(*args):
    return subprocess.run([sys.executable, "-m", "albert_jax.main", "plan", *args], capture_output=True, text=True,
                          timeout=600)


def _compile(spec, target, *sets):
    from albert_jax.cli.common import load_experiment
    from albert_jax.plan import compile as plan_compile
    from albert_jax.plan import targets

    config = load_experiment(spec, list(sets))
    try:
        return plan_compile.plan(config, targets.resolve(target))
    except plan_compile.DoesNotFit as e:
        return e.report


# Tests that ask for the same plan share one compile (the suite's time is mostly compiling): a report is read, never
# changed. The test of which builder the plan calls compiles its own (_compile).
_plan = functools.cache(_compile)


def test_a_missing_compiler_is_one_line_naming_the_package():
    assert importlib.util.find_spec("libtpu") is None, "run in the main venv, which has no libtpu"
    r = _plan_cli("--config", SMOKE, "--target", "tpu:v5e:2x2")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    line = [ln for ln in r.stderr.splitlines() if "error" in ln]
    assert len(line) == 1 and "libtpu" in line[0] and "pip install 'jax[tpu]==0.10.2'" in line[0]
    r = _plan_cli("--config", SMOKE, "--target", "gpu:h100x8")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    line = [ln for ln in r.stderr.splitlines() if "error" in ln]
    assert len(line) == 1 and "jax-cuda12-plugin" in line[0] and "make accel" in line[0]


def test_a_target_that_cannot_be_spelled_is_refused_with_examples():
    from albert_jax.plan import targets

    with pytest.raises(targets.TargetError, match="tpu:v3:8x8"):
        targets.parse("tpu-v3-128")
    with pytest.raises(targets.TargetError, match="unknown TPU generation"):
        targets.parse("tpu:v9:2x2")
    assert targets.parse("tpu:v5e:16x16:slices=2") == targets.Spec("tpu", "v5e", "16x16", 2)
    assert targets.parse("gpu:h200x8") == targets.Spec("gpu", "h200", "8")


def test_loop_trip_counts_multiply_the_body_flops():
    """A scanned matmul's FLOPs from the compiled HLO equal the hand count; XLA's own count has the body once."""
    import jax
    import jax.numpy as jnp

    from albert_jax.plan import hlo

    def f(w, x):
        return jax.lax.scan(lambda c, wi: (jnp.tanh(c @ wi), None), x, w)[0].sum()

    compiled = jax.jit(jax.grad(f)).lower(jnp.ones((12, 64, 64)), jnp.ones((32, 64))).compile()
    a = hlo.analyse(compiled.as_text())
    by_hand = 12 * 3 * 2 * 32 * 64 * 64  # forward, two backward matmuls per layer
    assert a.flops == by_hand
    assert a.flops_once == by_hand / 12
    assert [loop["trip_count"] for loop in a.loops] == [12, 12]
    assert hlo.xla_costs(compiled)["flops"] < by_hand / 6  # what the correction is for


@accel
@pytest.mark.parametrize("target", ["tpu:v5e:2x2", "tpu:v3:2x2", "tpu:v5e:2x2:slices=2"])
def test_smoke_model_compiles_for_tpu_with_memory_and_flops(target):
    r = _plan(SMOKE, target)
    assert r.num_devices == (4 if target == "tpu:v5e:2x2" else 8)
    assert r.fits is True and r.margin_bytes > 0
    assert r.memory["temporaries"] > 0 and r.memory["arguments"] > 0
    assert r.memory["total"] < r.usable_bytes
    assert r.flops["hardware_over_model"] == pytest.approx(1.0, abs=0.02)  # the analytic model, within 2%
    assert r.flops["per_device"] > 2.5 * r.flops["loop_bodies_once"]  # the 4-layer scan, 4 times (heads: once)
    assert "all-reduce" in r.collectives and r.collectives["all-reduce"]["bytes"] > 0
    assert r.roofline["step_seconds"] > 0 and r.roofline["bound"] in ("compute", "memory")
    assert r.xla["optimal_seconds_corrected"] > 0  # custom calls' -1 added back
    assert r.compile_seconds > 0


@accel
def test_scanned_flops_equal_the_unrolled_twin():
    scanned = _plan(SMOKE, "tpu:v5e:2x2")
    unrolled = _plan(SMOKE, "tpu:v5e:2x2", "model.scan_layers=false")
    assert unrolled.flops["per_device"] == pytest.approx(scanned.flops["per_device"], rel=0.01)
    # XLA's own cost analysis counts the scanned body once: far below
    assert scanned.flops["xla_cost_analysis"] < 0.8 * unrolled.flops["xla_cost_analysis"]


@accel
def test_a_model_that_cannot_fit_is_refused_with_its_numbers():
    big = ["model.hidden_size=2048", "model.intermediate_size=8192", "model.num_attention_heads=16",
           "train.batch_size=2048"]
    r = _plan(SMOKE, "tpu:v5e:2x2", *big)
    assert r.fits is False and r.refused and "RESOURCE_EXHAUSTED" in r.refused
    assert r.memory["total"] > r.usable_bytes > 15 * 2**30
    cli = _plan_cli("--config", SMOKE, "--target", "tpu:v5e:2x2", *[a for s in big for a in ("--set", s)])
    assert cli.returncode == 1
    verdict = [ln for ln in cli.stderr.splitlines() if ln.startswith("albert-jax plan:")]
    assert len(verdict) == 1 and "does not fit" in verdict[0] and "GiB" in verdict[0]
    assert "Traceback" not in cli.stderr


@accel
def test_the_planner_compiles_the_trainers_own_step(monkeypatch):
    """The plan lowers the step `training.program.build` makes (the loop's builder), and the program it lowers
    for the TPU mesh is the one lowered for a mesh of this machine's devices."""
    import jax

    from albert_jax import sharding as shd
    from albert_jax.cli.common import load_experiment
    from albert_jax.plan import compile as plan_compile
    from albert_jax.training import loop, program

    assert "program.build(" in __import__("inspect").getsource(loop._setup)
    built = []
    real = program.build
    monkeypatch.setattr(program, "build", lambda *a: built.append(real(*a)) or built[-1])
    r = _compile(SMOKE, "tpu:v3:2x2")
    assert r.fits and len(built) == 1
    config = load_experiment(SMOKE, [])
    task, model_cfg = plan_compile.task_and_model(config)
    cpu = real(task, model_cfg, config.train, shd.make_mesh(devices=jax.devices("cpu")[:8]))
    batch = program.abstract_batch(task, 8, 64, cpu.batch_sh)
    here = cpu.train_step.lower(cpu.abstract_state, batch, program.abstract_rng(cpu.mesh)).as_text()
    assert r.step_sha256 == plan_compile.program_hash(here)


@accel
def test_gpu_deviceless_compile_of_the_smoke_model():
    r = _plan(SMOKE, "gpu:h100x8")
    assert r.device_kind.startswith("NVIDIA H100")
    assert r.fits is True and r.memory["total"] > 0
    assert r.flops["hardware_over_model"] == pytest.approx(1.0, abs=0.02)
    assert r.roofline["peak_flops"] == pytest.approx(494.5e12)  # float32: TF32 on the GPU
    assert "no fused attention" in r.attention


@accel
def test_cli_json_and_max_batch(capsys):
    from albert_jax.main import main

    # In this process (the CLI's exit code and one-line refusal as a subprocess: the test above): the same code
    # path, without a second interpreter importing jax and the TPU compiler.
    assert main(["plan", "--config", SMOKE, "--target", "tpu:v5e:2x2", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["fits"] is True and d["verdict"].startswith("fits")
    assert set(d["memory"]) >= {"arguments", "outputs", "aliases", "temporaries", "total"}
    # Bisection on compiles, bounded: near the memory limit the TPU compiler works hard on every probe (minutes each
    # at H=1024 on 2 cores), so the test stays where the smoke model fits. The refusal side: the test above.
    from albert_jax.cli.common import load_experiment
    from albert_jax.plan import search, targets

    best, probes = search.max_batch(load_experiment(SMOKE, []), targets.resolve("tpu:v5e:2x2"), upper=3)
    assert best == 3
    assert [p.per_device_batch for p in probes] == [1, 2, 3]  # doubled to 2, 4 is past 3: bisected up
    assert all(p.fits for p in probes)


@accel
def test_search_tries_meshes_and_remat_policies_and_marks_the_best():
    from albert_jax.cli.common import load_experiment
    from albert_jax.plan import render, search, targets

    meshes = [{"data": 4, "fsdp": 1, "tensor": 1}, {"data": 1, "fsdp": 2, "tensor": 2}]
    tried, best = search.search(load_experiment(SMOKE, []), targets.resolve("tpu:v5e:2x2"), remats=("none", "full"),
                                meshes=meshes)
    assert [(t.mesh, t.remat) for t in tried] == [(m, r) for m in meshes for r in ("none", "full")]
    assert all(t.report is not None and t.report.fits for t in tried)
    steps = [t.report.roofline["step_seconds"] for t in tried]
    assert best == steps.index(min(steps))
    assert tried[1].report.flops["per_device"] > tried[0].report.flops["per_device"]  # full remat recomputes
    assert tried[2].report.mesh == {"data": 1, "fsdp": 2, "tensor": 2}
    table = render.table([(f"{t.mesh} {t.remat}", t.report, t.error) for t in tried], best)
    assert table.count("**best**") == 1 and len(table.splitlines()) == 2 + len(tried)


@accel
def test_sweep_plans_every_row_first_and_refuses_rows_that_cannot_fit(tmp_path):
    def sweep(*extra):
        return subprocess.run([sys.executable, "-m", "albert_jax.main", "sweep", "table5", "--scale", "smoke",
                               "--runs", str(tmp_path), "--rows", "nsp", "--plan", "tpu:v5e:2x2", *extra],
                              capture_output=True, text=True, timeout=600)

    r = sweep()
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| NSP |" in r.stdout and "chip-hours" in r.stdout and "1 fit" in r.stdout
    assert not any(tmp_path.rglob("checkpoints"))  # a plan runs nothing
    big = ["--set", "pretrain.model.hidden_size=2048", "--set", "pretrain.model.intermediate_size=8192",
           "--set", "pretrain.model.num_attention_heads=16", "--set", "pretrain.train.batch_size=2048"]
    r = sweep(*big, "--launcher", "submitit-local")
    assert r.returncode == 2
    assert "not submitted" in r.stderr and "NSP" in r.stderr
    assert not any(tmp_path.rglob("*.pkl"))  # submitit wrote no job


@accel
def test_gpu_plans_hold_cudnn_flash_attention_where_the_model_allows_it():
    """attention_impl='auto' (the default) takes cuDNN's fused attention on GPUs for a bf16 model; float32 (which
    cuDNN has no kernel for) keeps XLA's own attention; the TPU program never has it."""
    bf16 = _plan(SMOKE, "gpu:h100x8", "model.dtype=bfloat16")
    assert "__cudnn$fmhaScaleBiasSoftmax" in bf16.custom_call_targets
    assert "__cudnn$fmhaScaleBiasSoftmaxBackward" in bf16.custom_call_targets
    assert bf16.attention.startswith("fused custom call")
    f32 = _plan(SMOKE, "gpu:h100x8")
    assert not any("cudnn" in t for t in f32.custom_call_targets) and "no fused attention" in f32.attention
    tpu = _plan(SMOKE, "tpu:v5e:2x2", "model.dtype=bfloat16")
    assert "no fused attention" in tpu.attention


def test_cudnn_attention_is_refused_where_it_cannot_run():
    from albert_jax.config import ConfigError, preset

    with pytest.raises(ConfigError, match="attention_impl='cudnn'.*float32"):
        preset("albert-base", attention_impl="cudnn")
    with pytest.raises(ConfigError, match="dropout"):
        preset("albert-base", attention_impl="cudnn", dtype="bfloat16", attention_probs_dropout_prob=0.1)
    ok = preset("albert-base", dtype="bfloat16")
    assert ok.for_platform("gpu").attention_impl == "cudnn"
    assert ok.for_platform("tpu").attention_impl == "xla" and ok.for_platform("cpu").attention_impl == "xla"
    assert preset("albert-base").for_platform("gpu").attention_impl == "xla"  # float32: no cuDNN kernel


@accel
@pytest.mark.parametrize("spec", ["experiments/finetune.py:task=rt_sentiment,scale=smoke",
                                  "experiments/distill.py:task=rt_sentiment,teacher=nowhere,scale=smoke"])
def test_finetune_and_distill_configs_are_planned_as_they_train(spec):
    """What finetune and distill take is planned without reading data (a distillation as its student's step);
    the FLOP model without an MLM head agrees with the compiled classifier's step."""
    r = _plan(spec, "tpu:v5e:2x2")
    assert r.kind == ("distill" if "distill.py" in spec else "finetune") and r.fits
    assert r.flops["hardware_over_model"] == pytest.approx(1.0, abs=0.02)
