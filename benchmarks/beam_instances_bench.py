"""Pretraining instances per second and peak memory: the local path (a process pool) against the Beam pipeline
(FnApiRunner, multi-processing), at 1 and 2 workers, on 1x and 4x the corpus (docs/data-at-scale.md).

The corpus is the English mix's train text cut into files of about `--file-mb` MB (the unit of work of both
paths); 4x is four times as many such files. Each configuration runs in a fresh process; its peak memory is the
largest resident set among that process and its workers (getrusage). Run it in the Beam venv:

  .venv-beam/bin/python benchmarks/beam_instances_bench.py --out docs/benchmarks/beam_instances.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
from albert_jax.tasks.pretraining import instances
runner, workers, out, model, files = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
cfg = instances.PretrainingConfig(max_seq_length=128, dupe_factor=2)
t = time.perf_counter()
if runner == "local":
    n = instances.create_pretraining_data(files, model, out, cfg, workers=workers)["totals"]["instances"]
else:
    from albert_jax.tasks.pretraining.beam import create_with_beam
    n = create_with_beam(files, model, out, cfg, workers=workers)["totals"]["instances"]
wall = time.perf_counter() - t
rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({"instances": n, "seconds": wall, "peak_rss_mb": rss / 1024}))
"""


def split_corpus(text: Path, out: Path, file_mb: float, copies: int, limit_mb: float) -> list[str]:
    """The first `limit_mb` MB of `text` cut at document boundaries into files of ~file_mb MB, the whole set
    repeated `copies` times."""
    docs, total = [], 0
    for doc in text.read_text(encoding="utf-8").split("\n\n"):
        if total >= limit_mb * 1e6:
            break
        docs.append(doc)
        total += len(doc.encode())
    files, chunk, size = [], [], 0
    for doc in docs:
        chunk.append(doc)
        size += len(doc.encode())
        if size >= file_mb * 1e6:
            files.append("\n\n".join(chunk) + "\n\n")
            chunk, size = [], 0
    if chunk:
        files.append("\n\n".join(chunk) + "\n\n")
    paths = []
    for c in range(copies):
        for i, body in enumerate(files):
            p = out / f"c{c}-{i:03d}.txt"
            p.write_text(body, encoding="utf-8")
            paths.append(str(p))
    return paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file-mb", type=float, default=2.0)
    ap.add_argument("--base-copies", type=int, default=1, help="the 1x corpus: the text this many times")
    ap.add_argument("--limit-mb", type=float, default=6.0, help="the 1x corpus reads this much of the train text")
    ap.add_argument("--out", help="write the JSON here too")
    args = ap.parse_args(argv)
    from albert_jax.configs.loader import load_config
    from albert_jax.tasks.pretraining.input import corpus_texts, corpus_tokenizer

    d = load_config("experiments/pretrain.py:scale=cpu").data
    text, model = corpus_texts(d)["train"], corpus_tokenizer(d).name
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for scale in (1, 4):
            corpus = Path(tmp) / f"x{scale}"
            corpus.mkdir()
            files = split_corpus(text, corpus, args.file_mb, args.base_copies * scale, args.limit_mb)
            for runner in ("local", "beam"):
                for workers in (1, 2):
                    out = Path(tmp) / f"out-{scale}-{runner}-{workers}"
                    p = subprocess.run([sys.executable, "-c", CHILD, runner, str(workers), str(out), model, *files],
                                       capture_output=True, text=True, env=dict(os.environ))
                    if p.returncode:
                        raise SystemExit(f"{runner} x{workers} failed:\n{p.stderr[-3000:]}")
                    r = json.loads(p.stdout.strip().splitlines()[-1])
                    rows.append({"corpus": f"{scale}x", "files": len(files), "runner": runner, "workers": workers,
                                 "instances": r["instances"], "seconds": round(r["seconds"], 1),
                                 "instances_per_s": round(r["instances"] / r["seconds"]),
                                 "per_worker_per_s": round(r["instances"] / r["seconds"] / workers),
                                 "peak_rss_mb": round(r["peak_rss_mb"])})
                    print(json.dumps(rows[-1]), flush=True)
    result = {"command": "python benchmarks/beam_instances_bench.py " + " ".join(argv or sys.argv[1:]),
              "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
              "python": platform.python_version(), "rows": rows}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
