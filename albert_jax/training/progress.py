"""What the loop reports of each step: throughput, MFU, the progress bar or a plain line, and the metrics row.

`Progress.step(done, metrics, seq)` takes a step's metrics once they are read (one step behind its dispatch: the
loop reads step t-1's while step t runs); it raises NonFiniteLossError when the loss or gradient went NaN/inf, and
writes the row every train.log_every steps.
"""
from __future__ import annotations

import logging
import math

import jax

from albert_jax.training import metrics as mx

log = logging.getLogger("albert_jax.train")  # the loop's logger: its lines keep their name


class NonFiniteLossError(RuntimeError, ValueError):
    """The loss, gradient or state went NaN/inf. A ValueError too, so the CLI prints it as one line: the message
    is the whole story (the step, and which checkpoint a rerun would resume from)."""


def row_from(task, m: dict) -> dict[str, float]:
    row = {"loss": float(m["loss"]), "grad_norm": float(m["grad_norm"]), "param_norm": float(m["param_norm"])}
    for name, (s, c) in task.ratios.items():
        if s in m and c in m:
            row[name] = float(m[s]) / max(float(m[c]), 1e-12)
    return row


class Progress:
    def __init__(self, run, schedule, writer: mx.MetricWriter, clock: mx.RunClock, start: int, last_good):
        self.task, self.model_cfg, self.t = run.task, run.model_cfg, run.config.train
        self.schedule, self.writer, self.clock = schedule, writer, clock
        self.last_good = last_good  # () -> the non-finite error's ending (which checkpoint a rerun resumes from)
        self.peak = mx.peak_flops_per_device(override=self.t.peak_flops or None)
        self.meter = mx.ThroughputMeter()
        self.bar = mx.progress_bar(self.t.num_train_steps, initial=start, desc=f"{self.task.name} seed {self.t.seed}")
        # Without a terminal (nohup, a batch scheduler, `> log`) the bar is off: a plain line per log_every instead.
        self.plain_lines = self.bar.disable and jax.process_index() == 0
        self._flops: dict[int, float] = {}  # per token at each (bucketed) length: the attention term grows with it

    def _flops_per_token(self, seq: int) -> float:
        if seq not in self._flops:
            self._flops[seq] = self.model_cfg.flops_per_token(seq, **self.task.flop_options())
        return self._flops[seq]

    def step(self, done: int, m, seq: int) -> None:
        t = self.t
        m = jax.device_get(m)
        tokens = t.batch_size * seq  # as computed: a bucketed batch is cut to `seq` (data/bucketing.py)
        real = float(m["real_tokens"]) if "real_tokens" in m else None
        new_program = seq not in self._flops
        self.meter.step(tokens, t.batch_size, tokens * self._flops_per_token(seq), real_tokens=real,
                        new_program=new_program)
        self.bar.update(1)
        if not (math.isfinite(float(m["loss"])) and math.isfinite(float(m["grad_norm"]))):
            raise NonFiniteLossError(f"non-finite loss or gradient at step {done} (loss={float(m['loss'])}, "
                                     f"grad_norm={float(m['grad_norm'])}); {self.last_good()}")
        if done % t.log_every == 0 or done == t.num_train_steps:
            self._log(done, m)

    def _log(self, done: int, m) -> None:
        t, task = self.t, self.task
        row = row_from(task, m)
        row["learning_rate"] = float(self.schedule(done - 1))  # the rate this step's update used
        row.update(self.clock.elapsed())
        rates = self.meter.rates()
        if rates:
            row.update(rates)
            per_device = rates.pop("flops_per_second") / jax.device_count()
            row["tflops_per_device"] = per_device / 1e12
            if self.peak:
                row["mfu"] = per_device / self.peak
        self.writer.write(done, row)
        shown = {"loss": f"{row['loss']:.3f}"}
        if task.headline in row:
            shown[task.headline] = f"{row[task.headline]:.3f}"
        self.bar.set_postfix(**shown)
        if self.plain_lines:
            speed = f", {row['tokens_per_second']:.0f} tokens/s" if "tokens_per_second" in row else ""
            log.info("%s seed %d: step %d/%d, %s%s", task.name, t.seed, done, t.num_train_steps,
                        ", ".join(f"{k} {v}" for k, v in shown.items()), speed)

    def close(self) -> None:
        self.bar.close()
