"""The paper's fine-tuning protocol: Table 14 (reference/albert.md §1.15), the one owner of these numbers.

Each row: learning rate, batch size, ALBERT dropout, classifier dropout, training steps, warmup steps, max
sequence length. The official run_glue.sh / run_squad / run_race scripts use exactly these with AdamW. Our own
downstream sets use the row of their nearest GLUE analogue (`DownstreamTask.table14`); `ner` is not in Table 14:
it is BERT's token-tagging recipe (5e-5, batch 32, dropout 0.1, about 3 epochs), for pd_pos.
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Protocol:
    learning_rate: float
    batch_size: int
    albert_dropout: float
    classifier_dropout: float
    num_train_steps: int
    warmup_steps: int
    max_seq_length: int


TABLE14 = {
    "cola": Protocol(1e-5, 16, 0.0, 0.1, 5336, 320, 512),
    "sts-b": Protocol(2e-5, 16, 0.0, 0.1, 3598, 214, 512),
    "sst-2": Protocol(1e-5, 32, 0.0, 0.1, 20935, 1256, 512),
    "mnli": Protocol(3e-5, 128, 0.0, 0.1, 10000, 1000, 512),
    "qnli": Protocol(1e-5, 32, 0.0, 0.1, 33112, 1986, 512),
    "qqp": Protocol(5e-5, 128, 0.1, 0.1, 14000, 1000, 512),
    "rte": Protocol(3e-5, 32, 0.1, 0.1, 800, 200, 512),
    "mrpc": Protocol(2e-5, 32, 0.0, 0.1, 800, 200, 512),
    "wnli": Protocol(2e-5, 16, 0.1, 0.1, 2000, 250, 512),
    "squad-v1.1": Protocol(5e-5, 48, 0.0, 0.1, 3649, 365, 384),
    "squad-v2.0": Protocol(3e-5, 48, 0.0, 0.1, 8144, 814, 512),
    "race": Protocol(2e-5, 32, 0.1, 0.1, 12000, 1000, 512),
}
NOT_TABLE14 = {"ner": Protocol(5e-5, 32, 0.1, 0.1, 3400, 340, 128)}


def protocol(row: str) -> Protocol:
    key = row.lower()
    table = {**TABLE14, **NOT_TABLE14}
    if key not in table:
        raise ValueError(f"no Table 14 row {row!r}; allowed: {', '.join(table)}")
    return table[key]
