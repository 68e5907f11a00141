"""Experiments: executable config files. Each has `get_config(arg: str)` and declares its arguments (`ARGS`); see
experiments/pretrain.py."""
