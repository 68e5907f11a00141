"""Evidence directories: the small part of a sweep's runs tree that its table reads, and nothing else.

A runs directory holds checkpoints (megabytes per stage) and is lost with its machine; an evidence directory is
what a table is rebuilt from and what a study continues from elsewhere (kilobytes per stage, committed beside the
table as `evidence/`). It mirrors the runs tree, names included, so `table.collect` reads it through the very
readers it reads a runs directory with (ablations/evidence.py, training/rundir.py, training/examples.py):

    <root>/<experiment>/<scale>/<row-slug>/row.json          the row's state, as the sweep wrote it
      pretrain[-seed-k]/config.json                          as the run wrote it
      pretrain[-seed-k]/metrics.jsonl                        the records that hold an eval/ metric or a step_time,
                                                             with only those keys and `step` (the curves, the final
                                                             evaluation, the step time)
      pretrain[-seed-k]/eval_examples.npz                    per held-out pair: SOP/NSP correct, weight, masked
                                                             tokens correct and counted (np.savez_compressed)
      pretrain[-seed-k]/mlm_majority.json                    the commonest masked target's count and all masked
                                                             targets of the held-out set (the MLM majority baseline,
                                                             otherwise read from the data cache's eval shards)
      pretrain[-seed-k]/final_params/                        only while a later stage still reads this run: its final
                                                             parameters (params.npz, no optimizer state) and its
                                                             tokenizer, from which `restore_params` rebuilds the
                                                             checkpoint that stage starts from
      finetune-<task>[-seed-k|-random]/results.json          the stage's results over its seeds
      finetune-<task>[...]/seed-<s>/results.json             each seed's, as written
      finetune-<task>[...]/seed-<s>/best_dev_examples.npz    the prediction (or score) per dev example
      <every stage>/evidence.json                            what was exported: format, kind, the checkpoint step
                                                             it stood at, and each file's sha256 (`verify`)

A stage's evidence is written to a temporary directory and renamed into place, so a stage directory that exists
is whole. The sweep (`--evidence`) counts a stage whose evidence says it finished as done (sweep.stage_done reads
both trees by one rule) and exports each stage as it finishes; `albert-jax table --runs R --export-evidence E`
exports a runs tree as it stands, finished or not, so its table rebuilds byte for byte.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np

from albert_jax.ablations import evidence
from albert_jax.data.fetch import default_cache_dir
from albert_jax.training import examples, rundir

EVIDENCE = "evidence"  # the directory beside a committed table.md
MARKER = "evidence.json"
FORMAT = 1
PARAMS = "final_params"  # the archived final parameters of a pretraining stage a later stage still reads
PARAMS_FILE = "params.npz"
TOKENIZER_FILES = ("spiece.model", "spiece.json", "vocab.txt", "tokenizer_config.json")  # what load_tokenizer reads
# Per held-out pair, what evidence.intrinsic_samples reads (the labels it does not).
PRETRAIN_FIELDS = ("sentence_correct", "weight", "mlm_correct", "mlm_count")


class EvidenceError(ValueError):
    """An evidence directory that cannot be read or written; the message names the file."""


def stage_kind(name: str) -> str | None:
    """pretrain | finetune from a row's stage directory name (sweep.plan names them), None for anything else."""
    if name == "pretrain" or name.startswith("pretrain-seed-"):
        return "pretrain"
    return "finetune" if name.startswith("finetune-") else None


def marker(stage_dir: Path) -> dict | None:
    """The stage's evidence.json, or None when the directory is not an exported stage."""
    return rundir.read_json(Path(stage_dir) / MARKER)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _metric_records(workdir: Path) -> list[dict]:
    """metrics.jsonl reduced to what the table and its plots read: eval/ metrics and step times, with their step."""
    path = workdir / rundir.METRICS
    out = []
    for r in rundir.read_metrics(path) if path.is_file() else []:
        kept = {k: v for k, v in r.items() if k.startswith("eval/") or k == "step_time"}
        if kept:
            out.append({"step": r.get("step"), **kept})
    return out


def _examples(src: Path, dst: Path, fields: tuple[str, ...] | None) -> None:
    kept = examples.load_examples(src)
    if kept is not None:
        examples.save_examples(str(dst), {name: {k: v for k, v in f.items() if fields is None or k in fields}
                                          for name, f in kept.items()})


# This machine's roots in the JSON an evidence directory keeps (config.json, results.json, row.json): written as these
# placeholders, so committed evidence names no machine's paths and rows exported on different machines still pair by
# their held-out set (table.collect compares eval_shards as strings); `restore_params` puts the local roots back.
CACHE_ROOT, RUNS_ROOT = "${ALBERT_JAX_CACHE}", "${RUNS}"


def _roots(runs: Path) -> list[tuple[str, str]]:
    return [(str(Path(default_cache_dir()).absolute()), CACHE_ROOT), (str(Path(runs).absolute()), RUNS_ROOT)]


def _swap(obj, pairs: list[tuple[str, str]]):
    if isinstance(obj, dict):
        return {k: _swap(v, pairs) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_swap(v, pairs) for v in obj]
    if isinstance(obj, str):  # a path, or a command line that holds some
        for old, new in pairs:
            obj = new if obj == old else obj.replace(old.rstrip("/") + "/", new + "/")
    return obj


def portable(data, runs: Path):
    """JSON-like data with this machine's cache and runs roots replaced by their placeholders."""
    return _swap(data, _roots(runs))


def portable_json(src: Path, dst: Path, runs: Path) -> None:
    """Copy a JSON file with this machine's cache and runs roots replaced by their placeholders."""
    if src.is_file():
        dst.parent.mkdir(parents=True, exist_ok=True)
        data = portable(json.loads(src.read_text(encoding="utf-8")), runs)
        dst.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def local_json(src: Path, dst: Path, runs: Path) -> None:
    """The inverse of `portable_json`: the placeholders replaced by this machine's roots."""
    if src.is_file():
        dst.parent.mkdir(parents=True, exist_ok=True)
        data = _swap(json.loads(src.read_text(encoding="utf-8")), [(new, old) for old, new in _roots(runs)])
        dst.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def _copy(src: Path, dst: Path) -> None:
    if src.is_file():
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)


def export_stage(kind: str, workdir: Path, dest: Path) -> Path:
    """The evidence of one stage's workdir (finished or not) written to `dest`, replacing what was there (a
    pretraining stage's archived parameters go with it: `keep_params` decides again)."""
    workdir, dest = Path(workdir), Path(dest)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    step = None
    if kind == "pretrain":
        portable_json(workdir / rundir.CONFIG, tmp / rundir.CONFIG, workdir.absolute().parents[3])
        records = _metric_records(workdir)
        if records:
            (tmp / rundir.METRICS).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        _examples(workdir / examples.EXAMPLES_FILE, tmp / examples.EXAMPLES_FILE, PRETRAIN_FIELDS)
        counts = evidence.mlm_target_counts(workdir)
        if counts is not None:
            (tmp / evidence.MLM_MAJORITY_FILE).write_text(
                json.dumps({"commonest": counts[0], "masked": counts[1]}) + "\n", encoding="utf-8")
        step = rundir.latest_step(workdir / rundir.CHECKPOINTS)
    else:
        runs = workdir.absolute().parents[3]
        portable_json(workdir / rundir.RESULTS, tmp / rundir.RESULTS, runs)
        for seed_dir in rundir.seed_dirs(workdir).values():
            if (seed_dir / rundir.RESULTS).is_file():
                portable_json(seed_dir / rundir.RESULTS, tmp / seed_dir.name / rundir.RESULTS, runs)
                _examples(seed_dir / examples.BEST_EXAMPLES_FILE, tmp / seed_dir.name / examples.BEST_EXAMPLES_FILE,
                          None)
    files = {p.relative_to(tmp).as_posix(): _sha256(p) for p in sorted(tmp.rglob("*")) if p.is_file()}
    (tmp / MARKER).write_text(json.dumps({"format": FORMAT, "kind": kind, "step": step, "files": files}, indent=1)
                              + "\n", encoding="utf-8")
    old = dest.with_name(dest.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if dest.exists():
        os.replace(dest, old)
    os.replace(tmp, dest)
    shutil.rmtree(old, ignore_errors=True)
    return dest


def export_row(row_dir: Path, dest: Path) -> list[Path]:
    """Every stage of a row's directory (and its row.json) into `dest`; the stage directories written."""
    dest.mkdir(parents=True, exist_ok=True)
    portable_json(Path(row_dir) / "row.json", dest / "row.json", Path(row_dir).absolute().parents[2])
    out = []
    for d in sorted(Path(row_dir).iterdir()):
        kind = stage_kind(d.name)
        if kind and d.is_dir():
            out.append(export_stage(kind, d, dest / d.name))
    return out


def verify(root: Path) -> int:
    """Every exported stage under `root` checked against its evidence.json; the number of stages. A missing or
    altered file raises EvidenceError naming it (and what to do)."""
    n = 0
    for mark in sorted(Path(root).rglob(MARKER)):
        record = rundir.read_json(mark)
        if not record or record.get("format") != FORMAT:
            raise EvidenceError(f"{mark}: not an evidence record of format {FORMAT}; export the stage again "
                                "(albert-jax table ... --runs RUNS --export-evidence DIR)")
        for name, digest in record.get("files", {}).items():
            path = mark.parent / name
            if not path.is_file():
                raise EvidenceError(f"{path}: missing (listed in {mark}); restore it from version control or "
                                    "export the stage again")
            if _sha256(path) != digest:
                raise EvidenceError(f"{path}: its contents differ from what {mark} records (damaged or edited); "
                                    "restore it from version control or export the stage again")
        n += 1
    return n


def experiment_of(root: Path) -> tuple[str, str]:
    """(experiment, scale) of an evidence directory that holds one table's (a committed `evidence/`: its layout
    says which table it rebuilds, so nothing beside it repeats that)."""
    found = [(d.parent.name, d.name) for d in sorted(Path(root).glob("*/*")) if d.is_dir()]
    if len(found) != 1:
        raise EvidenceError(f"{root}: expected one <experiment>/<scale>/ directory, found "
                            f"{', '.join('/'.join(f) for f in found) or 'none'}")
    return found[0]


# ------------------------------------------------------------------ final parameters, for a later stage
def has_params(stage_dir: Path) -> bool:
    return (Path(stage_dir) / PARAMS / PARAMS_FILE).is_file()


def archive_params(workdir: Path, dest: Path) -> Path:
    """A pretraining run's final parameters (no optimizer state) and tokenizer, into `dest`/final_params/."""
    from flax import traverse_util  # noqa: PLC0415  heavy: flax
    import jax  # noqa: PLC0415  heavy: jax

    from albert_jax.runs.pretrain import params_from_workdir  # noqa: PLC0415  heavy: jax, orbax

    _, _, params = params_from_workdir(str(workdir))
    flat = traverse_util.flatten_dict(jax.device_get(params), sep="/")
    tmp = Path(dest) / (PARAMS + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in TOKENIZER_FILES:
        _copy(Path(workdir) / name, tmp / name)
    _without_training_paths(tmp / "spiece.model")
    np.savez_compressed(tmp / PARAMS_FILE, **{k: np.asarray(v) for k, v in flat.items()})
    shutil.rmtree(Path(dest) / PARAMS, ignore_errors=True)
    os.replace(tmp, Path(dest) / PARAMS)
    return Path(dest) / PARAMS


def _without_training_paths(model: Path) -> None:
    """A SentencePiece model records where it was trained (trainer_spec.input, model_prefix: this machine's
    paths); committed evidence keeps neither. Encoding reads the pieces and normalizer, not these, so the
    tokenizer is the same (the fine-tuning stage that restores it reads it through its init workdir)."""
    if not model.is_file():
        return
    from sentencepiece import sentencepiece_model_pb2  # noqa: PLC0415  heavy: protobuf

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model.read_bytes())
    proto.trainer_spec.ClearField("input")
    proto.trainer_spec.ClearField("model_prefix")
    model.write_bytes(proto.SerializeToString())


def drop_params(stage_dir: Path) -> None:
    shutil.rmtree(Path(stage_dir) / PARAMS, ignore_errors=True)


def restore_params(stage_dir: Path, workdir: Path) -> int:
    """Rebuild a finished pretraining run's workdir from its evidence and archived parameters: config.json, the
    tokenizer and one checkpoint at its final step holding the parameters, which is what a fine-tuning stage
    (or a warm start) reads of it. The step restored."""
    import orbax.checkpoint as ocp  # noqa: PLC0415  heavy: orbax
    from flax import traverse_util  # noqa: PLC0415  heavy: flax

    from albert_jax.training.checkpoints import write_manifest  # noqa: PLC0415  heavy: orbax

    stage_dir, workdir = Path(stage_dir), Path(workdir)
    step = (marker(stage_dir) or {}).get("step")
    path = stage_dir / PARAMS / PARAMS_FILE
    try:
        with np.load(path) as z:
            params = traverse_util.unflatten_dict({k: z[k] for k in z.files}, sep="/")
    except (OSError, ValueError) as e:
        raise EvidenceError(f"{path}: not a readable parameter archive ({e})") from None
    workdir.mkdir(parents=True, exist_ok=True)
    local_json(stage_dir / rundir.CONFIG, workdir / rundir.CONFIG, workdir.absolute().parents[3])
    for name in TOKENIZER_FILES:
        _copy(stage_dir / PARAMS / name, workdir / name)
    checkpoints = (workdir / rundir.CHECKPOINTS).absolute()
    mgr = ocp.CheckpointManager(str(checkpoints), item_names=("state",))
    mgr.save(step, args=ocp.args.Composite(state=ocp.args.StandardSave({"params": params})), force=True)
    mgr.wait_until_finished()
    mgr.close()
    write_manifest(str(checkpoints / str(step)))
    return step
