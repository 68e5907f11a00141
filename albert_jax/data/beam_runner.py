"""Apache Beam for our TFDS builders: import it, and pick the runner and its options from the user's flags.

Beam is optional (requirements-beam.txt, its own venv: `make beam`); without it `beam_module()` says how to get it.
Offline trap: Beam >= 2.68's DirectRunner first tries the Prism runner, which downloads a Go binary. Unless the user
names a runner, we run Beam's Python FnApiRunner in multi-processing mode, which downloads nothing. Used by both
Beam pipelines: the corpus builders (`data build --beam-options`, data/builders.py) and the pretraining instances
(`pretraining-data create --runner beam`, tasks/pretraining/beam.py).
"""
from __future__ import annotations

import shlex

import tensorflow_datasets as tfds

BEAM_HELP = ("Apache Beam is not installed in this environment: `make beam` builds .venv-beam with it "
             "(requirements-beam.txt; it pins protobuf and pyarrow below our main lock, so it has a venv of its own)")


def beam_module():
    try:
        return tfds.core.lazy_imports.apache_beam
    except ImportError:
        raise ValueError(BEAM_HELP) from None


def runner_and_options(beam_options: str, workers: int):
    """(runner, PipelineOptions) for the user's Beam flags, after checking that Beam is there: with no --runner
    among the flags, the Python FnApiRunner in multi-processing mode over `workers` processes (no Prism download);
    otherwise None, and Beam picks the runner the flags name. (The inputs are data/files.expand_inputs' to check.)"""
    beam_module()  # before any work: without Beam, say how to get it
    from apache_beam.io.filesystems import FileSystems  # noqa: PLC0415  optional: apache_beam
    from apache_beam.options.pipeline_options import PipelineOptions  # noqa: PLC0415  optional: apache_beam

    flags = shlex.split(beam_options)
    named = any(f.startswith("--runner") for f in flags)
    if not named:
        flags = ["--direct_running_mode=multi_processing", f"--direct_num_workers={workers}", *flags]
    options = PipelineOptions(flags)
    # The launching process lists and checks URL inputs (data/files.py) before the pipeline exists: give its
    # filesystems the user's flags now (an S3 endpoint and keys, a GCP project), as the pipeline would.
    FileSystems.set_options(options)
    if named:
        return None, options
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner  # noqa: PLC0415  optional: apache_beam
    return FnApiRunner(), options


def download_config(beam_options: str, workers: int) -> tfds.download.DownloadConfig:
    """TFDS's download config that runs a Beam builder on that runner."""
    runner, options = runner_and_options(beam_options, workers)
    return tfds.download.DownloadConfig(beam_runner=runner, beam_options=options)
