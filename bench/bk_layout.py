"""Which trial layout gives a BK sweep the most env steps/s on this machine, with BK's PPO
(the conv network, 1,024 env steps per update, evaluation as the task runs it).

    python -m bench.bk_layout              # writes bench/results/bk_layout.{md,json}
    python -m bench.bk_layout --steps 20000   # shorter, for a look

Each layout runs ``ppo`` (BK's, 10 x reward) on ``babyai-gotolocal-redball-s20`` through the
same sweep code ``tune_run.py`` uses, for the same env steps per trial, greedy and sampled
evaluation included (they are part of every trial's cost):

- ``one-trial``: the task file's layout: one trial, its learner in the trial's process
  (1 CPU), 2 env runners x 4 envs (0.5 CPU each): 2 CPUs for one trial.
- ``one-trial-2-threads``: the same with the learner on 2 torch threads (the runners idle
  while synchronous PPO updates).
- ``two-trials``: two trials at once, each sampling in its own process (no env runner,
  8 envs) on 1 CPU: while one updates, the other can sample.

The sweep's rate is the env steps of all its trials over the wall time from the first
trial's start to the last one's end. Run it on a quiet machine: every number is a wall-clock
rate, and the layouts run one after the other in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "bk_layout"
TASK = "babyai-gotolocal-redball-s20"

#: layout -> (seeds run at once, env_runners section, learner threads)
LAYOUTS = {
    "one-trial": ([0], None, None),
    "one-trial-2-threads": ([0], None, 2),
    "two-trials": ([0, 1], {"num_env_runners": 0, "num_envs_per_env_runner": 8}, None),
}


def layout_task(name: str, steps: int):
    from rl_bk.experiments.task_config import load_task

    seeds, runners, threads = LAYOUTS[name]
    task = load_task(TASK)
    update: dict = {
        "seeds": seeds,
        "methods": ["ppo"],
        "sweep": {**task.sweep, "ppo": {"extrinsic_coeff": [10.0]}},
        "stop": task.stop.model_copy(update={"num_env_steps": steps}),
    }
    if runners is not None:
        update["env_runners"] = task.env_runners.model_copy(update=runners)
    if threads is not None:
        update["learner"] = task.learner.model_copy(update={"threads": threads})
    return task.model_copy(update=update)


def run_layout(name: str, steps: int) -> dict:
    import pandas as pd

    from rl_bk.experiments.run import RunOptions, run_experiment

    task = layout_task(name, steps)
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        run_dir = run_experiment(task, RunOptions(output_dir=Path(out)))
        wall = time.perf_counter() - t0
        rows = pd.read_csv(run_dir / "summary.csv")
    trials = int(rows["seeds"].sum())
    total = float((rows["env_steps_mean"] * rows["seeds"]).sum())
    return {
        "trials": trials,
        "env_steps": total,
        "wall_s": wall,
        "sweep_env_steps_per_s": total / wall,
        # each trial's own rate (its env steps over its own running time), mean over trials
        "trial_env_steps_per_s": float(rows["env_steps_per_s_mean"].mean()),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=60_000, help="env steps per trial")
    p.add_argument("--layouts", default=",".join(LAYOUTS))
    args = p.parse_args()
    results = {name: run_layout(name, args.steps) for name in args.layouts.split(",")}
    base = results.get("one-trial", {}).get("sweep_env_steps_per_s")
    lines = [
        "# BK sweep layouts: env steps/s of a whole sweep, BK's PPO on RedBall-S20",
        "",
        f"`python -m bench.bk_layout --steps {args.steps}` ({time.strftime('%Y-%m-%d')}, "
        f"vm, {os.cpu_count()} CPUs). Each layout ran {args.steps:,} "
        "env steps per trial, one layout after the other, evaluation included; wall time "
        "includes each sweep's start (Ray, Tune, the trials' actors).",
        "",
        "| layout | trials at once | sweep env steps/s | x one-trial | each trial's own |",
        "|---|---|---|---|---|",
    ]
    for name, r in results.items():
        ratio = f"{r['sweep_env_steps_per_s'] / base:.2f}" if base else "–"
        per = f"{r['trial_env_steps_per_s']:,.0f}"
        lines.append(
            f"| {name} | {r['trials']} | {r['sweep_env_steps_per_s']:,.0f} | {ratio} | {per} |"
        )
    RESULTS.with_suffix(".md").write_text("\n".join(lines) + "\n")
    RESULTS.with_suffix(".json").write_text(
        json.dumps(
            {"command": f"python -m bench.bk_layout --steps {args.steps}", "results": results},
            indent=2,
        )
    )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
