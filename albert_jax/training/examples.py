"""Per-example evaluation results on disk: the one owner of their file names and format.

The final evaluation of a run keeps each eval set's per-example predictions (`EXAMPLES_FILE` in the workdir);
each fine-tuning seed keeps its best dev checkpoint's (`BEST_EXAMPLES_FILE` in seed-<s>/). The tables bootstrap
their intervals over them (ablations/evidence.py). numpy only: reading a table imports no JAX.
"""
from __future__ import annotations

import os
import zipfile

import numpy as np

EXAMPLES_FILE = "eval_examples.npz"
BEST_EXAMPLES_FILE = "best_dev_examples.npz"


def save_examples(path: str, kept: dict[str, dict]) -> None:
    """{set: {field: per-example array}} as one .npz (`<set>/<field>` keys), written atomically."""
    arrays = {f"{name}/{k}": np.asarray(v) for name, fields in kept.items() for k, v in fields.items()}
    if not arrays:
        return
    tmp = path + ".tmp.npz"
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, path)


def load_examples(path: str | os.PathLike) -> dict[str, dict[str, np.ndarray]] | None:
    """What save_examples wrote, or None when there is no such file; an unreadable one raises ValueError naming
    it (a table must not quietly fall back to seeds alone because a file was damaged)."""
    if not os.path.isfile(path):
        return None
    out: dict[str, dict[str, np.ndarray]] = {}
    try:
        with np.load(path) as z:
            for key in z.files:
                name, _, field = key.partition("/")
                out.setdefault(name, {})[field] = z[key]
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path}: not a readable per-example file ({type(e).__name__}: {e})") from None
    return out
