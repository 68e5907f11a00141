"""Smoke sweeps of the ALBERT-base ablations (Tables 3-5) and the claims built on their rows; tests/smoke_sweeps.py
says what each checks."""
from smoke_sweeps import ABLATIONS, sweep_tests

runs, test_the_experiment_runs_end_to_end_at_the_smoke_scale = sweep_tests(ABLATIONS)
