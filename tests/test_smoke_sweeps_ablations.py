"""Smoke sweeps of the ALBERT-base ablations (Tables 3-5) and the claims built on their rows; tests/smoke_sweeps.py
says what each checks."""
import pytest

from smoke_sweeps import ABLATIONS, run_and_check


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tmp_path_factory.mktemp("runs")


@pytest.mark.parametrize("name", ABLATIONS)
def test_the_experiment_runs_end_to_end_at_the_smoke_scale(name, runs):
    run_and_check(name, runs)
