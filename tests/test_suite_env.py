"""The suite's own process settings (tests/procs.py) reach the processes they are for."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy  # noqa: F401  (loads OpenBLAS into this process, as any test does)
import threadpoolctl

from procs import user_env


def _blas_threads(info: list[dict]) -> int:
    return max(p["num_threads"] for p in info if p["user_api"] == "blas")


def test_test_processes_and_their_children_run_blas_on_one_thread():
    # numpy loaded OpenBLAS after conftest.py set its thread count: a plugin importing numpy first would undo it
    assert _blas_threads(threadpoolctl.threadpool_info()) == 1
    child = subprocess.run([sys.executable, "-c", "import json, numpy, threadpoolctl; "
                            "print(json.dumps(threadpoolctl.threadpool_info()))"], env=user_env(),
                           capture_output=True, text=True, check=True)
    assert _blas_threads(json.loads(child.stdout)) == 1, child.stdout


def test_temporary_files_of_tests_and_their_children_go_under_pytests_base_directory(tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    assert Path(tempfile.mkdtemp()).is_relative_to(base)
    child = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.mkdtemp('tfds'))"],
                           env=user_env(), capture_output=True, text=True, check=True)
    assert Path(child.stdout.strip()).is_relative_to(base), child.stdout
