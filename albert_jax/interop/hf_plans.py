"""The one table of HuggingFace tensor names ("plans") for our parameter trees, ALBERT and BERT, every head.

A plan lists, for a config and an HF class, every HF tensor name, where it lives in our tree (path and the index
into the leading 'groups'/'layers'/'inner' axes) and whether it is a torch Linear weight (stored [out, in], so it
is transposed) or stored as is. interop/hf.py walks it in both directions; nothing else names HF tensors.

HF layout facts relied on (transformers 4.57, `modeling_albert.py` / `modeling_bert.py`) are in interop/hf.py's
docstring.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

from albert_jax.config import AlbertConfig

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
    if cfg.sharing_map:
        raise ConversionError(f"sharing_map={cfg.sharing_map!r} has no HuggingFace ALBERT layout: HF maps layer i "
                              "to group i*G//L only; export the parameters instead (albert-jax export --to params)")
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
    from albert_jax import modeling  # noqa: PLC0415  heavy: jax, flax

    name = {v: k for k, v in HEAD_OF_MODEL.items()}[head]
    cls = getattr(modeling, name)
    model = cls(cfg, num_labels) if head in ("sequence", "token") else cls(cfg)
    return model, ((1, 1, 1) if head == "choice" else (1, 1))


@functools.lru_cache(maxsize=16)
def _target_shapes(cfg: AlbertConfig, head: str = "model", num_labels: int = 2
                   ) -> dict[tuple[str, ...], tuple[tuple[int, ...], Any]]:
    """Flat {path: (shape, dtype)} of the model's own params, from an abstract init (no compute)."""
    import jax  # noqa: PLC0415  heavy: jax
    import jax.numpy as jnp  # noqa: PLC0415  heavy: jax
    from flax import linen as nn  # noqa: PLC0415  heavy: flax
    from flax import traverse_util  # noqa: PLC0415  heavy: flax

    model, shape = _head_model(cfg, head, num_labels)
    ids = jnp.zeros(shape, jnp.int32)
    abstract = jax.eval_shape(lambda: model.init(jax.random.PRNGKey(0), ids))
    flat = traverse_util.flatten_dict(nn.unbox(abstract["params"]))
    return {k: (tuple(v.shape), v.dtype) for k, v in flat.items()}
