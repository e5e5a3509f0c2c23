"""Where a PPO iteration's time goes on BabyAI-Text: cProfile over whole training iterations
of the task's own PPO, everything in one process, broken down into sampling (env step,
captioning, RLlib's env-to-module and module-to-env connectors, the RLModule's forward pass,
episode bookkeeping), greedy evaluation, the learner's connectors (GAE) and its update, and
weight sync.

    python -m bench.ppo_profile                 # writes bench/results/ppo_profile.{md,json}
    python -m bench.ppo_profile --iterations 3  # a look

One process (``num_env_runners=0``, the task's envs per runner and batch) so that a single
profile sees every part: with remote runners the same work is split over processes and runs
side by side with the learner's. The breakdown is each part's share of the profiled wall
time (cumulative time of the functions named in ``PARTS``), and seconds per 1,000 env steps;
cProfile slows Python calls, so shares say where to look, and the speeds in
``bench/results/env_throughput.md`` say how fast it is. Run on a quiet machine.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]

TASK = "babyai-gotolocal-redball-s20"

#: part -> (parent part or None, [(file substring, function name)]): a part's time is the
#: cumulative time of its functions (the largest, where several match the same call tree).
PARTS: dict[str, tuple[str | None, list[tuple[str, str]]]] = {
    "sampling (env runner)": (None, [("single_agent_env_runner.py", "sample")]),
    "env step (vector env)": ("sampling (env runner)", [("vector_env.py", "step")]),
    "env-to-module connectors": (
        "sampling (env runner)",
        [("env_to_module_pipeline.py", "__call__")],
    ),
    "RLModule forward (sampling)": (
        "sampling (env runner)",
        [("rl_module.py", "forward_exploration")],
    ),
    # The pipeline class inherits its __call__; its pieces are RLlib's default ones.
    "module-to-env connectors": (
        "sampling (env runner)",
        [
            (f"/{piece}.py", "__call__")
            for piece in (
                "get_actions",
                "listify_data_for_vector_env",
                "normalize_and_clip_actions",
                "unbatch_to_individual_items",
                "remove_single_ts_time_rank_from_batch",
                "tensor_to_numpy",
            )
        ],
    ),
    "episode bookkeeping": (
        "sampling (env runner)",
        [("single_agent_episode.py", "add_env_step"), ("single_agent_episode.py", "add_env_reset")],
    ),
    "evaluation (greedy)": (None, [("algorithm.py", "evaluate")]),
    "learner update": (None, [("learner.py", "update")]),
    "learner connectors (GAE, batch)": (
        "learner update",
        [("learner_connector_pipeline.py", "__call__")],
    ),
    "loss, backward, optimiser": ("learner update", [("torch_learner.py", "_uncompiled_update")]),
    "weight sync": (None, [("env_runner_group.py", "sync_weights")]),
}


#: Functions called from several parts (the env's own step and the captioner run in sampling
#: and in evaluation alike): their total, wherever called.
FUNCTIONS: dict[str, list[tuple[str, str]]] = {
    "minigrid's step (sampling and evaluation)": [("minigrid_env.py", "step")],
    "captioning (sampling and evaluation)": [("", "caption_babyai")],
}


def _cumulative(stats: pstats.Stats, funcs: list[tuple[str, str]]) -> float:
    """Cumulative seconds of the named functions; summed over different functions, the
    largest of one name's several definitions (a subclass's override calling its base)."""
    total = 0.0
    for file_part, name in funcs:
        matches = [
            ct
            for (file, _, fn), (_, _, _, ct, _) in stats.stats.items()  # type: ignore[attr-defined]
            if fn == name and file_part in file
        ]
        total += max(matches, default=0.0)
    return total


def profile_iterations(iterations: int) -> dict:
    import ray

    import env_registry
    from rl_bk.experiments.task_config import load_task
    from rl_bk.methods.registry import get_method

    ray.init(
        address="local", num_cpus=os.cpu_count(), include_dashboard=False, logging_level="ERROR"
    )
    env_registry.register_all()
    task = load_task(TASK)
    config = get_method("ppo").build(task, 0, {})
    config.env_runners(num_env_runners=0)
    algo = config.build_algo()
    try:
        algo.train()  # warm-up: first batch, lazy imports
        steps0 = algo.train()["num_env_steps_sampled_lifetime"]
        profiler = cProfile.Profile()
        wall = time.perf_counter()
        profiler.enable()
        for _ in range(iterations):
            result = algo.train()
        profiler.disable()
        wall = time.perf_counter() - wall
    finally:
        algo.stop()
        ray.shutdown()
    steps = result["num_env_steps_sampled_lifetime"] - steps0
    stats = pstats.Stats(profiler)
    parts = {name: _cumulative(stats, funcs) for name, (_, funcs) in PARTS.items()}
    functions = {name: _cumulative(stats, funcs) for name, funcs in FUNCTIONS.items()}
    return {
        "iterations": iterations,
        "env_steps": steps,
        "wall_s": wall,
        "profiled_s": stats.total_tt,
        "parts_s": parts,  # type: ignore[attr-defined]
        "functions_s": functions,
        "layout": f"{config.num_envs_per_env_runner} envs in one process, batch "
        f"{config.train_batch_size_per_learner}, {config.num_epochs} epochs of "
        f"{config.minibatch_size}, MLP {task.model.fcnet_hiddens}, evaluation "
        f"every {task.evaluation.every_env_steps} env steps",
    }


def _rows(r: dict) -> list[str]:
    total, per_k = r["profiled_s"], 1000.0 / r["env_steps"]
    lines = ["| part | share of profiled time | s per 1,000 env steps |", "|---|---|---|"]

    def add(name: str, depth: int) -> None:
        s = r["parts_s"][name]
        lines.append(
            f"| {'&nbsp;&nbsp;' * 2 * depth}{name} | {100 * s / total:.1f}% | {s * per_k:.3f} |"
        )
        for child, (parent, _) in PARTS.items():
            if parent == name:
                add(child, depth + 1)

    for name, (parent, _) in PARTS.items():
        if parent is None:
            add(name, 0)
    top = sum(r["parts_s"][n] for n, (p, _) in PARTS.items() if p is None)
    lines.append(
        f"| everything else (Tune/RLlib bookkeeping, metrics) | "
        f"{100 * (total - top) / total:.1f}% | {(total - top) * per_k:.3f} |"
    )
    lines += [
        "",
        "| function, wherever called | share of profiled time | s per 1,000 env steps |",
        "|---|---|---|",
    ]
    for name, s in r["functions_s"].items():
        lines.append(f"| {name} | {100 * s / total:.1f}% | {s * per_k:.3f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--iterations",
        type=int,
        default=20,
        help="training iterations profiled, after two unprofiled ones",
    )
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args(argv)
    r = profile_iterations(args.iterations)
    command = "python -m bench.ppo_profile" + (
        f" --iterations {args.iterations}" if args.iterations != 20 else ""
    )
    meta = {
        "command": command,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
        "load_average_at_end": os.getloadavg(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ppo_profile.json").write_text(json.dumps({"meta": meta, **r}, indent=2))
    lines = [
        "# Where a PPO iteration's time goes (BabyAI-Text)",
        "",
        f"Command: `{command}` — {meta['date']}, {meta['machine']}, load average at end "
        f"{meta['load_average_at_end'][0]:.1f}. Task `{TASK}`, PPO as its file sets it; "
        f"{r['layout']}. {r['iterations']} iterations ({r['env_steps']:,} env steps) "
        f"under cProfile: {r['wall_s']:.1f} s wall, {r['env_steps'] / r['wall_s']:.0f} "
        "env steps/s (slowed by the profiler).",
        "",
        *_rows(r),
    ]
    from bench.results_files import write_keeping_reading

    write_keeping_reading(args.out / "ppo_profile.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
