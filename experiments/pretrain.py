"""ALBERT pretraining (MLM + SOP/NSP/none) on the real English mix.

Run:
  albert-jax pretrain --config experiments/pretrain.py:scale=cpu --workdir workdirs/cpu
  albert-jax pretrain --config experiments/pretrain.py:scale=paper,preset=albert-base --workdir gs://...

The argument after ':' is a comma list of variants, declared in ARGS below (`albert-jax config args
experiments/pretrain.py` prints them). lang=zh is the official Chinese setup (docs/chinese.md): People's Daily,
a WordPiece vocabulary trained on it with one token per CJK character, ReLU (the albert-*-zh presets).
Scales: `smoke` (seconds: 4 steps on 100 documents per English source, 400 per Chinese one, for tests and sweeps'
smoke rows), `cpu` (a 2-core CPU in about 12 minutes: 3,000 steps on the whole English mix, chosen by the recipe
study in docs/reproduction.md), `paper` (the paper's §4.1 setup). smoke and cpu share the model: the `smoke` preset
(4 layers, H=128, E=64).
"""
from __future__ import annotations

import ml_collections

from albert_jax.config import model_section, preset
from albert_jax.configs import overrides
from albert_jax.configs import schema
from albert_jax.configs.arguments import Arg, Derived, parse_args
from albert_jax.configs.scales import DEFAULT_VOCAB, PAPER_REMAT, SCALES, SMOKE_DOCS

ARGS = (
    Arg("scale", allowed=SCALES, default="smoke", help="smoke (seconds), cpu (minutes on 2 cores) or paper"),
    Arg("lang", allowed=("en", "zh"), default="en", help="zh: People's Daily, WordPiece, ReLU (docs/chinese.md)"),
    Arg("preset", default=Derived("albert-base (albert-base-zh with lang=zh) at scale=paper, else smoke",
                                  lambda a: ("albert-base-zh" if a["lang"] == "zh" else "albert-base")
                                  if a["scale"] == "paper" else "smoke"),
        help="the model preset (albert_jax/config.py)"),
    Arg("embed", sets="model.embedding_size", help="the embedding size E"),
    Arg("sharing", sets="model.sharing", help="what the layers share"),
    Arg("task", typed_as="data.task"),
    Arg("zh_masking", typed_as="data.zh_masking"),
    Arg("model.<field>", help="any model field (AlbertConfig), typed as that field"),
)


def get_config(arg: str = "") -> ml_collections.ConfigDict:
    args, model_args = parse_args(arg, ARGS)
    scale = args["scale"]
    c = ml_collections.ConfigDict()
    c.experiment = "pretrain"
    c.arg = arg
    c.scale = scale

    zh = args["lang"] == "zh"
    c.model_preset = args["preset"]
    base = preset(c.model_preset, **({"hidden_act": "relu"} if zh and c.model_preset == "smoke" else {}))
    if scale == "paper":
        base = base.replace(remat_policy=PAPER_REMAT)  # scanned, no more memory than unrolled (configs/scales.py)
    # Every model field is a typed config field; vocab_size 0 means "the tokenizer's".
    c.model = model_section(base.replace(vocab_size=1))
    c.model.vocab_size = 0

    # Every field's type, default and role: albert_jax/configs/schema.py. Here: the values that depend on the scale.
    by_scale = lambda smoke, cpu, paper: {"smoke": smoke, "cpu": cpu, "paper": paper}[scale]  # noqa: E731
    corpus = "albert_pretrain_zh" if zh else "albert_pretrain_en"
    c.data = schema.section(
        schema.PRETRAIN_DATA,
        corpus=corpus,
        # zh: BERT-Chinese's 21,128 at the paper scale; People's Daily 1998-01 supports about 6,000 WordPiece tokens.
        vocab_size=(21128 if scale == "paper" else 8000) if zh else DEFAULT_VOCAB[scale],
        tokenizer_kind="wordpiece" if zh else "spm",
        task=args["task"],
        zh_masking=args["zh_masking"],
        # smoke/cpu: short sequences (about one sentence per segment) make SOP learnable within minutes on a CPU.
        max_seq_length=512 if scale == "paper" else 64,
        dupe_factor=40 if scale == "paper" else 2,
        # 0: every document. The cpu scale reads the whole English mix (2,243 train documents, 6.8M tokens at vocab
        # 4,000): its held-out text then makes 2,106 balanced SOP pairs (issue 24 asks for >= 2,000).
        # smoke: albert_jax/configs/scales.py's SMOKE_DOCS.
        max_docs=SMOKE_DOCS[corpus] if scale == "smoke" else 0)
    c.train = schema.section(
        schema.PRETRAIN_TRAIN,
        batch_size=by_scale(8, 64, 4096),
        # cpu: the recipe study's choice (docs/reproduction.md, "Choosing the cpu scale"): ~12 minutes on 2 cores.
        num_train_steps=by_scale(4, 3000, 125_000),
        optimizer="lamb",
        learning_rate=by_scale(0.01, 0.01, 0.00176),  # cpu: a small batch tolerates a larger LAMB rate
        warmup_steps=by_scale(1, 200, 3125),
        log_every=by_scale(2, 50, 100),
        eval_every=by_scale(4, 375, 5000),  # cpu: 8 points on the learning curve
        eval_batches=by_scale(1, 0, 100),  # cpu: every held-out pair (0: the whole set)
        checkpoint_every=by_scale(4, 500, 5000),
        keep_checkpoints=3)
    c.mesh = schema.section(schema.MESH)
    c.distributed = schema.section(schema.DISTRIBUTED)
    for key, raw in model_args.items():  # the same typed parser as --set
        overrides.set_field(c, key, raw)
    return c
