"""`albert-jax convert from-hf|from-bert|from-params|from-tf|to-hf`: weights between HuggingFace, a params export,
the official TF checkpoints and our params (interop/hf.py, interop/params_export.py, interop/tf_checkpoint.py).
`to-hf --workdir` is `albert-jax export --to hf` (cli/export.py)."""
from __future__ import annotations

import json
from pathlib import Path

from albert_jax.cli.export import run_export
from albert_jax.config import AlbertConfig, load_json
from albert_jax.runs.export import TARGETS, import_official


def _cmd_from_hf(args) -> int:
    from flax import serialization  # noqa: PLC0415  CLI start

    from albert_jax.interop.hf import load_hf_pretrained  # noqa: PLC0415  CLI start

    config, params = load_hf_pretrained(args.hf_dir)
    _write_params(args, config, params, serialization)
    return 0


def _cmd_from_bert(args) -> int:
    from flax import serialization  # noqa: PLC0415  CLI start

    from albert_jax.interop.hf import load_bert_safetensors  # noqa: PLC0415  CLI start

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


def _cmd_from_params(args) -> int:
    from flax import serialization  # noqa: PLC0415  CLI start

    from albert_jax.interop.params_export import load_params_export  # noqa: PLC0415  CLI start

    config, params = load_params_export(args.dir)
    _write_params(args, config, params, serialization)
    return 0


def _cmd_from_tf(args) -> int:
    r = import_official(args.checkpoint, args.config, args.out, vocab=args.vocab, to=args.to)
    tok = f", tokenizer {r['vocab']}" if r["vocab"] else " (no tokenizer found: pass --vocab)"
    print(f"wrote {args.out}: {r['variables']} variables of {r['checkpoint']} as {r['model_class']} "
          f"({'HuggingFace directory' if r['to'] == 'hf' else 'params export'}){tok}; skipped {r['skipped']} "
          "optimizer/step variables")
    return 0


def _cmd_to_hf(args) -> int:
    if args.workdir:
        return run_export(args.workdir, "hf", args.out, args.step, args.seed)
    if not (args.params and args.config):
        raise ValueError("convert to-hf needs --workdir (a run), or --params with --config (a msgpack file written "
                         "by convert from-hf/from-bert/from-params)")
    from flax import serialization  # noqa: PLC0415  CLI start

    from albert_jax.interop.hf import save_hf_pretrained  # noqa: PLC0415  CLI start

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
    p = sub.add_parser("from-params", help="a params export (albert-jax export --to params) -> params.msgpack, "
                       "in our scanned layout")
    p.add_argument("--dir", required=True, help="the export directory (layout.json + params/)")
    p.add_argument("--out", required=True, help="params file to write (flax msgpack)")
    p.add_argument("--config-out", help="our config json (default: OUT with suffix .config.json)")
    p.set_defaults(func=_cmd_from_params)
    p = sub.add_parser("from-tf", help="an official ALBERT TF1 checkpoint (release tarball or TF-Hub module) -> "
                       "HF directory (default; finetune init= reads it) or params export")
    p.add_argument("--checkpoint", required=True, help="checkpoint prefix, e.g. albert_base/model.ckpt-best (or "
                   "one of its files, or a directory with a `checkpoint` file)")
    p.add_argument("--config", required=True, help="the release's albert_config.json")
    p.add_argument("--vocab", help="30k-clean.model (SentencePiece) or vocab.txt (WordPiece, the Chinese models); "
                   "default: the one *.model or vocab*.txt beside the checkpoint")
    p.add_argument("--to", default="hf", choices=TARGETS, help="hf: config.json + model.safetensors + "
                   "tokenizer (transformers and `finetune init=` load it); params: our per-layer orbax export")
    p.add_argument("--out", required=True, help="output directory (new or empty)")
    p.set_defaults(func=_cmd_from_tf)
    p = sub.add_parser("to-hf", help="a run (--workdir: as `albert-jax export --to hf`), or a params.msgpack + "
                       "config, -> HF directory")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--workdir", help="a pretraining or fine-tuning workdir (see `albert-jax export --help`)")
    src.add_argument("--params", help="flax msgpack params from convert from-* (AlbertForPreTraining or AlbertModel)")
    p.add_argument("--config", help="with --params: our config.json, an official or a HF ALBERT config")
    p.add_argument("--step", type=int, help="with --workdir: checkpoint step (default: best/ or the latest)")
    p.add_argument("--seed", type=int, help="with --workdir: the seed of a fine-tuning workdir (default: best)")
    p.add_argument("--out", required=True, help="output directory (config.json + model.safetensors [+ tokenizer])")
    p.set_defaults(func=_cmd_to_hf)
