"""Smoke sweeps of the experiments that vary the model's size and grouping (Tables 1, 2, 11, 12, groups, claim (c));
tests/smoke_sweeps.py says what each checks."""
from smoke_sweeps import SIZES, sweep_tests

runs, test_the_experiment_runs_end_to_end_at_the_smoke_scale = sweep_tests(SIZES)
