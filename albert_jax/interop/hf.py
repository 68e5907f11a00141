"""Weight conversion between our Flax parameter tree and the HuggingFace PyTorch layouts (ALBERT and BERT).

One table (a "plan") lists, for a given config, every HF tensor name, where it lives in our tree (path and the
index into the leading 'groups'/'layers'/'inner' axes) and whether it is a torch Linear weight (stored
[out, in], so it is transposed) or stored as is. Import and export both walk that table, which keeps the two
directions exact inverses and lets every error name the HF key involved.

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

import dataclasses
import functools
import json
from pathlib import Path
from typing import Any

import numpy as np

from albert_jax.config import AlbertConfig

# Non-persistent buffers that some (older) checkpoints still carry; they hold no learned values.
_BUFFER_SUFFIXES = ("embeddings.position_ids", "embeddings.token_type_ids")
_ALBERT_HEAD_PREFIXES = ("predictions.", "sop_classifier.")
_PROJ = "encoder.embedding_hidden_mapping_in"


class ConversionError(ValueError):
    """A checkpoint does not fit the config (or the reverse); the message names the keys and shapes."""


@dataclasses.dataclass(frozen=True)
class _Entry:
    hf_key: str
    path: tuple[str, ...]  # our path, e.g. ('albert', 'encoder', 'shared', 'attention', 'query', 'kernel')
    index: tuple[int, ...]  # into our array's leading stack axes; () when unstacked
    transpose: bool  # torch Linear weights are [out, in]; our kernels are [in, ...out]
    hf_shape: tuple[int, ...]


# ---------------------------------------------------------------------------------------------- plans
def _linear(hf: str, ours: tuple, index: tuple, w_shape: tuple, b_shape: tuple) -> list[_Entry]:
    return [_Entry(f"{hf}.weight", ours + ("kernel",), index, True, w_shape),
            _Entry(f"{hf}.bias", ours + ("bias",), index, False, b_shape)]


def _norm(hf: str, ours: tuple, index: tuple, width: int) -> list[_Entry]:
    return [_Entry(f"{hf}.weight", ours + ("scale",), index, False, (width,)),
            _Entry(f"{hf}.bias", ours + ("bias",), index, False, (width,))]


def _embeddings(cfg: AlbertConfig, body: tuple) -> list[_Entry]:
    E, emb = cfg.embedding_size, body + ("embeddings",)
    rows = (("word_embeddings", cfg.vocab_size), ("position_embeddings", cfg.max_position_embeddings),
            ("token_type_embeddings", cfg.type_vocab_size))
    out = [_Entry(f"embeddings.{name}.weight", emb + (name, "embedding"), (), False, (n, E)) for name, n in rows]
    return out + _norm("embeddings.LayerNorm", emb + ("LayerNorm",), (), E)


def _block(cfg: AlbertConfig, hf: dict[str, str], att: tuple, ffn: tuple, index: tuple) -> list[_Entry]:
    """One transformer block. `hf` names the HF modules: q, k, v, o, ln1, ffn_in, ffn_out, ln2."""
    H, I = cfg.hidden_size, cfg.intermediate_size
    out = []
    for ours, key in (("query", "q"), ("key", "k"), ("value", "v")):
        out += _linear(hf[key], att + (ours,), index, (H, H), (H,))
    out += _linear(hf["o"], att + ("output",), index, (H, H), (H,))
    out += _norm(hf["ln1"], att + ("LayerNorm",), index, H)
    out += _linear(hf["ffn_in"], ffn + ("intermediate",), index, (I, H), (I,))
    out += _linear(hf["ffn_out"], ffn + ("output",), index, (H, I), (H,))
    out += _norm(hf["ln2"], ffn + ("LayerNorm",), index, H)
    return out


def hf_groups(cfg: AlbertConfig) -> int:
    """How many HF `albert_layer_groups` this config needs: G for sharing='all', L for sharing='none'."""
    if cfg.sharing == "all":
        groups = cfg.num_hidden_groups
    elif cfg.sharing == "none":
        groups = cfg.num_hidden_layers
    else:
        raise ConversionError(f"sharing={cfg.sharing!r} has no HuggingFace ALBERT layout: HF shares whole layers "
                              "(layer groups) only; use sharing='all' or sharing='none'")
    per_group = cfg.num_hidden_layers // groups
    if cfg.inner_group_num > per_group:
        # AlbertTransformer hands each group the head-mask entries of its layers (L/G of them) and the group
        # indexes them per inner block: more inner blocks than layers per group fail in HF's forward.
        raise ConversionError(f"inner_group_num={cfg.inner_group_num} exceeds the {per_group} layer(s) per HF "
                              f"layer group (num_hidden_layers={cfg.num_hidden_layers}, {groups} group(s)): "
                              "transformers' AlbertTransformer cannot run it (IndexError on its head mask)")
    return groups


# Our models (modeling/heads.py class names) -> the HF head that computes the same function. HF's heads, as ours:
# sequence = dropout + dense on the tanh pooler; token = dropout + dense on the sequence output (no pooler);
# qa = dense H->2 on the sequence output, split into start/end (no pooler); choice = dropout + dense H->1 on each
# choice's pooler, reshaped to [B, C]. AlbertForSquadV2 (start-conditioned end logits) has no HF class.
HEAD_OF_MODEL = {"AlbertModel": "model", "AlbertForPreTraining": "pretraining",
                 "AlbertForSequenceClassification": "sequence", "AlbertForTokenClassification": "token",
                 "AlbertForQuestionAnswering": "qa", "AlbertForMultipleChoice": "choice"}
# head -> (HF class-name suffix, the head's module (ours and HF's name it alike), whether the body has a pooler)
_HEADS = {"model": ("Model", None, True), "pretraining": ("ForPreTraining", None, True),
          "sequence": ("ForSequenceClassification", "classifier", True),
          "token": ("ForTokenClassification", "classifier", False),
          "qa": ("ForQuestionAnswering", "qa_outputs", False), "choice": ("ForMultipleChoice", "classifier", True)}
FAMILIES = ("albert", "bert")


def hf_class(family: str, head: str) -> str:
    """The transformers class name, e.g. ('albert', 'sequence') -> 'AlbertForSequenceClassification'."""
    return {"albert": "Albert", "bert": "Bert"}[family] + _HEADS[head][0]


def _albert_body(cfg: AlbertConfig, body: tuple, pooler: bool) -> list[_Entry]:
    plan = _embeddings(cfg, body)
    if cfg.use_projection:
        plan += _linear(_PROJ, body + ("encoder", "embedding_hidden_mapping_in"), (),
                        (cfg.hidden_size, cfg.embedding_size), (cfg.hidden_size,))
    groups, K = hf_groups(cfg), cfg.inner_group_num
    # Our stack axes: ('groups' only if G > 1 | 'layers' always), then ('inner' only if K > 1).
    stacked_groups = cfg.sharing == "none" or cfg.num_hidden_groups > 1
    part = body + ("encoder", "shared" if cfg.sharing == "all" else "layers")
    for g in range(groups):
        for k in range(K):
            p = f"encoder.albert_layer_groups.{g}.albert_layers.{k}."
            names = dict(q=p + "attention.query", k=p + "attention.key", v=p + "attention.value",
                         o=p + "attention.dense", ln1=p + "attention.LayerNorm", ffn_in=p + "ffn",
                         ffn_out=p + "ffn_output", ln2=p + "full_layer_layer_norm")
            index = ((g,) if stacked_groups else ()) + ((k,) if K > 1 else ())
            plan += _block(cfg, names, part + ("attention",), part + ("ffn",), index)
    if pooler:
        plan += _linear("pooler", body + ("pooler",), (), (cfg.hidden_size,) * 2, (cfg.hidden_size,))
    return plan


def _bert_body(cfg: AlbertConfig, body: tuple, pooler: bool) -> list[_Entry]:
    if cfg.sharing != "none" or cfg.use_projection or cfg.embedding_size != cfg.hidden_size:
        raise ConversionError("a BERT checkpoint needs sharing='none', embedding_size == hidden_size and "
                              f"embedding_projection=False (got sharing={cfg.sharing!r}, "
                              f"E={cfg.embedding_size}, H={cfg.hidden_size}, projection={cfg.use_projection})")
    plan = _embeddings(cfg, body)
    part = body + ("encoder", "layers")
    for i in range(cfg.num_hidden_layers):
        p = f"encoder.layer.{i}."
        names = dict(q=p + "attention.self.query", k=p + "attention.self.key", v=p + "attention.self.value",
                     o=p + "attention.output.dense", ln1=p + "attention.output.LayerNorm",
                     ffn_in=p + "intermediate.dense", ffn_out=p + "output.dense", ln2=p + "output.LayerNorm")
        plan += _block(cfg, names, part + ("attention",), part + ("ffn",), (i,))
    if pooler:
        plan += _linear("pooler.dense", body + ("pooler",), (), (cfg.hidden_size,) * 2, (cfg.hidden_size,))
    return plan


def _plan(cfg: AlbertConfig, family: str = "albert", head: str = "model", num_labels: int = 2) -> list[_Entry]:
    """Every HF tensor of `hf_class(family, head)` for this config; raises for what HF cannot hold."""
    if family not in FAMILIES or head not in _HEADS:
        raise ConversionError(f"internal: no HF layout for family={family!r} head={head!r}")
    if family == "bert" and head == "pretraining":
        raise ConversionError("our pretraining heads are exported as ALBERT (AlbertForPreTraining) only")
    _, module, pooler = _HEADS[head]
    body = () if head == "model" else ("albert",)  # our head models keep the encoder under 'albert'
    plan = (_albert_body if family == "albert" else _bert_body)(cfg, body, pooler)
    if head != "model":  # HF's head models prefix their encoder with its family name
        plan = [dataclasses.replace(e, hf_key=f"{family}.{e.hf_key}") for e in plan]
    H, E = cfg.hidden_size, cfg.embedding_size
    if head == "pretraining":
        plan += _linear("predictions.dense", ("predictions", "dense"), (), (E, H), (E,))
        plan += _norm("predictions.LayerNorm", ("predictions", "LayerNorm"), (), E)
        plan.append(_Entry("predictions.bias", ("predictions", "bias"), (), False, (cfg.vocab_size,)))
        plan += _linear("sop_classifier.classifier", ("seq_relationship",), (), (2, H), (2,))
    elif module is not None:
        plan += _linear(module, (module,), (), (num_labels, H), (num_labels,))
    return plan


def _albert_plan(cfg: AlbertConfig, heads: bool) -> list[_Entry]:
    return _plan(cfg, "albert", "pretraining" if heads else "model")


def _bert_plan(cfg: AlbertConfig) -> list[_Entry]:
    return _plan(cfg, "bert", "model")


def _head_model(cfg: AlbertConfig, head: str, num_labels: int):
    """(our flax model for `head`, the shape of its input ids) -- the tree an HF head model maps onto."""
    from albert_jax import modeling

    name = {v: k for k, v in HEAD_OF_MODEL.items()}[head]
    cls = getattr(modeling, name)
    model = cls(cfg, num_labels) if head in ("sequence", "token") else cls(cfg)
    return model, ((1, 1, 1) if head == "choice" else (1, 1))


@functools.lru_cache(maxsize=16)
def _target_shapes(cfg: AlbertConfig, head: str = "model", num_labels: int = 2
                   ) -> dict[tuple[str, ...], tuple[tuple[int, ...], Any]]:
    """Flat {path: (shape, dtype)} of the model's own params, from an abstract init (no compute)."""
    import jax
    import jax.numpy as jnp
    from flax import linen as nn
    from flax import traverse_util

    model, shape = _head_model(cfg, head, num_labels)
    ids = jnp.zeros(shape, jnp.int32)
    abstract = jax.eval_shape(lambda: model.init(jax.random.PRNGKey(0), ids))
    flat = traverse_util.flatten_dict(nn.unbox(abstract["params"]))
    return {k: (tuple(v.shape), v.dtype) for k, v in flat.items()}


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


def _fill(sd: dict[str, np.ndarray], plan: list[_Entry], cfg: AlbertConfig, head: str) -> dict:
    """Scatter the checked HF tensors into freshly allocated arrays of the model's own shapes.

    Returns jax arrays (config.param_dtype), not numpy: the scanned encoder indexes the shared parameters with
    a traced group index (`encoder._take(shared, group)` when num_hidden_groups > 1), and a numpy array cannot
    be indexed by a tracer, so numpy leaves would make an unjitted `model.apply` fail. Scattering is done in
    numpy first (in-place slice writes), then each finished array is moved to jax once.
    """
    import jax.numpy as jnp
    from flax import traverse_util

    targets = _target_shapes(cfg, head)
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
    plan = _albert_plan(config, heads)
    _check_keys(sd, plan, what)
    return _fill(sd, plan, config, "pretraining" if heads else "model")


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
    from flax import traverse_util

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
    from safetensors.numpy import save_file

    out = Path(out_dir)
    head = head or _infer_head(params)
    hf_config = hf_config_json(config, family, head, labels, problem_type)
    tensors = params_to_hf(params, config, include_tied=False, head=head, family=family)  # as HF writes them
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(hf_config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    # transformers refuses safetensors files whose metadata lacks the framework tag.
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out


def _read_state_dict(directory: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

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
        import torch

        return dict(torch.load(directory / "pytorch_model.bin", map_location="cpu", weights_only=True))
    raise FileNotFoundError(f"{directory}: no model.safetensors, model.safetensors.index.json or "
                            "pytorch_model.bin")


def _read_config_json(directory: Path) -> dict:
    path = directory / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found (a HuggingFace model directory has a config.json)")
    return json.loads(path.read_text(encoding="utf-8"))


def load_hf_pretrained(directory, **config_overrides) -> tuple[AlbertConfig, dict]:
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
    return config, hf_to_params(_read_state_dict(directory), config)


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
    """HF BertModel (or BertForPreTraining, whose `cls.*` heads are dropped) state dict -> AlbertModel params
    (jax array leaves, config.param_dtype)."""
    plan = _bert_plan(config)  # refuses configs BERT cannot hold
    sd = {}
    for key, value in _normalize(state_dict).items():
        if key.startswith("cls."):  # BERT's MLM/NSP heads: BERT-shaped, not part of an AlbertModel
            continue
        sd[key[len("bert."):] if key.startswith("bert.") else key] = value
    _check_keys(sd, plan, "BERT checkpoint")
    return _fill(sd, plan, config, "model")


def load_bert_safetensors(path_or_dir, *, config: AlbertConfig | None = None,
                          vocab_size: int | None = None) -> tuple[AlbertConfig, dict]:
    """A BertModel safetensors file (or its directory, with config.json) -> (config, AlbertModel params).

    `config` replaces the one read from config.json (the checkpoint is then checked against it); `vocab_size`
    is the tokenizer's vocabulary size, checked against the checkpoint's word table.
    """
    from safetensors.numpy import load_file

    path = Path(path_or_dir)
    weights = path / "model.safetensors" if path.is_dir() else path
    if not weights.is_file():
        raise FileNotFoundError(f"{weights}: no such safetensors file")
    if config is None:
        config = bert_config(_read_config_json(weights.parent))
    if vocab_size is not None and vocab_size != config.vocab_size:
        config = config.replace(vocab_size=vocab_size)
    return config, bert_to_params(load_file(str(weights)), config)

