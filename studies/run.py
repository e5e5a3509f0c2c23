"""Runs a study's plan, one trial at a time, or rewrites its report from what ran.

    nohup python -m studies.run qwen-bk > qwen-bk.log 2>&1 &      # hours: resumable
    python -m studies.run qwen-oni --only oni-none                # those methods' trials now
    python -m studies.run crafter-ellm-reward-free --report-only  # the tables from what ran
    python -m studies.run --list

The plan is ``studies/plans/<study>.yaml`` (:mod:`studies.plan`); it goes into
``studies/results/<study>.md`` before the first trial, and the report is rewritten after every
trial (:mod:`studies.report`). Each finished trial's numbers and curves are kept in
``studies/results/<study>.json``, which is committed, so a study that spans sessions and
machines loses at most the trial it was running: re-running the command continues (an
interrupted trial resumes from its checkpoints when its run folder, under ``studies/runs/``,
is still there, and starts again when not).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

# One thread per trial process: the trials' own layout decides how the CPUs are used.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")

from studies.plan import load_plan, plan_names
from studies.report import write_report
from studies.trials import (
    finished_trial,
    is_done,
    plan_trials,
    run_or_resume,
    run_order,
)

HERE = Path(__file__).resolve().parent
RESULTS, RUNS = HERE / "results", HERE / "runs"


def run_facts(study: str) -> dict[str, str]:
    """The command that runs the plan, the machine and the date, for the report."""
    return {
        "command": f"python -m studies.run {study}",
        "machine": f"{platform.node()} {os.cpu_count()} CPUs",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("study", nargs="?", help="a plan in studies/plans/ (--list shows them)")
    p.add_argument("--methods", default=None, help="comma-separated: these methods' trials first")
    p.add_argument(
        "--only",
        default=None,
        help="comma-separated: run only these methods' trials now (e.g. while another "
        "method's knowledge is still being built); the plan is unchanged",
    )
    p.add_argument(
        "--smoke",
        action="store_true",
        help="the task files' smoke settings (a check that it runs; use with --out, never "
        "for the results of record)",
    )
    p.add_argument("--report-only", action="store_true", help="rewrite the report and stop")
    p.add_argument(
        "--out", type=Path, default=None, help="results and runs under this folder instead"
    )
    p.add_argument("--list", action="store_true", help="the studies and their parts")
    args = p.parse_args(argv)
    if args.list or args.study is None:
        for name in plan_names():
            parts = load_plan(name).parts
            print(f"{name}: " + ", ".join(f"{part.name} ({part.task})" for part in parts))
        return 0
    plan = load_plan(args.study)
    results, runs = (args.out / "results", args.out / "runs") if args.out else (RESULTS, RUNS)
    results.mkdir(parents=True, exist_ok=True)
    facts, finished = run_facts(plan.name), {}
    stored = results / f"{plan.name}.json"
    if stored.is_file():  # a continued study keeps its start and its finished trials
        old = json.loads(stored.read_text())
        facts = {k: old[k] for k in ("command", "machine", "date") if k in old} or facts
        finished = old.get("finished", {})
    write_report(plan, facts, finished, results, args.smoke)
    if args.report_only:
        return 0
    first = args.methods.split(",") if args.methods else []
    only = set(args.only.split(",")) if args.only else None
    for part_id, method, task in run_order(plan_trials(plan, args.smoke), first, plan.seed_major):
        if is_done(part_id, finished) or (only is not None and method not in only):
            continue
        run_dir = run_or_resume(task, [method], runs / plan.name / part_id)
        finished[part_id] = finished_trial(task, run_dir, plan)
        write_report(plan, facts, finished, results, args.smoke)
        print(f"[study] {plan.name} {part_id} done: {run_dir}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
