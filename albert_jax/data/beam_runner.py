"""Apache Beam for our TFDS builders: import it, and pick the runner and its options from the user's flags.

Beam is optional (requirements-beam.txt, its own venv: `make beam`); without it `beam_module()` says how to get it.
Offline trap: Beam >= 2.68's DirectRunner first tries the Prism runner, which downloads a Go binary. Unless the user
names a runner, we run Beam's Python FnApiRunner in multi-processing mode, which downloads nothing. Used by both
Beam pipelines: the corpus builders (`data build --beam-options`, data/builders.py) and the pretraining instances
(`pretraining-data create --runner beam`, tasks/pretraining/beam.py).
"""
from __future__ import annotations

import os
import shlex

import tensorflow_datasets as tfds

BEAM_HELP = ("Apache Beam is not installed in this environment: `make beam` builds .venv-beam with it "
             "(requirements-beam.txt; it pins protobuf and pyarrow below our main lock, so it has a venv of its own)")


def beam_module():
    try:
        return tfds.core.lazy_imports.apache_beam
    except ImportError:
        raise ValueError(BEAM_HELP) from None


def runner_and_options(input_files, beam_options: str, workers: int):
    """(runner, PipelineOptions) for the user's Beam flags, after checking that Beam and the inputs exist: with
    no --runner among the flags, the Python FnApiRunner in multi-processing mode over `workers` processes (no
    Prism download); otherwise None, and Beam picks the runner the flags name."""
    beam_module()  # before any work: without Beam, say how to get it
    for f in input_files:
        if not os.path.isfile(f):
            raise FileNotFoundError(f"input {f} does not exist")
    from apache_beam.options.pipeline_options import PipelineOptions

    flags = shlex.split(beam_options)
    if any(f.startswith("--runner") for f in flags):
        return None, PipelineOptions(flags)
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    flags = ["--direct_running_mode=multi_processing", f"--direct_num_workers={workers}", *flags]
    return FnApiRunner(), PipelineOptions(flags)


def download_config(input_files, beam_options: str, workers: int) -> tfds.download.DownloadConfig:
    """TFDS's download config that runs a Beam builder on that runner."""
    runner, options = runner_and_options(input_files, beam_options, workers)
    return tfds.download.DownloadConfig(beam_runner=runner, beam_options=options)
