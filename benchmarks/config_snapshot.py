"""What a refactor of the config code must not change, as one JSON file: run it at two commits and compare.

    PYTHONPATH=. .venv/bin/python benchmarks/config_snapshot.py OUT.json

It holds the resolved experiment configs of 63 arguments (pretraining and fine-tuning, every scale), the resume role
(identity / schedule / free) of every key they flatten to, and the stage fingerprint of every registered
experiment's every stage at every scale (docs/architecture.md, "The redesign changed no behaviour").
"""
import importlib.util
import json
import sys

from albert_jax.ablations import registry
from albert_jax.ablations import sweep
from albert_jax.configs.loader import jsonable
from albert_jax.training import workdir

# The fine-tuning stages' fingerprints hold their source's real path: one fixed path (nothing is written there) makes
# them comparable between two checkouts.
RUNS = "/tmp/config-snapshot-runs"
SCALES = ("smoke", "cpu", "paper")
PRETRAIN_ARGS = [f"scale={s}{x}" for s in SCALES for x in ("", ",lang=zh", ",task=nsp,embed=32",
                 ",lang=zh,zh_masking=jieba", ",preset=albert-large", ",model.remat_policy=full")]
FINETUNE_ARGS = [f"scale={s},task={t}{x}" for s in SCALES
                 for t in ("rt_sentiment", "pd_pos", "squad_v1", "wordnet_lemma_span", "race")
                 for x in ("", ",init=runs/x", ",head=pabee,seeds=2")]
EXTRA_KEYS = ("experiment.data.unknown_field", "model.hidden_size", "model.remat_policy", "data.files", "task.name",
              "init.source", "experiment.distill.teacher", "experiment.distill.temperature", "steps", "versions.jax")


def _load(path):
    spec = importlib.util.spec_from_file_location(path, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _flat(tree, prefix=""):
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _flat(v, f"{prefix}{k}.")
    else:
        yield prefix[:-1]


def snapshot() -> dict:
    out = {"configs": {}, "kinds": {}, "fp": {}}
    for label, module, args in (("P", _load("experiments/pretrain.py"), PRETRAIN_ARGS),
                                ("F", _load("experiments/finetune.py"), FINETUNE_ARGS)):
        for a in args:
            try:
                out["configs"][f"{label}:{a}"] = json.dumps(jsonable(module.get_config(a)))
            except Exception as e:  # an argument the code refuses: the refusal is part of the snapshot
                out["configs"][f"{label}:{a}"] = f"ERR {e}"
    keys = set(EXTRA_KEYS)
    for v in out["configs"].values():
        if not v.startswith("ERR"):
            keys |= {"experiment." + k for k in _flat(json.loads(v))}
    out["kinds"] = {k: workdir.kind_of(k) for k in sorted(keys)}
    for name in sorted(registry.load_registry()):
        for scale in SCALES:
            for p in sweep.plan(registry.get(name), scale, RUNS):
                for st in p.stages:
                    out["fp"][f"{name}/{scale}/{p.row.name}/{st.name}"] = sweep.fingerprint(st)
    return out


if __name__ == "__main__":
    result = snapshot()
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump(result, f, indent=0, sort_keys=True)
    print(len(result["configs"]), "configs,", len(result["kinds"]), "keys,", len(result["fp"]), "fingerprints")
