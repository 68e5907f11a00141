"""The paper's Figure 1: how far each layer moves its input embeddings.

For layer l (1..L) the input is hidden state l-1 (hidden state 0 is the embeddings after the E->H projection,
what the first layer receives) and the output is hidden state l. Per token we take the L2 distance between the
two vectors and their cosine similarity, also as an angle in degrees (the paper's right panel); each is averaged
over the real tokens of the text (input_mask 1, [CLS] and [SEP] included, padding excluded), token-weighted over
all sequences: sums and counts, reduced once at the end.

Models: a pretraining or fine-tuning workdir of ours or a HuggingFace directory (whatever
runs/finetune.resolve_init reads), or `random:W[:field=value,...]`, a fresh initialisation of W's architecture
with overrides (e.g. `random:W:sharing=none`): the untrained baseline. The text defaults to a pretraining run's
own held-out split (the validation text its evaluations use), packed into single-segment `[CLS] ... [SEP]`
sequences of whole sentences, document by document.
"""
from __future__ import annotations

import csv
import dataclasses
import json
import logging
import os
from pathlib import Path
from typing import Any, Iterator

import ml_collections
import numpy as np

from albert_jax.config import parse_overrides

log = logging.getLogger("albert_jax.analysis")

RANDOM_PREFIX = "random:"
METRICS = ("l2", "cosine", "angle_deg")


class AnalysisError(ValueError):
    """An analysis that cannot run as asked; the message names the model or file and what to change."""


@dataclasses.dataclass
class LoadedModel:
    label: str
    source: str  # what the user named
    cfg: Any  # AlbertConfig
    params: dict  # the AlbertModel subtree (no pooler: it does not touch the hidden states)
    tokenizer: Any
    step: int | None  # checkpoint step; None for HuggingFace weights and random inits
    held_out_text: Path | None  # a pretraining run's validation split; None when the run had none
    max_seq_length: int


# ---------------------------------------------------------------------------------------------------------------
# Per-layer statistics


def transition_sums(hidden, mask):
    """Sums over real tokens, per layer transition hidden[l-1] -> hidden[l], of the L2 distance, the cosine
    similarity and the angle in degrees; and the real-token count. `hidden`: L+1 arrays [B, T, H]; `mask` [B, T].

    The angle is 2·atan2(|â − b̂|, |â + b̂|) of the unit vectors, which stays accurate for the small angles of
    nearby layers where arccos(cos) loses most of its digits in float32."""
    import jax.numpy as jnp  # noqa: PLC0415  heavy: jax

    x = jnp.stack([jnp.asarray(h, jnp.float32) for h in hidden])  # [L+1, B, T, H]
    a, b = x[:-1], x[1:]
    m = jnp.asarray(mask, jnp.float32)
    na, nb = jnp.linalg.norm(a, axis=-1), jnp.linalg.norm(b, axis=-1)
    ua, ub = a / jnp.maximum(na, 1e-12)[..., None], b / jnp.maximum(nb, 1e-12)[..., None]
    cos = jnp.sum(ua * ub, axis=-1)
    angle = jnp.degrees(2 * jnp.arctan2(jnp.linalg.norm(ua - ub, axis=-1), jnp.linalg.norm(ua + ub, axis=-1)))
    per_token = {"l2": jnp.linalg.norm(b - a, axis=-1), "cosine": cos, "angle_deg": angle}
    out = {k: jnp.sum(v * m, axis=(1, 2)) for k, v in per_token.items()}
    out["tokens"] = jnp.sum(m)
    return out


def layer_statistics(cfg, params: dict, batches) -> dict[str, Any]:
    """Per-layer means over every real token of `batches` (dicts of input_ids, input_mask, segment_ids [B, T])."""
    import jax  # noqa: PLC0415  heavy: jax

    from albert_jax.modeling.model import AlbertModel  # noqa: PLC0415  heavy: jax, flax

    # float32 whatever the run computed in: these are differences between nearby vectors, which bf16 blurs.
    cfg = cfg.replace(dtype="float32", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = AlbertModel(cfg, add_pooling_layer=False)
    params = {k: v for k, v in params.items() if k != "pooler"}

    @jax.jit
    def sums(p, batch):
        out = model.apply({"params": p}, batch["input_ids"], batch["input_mask"], batch["segment_ids"],
                          deterministic=True, output_hidden_states=True)
        return transition_sums(out["hidden_states"], batch["input_mask"])

    total: dict[str, np.ndarray] = {}
    sequences = 0
    for batch in batches:
        sequences += int(np.asarray(batch["input_mask"]).any(axis=1).sum())
        for k, v in jax.device_get(sums(params, batch)).items():
            total[k] = total.get(k, 0) + np.asarray(v, np.float64)
    tokens = int(total.get("tokens", 0))
    if not tokens:
        raise AnalysisError("the text gave no tokens to measure")
    result = {k: (total[k] / tokens).tolist() for k in METRICS}
    result.update(layers=list(range(1, cfg.num_hidden_layers + 1)), tokens=tokens, sequences=sequences)
    return result


# ---------------------------------------------------------------------------------------------------------------
# Text -> model inputs


def _documents(path: Path) -> Iterator[list[str]]:
    """Official format: one sentence per line, a blank line between documents."""
    from albert_jax.data.tokenization import iter_lines  # noqa: PLC0415  heavy: sentencepiece

    doc: list[str] = []
    for _, line in iter_lines(path):
        if line.strip():
            doc.append(line.strip())
        elif doc:
            yield doc
            doc = []
    if doc:
        yield doc


def text_inputs(tokenizer, path, max_seq_length: int, max_sequences: int) -> dict[str, np.ndarray]:
    """Up to `max_sequences` rows of `[CLS] sentences [SEP]`, padded to max_seq_length: whole sentences packed
    greedily within a document (a sentence longer than a row is cut into row-sized pieces)."""
    from albert_jax.tasks.features import pad_row  # noqa: PLC0415  heavy: grain, jax

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"--text {path} does not exist")
    budget = max_seq_length - 2
    if budget < 1:
        raise AnalysisError(f"--max-seq-length={max_seq_length}: needs at least 3 ([CLS], a token, [SEP])")
    rows: list[dict] = []

    def emit(ids):
        if ids and len(rows) < max_sequences:
            full = [tokenizer.cls_id, *ids, tokenizer.sep_id]
            rows.append(pad_row(full, [0] * len(full), max_seq_length, tokenizer.pad_id))

    for doc in _documents(path):
        chunk: list[int] = []
        for sentence in doc:
            ids = tokenizer.encode(sentence)
            if chunk and len(chunk) + len(ids) > budget:
                emit(chunk)
                chunk = []
            while len(ids) > budget:
                emit(ids[:budget])
                ids = ids[budget:]
            chunk += ids
        emit(chunk)
        if len(rows) >= max_sequences:
            break
    if not rows:
        raise AnalysisError(f"{path} holds no text to measure")
    return {k: np.stack([r[k] for r in rows]) for k in rows[0]}


def batches_of(inputs: dict[str, np.ndarray], batch_size: int) -> Iterator[dict[str, np.ndarray]]:
    """Fixed-size batches (one compiled shape); the last is filled with all-padding rows, which count nothing."""
    n = len(inputs["input_ids"])
    for start in range(0, n, batch_size):
        batch = {k: v[start:start + batch_size] for k, v in inputs.items()}
        short = batch_size - len(batch["input_ids"])
        if short:
            batch = {k: np.concatenate([v, np.zeros((short, v.shape[1]), v.dtype)]) for k, v in batch.items()}
        yield batch


# ---------------------------------------------------------------------------------------------------------------
# Models


def _random_model(spec: str, seed: int):
    import jax  # noqa: PLC0415  heavy: jax
    import jax.numpy as jnp  # noqa: PLC0415  heavy: jax
    from flax import linen as nn  # noqa: PLC0415  heavy: flax

    from albert_jax.modeling.model import AlbertModel  # noqa: PLC0415  heavy: jax, flax
    from albert_jax.runs.finetune import resolve_init  # noqa: PLC0415  heavy: grain, jax

    like, _, overrides = spec[len(RANDOM_PREFIX):].partition(":")
    if not like:
        raise AnalysisError(f"--init {spec!r}: name the architecture to draw, e.g. random:W or "
                            "random:W:sharing=none (W a workdir or HuggingFace directory)")
    src = resolve_init(like)
    cfg = src.model_cfg.replace(**parse_overrides(overrides)) if overrides else src.model_cfg
    ids = jnp.zeros((1, 8), jnp.int32)
    params = nn.unbox(jax.jit(AlbertModel(cfg, add_pooling_layer=False).init)(jax.random.PRNGKey(seed), ids))
    return src, cfg, jax.device_get(params["params"]), like


def load_model(spec: str, *, step: int | None = None, seed: int = 0, label: str | None = None) -> LoadedModel:
    """A model to analyse: a workdir / HuggingFace directory (via resolve_init), or random:W[:overrides]."""
    from albert_jax.runs.finetune import resolve_init  # noqa: PLC0415  heavy: grain, jax
    from albert_jax.runs.pretrain import read_run_config  # noqa: PLC0415  heavy: jax, optax

    if spec.startswith(RANDOM_PREFIX):
        src, cfg, params, like = _random_model(spec, seed)
        label = label or f"random init, sharing={cfg.sharing} ({Path(like).name}'s shape)"
        run_step = None
    else:
        if spec == "random":
            raise AnalysisError("--init random needs an architecture: random:W or random:W:sharing=none")
        src = resolve_init(spec, step)
        cfg, params = src.model_cfg, src.encoder()
        run_step = src.step
        label = label or f"{Path(spec).name}, sharing={cfg.sharing}" + (f", step {run_step}" if run_step else "")
    if src.tokenizer is None:
        raise AnalysisError(f"{src.path} has no tokenizer (spiece.model or vocab.txt); the text cannot be encoded")
    held_out, max_len = None, None
    if src.kind == "workdir":
        run = read_run_config(src.path)
        data = run.get("experiment", {}).get("data", {})
        max_len = data.get("max_seq_length")
        if data.get("corpus") and str(run.get("task", {"name": "pretrain"}).get("name", "")).startswith("pretrain"):
            from albert_jax.tasks.pretraining.input import corpus_texts  # noqa: PLC0415  heavy: tfds, grain

            held_out = corpus_texts(ml_collections.ConfigDict(data), ("validation",))["validation"]
    max_len = min(int(max_len or 128), cfg.max_position_embeddings)
    return LoadedModel(label, spec, cfg, params, src.tokenizer, run_step, held_out, max_len)


# ---------------------------------------------------------------------------------------------------------------
# The analysis, its files and its table


def analyze_layers(specs: list[str], out_dir, *, text=None, labels: list[str] | None = None,
                   max_seq_length: int | None = None, max_sequences: int = 256, batch_size: int = 32,
                   step: int | None = None, seed: int = 0) -> list[dict]:
    """Figure 1 for each model: writes layers.json, layers.csv and layers.png in out_dir; returns the records."""
    if labels and len(labels) != len(specs):
        raise AnalysisError(f"--label given {len(labels)} time(s) for {len(specs)} --init; give one per --init "
                            "or none")
    if text is not None and not Path(text).is_file():
        raise FileNotFoundError(f"--text {text} does not exist")  # before minutes of loading models
    records = []
    for i, spec in enumerate(specs):
        m = load_model(spec, step=step, seed=seed, label=labels[i] if labels else None)
        source_text = Path(text) if text else m.held_out_text
        if source_text is None:
            raise AnalysisError(f"--init {spec}: not a pretraining run, so it has no held-out text of its own; "
                                "give --text FILE (one sentence per line, a blank line between documents)")
        seq_len = max_seq_length or m.max_seq_length
        if seq_len > m.cfg.max_position_embeddings:
            raise AnalysisError(f"--max-seq-length={seq_len} exceeds {spec}'s max_position_embeddings="
                                f"{m.cfg.max_position_embeddings}")
        inputs = text_inputs(m.tokenizer, source_text, seq_len, max_sequences)
        log.info("%s: %d sequences of %d from %s", m.label, len(inputs["input_ids"]), seq_len, source_text)
        stats = layer_statistics(m.cfg, m.params, batches_of(inputs, batch_size))
        records.append({"label": m.label, "init": spec, "step": m.step, "sharing": m.cfg.sharing,
                        "num_hidden_layers": m.cfg.num_hidden_layers, "hidden_size": m.cfg.hidden_size,
                        "embedding_size": m.cfg.embedding_size, "text": str(source_text), "max_seq_length": seq_len,
                        **stats})
    labels_seen = [r["label"] for r in records]
    for r in records:  # two models with one label would be one line in the legend
        if labels_seen.count(r["label"]) > 1:
            r["label"] = f"{r['label']} [{r['init']}]"
    write_outputs(records, out_dir)
    return records


def write_outputs(records: list[dict], out_dir) -> dict[str, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "layers.json", "csv": out / "layers.csv", "png": out / "layers.png"}
    tmp = paths["json"].with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"definition": __doc__.split("\n\n")[1], "models": records}, indent=1) + "\n")
    os.replace(tmp, paths["json"])
    with open(paths["csv"], "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["model", "layer", *METRICS, "tokens"])
        for r in records:
            for i, layer in enumerate(r["layers"]):
                w.writerow([r["label"], layer, *(f"{r[k][i]:.6g}" for k in METRICS), r["tokens"]])
    layers_figure(records, paths["png"])
    return paths


def _figure(records: list[dict]):
    """(figure, (L2 axes, angle axes)): the paper's two panels, x = layer."""
    from matplotlib.figure import Figure  # noqa: PLC0415  heavy: matplotlib

    fig = Figure(figsize=(10, 4), layout="constrained")
    axes = fig.subplots(1, 2)
    for r in records:
        for ax, key in zip(axes, ("l2", "angle_deg")):
            ax.plot(r["layers"], r[key], marker="o", markersize=3, label=r["label"])
    axes[0].set_ylabel("L2 distance (input vs output)")
    axes[1].set_ylabel("cosine similarity, as an angle (degrees)")
    for ax, title in zip(axes, ("L2 distance", "Cosine similarity (degrees)")):
        ax.set_xlabel("layer")
        ax.set_title(title)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        if records:
            ax.set_xticks(range(1, max(r["num_hidden_layers"] for r in records) + 1))
    axes[1].legend(fontsize="small")
    return fig, axes


def layers_figure(records: list[dict], path) -> Path:
    from albert_jax.ablations.plots import save_png  # noqa: PLC0415  heavy: matplotlib

    fig, _ = _figure(records)
    return save_png(fig, path)


def markdown_table(records: list[dict]) -> str:
    """One row per model and measure, one column per layer."""
    depth = max(r["num_hidden_layers"] for r in records)
    lines = ["| model | measure | " + " | ".join(f"L{i}" for i in range(1, depth + 1)) + " |",
             "|---|---|" + "---:|" * depth]
    names = {"l2": "L2 distance", "cosine": "cosine", "angle_deg": "angle (deg)"}
    for r in records:
        for key in METRICS:
            cells = [f"{v:.3f}" if key == "cosine" else f"{v:.2f}" for v in r[key]]
            cells += [""] * (depth - len(cells))
            lines.append(f"| {r['label']} | {names[key]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
