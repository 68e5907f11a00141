"""AlbertConfig: the model's shape in the paper's letters, its presets, validation and counts.

Letters follow the paper: V vocab, E embedding width, H hidden width, L layers, A heads, I FFN width, G hidden
groups. Everything here is computed from the config alone (no JAX), so `param_count()` and `flops_per_token()`
are independent of the Flax module and can be tested against it.
"""
from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import ml_collections

from albert_jax.configs.overrides import ConfigError, field_types, parse_value, register_section, split_arg

SHARING_MODES = ("all", "attention", "ffn", "none")
ACTIVATIONS = ("gelu_new", "gelu", "relu")
# What a layer saves for its backward pass (modeling/encoder.py); "none" is no remat.
REMAT_POLICIES = ("none", "full", "dots", "dots_no_batch", "dots_no_ffn_in")
DTYPES = ("float32", "bfloat16", "float16")
# How the attention scores meet the values: "xla" is our own dot + softmax + dot (modeling/layers.py), "cudnn" is
# cuDNN's fused flash attention (GPU only: bf16/fp16, no attention-probability dropout, head size a multiple of 8
# up to 128), "auto" takes cuDNN where a run's devices are GPUs and the model qualifies, else xla.
ATTENTION_IMPLS = ("auto", "xla", "cudnn")


# The fields with a closed set of values, and those values (validation and `albert-jax config show` read this).
FIELD_CHOICES = {"sharing": SHARING_MODES, "hidden_act": ACTIVATIONS, "remat_policy": REMAT_POLICIES, "dtype": DTYPES,
                 "param_dtype": DTYPES, "attention_impl": ATTENTION_IMPLS}


@dataclasses.dataclass(frozen=True)
class AlbertConfig:
    vocab_size: int = 30000  # V
    embedding_size: int = 128  # E
    hidden_size: int = 768  # H
    num_hidden_layers: int = 12  # L
    num_attention_heads: int = 12  # A
    intermediate_size: int = 3072  # I
    # 'gelu_new' is the tanh approximation the official TF code calls "gelu"; 'gelu' is the exact erf form.
    hidden_act: str = "gelu_new"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    classifier_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    # Which parts of a layer are shared across the layers of a group: all (ALBERT), attention, ffn, none (BERT).
    sharing: str = "all"
    num_hidden_groups: int = 1  # G: layer i uses group i*G//L (official)
    # Layer -> parameter set of the shared parts, e.g. "0-7.8x4" (layers 8-11 share one set); "" = the G rule.
    # Syntax and rules: `parse_sharing_map`; build one from layer spans with `share_layers`.
    sharing_map: str = ""
    inner_group_num: int = 1  # blocks applied in sequence inside each layer, each with its own parameters
    # None: project E->H only when E != H. BERT is E == H without projection; HF ALBERT always has one.
    embedding_projection: bool | None = None
    scan_layers: bool = True
    remat_policy: str = "none"
    dtype: str = "float32"  # compute dtype
    param_dtype: str = "float32"
    attention_impl: str = "auto"  # one of ATTENTION_IMPLS; speed only (the same arithmetic, fused on GPU)

    def __post_init__(self):
        self.validate()

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        positive = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                    "intermediate_size", "max_position_embeddings", "type_vocab_size", "num_hidden_groups",
                    "inner_group_num")
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"{name}={value!r}: must be a positive integer")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout_prob"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise ConfigError(f"{name}={value!r}: must be a probability in [0, 1)")
        if not self.initializer_range > 0:
            raise ConfigError(f"initializer_range={self.initializer_range!r}: must be > 0")
        if not self.layer_norm_eps > 0:
            raise ConfigError(f"layer_norm_eps={self.layer_norm_eps!r}: must be > 0")
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(f"hidden_size={self.hidden_size} is not divisible by num_attention_heads="
                              f"{self.num_attention_heads}: H must be a multiple of A")
        for name, allowed in FIELD_CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name}={getattr(self, name)!r}: allowed values are {', '.join(allowed)}")
        if self.num_hidden_layers % self.num_hidden_groups:
            raise ConfigError(f"num_hidden_layers={self.num_hidden_layers} is not divisible by num_hidden_groups="
                              f"{self.num_hidden_groups}: each group must hold the same number of layers")
        if self.sharing == "none" and self.num_hidden_groups != 1:
            raise ConfigError(f"num_hidden_groups={self.num_hidden_groups} with sharing='none': nothing is "
                              "shared, so groups have no meaning; use num_hidden_groups=1")
        if self.sharing_map:
            self._validate_sharing_map()
        if self.attention_impl == "cudnn" and self.cudnn_attention_blocker():
            raise ConfigError(f"attention_impl='cudnn': {self.cudnn_attention_blocker()}; use attention_impl='xla' "
                              "or 'auto' (which falls back to xla)")
        if not self.use_projection and self.embedding_size != self.hidden_size:
            raise ConfigError(f"embedding_projection=False needs embedding_size == hidden_size "
                              f"(got E={self.embedding_size}, H={self.hidden_size})")

    def _validate_sharing_map(self) -> None:
        if self.sharing == "none":
            raise ConfigError(f"sharing_map={self.sharing_map!r} with sharing='none': nothing is shared, so there "
                              "is nothing to map; use sharing='all', 'attention' or 'ffn', or sharing_map=''")
        if self.num_hidden_groups != 1:
            raise ConfigError(f"sharing_map={self.sharing_map!r} with num_hidden_groups={self.num_hidden_groups}: "
                              "the map replaces the i*G//L group rule; use num_hidden_groups=1")
        ids = parse_sharing_map(self.sharing_map)
        if len(ids) != self.num_hidden_layers:
            raise ConfigError(f"sharing_map={self.sharing_map!r} lists {len(ids)} layers; num_hidden_layers="
                              f"{self.num_hidden_layers} needs one set id per layer")

    def cudnn_attention_blocker(self) -> str:
        """Why cuDNN's fused attention cannot run this model ('' when it can)."""
        if self.dtype not in ("bfloat16", "float16"):
            return f"cuDNN's fused attention has no {self.dtype} kernel (set model.dtype=bfloat16)"
        if self.attention_probs_dropout_prob:
            return (f"attention_probs_dropout_prob={self.attention_probs_dropout_prob}: jax's cuDNN attention takes "
                    "no dropout")
        if self.head_dim % 8 or self.head_dim > 128:
            return f"head size {self.head_dim}: cuDNN's flash attention needs a multiple of 8 up to 128"
        return ""

    def for_platform(self, platform: str) -> "AlbertConfig":
        """`attention_impl='auto'` made concrete for devices of `platform` (jax's 'cpu', 'gpu', 'tpu')."""
        if self.attention_impl != "auto":
            return self
        fused = platform == "gpu" and not self.cudnn_attention_blocker()
        return self.replace(attention_impl="cudnn" if fused else "xla")

    # ------------------------------------------------------------------ derived shapes
    @property
    def use_projection(self) -> bool:
        if self.embedding_projection is None:
            return self.embedding_size != self.hidden_size
        return self.embedding_projection

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def depth(self) -> int:
        """Blocks applied per forward pass: L layers of inner_group_num blocks each."""
        return self.num_hidden_layers * self.inner_group_num

    @property
    def attention_shared(self) -> bool:
        return self.sharing in ("all", "attention")

    @property
    def ffn_shared(self) -> bool:
        return self.sharing in ("all", "ffn")

    @property
    def layer_set_ids(self) -> tuple[int, ...] | None:
        """sharing_map parsed: layer i's parameter set for the shared parts; None without a map."""
        return parse_sharing_map(self.sharing_map) if self.sharing_map else None

    @property
    def num_shared_sets(self) -> int:
        """Distinct parameter sets of a shared part: the map's sets, else the G groups."""
        ids = self.layer_set_ids
        return max(ids) + 1 if ids else self.num_hidden_groups

    def param_sets(self, shared: bool) -> int:
        """How many distinct parameter sets a block part has: per set/group if shared, per layer otherwise."""
        return (self.num_shared_sets if shared else self.num_hidden_layers) * self.inner_group_num

    def replace(self, **changes: Any) -> "AlbertConfig":
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ counts
    def param_breakdown(self) -> dict[str, int]:
        """Parameters by block, computed from the shapes the official architecture defines."""
        V, E, H, I = self.vocab_size, self.embedding_size, self.hidden_size, self.intermediate_size
        attention = 4 * (H * H + H) + 2 * H  # q, k, v, output dense + post-attention LayerNorm
        ffn = (H * I + I) + (I * H + H) + 2 * H  # two dense + post-FFN LayerNorm
        return {
            "embeddings": (V + self.max_position_embeddings + self.type_vocab_size) * E + 2 * E,
            "projection": (E * H + H) if self.use_projection else 0,
            "attention": attention * self.param_sets(self.attention_shared),
            "ffn": ffn * self.param_sets(self.ffn_shared),
            "pooler": H * H + H,
            # Pretraining heads, reported apart from the encoder as the paper does.
            "mlm_head": (H * E + E) + 2 * E + V,  # transform dense, LayerNorm, output bias (decoder is tied)
            "sop_head": 2 * H + 2,
        }

    def param_count(self, heads: bool = False) -> int:
        """Embeddings + projection + encoder + pooler; with heads=True also the MLM and SOP heads."""
        b = self.param_breakdown()
        total = b["embeddings"] + b["projection"] + b["attention"] + b["ffn"] + b["pooler"]
        return total + (b["mlm_head"] + b["sop_head"] if heads else 0)

    def flops_per_token(self, seq_len: int, masked_fraction: float = 0.15) -> float:
        """Training FLOPs per token (forward + backward = 3x forward), counting every applied layer.

        Sharing saves parameters, not compute: a shared layer applied L times costs L times.
        The MLM head term assumes logits only on the masked positions (a fraction of the tokens).
        """
        E, H, I, V = self.embedding_size, self.hidden_size, self.intermediate_size, self.vocab_size
        layers = 6 * self.depth * (4 * H * H + 2 * H * I)
        attention = 12 * self.depth * seq_len * H
        projection = 6 * E * H if self.use_projection else 0
        mlm = masked_fraction * 6 * (H * E + E * V)
        return float(layers + attention + projection + mlm)

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AlbertConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown config field(s) {unknown}; known fields are {sorted(known)}")
        return cls(**d)

    def to_official_json(self) -> dict[str, Any]:
        """The official albert_config.json (google-research/albert); it can only express sharing='all'."""
        cfg = self._as_all_sharing("the official albert_config.json")
        act = {"gelu_new": "gelu", "relu": "relu"}.get(cfg.hidden_act)
        if act is None:
            raise ConfigError("hidden_act='gelu' (exact) has no name in the official config, whose 'gelu' is the "
                              "tanh approximation; use hidden_act='gelu_new'")
        return {
            "attention_probs_dropout_prob": cfg.attention_probs_dropout_prob, "hidden_act": act,
            "hidden_dropout_prob": cfg.hidden_dropout_prob, "embedding_size": cfg.embedding_size,
            "hidden_size": cfg.hidden_size, "initializer_range": cfg.initializer_range,
            "intermediate_size": cfg.intermediate_size, "max_position_embeddings": cfg.max_position_embeddings,
            "num_attention_heads": cfg.num_attention_heads, "num_hidden_layers": cfg.num_hidden_layers,
            "num_hidden_groups": cfg.num_hidden_groups, "net_structure_type": 0, "gap_size": 0,
            "num_memory_blocks": 0, "inner_group_num": cfg.inner_group_num, "down_scale_factor": 1,
            "type_vocab_size": cfg.type_vocab_size, "vocab_size": cfg.vocab_size,
        }

    @classmethod
    def from_official_json(cls, d: dict[str, Any], **overrides: Any) -> "AlbertConfig":
        # The official "gelu" is the tanh approximation (modeling.py), i.e. our gelu_new.
        act = {"gelu": "gelu_new", "gelu_new": "gelu_new", "relu": "relu"}.get(d.get("hidden_act", "gelu"))
        if act is None:
            raise ConfigError(f"hidden_act={d.get('hidden_act')!r} in the official config: expected gelu or relu")
        keys = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "hidden_dropout_prob", "attention_probs_dropout_prob",
                "max_position_embeddings", "type_vocab_size", "initializer_range", "num_hidden_groups",
                "inner_group_num")
        fields = {k: d[k] for k in keys if k in d}
        # The official code applies LayerNorm without an explicit epsilon (TF default); HF uses 1e-12.
        return cls(hidden_act=act, sharing="all", embedding_projection=True, **fields, **overrides)

    def to_hf_json(self) -> dict[str, Any]:
        """A HuggingFace AlbertConfig dict (model_type 'albert'); sharing='all' or 'none' only."""
        cfg = self._as_all_sharing("a HuggingFace AlbertConfig")
        return {
            "architectures": ["AlbertForPreTraining"], "model_type": "albert",
            "vocab_size": cfg.vocab_size, "embedding_size": cfg.embedding_size, "hidden_size": cfg.hidden_size,
            "num_hidden_layers": cfg.num_hidden_layers, "num_hidden_groups": cfg.num_hidden_groups,
            "num_attention_heads": cfg.num_attention_heads, "intermediate_size": cfg.intermediate_size,
            "inner_group_num": cfg.inner_group_num, "hidden_act": cfg.hidden_act,
            "hidden_dropout_prob": cfg.hidden_dropout_prob,
            "attention_probs_dropout_prob": cfg.attention_probs_dropout_prob,
            "max_position_embeddings": cfg.max_position_embeddings, "type_vocab_size": cfg.type_vocab_size,
            "initializer_range": cfg.initializer_range, "layer_norm_eps": cfg.layer_norm_eps,
            "classifier_dropout_prob": cfg.classifier_dropout_prob, "position_embedding_type": "absolute",
            "pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3,
        }

    @classmethod
    def from_hf_json(cls, d: dict[str, Any], **overrides: Any) -> "AlbertConfig":
        if d.get("model_type", "albert") != "albert":
            raise ConfigError(f"model_type={d.get('model_type')!r}: expected an ALBERT config")
        act = d.get("hidden_act", "gelu_new")
        if act not in ACTIVATIONS:
            raise ConfigError(f"hidden_act={act!r} in the HuggingFace config: allowed {', '.join(ACTIVATIONS)}")
        keys = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "hidden_dropout_prob", "attention_probs_dropout_prob",
                "classifier_dropout_prob", "max_position_embeddings", "type_vocab_size", "initializer_range",
                "layer_norm_eps", "num_hidden_groups", "inner_group_num")
        fields = {k: d[k] for k in keys if k in d}
        # HF ALBERT always has the E->H mapping, even when E == H.
        return cls(hidden_act=act, sharing="all", embedding_projection=True, **fields, **overrides)

    def _as_all_sharing(self, target: str) -> "AlbertConfig":
        """Express this config with whole-layer sharing: 'none' is 'all' with one group per layer."""
        if self.sharing_map:
            raise ConfigError(f"sharing_map={self.sharing_map!r} cannot be written as {target}, whose layers use "
                              "group i*G//L only; export the parameters instead (albert-jax export --to params)")
        if self.sharing == "all":
            return self
        if self.sharing == "none" and self.inner_group_num == 1:
            return self.replace(sharing="all", num_hidden_groups=self.num_hidden_layers)
        raise ConfigError(f"sharing={self.sharing!r} cannot be written as {target}, which only shares whole "
                          "layers (groups); use sharing='all' or 'none' (inner_group_num=1)")


# ---------------------------------------------------------------------------------------------- sharing_map
_MAP_SYNTAX = ("items joined by '.' (or ','): N = one layer using set N; N-M = M-N+1 layers using sets N..M, one "
               "each; NxK = K layers sharing set N")


def parse_sharing_map(text: str) -> tuple[int, ...]:
    """'0-7.8x4' -> (0, 1, ..., 7, 8, 8, 8, 8): layer i (0-based, in order) uses parameter set ids[i].

    Items are joined by '.' or ','; '.' is the one to use inside an experiment argument, where commas separate
    variants. An item is `N` (one layer, set N), `N-M` (one layer for each set N, N+1, ..., M) or `NxK` (K layers
    that all use set N). Sets are numbered in order of first use (the first layer uses 0, each new set takes the
    next id), so one layout has one spelling of its ids and set 0 is layer 0's. A set may serve any layers,
    contiguous or not ('0-2.0-2' cycles three sets).
    """
    ids: list[int] = []
    for item in text.replace(",", ".").split("."):
        item = item.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+)|x(\d+))?", item)
        if not m:
            raise ConfigError(f"sharing_map={text!r}: item {item!r} is not a set id; {_MAP_SYNTAX}")
        first, last, count = int(m[1]), m[2], m[3]
        if last is not None:
            if int(last) < first:
                raise ConfigError(f"sharing_map={text!r}: item {item!r} counts down; write N-M with N <= M")
            ids += range(first, int(last) + 1)
        elif count is not None:
            if int(count) < 1:
                raise ConfigError(f"sharing_map={text!r}: item {item!r} repeats 0 times; K must be >= 1")
            ids += [first] * int(count)
        else:
            ids.append(first)
    seen = 0
    for layer, set_id in enumerate(ids):
        if set_id > seen:
            raise ConfigError(f"sharing_map={text!r}: layer {layer} uses set {set_id} before set {seen} is used; "
                              f"number sets in order of first use, e.g. {format_sharing_map(_renumber(ids))!r}")
        seen = max(seen, set_id + 1)
    return tuple(ids)


def _renumber(ids: list[int]) -> tuple[int, ...]:
    order: dict[int, int] = {}
    return tuple(order.setdefault(i, len(order)) for i in ids)


def format_sharing_map(ids) -> str:
    """The compact spelling of a layer -> set list: runs of one set as NxK, rising runs of new sets as N-M."""
    ids, out, i = list(ids), [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[i]:
            j += 1
        if j > i:
            out.append(f"{ids[i]}x{j - i + 1}")
        else:  # a rising run stops before a set that repeats, so "0-1.2x3" rather than "0-2.2x2"
            while (j + 1 < len(ids) and ids[j + 1] == ids[j] + 1
                   and not (j + 2 < len(ids) and ids[j + 2] == ids[j + 1])):
                j += 1
            out.append(f"{ids[i]}-{ids[j]}" if j > i else str(ids[i]))
        i = j + 1
    return ".".join(out)


def share_layers(num_layers: int, *spans: tuple[int, int]) -> str:
    """The sharing_map in which each span (first, last) of 0-based layers, inclusive, shares one set and every
    other layer has its own: share_layers(12, (8, 11)) == '0-7.8x4' (the paper's layers 9-12 share)."""
    owner = list(range(num_layers))
    for first, last in spans:
        if not 0 <= first <= last < num_layers:
            raise ConfigError(f"share_layers span ({first}, {last}): need 0 <= first <= last < {num_layers}")
        if any(owner[i] != i for i in range(first, last + 1)):
            raise ConfigError(f"share_layers span ({first}, {last}) overlaps another span")
        owner[first: last + 1] = [first] * (last - first + 1)
    return format_sharing_map(_renumber(owner))


def _preset_table() -> dict[str, dict[str, Any]]:
    base = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)
    large = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
    # Released xlarge/xxlarge configs: heads 16 and 64 (the paper's H/64 rule would give 32 for xlarge).
    xlarge = dict(hidden_size=2048, num_hidden_layers=24, num_attention_heads=16, intermediate_size=8192)
    xxlarge = dict(hidden_size=4096, num_hidden_layers=12, num_attention_heads=64, intermediate_size=16384)
    v1_dropout = dict(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    no_dropout = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    table: dict[str, dict[str, Any]] = {
        # Paper Table 1 BERT rows: V=30000 as every row of the paper, E == H, nothing shared, no projection.
        "bert-base": dict(base, embedding_size=768, sharing="none", embedding_projection=False, **v1_dropout),
        "bert-large": dict(large, embedding_size=1024, sharing="none", embedding_projection=False, **v1_dropout),
    }
    for size, dims in (("base", base), ("large", large), ("xlarge", xlarge), ("xxlarge", xxlarge)):
        # v1: dropout 0.1 except xxlarge (0); v2: no dropout anywhere (official README, albert#23).
        table[f"albert-{size}-v1"] = dict(dims, **(no_dropout if size == "xxlarge" else v1_dropout))
        table[f"albert-{size}-v2"] = dict(dims, **no_dropout)
        table[f"albert-{size}"] = table[f"albert-{size}-v2"]
        # Official Chinese models: WordPiece vocab of 21128 and ReLU (albert#58, #154).
        table[f"albert-{size}-zh"] = dict(dims, vocab_size=21128, hidden_act="relu", **no_dropout)
    # A model small enough for a laptop CPU test in seconds (the unit tests build on it).
    table["tiny"] = dict(vocab_size=512, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=4, intermediate_size=64, max_position_embeddings=128)
    # The smoke and cpu scales' model (experiments/pretrain.py, finetune.py; the ablations set E and sharing per row):
    # it learns visibly in a few hundred CPU steps. The experiments replace vocab_size by the tokenizer's.
    table["smoke"] = dict(vocab_size=512, embedding_size=64, hidden_size=128, num_hidden_layers=4,
                          num_attention_heads=4, intermediate_size=256, max_position_embeddings=128)
    return table


PRESETS = _preset_table()


def preset(name: str, **overrides: Any) -> AlbertConfig:
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; available: {', '.join(sorted(PRESETS))}")
    return AlbertConfig(**{**PRESETS[name], **overrides})


def parse_overrides(text: str) -> dict[str, Any]:
    """'sharing=attention,embedding_size=768' -> typed values, by the one parser (configs/overrides.py)."""
    types = field_types(AlbertConfig)
    out: dict[str, Any] = {}
    for key, raw in split_arg(text).items():
        if key not in types:
            raise ConfigError(f"override {key!r}: unknown field; known fields are {sorted(types)}")
        out[key] = parse_value(key, raw, *types[key])
    return out


# `--set model.<field>=...` is typed by AlbertConfig's annotations (so None-able fields take `none`).
register_section("model", AlbertConfig, FIELD_CHOICES)


def model_section(cfg: AlbertConfig):
    """Every AlbertConfig field as a typed config section (`--set model.embedding_size=256` works on each)."""
    return ml_collections.ConfigDict(cfg.to_dict())


def model_from_section(section, **changes: Any) -> AlbertConfig:
    """The AlbertConfig a model section describes (validated: a bad field is named)."""
    d = dict(section.to_dict() if hasattr(section, "to_dict") else section)
    d.update(changes)
    return AlbertConfig.from_dict(d)


def load_json(path: str) -> AlbertConfig:
    """Load our config.json, an official albert_config.json or a HuggingFace config.json."""
    with open(path, encoding="utf-8") as f:
        try:
            d = json.load(f)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}: line {e.lineno}: not valid JSON ({e.msg})") from None
    if d.get("model_type") == "albert":
        return AlbertConfig.from_hf_json(d)
    if "sharing" in d:
        return AlbertConfig.from_dict(d)
    return AlbertConfig.from_official_json(d)
