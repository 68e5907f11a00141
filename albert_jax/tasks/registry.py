"""Every downstream task by name: our real sets that install offline, and the TFDS catalog's (online).

Local sets are built from the fetched sources (albert_jax/data, data/README.md); catalog tasks read the TFDS
catalog datasets (glue/*, squad/*, race/*), which need the network once to download and prepare. GLUE's test
labels are hidden, so GLUE and SQuAD report their dev splits (as the paper's ablation tables do).
"""
from __future__ import annotations

from typing import Callable

from albert_jax.configs import schema
from albert_jax.data.labeled_tasks import PD_POS_TAGS
from albert_jax.tasks import from_files
from albert_jax.tasks.classification import ClassificationTask
from albert_jax.tasks.early_exit import with_head
from albert_jax.tasks.multiple_choice import MultipleChoiceTask, from_tfds_race
from albert_jax.tasks.span_qa import SpanTask, from_local_span, from_tfds_squad
from albert_jax.tasks.tagging import TaggingTask


def _pd_pos():
    return TaggingTask("pd_pos", "pd_pos", PD_POS_TAGS, spaced=False)  # Chinese: no spaces between words


def _glue(name, keys, num_labels=2, metrics=("accuracy",), headline="accuracy", row=None, dev=("validation",)):
    return lambda: ClassificationTask(name, f"glue/{name}", keys, num_labels, metrics=metrics, headline=headline,
                                      dev_splits=dev, test_splits=(), table14=row or name, max_seq_length=512)


def _race_expand(r):
    return from_tfds_race(r)


LOCAL: dict[str, Callable] = {
    "rt_sentiment": lambda: ClassificationTask("rt_sentiment", "rt_sentiment", ("sentence",), 2, table14="sst-2"),
    "wordnet_wic": lambda: ClassificationTask("wordnet_wic", "wordnet_wic", ("sentence1", "sentence2"), 2,
                                              table14="rte"),
    "zh_sentiment": lambda: ClassificationTask("zh_sentiment", "zh_sentiment", ("sentence",), 2, table14="sst-2"),
    "hedge": lambda: ClassificationTask("hedge", "hedge", ("sentence",), 2, metrics=("accuracy", "f1"),
                                        table14="cola"),
    "verse_paraphrase": lambda: ClassificationTask("verse_paraphrase", "verse_paraphrase", ("sentence1", "sentence2"),
                                                   2, metrics=("accuracy", "f1"), table14="mrpc"),
    "verse_paraphrase_near": lambda: ClassificationTask("verse_paraphrase_near", "verse_paraphrase_near",
                                                        ("sentence1", "sentence2"), 2, metrics=("accuracy", "f1"),
                                                        table14="mrpc"),
    "pd_pos": _pd_pos,
    "wordnet_lemma_span": lambda: SpanTask("wordnet_lemma_span", "wordnet_lemma_span", adapter=from_local_span,
                                           max_seq_length=128, max_query_length=48),
    "next_sentence_choice": lambda: MultipleChoiceTask("next_sentence_choice", "next_sentence_choice",
                                                       max_seq_length=128, max_qa_length=64),
}

CATALOG: dict[str, Callable] = {
    "cola": _glue("cola", ("sentence",), metrics=("mcc", "accuracy"), headline="mcc"),
    "sst2": _glue("sst2", ("sentence",), row="sst-2"),
    "mrpc": _glue("mrpc", ("sentence1", "sentence2"), metrics=("accuracy", "f1")),
    "qqp": _glue("qqp", ("question1", "question2"), metrics=("accuracy", "f1")),
    "stsb": _glue("stsb", ("sentence1", "sentence2"), num_labels=1, metrics=("pearson", "spearman"),
                  headline="pearson", row="sts-b"),
    "mnli": _glue("mnli", ("premise", "hypothesis"), num_labels=3,
                  dev=("validation_matched", "validation_mismatched")),
    "qnli": _glue("qnli", ("question", "sentence")),
    "rte": _glue("rte", ("sentence1", "sentence2")),
    "wnli": _glue("wnli", ("sentence1", "sentence2")),
    "squad_v1": lambda: SpanTask("squad_v1", "squad/v1.1", adapter=from_tfds_squad, test_splits=(),
                                 table14="squad-v1.1", max_seq_length=384),
    "squad_v2": lambda: SpanTask("squad_v2", "squad/v2.0", version=2, adapter=from_tfds_squad, test_splits=(),
                                 table14="squad-v2.0", max_seq_length=512),
    "race": lambda: MultipleChoiceTask("race", ("race/middle", "race/high"), adapter=_race_expand,
                                       dev_splits=("dev",), test_splits=("test",), max_seq_length=512),
}

TASKS = {**LOCAL, **CATALOG}


def make_task(name: str):
    """A task by name, or from a user's task file (`path/to/task.json`: tasks/from_files.py)."""
    if from_files.is_task_file(name):
        return from_files.task_from_spec(from_files.read_spec(name))
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; local tasks (offline): {', '.join(LOCAL)}; "
                         f"TFDS catalog tasks (need the network once): {', '.join(CATALOG)}")
    return TASKS[name]()


def head_of(task_info: dict) -> str:
    """The head a run's recorded task (config.json's `task` section) was trained with: a wrapped task records its
    own ("pabee"); a task without one has the schema's default head."""
    return task_info.get("head") or schema.FINETUNE_TOP["head"].default


def task_of_run(task_info: dict, model_cfg):
    """The task a run recorded in config.json (its `task` section), with the head it was trained with."""
    # A task from a user's files is rebuilt from the spec it recorded (labels included): its files need not exist.
    task = from_files.task_from_spec(task_info["spec"]) if "spec" in task_info else make_task(task_info["name"])
    return with_head(task, head_of(task_info), model_cfg.num_hidden_layers)


def label_names(task, head: str) -> tuple[list[str] | None, str | None]:
    """id2label names and problem_type: the dataset's class names where it declares them, else LABEL_<i>."""
    from albert_jax.data.builders import class_names  # noqa: PLC0415  heavy: tfds

    if head == "token":
        return list(task.tags), None
    if head != "sequence":
        return None, None  # qa: HF's default of 2 outputs; multiple choice: one score per choice
    if task.num_labels == 1:
        return ["LABEL_0"], "regression"
    names = getattr(task, "label_names", None)  # a task from the user's files: their label names
    source = task.source if isinstance(task.source, str) else None
    if names is None and source:
        names = class_names(source, getattr(task, "label_key", "label"))
    if not names or len(names) != task.num_labels:
        names = [f"LABEL_{i}" for i in range(task.num_labels)]
    return names, "single_label_classification"
