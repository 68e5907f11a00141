"""`albert-jax convert from-hf|to-hf|from-bert`: weights between HuggingFace and our params (interop/hf.py)."""
from __future__ import annotations

import json
from pathlib import Path

from albert_jax.config import AlbertConfig


def _cmd_from_hf(args) -> int:
    from flax import serialization

    from albert_jax.interop.hf import load_hf_pretrained

    config, params = load_hf_pretrained(args.hf_dir)
    _write_params(args, config, params, serialization)
    return 0


def _cmd_from_bert(args) -> int:
    from flax import serialization

    from albert_jax.interop.hf import load_bert_safetensors

    config, params = load_bert_safetensors(args.path)
    _write_params(args, config, params, serialization)
    return 0


def _write_params(args, config: AlbertConfig, params: dict, serialization) -> None:
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(serialization.msgpack_serialize(params))
    config_out = Path(args.config_out) if args.config_out else out.with_suffix(".config.json")
    config_out.write_text(json.dumps(config.to_dict(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out} and {config_out}")


def _cmd_to_hf(args) -> int:
    from flax import serialization

    from albert_jax.config import load_json
    from albert_jax.interop.hf import save_hf_pretrained

    config = load_json(args.config)
    params = serialization.msgpack_restore(Path(args.params).read_bytes())
    print(f"wrote {save_hf_pretrained(params, config, args.out)}")
    return 0


def add_cli(subparsers) -> None:
    parser = subparsers.add_parser("convert", help="convert weights between HuggingFace and our params")
    sub = parser.add_subparsers(dest="convert_command", required=True)
    p = sub.add_parser("from-hf", help="HF ALBERT directory -> params.msgpack (+ our config json)")
    p.add_argument("--hf-dir", required=True, help="directory with config.json and model.safetensors")
    p.add_argument("--out", required=True, help="params file to write (flax msgpack)")
    p.add_argument("--config-out", help="our config json (default: OUT with suffix .config.json)")
    p.set_defaults(func=_cmd_from_hf)
    p = sub.add_parser("from-bert", help="HF BertModel safetensors (file or dir) -> params.msgpack")
    p.add_argument("--path", required=True, help="model.safetensors or its directory (with config.json)")
    p.add_argument("--out", required=True, help="params file to write (flax msgpack)")
    p.add_argument("--config-out", help="our config json (default: OUT with suffix .config.json)")
    p.set_defaults(func=_cmd_from_bert)
    p = sub.add_parser("to-hf", help="params.msgpack + config -> HF ALBERT directory")
    p.add_argument("--params", required=True, help="flax msgpack params (AlbertForPreTraining or AlbertModel)")
    p.add_argument("--config", required=True, help="our config.json, an official or a HF ALBERT config")
    p.add_argument("--out", required=True, help="output directory (config.json + model.safetensors)")
    p.set_defaults(func=_cmd_to_hf)
