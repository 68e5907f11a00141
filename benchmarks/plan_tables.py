"""The planner's tables in docs/accelerators.md: each row one `albert-jax plan --json`, saved under
docs/benchmarks/plan/ (a rerun skips the rows already there), then rendered.

    .venv-accel/bin/python benchmarks/plan_tables.py run [GROUP...]   # compile (minutes per row on 2 cores)
    .venv-accel/bin/python benchmarks/plan_tables.py render           # the markdown tables from the saved rows

Groups: scan (Table 2's six models on TPU v3 at the paper's batch, 4096 on 512 cores: scanned and unrolled without
remat, and the paper scale's default; more remat policies for three of them; albert-base on v5e), chips (the six
Table 2 models on every other chip at batch 4096). Table 2's prediction is `sweep table2 --plan`
(docs/benchmarks/plan/table2-sweep-plan.md).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "benchmarks" / "plan"
PAPER = "experiments/pretrain.py:scale=paper,preset={}"
V3 = "tpu:v3:16x16"  # 512 cores (256 chips): the paper's largest slice; batch 4096 is 8 sequences per core
TABLE2 = ("bert-base", "bert-large", "albert-base", "albert-large", "albert-xlarge", "albert-xxlarge")
# batch 4096 on each chip's slice; GPUs: 8 of them, 16 sequences per GPU per micro-batch (32 micro-batches)
TIMEOUT = int(os.environ.get("PLAN_TIMEOUT", 900))  # seconds per compile
CHIP_TARGETS = {"v4": ("tpu:v4:4x4x8", []), "v5e": ("tpu:v5e:16x16", []), "v5p": ("tpu:v5p:4x4x8", []),
                "v6e": ("tpu:v6e:16x16", []), "h100": ("gpu:h100x8", ["train.grad_accum_steps=32"]),
                "h200": ("gpu:h200x8", ["train.grad_accum_steps=32"])}


def auto_remat(preset_name: str) -> str:
    """The paper scale's remat policy (the same for every preset: configs/scales.py PAPER_REMAT)."""
    from albert_jax.configs.scales import PAPER_REMAT
    return PAPER_REMAT


# Besides each preset's scanned and unrolled programs without remat and its paper default (scanned, dots_no_ffn_in):
EXTRA = {"albert-base": (("true", "dots"), ("true", "dots_no_batch"), ("false", "dots_no_batch"), ("true", "full")),
         "bert-base": (("true", "dots_no_batch"), ("true", "full")),
         "albert-large": (("true", "dots_no_batch"), ("false", "dots_no_batch"), ("true", "full")),
         "albert-xxlarge": (("true", "dots_no_batch"), ("false", "dots_no_batch"), ("true", "full"))}


def _scan_row(preset_name: str, target: str, chip: str, scan: str, remat: str):
    return (f"scan-{preset_name}-{chip}-scan_{scan}-remat_{remat}", preset_name, target,
            [f"model.scan_layers={scan}", f"model.remat_policy={remat}"])


def rows(group: str):
    if group == "scan":
        for name in TABLE2:
            for scan, remat in (("true", "none"), ("false", "none"), ("true", auto_remat(name))) + EXTRA.get(name, ()):
                yield _scan_row(name, V3, "v3", scan, remat)
        for scan, remat in (("true", "none"), ("false", "none"), ("true", auto_remat("albert-base"))):
            yield _scan_row("albert-base", "tpu:v5e:16x16", "v5e", scan, remat)
    elif group == "chips":
        for name in ("bert-large", "albert-base", "albert-xxlarge", "bert-base", "albert-large", "albert-xlarge"):
            for chip, (target, sets) in CHIP_TARGETS.items():
                yield f"chips-{name}-{chip}", name, target, sets


def run(groups) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for group in groups:
        for slug, preset, target, sets in rows(group):
            path = OUT / f"{slug}.json"
            if path.exists():
                continue
            cmd = [sys.executable, "-m", "albert_jax.main", "plan", "--config", PAPER.format(preset), "--target",
                   target, "--json"] + [a for s in sets for a in ("--set", s)]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=TIMEOUT)
            except subprocess.TimeoutExpired:  # near the memory limit the TPU compiler can search for a long time
                path.write_text(json.dumps({"timed_out": TIMEOUT, "command": "albert-jax " + " ".join(cmd[3:])}))
                print(f"{slug}: compile ran past {TIMEOUT} s", flush=True)
                continue
            if r.returncode not in (0, 1):
                print(f"{slug}: rc {r.returncode}: {r.stderr.strip().splitlines()[-1:]}", flush=True)
                continue
            d = json.loads(r.stdout)
            d["command"] = "albert-jax " + " ".join(cmd[3:])
            path.write_text(json.dumps(d, indent=1))
            print(f"{slug}: {d['verdict']}, compile {d['compile_seconds']:.0f} s", flush=True)


def _load(slug: str) -> dict | None:
    path = OUT / f"{slug}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _cells(d: dict | None) -> str:
    if d is None:
        return "not compiled | | | | | "
    if "timed_out" in d:
        return f"compile ran past {d['timed_out'] / 60:g} min | | | | | "
    ro = d.get("roofline") or {}
    mem = d["memory"]
    step = f"{ro['step_seconds']:.3f} ({ro['bound']})" if ro else "-"
    days = f"{ro['train_hours'] / 24:.1f}" if ro else "-"
    temps = f"{mem['temporaries'] / 2**30:.2f}" if "temporaries" in mem else "-"
    return (f"{mem['total'] / 2**30:.2f} | {temps} | {'yes' if d['fits'] else '**no**'} | {step} | {days} | "
            f"{d['compile_seconds']:.0f}")


def render() -> str:
    out = ["### Scanned against unrolled, and each remat policy (batch 4096 on 512 cores: 8 per core, sequence 512, "
           "float32)", "", "The paper scale's default, scanned with remat `dots_no_ffn_in`, is in bold.", "",
           "| model | target | layers | remat | GiB/device | temporaries GiB | fits | step s (roofline) | days for "
           "125k steps | compile s | FLOPs / model |", "|---|---|---|---|---:|---:|---|---:|---:|---:|---:|"]
    for slug, name, target, sets in rows("scan"):
        scan = "scanned" if "scan_layers=true" in sets[0] else "unrolled"
        remat = sets[1].split("=")[1]
        d = _load(slug)
        shown = f"**{remat}**" if scan == "scanned" and remat == auto_remat(name) else remat
        ratio = f"{d['flops']['hardware_over_model']:.3f}" if d and d.get("flops") else ""
        out.append(f"| {name} | {target} | {scan} | {shown} | {_cells(d)} | {ratio} |")
    default = {name: _load(f"scan-{name}-v3-scan_true-remat_{auto_remat(name)}") for name in TABLE2}
    out += ["", "### Every chip at the paper's batch (4096, sequence 512, float32; scanned, remat dots_no_ffn_in, "
            "mesh: data parallel over every device)", "",
            "| model | target | GiB/device | temporaries GiB | fits | step s (roofline) | days for 125k steps | "
            "compile s |", "|---|---|---:|---:|---|---:|---:|---:|"]
    for name in TABLE2:
        out.append(f"| {name} | {V3} | {_cells(default[name])} |")
        for chip, (target, sets) in CHIP_TARGETS.items():
            label = target + (" (32 micro-batches of 16 per GPU)" if sets else "")
            out.append(f"| {name} | {label} | {_cells(_load(f'chips-{name}-{chip}'))} |")
    return "\n".join(out)


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        run(sys.argv[2:] or ("scan", "chips"))
    elif sys.argv[1:2] == ["render"]:
        print(render())
    else:
        sys.exit(__doc__)
