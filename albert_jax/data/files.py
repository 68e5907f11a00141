"""Text inputs by local path or by URL (gs://, s3://, hdfs://, azfs://: any scheme Apache Beam has a filesystem for).

A Beam pipeline on a cluster runs its workers on machines that share no disk with the one that launched it, so their
inputs must come from a store every worker reaches, such as a bucket. Beam's own FileSystems registry already reads
each of those stores (apache-beam[gcp] brings gs://, [aws] s3://, [azure] azfs://, hdfs:// needs the hdfs package);
we route a URL through it rather than write a client of our own. A plain path stays a plain file and needs no Beam.
"""
from __future__ import annotations

import os

_EXTRAS = {"gs": "apache-beam[gcp]", "s3": "apache-beam[aws]", "azfs": "apache-beam[azure]", "hdfs": "the hdfs package"}


def is_url(path) -> bool:
    return "://" in str(path)


def _filesystems(url: str):
    """Beam's FileSystems, after checking that it has a filesystem for the URL's scheme."""
    scheme = str(url).split("://", 1)[0]
    need = _EXTRAS.get(scheme, "a Beam filesystem for that scheme")
    try:
        from apache_beam.io.filesystems import FileSystems  # noqa: PLC0415  optional: apache_beam
    except ImportError:
        raise ValueError(f"{url}: reading a {scheme}:// input needs Apache Beam (`make beam` builds .venv-beam; on a "
                         f"cluster install {need})") from None
    try:
        FileSystems.get_filesystem(str(url))
    except ValueError:
        raise ValueError(f"{url}: Beam has no filesystem for {scheme}:// in this environment; install {need}") from None
    return FileSystems


def open_binary(path):
    """The file for reading bytes (`readline(limit)` as a local file's): local, or through Beam's filesystem."""
    if not is_url(path):
        return open(path, "rb")
    from apache_beam.io.filesystem import CompressionTypes  # noqa: PLC0415  optional: apache_beam
    return _filesystems(path).open(str(path), compression_type=CompressionTypes.UNCOMPRESSED)


def absolute(path) -> str:
    """The path as every worker names it: a local path made absolute, a URL as it is."""
    return str(path) if is_url(path) else os.path.abspath(path)


def expand_inputs(inputs, what: str) -> list[str]:
    """The input files, in order: a local path must be a file (the shell has expanded its wildcards); a URL may be a
    pattern (gs://bucket/docs/*.txt), expanded by its filesystem in sorted order. A missing input, or a pattern
    that matches nothing, is one line naming it."""
    files: list[str] = []
    for item in (str(i) for i in inputs):
        if not is_url(item):
            if not os.path.isfile(item):
                raise FileNotFoundError(f"{what} input {item} does not exist")
            files.append(item)
            continue
        fs = _filesystems(item)
        try:
            matched = sorted(m.path for result in fs.match([item]) for m in result.metadata_list)
        except Exception as e:  # Beam's BeamIOError wraps the store's own error (no such bucket, no access)
            raise FileNotFoundError(f"{what} input {item}: {getattr(e, 'exception_details', None) or e}") from None
        if not matched:
            raise FileNotFoundError(f"{what} input {item} matches no file")
        files.extend(matched)
    return files
