"""Faster PPO updates against learning: do fewer gradient steps per train batch slow learning
per env step on BabyAI-Text, and do they save wall time?

    python -m bench.ppo_batch_settings          # every arm, 3 seeds x 300k env steps (~40 min)
    python -m bench.ppo_batch_settings --arms task,minibatch-512 --seeds 100

``bench/results/env_throughput.md`` finds the learner's update (4 epochs x 8 minibatches of
256 per 2,048 env steps) half of a PPO iteration on 2 CPUs. Each arm is plain PPO on the
GoToLocal-RedBall-S20 task with its batch settings changed and nothing else (the task's greedy
evaluation stays on), on seeds the BK reproduction never uses. The plan is written to
``bench/results/ppo_batch_settings.md`` before anything runs; each arm's numbers are kept as
it finishes, and re-running the same command continues (finished arms are read, an
interrupted one resumes from its trials' checkpoints). Time it alone: the env steps/s and
wall seconds it reports are wall clock.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")

ROOT = Path(__file__).resolve().parents[1]

TASK = "babyai-gotolocal-redball-s20"
RESULTS = ROOT / "bench" / "results" / "ppo_batch_settings"
RUNS = ROOT / "bench" / "runs" / "ppo-batch-settings"
BUDGETS = (100_000, 200_000, 300_000)


@dataclass(frozen=True)
class Arm:
    name: str
    minibatch_size: int
    num_epochs: int
    train_batch_size_per_learner: int = 2048

    @property
    def updates(self) -> int:
        """Gradient steps per train batch."""
        return self.num_epochs * self.train_batch_size_per_learner // self.minibatch_size

    def describe(self) -> str:
        return (
            f"batch {self.train_batch_size_per_learner}, {self.num_epochs} epochs of "
            f"{self.minibatch_size}: {self.updates} gradient steps per batch"
        )


ARMS = [
    Arm("task", 256, 4),  # the task file's setting
    Arm("minibatch-512", 512, 4),
    Arm("epochs-2", 256, 2),
    Arm("minibatch-512-epochs-2", 512, 2),
]


def arm_task(arm: Arm, seeds: list[int]):
    from rl_bk.experiments.task_config import load_task

    task = load_task(TASK)
    ppo = task.ppo.model_copy(
        update={
            "minibatch_size": arm.minibatch_size,
            "num_epochs": arm.num_epochs,
            "train_batch_size_per_learner": arm.train_batch_size_per_learner,
        }
    )
    return task.model_copy(
        update={
            "methods": ["ppo"],
            "seeds": seeds,
            "sweep": {"ppo": {}},
            "budgets": list(BUDGETS),
            "ppo": ppo,
        }
    )


def wall_at(progress, steps: float) -> float:
    """Trial wall seconds at the report where ``steps`` env steps were reached."""
    from rl_bk import metrics as M

    if math.isnan(steps):
        return math.nan
    rows = progress[progress[M.ENV_STEPS] >= steps]
    return float(rows[M.TIME_TOTAL_S].iloc[0]) if len(rows) else math.nan


def arm_numbers(run_dir: Path, steps: int) -> dict[str, list[float]]:
    """Per seed: env steps and wall seconds to 0.9 training success, success at the budgets,
    greedy success at the end, env steps/s over the whole trial."""
    from rl_bk import metrics as M
    from rl_bk.experiments.results import (
        records_from_tune_dir,
        smooth_over_episodes,
        steps_to_reach,
        value_at,
    )

    out: dict[str, list[float]] = {}
    for record in sorted(records_from_tune_dir(run_dir / "tune"), key=lambda r: r.seed):
        p = smooth_over_episodes(record.progress)
        reached = steps_to_reach(p, M.SUCCESS_RATE, 0.9)
        values = {
            "seed": record.seed,
            "train_steps_to_0.9": reached,
            "wall_s_to_0.9": wall_at(p, reached),
            **{f"train@{b // 1000}k": value_at(p, M.SUCCESS_RATE, b) for b in BUDGETS},
            f"eval@{steps // 1000}k": value_at(p, M.EVAL_SUCCESS_RATE, steps),
            "env_steps_per_s": float(p[M.ENV_STEPS].iloc[-1] / p[M.TIME_TOTAL_S].iloc[-1]),
        }
        for key, value in values.items():
            out.setdefault(key, []).append(value)
    return out


def write_report(arms: list[Arm], done: dict[str, dict], facts: dict) -> None:
    from bench.study import mean_sd, steps_per_seed, write_arms

    steps = facts["steps"]
    lines = [
        "# PPO batch settings: fewer gradient steps per batch, against learning",
        "",
        f"`{facts['command']}` (started {facts['date']}, {facts['machine']}). Written by "
        "`bench/ppo_batch_settings.py`; the plan below was fixed before the first run.",
        "",
        "## Plan",
        "",
        f"- Task `{TASK}`, plain PPO with the task's settings (BK's PPO; greedy evaluation of 50 "
        "episodes every 20k env steps) except the batch settings each arm names.",
        f"- Seeds {facts['seeds']} (the BK reproduction uses 0-4), {steps:,} env steps per "
        "trial, one trial at a time and nothing else running (the times are wall clock).",
        "- Metrics per seed: env steps and wall seconds to 0.9 training success (last 100 "
        "episodes, stochastic policy); training success at "
        + ", ".join(f"{b // 1000}k" for b in BUDGETS)
        + f"; greedy success at {steps // 1000}k; env steps/s over the whole trial, "
        "evaluation included.",
        "- A faster arm is worth making the default only if it does not slow learning per env "
        "step beyond the seed spread.",
        "",
        "| arm | setting |",
        "|---|---|",
        *[f"| {a.name} | {a.describe()} |" for a in arms],
        "",
        "## Results",
        "",
    ]
    cols = [
        "train steps to 0.9 (per seed)",
        "wall s to 0.9 (mean)",
        *[f"train @{b // 1000}k" for b in BUDGETS],
        f"eval @{steps // 1000}k",
        "env steps/s",
    ]
    lines += ["| arm | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for a in arms:
        if a.name not in done:
            lines.append(f"| {a.name} | not run yet |" + " |" * (len(cols) - 1))
            continue
        r = done[a.name]
        walls = [w for w in r["wall_s_to_0.9"] if not math.isnan(w)]
        wall = (
            (
                f"{sum(walls) / len(walls):.0f}"
                + ("" if len(walls) == len(r["seed"]) else f" ({len(walls)} seeds)")
            )
            if walls
            else "–"
        )
        cells = [
            steps_per_seed(r["train_steps_to_0.9"]),
            wall,
            *[mean_sd(r[f"train@{b // 1000}k"]) for b in BUDGETS],
            mean_sd(r[f"eval@{steps // 1000}k"]),
            f"{sum(r['env_steps_per_s']) / len(r['env_steps_per_s']):.0f}",
        ]
        lines.append(f"| {a.name} | " + " | ".join(cells) + " |")
    lines += ["", "Run folders: `bench/runs/ppo-batch-settings/<arm>/` (not committed).", ""]
    write_arms(RESULTS, "\n".join(lines), facts, done)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arms", default=None, help="comma-separated arm names (default: all)")
    p.add_argument("--seeds", default="100,101,102")
    p.add_argument("--steps", type=int, default=300_000)
    p.add_argument("--runs", type=Path, default=RUNS, help="where the Tune runs go")
    args = p.parse_args()
    from bench.paired_rounds import run_facts
    from bench.study import continued_arms, run_or_resume, select_arms

    arms = select_arms(args.arms, ARMS)
    seeds = [int(s) for s in args.seeds.split(",")]
    facts = {**run_facts("-m bench.ppo_batch_settings"), "seeds": seeds, "steps": args.steps}
    facts, done = continued_arms(RESULTS.with_suffix(".json"), facts)
    write_report(arms, done, facts)
    for arm in arms:
        if arm.name in done:
            continue
        run_dir = run_or_resume(arm_task(arm, seeds), ["ppo"], args.steps, args.runs / arm.name)
        done[arm.name] = arm_numbers(run_dir, args.steps)
        write_report(arms, done, facts)
        print(f"{arm.name}: done ({run_dir})")
    print(f"wrote {RESULTS.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
