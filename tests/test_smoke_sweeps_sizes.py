"""Smoke sweeps of the experiments that vary the model's size and grouping (Tables 1, 2, 11, 12, groups, claim (c));
tests/smoke_sweeps.py says what each checks."""
import pytest

from smoke_sweeps import SIZES, run_and_check


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tmp_path_factory.mktemp("runs")


@pytest.mark.parametrize("name", SIZES)
def test_the_experiment_runs_end_to_end_at_the_smoke_scale(name, runs):
    run_and_check(name, runs)
