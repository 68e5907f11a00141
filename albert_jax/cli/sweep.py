"""`albert-jax sweep NAME --scale S --runs DIR`: every row of an experiment, resumable (ablations/sweep.py)."""
from __future__ import annotations

import argparse
from pathlib import Path

from albert_jax.cli.common import INTERRUPTED, setup_logging, stopped_status
from albert_jax.cli.plan import prepare_compile_only


def _run(args) -> int:
    from albert_jax.ablations import registry, sweep  # noqa: PLC0415  CLI start

    setup_logging(args.log_level)
    tasks = [t for t in (args.tasks or "").split(",") if t]
    exp = registry.get(args.name, args.experiments_dir).with_tasks(tasks)
    rows = [r for r in (args.rows or "").split(",") if r] or None
    plans = sweep.plan(exp, args.scale, Path(args.runs), args.set, rows, args.experiments_dir, args.seeds,
                       args.random_init, Path(args.evidence) if args.evidence else None)
    groups = sweep.chains(plans)
    if args.plan:
        from albert_jax.ablations import sweep_plan  # noqa: PLC0415  CLI start: the planner's modules
        from albert_jax.plan import targets  # noqa: PLC0415  CLI start: the planner's modules

        prepare_compile_only()
        planned = sweep_plan.plan_rows(plans, targets.resolve(args.plan))
        print(sweep_plan.render_plan(planned, args.plan, exp.speed_reference), flush=True)
        bad = sweep_plan.refused(planned)
        if args.launcher in ("local", "print"):
            return 1 if bad else 0  # a plan only: nothing runs
        if bad:
            raise sweep.SweepError(f"--plan {args.plan}: not submitted, these rows do not fit or did not compile: "
                                   f"{', '.join(bad)} (set model.remat_policy, the mesh or the batch per row)")
    if args.jobs is not None and args.launcher != "local":
        raise sweep.SweepError(f"--jobs is the local launcher's; --launcher {args.launcher} runs one job per chain")
    if args.launcher == "print":
        for line in sweep.launch_commands(exp, args.scale, args.runs, groups, args.set, args.seeds, args.random_init,
                                          tasks, args.evidence):
            print(line)
        return 0
    sweep.check(plans)
    if args.link_evidence:
        from albert_jax.ablations import evidence_link  # noqa: PLC0415  CLI start

        evidence_link.link(plans, [Path(d) for d in args.link_evidence], Path(args.runs), args.set, args.seeds,
                           tasks, args.random_init)
    done = sum(all(s.done() for s in p.stages) for p in plans)
    print(f"{exp.name} at scale {args.scale}: {len(plans)} rows ({done} already finished) in "
          f"{Path(args.runs) / exp.name / args.scale}", flush=True)
    if args.launcher == "local":
        if args.jobs is None:
            stopped = sweep.run_rows(plans, reuse_stages=not args.no_reuse)
        else:
            from albert_jax.ablations.parallel import run_parallel  # noqa: PLC0415  CLI start

            stopped = run_parallel(plans, args.jobs, reuse_stages=not args.no_reuse,
                                   log_level="DEBUG" if args.log_level.upper() == "DEBUG" else "INFO")
        if stopped is not None:
            return stopped_status(stopped)  # the stage checkpointed; the same command continues
    else:
        resources = dict(sweep.SLURM_RESOURCES[args.scale])
        for key in ("timeout_min", "nodes", "gpus_per_node", "cpus_per_task"):
            if getattr(args, key) is not None:
                resources[key] = getattr(args, key)
        if args.partition:
            resources["slurm_partition"] = args.partition
        exp_dir = Path(args.experiments_dir) if args.experiments_dir else registry.experiments_dir()
        results = sweep.submit(exp, args.scale, args.runs, groups, args.set, args.launcher, resources, exp_dir,
                               wait=not args.no_wait, reuse_stages=not args.no_reuse, seeds=args.seeds,
                               random_init=args.random_init, tasks=tasks, evidence=args.evidence)
        if not args.no_wait and not all(r.get("finished") for r in results):
            return INTERRUPTED
    if args.table and args.launcher == "local" or (args.table and not args.no_wait):
        from albert_jax.ablations import table  # noqa: PLC0415  CLI start

        text, files = table.build(exp, args.scale, args.evidence or args.runs)  # the evidence holds every row
        print("\n" + text)
        print("wrote " + ", ".join(str(f) for f in files))
    return 0


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("sweep", help="run every row of an experiment end to end (resumable)")
    p.add_argument("name", help="an experiment (`albert-jax experiments list`)")
    p.add_argument("--scale", default="cpu",
                   help="smoke (seconds per row), cpu (minutes per row) or paper (default: cpu)")
    p.add_argument("--runs", required=True, help="directory for the rows' workdirs (RUNS/<name>/<scale>/<row>/)")
    p.add_argument("--rows", help="comma list of row names or slugs (default: every row)")
    p.add_argument("--tasks", help="comma list of downstream tasks to fine-tune every row on besides the "
                   "experiment's own (e.g. verse_paraphrase,wordnet_lemma_span); the table shows them, and its "
                   "headline averages the tasks that respond to pretraining")
    p.add_argument("--set", action="append", metavar="STAGE.KEY=VALUE",
                   help="a setting for every row's stage, e.g. pretrain.train.num_train_steps=600, "
                        "finetune.num_seeds=1")
    p.add_argument("--launcher", default="local", choices=("local", "slurm", "submitit-local", "print"),
                   help="local: rows in this process; slurm: one submitit job per row (chain); submitit-local: "
                   "the same through submitit's local executor; print: one launch command per row (default: local)")
    p.add_argument("--jobs", type=int, metavar="N", help="local: run the stages as N processes at a time, each as "
                   "soon as the stage it reads has finished, its output in <stage workdir>.log (default: the rows "
                   "in this process, one stage after another)")
    p.add_argument("--seeds", type=int, default=1, help="pretraining seeds per row (train.seed 0..N-1), each "
                   "fine-tuned like the first; rerun with a larger N to add seeds (default 1)")
    p.add_argument("--random-init", dest="random_init", action=argparse.BooleanOptionalAction, default=None,
                   help="also fine-tune each row's architecture from random init, the table's baseline row "
                   "(default: on at the cpu and paper scales, off at smoke)")
    p.add_argument("--evidence", metavar="DIR", help="an evidence directory (docs/experiments.md): a stage whose "
                   "evidence is there counts as done, even with no run of it under --runs; each stage's evidence is "
                   "written there as it finishes; --table is built from it")
    p.add_argument("--link-evidence", dest="link_evidence", action="append", metavar="DIR",
                   help="another study's evidence directory (repeatable): a stage identical to one it finished is "
                        "copied into --evidence instead of run (a claim whose rows a table already trained, on a "
                        "machine without that table's runs; ablations/evidence_link.py)")
    p.add_argument("--table", action="store_true", help="print the table (and write CSV and plots) at the end")
    p.add_argument("--no-reuse", action="store_true",
                   help="train every stage here even when a finished stage under --runs has identical settings "
                   "(by default the sweep links to it)")
    p.add_argument("--plan", metavar="TARGET", help="compile every row's pretraining step for TARGET first "
                   "(tpu:v3:16x16, gpu:h100x8; `albert-jax plan`) and print memory, fit, predicted step time and "
                   "chip-hours; alone it runs nothing (exit 1 if a row does not fit); with --launcher slurm or "
                   "submitit-local, rows that cannot fit are refused before anything is submitted")
    p.add_argument("--no-wait", action="store_true", help="slurm: return once the jobs are submitted")
    p.add_argument("--partition", help="slurm partition")
    p.add_argument("--timeout-min", dest="timeout_min", type=int, help="per job (default by scale)")
    p.add_argument("--nodes", type=int, help="hosts per job (a multi-host row)")
    p.add_argument("--gpus-per-node", dest="gpus_per_node", type=int,
                   help="slurm: GPUs per host (default by scale: 0, 0, 8)")
    p.add_argument("--cpus-per-task", dest="cpus_per_task", type=int, help="slurm: CPUs per task (default by scale: "
                   "2, 4, 16)")
    p.add_argument("--experiments-dir", default=None, help="where the experiment files are (default: experiments/)")
    p.add_argument("--log-level", default="WARNING",
                   help="DEBUG, INFO, WARNING or ERROR for albert_jax's messages (default: WARNING)")
    p.set_defaults(func=_run)
