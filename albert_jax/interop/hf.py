"""Weight conversion between our Flax parameter tree and the HuggingFace PyTorch layouts (ALBERT and BERT).

One table (a "plan", interop/hf_plans.py) lists, for a given config and HF class, every HF tensor name, where it
lives in our tree (path and the index into the leading 'groups'/'layers'/'inner' axes) and whether it is a torch
Linear weight (stored [out, in], so it is transposed) or stored as is. Import and export both walk that table,
which keeps the two directions exact inverses and lets every error name the HF key involved.

Our tree's shapes come from the model itself (`jax.eval_shape` of its init), never from a second copy of the
architecture, so a drift between the model and this file shows up as a clear error instead of a silent misload.

HF layout facts relied on (transformers 4.57, `modeling_albert.py` / `modeling_bert.py`):
- ALBERT: `encoder.albert_layer_groups.{g}.albert_layers.{k}.*`; layer i runs group i*G//L. sharing='none' is
  written as one group per layer. The MLM decoder is tied to the word table (`predictions.decoder.weight`) and
  its bias is `predictions.bias` (`predictions.decoder.bias` is the same tensor).
- ALBERT always has `embedding_hidden_mapping_in`, even when E == H; a config without projection is exported
  with an identity mapping (exact in float32: x*1 plus zeros).
- BERT: `encoder.layer.{l}.attention.self.{query,key,value}`, `attention.output.{dense,LayerNorm}`,
  `intermediate.dense`, `output.{dense,LayerNorm}`, `pooler.dense`.
- Task heads (`HEAD_OF_MODEL`): `{albert,bert}.` + the body, then `classifier` (sequence, token, multiple choice)
  or `qa_outputs`; the token and QA models have no pooler (`add_pooling_layer=False`), as ours.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from albert_jax.config import AlbertConfig
# The plans (interop/hf_plans.py) are the one table of HF names; the public ones are re-exported here.
from albert_jax.interop.hf_plans import (_HEADS, _PROJ, FAMILIES, HEAD_OF_MODEL, ConversionError,  # noqa: F401
                                         _albert_plan, _bert_body, _bert_plan, _Entry, _plan, _target_shapes,
                                         hf_class, hf_groups)

log = logging.getLogger("albert_jax.interop")
# Non-persistent buffers that some (older) checkpoints still carry; they hold no learned values.
_BUFFER_SUFFIXES = ("embeddings.position_ids", "embeddings.token_type_ids")
_ALBERT_HEAD_PREFIXES = ("predictions.", "sop_classifier.")
# The task heads of HF's Albert*For* classes (sequence, token and multiple-choice classifiers; QA spans).
TASK_HEAD_PREFIXES = ("classifier.", "qa_outputs.")


# ---------------------------------------------------------------------------------------------- helpers
def _to_numpy(value) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch tensor; numpy has no bfloat16, so widen it first
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        return value.numpy()
    return np.asarray(value)


def _normalize(state_dict: dict) -> dict[str, np.ndarray]:
    """numpy values; buffers dropped; TF-era LayerNorm names (gamma/beta) renamed as HF's loader does."""
    out = {}
    for key, value in state_dict.items():
        if key.endswith(_BUFFER_SUFFIXES):
            continue
        if key.endswith(".gamma") and "LayerNorm" in key:
            key = key[: -len("gamma")] + "weight"
        elif key.endswith(".beta") and "LayerNorm" in key:
            key = key[: -len("beta")] + "bias"
        out[key] = _to_numpy(value)
    return out


def _listing(keys, limit: int = 12) -> str:
    keys = sorted(keys)
    more = f" ... and {len(keys) - limit} more" if len(keys) > limit else ""
    return ", ".join(keys[:limit]) + more


def _check_keys(sd: dict[str, np.ndarray], plan: list[_Entry], what: str) -> None:
    expected = {e.hf_key for e in plan}
    missing, unexpected = expected - set(sd), set(sd) - expected
    problems = []
    if missing:
        problems.append(f"missing {len(missing)} key(s): {_listing(missing)}")
    if unexpected:
        problems.append(f"unexpected {len(unexpected)} key(s): {_listing(unexpected)}")
    if problems:
        raise ConversionError(f"{what} does not match the config: " + "; ".join(problems))
    bad = [f"{e.hf_key}: checkpoint {tuple(sd[e.hf_key].shape)} vs config {e.hf_shape}"
           for e in plan if tuple(sd[e.hf_key].shape) != e.hf_shape]
    if bad:
        hint = ""
        if any("word_embeddings" in b for b in bad):
            hint = (" (the word table's rows are the vocabulary size: the tokenizer's vocabulary and the "
                    "checkpoint's must agree)")
        raise ConversionError(f"{what}: {len(bad)} shape mismatch(es): " + "; ".join(bad[:12]) + hint)


def _without_absent_pooler(sd: dict, plan: list[_Entry]) -> tuple[list[_Entry], bool]:
    """HF builds the body of a token-classification or QA model without a pooler (add_pooling_layer=False): when
    the checkpoint has none, the plan's pooler entries go and the tree comes back without one (fine-tuning then
    starts a fresh pooler and says so: runs/finetune._merge)."""
    pooler = [e for e in plan if "pooler" in e.path]
    if pooler and not any(e.hf_key in sd for e in pooler):
        return [e for e in plan if "pooler" not in e.path], True
    return plan, False


def _fill(sd: dict[str, np.ndarray], plan: list[_Entry], cfg: AlbertConfig, head: str,
          skip_pooler: bool = False) -> dict:
    """Scatter the checked HF tensors into freshly allocated arrays of the model's own shapes.

    Returns jax arrays (config.param_dtype), not numpy: the scanned encoder indexes the shared parameters with
    a traced group index (`encoder._take(shared, group)` when num_hidden_groups > 1), and a numpy array cannot
    be indexed by a tracer, so numpy leaves would make an unjitted `model.apply` fail. Scattering is done in
    numpy first (in-place slice writes), then each finished array is moved to jax once.
    """
    import jax.numpy as jnp  # noqa: PLC0415  heavy: jax
    from flax import traverse_util  # noqa: PLC0415  heavy: flax

    targets = {p: v for p, v in _target_shapes(cfg, head).items() if not (skip_pooler and "pooler" in p)}
    arrays = {path: np.zeros(shape, dtype) for path, (shape, dtype) in targets.items()}
    filled: dict[tuple, int] = {}
    stack_rank: dict[tuple, int] = {}
    for e in plan:
        if e.path not in arrays:
            raise ConversionError(f"internal: {e.hf_key} maps to {'/'.join(e.path)}, which the model does not have")
        t = sd[e.hf_key]
        arr = arrays[e.path]
        arr[e.index] = (t.T if e.transpose else t).reshape(arr.shape[len(e.index):])
        filled[e.path] = filled.get(e.path, 0) + 1
        stack_rank[e.path] = len(e.index)
    # Every slice of every (stacked) array must have been written exactly once.
    for path, (shape, _) in targets.items():
        slices = int(np.prod(shape[: stack_rank.get(path, 0)]))
        if filled.get(path, 0) != slices:
            raise ConversionError(f"internal: {'/'.join(path)} got {filled.get(path, 0)} of {slices} slices")
    # Pop as we go: each numpy copy can be freed as soon as its jax copy exists, not after the whole tree.
    return traverse_util.unflatten_dict({path: jnp.asarray(arrays.pop(path), dtype=targets[path][1])
                                         for path in list(arrays)})


# ---------------------------------------------------------------------------------------------- ALBERT
def _split_albert(sd: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(body keys without 'albert.', head keys). Accepts AlbertModel and AlbertForPreTraining layouts."""
    body, head = {}, {}
    for key, value in sd.items():
        if key.startswith(_ALBERT_HEAD_PREFIXES):
            head[key] = value
            continue
        short = key[len("albert."):] if key.startswith("albert.") else key
        if short in body:
            raise ConversionError(f"{short!r} appears both with and without the 'albert.' prefix")
        body[short] = value
    return body, head


def _untie(head: dict[str, np.ndarray], word_table: np.ndarray | None) -> None:
    """Drop the decoder tensors HF ties to others, after checking they really are the tied values."""
    weight = head.pop("predictions.decoder.weight", None)
    if weight is not None and word_table is not None and not np.array_equal(weight, word_table):
        raise ConversionError("predictions.decoder.weight differs from the word embeddings: an untied MLM "
                              "decoder cannot be represented (ours is tied to albert.embeddings.word_embeddings)")
    bias = head.pop("predictions.decoder.bias", None)
    if bias is not None:
        if "predictions.bias" not in head:
            head["predictions.bias"] = bias
        elif not np.array_equal(bias, head["predictions.bias"]):
            raise ConversionError("predictions.decoder.bias differs from predictions.bias; HF ties them")


def hf_to_params(state_dict: dict, config: AlbertConfig, heads: bool | None = None) -> dict:
    """HF AlbertModel / AlbertForPreTraining state dict -> our params (jax array leaves, config.param_dtype),
    ready for `model.apply({"params": params}, ...)` as returned.

    heads=None picks the tree from the checkpoint: AlbertForPreTraining's ({'albert', 'predictions',
    'seq_relationship'}) when it has MLM/SOP head keys, AlbertModel's otherwise. heads=False drops head keys
    (an encoder for fine-tuning); heads=True requires them. `config` may be sharing='all' (HF groups =
    num_hidden_groups) or sharing='none' (HF groups = num_hidden_layers).
    """
    hf_groups(config)  # refuses the sharing modes HF cannot hold, before anything else
    body, head = _split_albert(_normalize(state_dict))
    _untie(head, body.get("embeddings.word_embeddings.weight"))
    if heads is None:
        heads = bool(head)
    sd = {("albert." + k if heads else k): v for k, v in body.items()}
    if heads:
        sd.update(head)
    what = "HF ALBERT checkpoint"
    if not config.use_projection:
        # No projection in our model: accept only HF's mapping when it is the identity (as we export it).
        pre = "albert." if heads else ""
        w, b = sd.pop(f"{pre}{_PROJ}.weight", None), sd.pop(f"{pre}{_PROJ}.bias", None)
        identity = np.eye(config.hidden_size, dtype=np.float32)
        if w is not None and not (w.shape == identity.shape and np.array_equal(w, identity)
                                  and b is not None and not np.any(b)):
            raise ConversionError(f"{what}: the config has no embedding projection (embedding_projection=False) "
                                  f"but {pre}{_PROJ} is not an identity mapping; use embedding_projection=True")
    plan, no_pooler = _without_absent_pooler(sd, _albert_plan(config, heads))
    _check_keys(sd, plan, what)
    return _fill(sd, plan, config, "pretraining" if heads else "model", skip_pooler=no_pooler)


def _infer_head(params: dict) -> str:
    if "predictions" in params:
        return "pretraining"
    if "albert" in params:
        raise ConversionError(f"a task model's params (top level {sorted(params)}): say which HF head it is "
                              f"(head= one of {', '.join(h for h in _HEADS if h not in ('model', 'pretraining'))})")
    return "model"


def _num_labels(params: dict, head: str) -> int:
    module = _HEADS[head][1]
    return int(np.shape(params[module]["bias"])[0]) if module and module in params else 2


def params_to_hf(params: dict, config: AlbertConfig, include_tied: bool = True, *, head: str | None = None,
                 family: str = "albert") -> dict[str, np.ndarray]:
    """Our params -> the state dict of `hf_class(family, head)` (float32 numpy).

    head=None: AlbertForPreTraining keys when `params` has the pretraining heads, AlbertModel keys for a bare
    encoder; a task model's tree needs its head named ('sequence', 'token', 'qa', 'choice': HEAD_OF_MODEL).
    family='bert' writes Bert* keys (sharing='none', E == H, no projection). include_tied adds
    predictions.decoder.{weight,bias} so that `load_state_dict(strict=True)` accepts it; HF's own files omit them.
    """
    from flax import traverse_util  # noqa: PLC0415  heavy: flax

    head = head or _infer_head(params)
    num_labels = _num_labels(params, head)
    plan = _plan(config, family, head, num_labels)  # raises for what HF cannot hold
    flat = traverse_util.flatten_dict(dict(params))
    targets = _target_shapes(config, head, num_labels)
    missing, unexpected = set(targets) - set(flat), set(flat) - set(targets)
    if missing or unexpected:
        raise ConversionError("params do not match the config: " + "; ".join(
            f"{name} {len(s)} path(s): {_listing('/'.join(p) for p in s)}"
            for name, s in (("missing", missing), ("unexpected", unexpected)) if s))
    bad = [f"{'/'.join(p)}: params {tuple(np.shape(flat[p]))} vs config {targets[p][0]}"
           for p in targets if tuple(np.shape(flat[p])) != targets[p][0]]
    if bad:
        raise ConversionError(f"{len(bad)} shape mismatch(es) between params and config: " + "; ".join(bad[:12]))
    out = {}
    for e in plan:
        a = np.asarray(flat[e.path], dtype=np.float32)[e.index]
        out[e.hf_key] = np.ascontiguousarray(
            a.reshape(e.hf_shape[::-1]).T if e.transpose else a.reshape(e.hf_shape))
    pre = "" if head == "model" else "albert."
    if family == "albert" and not config.use_projection:
        # HF ALBERT always projects E -> H; the identity keeps the function unchanged.
        out[f"{pre}{_PROJ}.weight"] = np.eye(config.hidden_size, dtype=np.float32)
        out[f"{pre}{_PROJ}.bias"] = np.zeros(config.hidden_size, np.float32)
    if head == "pretraining" and include_tied:
        out["predictions.decoder.weight"] = out["albert.embeddings.word_embeddings.weight"]
        out["predictions.decoder.bias"] = out["predictions.bias"]
    return out


def bert_hf_json(cfg: AlbertConfig) -> dict[str, Any]:
    """A HuggingFace BertConfig dict for a BERT-shaped config (the inverse of `bert_config`)."""
    _bert_body(cfg, (), False)  # refuses configs BERT cannot hold
    keys = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
            "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
            "type_vocab_size", "initializer_range", "layer_norm_eps")
    # Our hidden_act names are HF's (both 'gelu' = exact erf, 'gelu_new' = tanh form).
    return {"architectures": ["BertModel"], "model_type": "bert", **{k: getattr(cfg, k) for k in keys},
            "classifier_dropout": cfg.classifier_dropout_prob, "position_embedding_type": "absolute",
            "pad_token_id": 0}


def hf_config_json(config: AlbertConfig, family: str = "albert", head: str = "pretraining",
                   labels: list[str] | None = None, problem_type: str | None = None) -> dict[str, Any]:
    """The config.json of `hf_class(family, head)`: labels set id2label/label2id (HF's num_labels)."""
    d = config.to_hf_json() if family == "albert" else bert_hf_json(config)  # raise for what HF cannot hold
    d["architectures"] = [hf_class(family, head)]
    if labels is not None:
        d["id2label"] = {str(i): str(name) for i, name in enumerate(labels)}
        d["label2id"] = {str(name): i for i, name in enumerate(labels)}
    if problem_type is not None:
        d["problem_type"] = problem_type
    return d


def check_hf(config: AlbertConfig, family: str = "albert", head: str = "pretraining") -> None:
    """Raise (ConfigError / ConversionError, naming why) if `hf_class(family, head)` cannot hold or run this
    config: before anything is written."""
    hf_config_json(config, family, head)
    _plan(config, family, head)


def save_hf_pretrained(params: dict, config: AlbertConfig, out_dir, *, head: str | None = None,
                       family: str = "albert", labels: list[str] | None = None,
                       problem_type: str | None = None) -> Path:
    """Write config.json + model.safetensors loadable by `transformers.<hf_class(family, head)>.from_pretrained`
    (head=None: AlbertForPreTraining, or AlbertModel when `params` has no heads; see `params_to_hf`)."""
    from safetensors.numpy import save_file  # noqa: PLC0415  heavy: safetensors

    out = Path(out_dir)
    head = head or _infer_head(params)
    # The weight plan first: what HF cannot lay out is refused as a ConversionError naming it, before any file.
    tensors = params_to_hf(params, config, include_tied=False, head=head, family=family)  # as HF writes them
    hf_config = hf_config_json(config, family, head, labels, problem_type)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(hf_config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    # transformers refuses safetensors files whose metadata lacks the framework tag.
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out


def _read_state_dict(directory: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file  # noqa: PLC0415  heavy: safetensors

    single, index = directory / "model.safetensors", directory / "model.safetensors.index.json"
    if single.is_file():
        return load_file(str(single))
    if index.is_file():  # sharded: the index maps each tensor to its shard
        shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        sd: dict[str, np.ndarray] = {}
        for shard in shards:
            sd.update(load_file(str(directory / shard)))
        return sd
    if (directory / "pytorch_model.bin").is_file():
        import torch  # noqa: PLC0415  heavy: torch

        return dict(torch.load(directory / "pytorch_model.bin", map_location="cpu", weights_only=True))
    raise FileNotFoundError(f"{directory}: no model.safetensors, model.safetensors.index.json or "
                            "pytorch_model.bin")


def _read_config_json(directory: Path) -> dict:
    path = directory / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found (a HuggingFace model directory has a config.json)")
    return json.loads(path.read_text(encoding="utf-8"))


def load_hf_pretrained(directory, *, drop_task_head: bool = False, **config_overrides) -> tuple[AlbertConfig, dict]:
    """A HuggingFace ALBERT directory (config.json + weights) -> (config with sharing='all', params).

    params are jax arrays in config.param_dtype (see `hf_to_params`), usable by `model.apply` as returned.

    hidden_act is kept as written, which reproduces HF's outputs. The Hub's original ALBERT configs say
    "gelu" (exact in HF) although the TF models were trained with the tanh form (transformers#2395); pass
    hidden_act='gelu_new' to get the original function instead.
    """
    directory = Path(directory)
    d = _read_config_json(directory)
    if d.get("position_embedding_type", "absolute") != "absolute":
        raise ConversionError(f"position_embedding_type={d['position_embedding_type']!r}: only absolute "
                              "position embeddings are implemented")
    config = AlbertConfig.from_hf_json(d, **config_overrides)
    sd = _read_state_dict(directory)
    if drop_task_head:  # an AlbertFor<Task> as an encoder to start from: its task head is not part of that
        head = sorted(k for k in sd if k.startswith(TASK_HEAD_PREFIXES))
        if head:
            log.info("%s: its task head (%s) is not part of the encoder (fine-tuning reuses it for a task with the "
                     "same labels: runs/finetune.adopt_hf_head)", directory, ", ".join(head))
        sd = {k: v for k, v in sd.items() if k not in head}
    return config, hf_to_params(sd, config)


def hf_task_head(directory) -> dict | None:
    """An HF {Albert,Bert}For{Sequence,Token}Classification directory's classifier: {architecture, weight [n, H], bias
    [n], labels (id2label's names in id order, None when they are HF's generic LABEL_<i>)}; None without one."""
    directory = Path(directory)
    d = _read_config_json(directory)
    sd = _read_state_dict(directory)
    if "classifier.weight" not in sd or "classifier.bias" not in sd:
        return None
    weight, bias = np.asarray(sd["classifier.weight"], np.float32), np.asarray(sd["classifier.bias"], np.float32)
    id2label = {int(k): str(v) for k, v in (d.get("id2label") or {}).items()}
    labels = [id2label.get(i, f"LABEL_{i}") for i in range(weight.shape[0])]
    generic = labels == [f"LABEL_{i}" for i in range(weight.shape[0])]
    return {"architecture": (d.get("architectures") or ["?"])[0], "weight": weight, "bias": bias,
            "labels": None if generic else labels}


# ---------------------------------------------------------------------------------------------- BERT
def bert_config(hf_config: dict) -> AlbertConfig:
    """A HuggingFace BertConfig dict -> our config: nothing shared, E == H, no projection."""
    if hf_config.get("model_type", "bert") != "bert":
        raise ConversionError(f"model_type={hf_config.get('model_type')!r}: expected a BERT config")
    if hf_config.get("position_embedding_type", "absolute") != "absolute":
        raise ConversionError(f"position_embedding_type={hf_config['position_embedding_type']!r}: only absolute "
                              "position embeddings are implemented")
    # HF BERT's "gelu" is the exact erf form, which is our 'gelu' (not the tanh 'gelu_new').
    H = hf_config["hidden_size"]
    keys = ("vocab_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act",
            "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
            "initializer_range", "layer_norm_eps")
    fields = {k: hf_config[k] for k in keys if k in hf_config}
    return AlbertConfig(embedding_size=H, hidden_size=H, sharing="none", num_hidden_groups=1,
                        embedding_projection=False, **fields)


def bert_to_params(state_dict: dict, config: AlbertConfig) -> dict:
    """HF BertModel (or BertForPreTraining, whose `cls.*` heads are dropped, or BertFor{Sequence,Token}
    Classification, whose `classifier.*` is read by hf_task_head instead) state dict -> AlbertModel params (jax
    array leaves, config.param_dtype)."""
    plan = _bert_plan(config)  # refuses configs BERT cannot hold
    sd = {}
    for key, value in _normalize(state_dict).items():
        if key.startswith(("cls.", "classifier.")):  # heads: BERT-shaped MLM/NSP, or a task's (hf_task_head)
            continue
        sd[key[len("bert."):] if key.startswith("bert.") else key] = value
    plan, no_pooler = _without_absent_pooler(sd, plan)
    _check_keys(sd, plan, "BERT checkpoint")
    return _fill(sd, plan, config, "model", skip_pooler=no_pooler)


def load_bert_safetensors(path_or_dir, *, config: AlbertConfig | None = None,
                          vocab_size: int | None = None) -> tuple[AlbertConfig, dict]:
    """A BertModel safetensors file (or its directory, with config.json) -> (config, AlbertModel params).

    `config` replaces the one read from config.json (the checkpoint is then checked against it); `vocab_size`
    is the tokenizer's vocabulary size, checked against the checkpoint's word table.
    """
    from safetensors.numpy import load_file  # noqa: PLC0415  heavy: safetensors

    path = Path(path_or_dir)
    weights = path / "model.safetensors" if path.is_dir() else path
    if not weights.is_file():
        raise FileNotFoundError(f"{weights}: no such safetensors file")
    if config is None:
        config = bert_config(_read_config_json(weights.parent))
    if vocab_size is not None and vocab_size != config.vocab_size:
        config = config.replace(vocab_size=vocab_size)
    return config, bert_to_params(load_file(str(weights)), config)

