"""A task's methods side by side at a fixed env-step budget: ELLM, ONI, PTGM and GLAM sweeps.

    python -m bench.method_comparison --task crafter-text-ellm --steps 100000 --seeds 0,1
    python -m bench.method_comparison --task nethack-score --steps 100000 --seeds 0,1
    python -m bench.method_comparison --task crafter-text-ptgm --steps 50000 --seeds 0,1,2
    python -m bench.method_comparison --task babyai-gotoredball-glam --steps 256 --seeds 0
    python -m bench.method_comparison --task crafter-text-ellm --resume bench/runs/<task>/<run>
    python -m bench.method_comparison --task nethack-score --methods oni-classification \
        --set oni.reward_model_steps=32 --name steps32   # -> nethack-score-comparison-steps32

One Tune sweep of the task's methods (its own grid: e.g. ``ellm`` once per labeler backend),
the same seeds and budget for every variant, run by ``rl_bk.experiments.run`` as
``tune_run.py`` runs it (knowledge such as Motif's model is built first if missing). Writes
``bench/results/<task>-comparison.{md,json,png}``: the run's results table (the task's main
metric and the env return, mean ± std over seeds, at the budgets and at the end; Crafter also
gets the Crafter score) and its learning curves. Variants labelled by the oracle backend carry
``(ORACLE)`` in the table: rules, not an LLM.

``--ellm-label-timeout`` bounds how long a train batch of ``ellm`` waits for its suggestions
(the embedded SmolLM2 takes a second or two per caption on 2 cores; 0 = the task's setting).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", required=True)
    p.add_argument("--steps", type=int, default=100_000, help="env steps per trial")
    p.add_argument("--seeds", default="0,1")
    p.add_argument("--methods", default=None, help="comma-separated (default: the task's)")
    p.add_argument("--ellm-label-timeout", type=float, default=0.0)
    p.add_argument("--output-dir", type=Path, default=ROOT / "bench" / "runs")
    p.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    p.add_argument("--resume", type=Path, help="finish an interrupted run (its own settings)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override one setting of a task section (YAML value), e.g. "
        "oni.reward_model_steps=32; repeatable",
    )
    p.add_argument("--name", default="", help="suffix of the results files' name")
    args = p.parse_args()

    from bench.paired_rounds import run_facts
    from rl_bk.experiments.run import RunOptions, resume_experiment, run_experiment
    from rl_bk.experiments.task_config import load_task

    task = load_task(args.task)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    budgets = [b for b in (args.steps // 4, args.steps // 2, args.steps) if b]
    update: dict = {"seeds": seeds, "budgets": budgets}
    if args.ellm_label_timeout > 0:
        update["ellm"] = task.ellm.model_copy(update={"label_timeout_s": args.ellm_label_timeout})
    for item in args.set:
        section, value = _section_override(task, item)
        # on top of any earlier change to the section (another --set, --ellm-label-timeout)
        update[section] = update.get(section, getattr(task, section)).model_copy(update=value)
    task = task.model_copy(update=update)
    methods = args.methods.split(",") if args.methods else None
    started = time.time()
    if args.resume:  # errored or unfinished trials run again; finished ones are kept
        run_dir = resume_experiment(args.resume, RunOptions())
    else:
        run_dir = run_experiment(
            task, RunOptions(methods=methods, stop_timesteps=args.steps, output_dir=args.output_dir)
        )
    facts = {
        **run_facts("-m bench.method_comparison"),
        "task": args.task,
        "steps": args.steps,
        "seeds": seeds,
        "minutes": round((time.time() - started) / 60, 1),
        "run_dir": str(run_dir.relative_to(ROOT) if run_dir.is_relative_to(ROOT) else run_dir),
    }
    summary = (run_dir / "summary.md").read_text()
    args.results.mkdir(parents=True, exist_ok=True)
    name = f"{args.task}-comparison" + (f"-{args.name}" if args.name else "")
    shutil.copy(run_dir / "learning_curves.png", args.results / f"{name}.png")
    (args.results / f"{name}.json").write_text(
        json.dumps({**facts, "summary_csv": (run_dir / "summary.csv").read_text()}, indent=2)
    )
    (args.results / f"{name}.md").write_text(
        f"# {args.task}: methods at {args.steps:,} env steps\n\n`{facts['command']}` "
        f"({facts['date']}, {facts['machine']}, {facts['minutes']} min); seeds {seeds}; "
        f"curves: `{name}.png`; the run: `{facts['run_dir']}`.\n\n" + summary.split("\n", 1)[1]
    )
    print(summary)
    return 0


def _section_override(task, item: str) -> tuple[str, dict]:
    """``"oni.reward_model_steps=32"`` -> ("oni", {"reward_model_steps": 32}), checked."""
    import pydantic
    import yaml

    path, sep, raw = item.partition("=")
    section, dot, key = path.partition(".")
    if not sep or not dot:
        raise SystemExit(f"--set wants SECTION.KEY=VALUE, got {item!r}")
    block = getattr(task, section, None)
    if not isinstance(block, pydantic.BaseModel) or key not in type(block).model_fields:
        raise SystemExit(f"--set {item!r}: the task has no setting {section}.{key}")
    value = yaml.safe_load(raw)
    try:
        type(block).model_validate({**block.model_dump(), key: value})
    except pydantic.ValidationError as err:
        raise SystemExit(f"--set {item!r}: {err}") from None
    return section, {key: value}


if __name__ == "__main__":
    sys.exit(main())
