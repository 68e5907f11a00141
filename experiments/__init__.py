"""Experiments: executable config files. Each has `get_config(arg: str)`; see experiments/pretrain.py."""
