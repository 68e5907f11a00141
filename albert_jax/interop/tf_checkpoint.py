"""The official ALBERT TF1 checkpoints (google-research/albert, TF-Hub modules) to and from our parameter tree.

The TF names are one table, `_MODULES` and `_BLOCK` below: each HF module of the ALBERT plan (interop/hf_plans.py,
the one owner of where a tensor lives in our tree and of its index into the 'groups'/'inner' axes) paired with the
TF variable scope the official `modeling.py` gives it. The TF plan is the HF plan with its names rewritten through
that table, so the two converters cannot disagree about our tree. Facts relied on (reference/albert.md §2.8):

- dense kernels are stored [in, out] (ours too: no transpose; HF's torch weights are [out, in]); the q/k/v kernels
  are [H, H], not split by heads, and the attention output kernel [H, H]: a reshape gives our [H, heads, head_dim]
  and [heads, head_dim, H] (the official code reshapes the same way).
- `cls/seq_relationship/output_weights` is stored [out, in] (a raw variable, not a dense layer).
- layer i runs `group_{i*G//L}`; each group holds `inner_group_{k}`, k < inner_group_num.
- TF-Hub modules prefix every variable with `module/`; optimizer slots (`<var>/adam_m`, `<var>/adam_v`) and
  `global_step` are training state and are skipped. Every other variable must be in the table: a fine-tuned head
  (`output_weights`, `cls/squad/...`) is refused by name rather than dropped silently.

Reading the checkpoint files is TensorFlow's own `tf.train.load_checkpoint` (TensorFlow is an optional dependency:
requirements-tf.txt); only the variables the table names are read, so the optimizer slots cost no memory.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np

from albert_jax.config import AlbertConfig
from albert_jax.data.wordpiece import WordPieceTokenizer
from albert_jax.interop.hf import _check_keys, _fill
from albert_jax.interop.hf_plans import ConversionError, _albert_plan, _Entry

# TF module kinds -> (the TF leaf for HF's 'weight', for HF's 'bias'); '' means the scope is the variable itself.
_LEAVES = {"dense": ("kernel", "bias"), "norm": ("gamma", "beta"), "embedding": ("", None),
           "raw": ("output_weights", "output_bias")}
# HF module (after the 'albert.' prefix) -> (TF scope, kind).
_MODULES = {
    "embeddings.word_embeddings": ("bert/embeddings/word_embeddings", "embedding"),
    "embeddings.position_embeddings": ("bert/embeddings/position_embeddings", "embedding"),
    "embeddings.token_type_embeddings": ("bert/embeddings/token_type_embeddings", "embedding"),
    "embeddings.LayerNorm": ("bert/embeddings/LayerNorm", "norm"),
    "encoder.embedding_hidden_mapping_in": ("bert/encoder/embedding_hidden_mapping_in", "dense"),
    "pooler": ("bert/pooler/dense", "dense"),
    "predictions.dense": ("cls/predictions/transform/dense", "dense"),
    "predictions.LayerNorm": ("cls/predictions/transform/LayerNorm", "norm"),
    "sop_classifier.classifier": ("cls/seq_relationship", "raw"),
}
_TENSORS = {"predictions.bias": "cls/predictions/output_bias"}  # HF tensors that are not a module's weight/bias
# Inside encoder.albert_layer_groups.{g}.albert_layers.{k}. -> inside bert/encoder/transformer/group_g/inner_group_k/
_BLOCK = {
    "attention.query": ("attention_1/self/query", "dense"),
    "attention.key": ("attention_1/self/key", "dense"),
    "attention.value": ("attention_1/self/value", "dense"),
    "attention.dense": ("attention_1/output/dense", "dense"),
    "attention.LayerNorm": ("LayerNorm", "norm"),  # post-attention LayerNorm
    "ffn": ("ffn_1/intermediate/dense", "dense"),
    "ffn_output": ("ffn_1/intermediate/output/dense", "dense"),
    "full_layer_layer_norm": ("LayerNorm_1", "norm"),  # post-FFN LayerNorm
}
_HF_BLOCK = re.compile(r"encoder\.albert_layer_groups\.(\d+)\.albert_layers\.(\d+)\.(.+)")
_TF_BLOCK = re.compile(r"bert/encoder/transformer/group_(\d+)/inner_group_(\d+)/")
HUB_PREFIX = "module/"
_SLOTS = ("/adam_m", "/adam_v")
_TRAINING_STATE = ("global_step",)


def _tf_entry(e: _Entry) -> _Entry:
    """One HF plan entry renamed to its TF variable, with TF's storage order."""
    key = e.hf_key[len("albert."):] if e.hf_key.startswith("albert.") else e.hf_key
    if key in _TENSORS:
        return dataclasses.replace(e, hf_key=_TENSORS[key])
    module, leaf = key.rsplit(".", 1)
    m = _HF_BLOCK.fullmatch(module)
    if m:
        scope, kind = _BLOCK[m.group(3)]
        scope = f"bert/encoder/transformer/group_{m.group(1)}/inner_group_{m.group(2)}/{scope}"
    else:
        scope, kind = _MODULES[module]
    name = _LEAVES[kind][0 if leaf == "weight" else 1]
    tf_key = f"{scope}/{name}" if name else scope
    if kind == "dense" and leaf == "weight":  # torch [out, in] -> TF [in, out], as ours: no transpose
        return dataclasses.replace(e, hf_key=tf_key, transpose=False, hf_shape=e.hf_shape[::-1])
    return dataclasses.replace(e, hf_key=tf_key)  # 'raw' output_weights are [out, in] as in torch


def tf_plan(config: AlbertConfig, heads: bool) -> list[_Entry]:
    """Every TF variable of the official model (heads: the MLM and SOP heads under cls/) for this config.

    The entries are hf_plans' `_Entry`s with `hf_key` holding the TF name, so that interop/hf.py's key check and
    scatter (`_check_keys`, `_fill`) serve this layout unchanged and name TF variables in their errors.
    """
    if config.sharing != "all" or not config.use_projection:
        raise ConversionError(f"the official TF layout has sharing='all' with the E->H projection (got sharing="
                              f"{config.sharing!r}, projection={config.use_projection})")
    return [_tf_entry(e) for e in _albert_plan(config, heads)]


# ---------------------------------------------------------------------------------------------- reading
def checkpoint_prefix(path) -> str:
    """The checkpoint prefix for `path`: the prefix itself, one of its files (.index, .data-*, .meta) or a
    directory whose `checkpoint` file names one."""
    p = Path(path)
    if p.is_dir():
        latest = _tensorflow().train.latest_checkpoint(str(p))
        if latest is None:
            raise FileNotFoundError(f"--checkpoint {p}: a directory without a `checkpoint` file; pass the "
                                    f"checkpoint prefix, e.g. {p}/model.ckpt-best")
        return latest
    s = re.sub(r"\.(index|meta|data-\d+-of-\d+)$", "", str(p))
    if not Path(s + ".index").is_file():
        raise FileNotFoundError(f"--checkpoint {path}: no TF checkpoint there ({s}.index not found); pass the "
                                "prefix of the .index/.data-* files, e.g. albert_base/model.ckpt-best")
    return s


def _tensorflow():
    try:
        import tensorflow as tf  # noqa: PLC0415  heavy: tensorflow
    except ImportError:
        raise ConversionError("reading a TF checkpoint needs TensorFlow, an optional dependency: "
                              "pip install -r requirements-tf.txt -c requirements.lock") from None
    return tf


def read_variables(path) -> tuple[str, dict[str, tuple[int, ...]], list[str], object]:
    """(prefix, {model variable name without module/: shape}, skipped names, (TF reader, {name: stored name}))."""
    tf = _tensorflow()
    prefix = checkpoint_prefix(path)
    reader = tf.train.load_checkpoint(prefix)
    shapes, skipped, source = {}, [], {}
    for name, shape in sorted(reader.get_variable_to_shape_map().items()):
        if name.endswith(_SLOTS) or name.split("/")[-1] in _TRAINING_STATE:
            skipped.append(name)
            continue
        short = name[len(HUB_PREFIX):] if name.startswith(HUB_PREFIX) else name
        if short in source:
            raise ConversionError(f"{prefix}: {short} appears both as {source[short]} and as {name}")
        source[short] = name
        shapes[short] = tuple(shape)
    return prefix, shapes, skipped, (reader, source)


def _check_layout(shapes: dict, config: AlbertConfig, where: str) -> None:
    """Groups and inner groups counted from the names, against the config, before any name-by-name check: a
    config that is not the checkpoint's gets one line saying which fields differ."""
    found = {(int(g), int(k)) for g, k in (m.groups() for m in map(_TF_BLOCK.match, shapes) if m)}
    if not found:
        raise ConversionError(f"{where}: no variable under bert/encoder/transformer/group_<g>/inner_group_<k>/: "
                              "not an official ALBERT checkpoint (brightmart's albert_zh and TF2 Model Garden "
                              "checkpoints use other names)")
    groups, inner = 1 + max(g for g, _ in found), 1 + max(k for _, k in found)
    if (groups, inner) != (config.num_hidden_groups, config.inner_group_num):
        raise ConversionError(f"{where} holds {groups} group(s) x {inner} inner group(s) (group_<g>/inner_group_"
                              f"<k>) but the config says num_hidden_groups={config.num_hidden_groups}, "
                              f"inner_group_num={config.inner_group_num}: use this checkpoint's albert_config.json")


def load_tf_checkpoint(path, config: AlbertConfig, heads: bool | None = None) -> tuple[dict, dict]:
    """An official TF checkpoint -> (our params, jax arrays in config.param_dtype; a report of what was read).

    heads=None: AlbertForPreTraining's tree when the checkpoint has the cls/ heads, AlbertModel's otherwise.
    """
    prefix, shapes, skipped, (reader, source) = read_variables(path)
    where = f"TF checkpoint {prefix}"
    _check_layout(shapes, config, where)
    if heads is None:
        heads = any(k.startswith("cls/") for k in shapes)
    plan = tf_plan(config, heads)
    # Names every missing or unexpected variable and every shape mismatch, before a tensor is read.
    _check_keys({k: _Shape(s) for k, s in shapes.items()}, plan, where)
    tensors = {e.hf_key: np.asarray(reader.get_tensor(source[e.hf_key])) for e in plan}
    params = _fill(tensors, plan, config, "pretraining" if heads else "model")
    report = {"checkpoint": prefix, "variables": len(plan), "heads": heads,
              "hub_prefix": any(v.startswith(HUB_PREFIX) for v in source.values()), "skipped": len(skipped)}
    return params, report


@dataclasses.dataclass(frozen=True)
class _Shape:
    """A variable known by its shape only (what `_check_keys` looks at), before any tensor is read."""
    shape: tuple[int, ...]


def params_to_tf(params: dict, config: AlbertConfig) -> dict[str, np.ndarray]:
    """Our params -> {official TF variable name: float32 array in TF's layout} (the inverse of the import)."""
    from flax import traverse_util  # noqa: PLC0415  heavy: flax

    heads = "predictions" in params
    flat = traverse_util.flatten_dict(dict(params))
    out = {}
    for e in tf_plan(config, heads):
        a = np.asarray(flat[e.path], dtype=np.float32)[e.index]
        out[e.hf_key] = np.ascontiguousarray(a.reshape(e.hf_shape[::-1]).T if e.transpose else a.reshape(e.hf_shape))
    return out


# ---------------------------------------------------------------------------------------------- import


def find_vocab(prefix: str):
    """The tokenizer of a release: a SentencePiece `*.model` (30k-clean.model) or, for the Chinese models, a
    WordPiece `vocab*.txt`, beside the checkpoint (tarballs) or in ../assets/ (a TF-Hub module, whose checkpoint
    is variables/variables); None when there is neither, or several of one kind."""
    here = Path(prefix).parent
    for where in (here, here.parent / "assets"):
        for pattern in ("*.model", "vocab*.txt"):
            found = sorted(where.glob(pattern))
            if len(found) == 1:
                return found[0]
    return None


def load_vocab(path):
    """Our tokenizer for an official vocabulary: SentencePiece with ALBERT's preprocessing (lowercased, accents
    stripped, as every released English model), or BERT's WordPiece (vocab.txt: the Chinese models)."""
    from albert_jax.data.tokenization import Tokenizer  # noqa: PLC0415  heavy: sentencepiece

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"--vocab {path}: no such file (a SentencePiece .model or a WordPiece vocab.txt)")
    if path.suffix == ".vocab":
        raise ValueError(f"--vocab {path}: SentencePiece's list of pieces and scores, not a tokenizer; pass the "
                         f"model beside it ({path.with_suffix('.model').name})")
    return WordPieceTokenizer(path) if path.suffix == ".txt" else Tokenizer.load(path)
