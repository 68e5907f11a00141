"""The planner's tables in docs/accelerators.md: each row one `albert-jax plan --json`, saved under
docs/benchmarks/plan/ (a rerun skips the rows already there), then rendered.

    .venv-accel/bin/python benchmarks/plan_tables.py run [GROUP...]   # compile (minutes per row on 2 cores)
    .venv-accel/bin/python benchmarks/plan_tables.py render           # the markdown tables from the saved rows

Groups: scan (scanned against unrolled and each remat policy at the paper's batch), table2 (Table 2's rows on
TPU v3 at the paper's batch 4096, 512 cores), chips (presets on every other chip at batch 4096).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "benchmarks" / "plan"
PAPER = "experiments/pretrain.py:scale=paper,preset={}"
V3 = "tpu:v3:16x16"  # 512 cores (256 chips): the paper's largest slice; batch 4096 is 8 sequences per core
# (scan_layers, remat_policy): the paper scale's default (dots_no_batch, scanned) beside no remat and full remat
SCAN_SETTINGS = (("true", "none"), ("false", "none"), ("true", "dots_no_batch"), ("false", "dots_no_batch"),
                 ("true", "full"))
TABLE2 = ("bert-base", "bert-large", "albert-base", "albert-large", "albert-xlarge", "albert-xxlarge")
PAPER_SPEEDUP = {"bert-base": 4.7, "bert-large": 1.0, "albert-base": 5.6, "albert-large": 1.7, "albert-xlarge": 0.6,
                 "albert-xxlarge": 0.3}
# batch 4096 on each chip's slice; GPUs: 8 of them, 16 sequences per GPU per micro-batch (32 micro-batches)
CHIP_TARGETS = {"v4": ("tpu:v4:4x4x8", []), "v5e": ("tpu:v5e:16x16", []), "v5p": ("tpu:v5p:4x4x8", []),
                "v6e": ("tpu:v6e:16x16", []), "h100": ("gpu:h100x8", ["train.grad_accum_steps=32"]),
                "h200": ("gpu:h200x8", ["train.grad_accum_steps=32"])}


def rows(group: str):
    if group == "scan":
        for preset in ("albert-base", "albert-large", "albert-xxlarge"):
            for scan, remat in SCAN_SETTINGS + ((("true", "dots"),) if preset == "albert-base" else ()):
                yield (f"scan-{preset}-v3-scan_{scan}-remat_{remat}", preset, V3,
                       [f"model.scan_layers={scan}", f"model.remat_policy={remat}"])
        for scan, remat in SCAN_SETTINGS[:3]:
            yield (f"scan-albert-base-v5e-scan_{scan}-remat_{remat}", "albert-base", "tpu:v5e:16x16",
                   [f"model.scan_layers={scan}", f"model.remat_policy={remat}"])
    elif group == "table2":
        for preset in TABLE2:
            yield f"table2-{preset}-v3", preset, V3, []
    elif group == "chips":
        for preset in ("bert-large", "albert-base", "albert-xxlarge"):
            for chip, (target, sets) in CHIP_TARGETS.items():
                yield f"chips-{preset}-{chip}", preset, target, sets


def run(groups) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for group in groups:
        for slug, preset, target, sets in rows(group):
            path = OUT / f"{slug}.json"
            if path.exists():
                continue
            cmd = [sys.executable, "-m", "albert_jax.main", "plan", "--config", PAPER.format(preset), "--target",
                   target, "--json"] + [a for s in sets for a in ("--set", s)]
            r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
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
        return "not compiled | | | | "
    ro = d.get("roofline") or {}
    mem = d["memory"]
    step = f"{ro['step_seconds']:.3f} ({ro['bound']})" if ro else "-"
    days = f"{ro['train_hours'] / 24:.1f}" if ro else "-"
    temps = f"{mem['temporaries'] / 2**30:.2f}" if "temporaries" in mem else "-"
    return (f"{mem['total'] / 2**30:.2f} | {temps} | {'yes' if d['fits'] else '**no**'} | {step} | {days} | "
            f"{d['compile_seconds']:.0f}")


def render() -> str:
    out = ["### Scanned against unrolled, and each remat policy (batch 4096, sequence 512, float32)", "",
           "| model | target | layers | remat | GiB/device | temporaries GiB | fits | step s (roofline) | days for "
           "125k steps | compile s |", "|---|---|---|---|---:|---:|---|---:|---:|---:|"]
    for slug, preset, target, sets in rows("scan"):
        scan = "scanned" if "scan_layers=true" in sets[0] else "unrolled"
        remat = sets[1].split("=")[1]
        out.append(f"| {preset} | {target} | {scan} | {remat} | {_cells(_load(slug))} |")
    out += ["", "### Table 2 on TPU v3 (512 cores, batch 4096 = 8 per core; the paper scale's default: scanned, remat dots_no_batch)", "",
            "| model | GiB/device | temporaries GiB | fits | step s (roofline) | days for 125k steps | compile s | "
            "predicted speedup | paper |", "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    ref = _load("table2-bert-large-v3")
    for slug, preset, _, _ in rows("table2"):
        d = _load(slug)
        speed = "-"
        if d and ref and d.get("roofline") and ref.get("roofline"):
            speed = f"{ref['roofline']['step_seconds'] / d['roofline']['step_seconds']:.2f}x"
        out.append(f"| {preset} | {_cells(d)} | {speed} | {PAPER_SPEEDUP[preset]}x |")
    out += ["", "### Every chip at the paper's batch (4096, sequence 512, float32; scanned, remat dots_no_batch)", "",
            "| model | target | GiB/device | temporaries GiB | fits | step s (roofline) | days for 125k steps | "
            "compile s |", "|---|---|---:|---:|---|---:|---:|---:|"]
    v3 = {p: _load(f"table2-{p}-v3") for p in TABLE2}
    for preset in ("bert-large", "albert-base", "albert-xxlarge"):
        out.append(f"| {preset} | {V3} | {_cells(v3[preset])} |")
        for chip, (target, sets) in CHIP_TARGETS.items():
            label = target + (" (32 micro-batches of 16 per GPU)" if sets else "")
            out.append(f"| {preset} | {label} | {_cells(_load(f'chips-{preset}-{chip}'))} |")
    return "\n".join(out)


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        run(sys.argv[2:] or ("scan", "table2", "chips"))
    elif sys.argv[1:2] == ["render"]:
        print(render())
    else:
        sys.exit(__doc__)
