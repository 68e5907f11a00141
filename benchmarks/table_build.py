"""How long a committed table takes to rebuild from its evidence, with one BLAS thread (the default,
ablations/table.BLAS_THREADS) against OpenBLAS's own count, taking turns, on an idle or a busy machine.

  python benchmarks/table_build.py                                   # every committed table with evidence
  python benchmarks/table_build.py --tables table4-3000 --busy 2 --rounds 3

--busy N starts N processes that keep a core each busy (numpy's own matrix products, as a training run or another
test worker would) for the length of the run: the thread count matters on a busy machine, where OpenBLAS's
threads wait on each other. The rebuilt table is compared with the committed one each time.
"""
from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _spin(stop) -> None:
    import numpy as np

    a = np.random.default_rng(0).random((256, 256))
    while not stop.is_set():
        a = np.tanh(a @ a)


def _rebuild(directory: Path, threads: int | None) -> float:
    from albert_jax.ablations import evidence_dir, registry, table

    root = directory / evidence_dir.EVIDENCE
    name, scale = evidence_dir.experiment_of(root)
    table.BLAS_THREADS = threads
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        table.build(registry.get(name), scale, root, Path(out), plots=False)
        seconds = time.perf_counter() - t0
        if (Path(out) / "table.md").read_bytes() != (directory / "table.md").read_bytes():
            raise SystemExit(f"{directory}: the rebuild differs from the committed table.md")
    return seconds


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tables", help="comma list of directory names under docs/reproduction/cpu (default: all with "
                   "evidence)")
    p.add_argument("--busy", type=int, default=0, help="processes keeping a core busy meanwhile")
    p.add_argument("--rounds", type=int, default=1)
    args = p.parse_args(argv)
    found = sorted(d.parent for d in DOCS.glob("reproduction/cpu/*/evidence") if (d.parent / "table.md").is_file())
    wanted = args.tables.split(",") if args.tables else [d.name for d in found]
    dirs = [d for d in found if d.name in wanted]
    stop = multiprocessing.Event()
    busy = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.busy)]
    for b in busy:
        b.start()
    try:
        print(f"| table | 1 BLAS thread (s) | OpenBLAS's own (s) | own / 1 |  (busy processes: {args.busy}, "
              f"rounds: {args.rounds})\n|---|---|---|---|")
        for d in dirs:
            times = {1: [], None: []}
            for _ in range(args.rounds):
                for threads in (1, None):
                    times[threads].append(_rebuild(d, threads))
            one, own = statistics.median(times[1]), statistics.median(times[None])
            print(f"| {d.name} | {one:.1f} | {own:.1f} | {own / one:.2f} |", flush=True)
    finally:
        stop.set()
        for b in busy:
            b.join()


if __name__ == "__main__":
    main()
