"""Greedy evaluation's cost, lockstep against RLlib's sequential evaluation, side by side.

    python bench/evaluation_speed.py     # writes bench/results/evaluation_speed.{md,json}

The BK task's evaluation (50 greedy episodes, ``babyai-gotolocal-redball-s20``) on a PPO
policy after a few training iterations, timed with ``Algorithm.evaluate()``: once with every
episode on an env of its own in lockstep (the default), once with RLlib's evaluation on one
env, episode after episode (``evaluation.lockstep: false``), alternating in paired rounds so
that load on this shared machine hits both alike. Reported: seconds per evaluation and per
evaluation env step (episodes differ in length, so per step is the fair ratio), and the
training iteration's seconds beside them, for scale.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]

TASK = "babyai-gotolocal-redball-s20"


def _algo(lockstep: bool, train_iterations: int):
    from rl_bk.experiments.task_config import load_task
    from rl_bk.methods.registry import get_method

    task = load_task(TASK)
    evaluation = task.evaluation.model_copy(update={"lockstep": lockstep})
    task = task.model_copy(update={"evaluation": evaluation})
    config = get_method("ppo").build(task, 0, {})
    config.evaluation(evaluation_interval=10_000)  # evaluate only when asked
    algo = config.build_algo()
    train_s = []
    for _ in range(train_iterations):
        t0 = time.perf_counter()
        algo.train()
        train_s.append(time.perf_counter() - t0)
    return algo, statistics.median(train_s)


def _timed_evaluation(algo) -> tuple[float, float]:
    t0 = time.perf_counter()
    result = algo.evaluate()
    return time.perf_counter() - t0, float(result["env_runners"]["num_env_steps_sampled"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument(
        "--train-iterations",
        type=int,
        default=5,
        help="PPO iterations before evaluating (both policies train the same)",
    )
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args(argv)

    import ray

    import env_registry

    ray.init(
        address="local", num_cpus=os.cpu_count(), include_dashboard=False, logging_level="ERROR"
    )
    env_registry.register_all()
    modes = {"lockstep": True, "sequential (RLlib, one env)": False}
    algos, train_s = {}, {}
    try:
        for name, lockstep in modes.items():
            algos[name], train_s[name] = _algo(lockstep, args.train_iterations)
        rounds: list[dict] = []
        for i in range(args.rounds):
            order = list(modes) if i % 2 == 0 else list(reversed(modes))
            rounds.append({name: _timed_evaluation(algos[name]) for name in order})
    finally:
        for algo in algos.values():
            algo.stop()
        ray.shutdown()

    per_step = {n: [r[n][0] / r[n][1] for r in rounds] for n in modes}
    ratios = [
        r["sequential (RLlib, one env)"][0]
        / r["sequential (RLlib, one env)"][1]
        / (r["lockstep"][0] / r["lockstep"][1])
        for r in rounds
    ]
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["python bench/evaluation_speed.py", *given])
    meta = {
        "command": command,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
        "load_average_at_end": os.getloadavg(),
    }
    out = {
        "meta": meta,
        "rounds": rounds,
        "train_iteration_s": train_s,
        "sequential_over_lockstep_per_step": ratios,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "evaluation_speed.json").write_text(json.dumps(out, indent=2))
    lines = [
        "# Greedy evaluation: lockstep vs RLlib's sequential evaluation",
        "",
        f"Command: `{command}` — {meta['date']}, {meta['machine']}, load average at end "
        f"{meta['load_average_at_end'][0]:.1f}. Task `{TASK}`: 50 greedy episodes (at "
        f"most 400 steps each) on PPO after {args.train_iterations} training iterations; "
        f"{args.rounds} paired rounds.",
        "",
        "| evaluation | s per evaluation (median) | eval env steps (median) | "
        "ms per eval env step (median) | a training iteration, s (median) |",
        "|---|---|---|---|---|",
    ]
    for n in modes:
        seconds, steps = (statistics.median(r[n][k] for r in rounds) for k in (0, 1))
        lines.append(
            f"| {n} | {seconds:.2f} | {steps:.0f} | "
            f"{1000 * statistics.median(per_step[n]):.3f} | {train_s[n]:.2f} |"
        )
    lines += [
        "",
        f"Sequential over lockstep, per eval env step, same round: median "
        f"{statistics.median(ratios):.2f}x (rounds: "
        f"{', '.join(f'{x:.2f}' for x in ratios)}).",
    ]
    (args.out / "evaluation_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
